"""Slurm jobs on HyperPod: the sbatch script of a job, and the Slurm commands that submit,
list, read and cancel jobs on the controller (through a transport of
:mod:`~trn_ultracluster.cli.backends.ssm`).

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
- runs the node script (:mod:`~trn_ultracluster.cli.node_script`) in one ``srun`` step,
  one task per node, which starts ``torchrun`` with one process per logical NeuronCore
  (catalog) and the first node of the allocation as rank 0's node
  (:func:`~trn_ultracluster.cli.launch.torchrun_command`; ``SLURM_NODEID`` is the node's
  rank in the job, sbatch man page, "OUTPUT ENVIRONMENT VARIABLES"); ``--kill-on-bad-exit``
  ends the step on every node when one node's part fails (srun man page);
- runs in the partition of the job's pool (``--partition``, ``submit --pool``), else in the
  cluster's default partition (``TRN_DEFAULT_PARTITION``, added by the submit wrapper);
- sources :data:`~trn_ultracluster.contracts.shared_storage.ENV_FILE`
  (``/fsx/.trn-ultracluster/env``), which the HyperPod lifecycle scripts write from the
  stack (``trn_ultracluster/orchestrators/hyperpod_slurm/scripts``; the variables'
  names are :class:`~trn_ultracluster.contracts.hyperpod.JobEnv`), then the node's own
  :data:`~trn_ultracluster.contracts.hyperpod.NODE_ENV_FILE` where it exists (a node of a
  pool other than the main one: its type's NeuronCores, EFA and Neuron stack); it reads
  ``TRN_CONTAINER_IMAGE``, ``TRN_FSX_MOUNT_POINT`` and, in the submit wrapper,
  ``TRN_DEFAULT_PARTITION``. The same
  file exports the Neuron/EFA environment of
  :func:`trn_ultracluster.contracts.neuron_env.neuron_environment` (the stack's compile cache:
  ``NEURON_CC_FLAGS`` on xla, ``TORCH_NEURONX_NEFF_CACHE_DIR`` on native; and
  ``FI_PROVIDER`` / ``FI_EFA_USE_DEVICE_RDMA`` on EFA types), which srun passes into the
  container; the script does not set them again (one definition for both orchestrators)
  and stops when ``TRN_NEURON_CACHE_DIR`` is missing (an env file from an older stack). The
  script cannot run without the env file anyway: the image and the mount come from it.
"""

from __future__ import annotations

import base64
import re
import shlex
from dataclasses import dataclass

from trn_ultracluster.cli.backends.ssm import SLURM_USER, Transport
from trn_ultracluster.cli.errors import CliError, ExitCode
from trn_ultracluster.cli.job_args import JobRequest
from trn_ultracluster.cli.launch import RENDEZVOUS_PORT, env_file_lines, torchrun_command
from trn_ultracluster.cli.node_script import NodeContext, node_script
from trn_ultracluster.contracts.catalog import InstanceSpec
from trn_ultracluster.contracts.hyperpod import NODE_ENV_FILE, JobEnv
from trn_ultracluster.contracts.shared_storage import ENV_FILE, JOBS_DIR

__all__ = ["ENDED_STATES", "RENDEZVOUS_PORT", "SlurmJobs", "pyxis_image", "processes_per_node",
           "sbatch_script"]

ENDED_STATES = ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY",
                "PREEMPTED", "BOOT_FAIL", "DEADLINE")
"""Slurm job states of a job that has ended (squeue/sacct "JOB STATE CODES",
https://slurm.schedmd.com/squeue.html)."""
RANK_ZERO_CHECK = (
    'if [[ "${SLURM_NODEID}" == 0 && -n "${SLURMD_NODENAME:-}" && '
    '"${SLURMD_NODENAME}" != "${MASTER_ADDR}" ]]; then echo "trn: node 0 of this step is '
    '${SLURMD_NODENAME}, not ${MASTER_ADDR}, where the batch script put the rendezvous: the '
    'allocation changed (a replaced node?); resubmit the job" >&2; exit 1; fi')
"""The node script's first line on Slurm: torchrun's static rendezvous starts its store on
node rank 0 (``SLURM_NODEID`` 0) and every node looks for it at ``MASTER_ADDR``, the first
host of the allocation when the batch script started (``SLURMD_NODENAME``: the node's name,
sbatch/srun man pages, "OUTPUT ENVIRONMENT VARIABLES"); if a step restarts on a changed
allocation the two could differ and every node would wait for a store that never starts,
so node 0 stops at once instead."""
NODE_SCRIPT_EOF = "TRN_NODE_SCRIPT_EOF"
"""The here-document delimiter of the node script in the sbatch script: the node script
holds no line of the user's (:func:`~trn_ultracluster.cli.launch.bash_word`), so no line can
end it early."""
STATUS_FIELDS = ("id", "name", "state", "elapsed", "nodes", "reason", "partition")
"""The keys of a row of :meth:`SlurmJobs.status` (and ``code``)."""
SQUEUE_FORMAT = "%i|%j|%T|%M|%D|%R|%P|%k"
"""squeue's columns: :data:`STATUS_FIELDS`, then the comment (``%P``: partition, ``%k``:
comment; squeue man page, ``-o``)."""
SACCT_FIELDS = "JobID,JobName,State,Elapsed,NNodes,Reason,Partition"
"""sacct's columns: :data:`STATUS_FIELDS` (sacct man page, ``--format``)."""


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


def processes_per_node(job: JobRequest, spec: InstanceSpec) -> int:
    """torchrun's processes per node: ``--nproc-per-node``, else one per logical NeuronCore
    of ``spec``, else (a CPU type: no NeuronCores) 1."""
    return job.launch.nproc_per_node or spec.logical_neuron_cores or 1


def sbatch_script(job: JobRequest, spec: InstanceSpec, partition: str | None = None) -> str:
    """The sbatch script of a checked job (bash; passes ``bash -n`` and shellcheck).

    Args:
        job: the job. Its name is the Slurm job name (and the log file prefix); its time
            limit, if any, is ``--time`` (else the partition's default); its environment
            (``submit --env``) is exported after the stack's env file so it can override it,
            values quoted for bash (``shlex.quote``), and srun passes it into the container
            with the rest of the job's environment; its image is exported as
            ``TRN_CONTAINER_IMAGE`` in Pyxis form after the env file: the env file is
            written when a node is created, so after a deploy that rebuilt the image it still
            names the old one until nodes are replaced.
        spec: catalog entry of the instance type of the job's nodes (processes per node:
            :func:`processes_per_node`).
        partition: the Slurm partition (``--partition``), or ``None`` for the one the
            submit wrapper gives (the cluster's default).

    On a stack with teams, the job runs in its team's Slurm account (``--account``, the
    team's ``account``) at its priority class's QOS (``--qos``): Slurm then holds it to the
    team's limits on the partition and orders it by the class (sbatch(1), ``--account``,
    ``--qos``; the associations and QOS come from the lifecycle's ``slurm_teams.py``).

    Raises:
        ValueError: the image names no registry (:func:`pyxis_image`).
    """
    directives = [
        f"--job-name={job.name}",
        f"--nodes={job.nodes}",
        "--ntasks-per-node=1",
        "--exclusive",
        f"--output={JOBS_DIR}/%x-%j.out",
        "--open-mode=append",
        "--requeue",
    ]
    if partition:
        directives.append(f"--partition={partition}")
    if job.team is not None:
        directives.append(f"--account={job.team.account or job.team.name}")
    if job.priority is not None:
        directives.append(f"--qos={job.priority.scheduled_as}")
    if job.time_limit:
        directives.append(f"--time={job.time_limit}")
    if job.launch.code is not None:
        directives.append(f"--comment=code:{job.launch.code.sha256[:12]}")
    nproc = processes_per_node(job, spec)
    torchrun = torchrun_command('"${SLURM_JOB_NUM_NODES}"', nproc, '"${SLURM_NODEID}"',
                                '"${MASTER_ADDR}"', '"${MASTER_PORT}"')
    node = NodeContext(rank='"${SLURM_NODEID}"', nnodes='"${SLURM_JOB_NUM_NODES}"',
                       master_addr='"${MASTER_ADDR}"', master_port='"${MASTER_PORT}"',
                       run_id='"${SLURM_JOB_ID}-${SLURM_RESTART_COUNT:-0}"', torchrun=torchrun,
                       check=RANK_ZERO_CHECK)
    image, mount = JobEnv.CONTAINER_IMAGE.value, JobEnv.FSX_MOUNT_POINT.value
    srun = (f"srun --auto-resume=1 --kill-on-bad-exit=1 --container-image=\"${{{image}}}\" "
            f"--container-mounts=\"${{{mount}}}:${{{mount}}}\" --no-container-mount-home")
    header = "\n".join(f"#SBATCH {d}" for d in directives)
    exports = f"export {image}={shlex.quote(pyxis_image(job.image))}\n"
    launcher = (f"{nproc} processes per node" if job.launch.launcher == "torchrun"
                else "one program per node")
    return f"""#!/bin/bash
{header}
# Generated by trn-ultracluster submit: {spec.name}, {launcher}.
set -euo pipefail
{env_file_lines()}{node_env_lines()}{exports}MASTER_ADDR="$(scontrol show hostnames "${{SLURM_JOB_NODELIST}}" | head -n 1)"
MASTER_PORT={RENDEZVOUS_PORT}
export MASTER_ADDR MASTER_PORT
echo "job ${{SLURM_JOB_ID}} (restart ${{SLURM_RESTART_COUNT:-0}}): ${{SLURM_JOB_NUM_NODES}} nodes, rendezvous ${{MASTER_ADDR}}:${{MASTER_PORT}}"
# What every node runs in the container (one task per node), the same on every orchestrator.
TRN_NODE_SCRIPT="$(cat <<'{NODE_SCRIPT_EOF}'
set -euo pipefail
{node_script(job, node)}{NODE_SCRIPT_EOF}
)"
{srun} bash -c "${{TRN_NODE_SCRIPT}}"
"""


def node_env_lines() -> str:
    """Bash lines that source the node's own job environment
    (:data:`~trn_ultracluster.contracts.hyperpod.NODE_ENV_FILE`) where the lifecycle script
    wrote one, after the shared file: a node of a pool other than the main one gets its
    pool's values."""
    return (f"# shellcheck source=/dev/null\n"
            f"if [[ -r {NODE_ENV_FILE} ]]; then source {NODE_ENV_FILE}; fi\n")


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

    def submit(self, job_name: str, script: str, partition: str | None = None) -> int:
        """Write the script under :data:`JOBS_DIR` and ``sbatch`` it in ``partition`` (the
        cluster's default partition without one); returns the job id."""
        encoded = base64.b64encode(script.encode()).decode()
        path = f"{JOBS_DIR}/{job_name}.sbatch"
        where = shlex.quote(partition) if partition else f'"${{{JobEnv.DEFAULT_PARTITION.value}}}"'
        remote = (
            "set -euo pipefail\n"
            f"source {ENV_FILE}\n"
            f"mkdir -p {JOBS_DIR}\n"
            f"echo {encoded} | base64 -d > {path}\n"
            f"sbatch --parsable --partition={where} {path}\n"
        )
        out = self.transport.run(remote).strip().splitlines()
        match = re.match(r"^(\d+)", out[-1]) if out else None
        if not match:
            raise CliError(f"sbatch did not return a job id: {' '.join(out)[-300:]!r}",
                           "sbatch's answer is in this error (partition, limits, script); "
                           f"the script is {path} on the cluster", ExitCode.CLUSTER)
        return int(match.group(1))

    def status(self, job_id: int | None = None,
               partition: str | None = None) -> list[dict[str, str]]:
        """Jobs (or one job) as ``{"id", "name", "state", "elapsed", "nodes", "reason",
        "partition", "code"}``, ``code`` the first 12 hex digits of the job's snapshot (the
        sbatch ``--comment``, squeue's ``%k``; "" for other jobs and for sacct's records).

        Without ``job_id``: :attr:`user`'s pending and running jobs (``squeue -u``), those of
        ``partition`` only when given (``squeue -p``).

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
           without slurmdbd), one record per run of a requeued job, the newest last.

        A job none of them knows gives ``[]``.
        """
        fields = SACCT_FIELDS
        if job_id is None:
            only = f" -p {shlex.quote(partition)}" if partition else ""
            remote = (f"squeue -h -u {self.user}{only} -o '{SQUEUE_FORMAT}' 2>/dev/null "
                      "|| true\n")
        else:
            remote = (
                f"rows=\"$(squeue -h -t all -j {job_id} -o '{SQUEUE_FORMAT}' 2>/dev/null)\" "
                "|| rows=''\n"
                "if [ -z \"$rows\" ]; then\n"
                f"  rows=\"$(sacct -n -P -X -j {job_id} -o {fields} 2>/dev/null)\" \\\n"
                f"    || rows=\"$(sacct -c -n -P -X -j {job_id} -o {fields} 2>/dev/null)\" "
                "|| rows=''\n"
                "fi\n"
                "printf '%s\\n' \"$rows\"\n"
            )
        rows: dict[str, dict[str, str]] = {}
        width = len(STATUS_FIELDS)
        for line in self.transport.run(remote).splitlines():
            parts = line.strip().split("|")
            if len(parts) in (width, width + 1) and parts[0].split("_")[0].isdigit():
                row = dict(zip(STATUS_FIELDS, parts[:width]))
                comment = parts[width] if len(parts) > width else ""
                row["code"] = comment[len("code:"):] if comment.startswith("code:") else ""
                rows[parts[0]] = row
        return list(rows.values())  # one row per job; a later record of a job replaces an earlier

    def nodes(self, partition: str) -> list[tuple[int, str]]:
        """The nodes of ``partition`` by state, ``[(count, state), ...]`` (``sinfo -p``,
        ``%D`` node count and ``%T`` state, sinfo man page); ``[]`` when Slurm does not know
        the partition."""
        remote = f"sinfo -h -p {shlex.quote(partition)} -o '%D|%T' 2>/dev/null || true\n"
        out = []
        for line in self.transport.run(remote).splitlines():
            parts = line.strip().split("|")
            if len(parts) == 2 and parts[0].isdigit() and parts[1]:
                out.append((int(parts[0]), parts[1]))
        return out

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
