"""HyperPod Slurm jobs: an sbatch script, sent to the Slurm controller through SSM.

The script (:func:`sbatch_script`):

- takes whole nodes (``--exclusive``), one task per node; every task runs
  ``srun --container-image`` of the training image (Pyxis, on HyperPod's nodes; Pyxis
  names a registry image ``<registry>#<repository>:<tag>``, NVIDIA/pyxis README) with
  ``/fsx`` mounted;
- runs every step with HyperPod's auto-resume, ``srun --auto-resume=1``: after a hardware
  fault HyperPod replaces the faulty nodes and restarts the job from its last checkpoint
  (SageMaker developer guide, "Automatic node recovery and auto-resume",
  https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-resiliency-slurm-auto-resume.html).
  The option belongs to each srun, so the precompile step has it too: it only fills the
  compile cache and may run again, and a fault during a long precompile would otherwise
  fail the job; the training step resumes from the program's newest complete checkpoint;
- lets Slurm requeue the job (node failure, preemption, ``scontrol requeue``): ``--requeue``
  makes it eligible whatever the cluster's ``JobRequeue`` default, and the script then
  starts again from its first line (sbatch man page, ``--requeue``); ``--open-mode=append``
  keeps the earlier runs' output in the log, which Slurm truncates at the restart otherwise
  (``JobFileAppend=0`` by default; measured with Slurm 22.05 in ``tests/slurm``); the log's
  first line of each run names it (``SLURM_RESTART_COUNT``, sbatch man page, "OUTPUT
  ENVIRONMENT VARIABLES");
- starts ``torchrun`` with one process per logical NeuronCore (catalog) and a c10d
  rendezvous on the first node of the allocation (PyTorch "torchrun (Elastic Launch)",
  ``--rdzv-backend=c10d --rdzv-endpoint=host:port --rdzv-id``);
- sources :data:`~trn_ultracluster.contracts.shared_storage.ENV_FILE`
  (``/fsx/.trn-ultracluster/env``), which the HyperPod lifecycle scripts write from the
  stack (issue 4, ``assets/hyperpod``): it reads ``TRN_CONTAINER_IMAGE``,
  ``TRN_FSX_MOUNT_POINT`` and, in the submit wrapper, ``TRN_DEFAULT_PARTITION``. The same
  file exports the Neuron/EFA environment of
  :func:`trn_ultracluster.contracts.neuron_env.neuron_environment` (``NEURON_CC_FLAGS``, and
  ``FI_PROVIDER`` / ``FI_EFA_USE_DEVICE_RDMA`` on EFA types), which srun passes into the
  container; the script does not set them again (one definition for both orchestrators)
  and stops when ``NEURON_CC_FLAGS`` is missing (an env file from an older stack). The
  script cannot run without the env file anyway: the image and the mount come from it.

Reaching the controller: a HyperPod node's SSM target is
``sagemaker-cluster:<cluster-id>_<instance-group>-<instance-id>``, the cluster id being the
last part of the cluster ARN and the instance id from ``ListClusterNodes`` (SageMaker
developer guide, "Access your SageMaker HyperPod cluster nodes",
https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-run-jobs-slurm-access-nodes.html;
same format in aws-samples/awsome-distributed-training ``easy-ssh.sh``). AWS documents
``aws ssm start-session`` on that target; whether ``SendCommand`` accepts it is not
documented (a public HyperPod tooling note says it does not), so the default transport is a
non-interactive session (``AWS-StartNonInteractiveCommand`` through the AWS CLI and its
Session Manager plugin) and ``SendCommand`` is an option.
"""

from __future__ import annotations

import base64
import json
import re
import shlex
import shutil
import subprocess
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from trn_ultracluster.contracts.catalog import InstanceSpec
from trn_ultracluster.cli.aws import aws_errors, error_code
from trn_ultracluster.cli.errors import CliError, ExitCode
from trn_ultracluster.cli.job_args import ENV_NAME_RE
from trn_ultracluster.cli.launch import Launch, validate_job_name
from trn_ultracluster.contracts.shared_storage import ENV_FILE, JOBS_DIR

__all__ = [
    "SendCommandTransport",
    "SessionTransport",
    "SlurmJobs",
    "controller_target",
    "sbatch_script",
]

SLURM_USER = "ubuntu"
"""The HyperPod Slurm clusters' default user; jobs run as this user, not as the SSM
session's user. Source: aws-samples/awsome-distributed-training
``1.architectures/5.sagemaker-hyperpod/easy-ssh.sh``
(https://github.com/aws-samples/awsome-distributed-training/blob/main/1.architectures/5.sagemaker-hyperpod/easy-ssh.sh),
which logs in to the controller as ``User ubuntu``, opens sessions with the
``SSM-SessionManagerRunShellAsUbuntu`` document and keeps keys in ``/fsx/ubuntu/.ssh``."""
RENDEZVOUS_PORT = 29500
"""torchrun's default master port (PyTorch ``torch/distributed/run.py``)."""


def pyxis_image(uri: str) -> str:
    """The Pyxis name of a registry image: ``<registry>/<repository>:<tag>`` becomes
    ``<registry>#<repository>:<tag>`` (NVIDIA/pyxis README, ``--container-image``: "a
    registry ... separated by #").

    Raises:
        ValueError: ``uri`` names no registry (no ``/``).
    """
    registry, sep, rest = uri.partition("/")
    if not sep or not rest or "." not in registry:
        raise ValueError(f"image {uri!r} must be <registry>/<repository>:<tag>, e.g. the "
                         "stack's TrainingImageUri")
    return f"{registry}#{rest}"


def sbatch_script(*, job_name: str, nodes: int, spec: InstanceSpec, launch: Launch,
                  time_limit: str | None = None, env: Mapping[str, str] | None = None,
                  image: str | None = None) -> str:
    """The sbatch script of a training job (bash; passes ``bash -n`` and shellcheck).

    Args:
        job_name: Slurm job name (also the log file prefix).
        nodes: nodes to allocate, at least 1.
        spec: catalog entry of the stack's instance type (processes per node, EFA).
        launch: the program.
        time_limit: ``--time`` value (e.g. ``"2-00:00:00"``), or ``None`` for the
            partition's default.
        env: extra environment (``submit --env``), exported after the stack's env file so
            it can override it; srun passes it into the container with the rest of the
            job's environment. Names must be shell identifiers; values are quoted for bash
            (``shlex.quote``).
        image: the training image URI (``<registry>/<repository>:<tag>``), exported as
            ``TRN_CONTAINER_IMAGE`` in Pyxis form after the env file: the env file is written
            when a node is created, so after a deploy that rebuilt the image it still names
            the old one until nodes are replaced; the job CLI passes the stack's current
            ``TrainingImageUri``. ``None`` keeps the env file's.

    Raises:
        ValueError: bad name, node count or environment name; more than one node without
            EFA.
    """
    validate_job_name(job_name)
    if nodes < 1:
        raise ValueError(f"--nodes must be at least 1, got: {nodes}")
    if nodes > 1 and not spec.supports_efa:
        raise ValueError(f"{spec.name} has no EFA: multi-node jobs need an EFA instance type")
    directives = [
        f"--job-name={job_name}",
        f"--nodes={nodes}",
        "--ntasks-per-node=1",
        "--exclusive",
        f"--output={JOBS_DIR}/%x-%j.out",
        "--open-mode=append",
        "--requeue",
    ]
    if time_limit:
        directives.append(f"--time={time_limit}")
    torchrun = (
        f"torchrun --nnodes=\"${{SLURM_JOB_NUM_NODES}}\" --nproc-per-node={spec.logical_neuron_cores} "
        "--rdzv-backend=c10d --rdzv-endpoint=\"${MASTER_ADDR}:${MASTER_PORT}\" "
        "--rdzv-id=\"${SLURM_JOB_ID}\""
    )
    srun = ("srun --auto-resume=1 --container-image=\"${TRN_CONTAINER_IMAGE}\" "
            "--container-mounts=\"${TRN_FSX_MOUNT_POINT}:${TRN_FSX_MOUNT_POINT}\" "
            "--no-container-mount-home")
    body = launch.shell_lines(torchrun, runner=srun)
    header = "\n".join(f"#SBATCH {d}" for d in directives)
    exports = ""
    if image is not None:
        exports += f"export TRN_CONTAINER_IMAGE={shlex.quote(pyxis_image(image))}\n"
    for key, value in sorted((env or {}).items()):
        if not ENV_NAME_RE.match(key):
            raise ValueError(f"environment name {key!r} is not a shell identifier")
        if "$" in value or "`" in value:  # literal on purpose: not for the shell to expand
            exports += "# shellcheck disable=SC2016\n"
        exports += f"export {key}={shlex.quote(value)}\n"
    return f"""#!/bin/bash
{header}
# Generated by trn-ultracluster submit: {spec.name}, {spec.logical_neuron_cores} processes per node.
set -euo pipefail
# shellcheck source=/dev/null
source {ENV_FILE}
: "${{NEURON_CC_FLAGS:?is not set by {ENV_FILE}: redeploy the stack}}"
{exports}MASTER_ADDR="$(scontrol show hostnames "${{SLURM_JOB_NODELIST}}" | head -n 1)"
MASTER_PORT={RENDEZVOUS_PORT}
export MASTER_ADDR MASTER_PORT
echo "job ${{SLURM_JOB_ID}} (restart ${{SLURM_RESTART_COUNT:-0}}): ${{SLURM_JOB_NUM_NODES}} nodes, rendezvous ${{MASTER_ADDR}}:${{MASTER_PORT}}"
""" + "\n".join(body) + "\n"


# --- reaching the controller ---------------------------------------------------------------


def controller_target(session: Any, cluster_name: str, cluster_arn: str, controller_group: str) -> str:
    """SSM target of the Slurm controller: ``sagemaker-cluster:<id>_<group>-<instance-id>``.

    Raises:
        CliError: (CLUSTER) the controller group has no node.
    """
    from botocore.exceptions import ClientError

    cluster_id = cluster_arn.rsplit("/", 1)[-1]
    with aws_errors(f"ListClusterNodes {cluster_name}"):
        try:
            nodes = session.client("sagemaker").list_cluster_nodes(
                ClusterName=cluster_name, InstanceGroupNameContains=controller_group,
            )["ClusterNodeSummaries"]
        except ClientError as err:
            if error_code(err) not in ("ValidationException", "ResourceNotFound"):
                raise
            raise CliError(f"HyperPod cluster {cluster_name} not found ({err})",
                           "check the stack outputs' Region and that the cluster exists",
                           ExitCode.CLUSTER) from None
    nodes = [n for n in nodes if n.get("InstanceGroupName") == controller_group]
    if not nodes:
        raise CliError(f"HyperPod cluster {cluster_name} has no node in group {controller_group}",
                       "check the cluster in the SageMaker console (it may still be creating)",
                       ExitCode.CLUSTER)
    return f"sagemaker-cluster:{cluster_id}_{controller_group}-{nodes[0]['InstanceId']}"


class Transport(Protocol):
    """Runs a bash script on the controller and returns its standard output."""

    def run(self, script: str) -> str: ...


def _remote_command(script: str, user: str = SLURM_USER) -> str:
    """One shell line that runs ``script`` as ``user`` (base64: no quoting problems)."""
    encoded = base64.b64encode(script.encode()).decode()
    return f"echo {encoded} | base64 -d | sudo -u {user} -i bash"


@dataclass
class SendCommandTransport:
    """SSM ``SendCommand`` (``AWS-RunShellScript``) and ``GetCommandInvocation`` polling."""

    session: Any
    target: str
    poll_s: float = 2.0
    timeout_s: float = 300.0
    sleep: Callable[[float], None] = time.sleep

    def run(self, script: str) -> str:
        with aws_errors(f"SendCommand to {self.target}"):
            ssm = self.session.client("ssm")
            command = ssm.send_command(
                InstanceIds=[self.target], DocumentName="AWS-RunShellScript",
                Parameters={"commands": [_remote_command(script)]},
                Comment="trn-ultracluster job CLI",
            )["Command"]
            waited = 0.0
            while True:
                try:
                    result = ssm.get_command_invocation(CommandId=command["CommandId"],
                                                        InstanceId=self.target)
                except ssm.exceptions.InvocationDoesNotExist:
                    result = {"Status": "Pending"}
                if result["Status"] not in ("Pending", "InProgress", "Delayed"):
                    break
                if waited >= self.timeout_s:
                    raise CliError(f"SSM command on {self.target} still {result['Status']} after "
                                   f"{self.timeout_s:.0f} s", "check the controller's SSM agent",
                                   ExitCode.CLUSTER)
                self.sleep(self.poll_s)
                waited += self.poll_s
        if result["Status"] != "Success":
            raise CliError(f"command on the controller {result['Status']}: "
                           f"{result.get('StandardErrorContent', '').strip()[-500:]}",
                           "the controller's stderr is in this error; if SendCommand is not "
                           "accepted for HyperPod targets, use `--ssm-transport session`",
                           ExitCode.CLUSTER)
        return str(result.get("StandardOutputContent", ""))


@dataclass
class SessionTransport:
    """``aws ssm start-session --document-name AWS-StartNonInteractiveCommand`` (AWS CLI v2
    and the Session Manager plugin on PATH; Systems Manager user guide, "Start a session",
    https://docs.aws.amazon.com/systems-manager/latest/userguide/session-manager-working-with-sessions-start.html)."""

    region: str
    target: str
    runner: Callable[..., Any] = subprocess.run

    def argv(self, script: str) -> list[str]:
        """The AWS CLI command line for ``script``."""
        return ["aws", "ssm", "start-session", "--region", self.region, "--target", self.target,
                "--document-name", "AWS-StartNonInteractiveCommand",
                "--parameters", json.dumps({"command": [_remote_command(script)]})]

    def run(self, script: str) -> str:
        if self.runner is subprocess.run and (shutil.which("aws") is None
                                              or shutil.which("session-manager-plugin") is None):
            raise CliError("the session transport needs the AWS CLI v2 and the Session Manager "
                           "plugin on PATH",
                           "install them (https://docs.aws.amazon.com/systems-manager/latest/"
                           "userguide/session-manager-working-with-install-plugin.html) or use "
                           "--ssm-transport send-command", ExitCode.USAGE)
        done = self.runner(self.argv(script), capture_output=True, text=True, check=False)
        lines = [ln for ln in done.stdout.replace("\r", "").splitlines()
                 if not ln.startswith(("Starting session with SessionId",
                                       "Exiting session with sessionId"))]
        if done.returncode != 0:
            raise CliError(f"aws ssm start-session failed ({done.returncode}): "
                           f"{done.stderr.strip()[-500:]}", "check ssm:StartSession permissions "
                           "and the controller's state", ExitCode.CLUSTER)
        return "\n".join(lines).strip() + "\n"


# --- job operations --------------------------------------------------------------------------


@dataclass
class SlurmJobs:
    """Submit, inspect, read and cancel Slurm jobs on the controller.

    Attributes:
        transport: runs the scripts on the controller.
        user: whose jobs :meth:`status` lists when no job id is given (the user the
            transports run the scripts as; tests with a local Slurm pass their own).
    """

    transport: Transport
    user: str = SLURM_USER

    def submit(self, job_name: str, script: str) -> int:
        """Write the script under :data:`JOBS_DIR` and ``sbatch`` it; returns the job id."""
        encoded = base64.b64encode(script.encode()).decode()
        path = f"{JOBS_DIR}/{job_name}.sbatch"
        remote = (
            "set -euo pipefail\n"
            f"source {ENV_FILE}\n"
            f"mkdir -p {JOBS_DIR}\n"
            f"echo {encoded} | base64 -d > {path}\n"
            f"sbatch --parsable --partition=\"${{TRN_DEFAULT_PARTITION}}\" {path}\n"
        )
        out = self.transport.run(remote).strip().splitlines()
        match = re.match(r"^(\d+)", out[-1]) if out else None
        if not match:
            raise CliError(f"sbatch did not return a job id: {' '.join(out)[-300:]!r}",
                           "sbatch's answer is in this error (partition, limits, script); "
                           f"the script is {path} on the cluster", ExitCode.CLUSTER)
        return int(match.group(1))

    def status(self, job_id: int | None = None) -> list[dict[str, str]]:
        """Jobs (or one job) as ``{"id", "name", "state", "elapsed", "nodes", "reason"}``.

        Without ``job_id``: :attr:`user`'s pending and running jobs (``squeue -u``).

        With ``job_id``, the first source that knows the job:

        1. ``squeue -t all``: queued and running jobs, and ended ones for as long as
           slurmctld keeps them (``MinJobAge``, 300 s by default; squeue and slurm.conf man
           pages). Plain ``squeue -j`` shows only pending, running and completing jobs, so
           an ended job would look unknown at once (measured, Slurm 22.05).
        2. ``sacct -X``: Slurm accounting (slurmdbd), the newest record of a requeued job
           (sacct man page, ``--duplicates``). HyperPod's AMI-based configuration, which the
           stack uses, sets up Slurm accounting with MariaDB on the controller (SageMaker
           developer guide, "Getting started with SageMaker HyperPod using the AWS CLI",
           "Node lifecycle configuration options"); clusters configured by
           lifecycle scripts have it only if the scripts install it (AWS's base-config runs
           ``setup_mariadb_accounting.sh`` on the controller, aws-samples/
           awsome-distributed-training ``1.architectures/5.sagemaker-hyperpod/
           LifecycleScripts/base-config``). Without it sacct fails ("Slurm accounting
           storage is disabled").
        3. ``sacct -c``: the job completion log of ``JobCompType=jobcomp/filetxt`` (Slurm
           without slurmdbd, like the test cluster of ``tests/slurm``), one record per run of
           a requeued job, the newest last.

        A job none of them knows gives ``[]``.
        """
        fields = "JobID,JobName,State,Elapsed,NNodes,Reason"
        if job_id is None:
            remote = f"squeue -h -u {self.user} -o '%i|%j|%T|%M|%D|%R' 2>/dev/null || true\n"
        else:
            remote = (
                f"rows=\"$(squeue -h -t all -j {job_id} -o '%i|%j|%T|%M|%D|%R' 2>/dev/null)\" "
                "|| rows=''\n"
                "if [ -z \"$rows\" ]; then\n"
                f"  rows=\"$(sacct -n -P -X -j {job_id} -o {fields} 2>/dev/null)\" \\\n"
                f"    || rows=\"$(sacct -c -n -P -X -j {job_id} -o {fields} 2>/dev/null)\" "
                "|| rows=''\n"
                "fi\n"
                "printf '%s\\n' \"$rows\"\n"
            )
        rows: dict[str, dict[str, str]] = {}
        for line in self.transport.run(remote).splitlines():
            parts = line.strip().split("|")
            if len(parts) == 6 and parts[0].split("_")[0].isdigit():
                rows[parts[0]] = dict(zip(("id", "name", "state", "elapsed", "nodes", "reason"), parts))
        return list(rows.values())  # one row per job; a later record of a job replaces an earlier

    def logs(self, job_id: int, tail_lines: int | None = None) -> str:
        """The job's output file (``%x-%j.out`` under :data:`JOBS_DIR`)."""
        reader = f"tail -n {tail_lines}" if tail_lines else "cat"
        remote = (f"f=$(ls {JOBS_DIR}/*-{job_id}.out 2>/dev/null | head -n 1)\n"
                  f"if [ -z \"$f\" ]; then echo 'no log for job {job_id}' >&2; exit 3; fi\n"
                  f"{reader} \"$f\"\n")
        return self.transport.run(remote)

    def cancel(self, job_id: int) -> None:
        """``scancel`` the job."""
        self.transport.run(f"scancel {job_id}\n")


def transport_for(kind: str, session: Any, target: str) -> Transport:
    """``session`` (default) or ``send-command`` transport to ``target``."""
    if kind == "send-command":
        return SendCommandTransport(session, target)
    return SessionTransport(session.region_name, target)
