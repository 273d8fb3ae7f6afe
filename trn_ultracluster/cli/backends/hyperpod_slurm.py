"""The ``hyperpod-slurm`` job backend: sbatch jobs on a SageMaker HyperPod Slurm cluster.

A job is an sbatch script (:mod:`~trn_ultracluster.cli.backends.slurm`) submitted on the
Slurm controller, which the CLI reaches through SSM
(:mod:`~trn_ultracluster.cli.backends.ssm`, ``--ssm-transport``); a job's handle is its
Slurm job id. The nodes are the cluster's instance groups, sized by the stack.

A job of a pool (``submit --pool``, :attr:`~trn_ultracluster.cli.job_args.JobRequest.pool`)
runs in the pool's partition (``PoolInfo.partition``; the pool's name, the partition the
stack gives a pool), on at most the pool's ``nodes.max`` nodes, with the pool's training
image and one torchrun process per NeuronCore of the pool's type (a CPU pool: one, unless
``--nproc-per-node``). A job without a pool runs as before pools existed: the stack's
instance type and image, the cluster's default partition.

On a stack with teams, a job runs in its team's Slurm account at its class's QOS
(:func:`~trn_ultracluster.cli.backends.slurm.sbatch_script`); ``status`` adds each team's use
of its quota and ``usage`` reads ``sacct`` (:mod:`~trn_ultracluster.cli.backends.slurm_teams`).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from trn_ultracluster.cli.backends.base import (
    BackendOption,
    BackendTexts,
    JobBackend,
    JobState,
    RenderedJob,
)
from trn_ultracluster.cli.backends.slurm import ENDED_STATES, SlurmJobs, sbatch_script
from trn_ultracluster.cli.backends.slurm_teams import (
    parse_sections,
    parse_usage,
    team_status_lines,
    team_status_script,
    usage_script,
)
from trn_ultracluster.cli.backends.slurm_teams_apply import (
    APPLY_TIMEOUT_S,
    apply_error,
    apply_script,
)
from trn_ultracluster.cli.backends.ssm import controller_target, run_command, transport_for
from trn_ultracluster.cli.errors import CliError, ExitCode
from trn_ultracluster.cli.job_args import JobRequest, check_nodes
from trn_ultracluster.contracts.outputs import OutputKey

if TYPE_CHECKING:
    from trn_ultracluster.cli.usage import Period, UsageRecord
    from trn_ultracluster.contracts.catalog import InstanceSpec
    from trn_ultracluster.contracts.pools import PoolInfo
    from trn_ultracluster.contracts.teams import TeamsInfo

__all__ = ["HyperPodSlurmBackend", "pool_partition"]


def slurm_job_id(job: str) -> int:
    """A Slurm job id given on the command line.

    Raises:
        CliError: (USAGE) not a number.
    """
    if not job.isdigit():
        raise CliError(f"Slurm job id must be a number, got {job!r}", "`status` lists the jobs")
    return int(job)


def pool_partition(pool: PoolInfo) -> str:
    """The Slurm partition of ``pool``: the stack's ``partition`` for it, else its name (the
    partition the stack gives every pool of a configuration with ``pools``)."""
    return pool.partition or pool.name


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
        return SlurmJobs(transport_for(self.option("ssm_transport"), self.session,
                                       self._controller()))

    def _controller(self) -> str:
        """The controller's SSM target (:func:`~trn_ultracluster.cli.backends.ssm.
        controller_target`)."""
        return controller_target(self.session, self.outputs.get(OutputKey.HYPERPOD_CLUSTER_NAME),
                                 self.outputs.get(OutputKey.HYPERPOD_CLUSTER_ARN),
                                 self.outputs.get(OutputKey.HYPERPOD_CONTROLLER_GROUP))

    def pool_spec(self, pool: PoolInfo | None) -> InstanceSpec:
        """Catalog entry of ``pool``'s instance type (:meth:`StackOutputs.pool_spec`).

        Raises:
            CliError: (STACK) a type this CLI's catalogs lack (a newer stack).
        """
        return self.outputs.pool_spec(pool)

    def render(self, job: JobRequest) -> RenderedJob:
        """The sbatch script; a job of a pool is checked against the pool
        (:func:`~trn_ultracluster.cli.job_args.check_nodes`) and runs in its partition, with its image unless
        ``--image`` named another (the stack's ``TrainingImageUri`` is the main pool's)."""
        pool = job.pool
        if pool is not None:
            check_nodes(job.nodes, pool)
            if pool.image_uri and job.image == self.outputs.values.get(
                    OutputKey.TRAINING_IMAGE_URI.value):
                job = replace(job, image=pool.image_uri)
        script = sbatch_script(job, self.pool_spec(pool),
                               pool_partition(pool) if pool is not None else None)
        return RenderedJob(job, script, script)

    def submit(self, job: RenderedJob) -> str:
        pool = job.job.pool
        return str(self.client.submit(job.job.name, job.payload,
                                      pool_partition(pool) if pool is not None else None))

    def status(self, job: str | None, pool: PoolInfo | None = None) -> list[str]:
        """One job or the user's jobs as lines with their partition; with ``pool``, first
        its partition's nodes by state, then only that partition's jobs.

        Raises:
            CliError: USAGE for a job id that is not a number or a job not in ``pool``'s
                partition; CLUSTER for a job Slurm does not know.
        """
        job_id = slurm_job_id(job) if job else None
        client = self.client
        partition = pool_partition(pool) if pool is not None else None
        rows = client.status(job_id, partition)
        if job and not rows:
            raise CliError(f"Slurm job {job} not found", "`status` lists the jobs",
                           ExitCode.CLUSTER)
        lines = []
        if pool is not None:
            if job and rows[0]["partition"] != partition:
                raise CliError(f"Slurm job {job} is in partition {rows[0]['partition']}, not in "
                               f"pool {pool.name}'s partition {partition}",
                               "leave --pool out, or name the job's pool")
            states = ", ".join(f"{n} {state}" for n, state in client.nodes(partition))
            lines.append(f"pool {pool.name} (partition {partition}, {pool.instance_type}): "
                         f"{states or 'no nodes'}")
        if not rows:
            where = f" in partition {partition}" if partition else ""
            return [*lines, f"no Slurm jobs of user {client.user}{where} in the queue "
                            "(`status <job id>` shows ended jobs)"]
        return [*lines, *(f"{r['id']:<10} {r['name']:<40} {r['state']:<12} {r['elapsed']:>12} "
                          f"nodes={r['nodes']} partition={r['partition']} {r['reason']}"
                          + (f" code={r['code']}" if r.get("code") else "") for r in rows)]

    def team_status(self, teams: TeamsInfo) -> list[str]:
        """Each team's nodes in use against its quota and Slurm's limit per pool, its jobs
        running and waiting, and why they wait (:mod:`~trn_ultracluster.cli.backends.
        slurm_teams`).

        Raises:
            CliError: (CLUSTER) the controller script failed (slurmdbd down, say).
        """
        text = self.client.transport.run(team_status_script(self.client.user))
        return team_status_lines(teams, self._partitions(), parse_sections(text))

    def usage(self, period: Period, teams: TeamsInfo) -> list[UsageRecord]:
        """Every job run in ``period`` from ``sacct`` (Slurm accounting, which HyperPod keeps
        in MariaDB on the controller): its team (account), pool (partition), nodes and
        seconds inside the period.

        Raises:
            CliError: (CLUSTER) sacct failed (no accounting: "Slurm accounting storage is
                disabled").
        """
        text = self.client.transport.run(usage_script(period))
        pools = {partition: pool for pool, partition in self._partitions().items()}
        return parse_usage(text, teams, pools, period)

    def apply_teams(self, teams: TeamsInfo, *, dry_run: bool = False) -> list[str]:
        """Apply the teams of the lifecycle bucket's ``slurm_teams.json`` (the last deploy's)
        on the running controller, as its lifecycle script does on a new one
        (:mod:`~trn_ultracluster.cli.backends.slurm_teams_apply`): through SSM Run Command as
        root, whatever ``--ssm-transport`` says (installing the settings and restarting
        slurmctld need root; the session transport runs as the job user). Returns the
        script's output (what changed), or with ``dry_run`` the script.

        Raises:
            CliError: USAGE: the stack has no teams; STACK: an output is missing; CLUSTER: a
                step failed on the controller (named in the message) or SSM could not run it.
        """
        if not teams:
            raise CliError(f"stack {self.outputs.stack_name} has no teams: nothing to apply",
                           "to remove the Slurm set-up an earlier deploy with teams left on "
                           "the controller, see docs/teams.md (hyperpod-slurm)")
        script = apply_script(self.outputs.get(OutputKey.HYPERPOD_LIFECYCLE_BUCKET),
                              self.outputs.get(OutputKey.REGION))
        if dry_run:
            return script.splitlines()
        target = self._controller()
        try:
            out = run_command(self.session, [target], script, user=None,
                              timeout_s=APPLY_TIMEOUT_S, what="the controller")[target]
        except CliError as err:
            raise apply_error(err) from None
        return out.splitlines()

    def _partitions(self) -> dict[str, str]:
        """Pool name -> its partition, for every pool of the stack."""
        return {p.name: pool_partition(p) for p in self.outputs.pools()}

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

    def scale(self, nodes: int, pool: PoolInfo | None = None) -> str:
        raise CliError("scale changes EKS node groups; HyperPod instance groups are sized by "
                       "the stack", "set nodes.desired (or the worker group's instance_count) "
                       "and deploy")
