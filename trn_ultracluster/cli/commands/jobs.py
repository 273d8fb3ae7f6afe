"""Job commands: ``submit``, ``status``, ``logs`` and ``cancel``, through the stack's job
backend."""

from __future__ import annotations

import argparse

from trn_ultracluster.cli.commands import common
from trn_ultracluster.cli.errors import CliError, ExitCode
from trn_ultracluster.cli.job_args import (
    ARGUMENTS_FIX,
    check_env,
    check_nodes,
    check_shared_dir,
    check_train_recipe,
)
from trn_ultracluster.cli.launch import PRECOMPILE_STEPS, default_job_name, trn_train_launch
from trn_ultracluster.cli.stack_outputs import StackOutputs
from trn_ultracluster.contracts.outputs import NONE, OutputKey
from trn_ultracluster.contracts.shared_storage import RUNS_DIR, fsx_path

__all__ = ["DEFAULT_OUTPUT_ROOT", "cancel", "logs", "status", "submit"]

DEFAULT_OUTPUT_ROOT = fsx_path("/", RUNS_DIR)
"""Default parent of ``--output-dir`` with the default data repository link: one directory
per job on FSx (:func:`default_output_dir` follows the stack's link)."""


def default_output_dir(outputs: StackOutputs, name: str) -> str:
    """``<S3-linked part of FSx>/runs/<name>``: checkpoints are exported to the data bucket
    (and kept after ``cdk destroy`` with ``data_removal_policy: retain``); ``/fsx/runs``
    when the file system is not linked."""
    link = outputs.values.get(OutputKey.FSX_DATA_REPOSITORY_PATH.value, NONE)
    return fsx_path("/" if link == NONE else link, RUNS_DIR, name)


def _precompile_steps(args: argparse.Namespace) -> int | None:
    """Steps of the precompile pass: ``--precompile-steps`` (which implies ``--precompile``;
    0 or less is rejected by :func:`trn_train_launch`), :data:`PRECOMPILE_STEPS` with
    ``--precompile`` alone, ``None`` (no pass) without either."""
    if args.precompile_steps is not None:
        return args.precompile_steps
    return PRECOMPILE_STEPS if args.precompile else None


def submit(args: argparse.Namespace) -> int:
    """Check the arguments against the recipes, the shared file system and the stack, then
    submit (or print) a training job. Nothing is sent when a check fails."""
    check_train_recipe(args.recipe)  # exists: before anything is read
    data_dir = check_shared_dir("--data-dir", args.data_dir)
    output_dir = check_shared_dir("--output-dir", args.output_dir) if args.output_dir else None
    env = check_env(args.env)
    outputs = common.load(args)
    name = args.name or default_job_name(args.recipe)
    nodes = args.nodes if args.nodes is not None else max(
        outputs.int_value(OutputKey.NODE_COUNT_DESIRED), 1)
    check_nodes(nodes, outputs.int_value(OutputKey.NODE_COUNT_MAX))
    stack = outputs.neuron_stack
    check_train_recipe(args.recipe, stack)
    extra = tuple(a for a in args.train_args if a != "--")
    try:
        launch = trn_train_launch(recipe=args.recipe, data_dir=data_dir,
                                  output_dir=output_dir or default_output_dir(outputs, name),
                                  steps=args.steps,
                                  instance_type=outputs.get(OutputKey.INSTANCE_TYPE),
                                  backend=stack, extra_args=extra, precompile_steps=_precompile_steps(args))
    except ValueError as err:
        raise CliError(str(err), ARGUMENTS_FIX) from None
    backend = common.backend(args, outputs)
    job = common.render_job(args, outputs, backend, name=name, nodes=nodes, launch=launch,
                            env=env)
    if args.dry_run:
        print(job.text, end="")
        return ExitCode.OK
    handle = backend.submit(job)
    print(f"submitted {handle} ({nodes} x {outputs.get(OutputKey.INSTANCE_TYPE)}); "
          f"watch: trn-ultracluster status {handle}; logs: trn-ultracluster logs {handle}")
    return ExitCode.OK


def status(args: argparse.Namespace) -> int:
    """One job, or every job (saying so when there is none)."""
    outputs = common.load(args)
    for line in common.backend(args, outputs).status(args.job):
        print(line)
    return ExitCode.OK


def logs(args: argparse.Namespace) -> int:
    """A job's log (``--tail N``: its last N lines)."""
    outputs = common.load(args)
    text = common.backend(args, outputs).logs(args.job, args.tail)
    print(text, end="" if text.endswith("\n") else "\n")
    return ExitCode.OK


def cancel(args: argparse.Namespace) -> int:
    """Cancel a job."""
    outputs = common.load(args)
    common.backend(args, outputs).cancel(args.job)
    print(f"cancelled {args.job}")
    return ExitCode.OK
