"""``smoke-test``: run the 2-node all-reduce on a Trainium pool (``--pool``, default: the only
one) through the stack's job backend, wait for it and judge its log against the pool's
instance type (or judge a saved log); :mod:`trn_ultracluster.cli.smoke` has the benchmark
and the verdict."""

from __future__ import annotations

import argparse
import sys
import time

from trn_ultracluster.cli.backends import JobBackend
from trn_ultracluster.cli.commands import common
from trn_ultracluster.cli.errors import CliError, ExitCode
from trn_ultracluster.cli.launch import default_job_name
from trn_ultracluster.cli.smoke import SMOKE_NODES, parse_results, smoke_report
from trn_ultracluster.contracts.catalog import CATALOG

__all__ = ["POLL_S", "SMOKE_TIMEOUT_S", "smoke_test"]

SMOKE_TIMEOUT_S = 3600.0
"""Default ``smoke-test --timeout``: node scale-up plus the benchmark."""
POLL_S = 15.0
"""Seconds between job state polls of ``smoke-test``."""


def _wait(backend: JobBackend, handle: str, timeout: float) -> str:
    """Poll the job until it ends; returns its state.

    Raises:
        CliError: (CLUSTER) still running after ``timeout`` seconds.
    """
    deadline = time.monotonic() + timeout
    while True:
        state = backend.state(handle)
        if state.ended:
            return state.text
        if time.monotonic() > deadline:
            raise CliError(f"smoke test {handle} still {state.text} after {timeout:.0f} s",
                           f"check `status {handle}` (nodes scaling up?) and `logs {handle}`",
                           ExitCode.CLUSTER)
        print(f"{handle}: {state.text}", file=sys.stderr)
        time.sleep(POLL_S)


def smoke_test(args: argparse.Namespace) -> int:
    """Run (or judge) the 2-node all-reduce within one Trainium pool.

    Raises:
        CliError: USAGE: ``--pool`` names no pool or a CPU pool, no ``--pool`` with several
            Trainium pools, a pool type without EFA or a pool of fewer than 2 nodes.
    """
    outputs = common.load(args)
    pool = outputs.pool(args.pool, accelerated_only=True)
    spec = outputs.pool_spec(pool)
    if args.from_log:
        from trn_ultracluster.cli.files import read_text

        log = read_text(args.from_log, "log file", "pass a job log saved with "
                        "`trn-ultracluster logs <job> > FILE`", strict=False)
    else:
        if not spec.supports_efa:
            efa_types = ", ".join(sorted(n for n, s in CATALOG.items() if s.supports_efa))
            raise CliError(f"pool {pool.name}'s {spec.name} has no EFA: the 2-node smoke test "
                           "needs an EFA type", f"use one of {efa_types}", ExitCode.USAGE)
        if pool.nodes_max < SMOKE_NODES:
            raise CliError(f"the smoke test runs on {SMOKE_NODES} nodes, and pool {pool.name} "
                           f"has at most {pool.nodes_max} (its nodes.max)", "raise the pool's "
                           f"nodes.max to {SMOKE_NODES} and deploy, or test another pool "
                           "(--pool NAME)")
        name = args.name or default_job_name("smoke-allreduce")
        backend = common.backend(args, outputs)
        job = common.render_job(args, outputs, backend, name=name, nodes=SMOKE_NODES,
                                launch=backend.smoke_launch(
                                    name, common.backend_pool(outputs, pool)), pool=pool)
        if args.dry_run:
            print(job.text, end="")
            return ExitCode.OK
        handle = backend.submit(job)
        print(f"submitted smoke test {handle}")
        if args.no_wait:
            return ExitCode.OK
        state = _wait(backend, handle, args.timeout)
        print(f"{handle}: {state}")
        log = backend.logs(handle)
    try:
        results = parse_results(log)
    except ValueError as err:
        raise CliError(f"cannot read the smoke test log: {err}", "read it with `logs`",
                       ExitCode.CHECK_FAILED) from None
    report = smoke_report(results, spec, min_ratio=args.min_ratio)
    print(report.table())
    return ExitCode.OK if report.ok else ExitCode.CHECK_FAILED
