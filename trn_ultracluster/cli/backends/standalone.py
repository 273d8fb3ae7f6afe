"""The ``standalone`` job backend: torchrun on the nodes of the stack's Auto Scaling groups,
started through SSM Run Command, without a scheduler.

The stack has one Auto Scaling group per compute subnet its nodes fill (output
``StandaloneAutoScalingGroupName``, comma separated in fill order; a stack of an earlier
version names one group). The nodes are the groups' ``InService`` instances, oldest first (the
first is node 0 and hosts the rendezvous): ``DescribeAutoScalingGroups`` and
``DescribeInstances`` (their private addresses), both through boto3's paginators. A job's handle is its name; its files live on
the shared file system (:mod:`.node_jobs`), so ``status`` and ``logs`` work from any node and
after the job ended. Commands run as root (the SSM agent's user), with
:func:`~trn_ultracluster.cli.backends.ssm.run_command`.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any

from trn_ultracluster.cli.aws import aws_errors, error_code
from trn_ultracluster.cli.backends import node_jobs
from trn_ultracluster.cli.backends.base import BackendTexts, JobBackend, JobState, RenderedJob
from trn_ultracluster.cli.backends.ssm import run_command
from trn_ultracluster.cli.errors import CliError, ExitCode
from trn_ultracluster.cli.job_args import JobRequest
from trn_ultracluster.cli.launch import validate_job_name
from trn_ultracluster.contracts.outputs import NONE, OutputKey
from trn_ultracluster.network_plan import spread

__all__ = ["Node", "StandaloneBackend", "StandaloneNodes", "describe_groups", "group_names",
           "nodes_of_groups"]

DESCRIBE_IDS_PER_CALL = 1000
"""Instance ids per ``DescribeInstances`` call. Its reference gives no limit; EC2's calls that
state one take "Up to 1000 instance IDs. We recommend breaking up this request into smaller
batches" (EC2 API reference, ``TerminateInstances``; ``DescribeInstanceCreditSpecifications``:
"Maximum 1000 explicitly specified instance IDs"), so a 2,000-node cluster is asked in
batches of that size."""
COMMAND_TIMEOUT_S = 120
"""How long one Run Command may take (writing files, starting a unit, reading a chunk)."""
DOC_SESSION_PLUGIN = ("https://docs.aws.amazon.com/systems-manager/latest/userguide/"
                      "session-manager-working-with-install-plugin.html")


@dataclass(frozen=True)
class Node:
    """One in-service instance of the group (``address``: its primary private IPv4)."""

    instance_id: str
    address: str


def group_names(value: str) -> list[str]:
    """The Auto Scaling groups named by output ``StandaloneAutoScalingGroupName``: comma
    separated, in fill order (one name from a stack of an earlier version)."""
    return [name for name in value.split(",") if name]


def describe_groups(session: Any, groups: Sequence[str]) -> list[dict[str, Any]]:
    """``DescribeAutoScalingGroups`` of ``groups``, in their order. ``MaxRecords`` 100 (the
    most): more than 50 names need it ("By default, you can only specify up to 50 names",
    botocore's Auto Scaling model, ``AutoScalingGroupNames``).

    Raises:
        CliError: (STACK) a group does not exist; as :func:`aws_errors` otherwise.
    """
    with aws_errors(f"DescribeAutoScalingGroups {','.join(groups)}"):
        pages = session.client("autoscaling").get_paginator(
            "describe_auto_scaling_groups").paginate(
                AutoScalingGroupNames=list(groups), PaginationConfig={"PageSize": 100})
        found = {g["AutoScalingGroupName"]: g for page in pages
                 for g in page["AutoScalingGroups"]}
    missing = [g for g in groups if g not in found]
    if missing:
        raise CliError(f"Auto Scaling group(s) {', '.join(missing)} not found",
                       "check the stack outputs' Region and that the stack exists",
                       ExitCode.STACK)
    return [found[g] for g in groups]


def nodes_of_groups(session: Any, groups: Sequence[str]) -> list[Node]:
    """The groups' ``InService`` instances, oldest first (launch time, then id).

    Raises:
        CliError: (STACK) a group does not exist; as :func:`aws_errors` otherwise.
    """
    ids = [i["InstanceId"] for g in describe_groups(session, groups)
           for i in g.get("Instances", []) if i.get("LifecycleState") == "InService"]
    if not ids:
        return []
    found = []
    with aws_errors("DescribeInstances"):
        paginator = session.client("ec2").get_paginator("describe_instances")
        for start in range(0, len(ids), DESCRIBE_IDS_PER_CALL):
            pages = paginator.paginate(InstanceIds=ids[start:start + DESCRIBE_IDS_PER_CALL])
            found += [i for page in pages for r in page["Reservations"] for i in r["Instances"]]
    found.sort(key=lambda i: (i.get("LaunchTime") or datetime.min.replace(tzinfo=timezone.utc),
                              i["InstanceId"]))
    return [Node(i["InstanceId"], i.get("PrivateIpAddress", "")) for i in found]


@dataclass
class StandaloneNodes:
    """The nodes and a way to run a script on some of them (``run(instance ids, script) ->
    {instance id: stdout}``; tests pass a local runner)."""

    nodes: list[Node]
    run: Any

    def on(self, nodes: list[Node], script: str) -> dict[str, str]:
        """Run ``script`` on ``nodes``; instance id -> stdout."""
        return self.run([n.instance_id for n in nodes], script)


class StandaloneBackend(JobBackend):
    """torchrun on every node of the group, each part a systemd unit started with SSM."""

    name = "standalone"
    texts = BackendTexts(
        label="standalone", job="job name",
        dry_run="the job script every node runs",
        time_limit="the nodes' systemd units stop the job (RuntimeMaxSec)",
        env="exported in the job script")

    def connect(self) -> StandaloneNodes:
        session = self.session
        groups = group_names(self.outputs.get(OutputKey.STANDALONE_NODE_GROUP))

        def run(instance_ids: list[str], script: str) -> dict[str, str]:
            return run_command(session, instance_ids, script, user=None, poll_s=1,
                               timeout_s=COMMAND_TIMEOUT_S, what="the node")

        return StandaloneNodes(nodes_of_groups(session, groups), run)

    def _nodes(self, count: int | None = None) -> list[Node]:
        """The first ``count`` nodes (all without ``count``).

        Raises:
            CliError: (CLUSTER) fewer nodes are in service.
        """
        nodes = self.client.nodes
        want = count or 1
        if len(nodes) < want:
            group = self.outputs.get(OutputKey.STANDALONE_NODE_GROUP)
            raise CliError(
                f"{len(nodes)} node(s) of Auto Scaling group(s) {group} in service, {want} "
                "needed",
                f"trn-ultracluster scale --nodes {want}, wait until the nodes have started "
                "(a few minutes; their setup pulls the image), then retry", ExitCode.CLUSTER)
        return nodes[:count] if count else nodes

    def runtime(self) -> node_jobs.Runtime:
        """The stack's job runtime (outputs ``StandaloneRuntime``, ``StandaloneDlamiVenv``).

        Raises:
            CliError: (STACK) a runtime this job CLI does not know, or ``dlami-venv``
                without a virtual environment: the stack's outputs, not the arguments.
        """
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
        runtime = self.runtime()
        if runtime.kind == "dlami-venv" and getattr(self.args, "image", None):
            raise ValueError("--image has no effect on this stack: its nodes run jobs in the "
                             f"DLAMI's virtual environment {runtime.venv} (standalone.runtime "
                             "dlami-venv)")
        script = node_jobs.job_script(job, self.spec, runtime)
        return RenderedJob(job, script, script)

    def submit(self, job: RenderedJob) -> str:
        request, script = job.job, job.payload
        nodes = self._nodes(request.nodes)
        meta = {"name": request.name, "nodes": request.nodes,
                "instance_type": self.spec.name, "runtime": self.runtime().kind,
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
        job = None if job is None else self._checked(job)
        return node_jobs.job_states(self.client.on(self._nodes(), node_jobs.status_script(job)))

    def status(self, job: str | None) -> list[str]:
        states = self._states(job)
        if job and job not in states:
            raise CliError(f"no job named {job} on the nodes' shared file system",
                           "`status` lists the jobs", ExitCode.CLUSTER)
        if not states:
            return ["no jobs on this stack's nodes yet"]
        rows = sorted(states.values(), key=lambda s: (s.submitted, s.name))
        return [f"{s.name:<40} {s.state:<12} nodes={s.nodes} submitted={s.submitted}"
                + (f" code={s.code[:12]}" if s.code else "") for s in rows]

    def state(self, job: str) -> JobState:
        found = self._states(job).get(job)
        if found is None:
            return JobState("UNKNOWN", True)
        return JobState(found.state, found.ended)

    def logs(self, job: str, tail_lines: int | None = None) -> str:
        job = self._checked(job)
        node = self._nodes()[:1]
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
        self.client.on(self._nodes(), script)

    def scale(self, nodes: int) -> str:
        """Set the groups' desired capacities (``SetDesiredCapacity``): ``nodes`` spread over
        them in order, each up to its ``MaxSize`` (:func:`~trn_ultracluster.network_plan.spread`,
        as the stack spreads ``nodes.desired``), within the stack's min and max."""
        groups = group_names(self.outputs.get(OutputKey.STANDALONE_NODE_GROUP))
        most = self.outputs.int_value(OutputKey.NODE_COUNT_MAX)
        least = self.outputs.int_value(OutputKey.NODE_COUNT_MIN)
        if not least <= nodes <= most:
            raise CliError(f"--nodes must be between the stack's NodeCountMin ({least}) and "
                           f"NodeCountMax ({most}), got {nodes}",
                           "set nodes.min / nodes.max and deploy to allow it")
        from botocore.exceptions import ClientError

        sizes = [g["MaxSize"] for g in describe_groups(self.session, groups)]
        if nodes > sum(sizes):
            raise CliError(f"Auto Scaling group(s) {', '.join(groups)} hold at most "
                           f"{sum(sizes)} nodes, not {nodes}",
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
        return (f"Auto Scaling group(s) {each}: desired capacity {nodes} "
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
