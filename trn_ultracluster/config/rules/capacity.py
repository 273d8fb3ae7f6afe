"""Rules of compute capacity: On-Demand, a Capacity Reservation or a Capacity Block."""

from __future__ import annotations

from collections.abc import Iterator

from trn_ultracluster.config.errors import ConfigIssue
from trn_ultracluster.config.facts import (
    DOC_CAPACITY_BLOCKS,
    DOC_EKS_CAPACITY_BLOCKS,
    DOC_ODCR,
    DOC_ODCR_CPG,
    DOC_PLACEMENT_GROUP_NAME,
    DOC_RESOURCE_IDS,
    PLACEMENT_GROUP_NAME_RE,
    RESOURCE_ID_RE,
)
from trn_ultracluster.config.model import CapacityConfig, ClusterConfig, Pool
from trn_ultracluster.config.rules.pool_keys import capacity_key, capacity_sources, once
from trn_ultracluster.contracts.catalog import CATALOG, CPU_CATALOG

__all__ = ["capacity", "reservation_placement_group"]


def capacity(c: ClusterConfig) -> Iterator[ConfigIssue]:
    """Each ``capacity`` section written (the top-level one and each pool's own,
    :func:`~.pool_keys.capacity_sources`) is well formed; then each pool's capacity is checked
    against the pool: a Capacity Block takes no cluster placement group, and its node group
    starts with 0 nodes on ``eks``; one Capacity Reservation or Capacity Block holds one
    instance type (EC2 user guide, "Capacity Reservations": a reservation is for "an instance
    type", DOC_ODCR), so the pools that take it must all be of that type."""
    for prefix, cap in capacity_sources(c):
        yield from _well_formed(prefix, cap)
    yield from _per_pool(c)
    yield from _one_type_per_reservation(c)


def _well_formed(prefix: str, cap: CapacityConfig) -> Iterator[ConfigIssue]:
    if cap.type == "on-demand":
        if cap.reservation_id is not None:
            yield ConfigIssue(f"{prefix}.reservation_id", cap.reservation_id,
                              f"must be null when {prefix}.type is 'on-demand'", DOC_ODCR)
        return
    doc = DOC_CAPACITY_BLOCKS if cap.type == "capacity-block" else DOC_ODCR
    if cap.reservation_id is None:
        yield ConfigIssue(f"{prefix}.reservation_id", None,
                          f"must be set (cr-...) when {prefix}.type is {cap.type!r}", doc)
    elif not RESOURCE_ID_RE.match(cap.reservation_id):
        yield ConfigIssue(f"{prefix}.reservation_id", cap.reservation_id,
                          "must be 'cr-' followed by 8 or 17 hex digits", DOC_RESOURCE_IDS)


@once
def _per_pool(c: ClusterConfig) -> Iterator[ConfigIssue]:
    for pool in c.node_pools:
        if pool.capacity.type != "capacity-block" or not _accelerated(pool):
            continue  # a CPU pool's Capacity Block: pools.cpu_pool_settings
        kind = capacity_key(c, pool, "type")
        n = pool.nodes
        if c.orchestrator == "eks" and (n.min or n.desired):
            scale = "scale --nodes N" if not c.pools else f"scale --pool {pool.name} --nodes N"
            yield ConfigIssue(
                pool.key("nodes"), {"min": n.min, "desired": n.desired},
                "should be 0 with a Capacity Block, as they are not applied: the node group is "
                "created with 0 nodes (no instance can launch before the block starts); when it "
                f"is active, run `trn-ultracluster {scale}`",
                DOC_EKS_CAPACITY_BLOCKS, severity="warning")
        if pool.placement_group:
            yield ConfigIssue(
                pool.key("placement_group"), True,
                f"must be false with {kind} 'capacity-block' (Capacity Blocks are already "
                "placed close together and cannot be combined with a cluster placement group)",
                DOC_CAPACITY_BLOCKS,
            )


def _one_type_per_reservation(c: ClusterConfig) -> Iterator[ConfigIssue]:
    users: dict[str, list[Pool]] = {}
    for pool in c.node_pools:
        rid, kind = pool.capacity.reservation_id, pool.capacity.type
        if kind == "capacity-block" and not _accelerated(pool):
            continue  # pools.cpu_pool_settings
        if kind != "on-demand" and rid is not None:
            users.setdefault(rid, []).append(pool)
    for rid, pools in users.items():
        first = pools[0]
        for pool in pools[1:]:
            if pool.instance_type != first.instance_type:
                yield ConfigIssue(
                    capacity_key(c, pool, "reservation_id"), rid,
                    f"must not be the reservation of pool {first.name!r} ({first.instance_type}) "
                    f"for pool {pool.name!r} ({pool.instance_type}): a reservation holds one "
                    f"instance type; give {pool.field} a capacity of its own (e.g. "
                    "{type: on-demand})", DOC_ODCR)


def _accelerated(pool: Pool) -> bool:
    """A Trainium pool; an unknown type counts as one (the pool rules report it)."""
    return pool.instance_type not in CPU_CATALOG


def _has_efa(pool: Pool) -> bool:
    """Whether the pool's type has EFA (and so a placement group); an unknown type counts
    as one (the compute rules report it)."""
    spec = CATALOG.get(pool.instance_type)
    if spec is None:
        return pool.instance_type not in CPU_CATALOG
    return spec.supports_efa


def reservation_placement_group(c: ClusterConfig) -> Iterator[ConfigIssue]:
    """``capacity.placement_group_name``: the cluster placement group an On-Demand Capacity
    Reservation was created in.

    Only a reservation can be created in a cluster placement group, and only there does it
    hold capacity in the group: "To reserve capacity in a placement group, you must create
    the Capacity Reservation in the placement group", and an existing reservation cannot be
    moved into one (EC2 user guide, "Capacity Reservations in cluster placement groups",
    DOC_ODCR_CPG, "Limitations"). Without the name, the stack creates a new, empty cluster
    placement group: EC2 still uses a matching reservation for instances launched into a
    placement group, but "recommend[s] that you reserve capacity explicitly in the cluster
    placement group" (EC2 user guide, "Placement group rules and limitations"), and AWS
    ParallelCluster warns of the same setup that "insufficient capacity errors may occur due
    to placement constraints outside of the reservation even if the capacity reservation has
    remaining capacity" (its PlacementGroupCapacityReservationValidator). Whether the
    reservation really is in the named group is checked by ``preflight``
    (DescribeCapacityReservations ``PlacementGroupArn``).
    """
    for prefix, cap in capacity_sources(c):
        name = cap.placement_group_name
        if name is None:
            continue
        if cap.type != "capacity-reservation":
            yield ConfigIssue(
                f"{prefix}.placement_group_name", name,
                f"must be null when {prefix}.type is {cap.type!r}: it names the cluster "
                "placement group an On-Demand Capacity Reservation was created in "
                "(capacity.type 'capacity-reservation')", DOC_ODCR_CPG)
        elif not PLACEMENT_GROUP_NAME_RE.match(name):
            yield ConfigIssue(
                f"{prefix}.placement_group_name", name,
                "must be 1 to 255 printable ASCII characters (an EC2 placement group name)",
                DOC_PLACEMENT_GROUP_NAME)
    yield from _pool_placement(c)


@once
def _pool_placement(c: ClusterConfig) -> Iterator[ConfigIssue]:
    """The pool-dependent half of :func:`reservation_placement_group`: each pool on a
    Capacity Reservation, against its own ``placement_group`` and type."""
    for pool in c.node_pools:
        cap = pool.capacity
        if cap.type != "capacity-reservation":
            continue
        field, name = capacity_key(c, pool, "placement_group_name"), cap.placement_group_name
        if name is None:
            if pool.placement_group and _has_efa(pool):
                yield ConfigIssue(
                    field, None,
                    "should name the cluster placement group the reservation was created in: "
                    "without it the stack creates a new, empty cluster placement group, in "
                    "which the reservation holds no capacity (EC2 uses the reservation for "
                    "instances launched into a placement group, but to hold capacity in one "
                    "the reservation must be created in it, and an existing reservation cannot "
                    "be moved into one), so launches can fail for insufficient capacity while "
                    "the reservation has room; if the reservation is in no group, set "
                    f"{pool.key('placement_group')}: false to launch into the reservation alone",
                    DOC_ODCR_CPG, severity="warning")
        elif not pool.placement_group:
            yield ConfigIssue(
                field, name,
                f"must be null when {pool.key('placement_group')} is false (the nodes then "
                "launch into no placement group); set "
                f"{pool.key('placement_group')}: true to launch them into this group",
                DOC_ODCR_CPG)
        elif not _has_efa(pool):
            yield ConfigIssue(
                field, name,
                f"must be null with {pool.key('instance_type')} {pool.instance_type!r}: a type "
                "without EFA launches into no placement group", DOC_ODCR_CPG)
