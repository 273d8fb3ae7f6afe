"""``scale``: set the number of nodes of an EKS stack's node pool (its node groups).

An ``eks`` stack has, per node pool, one node group per group of its address plan (at most
450 nodes each, each in one subnet), listed in fill order: the main pool's by the
``EksTrainiumNodegroupName`` output (one name for a stack of one group, or of a version
before there were several), every pool's in the ``Pools`` output (``node_groups``).
``--nodes N`` fills them in that order, each up to its ``maxSize``
(:func:`trn_ultracluster.network_plan.spread`), as the stack's own desired size does.

The node groups of a Capacity Block are created with 0 nodes, because no instance can launch
before the block starts; once the block is ``active`` this scales them up (EKS user guide,
"Create a managed node group with Capacity Blocks for ML": "Use the Amazon EKS console or
``eks update-nodegroup-config`` to update the scaling config"). It also scales any pool
down to 0 to stop paying for idle nodes. The count must stay within the pool's
``nodes.max`` (the stack's ``NodeCountMax`` for the main pool: the size the subnets and the
node groups were made for).

Before it scales up into a reservation it checks the pool's reservation (EC2
``DescribeCapacityReservations``): ``active``, of the pool's instance type, with room for
the nodes. The main pool's capacity is the stack's ``CapacityType`` output; another pool's
is what the ``Pools`` output says (``capacity_type``), and a pool whose capacity is not
reported is not checked. A later ``cdk deploy`` that changes the node groups' sizes sends the
configured desired size again (CloudFormation sends the whole ``ScalingConfig``); run
``scale`` again after such a deploy.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from trn_ultracluster import network_plan
from trn_ultracluster.cli.aws import aws_errors, error_code
from trn_ultracluster.cli.errors import CliError, ExitCode
from trn_ultracluster.contracts.outputs import NONE, OutputKey

if TYPE_CHECKING:
    from trn_ultracluster.contracts.pools import PoolInfo

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


def _check_reservation(session: Any, rid: str, instance_type: str, nodes: int) -> None:
    """Reservation ``rid`` is active, holds ``instance_type`` and room for ``nodes``.

    Raises:
        CliError: CHECK_FAILED when it is not found, not active or of another type; USAGE
            when it holds fewer instances than ``nodes``.
    """
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
    if r["InstanceType"] != instance_type:
        raise CliError(f"capacity reservation {rid} holds {r['InstanceType']}, the pool runs "
                       f"{instance_type}", "fix capacity.reservation_id",
                       ExitCode.CHECK_FAILED)
    if nodes > r["TotalInstanceCount"]:
        raise CliError(f"capacity reservation {rid} holds {r['TotalInstanceCount']} instances, "
                       f"asked for {nodes}", f"scale to at most {r['TotalInstanceCount']}",
                       ExitCode.USAGE)


@dataclass(frozen=True)
class _Target:
    """The node groups one ``scale`` changes: their names, the most nodes, the capacity (type,
    reservation id, ``""`` when not known) and instance type to check, and how an error
    names the limit."""

    names: tuple[str, ...]
    most: int
    capacity_type: str
    reservation_id: str
    instance_type: str
    limit: str


def _target(outputs: Any, pool: PoolInfo | None, main: bool) -> _Target:
    """What to scale: ``pool``'s node groups (``None``: the main pool's, from the stack's
    outputs as before pools)."""
    if pool is None or main:
        names = nodegroup_names(",".join(pool.node_groups)) if pool is not None else ()
        names = names or nodegroup_names(outputs.get(OutputKey.EKS_TRAINIUM_NODEGROUP))
        if pool is not None and pool.capacity_type:
            capacity, rid = pool.capacity_type, pool.capacity_reservation_id
        else:
            capacity = outputs.get(OutputKey.CAPACITY_TYPE)
            rid = outputs.values.get(OutputKey.CAPACITY_RESERVATION_ID.value, "")
        return _Target(names, outputs.int_value(OutputKey.NODE_COUNT_MAX), capacity, rid,
                       outputs.get(OutputKey.INSTANCE_TYPE), "the stack's NodeCountMax")
    names = nodegroup_names(",".join(pool.node_groups))
    if not names:
        raise CliError(f"the stack's Pools output names no node groups for pool {pool.name}",
                       "redeploy the stack with this version", ExitCode.STACK)
    return _Target(names, pool.nodes_max, pool.capacity_type, pool.capacity_reservation_id,
                   pool.instance_type, f"pool {pool.name}'s nodes.max")


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


def scale_eks_nodes(session: Any, outputs: Any, nodes: int, pool: PoolInfo | None = None,
                    *, main: bool = True) -> ScaleResult:
    """Set the desired size of a pool's node groups: ``nodes`` spread over them in fill
    order, each up to its ``maxSize``; only the groups whose desired size changes are
    updated, and a group's ``minSize`` is lowered where it would be above the new desired
    size.

    Args:
        session: boto3 session in the stack's Region.
        outputs: the stack outputs (an ``eks`` stack).
        nodes: desired node count, 0 to the pool's most (``NodeCountMax`` for the main pool).
        pool: the pool (``scale --pool``); ``None``: the main pool, as before pools.
        main: whether ``pool`` is the stack's main pool (its node groups are also the
            ``EksTrainiumNodegroupName`` output, its capacity the stack's ``CapacityType``).

    Raises:
        CliError: USAGE for a count out of range (of the pool's most or of the node groups'
            ``maxSize`` summed); CHECK_FAILED when the pool's reservation is not active or
            does not fit; STACK when a node group is gone or the ``Pools`` output names
            none for the pool; CLUSTER when EKS refuses an update; CREDENTIALS / AWS as
            :func:`aws_errors`.
    """
    target = _target(outputs, pool, main)
    if not 0 <= nodes <= target.most:
        raise CliError(f"--nodes must be between 0 and {target.limit} ({target.most}), "
                       f"got {nodes}", "raise nodes.max and deploy to allow more")
    if nodes > 0 and target.capacity_type in RESERVED and target.reservation_id not in (
            "", NONE):
        _check_reservation(session, target.reservation_id, target.instance_type, nodes)
    cluster = outputs.get(OutputKey.EKS_CLUSTER_NAME)
    names = target.names
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
