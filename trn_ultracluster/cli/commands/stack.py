"""Commands about the deployed stack: ``outputs``, ``data`` (stage a dataset), ``scale``
(the Trainium node count) and ``shell`` (a Session Manager shell on a node), where the job
backend allows them."""

from __future__ import annotations

import argparse
import json
import os
import shlex

from trn_ultracluster.cli.commands import common
from trn_ultracluster.cli.errors import CliError, ExitCode
from trn_ultracluster.contracts.outputs import DESCRIPTIONS

__all__ = ["DEFAULT_DATA_PREFIX", "data", "outputs", "scale", "shell"]

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
    """Set the number of Trainium nodes through the stack's job backend."""
    found = common.load(args)
    print(common.backend(args, found).scale(args.nodes))
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
