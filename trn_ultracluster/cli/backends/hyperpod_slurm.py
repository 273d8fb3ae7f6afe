"""The ``hyperpod-slurm`` job backend: sbatch jobs on a SageMaker HyperPod Slurm cluster.

A job is an sbatch script (:mod:`~trn_ultracluster.cli.backends.slurm`) submitted on the
Slurm controller, which the CLI reaches through SSM
(:mod:`~trn_ultracluster.cli.backends.ssm`, ``--ssm-transport``); a job's handle is its
Slurm job id. The nodes are the cluster's instance groups, sized by the stack.
"""

from __future__ import annotations

from trn_ultracluster.cli.backends.base import (
    BackendOption,
    BackendTexts,
    JobBackend,
    JobState,
    RenderedJob,
)
from trn_ultracluster.cli.backends.slurm import ENDED_STATES, SlurmJobs, sbatch_script
from trn_ultracluster.cli.backends.ssm import controller_target, transport_for
from trn_ultracluster.cli.errors import CliError, ExitCode
from trn_ultracluster.cli.job_args import JobRequest
from trn_ultracluster.contracts.outputs import OutputKey

__all__ = ["HyperPodSlurmBackend"]


def slurm_job_id(job: str) -> int:
    """A Slurm job id given on the command line.

    Raises:
        CliError: (USAGE) not a number.
    """
    if not job.isdigit():
        raise CliError(f"Slurm job id must be a number, got {job!r}", "`status` lists the jobs")
    return int(job)


class HyperPodSlurmBackend(JobBackend):
    """sbatch scripts run through SSM on the HyperPod Slurm controller, as user ``ubuntu``."""

    name = "hyperpod-slurm"
    options = (BackendOption(
        "--ssm-transport", "HyperPod: reach the controller with `aws ssm start-session` "
                           "(default) or SSM SendCommand",
        choices=("session", "send-command"), default="session"),)
    texts = BackendTexts(label="HyperPod", job="Slurm job id", dry_run="the sbatch script",
                         time_limit="sbatch --time", env="exported in the sbatch script")

    def connect(self) -> SlurmJobs:
        session = self.session
        target = controller_target(session, self.outputs.get(OutputKey.HYPERPOD_CLUSTER_NAME),
                                   self.outputs.get(OutputKey.HYPERPOD_CLUSTER_ARN),
                                   self.outputs.get(OutputKey.HYPERPOD_CONTROLLER_GROUP))
        return SlurmJobs(transport_for(self.option("ssm_transport"), session, target))

    def render(self, job: JobRequest) -> RenderedJob:
        script = sbatch_script(job, self.spec)
        return RenderedJob(job, script, script)

    def submit(self, job: RenderedJob) -> str:
        return str(self.client.submit(job.job.name, job.payload))

    def status(self, job: str | None) -> list[str]:
        job_id = slurm_job_id(job) if job else None
        client = self.client
        rows = client.status(job_id)
        if job and not rows:
            raise CliError(f"Slurm job {job} not found", "`status` lists the jobs",
                           ExitCode.CLUSTER)
        if not rows:
            return [f"no Slurm jobs of user {client.user} in the queue (`status <job id>` "
                    "shows ended jobs)"]
        return [f"{r['id']:<10} {r['name']:<40} {r['state']:<12} {r['elapsed']:>12} "
                f"nodes={r['nodes']} {r['reason']}"
                + (f" code={r['code']}" if r.get("code") else "") for r in rows]

    def state(self, job: str) -> JobState:
        rows = self.client.status(slurm_job_id(job))
        state = rows[0]["state"] if rows else "UNKNOWN"
        return JobState(state, (state.split() or [""])[0] in ENDED_STATES)

    def logs(self, job: str, tail_lines: int | None = None) -> str:
        job_id = slurm_job_id(job)
        return str(self.client.logs(job_id, tail_lines))

    def cancel(self, job: str) -> None:
        job_id = slurm_job_id(job)
        self.client.cancel(job_id)

    def scale(self, nodes: int) -> str:
        raise CliError("scale changes EKS node groups; HyperPod instance groups are sized by "
                       "the stack", "set nodes.desired (or the worker group's instance_count) "
                       "and deploy")
