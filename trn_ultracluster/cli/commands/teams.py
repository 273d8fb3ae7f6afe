"""Teams on the command line: ``--team`` / ``--priority`` of ``submit`` and ``smoke-test``,
the ``teams`` command (the stack's teams, as ``sacctmgr show assoc`` or ``kubectl get
clusterqueues`` would list them) and ``usage`` (who used what, from the scheduler's records).
docs/teams.md."""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from typing import Any

from trn_ultracluster.cli.commands import common
from trn_ultracluster.cli.errors import CliError, ExitCode
from trn_ultracluster.cli.stack_outputs import StackOutputs
from trn_ultracluster.cli.usage import parse_period, summarize, usage_lines
from trn_ultracluster.contracts.outputs import OutputKey
from trn_ultracluster.contracts.teams import TeamError, TeamInfo, TeamsInfo
from trn_ultracluster.estimate.prices import OFFLINE_REGION, OfflinePrices

__all__ = ["add_team_options", "add_teams_commands", "teams", "teams_table", "usage"]

TEAM_HELP = ("the team the job runs as (its Slurm account, Kubernetes namespace and Kueue "
             "queue, or HyperPod team; `trn-ultracluster teams` lists them); default: the "
             "team the configuration marks default. Only on a stack with teams")
PRIORITY_HELP = ("the job's priority class, e.g. training or experiment (Slurm QOS, Kueue "
                 "WorkloadPriorityClass); default: the team's")


def add_team_options(p: argparse.ArgumentParser) -> None:
    """``--team`` and ``--priority`` (as sbatch's ``--account`` and ``--qos``, HyperPod CLI's
    ``--queue-name`` and ``--priority``)."""
    p.add_argument("--team", metavar="NAME", help=TEAM_HELP)
    p.add_argument("--priority", metavar="CLASS", help=PRIORITY_HELP)


def add_teams_commands(sub: Any, command: Any, common_parser: argparse.ArgumentParser) -> None:
    """Add ``teams`` and ``usage`` to the parser's subcommands (``command`` makes one)."""
    p = command(sub, "teams", parents=[common_parser],
                help="list the stack's teams (--apply: apply them to the Slurm controller)",
                description="List the teams of the stack (its Teams output): quota per pool "
                            "in nodes and NeuronCores, borrow/lend, default priority (* marks "
                            "the team submit uses without --team), where the scheduler puts "
                            "its jobs, and the priority classes. With --apply (hyperpod-slurm "
                            "only), apply the last deploy's teams to the running Slurm "
                            "controller, which HyperPod's lifecycle scripts configure only "
                            "when the node is created or replaced. docs/teams.md.")
    shown = p.add_mutually_exclusive_group()
    shown.add_argument("--json", action="store_true", help="print JSON")
    shown.add_argument("--apply", action="store_true",
                       help="hyperpod-slurm: apply the deployed teams and scheduling to the "
                            "running controller (after a deploy that changed them), as root "
                            "through SSM Run Command; prints what it set")
    p.add_argument("--dry-run", action="store_true",
                   help="with --apply: print the script it would run on the controller")
    p = command(sub, "usage", parents=[common_parser],
                help="node-hours, NeuronCore-hours and cost per team",
                description="What each team used per pool over a period, from the "
                            "scheduler's own records (Slurm: sacct; Kueue and HyperPod task "
                            "governance: the Workloads the cluster keeps), priced with the "
                            "estimate's offline price table (EC2 On-Demand list prices; on "
                            "HyperPod a lower bound). docs/teams.md.")
    p.add_argument("--since", metavar="TIME",
                   help="start: YYYY-MM-DD[THH:MM[:SS]] UTC, or Nd / Nh ago (default: 30d)")
    p.add_argument("--until", metavar="TIME", help="end: as --since, or now (default: now)")
    p.add_argument("--team", metavar="NAME", help="only this team")
    p.add_argument("--json", action="store_true", help="print JSON")


def _quota_text(team: TeamInfo) -> str:
    parts = []
    for q in team.quotas:
        nodes = "?" if q.nodes is None else str(q.nodes)
        cores = f" ({q.neuron_cores} NC)" if q.neuron_cores else ""
        parts.append(f"{q.pool}={nodes}{cores}")
    return " ".join(parts) or "-"


def teams_table(info: TeamsInfo) -> list[str]:
    """The lines ``teams`` prints."""
    rows = [("TEAM", "QUOTA (nodes per pool)", "BORROW", "LEND", "PRIORITY", "RUNS AS")]
    for t in info.teams:
        where = ", ".join(f"{k} {v}" for k, v in (("account", t.account),
                                                  ("namespace", t.namespace),
                                                  ("queue", t.queue)) if v) or "-"
        rows.append((t.name + ("*" if t.default else ""), _quota_text(t),
                     "yes" if t.borrow else "no", "yes" if t.lend else "no", t.priority, where))
    lines = common.table(rows)
    lines.append("priority classes (higher first): " + ", ".join(
        f"{p.name} {p.weight}" for p in info.priority_classes)
        + f"; preemption: {info.preemption}")
    if not any(t.default for t in info.teams):
        lines.append("no default team: submit needs --team NAME")
    else:
        lines.append("* default of submit without --team")
    return lines


def teams(args: argparse.Namespace) -> int:
    """Print the stack's teams (``--json``: as the ``Teams`` output holds them); ``--apply``:
    apply them on the cluster (:meth:`~trn_ultracluster.cli.backends.base.JobBackend.
    apply_teams`; ``--dry-run``: print what it would send).

    Raises:
        CliError: (USAGE) ``--dry-run`` without ``--apply``; what ``apply_teams`` raises.
    """
    if args.dry_run and not args.apply:
        raise CliError("--dry-run goes with --apply", "add --apply, or leave --dry-run out")
    outputs = common.load(args)
    info = outputs.teams()
    if args.apply:
        for line in common.backend(args, outputs).apply_teams(info, dry_run=args.dry_run):
            print(line)
        return ExitCode.OK
    if args.json:
        print(json.dumps(info.to_json(), indent=2))
        return ExitCode.OK
    if not info:
        print(f"stack {outputs.stack_name} has no teams: every job is first come, first "
              "served (add `teams` to the configuration: docs/teams.md)")
        return ExitCode.OK
    print(f"stack {outputs.stack_name} ({outputs.source})")
    for line in teams_table(info):
        print(line.rstrip())
    return ExitCode.OK


def usage(args: argparse.Namespace) -> int:
    """Print each team's node-hours, NeuronCore-hours and cost per pool over the period
    (``--team``: one team's).

    Raises:
        CliError: (USAGE) a bad ``--since``/``--until``, a stack without teams, a ``--team``
            the stack does not have;
            what the backend raises (USAGE where the orchestrator keeps no records).
    """
    period = parse_period(args.since, args.until)
    outputs = common.load(args)
    info = outputs.teams()
    if not info:
        raise CliError(f"stack {outputs.stack_name} has no teams: its scheduler keeps no "
                       "per-team records to count (usage reads Kueue's Workloads or Slurm "
                       "accounting, which the stack sets up with teams)",
                       "add `teams` to the configuration and deploy (docs/teams.md)")
    if args.team is not None:
        try:
            info.team(args.team)
        except TeamError as err:
            raise CliError(str(err), "leave --team out for every team, or name one "
                           "`trn-ultracluster teams` lists") from None
    records = common.backend(args, outputs).usage(period, info)
    if args.team is not None:
        records = [r for r in records if r.team == args.team]
    prices = OfflinePrices(outputs.values.get(OutputKey.REGION.value) or OFFLINE_REGION)

    def hourly(instance_type: str) -> float | None:
        found = prices.price(("ec2", instance_type))
        return None if found is None else found.usd

    rows = summarize(records, outputs.pools(), hourly)
    source = prices.name + (HYPERPOD_PRICES if _on_hyperpod(outputs) else "")
    if args.json:
        print(json.dumps({"since": period.start.isoformat(), "until": period.end.isoformat(),
                          "prices": source, "usage": [asdict(r) for r in rows]}, indent=2))
        return ExitCode.OK
    for line in usage_lines(rows, period, source):
        print(line)
    return ExitCode.OK


HYPERPOD_PRICES = ("; EC2 On-Demand prices of the same types, a lower bound for HyperPod's "
                   "ml. instances")
"""What ``usage`` says of its costs on HyperPod: the offline table has EC2 prices only
(``estimate/prices.py``: no SageMaker ``ml.`` prices; ``ml.`` instances cost more)."""


def _on_hyperpod(outputs: StackOutputs) -> bool:
    backend = outputs.values.get(OutputKey.JOB_BACKEND.value) or outputs.values.get(
        OutputKey.ORCHESTRATOR.value, "")
    return backend.startswith("hyperpod")
