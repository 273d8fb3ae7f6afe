"""Command line of the job CLI: ``trn-ultracluster <command> --help``.

This module parses the command line and hands it to the command's function
(:mod:`trn_ultracluster.cli.commands`); it turns their :class:`CliError` into ``error:`` /
``fix:`` lines and an exit code. Every command reads the stack outputs (``--stack-name``,
default ``TrnUltraCluster``) from CloudFormation in ``--region``, or from ``--outputs-file``
(``cdk deploy --outputs-file`` JSON). Exit codes:
:class:`trn_ultracluster.cli.errors.ExitCode` (``--help`` lists them).
"""

from __future__ import annotations

import argparse
import os
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

from trn_ultracluster.cli.arg_types import integer_from, positive_seconds, positive_usd, ratio
from trn_ultracluster.cli.backends import BACKENDS
from trn_ultracluster.cli.commands import (
    config,
    estimate,
    jobs,
    plan,
    preflight,
    smoke_test,
    stack,
    teams,
)
from trn_ultracluster.cli.errors import CliError, ExitCode, exit_codes_help
from trn_ultracluster.cli.launch import LAUNCHERS, PRECOMPILE_STEPS, TORCHRUN
from trn_ultracluster.cli.preflight import CHECKS as PREFLIGHT_CHECKS
from trn_ultracluster.cli.smoke import MIN_EFA_RATIO
from trn_ultracluster.cli.project_config import add_context_option, default_stack_name
from trn_ultracluster.contracts.outputs import STACK_NAME
from trn_ultracluster.contracts.shared_storage import FSX_MOUNT_PATH

__all__ = ["COMMANDS", "build_parser", "main"]

DESCRIPTION = """\
The TrnUltraCluster job CLI: check the account, stage data, submit, watch and smoke-test
training jobs. Every command reads the stack outputs (--stack-name, default TrnUltraCluster)
from CloudFormation in --region (default: AWS_REGION, then AWS_DEFAULT_REGION / the AWS
config), or from --outputs-file (the JSON of `cdk deploy --outputs-file`).
Run `trn-ultracluster COMMAND --help` for a command's options."""

COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "preflight": preflight.preflight, "plan": plan.plan, "estimate": estimate.estimate,
    "outputs": stack.outputs, "pools": stack.pools, "data": stack.data,
    "submit": jobs.submit, "status": jobs.status, "logs": jobs.logs, "cancel": jobs.cancel,
    "scale": stack.scale, "shell": stack.shell, "smoke-test": smoke_test.smoke_test,
    "teams": teams.teams, "usage": teams.usage, "config": config.config,
}
"""Command name -> its function (``args`` in, exit status out)."""


# --- argument parsing -------------------------------------------------------------------------


def _estimate_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--cdk-out", type=Path, default=estimate.DEFAULT_CDK_OUT, metavar="DIR",
                   help="the synthesized cloud assembly (default: cdk.out)")
    p.add_argument("--offline", action="store_true",
                   help="use the offline price table even with AWS credentials")


def _common() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    group = common.add_argument_group("stack")
    group.add_argument("--stack-name",
                       help="CloudFormation stack name (default: the one stack of "
                            "--outputs-file, else stack_name of the configuration: cdk.json "
                            f"and --profile; else {STACK_NAME})")
    group.add_argument("--profile", help="profile YAML, as `-c config=path.yaml` for the CDK "
                                         "(the stack name and, for preflight, everything)")
    group.add_argument("--region", help="AWS Region of the stack (default: AWS_REGION, then "
                                        "AWS_DEFAULT_REGION / the AWS config)")
    group.add_argument("--outputs-file", type=Path,
                       help="read outputs from `cdk deploy --outputs-file` JSON instead of AWS")
    return common


def _per_backend(field: str) -> str:
    """``<label>: <text>`` of every job backend for one of their ``--help`` texts."""
    return "; ".join(f"{b.texts.label}: {getattr(b.texts, field)}" for b in BACKENDS.values())


def _cluster_options(p: argparse.ArgumentParser) -> None:
    """How the CLI reaches the cluster: the options of every job backend (each once)."""
    seen: set[str] = set()
    for backend in BACKENDS.values():
        for option in backend.options:
            if option.flag not in seen:
                seen.add(option.flag)
                p.add_argument(option.flag, choices=option.choices, default=option.default,
                               help=option.help)


def _job_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--name", help="job name (default: <script, module or recipe>-<UTC time>); "
                                  "RFC 1035 label")
    p.add_argument("--image", help="container image (default: the pool's training image, "
                                   "else the stack's TrainingImageUri)")
    p.add_argument("--dry-run", action="store_true",
                   help=f"print the job ({_per_backend('dry_run')}); change nothing")
    p.add_argument("--time", dest="time_limit",
                   help="time limit in Slurm's format, e.g. 2-00:00:00, or 90 for 90 minutes "
                        f"({_per_backend('time_limit')})")
    _cluster_options(p)


POOL_HELP = {
    "submit": "the node pool to run on, as sbatch's --partition (\"request a specific "
              "partition for the resource allocation\"; TorchX's Slurm run option "
              "`partition`); default: the stack's only Trainium pool, or an error listing the "
              "pools when it has several (`trn-ultracluster pools` lists them). A CPU pool "
              "runs a PROGRAM (not --recipe or --precompile), under torchrun with 1 process "
              "per node unless --nproc-per-node or --launcher none",
    "scale": "the node pool to size (default: the stack's only Trainium pool)",
    "smoke-test": "the Trainium pool whose NeuronCores and EFA to test, between 2 of its nodes "
                  "(default: the stack's only Trainium pool)",
    "status": "only this pool's jobs, and its nodes (default: every pool)",
}
"""``--pool`` of each command that takes it. The quoted words are sbatch(1)'s for
``--partition`` (https://slurm.schedmd.com/sbatch.html#OPT_partition); TorchX's Slurm scheduler
takes the same choice as its run option ``partition`` ("The partition to run the job in.",
``torchx/schedulers/slurm_scheduler.py``)."""


def _pool_option(p: argparse.ArgumentParser, command: str) -> None:
    p.add_argument("--pool", metavar="NAME", help=POOL_HELP[command])


def _command(sub: Any, name: str, **kwargs: Any) -> argparse.ArgumentParser:
    """A sub-command parser whose ``--help`` ends with the exit codes."""
    if "description" in kwargs:
        kwargs["description"] = textwrap.fill(kwargs["description"], width=92)
    return sub.add_parser(name, epilog=exit_codes_help(),
                          formatter_class=argparse.RawDescriptionHelpFormatter, **kwargs)


def build_parser() -> argparse.ArgumentParser:
    """The ``trn-ultracluster`` parser (one sub-parser per command)."""
    parser = argparse.ArgumentParser(
        prog="trn-ultracluster", description=DESCRIPTION, epilog=exit_codes_help(),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    common = _common()

    p = _command(sub, "preflight", parents=[common], help="check the account before deploy",
                 description="Check instance offering, quota, CDK bootstrap, Docker, "
                             "capacity and the stack (--stack-name: does it exist, in "
                             "which state) and whether the deploy would replace the FSx "
                             "file system (fsx.efa) for the configuration, in the configuration's "
                             "Region (derived from az_ids; --region, if given, must be "
                             "it). --outputs-file is refused: nothing is deployed yet. "
                             "Exit 1 if any check fails.")
    add_context_option(p)
    p.add_argument("--only", action="append", choices=PREFLIGHT_CHECKS, metavar="CHECK",
                   help="run only this check, repeatable (no estimate then); one of: "
                        + ", ".join(PREFLIGHT_CHECKS))
    _estimate_options(p)
    p.add_argument("--max-hourly-usd", type=positive_usd, metavar="USD",
                   help="warn when the stack costs more per hour than this when running")

    p = _command(sub, "plan", parents=[common],
                 help="say what a deploy would replace or roll, before it does",
                 description="Synthesize the configuration (cdk.json, --profile, -c) and "
                             "compare it with the deployed stack's template (CloudFormation "
                             "GetTemplate): print every replacement, removal and node roll in "
                             "words (docs/changes.md). Exit 1 when the deploy would replace or "
                             "remove data or nodes, or roll nodes, unless "
                             f"{plan.ALLOW_FLAG}. `make deploy` runs it first.")
    add_context_option(p)
    p.add_argument("--template", type=Path, metavar="FILE",
                   help="compare this synthesized template (cdk.out/<stack>.template.json) "
                        "instead of synthesizing the configuration")
    p.add_argument(plan.ALLOW_FLAG, dest="allow_replace", action="store_true",
                   help="print the plan and exit 0 even when it replaces or rolls something")

    p = _command(sub, "estimate", help="hourly cost and deploy time of the synthesized stack",
                 description="Itemized hourly cost when idle (node groups at their minimum) "
                             "and when running (at their maximum), and the first deploy's "
                             "duration, of the stack in --cdk-out (`make synth` writes it; "
                             "no deployed stack needed). Prices from the AWS Price List API "
                             "when credentials exist, else from a dated offline table; the "
                             "output says which.")
    _estimate_options(p)

    p = _command(sub, "outputs", parents=[common], help="print the stack outputs",
                 description="Print the stack outputs as a table (or JSON); say which "
                             "are missing.")
    p.add_argument("--json", action="store_true", help="print JSON")

    p = _command(sub, "pools", parents=[common], help="list the stack's node pools",
                 description="List the node pools of the stack (its Pools output), as sinfo "
                             "lists partitions: name (* marks the pool submit, scale and "
                             "smoke-test use without --pool), instance type, Trainium or CPU, "
                             "nodes min/desired/max as deployed, Neuron training stack, and "
                             "the Slurm partition, EKS node groups, Auto Scaling groups or "
                             "HyperPod instance groups that hold its nodes. docs/pools.md.")
    p.add_argument("--json", action="store_true", help="print JSON")

    teams.add_teams_commands(sub, _command, common)
    config.add_config_command(sub, _command)

    p = _command(sub, "data", parents=[common], help="stage a dataset to the shared storage",
                 description="Upload a file or directory to the stack's S3 data bucket; "
                             "the data repository association shows it on FSx.")
    p.add_argument("source", type=Path, help="local file or directory")
    p.add_argument("--prefix",
                   help=f"S3 key prefix (default: {stack.DEFAULT_DATA_PREFIX}/<source name>)")
    p.add_argument("--no-progress", action="store_true")

    p = _command(sub, "submit", parents=[common], help="run your program (or a recipe) as a job",
                 description="Run PROGRAM on every node of a job: a Python script in the "
                             "working directory, `-m MODULE`, or with --launcher none any "
                             "executable, with its arguments exactly as given. The working "
                             "directory (--workdir, default: the current directory) is packed "
                             "(without .git, virtual environments, __pycache__ and what "
                             ".trnignore lists), uploaded once under its content hash and "
                             "unpacked on FSx; every node runs the same snapshot there as its "
                             "current directory. --recipe runs the bundled trainer "
                             "(`python -m trn_train train`) instead, with more `train` flags "
                             "after `--`. docs/your-code.md lists the environment every job "
                             "gets. --pool chooses the node pool (docs/pools.md): a CPU pool "
                             "runs data preparation and tools, e.g. `--pool cpu --launcher "
                             "none -- python -m trn_train prepare-data ...`.")
    _pool_option(p, "submit")
    teams.add_team_options(p)
    p.add_argument("--nodes", type=int,
                   help="nodes of the pool (default: its nodes.desired, at least 1, and at "
                        "most the quota there of a team that may not borrow; at most its "
                        "nodes.max)")
    p.add_argument("--workdir", metavar="DIR",
                   help="the directory your program runs in on every node (default: the "
                        "current directory; not with --recipe, whose trainer is in the image)")
    p.add_argument("--requirements", metavar="FILE",
                   help="pip requirements installed on top of the image's Python, once per "
                        "job and file content for all nodes (the image's torch and Neuron "
                        "packages stay)")
    p.add_argument("--setup", metavar="CMD",
                   help="a bash command run on every node before the program, in the "
                        "working directory; the job fails if it does")
    p.add_argument("--launcher", choices=LAUNCHERS, default=TORCHRUN,
                   help="torchrun (default): one process per logical NeuronCore on every "
                        "node; none: PROGRAM once per node, for programs that start their "
                        "own workers")
    p.add_argument("--nproc-per-node", type=integer_from(1), metavar="N",
                   help="torchrun processes per node (default: the instance type's logical "
                        "NeuronCores; 1 on a CPU pool)")
    p.add_argument("--output-dir", help=f"the job's output directory TRN_OUTPUT_DIR, under "
                                        f"{FSX_MOUNT_PATH} (default: "
                                        f"{jobs.DEFAULT_OUTPUT_ROOT}/<name>)")
    p.add_argument("--precompile", action="store_true",
                   help="run a neuron_parallel_compile trial run of the program first (XLA "
                        "stack, Trn1)")
    p.add_argument("--precompile-args", metavar="ARGS",
                   help="arguments added to the program's for the trial run only, e.g. "
                        "--precompile-args=\"--max-steps 10\" (with `=` when it starts with "
                        "-); implies --precompile")
    p.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                   help="extra environment of the program "
                        f"({_per_backend('env')}); repeatable")
    p.add_argument("--no-progress", action="store_true",
                   help="no progress bar while the working directory uploads")
    group = p.add_argument_group("the bundled trainer (--recipe)")
    group.add_argument("--recipe", help="trn_train recipe (python -m trn_train recipes); "
                                        "instead of a PROGRAM")
    group.add_argument("--steps", type=int, help="total optimizer steps (--recipe)")
    group.add_argument("--data-dir",
                       help=f"prepared data on the shared file system (under {FSX_MOUNT_PATH}), "
                            f"e.g. {FSX_MOUNT_PATH}/datasets/x (--recipe)")
    group.add_argument("--precompile-steps", type=int, default=None,
                       help="steps of the trainer's precompile trial run (default: "
                            f"{PRECOMPILE_STEPS}); implies --precompile")
    _job_options(p)
    p.add_argument("program", nargs=argparse.REMAINDER, metavar="-- PROGRAM [ARGS...]",
                   help="your program and its arguments, e.g. `-- train.py --epochs 3` or "
                        "`-- -m my_pkg.train`; with --recipe: more `train` flags")

    for name, text in (("status", "show jobs or one job"), ("logs", "print a job's log"),
                       ("cancel", "cancel a job")):
        p = _command(sub, name, parents=[common], help=text, description=text.capitalize() + ".")
        p.add_argument("job", nargs="?" if name == "status" else None,
                       help=_per_backend("job"))
        if name == "status":
            _pool_option(p, "status")
        if name == "logs":
            p.add_argument("--tail", type=integer_from(1), help="last N lines only (N >= 1)")
        _cluster_options(p)

    p = _command(sub, "scale", parents=[common],
                 help="set the number of nodes of a pool (EKS, standalone)",
                 description="Set the desired size of a pool's EKS node groups (e.g. once a "
                             "Capacity Block is active) or of its standalone Auto Scaling "
                             "groups; 0 stops paying for idle nodes.")
    _pool_option(p, "scale")
    p.add_argument("--nodes", type=int, required=True,
                   help="desired nodes, 0 to the pool's nodes.max")

    p = _command(sub, "shell", parents=[common], help="open a shell on a node (standalone)",
                 description="Open a Session Manager shell on a standalone node (`aws ssm "
                             "start-session`; needs the AWS CLI v2 and the Session Manager "
                             "plugin).")
    p.add_argument("--node", type=integer_from(0), default=0,
                   help="node number, 0 (default) is the first")
    p.add_argument("--print", action="store_true", help="print the command instead of running it")

    p = _command(sub, "smoke-test", parents=[common], help="2-node all-reduce over EFA",
                 description="All-reduce over every NeuronCore of 2 nodes of one Trainium "
                             "pool; reports bus bandwidth against the instance's network "
                             "bandwidth.")
    _pool_option(p, "smoke-test")
    teams.add_team_options(p)
    _job_options(p)
    p.add_argument("--no-wait", action="store_true", help="submit and return")
    p.add_argument("--timeout", type=positive_seconds, default=smoke_test.SMOKE_TIMEOUT_S,
                   help=f"seconds to wait (default {smoke_test.SMOKE_TIMEOUT_S:g})")
    p.add_argument("--from-log", type=Path, help="judge a saved job log instead of running")
    p.add_argument("--min-ratio", type=ratio, default=MIN_EFA_RATIO,
                   help="pass threshold, bus/network bandwidth, more than 0 and at most 1 "
                        f"(default {MIN_EFA_RATIO:g})")
    return parser


# --- running a command ------------------------------------------------------------------------


def _stdout_gone() -> int:
    """The reader of stdout went away (``| head``): stop quietly with 141.

    Python ignores SIGPIPE, so a write to a closed pipe raises ``BrokenPipeError``; a shell
    tool stopped by SIGPIPE says nothing and its status is 128 + 13. stdout is pointed at
    /dev/null so the interpreter's final flush does not fail again (Python docs, signal
    module, "Note on SIGPIPE").
    """
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # stdout is not a file descriptor (tests, embedding)
        pass
    return int(ExitCode.PIPE_CLOSED)


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the exit status and prints ``error:``/``fix:`` lines on failure."""
    args = build_parser().parse_args(argv)
    try:
        if getattr(args, "stack_name", "") is None and args.command not in ("preflight", "plan"):
            # preflight and plan take the stack name of the configuration they load
            args.stack_name = default_stack_name(Path.cwd(), args.outputs_file, args.profile)
        code = int(COMMANDS[args.command](args))
        sys.stdout.flush()  # a closed pipe shows here, not at interpreter exit
        return code
    except CliError as err:
        print(f"error: {err.message}", file=sys.stderr)
        if err.fix:
            print(f"fix: {err.fix}", file=sys.stderr)
        return int(err.exit_code)
    except BrokenPipeError:
        return _stdout_gone()
    except KeyboardInterrupt:
        return int(ExitCode.INTERRUPTED)


if __name__ == "__main__":
    sys.exit(main())
