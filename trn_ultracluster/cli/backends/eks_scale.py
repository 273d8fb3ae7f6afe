"""``scale``: set the number of Trainium nodes of an EKS stack's node groups.

An ``eks`` stack has one Trainium node group per group of its address plan (at most 450
nodes each, each in one subnet), listed in fill order by the ``EksTrainiumNodegroupName``
output (one name for a stack of one group, or of a version before there were several).
``--nodes N`` fills them in that order, each up to its ``maxSize``
(:func:`trn_ultracluster.network_plan.spread`), as the stack's own desired size does.

The node groups of a Capacity Block are created with 0 nodes, because no instance can launch
before the block starts; once the block is ``active`` this scales them up (EKS user guide,
"Create a managed node group with Capacity Blocks for ML": "Use the Amazon EKS console or
``eks update-nodegroup-config`` to update the scaling config"). It also scales any EKS stack
down to 0 to stop paying for idle nodes. The count must stay within the stack's
``NodeCountMax`` (the size the subnets and the node groups were made for).

Before it scales up into a reservation it checks the reservation (EC2
``DescribeCapacityReservations``): ``active``, of the stack's instance type, with room for
the nodes. A later ``cdk deploy`` that changes the node groups' sizes sends the configured
desired size again (CloudFormation sends the whole ``ScalingConfig``); run ``scale`` again
after such a deploy.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from trn_ultracluster import network_plan
from trn_ultracluster.cli.aws import aws_errors, error_code
from trn_ultracluster.cli.errors import CliError, ExitCode
from trn_ultracluster.contracts.outputs import OutputKey

__all__ = ["ScaleResult", "nodegroup_names", "scale_eks_nodes"]

RESERVED = ("capacity-reservation", "capacity-block")
_REFUSED = {"InvalidParameterException", "InvalidRequestException", "ResourceInUseException",
            "ClientException"}
"""EKS ``UpdateNodegroupConfig`` errors that mean the node group refused this change
(botocore EKS service model)."""


@dataclass(frozen=True)
class ScaleResult:
    """What :func:`scale_eks_nodes` changed.

    Attributes:
        nodegroups: the Trainium node groups, in fill order.
        before: their desired sizes before, summed.
        after: the same after (the ``--nodes`` asked for).
        sizes: each node group's desired size after, in fill order.
    """

    nodegroups: tuple[str, ...]
    before: int
    after: int
    sizes: tuple[int, ...]


def _check_reservation(session: Any, outputs: Any, nodes: int) -> None:
    rid = outputs.get(OutputKey.CAPACITY_RESERVATION_ID)
    with aws_errors("DescribeCapacityReservations"):
        found = session.client("ec2").describe_capacity_reservations(
            CapacityReservationIds=[rid])["CapacityReservations"]
    if not found:
        raise CliError(f"capacity reservation {rid} not found", "check the Region and "
                       "capacity.reservation_id", ExitCode.CHECK_FAILED)
    r = found[0]
    if r["State"] != "active":
        start = r.get("StartDate")
        when = f" (it starts {start:%Y-%m-%d %H:%M %Z})" if start is not None else ""
        raise CliError(f"capacity reservation {rid} is {r['State']}, not active{when}",
                       "run scale again once it is active", ExitCode.CHECK_FAILED)
    if r["InstanceType"] != outputs.get(OutputKey.INSTANCE_TYPE):
        raise CliError(f"capacity reservation {rid} holds {r['InstanceType']}, the stack runs "
                       f"{outputs.get(OutputKey.INSTANCE_TYPE)}", "fix capacity.reservation_id",
                       ExitCode.CHECK_FAILED)
    if nodes > r["TotalInstanceCount"]:
        raise CliError(f"capacity reservation {rid} holds {r['TotalInstanceCount']} instances, "
                       f"asked for {nodes}", f"scale to at most {r['TotalInstanceCount']}",
                       ExitCode.USAGE)


@contextmanager
def _nodegroup_call(action: str, cluster: str, nodegroup: str) -> Iterator[None]:
    """EKS errors of one node group as :class:`CliError`: STACK when it is gone, CLUSTER
    when EKS refuses the change, the rest as :func:`aws_errors` explains them."""
    from botocore.exceptions import ClientError

    with aws_errors(f"{action} {nodegroup}"):
        try:
            yield
        except ClientError as err:
            if error_code(err) == "ResourceNotFoundException":
                raise CliError(f"EKS node group {nodegroup} of cluster {cluster} not found",
                               "check --stack-name/--region; redeploy the stack",
                               ExitCode.STACK) from None
            if error_code(err) not in _REFUSED:
                raise  # credentials, throttling, ...: aws_errors explains them
            raise CliError(f"EKS refused to scale {nodegroup}: {err}",
                           "check the node group in the EKS console (an update in progress? "
                           "wait and retry)", ExitCode.CLUSTER) from None


def nodegroup_names(value: str) -> tuple[str, ...]:
    """The node group names of the ``EksTrainiumNodegroupName`` output: comma separated,
    each the name or ``<cluster>/<name>``."""
    return tuple(part.split("/")[-1] for part in value.split(",") if part)


def scale_eks_nodes(session: Any, outputs: Any, nodes: int) -> ScaleResult:
    """Set the desired size of the stack's Trainium node groups: ``nodes`` spread over them
    in fill order, each up to its ``maxSize``; only the groups whose desired size changes
    are updated, and a group's ``minSize`` is lowered where it would be above the new
    desired size.

    Args:
        session: boto3 session in the stack's Region.
        outputs: the stack outputs (an ``eks`` stack).
        nodes: desired node count, 0 to ``NodeCountMax``.

    Raises:
        CliError: USAGE for a count out of range (of ``NodeCountMax`` or of the node groups'
            ``maxSize`` summed); CHECK_FAILED when the stack's reservation is not active or
            does not fit; STACK when a node group is gone; CLUSTER when EKS refuses an
            update; CREDENTIALS / AWS as :func:`aws_errors`.
    """
    most = outputs.int_value(OutputKey.NODE_COUNT_MAX)
    if not 0 <= nodes <= most:
        raise CliError(f"--nodes must be between 0 and the stack's NodeCountMax ({most}), "
                       f"got {nodes}", "raise nodes.max and deploy to allow more")
    if nodes > 0 and outputs.get(OutputKey.CAPACITY_TYPE) in RESERVED:
        _check_reservation(session, outputs, nodes)
    cluster = outputs.get(OutputKey.EKS_CLUSTER_NAME)
    names = nodegroup_names(outputs.get(OutputKey.EKS_TRAINIUM_NODEGROUP))
    eks = session.client("eks")
    current = []
    for name in names:
        with _nodegroup_call("DescribeNodegroup", cluster, name):
            current.append(eks.describe_nodegroup(clusterName=cluster, nodegroupName=name)[
                "nodegroup"]["scalingConfig"])
    maxes = [int(c.get("maxSize", 0)) for c in current]
    try:
        sizes = network_plan.spread(nodes, maxes)
    except ValueError:
        raise CliError(f"--nodes {nodes} is more than the node groups hold ({sum(maxes)}: "
                       f"maxSize {', '.join(map(str, maxes))})",
                       "deploy the stack again to restore the node groups' sizes") from None
    for name, now, size in zip(names, current, sizes):
        if int(now.get("desiredSize", 0)) == size:
            continue
        scaling = {"desiredSize": size}
        if size < now.get("minSize", 0):
            scaling["minSize"] = size
        with _nodegroup_call("UpdateNodegroupConfig", cluster, name):
            eks.update_nodegroup_config(clusterName=cluster, nodegroupName=name,
                                        scalingConfig=scaling)
    return ScaleResult(names, sum(int(c.get("desiredSize", 0)) for c in current), nodes,
                       tuple(sizes))
