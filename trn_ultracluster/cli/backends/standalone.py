"""The ``standalone`` job backend: torchrun on the nodes of a node pool's Auto Scaling groups,
started through SSM Run Command, without a scheduler.

Each pool has its own Auto Scaling groups (:mod:`.standalone_nodes` finds a pool's nodes); a
job runs on the nodes of its pool (``JobRequest.pool``, the main pool without one), the first
node hosting the rendezvous. A job's handle is its name; its files live on the shared file
system (:mod:`.node_jobs`), which every pool's nodes mount, so ``status`` and ``logs`` work
from any node and after the job ended; ``job.json`` records the job's pool. Commands run as
root (the SSM agent's user), with :func:`~trn_ultracluster.cli.backends.ssm.run_command`.
"""

from __future__ import annotations

import shutil
from datetime import datetime, timezone

from trn_ultracluster.cli.aws import aws_errors, error_code
from trn_ultracluster.cli.backends import node_jobs
from trn_ultracluster.cli.backends.base import BackendTexts, JobBackend, JobState, RenderedJob
from trn_ultracluster.cli.backends.ssm import run_command
from trn_ultracluster.cli.backends.standalone_nodes import (
    Node,
    StandaloneNodes,
    describe_groups,
    nodes_of_groups,
    pool_groups,
)
from trn_ultracluster.cli.errors import CliError, ExitCode
from trn_ultracluster.cli.job_args import JobRequest
from trn_ultracluster.cli.launch import validate_job_name
from trn_ultracluster.contracts.outputs import NONE, OutputKey
from trn_ultracluster.contracts.pools import PoolInfo
from trn_ultracluster.contracts.standalone import CPU_RUNTIME
from trn_ultracluster.network_plan import spread

__all__ = ["Node", "StandaloneBackend", "StandaloneNodes", "nodes_of_groups"]

COMMAND_TIMEOUT_S = 120
"""How long one Run Command may take (writing files, starting a unit, reading a chunk)."""
DOC_SESSION_PLUGIN = ("https://docs.aws.amazon.com/systems-manager/latest/userguide/"
                      "session-manager-working-with-install-plugin.html")


class StandaloneBackend(JobBackend):
    """torchrun on every node of a pool's groups, each part a systemd unit started with SSM."""

    name = "standalone"
    texts = BackendTexts(
        label="standalone", job="job name",
        dry_run="the job script every node runs",
        time_limit="the nodes' systemd units stop the job (RuntimeMaxSec)",
        env="exported in the job script")

    def connect(self) -> StandaloneNodes:
        session = self.session

        def run(instance_ids: list[str], script: str) -> dict[str, str]:
            return run_command(session, instance_ids, script, user=None, poll_s=1,
                               timeout_s=COMMAND_TIMEOUT_S, what="the node")

        return StandaloneNodes([], run, find=lambda groups: nodes_of_groups(session, groups))

    def _pool(self, pool: PoolInfo | None) -> PoolInfo:
        """``pool``, or the main pool (the first of the stack's pools)."""
        return pool if pool is not None else self.outputs.pools()[0]

    def _nodes(self, count: int | None = None, pool: PoolInfo | None = None) -> list[Node]:
        """The first ``count`` in-service nodes of ``pool`` (the main pool without one; all its
        nodes without ``count``).

        Raises:
            CliError: (CLUSTER) fewer nodes of the pool are in service, naming the pool.
        """
        chosen = self._pool(pool)
        groups = pool_groups(self.outputs, chosen)
        nodes = self.client.of(groups)
        want = count or 1
        if len(nodes) < want:
            flag = f" --pool {chosen.name}" if len(self.outputs.pools()) > 1 else ""
            raise CliError(
                f"{len(nodes)} node(s) of pool {chosen.name} ({chosen.instance_type}, Auto "
                f"Scaling group(s) {','.join(groups)}) in service, {want} needed",
                f"trn-ultracluster scale{flag} --nodes {want}, wait until the nodes have "
                "started (a few minutes; their setup pulls the image), then retry",
                ExitCode.CLUSTER)
        return nodes[:count] if count else nodes

    def _every_node(self) -> list[Node]:
        """The in-service nodes of every pool (the main pool's first), for what any node can
        answer or every node must do (``status``, ``logs``, ``cancel``).

        Raises:
            CliError: (CLUSTER) no pool has a node in service.
        """
        found: dict[str, Node] = {}
        for pool in self.outputs.pools():
            for node in self.client.of(pool_groups(self.outputs, pool)):
                found.setdefault(node.instance_id, node)
        if not found:
            self._nodes()  # raises: no node in service, and how to start the main pool's
        return list(found.values())

    def runtime(self, pool: PoolInfo | None = None) -> node_jobs.Runtime:
        """How ``pool``'s nodes run jobs: a CPU pool's in the training image
        (:data:`~trn_ultracluster.contracts.standalone.CPU_RUNTIME`); the Trainium pools' as
        the stack says (outputs ``StandaloneRuntime``, ``StandaloneDlamiVenv``).

        Raises:
            CliError: (STACK) a runtime this job CLI does not know, or ``dlami-venv``
                without a virtual environment: the stack's outputs, not the arguments.
        """
        if pool is not None and not pool.accelerated:
            return node_jobs.Runtime(CPU_RUNTIME)
        venv = self.outputs.get(OutputKey.STANDALONE_DLAMI_VENV)
        runtime = node_jobs.Runtime(self.outputs.get(OutputKey.STANDALONE_RUNTIME),
                                    None if venv == NONE else venv)
        if runtime.kind not in ("container", "dlami-venv") or (
                runtime.kind == "dlami-venv" and not runtime.venv):
            raise CliError(
                f"stack {self.outputs.stack_name} has standalone runtime {runtime.kind!r} "
                f"(virtual environment {runtime.venv!r}), which this job CLI does not know",
                "use the job CLI of the version that deployed the stack, or deploy the stack "
                "with this version", ExitCode.STACK)
        return runtime

    def render(self, job: JobRequest) -> RenderedJob:
        """The job script of ``job`` on its pool (its instance type, its runtime).

        Raises:
            CliError: (USAGE) more nodes than the pool's ``nodes.max``.
            ValueError: ``--image`` on a pool whose nodes run the DLAMI's venv; ``torchrun``
                without ``--nproc-per-node`` on a pool without NeuronCores.
        """
        pool = job.pool
        if pool is not None and job.nodes > pool.nodes_max:
            raise CliError(f"--nodes {job.nodes}: pool {pool.name} ({pool.instance_type}) has "
                           f"at most {pool.nodes_max} nodes (its nodes.max)",
                           f"ask for at most {pool.nodes_max}, or raise the pool's nodes.max "
                           "and deploy")
        runtime = self.runtime(pool)
        if runtime.kind == "dlami-venv" and getattr(self.args, "image", None):
            raise ValueError("--image has no effect on this stack: its nodes run jobs in the "
                             f"DLAMI's virtual environment {runtime.venv} (standalone.runtime "
                             "dlami-venv)")
        script = node_jobs.job_script(job, self.outputs.pool_spec(pool), runtime)
        return RenderedJob(job, script, script)

    def submit(self, job: RenderedJob) -> str:
        request, script = job.job, job.payload
        pool = self._pool(request.pool)
        nodes = self._nodes(request.nodes, request.pool)
        meta = {"name": request.name, "nodes": request.nodes, "pool": pool.name,
                "instance_type": self.outputs.pool_spec(request.pool).name,
                "runtime": self.runtime(request.pool).kind,
                "submitted": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
                "instances": [n.instance_id for n in nodes],
                "code_sha256": request.launch.code.sha256 if request.launch.code else None}
        self.client.on(nodes[:1], node_jobs.prepare_script(request.name, script, meta))
        started: list[Node] = []
        try:
            for rank, node in enumerate(nodes):
                self.client.on([node], node_jobs.start_script(
                    request.name, rank, nodes[0].address, request.time_limit_s))
                started.append(node)
        except CliError:
            if started:
                self.client.on(started, node_jobs.cancel_script(request.name))
            raise
        return request.name

    @staticmethod
    def _checked(job: str) -> str:
        """``job`` if it is a job name ``submit`` could have given, before it reaches a node's
        root shell.

        Raises:
            CliError: (USAGE) not a valid job name.
        """
        try:
            return validate_job_name(job)
        except ValueError as err:
            raise CliError(str(err), "`status` lists the jobs") from None

    def _states(self, job: str | None) -> dict[str, node_jobs.JobStatus]:
        """Every job (or ``job``) as every pool's nodes see it (each answers for its units)."""
        job = None if job is None else self._checked(job)
        return node_jobs.job_states(self.client.on(self._every_node(),
                                                   node_jobs.status_script(job)))

    def status(self, job: str | None, pool: PoolInfo | None = None) -> list[str]:
        """Lines of ``job`` or of every job; with ``pool``, a line on the pool's nodes first
        and only the jobs of that pool (a job submitted before pools is the main pool's)."""
        states = self._states(job)
        main = self.outputs.pools()[0].name
        lines = []
        if pool is not None:
            count = len(self.client.of(pool_groups(self.outputs, pool)))
            lines.append(f"pool {pool.name} ({pool.instance_type}): {count} node(s) in service, "
                         f"nodes.max {pool.nodes_max}")
            states = {n: s for n, s in states.items() if (s.pool or main) == pool.name}
        if job and job not in states:
            where = f" of pool {pool.name}" if pool is not None else ""
            raise CliError(f"no job named {job}{where} on the nodes' shared file system",
                           "`status` lists the jobs", ExitCode.CLUSTER)
        if not states:
            where = f"pool {pool.name}'s" if pool is not None else "this stack's"
            return lines + [f"no jobs on {where} nodes yet"]
        rows = sorted(states.values(), key=lambda s: (s.submitted, s.name))
        return lines + [f"{s.name:<40} {s.state:<12} nodes={s.nodes} pool={s.pool or main} "
                        f"submitted={s.submitted}" + (f" code={s.code[:12]}" if s.code else "")
                        for s in rows]

    def state(self, job: str) -> JobState:
        found = self._states(job).get(job)
        if found is None:
            return JobState("UNKNOWN", True)
        return JobState(found.state, found.ended)

    def logs(self, job: str, tail_lines: int | None = None) -> str:
        job = self._checked(job)
        node = self._every_node()[:1]
        size, start, data = node_jobs.parse_log_chunk(
            self.client.on(node, node_jobs.log_chunk_script(job, 0, None, tail_lines))[
                node[0].instance_id])
        parts = [data]
        offset = start + len(data)
        while data and offset < size:  # a growing log ends where it was when we began
            _, _, data = node_jobs.parse_log_chunk(
                self.client.on(node, node_jobs.log_chunk_script(job, 0, offset, None))[
                    node[0].instance_id])
            parts.append(data)
            offset += len(data)
        return b"".join(parts).decode("utf-8", errors="replace")

    def cancel(self, job: str) -> None:
        script = node_jobs.cancel_script(self._checked(job))  # checked before any AWS call
        self.client.on(self._every_node(), script)

    def scale(self, nodes: int, pool: PoolInfo | None = None) -> str:
        """Set the desired capacities of ``pool``'s groups (the main pool's without one;
        ``SetDesiredCapacity``): ``nodes`` spread over them in order, each up to its
        ``MaxSize`` (:func:`~trn_ultracluster.network_plan.spread`, as the stack spreads
        ``nodes.desired``), within the pool's ``nodes.min`` and ``nodes.max``.

        Raises:
            CliError: (USAGE) ``nodes`` outside the pool's min and max, naming the pool;
                (CLUSTER) more than its groups hold, or a group refuses the count.
        """
        chosen = self._pool(pool)
        groups = pool_groups(self.outputs, chosen)
        least, most = chosen.nodes_min, chosen.nodes_max
        if not least <= nodes <= most:
            raise CliError(f"--nodes must be between pool {chosen.name}'s nodes.min ({least}) "
                           f"and nodes.max ({most}), got {nodes}",
                           "set the pool's nodes.min / nodes.max and deploy to allow it")
        from botocore.exceptions import ClientError

        sizes = [g["MaxSize"] for g in describe_groups(self.session, groups)]
        if nodes > sum(sizes):
            raise CliError(f"Auto Scaling group(s) {', '.join(groups)} of pool {chosen.name} "
                           f"hold at most {sum(sizes)} nodes, not {nodes}",
                           "deploy the stack again: it sets the groups from nodes.max",
                           ExitCode.CLUSTER)
        counts = spread(nodes, sizes)
        client = self.session.client("autoscaling")
        for group, count in zip(groups, counts, strict=True):
            with aws_errors(f"SetDesiredCapacity {group}"):
                try:
                    client.set_desired_capacity(AutoScalingGroupName=group,
                                                DesiredCapacity=count, HonorCooldown=False)
                except ClientError as err:
                    if error_code(err) != "ValidationError":
                        raise
                    raise CliError(f"Auto Scaling group {group} refused {count} nodes ({err})",
                                   "check the group's min and max (a deploy sets them from "
                                   "nodes)", ExitCode.CLUSTER) from None
        each = ", ".join(f"{g} {c}" for g, c in zip(groups, counts, strict=True))
        return (f"pool {chosen.name}: Auto Scaling group(s) {each}: desired capacity {nodes} "
                + ("(no instance runs, nothing is paid for compute)" if nodes == 0 else
                   "(new nodes take a few minutes to start and set up)"))

    def shell_argv(self, node: int, *, check_tools: bool = True) -> list[str]:
        """``aws ssm start-session`` on node ``node`` (0 is the first).

        Raises:
            CliError: USAGE without the AWS CLI and the Session Manager plugin (with
                ``check_tools``); CLUSTER when
                the node is not in service.
        """
        if check_tools and (shutil.which("aws") is None
                            or shutil.which("session-manager-plugin") is None):
            raise CliError("shell needs the AWS CLI v2 and the Session Manager plugin on PATH",
                           f"install them ({DOC_SESSION_PLUGIN})", ExitCode.USAGE)
        target = self._nodes(node + 1)[node]
        return ["aws", "ssm", "start-session", "--region", self.session.region_name,
                "--target", target.instance_id]
