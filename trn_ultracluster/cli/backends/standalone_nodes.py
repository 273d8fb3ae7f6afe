"""The standalone nodes as the job CLI finds them: each node pool's Auto Scaling groups and
their in-service instances, and a way to run a script on some of them.

A pool's groups are in the stack output ``Pools`` (``auto_scaling_groups``: comma separated,
in fill order; :class:`~trn_ultracluster.contracts.pools.PoolInfo`); the main pool's are also
in ``StandaloneAutoScalingGroupName``, the only place a stack deployed before pools names
them. A pool's nodes are its groups' ``InService`` instances, oldest first (the first is node
0 and hosts the rendezvous): ``DescribeAutoScalingGroups`` and ``DescribeInstances`` (their
private addresses), both through boto3's paginators.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from trn_ultracluster.cli.aws import aws_errors
from trn_ultracluster.cli.backends.ssm import MAX_TARGETS
from trn_ultracluster.cli.errors import CliError, ExitCode
from trn_ultracluster.cli.stack_outputs import StackOutputs
from trn_ultracluster.contracts.outputs import OutputKey
from trn_ultracluster.contracts.pools import PoolInfo

__all__ = ["DESCRIBE_IDS_PER_CALL", "Node", "StandaloneNodes", "describe_groups",
           "group_names", "nodes_of_groups", "pool_groups"]

DESCRIBE_IDS_PER_CALL = 1000
"""Instance ids per ``DescribeInstances`` call. Its reference gives no limit; EC2's calls that
state one take "Up to 1000 instance IDs. We recommend breaking up this request into smaller
batches" (EC2 API reference, ``TerminateInstances``; ``DescribeInstanceCreditSpecifications``:
"Maximum 1000 explicitly specified instance IDs"), so a 2,000-node cluster is asked in
batches of that size."""


@dataclass(frozen=True)
class Node:
    """One in-service instance of a group (``address``: its primary private IPv4)."""

    instance_id: str
    address: str


def group_names(value: str) -> list[str]:
    """The Auto Scaling groups named by output ``StandaloneAutoScalingGroupName``: comma
    separated, in fill order (one name from a stack of an earlier version)."""
    return [name for name in value.split(",") if name]


def pool_groups(outputs: StackOutputs, pool: PoolInfo) -> list[str]:
    """The Auto Scaling groups of ``pool``, in fill order: its ``auto_scaling_groups`` in the
    ``Pools`` output; for the main pool of a stack without them (deployed before pools),
    ``StandaloneAutoScalingGroupName``.

    Raises:
        CliError: (STACK) another pool without groups (the stack's ``Pools`` output is not a
            standalone stack's), or an output missing.
    """
    if pool.auto_scaling_groups:
        return list(pool.auto_scaling_groups)
    if pool.name == outputs.pools()[0].name:
        return group_names(outputs.get(OutputKey.STANDALONE_NODE_GROUP))
    raise CliError(f"the stack output Pools names no Auto Scaling group of pool {pool.name}",
                   "redeploy the stack with this version of the project", ExitCode.STACK)


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
    """The nodes and a way to run a script on some of them.

    Attributes:
        nodes: a fixed set of nodes, what every group gives when ``find`` is unset (a test's
            cluster).
        run: ``run(instance ids, script) -> {instance id: stdout}`` (SSM Run Command; tests
            pass a local runner).
        find: Auto Scaling group names -> their in-service nodes, oldest first
            (:func:`nodes_of_groups`); each answer is kept for the command.
    """

    nodes: list[Node]
    run: Any
    find: Callable[[Sequence[str]], list[Node]] | None = None
    _found: dict[tuple[str, ...], list[Node]] = field(default_factory=dict, repr=False)

    def of(self, groups: Sequence[str]) -> list[Node]:
        """The in-service nodes of ``groups``, oldest first."""
        if self.find is None:
            return list(self.nodes)
        key = tuple(groups)
        if key not in self._found:
            self._found[key] = self.find(key)
        return self._found[key]

    def on(self, nodes: list[Node], script: str) -> dict[str, str]:
        """Run ``script`` on ``nodes``, at most
        :data:`~trn_ultracluster.cli.backends.ssm.MAX_TARGETS` per command (what
        ``SendCommand`` takes); instance id -> stdout."""
        out: dict[str, str] = {}
        for start in range(0, len(nodes), MAX_TARGETS):
            out.update(self.run([n.instance_id for n in nodes[start:start + MAX_TARGETS]],
                                script))
        return out
