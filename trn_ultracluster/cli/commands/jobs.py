"""Job commands: ``submit``, ``status``, ``logs`` and ``cancel``, through the stack's job
backend. ``submit`` runs the user's program (``-- PROGRAM [ARGS]``) in a snapshot of its
working directory, or the bundled trainer (``--recipe``), on the same job path, in one node
pool (``--pool``, default: the only Trainium pool). On a CPU pool it runs programs only (the
bundled trainer and ``--precompile`` need NeuronCores), under torchrun with one process per
node unless ``--nproc-per-node`` or ``--launcher none``."""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from dataclasses import replace
from pathlib import Path, PurePosixPath

from trn_ultracluster.cli.commands import common
from trn_ultracluster.cli.errors import CliError, ExitCode
from trn_ultracluster.cli.job_args import (
    ARGUMENTS_FIX,
    check_env,
    check_nodes,
    check_shared_dir,
    check_train_recipe,
)
from trn_ultracluster.cli.launch import (
    NO_LAUNCHER,
    PRECOMPILE_STEPS,
    PYTHON_NAMES,
    CodeSnapshot,
    Launch,
    check_precompile_stack,
    default_job_name,
    program_launch,
    trn_train_launch,
)
from trn_ultracluster.cli.node_script import JOB_VARIABLES
from trn_ultracluster.cli.stack_outputs import StackOutputs
from trn_ultracluster.contracts.catalog import InstanceSpec
from trn_ultracluster.contracts.neuron_stack import NEURON_STACKS, NeuronStackName
from trn_ultracluster.contracts.pools import PoolInfo
from trn_ultracluster.cli.workdir import (
    Snapshot,
    check_program,
    check_requirements,
    pack_workdir,
    read_requirements,
    upload_snapshot,
)
from trn_ultracluster.contracts.neuron_env import neuron_environment
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
    """Steps of the bundled trainer's precompile pass: ``--precompile-steps`` (which implies
    ``--precompile``; 0 or less is rejected by :func:`trn_train_launch`),
    :data:`PRECOMPILE_STEPS` with ``--precompile`` alone, ``None`` (no pass) without either."""
    if args.precompile_steps is not None:
        return args.precompile_steps
    return PRECOMPILE_STEPS if args.precompile else None


TORCHRUN_VARIABLES = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK",
                     "ROLE_RANK", "ROLE_WORLD_SIZE")
"""What torchrun sets for each process (PyTorch "torchrun (Elastic Launch)", "Environment
Variables")."""


def _check_env_names(env: dict[str, str]) -> None:
    """``--env`` may not set what the job itself sets (its place, its directories: the job
    would not run where and as it says).

    Raises:
        CliError: (USAGE) a name of :data:`JOB_VARIABLES` or :data:`TORCHRUN_VARIABLES`.
    """
    reserved = sorted(set(env) & set(JOB_VARIABLES + TORCHRUN_VARIABLES))
    if reserved:
        raise CliError(f"--env {', '.join(reserved)}: set by the job itself on every node "
                       "(docs/your-code.md, \"The environment of your program\")",
                       "leave it out: e.g. --output-dir sets TRN_OUTPUT_DIR, --nodes the node "
                       "count, --nproc-per-node the processes")


def _warn_stack_env(env: dict[str, str], spec: InstanceSpec, stack: NeuronStackName) -> None:
    """Warn when ``--env`` replaces what the stack sets for a Trainium pool's instance type
    and Neuron stack (:func:`~trn_ultracluster.contracts.neuron_env.neuron_environment`):
    ``NEURON_CC_FLAGS`` without ``--cache_dir`` drops the shared compile cache, which
    ``--precompile`` fills. Nothing on a CPU pool, whose programs use no Neuron compiler."""
    if not spec.accelerated:
        return
    stack_env = neuron_environment(spec, stack)
    for name in sorted(set(env) & set(stack_env)):
        hint = (" and it has no --cache_dir: the shared compile cache on FSx is not used"
                if name == "NEURON_CC_FLAGS" and "--cache_dir" not in env[name] else "")
        print(f"warning: --env {name} replaces the stack's value for this job ({stack_env[name]})"
              f"{hint} (docs/your-code.md)", file=sys.stderr)


def _pool_stack(pool: PoolInfo, outputs: StackOutputs) -> NeuronStackName:
    """The Neuron training stack of a Trainium pool: its own (``Pools`` output), else the
    stack's ``NeuronStack`` (the main image's).

    Raises:
        CliError: (STACK) a stack this CLI does not know (a stack of a newer version).
    """
    if not pool.neuron_stack:
        return outputs.neuron_stack
    if pool.neuron_stack not in NEURON_STACKS:
        raise CliError(f"output {OutputKey.POOLS.value}: pool {pool.name}'s neuron_stack = "
                       f"{pool.neuron_stack!r} is not one of {', '.join(NEURON_STACKS)}",
                       "upgrade the CLI to the stack's version", ExitCode.STACK)
    return pool.neuron_stack  # type: ignore[return-value]


def _check_pool_program(args: argparse.Namespace, pool: PoolInfo, pools: tuple[PoolInfo, ...],
                        ) -> None:
    """On a CPU pool, only a program runs: ``--recipe`` (the bundled trainer) and
    ``--precompile`` need NeuronCores.

    Raises:
        CliError: (USAGE) either on a CPU pool; the fix names the Trainium pools.
    """
    if pool.accelerated:
        return
    trainium = ", ".join(f"--pool {p.name}" for p in pools if p.accelerated)
    where = f"pool {pool.name} is a CPU pool ({pool.instance_type}, no NeuronCores)"
    if args.recipe is not None:
        raise CliError(f"--recipe runs the bundled trainer on NeuronCores, and {where}",
                       f"train on a Trainium pool ({trainium}); on pool {pool.name} run a "
                       "program, e.g. --launcher none -- python -m trn_train prepare-data ...")
    if args.precompile or args.precompile_args is not None or args.precompile_steps is not None:
        raise CliError(f"--precompile runs neuron_parallel_compile, which compiles for "
                       f"NeuronCores, and {where}", f"leave --precompile out on pool "
                       f"{pool.name}, or run on a Trainium pool ({trainium})")


def _words_after_dashes(words: list[str]) -> list[str]:
    """The command line after ``submit``'s options: the first ``--`` (argparse keeps it in
    the remainder) is dropped, every later word is the program's, as given."""
    return words[1:] if words[:1] == ["--"] else list(words)


def _recipe_program(args: argparse.Namespace, words: list[str], outputs: StackOutputs,
                    pool: PoolInfo, output_dir: str, requirements: str | None) -> Launch:
    """``--recipe``: the bundled trainer, ``python -m trn_train train`` from the image;
    words after ``--`` are more ``train`` flags."""
    if words and not words[0].startswith("-"):
        raise CliError(f"--recipe runs the bundled trainer, and a PROGRAM was given too "
                       f"({shlex.join(words[:3])}...)", "drop --recipe to run your program, "
                       "or give only `train` flags after `--` with --recipe")
    for option, value in (("--steps", args.steps), ("--data-dir", args.data_dir)):
        if value is None:
            raise CliError(f"--recipe needs {option}", ARGUMENTS_FIX)
    if args.workdir is not None:
        raise CliError("--workdir is for your own program: --recipe runs the bundled trainer "
                       "from the image", "drop --workdir, or run your copy of the trainer "
                       "as a program: -- -m trn_train train ...")
    if args.precompile_args is not None:
        raise CliError("--precompile-args is for your own program; with --recipe the trial run "
                       "is --precompile-steps N", ARGUMENTS_FIX)
    stack = _pool_stack(pool, outputs)
    check_train_recipe(args.recipe, stack)
    try:
        launch = trn_train_launch(recipe=args.recipe, data_dir=check_shared_dir(
                                      "--data-dir", args.data_dir),
                                  output_dir=output_dir, steps=args.steps,
                                  instance_type=pool.instance_type,
                                  backend=stack, extra_args=tuple(words),
                                  precompile_steps=_precompile_steps(args))
    except ValueError as err:
        raise CliError(str(err), ARGUMENTS_FIX) from None
    return replace(launch, requirements=requirements, user_setup=args.setup,
                   nproc_per_node=args.nproc_per_node)


def _user_program(args: argparse.Namespace, words: list[str], outputs: StackOutputs,
                  pool: PoolInfo, requirements: str | None, snapshot: Snapshot) -> Launch:
    """``submit -- PROGRAM [ARGS]``: the user's program in its working directory snapshot."""
    for option in ("steps", "data_dir", "precompile_steps"):
        if getattr(args, option) is not None:
            flag = "--" + option.replace("_", "-")
            raise CliError(f"{flag} belongs to --recipe (the bundled trainer); your program "
                           "takes its own arguments after `--`", ARGUMENTS_FIX)
    precompile = args.precompile or args.precompile_args is not None
    if precompile:
        try:
            check_precompile_stack(_pool_stack(pool, outputs))
        except ValueError as err:
            raise CliError(str(err), ARGUMENTS_FIX) from None
    link = outputs.data_bucket_on_fsx()
    if link == NONE:
        raise CliError("new objects of this stack's data bucket do not appear on FSx "
                       f"({OutputKey.DATA_BUCKET_ON_FSX.value} none: fsx.data_repository is "
                       "off, links another bucket or prefix, or has auto_import: false): the "
                       "nodes would never see an uploaded working directory",
                       "deploy with the default fsx.data_repository (the data bucket linked "
                       "at / with automatic import), or build your code into the image "
                       "(training_image.user_dockerfile)", ExitCode.STACK)
    code = CodeSnapshot(snapshot.sha256, fsx_path(link, snapshot.key))
    try:
        trial = tuple(shlex.split(args.precompile_args or "")) if precompile else None
    except ValueError as err:  # shlex: "No closing quotation", "No escaped character"
        raise CliError(f"--precompile-args {args.precompile_args!r} cannot be split into "
                       f"words as a shell would ({err})", "close the quotes, e.g. "
                       "--precompile-args \"--max-steps 10 --note 'a b'\"") from None
    try:
        launch = program_launch(
            words, launcher=args.launcher, nproc_per_node=args.nproc_per_node,
            precompile_args=trial, code=code, requirements=requirements,
            user_setup=args.setup)
    except ValueError as err:
        raise CliError(str(err), ARGUMENTS_FIX) from None
    return launch


_PYTHON_OPTIONS_WITH_VALUE = ("-W", "-X", "--check-hash-based-pycs")
"""Options of the ``python`` command whose value is the next word (python(1) man page,
SYNOPSIS: ``-W argument``, ``-X option``, ``--check-hash-based-pycs default | always |
never``; ``-c command`` and ``-m module-name`` end the options)."""


def _script_at(words: list[str]) -> int | None:
    """Where the program's file is in ``words``: the first word, or after ``python`` /
    ``python3`` and its options the script; ``None`` for a module (``-m``) or code (``-c``)."""
    if words[0] not in PYTHON_NAMES or len(words) == 1:
        return None if words[0] == "-m" else 0
    at = 1
    while at < len(words) and words[at].startswith("-"):
        if words[at] in ("-m", "-c"):
            return None
        at += 2 if words[at] in _PYTHON_OPTIONS_WITH_VALUE else 1
    return at if at < len(words) else None


def _program_name(words: list[str]) -> str:
    """The default job name's prefix: the script's or module's name."""
    at = _script_at(words)
    if at is not None:
        return PurePosixPath(words[at]).stem or "job"
    module = words.index("-m") + 1 if "-m" in words else len(words)
    return words[module].rsplit(".", 1)[-1] if module < len(words) else "job"


def _pack(args: argparse.Namespace, words: list[str]) -> tuple[Snapshot, list[str]]:
    """Pack ``--workdir`` (default: the current directory) and check that a program named
    by a path is in it (and executable when it runs as a command: with ``--launcher none``,
    or under torchrun when it is not a ``.py`` file); returns the snapshot and the words, an
    absolute path inside the directory made relative to it (the nodes unpack it elsewhere;
    ``./`` kept for a command, which the node would look up on ``PATH`` otherwise). A
    command without a ``/`` that is not a ``.py`` file is looked up on the node's ``PATH``
    (``bash``, ``python3``); an absolute path outside the directory is the image's."""
    source = Path(args.workdir) if args.workdir is not None else Path.cwd()
    resolved_source = source.expanduser().resolve()
    if resolved_source in (Path("/"), Path.home().resolve()):
        raise CliError(f"--workdir {source} is {resolved_source}: the whole directory would be "
                       "packed and shipped to every node", "cd into your project (or pass "
                       "--workdir PROJECT_DIR)")
    snapshot = pack_workdir(source)
    words = list(words)
    at = _script_at(words)
    program = words[at] if at is not None else ""
    if program and "/" not in program and not program.endswith(".py") and (
            snapshot.source / program).is_file():
        program = words[at] = f"./{program}"  # a file of the working directory, not on PATH
    if not (program.endswith(".py") or "/" in program):
        return snapshot, words
    if PurePosixPath(program).is_absolute():
        resolved = Path(program).resolve()
        if not resolved.is_relative_to(snapshot.source):
            return snapshot, words
        program = resolved.relative_to(snapshot.source).as_posix()
        if at == 0 and not program.endswith(".py") and "/" not in program:
            program = f"./{program}"
        words[at] = program
    check_program(snapshot, program)
    by_torchrun = args.launcher != NO_LAUNCHER
    if at == 0 and not (by_torchrun and program.endswith(".py")) and not os.access(
            snapshot.source / program, os.X_OK):
        how = ("by torchrun --no-python on every process (it is not a .py file)"
               if by_torchrun else "itself, once per node (--launcher none)")
        raise CliError(f"PROGRAM {program} is run {how}, and it is not executable",
                       f"chmod +x {program} (with a #! line), or run it through its "
                       f"interpreter, e.g. `-- python {program}`")
    return snapshot, words


def submit(args: argparse.Namespace) -> int:
    """Check everything that can be checked here (the program, its working directory, the
    requirements, the recipe, the stack), then upload the working directory snapshot and
    submit (or, with ``--dry-run``, print) the job. Nothing is uploaded or sent when a check
    fails."""
    words = _words_after_dashes(args.program)
    if args.recipe is None and not words:
        raise CliError("submit needs a PROGRAM after `--` or --recipe",
                       "e.g. trn-ultracluster submit --nodes 2 -- train.py --epochs 3, or "
                       "--recipe llama-1b --steps 100 --data-dir /fsx/datasets/x")
    if args.recipe is not None:
        check_train_recipe(args.recipe)  # exists: before anything is read
    output_dir = check_shared_dir("--output-dir", args.output_dir) if args.output_dir else None
    env = check_env(args.env)
    _check_env_names(env)
    if args.launcher == NO_LAUNCHER and args.nproc_per_node is not None:
        raise CliError("--nproc-per-node is torchrun's, and --launcher none starts no torchrun",
                       "leave --nproc-per-node out, or give it to your own launcher line")
    requirements = None
    if args.requirements is not None:
        found = read_requirements(Path(args.requirements))
        check_requirements(found)
        requirements = found.text
    snapshot = None
    if args.recipe is None:
        snapshot, words = _pack(args, words)
    try:
        outputs = common.load(args)
        pool = outputs.pool(args.pool)
        _check_pool_program(args, pool, outputs.pools())
        nodes = args.nodes if args.nodes is not None else common.default_nodes(
            args, outputs, pool)
        check_nodes(nodes, pool)
        name = args.name or default_job_name(args.recipe or _program_name(words))
        output_dir = output_dir or default_output_dir(outputs, name)
        launch = (_recipe_program(args, words, outputs, pool, output_dir, requirements)
                  if snapshot is None else
                  _user_program(args, words, outputs, pool, requirements, snapshot))
        _warn_stack_env(env, outputs.pool_spec(pool), _pool_stack(pool, outputs))
        backend = common.backend(args, outputs)
        job = common.render_job(args, outputs, backend, name=name, nodes=nodes,
                                launch=launch, pool=pool, env=env, output_dir=output_dir)
        if snapshot is not None:
            print(f"code: {snapshot.source} -> snapshot {snapshot.sha256} ({snapshot.files} "
                  f"files, {snapshot.bytes} bytes)", file=sys.stderr)
        if args.dry_run:
            print(job.text, end="")
            return ExitCode.OK
        if snapshot is not None:
            bucket = outputs.get(OutputKey.DATA_BUCKET_NAME)
            uploaded = upload_snapshot(common.stack_session(args, outputs), bucket, snapshot,
                                       progress=not args.no_progress)
            print(f"code: {'uploaded to' if uploaded else 'already in'} "
                  f"s3://{bucket}/{snapshot.key}", file=sys.stderr)
        handle = backend.submit(job)
    finally:
        if snapshot is not None:
            snapshot.cleanup()
    code = f"; code {snapshot.sha256[:12]}" if snapshot is not None else ""
    print(f"submitted {handle} ({nodes} x {pool.instance_type}{code}) on pool {pool.name}; "
          f"watch: trn-ultracluster status {handle}; logs: trn-ultracluster logs {handle}")
    return ExitCode.OK


def status(args: argparse.Namespace) -> int:
    """One job, or every job (saying so when there is none); with ``--pool``, those of one
    pool and its nodes (a pool that does not exist is an error listing the pools); on a stack
    with teams, without a job: each team's use of its quota and its jobs waiting for quota."""
    outputs = common.load(args)
    pool = outputs.pool(args.pool) if args.pool is not None else None
    backend = common.backend(args, outputs)
    for line in backend.status(args.job, common.backend_pool(outputs, pool)):
        print(line)
    teams = outputs.teams()
    if teams and args.job is None:
        for line in backend.team_status(teams):
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
