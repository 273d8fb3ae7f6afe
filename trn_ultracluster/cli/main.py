"""Command line of the job CLI: ``trn-ultracluster <command> --help``.

Every command reads the stack outputs (``--stack-name``, default ``TrnUltraCluster``) from
CloudFormation in ``--region``, or from ``--outputs-file`` (``cdk deploy --outputs-file``
JSON). Exit codes: :class:`trn_ultracluster.cli.errors.ExitCode` (``--help`` lists them).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

from trn_ultracluster.contracts.catalog import UnknownInstanceTypeError, get_instance
from trn_ultracluster.cli.errors import CliError, ExitCode, exit_codes_help
from trn_ultracluster.cli.launch import PRECOMPILE_STEPS
from trn_ultracluster.cli.smoke import MIN_EFA_RATIO
from trn_ultracluster.cli.stack_outputs import ORCHESTRATOR_KEYS
from trn_ultracluster.contracts.outputs import DESCRIPTIONS, STACK_NAME, OutputKey
from trn_ultracluster.contracts.shared_storage import FSX_MOUNT_PATH, JOBS_DIR, RUNS_DIR, fsx_path

__all__ = ["build_parser", "main"]

DEFAULT_OUTPUT_ROOT = fsx_path("/", RUNS_DIR)
"""Default parent of ``--output-dir`` with the default data repository link: one directory
per job on FSx (:func:`_default_output_dir` follows the stack's link)."""
DEFAULT_DATA_PREFIX = "datasets"
SMOKE_TIMEOUT_S = 3600.0
"""Default ``smoke-test --timeout``: node scale-up plus the benchmark."""
POLL_S = 15.0
"""Seconds between job state polls of ``smoke-test``."""
DESCRIPTION = """\
The TrnUltraCluster job CLI: check the account, stage data, submit, watch and smoke-test
training jobs. Every command reads the stack outputs (--stack-name, default TrnUltraCluster)
from CloudFormation in --region (default: AWS_REGION, then AWS_DEFAULT_REGION / the AWS
config), or from --outputs-file (the JSON of `cdk deploy --outputs-file`).
Run `trn-ultracluster COMMAND --help` for a command's options."""


# --- argument parsing -------------------------------------------------------------------------


def _at_least_one(text: str) -> int:
    """argparse type: an integer >= 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _positive_seconds(text: str) -> float:
    """argparse type: seconds > 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number of seconds, got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be more than 0 seconds, got {text}")
    return value


def _ratio(text: str) -> float:
    """argparse type: a fraction in (0, 1]."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number, got {text!r}") from None
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"must be more than 0 and at most 1, got {text}")
    return value


def _common() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    group = common.add_argument_group("stack")
    group.add_argument("--stack-name", default=STACK_NAME,
                       help=f"CloudFormation stack name (default: {STACK_NAME})")
    group.add_argument("--region", help="AWS Region of the stack (default: AWS_REGION, then "
                                        "AWS_DEFAULT_REGION / the AWS config)")
    group.add_argument("--outputs-file", type=Path,
                       help="read outputs from `cdk deploy --outputs-file` JSON instead of AWS")
    return common


def _cluster_options(p: argparse.ArgumentParser) -> None:
    """How the CLI reaches the orchestrator (every command that talks to the cluster)."""
    p.add_argument("--ssm-transport", choices=["session", "send-command"], default="session",
                   help="HyperPod: reach the controller with `aws ssm start-session` (default) "
                        "or SSM SendCommand")
    p.add_argument("--kube-context",
                   help="EKS: use this kubeconfig context (default: reach the cluster with "
                        "your AWS credentials, no kubeconfig needed)")


def _job_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--name", help="job name (default: <recipe>-<UTC time>); RFC 1035 label")
    p.add_argument("--image", help="container image (default: the stack's TrainingImageUri)")
    p.add_argument("--dry-run", action="store_true",
                   help="print the TrainJob manifest (EKS) or sbatch script (Slurm); change nothing")
    p.add_argument("--time", dest="time_limit",
                   help="time limit in Slurm's format, e.g. 2-00:00:00 or 90 (minutes): "
                        "sbatch --time on HyperPod, the TrainJob's activeDeadlineSeconds on EKS")
    _cluster_options(p)


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
                             "which state) for the configuration, in the configuration's "
                             "Region (derived from az_ids; --region, if given, must be "
                             "it). --outputs-file is refused: nothing is deployed yet. "
                             "Exit 1 if any check fails.")
    p.add_argument("--profile", help="profile YAML, as `-c config=path.yaml` for the CDK")
    p.add_argument("-c", "--context", action="append", default=[], metavar="KEY=VALUE",
                   help="config override, as `cdk -c` (e.g. -c nodes.max=4); repeatable")

    p = _command(sub, "outputs", parents=[common], help="print the stack outputs",
                 description="Print the stack outputs as a table (or JSON); say which "
                             "are missing.")
    p.add_argument("--json", action="store_true", help="print JSON")

    p = _command(sub, "data", parents=[common], help="stage a dataset to the shared storage",
                 description="Upload a file or directory to the stack's S3 data bucket; "
                             "the data repository association shows it on FSx.")
    p.add_argument("source", type=Path, help="local file or directory")
    p.add_argument("--prefix", help=f"S3 key prefix (default: {DEFAULT_DATA_PREFIX}/<source name>)")
    p.add_argument("--no-progress", action="store_true")

    p = _command(sub, "submit", parents=[common], help="submit a training job",
                 description="Submit `torchrun -m trn_train train ...` on the stack's "
                             "orchestrator; extra `train` flags go after `--`.")
    p.add_argument("--recipe", required=True, help="trn_train recipe (python -m trn_train recipes)")
    p.add_argument("--steps", type=int, required=True, help="total optimizer steps")
    p.add_argument("--data-dir", required=True,
                   help=f"prepared data on the shared file system (under {FSX_MOUNT_PATH}), "
                        f"e.g. {FSX_MOUNT_PATH}/datasets/x")
    p.add_argument("--output-dir", help=f"checkpoints, under {FSX_MOUNT_PATH} (default: "
                                        f"{DEFAULT_OUTPUT_ROOT}/<name>)")
    p.add_argument("--nodes", type=int, help="nodes (default: the stack's NodeCountDesired)")
    p.add_argument("--precompile", action="store_true",
                   help="run a neuron_parallel_compile pass first")
    p.add_argument("--precompile-steps", type=int, default=None,
                   help="steps of the precompile trial run (default: "
                        f"{PRECOMPILE_STEPS}); implies --precompile")
    p.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                   help="extra environment of the training processes (EKS: the trainer "
                        "container; HyperPod: exported in the sbatch script); repeatable")
    _job_options(p)
    p.add_argument("train_args", nargs=argparse.REMAINDER,
                   help="after `--`: more `python -m trn_train train` flags")

    for name, text in (("status", "show jobs or one job"), ("logs", "print a job's log"),
                       ("cancel", "cancel a job")):
        p = _command(sub, name, parents=[common], help=text, description=text.capitalize() + ".")
        p.add_argument("job", nargs="?" if name == "status" else None,
                       help="EKS: TrainJob name; Slurm: job id")
        if name == "logs":
            p.add_argument("--tail", type=_at_least_one, help="last N lines only (N >= 1)")
        _cluster_options(p)

    p = _command(sub, "scale", parents=[common], help="set the number of Trainium nodes (EKS)",
                 description="Set the desired size of the EKS Trainium node group, e.g. "
                             "once a Capacity Block is active, or 0 to stop paying for "
                             "idle nodes.")
    p.add_argument("--nodes", type=int, required=True, help="desired nodes, 0..NodeCountMax")

    p = _command(sub, "smoke-test", parents=[common], help="2-node all-reduce over EFA",
                 description="All-reduce over every NeuronCore of 2 nodes; reports bus "
                             "bandwidth against the instance's network bandwidth.")
    _job_options(p)
    p.add_argument("--no-wait", action="store_true", help="submit and return")
    p.add_argument("--timeout", type=_positive_seconds, default=SMOKE_TIMEOUT_S,
                   help=f"seconds to wait (default {SMOKE_TIMEOUT_S:g})")
    p.add_argument("--from-log", type=Path, help="judge a saved job log instead of running")
    p.add_argument("--min-ratio", type=_ratio, default=MIN_EFA_RATIO,
                   help="pass threshold, bus/network bandwidth, more than 0 and at most 1 "
                        f"(default {MIN_EFA_RATIO:g})")
    return parser


# --- helpers --------------------------------------------------------------------------------


def _load(args: argparse.Namespace):
    """The stack outputs of ``args`` (printing their warnings).

    Raises:
        CliError: as :func:`load_outputs`; USAGE when ``--region`` contradicts the stack's
            ``Region`` output (an outputs file of a stack in another Region).
    """
    from trn_ultracluster.cli.stack_outputs import load_outputs

    outputs = load_outputs(args.stack_name, args.region, args.outputs_file)
    stack_region = outputs.values.get(OutputKey.REGION.value)
    if args.region and stack_region and args.region != stack_region:
        raise CliError(f"--region {args.region} does not match the stack's Region {stack_region} "
                       f"({outputs.source})", "leave --region out, or pass the outputs of the "
                       f"stack in {args.region}")
    for warning in outputs.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    return outputs


def _region(args: argparse.Namespace, outputs: Any) -> str | None:
    """The stack's Region: its ``Region`` output, else ``--region`` / ``AWS_REGION``
    (``None``: the AWS config's)."""
    from trn_ultracluster.cli.aws import resolve_region

    return outputs.values.get(OutputKey.REGION.value) or resolve_region(args.region)


def _session(args: argparse.Namespace, outputs: Any) -> Any:
    from trn_ultracluster.cli.aws import make_session

    return make_session(_region(args, outputs))


def _spec(outputs: Any):
    try:
        return get_instance(outputs.get(OutputKey.INSTANCE_TYPE))
    except UnknownInstanceTypeError as err:
        raise CliError(str(err), "upgrade the CLI to the stack's version", ExitCode.STACK) from None


def _orchestrator(outputs: Any) -> str:
    value = outputs.get(OutputKey.ORCHESTRATOR)
    if value not in ORCHESTRATOR_KEYS:
        raise CliError(f"unknown orchestrator {value!r} in the outputs", "redeploy", ExitCode.STACK)
    return value


def _eks_client(args: argparse.Namespace, outputs: Any):
    from trn_ultracluster.cli.eks import connect

    session = _session(args, outputs)
    return connect(outputs.get(OutputKey.EKS_TRAINING_NAMESPACE), session=session,
                   region=session.region_name,
                   cluster_name=outputs.get(OutputKey.EKS_CLUSTER_NAME),
                   context=args.kube_context)


def _slurm_jobs(args: argparse.Namespace, outputs: Any):
    from trn_ultracluster.cli.slurm import SlurmJobs, controller_target, transport_for

    session = _session(args, outputs)
    target = controller_target(session, outputs.get(OutputKey.HYPERPOD_CLUSTER_NAME),
                               outputs.get(OutputKey.HYPERPOD_CLUSTER_ARN),
                               outputs.get(OutputKey.HYPERPOD_CONTROLLER_GROUP))
    return SlurmJobs(transport_for(args.ssm_transport, session, target))


def _job_client(args: argparse.Namespace, outputs: Any, orchestrator: str) -> Any:
    """The orchestrator's job client (``TrainJobClient`` or ``SlurmJobs``), built once per
    command: building it loads the kubeconfig or lists the HyperPod controller nodes."""
    return _eks_client(args, outputs) if orchestrator == "eks" else _slurm_jobs(args, outputs)


def _slurm_job_id(job: str) -> int:
    if not job.isdigit():
        raise CliError(f"Slurm job id must be a number, got {job!r}", "`status` lists the jobs")
    return int(job)


def _key_value(items: list[str], option: str) -> dict[str, str]:
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise CliError(f"{option} {item!r} must be KEY=VALUE", f"e.g. {option} nodes.max=4")
        out[key] = value
    return out


def _cdk_context(repo: Path) -> dict[str, Any]:
    """The ``context`` of ``cdk.json`` in ``repo`` (empty without the file), as the CDK app
    reads it.

    Raises:
        CliError: (USAGE) the file cannot be read or is not a JSON object.
    """
    from trn_ultracluster.cli.files import read_text

    path = repo / "cdk.json"
    if not path.exists():
        return {}
    fix = "fix cdk.json (the repository's copy is valid JSON), or run from the repository"
    try:
        data = json.loads(read_text(path, "file", fix).strip() or "null")
    except json.JSONDecodeError as err:
        raise CliError(f"{path} is not JSON ({err})", fix) from None
    context = data.get("context", {}) if isinstance(data, dict) else None
    if not isinstance(context, dict):
        raise CliError(f"{path} has no \"context\" object", fix)
    return dict(context)


# --- commands -------------------------------------------------------------------------------


def cmd_preflight(args: argparse.Namespace) -> int:
    """Load the config like the CDK app does, then run the checks in its Region.

    ``--outputs-file`` is refused (nothing is deployed yet); ``--region`` must be the
    configuration's Region; ``--stack-name`` names the stack whose state is reported.
    """
    import subprocess

    from trn_ultracluster.cli import aws
    from trn_ultracluster.cli.preflight import format_table, run_preflight
    from trn_ultracluster.config import PROFILE_CONTEXT_KEY, ConfigError, load_config

    if args.outputs_file is not None:
        raise CliError("preflight checks the account before a deploy and reads no outputs: "
                       "--outputs-file has no meaning here",
                       "leave --outputs-file out (`outputs --outputs-file ...` reads a "
                       "deployed stack's outputs)")
    repo = Path.cwd()
    context = _cdk_context(repo)
    if args.profile:
        context[PROFILE_CONTEXT_KEY] = args.profile
    context.update(_key_value(args.context, "-c"))
    try:
        config = load_config(context, base_dir=repo).config
    except ConfigError as err:
        raise CliError(str(err), "fix the configuration (README 'Configuration')") from None
    if args.region and args.region != config.region:
        raise CliError(f"--region {args.region} is not the configuration's Region {config.region} "
                       f"(derived from az_ids {', '.join(config.az_ids)})",
                       "leave --region out, or set az_ids to AZ IDs of "
                       f"{args.region} (-c az_ids=... or a profile)")
    account, checks = run_preflight(aws.make_session(config.region), config, subprocess.run,
                                    stack_name=args.stack_name)
    print(f"preflight: {config.instance_type} x {config.nodes.max} in {config.compute_az_id} "
          f"({config.region}), orchestrator {config.orchestrator}, account {account}")
    print(format_table(checks))
    failed = [c.name for c in checks if not c.ok]
    if failed:
        print(f"preflight failed: {', '.join(failed)}", file=sys.stderr)
        return ExitCode.CHECK_FAILED
    print("preflight passed")
    return ExitCode.OK


def cmd_outputs(args: argparse.Namespace) -> int:
    """Print the outputs; list the missing ones (exit 3 when any is missing)."""
    from trn_ultracluster.cli.stack_outputs import expected_keys

    outputs = _load(args)
    missing = outputs.missing()
    if args.json:
        print(json.dumps(outputs.values, indent=2, sort_keys=True))
    else:
        known = {k.value for k in expected_keys(outputs.orchestrator)}
        width = max(len(k) for k in outputs.values) if outputs.values else 10
        print(f"stack {outputs.stack_name} ({outputs.source}"
              f"{', ' + outputs.status if outputs.status else ''})")
        for key in sorted(outputs.values):
            note = "" if key in known else "  (not a TrnUltraCluster key)"
            print(f"{key:<{width}}  {outputs.values[key]}{note}")
    if missing:
        names = ", ".join(f"{k.value} ({DESCRIPTIONS[k]})" for k in missing)
        raise CliError(f"stack {outputs.stack_name} lacks outputs: {names}",
                       "it was deployed by an older version: deploy this version", ExitCode.STACK)
    return ExitCode.OK


def cmd_data(args: argparse.Namespace) -> int:
    """Upload a dataset and say where jobs see it."""
    from trn_ultracluster.cli.data import stage_dataset

    outputs = _load(args)
    prefix = args.prefix or f"{DEFAULT_DATA_PREFIX}/{args.source.name}"
    staged = stage_dataset(_session(args, outputs), outputs, args.source, prefix,
                           progress=not args.no_progress)
    print(f"uploaded {staged.files} files ({staged.bytes} bytes) to s3://{staged.bucket}/{staged.prefix}/")
    if staged.cluster_path:
        print(f"on the cluster: {staged.cluster_path}  (use --data-dir {staged.cluster_path})")
    else:
        print("the bucket is not linked to FSx (fsx.data_repository: null): copy it in the job")
    return ExitCode.OK


def _render(args: argparse.Namespace, outputs: Any, launch: Any, name: str, nodes: int,
            env: dict[str, str]) -> tuple[str, Any]:
    """Build the job for the stack's orchestrator: ``("eks", manifest)`` or
    ``("hyperpod-slurm", script)``. ``--env`` and ``--time`` are honoured by both.

    Raises:
        CliError: (USAGE) a bad ``--time`` or ``--image``, or what the job builders reject.
    """
    from trn_ultracluster.cli.job_args import time_limit_seconds

    spec = _spec(outputs)
    orchestrator = _orchestrator(outputs)
    image = args.image or outputs.get(OutputKey.TRAINING_IMAGE_URI)
    deadline = time_limit_seconds(args.time_limit) if args.time_limit is not None else None
    try:
        if orchestrator == "eks":
            from trn_ultracluster.cli.eks import train_job

            return orchestrator, train_job(
                name=name, namespace=outputs.get(OutputKey.EKS_TRAINING_NAMESPACE),
                runtime=outputs.get(OutputKey.EKS_TRAINING_RUNTIME), image=image, launch=launch,
                num_nodes=nodes, spec=spec, env=env, active_deadline_s=deadline)
        from trn_ultracluster.cli.slurm import sbatch_script

        return orchestrator, sbatch_script(job_name=name, nodes=nodes, spec=spec, launch=launch,
                                           time_limit=args.time_limit, env=env, image=image)
    except ValueError as err:
        raise CliError(str(err), "fix the arguments (trn-ultracluster submit --help)") from None


def _print_job(orchestrator: str, job: Any) -> None:
    if orchestrator == "eks":
        import yaml

        print(yaml.safe_dump(job, sort_keys=False), end="")
    else:
        print(job, end="")


def _send(client: Any, orchestrator: str, name: str, job: Any) -> str:
    """Submit the job with ``client`` (:func:`_job_client`); returns its handle (TrainJob
    name or Slurm job id)."""
    if orchestrator == "eks":
        client.create(job)
        return name
    return str(client.submit(name, job))


def _default_output_dir(outputs: Any, name: str) -> str:
    """``<S3-linked part of FSx>/runs/<name>``: checkpoints are exported to the data bucket
    (and kept after ``cdk destroy`` with ``data_removal_policy: retain``); ``/fsx/runs``
    when the file system is not linked."""
    link = outputs.values.get(OutputKey.FSX_DATA_REPOSITORY_PATH.value, "none")
    return fsx_path("/" if link == "none" else link, RUNS_DIR, name)


def _precompile_steps(args: argparse.Namespace) -> int | None:
    """Steps of the precompile pass: ``--precompile-steps`` (which implies ``--precompile``;
    0 or less is rejected by :func:`trn_train_launch`), :data:`PRECOMPILE_STEPS` with
    ``--precompile`` alone, ``None`` (no pass) without either."""
    if args.precompile_steps is not None:
        return args.precompile_steps
    return PRECOMPILE_STEPS if args.precompile else None


def cmd_submit(args: argparse.Namespace) -> int:
    """Check the arguments against the recipes, the shared file system and the stack, then
    submit (or print) a training job. Nothing is sent when a check fails."""
    from trn_ultracluster.cli.job_args import (
        check_env,
        check_nodes,
        check_shared_dir,
        check_train_recipe,
    )
    from trn_ultracluster.cli.launch import default_job_name, trn_train_launch

    check_train_recipe(args.recipe)
    data_dir = check_shared_dir("--data-dir", args.data_dir)
    output_dir = check_shared_dir("--output-dir", args.output_dir) if args.output_dir else None
    env = check_env(args.env)
    outputs = _load(args)
    name = args.name or default_job_name(args.recipe)
    nodes = args.nodes if args.nodes is not None else max(outputs.int_value(OutputKey.NODE_COUNT_DESIRED), 1)
    check_nodes(nodes, outputs.int_value(OutputKey.NODE_COUNT_MAX))
    extra = tuple(a for a in args.train_args if a != "--")
    precompile = _precompile_steps(args)
    try:
        launch = trn_train_launch(recipe=args.recipe, data_dir=data_dir,
                                  output_dir=output_dir or _default_output_dir(outputs, name),
                                  steps=args.steps, instance_type=outputs.get(OutputKey.INSTANCE_TYPE),
                                  extra_args=extra, precompile_steps=precompile)
    except ValueError as err:
        raise CliError(str(err), "fix the arguments (trn-ultracluster submit --help)") from None
    orchestrator, job = _render(args, outputs, launch, name, nodes, env)
    if args.dry_run:
        _print_job(orchestrator, job)
        return ExitCode.OK
    handle = _send(_job_client(args, outputs, orchestrator), orchestrator, name, job)
    print(f"submitted {handle} ({nodes} x {outputs.get(OutputKey.INSTANCE_TYPE)}); "
          f"watch: trn-ultracluster status {handle}; logs: trn-ultracluster logs {handle}")
    return ExitCode.OK


def cmd_status(args: argparse.Namespace) -> int:
    """One job, or every job (saying so when there is none)."""
    outputs = _load(args)
    if _orchestrator(outputs) == "eks":
        from trn_ultracluster.cli.eks import job_state

        client = _eks_client(args, outputs)
        jobs = [client.get(args.job)] if args.job else client.list()
        if not jobs:
            print(f"no TrainJobs in namespace {client.namespace}")
        for job in jobs:
            trainer = job.get("spec", {}).get("trainer", {})
            print(f"{job['metadata']['name']:<40} {job_state(job):<10} nodes={trainer.get('numNodes')}")
        return ExitCode.OK
    jobs = _slurm_jobs(args, outputs)
    rows = jobs.status(_slurm_job_id(args.job) if args.job else None)
    if args.job and not rows:
        raise CliError(f"Slurm job {args.job} not found", "`status` lists the jobs", ExitCode.CLUSTER)
    if not rows:
        print(f"no Slurm jobs of user {jobs.user} in the queue (`status <job id>` shows ended jobs)")
    for r in rows:
        print(f"{r['id']:<10} {r['name']:<40} {r['state']:<12} {r['elapsed']:>12} nodes={r['nodes']} {r['reason']}")
    return ExitCode.OK


def cmd_logs(args: argparse.Namespace) -> int:
    outputs = _load(args)
    if _orchestrator(outputs) == "eks":
        text = _eks_client(args, outputs).logs(args.job, args.tail)
    else:
        text = _slurm_jobs(args, outputs).logs(_slurm_job_id(args.job), args.tail)
    print(text, end="" if text.endswith("\n") else "\n")
    return ExitCode.OK


def cmd_cancel(args: argparse.Namespace) -> int:
    outputs = _load(args)
    if _orchestrator(outputs) == "eks":
        _eks_client(args, outputs).delete(args.job)
    else:
        _slurm_jobs(args, outputs).cancel(_slurm_job_id(args.job))
    print(f"cancelled {args.job}")
    return ExitCode.OK


_SLURM_DONE = ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY",
               "PREEMPTED", "BOOT_FAIL", "DEADLINE")
"""Terminal Slurm job states (squeue/sacct "JOB STATE CODES", https://slurm.schedmd.com/squeue.html)."""


def _wait(client: Any, orchestrator: str, handle: str, timeout: float) -> str:
    """Poll the job with ``client`` (:func:`_job_client`) until it ends; returns its state.

    Raises:
        CliError: (CLUSTER) still running after ``timeout`` seconds.
    """
    from trn_ultracluster.cli.eks import job_state

    deadline = time.monotonic() + timeout
    while True:
        if orchestrator == "eks":
            state = job_state(client.get(handle))
            if state in ("Complete", "Failed"):
                return state
        else:
            rows = client.status(int(handle))
            state = rows[0]["state"] if rows else "UNKNOWN"
            if state.split()[0] in _SLURM_DONE:
                return state
        if time.monotonic() > deadline:
            raise CliError(f"smoke test {handle} still {state} after {timeout:.0f} s",
                           f"check `status {handle}` (nodes scaling up?) and `logs {handle}`",
                           ExitCode.CLUSTER)
        print(f"{handle}: {state}", file=sys.stderr)
        time.sleep(POLL_S)


def cmd_smoke_test(args: argparse.Namespace) -> int:
    """Run (or judge) the 2-node all-reduce."""
    from trn_ultracluster.cli.launch import default_job_name
    from trn_ultracluster.cli.smoke import SMOKE_NODES, parse_results, smoke_launch, smoke_report

    outputs = _load(args)
    spec = _spec(outputs)
    if args.from_log:
        from trn_ultracluster.cli.files import read_text

        log = read_text(args.from_log, "log file", "pass a job log saved with "
                        "`trn-ultracluster logs <job> > FILE`", strict=False)
    else:
        if not spec.supports_efa:
            raise CliError(f"{spec.name} has no EFA: the 2-node smoke test needs an EFA type",
                           "use trn1.32xlarge, trn1n.32xlarge or trn2.48xlarge", ExitCode.USAGE)
        name = args.name or default_job_name("smoke-allreduce")
        orchestrator = _orchestrator(outputs)
        script_path = None
        if orchestrator == "hyperpod-slurm":
            script_path = f"{JOBS_DIR}/{name}-allreduce.py"
        launch = smoke_launch(**({"script_path": script_path} if script_path else {}))
        orchestrator, job = _render(args, outputs, launch, name, SMOKE_NODES, {})
        if args.dry_run:
            _print_job(orchestrator, job)
            return ExitCode.OK
        client = _job_client(args, outputs, orchestrator)
        handle = _send(client, orchestrator, name, job)
        print(f"submitted smoke test {handle}")
        if args.no_wait:
            return ExitCode.OK
        state = _wait(client, orchestrator, handle, args.timeout)
        print(f"{handle}: {state}")
        log = client.logs(handle if orchestrator == "eks" else int(handle))
    try:
        results = parse_results(log)
    except ValueError as err:
        raise CliError(f"cannot read the smoke test log: {err}", "read it with `logs`",
                       ExitCode.CHECK_FAILED) from None
    report = smoke_report(results, spec, min_ratio=args.min_ratio)
    print(report.table())
    return ExitCode.OK if report.ok else ExitCode.CHECK_FAILED


def cmd_scale(args: argparse.Namespace) -> int:
    """Scale the EKS Trainium node group."""
    from trn_ultracluster.cli.scale import scale_eks_nodes

    outputs = _load(args)
    if _orchestrator(outputs) != "eks":
        raise CliError("scale changes EKS node groups; HyperPod instance groups are sized by "
                       "the stack", "set nodes.desired (or the worker group's instance_count) "
                       "and deploy")
    result = scale_eks_nodes(_session(args, outputs), outputs, args.nodes)
    print(f"{result.nodegroup}: {result.before} -> {result.after} nodes "
          "(new nodes join in a few minutes; watch with kubectl get nodes)")
    return ExitCode.OK


COMMANDS = {
    "preflight": cmd_preflight, "outputs": cmd_outputs, "data": cmd_data, "submit": cmd_submit,
    "status": cmd_status, "logs": cmd_logs, "cancel": cmd_cancel, "scale": cmd_scale,
    "smoke-test": cmd_smoke_test,
}


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
