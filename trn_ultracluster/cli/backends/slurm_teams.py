"""Teams on Slurm, as the job CLI sees them: each team's use of its quota and its waiting
jobs (``status``), and each job's node-seconds per team and pool (``usage``), read on the
controller from Slurm's own records in parseable form.

A team is a Slurm account (:attr:`~trn_ultracluster.contracts.teams.TeamInfo.account`); a pool
is a partition (:func:`~trn_ultracluster.cli.backends.hyperpod_slurm.pool_partition`). The
stack's lifecycle script gives every team an association per partition with its node limit
(``orchestrators/hyperpod_slurm/scripts/slurm_teams.py``), which is what Slurm enforces.

Sources (Slurm 22.05 man pages): squeue(1) ``-h``, ``-o`` (``%a`` account, ``%P`` partition,
``%T`` state, ``%D`` nodes, ``%i`` id, ``%j`` name, ``%r`` reason, ``%q`` QOS); sacctmgr(1)
``-n -P show assoc ... format=account,partition,grptres``; sshare(1) ``-h -P -o``
``Account,User,FairShare``; sacct(1) ``-a -X -D -P -n -S -E --format`` and
``SLURM_TIME_FORMAT`` ("A valid strftime() format can also be specified": ``%s``, seconds
since the epoch, so the times do not depend on the controller's time zone; ``TZ=UTC`` makes
``-S``/``-E`` UTC).
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone

from trn_ultracluster.cli.usage import Period, UsageRecord
from trn_ultracluster.contracts.teams import TeamsInfo

__all__ = ["SACCT_USAGE_FIELDS", "parse_sections", "parse_usage", "team_status_lines",
           "team_status_script", "usage_script"]

SQUEUE_TEAM_FORMAT = "%a|%P|%T|%D|%i|%j|%r|%q"
"""squeue's columns for :func:`team_status_lines`: account, partition, state, nodes, id,
name, reason, QOS."""
SACCT_USAGE_FIELDS = "JobID,Account,Partition,NNodes,Start,End,State"
"""sacct's columns for :func:`parse_usage`."""
SECTION = "#trn-section "


def account_of(teams: TeamsInfo) -> dict[str, str]:
    """Slurm account -> team name (the account is the team's name on stacks that say none)."""
    return {(t.account or t.name): t.name for t in teams.teams}


def team_status_script(user: str) -> str:
    """The controller script of :func:`team_status_lines`: squeue of every user's pending and
    running jobs, ``user``'s associations and the accounts' fair share, each after a
    :data:`SECTION` line."""
    quoted = shlex.quote(user)
    return (f"echo '{SECTION}squeue'\n"
            f"squeue -h -a -t PENDING,RUNNING -o '{SQUEUE_TEAM_FORMAT}'\n"
            f"echo '{SECTION}assoc'\n"
            f"sacctmgr -n -P show assoc where user={quoted} format=account,partition,grptres\n"
            f"echo '{SECTION}sshare'\n"
            "sshare -h -P -o Account,User,FairShare\n")


def parse_sections(text: str) -> dict[str, list[list[str]]]:
    """Rows (``|``-split) of each section of a :func:`team_status_script` answer."""
    out: dict[str, list[list[str]]] = {}
    current = None
    for line in text.splitlines():
        if line.startswith(SECTION):
            current = out.setdefault(line[len(SECTION):].strip(), [])
        elif current is not None and line.strip():
            current.append([part.strip() for part in line.split("|")])
    return out


def _node_limit(grptres: str) -> int | None:
    """The ``node=N`` of a ``GrpTRES`` value (``cpu=4,node=2``), ``None`` without one."""
    for part in grptres.split(","):
        key, _, value = part.partition("=")
        if key == "node" and value.isdigit():
            return int(value)
    return None


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def team_status_lines(teams: TeamsInfo, partitions: Mapping[str, str],
                      sections: Mapping[str, Sequence[Sequence[str]]]) -> list[str]:
    """Per team and pool: nodes of running jobs against its quota and Slurm's limit, jobs
    running and pending; the team's fair-share factor (sshare's ``FairShare`` of the job
    user's associations in its account, 0 to 1, higher goes first); then each pending job with Slurm's
    reason (``AssocGrpNodeLimit``: the team is at its limit; ``Priority``, ``Resources``...:
    squeue(1), "JOB REASON CODES").

    Args:
        teams: the stack's teams.
        partitions: pool name -> its partition.
        sections: :func:`parse_sections` of the :func:`team_status_script` answer.
    """
    jobs = [r for r in sections.get("squeue", []) if len(r) >= 8]
    limits = {(r[0], r[1]): _node_limit(r[2]) for r in sections.get("assoc", []) if len(r) >= 3}
    shares: dict[str, float] = {}
    for r in sections.get("sshare", []):  # the user's rows: the account's rows have none
        if len(r) >= 3 and r[1] and _number(r[2]) is not None:
            shares[r[0]] = max(shares.get(r[0], 0.0), _number(r[2]) or 0.0)
    lines = []
    for team in teams.teams:
        account = team.account or team.name
        share = shares.get(account)
        lines.append(f"team {team.name} (account {account}, priority {team.priority}"
                     + (f", fair-share factor {share:.3f}" if share is not None else "") + ")")
        pending = []
        for quota in team.quotas:
            partition = partitions.get(quota.pool, quota.pool)
            mine = [r for r in jobs if r[0] == account and r[1] == partition]
            running = [r for r in mine if r[2] == "RUNNING"]
            in_use = sum(int(r[3]) for r in running if r[3].isdigit())
            limit = limits.get((account, partition))
            lines.append(f"  pool {quota.pool} (partition {partition}): {in_use} node(s) in use, "
                         f"quota {quota.nodes if quota.nodes is not None else '?'}, limit "
                         f"{limit if limit is not None else 'none'}; {len(running)} running, "
                         f"{len(mine) - len(running)} pending")
            pending += [r for r in mine if r[2] == "PENDING"]
        lines += [f"  waiting: {r[4]} {r[5]} nodes={r[3]} qos={r[7]} partition={r[1]} "
                  f"reason={r[6]}" for r in pending]
    return lines


def usage_script(period: Period) -> str:
    """The controller script of :func:`parse_usage`: every user's jobs (``-a``) that ran in
    ``period``, one line per allocation (``-X``) and per run of a requeued job (``-D``),
    times as seconds since the epoch."""
    start, end = (f"{t.astimezone(timezone.utc):%Y-%m-%dT%H:%M:%S}"
                  for t in (period.start, period.end))
    return (f"TZ=UTC SLURM_TIME_FORMAT=%s sacct -a -X -D -P -n -S {start} -E {end} "
            f"--format={SACCT_USAGE_FIELDS}\n")


def _epoch(text: str) -> datetime | None:
    """A ``%s`` time of sacct; ``None`` for ``Unknown`` (not started, or still running)."""
    return datetime.fromtimestamp(int(text), timezone.utc) if text.isdigit() else None


def parse_usage(text: str, teams: TeamsInfo, pools: Mapping[str, str],
                period: Period) -> list[UsageRecord]:
    """The :class:`UsageRecord` of each job run of a :func:`usage_script` answer that
    started: its team (``""`` for an account that is no team's), its pool (``pools``:
    partition -> pool; ``""`` for another partition), its nodes and its seconds inside
    ``period`` (:meth:`Period.clip`; a running job counts until now)."""
    teams_of = account_of(teams)
    out = []
    for line in text.splitlines():
        row = line.strip().split("|")
        if len(row) < 7 or not row[3].isdigit():
            continue
        job, account, partition, nodes, start, end = row[:6]
        began = _epoch(start)
        if began is None:
            continue  # never ran
        seconds = period.clip(began, _epoch(end))
        if seconds > 0:
            out.append(UsageRecord(teams_of.get(account, ""), pools.get(partition, ""), job,
                                   int(nodes), seconds))
    return out
