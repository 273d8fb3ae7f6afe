"""What the commands share: the stack outputs of the command line, a session in the stack's
Region, the stack's job backend, the node pool ``--pool`` names, and a checked job translated
by the backend."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from trn_ultracluster.cli.backends import JobBackend, open_backend
from trn_ultracluster.cli.backends.base import RenderedJob
from trn_ultracluster.cli.errors import CliError, ExitCode
from trn_ultracluster.cli.job_args import (
    ARGUMENTS_FIX,
    check_team_nodes,
    job_request,
    team_node_limit,
)
from trn_ultracluster.cli.launch import Launch
from trn_ultracluster.cli.stack_outputs import StackOutputs, load_outputs
from trn_ultracluster.contracts.outputs import OutputKey
from trn_ultracluster.contracts.pools import PoolInfo

__all__ = ["backend", "backend_pool", "load", "pool_spec", "render_job", "stack_session", "table"]


def load(args: argparse.Namespace) -> StackOutputs:
    """The stack outputs of ``args`` (printing their warnings).

    Raises:
        CliError: as :func:`load_outputs`; USAGE when ``--region`` contradicts the stack's
            ``Region`` output (an outputs file of a stack in another Region).
    """
    outputs = load_outputs(args.stack_name, args.region, args.outputs_file)
    stack_region = outputs.values.get(OutputKey.REGION.value)
    if args.region and stack_region and args.region != stack_region:
        raise CliError(f"--region {args.region} does not match the stack's Region {stack_region} "
                       f"({outputs.source})", "leave --region out, or pass the outputs of the "
                       f"stack in {args.region}")
    for warning in outputs.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    return outputs


def stack_session(args: argparse.Namespace, outputs: StackOutputs) -> Any:
    """A boto3 session in the stack's Region: its ``Region`` output, else ``--region`` /
    ``AWS_REGION`` (else the AWS config's)."""
    from trn_ultracluster.cli.aws import make_session, resolve_region

    return make_session(outputs.values.get(OutputKey.REGION.value) or resolve_region(args.region))


def backend(args: argparse.Namespace, outputs: StackOutputs) -> JobBackend:
    """The stack's job backend for this command (its session made on first need).

    Raises:
        CliError: (STACK) the stack names a backend this CLI does not know.
    """
    return open_backend(outputs, args, lambda: stack_session(args, outputs))


def backend_pool(outputs: StackOutputs, pool: PoolInfo | None) -> PoolInfo | None:
    """The pool to give a job backend: ``pool`` on a stack with the ``Pools`` output; ``None``
    (the backend's main pool, as before pools existed) on an older stack, whose one pool
    :meth:`StackOutputs.pools` made up from its other outputs: its nodes carry no pool label
    and its Slurm partition is not named after it, so a backend must not select by it."""
    return pool if outputs.values.get(OutputKey.POOLS.value) else None


def default_nodes(args: argparse.Namespace, outputs: StackOutputs, pool: PoolInfo) -> int:
    """The nodes of a job without ``--nodes``: the pool's ``nodes.desired`` (at least 1), at
    most the quota there of a team that may not borrow (``--team``, else the default team;
    :func:`team_node_limit`), so a team's job fits its quota unless told otherwise.

    Raises:
        CliError: as :meth:`StackOutputs.team`.
    """
    nodes = max(pool.nodes_desired, 1)
    placement = outputs.team(getattr(args, "team", None), getattr(args, "priority", None))
    limit = team_node_limit(pool, placement[0]) if placement is not None else None
    return nodes if limit is None else max(min(nodes, limit), 1)


def render_job(args: argparse.Namespace, outputs: StackOutputs, backend: JobBackend, *,
               name: str, nodes: int, launch: Launch, pool: PoolInfo,
               env: dict[str, str] | None = None, output_dir: str = "") -> RenderedJob:
    """Check the job (:func:`job_request`: ``--time``, the name, the nodes, on ``pool``'s
    instance type) and translate it with ``backend``; nothing is sent. The image is
    ``--image``, else the pool's training image, else the stack's ``TrainingImageUri``;
    ``output_dir`` is the job's ``TRN_OUTPUT_DIR``; the job's pool is :func:`backend_pool`;
    on a stack with teams, the job's team and priority class are ``--team`` / ``--priority``
    (else the default team and its class: :meth:`StackOutputs.team`).

    Raises:
        CliError: USAGE for what the checks or the backend reject (a team or class that
            does not exist among them); STACK for a missing output or a pool type this CLI
            does not know.
    """
    placement = outputs.team(getattr(args, "team", None), getattr(args, "priority", None))
    team, priority = placement if placement is not None else (None, None)
    image = args.image if args.image is not None else (
        pool.image_uri or outputs.get(OutputKey.TRAINING_IMAGE_URI))
    job = job_request(name=name, nodes=nodes, spec=outputs.pool_spec(pool), launch=launch,
                      image=image, env=env, time_limit=args.time_limit, output_dir=output_dir,
                      data_bucket=outputs.values.get(OutputKey.DATA_BUCKET_NAME.value, ""),
                      pool=backend_pool(outputs, pool), team=team, priority=priority)
    check_team_nodes(nodes, pool, team)
    try:
        return backend.render(job)
    except ValueError as err:
        raise CliError(str(err), ARGUMENTS_FIX) from None


def table(rows: list[tuple[str, ...]]) -> list[str]:
    """``rows`` (a header first) as aligned lines: every column but the last padded to its
    widest cell, two spaces apart (as ``sinfo`` and ``kubectl get`` print)."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    return ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)) + "  " + row[-1]
            for row in rows]
