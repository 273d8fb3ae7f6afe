"""Commands about the deployed stack: ``outputs``, ``pools`` (its node pools), ``data`` (stage
a dataset), ``scale`` (a pool's node count) and ``shell`` (a Session Manager shell on a node),
where the job backend allows them."""

from __future__ import annotations

import argparse
import json
import os
import shlex

from trn_ultracluster.cli.commands import common
from trn_ultracluster.cli.errors import CliError, ExitCode
from trn_ultracluster.cli.job_args import check_nodes
from trn_ultracluster.contracts.outputs import DESCRIPTIONS
from trn_ultracluster.contracts.pools import PoolError, PoolInfo, choose_pool

__all__ = ["DEFAULT_DATA_PREFIX", "data", "outputs", "pools", "pools_table", "scale", "shell"]

DEFAULT_DATA_PREFIX = "datasets"
"""Default S3 key prefix of ``data`` (``<prefix>/<source name>``)."""


def outputs(args: argparse.Namespace) -> int:
    """Print the outputs; list the missing ones (exit 3 when any is missing)."""
    from trn_ultracluster.cli.stack_outputs import expected_keys

    found = common.load(args)
    missing = found.missing()
    if args.json:
        print(json.dumps(found.values, indent=2, sort_keys=True))
    else:
        known = {k.value for k in expected_keys(found.orchestrator)}
        width = max(len(k) for k in found.values) if found.values else 10
        print(f"stack {found.stack_name} ({found.source}"
              f"{', ' + found.status if found.status else ''})")
        for key in sorted(found.values):
            note = "" if key in known else "  (not a TrnUltraCluster key)"
            print(f"{key:<{width}}  {found.values[key]}{note}")
    if missing:
        names = ", ".join(f"{k.value} ({DESCRIPTIONS[k]})" for k in missing)
        raise CliError(f"stack {found.stack_name} lacks outputs: {names}",
                       "it was deployed by an older version: deploy this version", ExitCode.STACK)
    return ExitCode.OK


def data(args: argparse.Namespace) -> int:
    """Upload a dataset and say where jobs see it."""
    from trn_ultracluster.cli.data import stage_dataset

    found = common.load(args)
    prefix = args.prefix or f"{DEFAULT_DATA_PREFIX}/{args.source.name}"
    staged = stage_dataset(common.stack_session(args, found), found, args.source, prefix,
                           progress=not args.no_progress)
    print(f"uploaded {staged.files} files ({staged.bytes} bytes) to "
          f"s3://{staged.bucket}/{staged.prefix}/")
    if staged.cluster_path:
        print(f"on the cluster: {staged.cluster_path}  (use --data-dir {staged.cluster_path})")
    else:
        print("new objects of the bucket do not appear on FSx (DataBucketOnFsx none: "
              "fsx.data_repository is off, links another bucket, or has no auto_import): "
              "copy it in the job")
    return ExitCode.OK


def scale(args: argparse.Namespace) -> int:
    """Set the number of nodes of a pool (``--pool``, default: the only Trainium pool) through
    the stack's job backend, once the count is within the pool's ``nodes.max``."""
    found = common.load(args)
    pool = found.pool(args.pool)
    check_nodes(args.nodes, pool, least=0, scaling=True)
    print(common.backend(args, found).scale(args.nodes, common.backend_pool(found, pool)))
    return ExitCode.OK


POOL_COLUMNS = ("POOL", "TYPE", "KIND", "NODES", "NEURON", "WHERE")
"""``pools``' columns: the name (``*`` after the default pool, as ``sinfo`` marks the
default partition: sinfo(1), "PARTITION ... the suffix '*' identifies the default
partition"), the instance type, ``trainium`` or ``cpu``, nodes min/desired/max as deployed,
the Neuron training stack, and what holds the nodes on the stack's orchestrator."""


def _where(pool: PoolInfo) -> str:
    """The orchestrator's names for a pool's nodes (what the stack's ``Pools`` output gives)."""
    parts = [("partition", (pool.partition,) if pool.partition else ()),
             ("node groups", pool.node_groups), ("Auto Scaling groups", pool.auto_scaling_groups),
             ("instance groups", pool.instance_groups)]
    return "; ".join(f"{label} {','.join(names)}" for label, names in parts if names) or "-"


def pools_table(pools: tuple[PoolInfo, ...]) -> list[str]:
    """The lines ``pools`` prints: a header (:data:`POOL_COLUMNS`), one row per pool, and
    what ``--pool`` chooses when it is left out."""
    try:
        default: str | None = choose_pool(pools, None).name
    except PoolError:
        default = None
    rows = [POOL_COLUMNS] + [
        (p.name + ("*" if p.name == default else ""), p.instance_type,
         "trainium" if p.accelerated else "cpu",
         f"{p.nodes_min}/{p.nodes_desired}/{p.nodes_max}", p.neuron_stack or "-", _where(p))
        for p in pools]
    lines = common.table(rows)
    trainium = [p.name for p in pools if p.accelerated]
    lines.append("* default of submit, scale and smoke-test without --pool" if default else
                 f"no default pool: {len(trainium)} Trainium pools ({', '.join(trainium)}), "
                 "so submit, scale and smoke-test need --pool NAME")
    return lines


def pools(args: argparse.Namespace) -> int:
    """Print the stack's node pools (``--json``: as the ``Pools`` output holds them)."""
    found = common.load(args)
    listed = found.pools()
    if args.json:
        print(json.dumps([p.to_json() for p in listed], indent=2))
        return ExitCode.OK
    print(f"stack {found.stack_name} ({found.source}): nodes min/desired/max as deployed")
    for line in pools_table(listed):
        print(line.rstrip())
    return ExitCode.OK


def shell(args: argparse.Namespace) -> int:
    """Open an interactive shell on a node (``aws ssm start-session``), or print the command
    with ``--print``."""
    found = common.load(args)
    argv = common.backend(args, found).shell_argv(args.node, check_tools=not args.print)
    if args.print:
        print(shlex.join(argv))
        return ExitCode.OK
    os.execvp(argv[0], argv)  # replaces this process; returns only on failure (OSError)
    return ExitCode.OK  # pragma: no cover
