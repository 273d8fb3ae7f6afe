#!/usr/bin/env python3
"""Teams on a HyperPod Slurm cluster, enforced by Slurm itself (standard library only).

``on_init_complete.sh`` runs it on the controller when the stack has ``teams`` (it uploads
``slurm_teams.json`` beside this file only then), and ``tests/slurm`` runs the same file
against a real Slurm:

- ``install --slurm-conf PATH``: the ``slurm.conf`` lines teams need
  (:func:`slurm_conf_lines`: accounting through slurmdbd,
  ``AccountingStorageEnforce=associations,limits,qos,safe``, the multifactor priority with
  weights for QOS, fair share and age, preemption by QOS) in :data:`INCLUDE_FILE` beside
  ``PATH``, included at its end (:func:`install`); prints ``changed`` when slurmctld must
  restart to apply them, else ``unchanged``;
- ``apply``: the accounts, associations and QOS, through idempotent ``sacctmgr -i``
  commands (:func:`apply`): rerunning it (a lifecycle rerun, a replaced controller, an
  update of the stack) converges on the file, it does not fail on what exists.

What Slurm gets (sacctmgr(1), Slurm 22.05):

- a QOS per priority class, of the class's name, ``Priority`` its weight; with
  ``preemption: lower-priority``, ``Preempt`` the classes of lower weight;
- an account per team, of the team's name, ``Fairshare`` its quota in nodes over all pools
  (at least 1);
- per team and partition (one partition per pool), an association of the cluster's job user
  (``ubuntu`` on HyperPod, ``user`` in the file) in the team's account with
  ``GrpTRES=node=<limit>`` (:func:`node_limit`), every class's QOS allowed and the team's
  class as ``DefaultQOS``; the user's ``DefaultAccount`` is the default team (else the
  first), so a job without ``--account`` runs in a team too.

Association group limits do not preempt: "If starting a job would cause any of its group
limit to be exceeded, that job will not be considered for scheduling even if that job might
preempt other jobs which would release sufficient group resources" (sacctmgr(1), 22.05,
"GENERAL SPECIFICATIONS FOR ASSOCIATION BASED ENTITIES"). So a team that does not lend keeps
its quota free by the limits of the others (:func:`node_limit`), not by preemption;
preemption (by QOS) only orders the classes.

Input, ``slurm_teams.json`` (``trn_ultracluster/orchestrators/hyperpod_slurm/teams.py``)::

    {"user": str, "preemption": "lower-priority" | "never",
     "priority_classes": [{"name": str, "weight": int}, ...],
     "partitions": [{"name": str, "pool": str, "nodes": int}, ...],
     "teams": [{"name": str, "default": bool, "priority": str, "borrow": bool,
                "lend": bool, "quotas": {pool: nodes}}, ...]}

Errors exit with status 2 and one line on stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

ORGANIZATION = "trn-ultracluster"
"""The ``Organization`` of the accounts this file creates: :func:`apply` removes such an
account once its team is gone, and leaves every other account alone."""
QOS_DESCRIPTION = "trn-ultracluster priority class"
"""The ``Description`` of the QOS this file creates (removed likewise)."""
PRIORITY_WEIGHT_QOS = 10_000_000
PRIORITY_WEIGHT_FAIRSHARE = 10_000
PRIORITY_WEIGHT_AGE = 1_000
"""The multifactor weights. A QOS's priority "is then normalized to the highest priority of
all the QOS's to become the QOS factor" (Slurm, "Multifactor Priority Plugin",
https://slurm.schedmd.com/priority_multifactor.html, "Quality of Service (QOS) Factor").
With the classes' weights (0 to 100) the highest QOS priority (unless a QOS not of ours has
a higher one), one unit of class weight is worth at least 10,000,000 / 100 = 100,000, more
than fair share and age together (11,000): a class always goes before a lower one and,
within a class, the team that used less of its share, then the job that waited longer. The
sum stays far below a job priority's 32 bits."""
INCLUDE_FILE = "trn_ultracluster_teams.conf"
"""The file of :func:`slurm_conf_lines`, beside ``slurm.conf``: "If the included file is not
an absolute path name ... it will searched for in the same directory as the slurm.conf
file" (slurm.conf(5), "INCLUDE MODIFIERS")."""
NOTHING = ("Nothing new added", "Nothing modified", "Nothing deleted")
"""What sacctmgr prints, with status 1, when a command changes nothing: measured with Slurm
22.05 (``tests/slurm``), ``add`` of what exists says " Nothing new added." and ``delete`` of
what does not " Nothing deleted" (``modify`` to the values it has exits 0, "Modified ...");
for :func:`apply` that is success."""


class TeamsError(Exception):
    """The teams file is unreadable or malformed, or a sacctmgr command failed."""


@dataclass(frozen=True)
class Association:
    """The association of the job user in ``account`` on ``partition``: at most ``nodes``
    nodes at once (``GrpTRES=node=``), jobs of ``qos`` (``default_qos`` unless asked)."""

    account: str
    partition: str
    nodes: int
    qos: tuple[str, ...]
    default_qos: str


def load(path: str) -> dict[str, Any]:
    """The teams file (module docstring shape).

    Raises:
        TeamsError: unreadable, not JSON, or a key missing (the message names it).
    """
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        for key in ("user", "preemption", "priority_classes", "partitions", "teams"):
            data[key]  # noqa: B018 (presence)
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise TeamsError(f"{path}: not a teams file ({err!r})") from None
    return data


def node_limit(teams: Sequence[dict[str, Any]], team: dict[str, Any], pool: str,
               capacity: int) -> int:
    """The most nodes of ``pool`` (of ``capacity`` nodes) ``team`` may hold at once.

    ``borrow`` false: its quota there (at most the capacity). ``borrow`` true: the capacity
    less the quotas of the *other* teams that do not lend, so a team that does not lend
    always finds its quota free; at least 0 (quotas above the capacity are a warning of the
    configuration rules when teams borrow).
    """
    own = int(team["quotas"].get(pool, 0))
    if not team["borrow"]:
        return min(own, capacity)
    kept = sum(int(t["quotas"].get(pool, 0)) for t in teams
               if t["name"] != team["name"] and not t["lend"])
    return max(capacity - kept, 0)


def fairshare(team: dict[str, Any]) -> int:
    """The team's ``Fairshare``: its quota in nodes over every pool, at least 1 (a share
    of 0 would leave it no fair-share priority at all)."""
    return max(sum(int(n) for n in team["quotas"].values()), 1)


def associations(data: dict[str, Any]) -> list[Association]:
    """Every team's association on every partition, in team then partition order."""
    classes = tuple(c["name"] for c in data["priority_classes"])
    return [Association(t["name"], p["name"],
                        node_limit(data["teams"], t, p["pool"], int(p["nodes"])),
                        classes, t["priority"])
            for t in data["teams"] for p in data["partitions"]]


def qos_settings(data: dict[str, Any]) -> dict[str, list[str]]:
    """QOS name -> its ``sacctmgr ... set`` arguments: ``Priority`` the class weight and, with
    preemption ``lower-priority``, ``Preempt`` the classes of lower weight (``''``, none,
    otherwise: sacctmgr(1) "Setting a Preempt to '' ... restores its default")."""
    classes = data["priority_classes"]
    out = {}
    for c in classes:
        lower = [o["name"] for o in classes if o["weight"] < c["weight"]]
        preempt = ",".join(lower) if data["preemption"] == "lower-priority" and lower else ""
        out[c["name"]] = [f"Priority={int(c['weight'])}", f"Preempt={preempt}",
                          f"Description={QOS_DESCRIPTION}"]
    return out


def slurm_conf_lines(data: dict[str, Any]) -> list[str]:
    """What ``slurm.conf`` needs for teams (slurm.conf(5), Slurm 22.05). Included last, these
    values win over earlier ones: a key given twice keeps "the latest value" (Slurm
    ``src/common/parse_config.c``, ``_handle_common``); a restart of slurmctld applies them
    (``AccountingStorageEnforce``: "A restart of slurmctld is required").

    - ``AccountingStorageType=accounting_storage/slurmdbd``: HyperPod's own accounting
      (MariaDB on the controller, SageMaker developer guide, "Using an external accounting
      database with SageMaker HyperPod Slurm clusters": "By default, SageMaker HyperPod
      deploys MariaDB on your cluster's controller instance");
    - ``AccountingStorageEnforce=associations,limits,qos,safe``: a job runs only in an
      association, within its limits (``GrpTRES``), with a QOS it may use;
    - ``PriorityType=priority/multifactor`` and the weights of :data:`PRIORITY_WEIGHT_QOS`;
    - preemption ``lower-priority``: ``PreemptType=preempt/qos`` ("Job preemption rules are
      specified by Quality Of Service (QOS) specifications") and ``PreemptMode=REQUEUE``
      ("Preempts jobs by requeuing them (if possible) or canceling them": the job script's
      ``--requeue`` makes it possible); ``never``: ``preempt/none`` and ``OFF``.
    """
    preempt = data["preemption"] == "lower-priority"
    return [
        "# Written by trn-ultracluster (slurm_teams.py conf): teams, their limits and priorities.",
        "AccountingStorageType=accounting_storage/slurmdbd",
        "AccountingStorageEnforce=associations,limits,qos,safe",
        "PriorityType=priority/multifactor",
        f"PriorityWeightQOS={PRIORITY_WEIGHT_QOS}",
        f"PriorityWeightFairshare={PRIORITY_WEIGHT_FAIRSHARE}",
        f"PriorityWeightAge={PRIORITY_WEIGHT_AGE}",
        f"PreemptType={'preempt/qos' if preempt else 'preempt/none'}",
        f"PreemptMode={'REQUEUE' if preempt else 'OFF'}",
    ]


def install(data: dict[str, Any], slurm_conf: str) -> bool:
    """Write :func:`slurm_conf_lines` to :data:`INCLUDE_FILE` beside ``slurm_conf`` and add
    ``Include`` of it as the last line of ``slurm_conf`` (once); returns whether either file
    changed (slurmctld must then restart). The include comes last so that its values win
    over those HyperPod wrote before it (:func:`slurm_conf_lines`); should HyperPod rewrite
    ``slurm.conf`` (an update of the cluster), the next run adds it again.

    Raises:
        TeamsError: a file cannot be read or written.
    """
    directory = os.path.dirname(os.path.abspath(slurm_conf))
    include_line = f"Include {INCLUDE_FILE}"
    text = "\n".join(slurm_conf_lines(data)) + "\n"
    changed = False
    try:
        path = os.path.join(directory, INCLUDE_FILE)
        old = open(path, encoding="utf-8").read() if os.path.exists(path) else None
        if old != text:
            _write(path, text)
            changed = True
        with open(slurm_conf, encoding="utf-8") as f:
            conf = f.read()
        lines = [line for line in conf.splitlines() if line.strip() != include_line]
        if not conf.splitlines() or conf.splitlines()[-1].strip() != include_line:
            _write(slurm_conf, "\n".join([*lines, include_line]) + "\n")
            changed = True
    except OSError as err:
        raise TeamsError(f"cannot write the teams' Slurm settings: {err}") from None
    return changed


def _write(path: str, text: str) -> None:
    """Replace ``path`` with ``text`` at once (readable by every user, as slurm.conf must
    be: slurm.conf(5), "Note on file permissions")."""
    tmp = f"{path}.trn-tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)


Runner = Callable[[list[str]], subprocess.CompletedProcess]


def run_sacctmgr(argv: list[str]) -> subprocess.CompletedProcess:
    """``sacctmgr`` with ``argv`` (stdout and stderr captured as text)."""
    return subprocess.run(["sacctmgr", *argv], capture_output=True, text=True, timeout=120,
                          check=False)


def _change(run: Runner, argv: list[str]) -> None:
    """One ``sacctmgr -i`` change; "nothing to change" is success.

    Raises:
        TeamsError: sacctmgr failed otherwise (its message).
    """
    done = run(["-i", *argv])
    text = f"{done.stdout}\n{done.stderr}"
    if done.returncode != 0 and not any(n in text for n in NOTHING):
        raise TeamsError(f"sacctmgr {' '.join(argv)} failed ({done.returncode}): "
                         f"{text.strip()[-500:]}")


def _rows(run: Runner, argv: list[str]) -> list[list[str]]:
    """The rows of a ``sacctmgr -n -P show`` (``|``-separated, no header).

    Raises:
        TeamsError: sacctmgr failed (slurmdbd not answering, say).
    """
    done = run(["-n", "-P", "show", *argv])
    if done.returncode != 0:
        raise TeamsError(f"sacctmgr show {' '.join(argv)} failed ({done.returncode}): "
                         f"{(done.stderr or done.stdout).strip()[-500:]}")
    return [line.split("|") for line in done.stdout.splitlines() if line.strip()]


def _qos_changes(settings: list[str], row: list[str] | None) -> list[str]:
    """The ``settings`` (:func:`qos_settings`) a QOS of ``row`` (``name|description|priority|
    preempt``; ``None``: just added) does not have yet. Only those are set: Slurm 22.05
    refuses to set a QOS's ``Preempt`` to the list it already has ("QOS Preemption loop
    detected", measured in ``tests/slurm``)."""
    if row is None or len(row) < 4:
        return settings
    have = {"Description": row[1], "Priority": row[2],
            "Preempt": ",".join(sorted(filter(None, row[3].split(","))))}
    out = []
    for setting in settings:
        key, _, value = setting.partition("=")
        if key == "Preempt":
            value = ",".join(sorted(filter(None, value.split(","))))
        if have.get(key) != value:
            out.append(setting)
    return out


def apply(data: dict[str, Any], run: Runner = run_sacctmgr) -> list[str]:
    """Make Slurm's accounts, associations and QOS those of ``data``; returns what it did,
    one line each.

    Order: the QOS (associations name them), the accounts, the user's associations, the
    user's default account; then what this file created before and ``data`` no longer
    has (an association of a removed partition, an account of :data:`ORGANIZATION` whose
    team is gone, a QOS of :data:`QOS_DESCRIPTION` whose class is gone) is deleted; Slurm
    refuses to delete what running jobs use, which is reported and left for the next run.

    Raises:
        TeamsError: a sacctmgr command failed (:func:`_change`, :func:`_rows`).
    """
    user, done = data["user"], []
    have_qos = {r[0]: r for r in _rows(run, ["qos", "format=name,description,priority,preempt"])}
    settings_of = qos_settings(data)
    for name in settings_of:  # all first: a QOS's Preempt names the others
        if name not in have_qos:
            _change(run, ["add", "qos", name])
    for name, settings in settings_of.items():
        changed = _qos_changes(settings, have_qos.get(name))
        if changed:
            _change(run, ["modify", "qos", "where", f"name={name}", "set", *changed])
        done.append(f"qos {name}: {' '.join(settings)}")
    have_accounts = {r[0]: r for r in _rows(run, ["account", "format=account,org"])}
    for team in data["teams"]:
        name = team["name"]
        if name not in have_accounts:
            _change(run, ["add", "account", name, f"Organization={ORGANIZATION}",
                          f"Description=trn-ultracluster team {name}"])
        _change(run, ["modify", "account", "where", f"name={name}", "set",
                      f"Fairshare={fairshare(team)}"])
        done.append(f"account {name}: Fairshare={fairshare(team)}")
    have_assocs = {(r[0], r[1]) for r in _rows(run, ["assoc", "where", f"user={user}",
                                                     "format=account,partition"])}
    wanted = associations(data)
    for a in wanted:
        if (a.account, a.partition) not in have_assocs:
            _change(run, ["add", "user", user, f"account={a.account}",
                          f"partition={a.partition}"])
        settings = [f"GrpTRES=node={a.nodes}", f"QOS={','.join(a.qos)}",
                    f"DefaultQOS={a.default_qos}"]
        _change(run, ["modify", "user", "where", f"name={user}", f"account={a.account}",
                      f"partition={a.partition}", "set", *settings])
        done.append(f"association {user}/{a.account}/{a.partition}: {' '.join(settings)}")
    if data["teams"]:
        default = next((t for t in data["teams"] if t["default"]), data["teams"][0])["name"]
        _change(run, ["modify", "user", "where", f"name={user}", "set",
                      f"DefaultAccount={default}"])
        done.append(f"user {user}: DefaultAccount={default}")
    done += _remove_stale(data, run, have_qos, have_accounts, have_assocs, wanted)
    return done


def _remove_stale(data: dict[str, Any], run: Runner, have_qos: dict[str, list[str]],
                  have_accounts: dict[str, list[str]], have_assocs: set[tuple[str, str]],
                  wanted: list[Association]) -> list[str]:
    """Delete what :func:`apply` made before and ``data`` no longer has (its docstring)."""
    teams = {t["name"] for t in data["teams"]}
    keep = {(a.account, a.partition) for a in wanted}
    argvs = [["delete", "user", data["user"], "where", f"account={account}",
              f"partition={partition}"]
             for account, partition in sorted(have_assocs)
             if account in teams and partition and (account, partition) not in keep]
    argvs += [["delete", "account", name] for name, row in sorted(have_accounts.items())
              if name not in teams and len(row) > 1 and row[1] == ORGANIZATION]
    classes = {c["name"] for c in data["priority_classes"]}
    argvs += [["delete", "qos", name] for name, row in sorted(have_qos.items())
              if name not in classes and len(row) > 1 and row[1] == QOS_DESCRIPTION]
    out = []
    for argv in argvs:
        try:
            _change(run, argv)
            out.append(" ".join(argv))
        except TeamsError as err:
            out.append(f"WARNING: left in place ({err}); the next run deletes it")
    return out


def main(argv: list[str] | None = None) -> int:
    """Command-line entry; see the module docstring for the commands."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--teams", default="slurm_teams.json")
    parser.add_argument("--slurm-conf", help="install: the slurm.conf slurmctld reads")
    parser.add_argument("command", choices=("install", "apply"))
    args = parser.parse_args(argv)
    if args.command == "install" and not args.slurm_conf:
        parser.error("install needs --slurm-conf PATH")
    try:
        data = load(args.teams)
        if args.command == "install":
            lines = ["changed" if install(data, args.slurm_conf) else "unchanged"]
        else:
            lines = apply(data)
    except TeamsError as err:
        print(f"slurm_teams.py: {err}", file=sys.stderr)
        return 2
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
