"""``scale``: set the number of Trainium nodes of an EKS stack's node group.

The node group of a Capacity Block is created with 0 nodes, because no instance can launch
before the block starts; once the block is ``active`` this scales it up (EKS user guide,
"Create a managed node group with Capacity Blocks for ML": "Use the Amazon EKS console or
``eks update-nodegroup-config`` to update the scaling config"). It also scales any EKS stack
down to 0 to stop paying for idle nodes. The count must stay within the stack's
``NodeCountMax`` (the size the subnet and the node group were made for).

Before it scales up into a reservation it checks the reservation (EC2
``DescribeCapacityReservations``): ``active``, of the stack's instance type, with room for
the nodes. A later ``cdk deploy`` that changes the node group's sizes sends the configured
desired size again (CloudFormation sends the whole ``ScalingConfig``); run ``scale`` again
after such a deploy.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from trn_ultracluster.cli.aws import aws_errors, error_code
from trn_ultracluster.cli.errors import CliError, ExitCode
from trn_ultracluster.contracts.outputs import OutputKey

__all__ = ["ScaleResult", "scale_eks_nodes"]

RESERVED = ("capacity-reservation", "capacity-block")
_REFUSED = {"InvalidParameterException", "InvalidRequestException", "ResourceInUseException",
            "ClientException"}
"""EKS ``UpdateNodegroupConfig`` errors that mean the node group refused this change
(botocore EKS service model)."""


@dataclass(frozen=True)
class ScaleResult:
    """What :func:`scale_eks_nodes` changed: node group, sizes before and after."""

    nodegroup: str
    before: int
    after: int


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


def scale_eks_nodes(session: Any, outputs: Any, nodes: int) -> ScaleResult:
    """Set the desired size of the stack's Trainium node group.

    Args:
        session: boto3 session in the stack's Region.
        outputs: the stack outputs (an ``eks`` stack).
        nodes: desired node count, 0 to ``NodeCountMax``.

    Raises:
        CliError: USAGE for a count out of range; CHECK_FAILED when the stack's reservation
            is not active or does not fit; STACK when the node group is gone; CLUSTER when
            EKS refuses the update; CREDENTIALS / AWS as :func:`aws_errors`.
    """
    from botocore.exceptions import ClientError

    most = outputs.int_value(OutputKey.NODE_COUNT_MAX)
    if not 0 <= nodes <= most:
        raise CliError(f"--nodes must be between 0 and the stack's NodeCountMax ({most}), "
                       f"got {nodes}", "raise nodes.max and deploy to allow more")
    if nodes > 0 and outputs.get(OutputKey.CAPACITY_TYPE) in RESERVED:
        _check_reservation(session, outputs, nodes)
    cluster = outputs.get(OutputKey.EKS_CLUSTER_NAME)
    nodegroup = outputs.get(OutputKey.EKS_TRAINIUM_NODEGROUP).split("/")[-1]
    with aws_errors(f"UpdateNodegroupConfig {nodegroup}"):
        eks = session.client("eks")
        try:
            current = eks.describe_nodegroup(clusterName=cluster, nodegroupName=nodegroup)[
                "nodegroup"]["scalingConfig"]
            scaling = {"desiredSize": nodes}
            if nodes < current.get("minSize", 0):
                scaling["minSize"] = nodes
            eks.update_nodegroup_config(clusterName=cluster, nodegroupName=nodegroup,
                                        scalingConfig=scaling)
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
    return ScaleResult(nodegroup, int(current.get("desiredSize", 0)), nodes)
