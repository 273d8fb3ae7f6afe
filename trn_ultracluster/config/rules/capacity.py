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
from trn_ultracluster.config.model import ClusterConfig
from trn_ultracluster.contracts.catalog import CATALOG

__all__ = ["capacity", "reservation_placement_group"]


def capacity(c: ClusterConfig) -> Iterator[ConfigIssue]:
    cap = c.capacity
    if cap.type == "on-demand":
        if cap.reservation_id is not None:
            yield ConfigIssue("capacity.reservation_id", cap.reservation_id,
                              "must be null when capacity.type is 'on-demand'", DOC_ODCR)
        return
    doc = DOC_CAPACITY_BLOCKS if cap.type == "capacity-block" else DOC_ODCR
    if cap.reservation_id is None:
        yield ConfigIssue("capacity.reservation_id", None,
                          f"must be set (cr-...) when capacity.type is {cap.type!r}", doc)
    elif not RESOURCE_ID_RE.match(cap.reservation_id):
        yield ConfigIssue("capacity.reservation_id", cap.reservation_id,
                          "must be 'cr-' followed by 8 or 17 hex digits", DOC_RESOURCE_IDS)
    if cap.type == "capacity-block" and c.orchestrator == "eks" and (c.nodes.min or c.nodes.desired):
        yield ConfigIssue(
            "nodes", {"min": c.nodes.min, "desired": c.nodes.desired},
            "should be 0 with a Capacity Block, as they are not applied: the node group is "
            "created with 0 nodes (no instance can launch before the block starts); when it "
            "is active, run `trn-ultracluster scale --nodes N`",
            DOC_EKS_CAPACITY_BLOCKS, severity="warning")
    if cap.type == "capacity-block" and c.placement_group:
        yield ConfigIssue(
            "placement_group", True,
            "must be false with capacity.type 'capacity-block' (Capacity Blocks are already "
            "placed close together and cannot be combined with a cluster placement group)",
            DOC_CAPACITY_BLOCKS,
        )


def _has_efa(c: ClusterConfig) -> bool:
    """Whether the instance type has EFA (and so a placement group); an unknown type counts
    as one (the compute rules report it)."""
    spec = CATALOG.get(c.instance_type)
    return spec is None or spec.supports_efa


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
    cap, name = c.capacity, c.capacity.placement_group_name
    if name is None:
        if cap.type == "capacity-reservation" and c.placement_group and _has_efa(c):
            yield ConfigIssue(
                "capacity.placement_group_name", None,
                "should name the cluster placement group the reservation was created in: "
                "without it the stack creates a new, empty cluster placement group, in "
                "which the reservation holds no capacity (EC2 uses the reservation for "
                "instances launched into a placement group, but to hold capacity in one the "
                "reservation must be created in it, and an existing reservation cannot be "
                "moved into one), so launches can fail for insufficient capacity while the "
                "reservation has room; if the reservation is in no group, set "
                "placement_group: false to launch into the reservation alone",
                DOC_ODCR_CPG, severity="warning")
        return
    if cap.type != "capacity-reservation":
        yield ConfigIssue(
            "capacity.placement_group_name", name,
            f"must be null when capacity.type is {cap.type!r}: it names the cluster "
            "placement group an On-Demand Capacity Reservation was created in "
            "(capacity.type 'capacity-reservation')", DOC_ODCR_CPG)
    elif not c.placement_group:
        yield ConfigIssue(
            "capacity.placement_group_name", name,
            "must be null when placement_group is false (the nodes then launch into no "
            "placement group); set placement_group: true to launch them into this group",
            DOC_ODCR_CPG)
    elif not _has_efa(c):
        yield ConfigIssue(
            "capacity.placement_group_name", name,
            f"must be null with instance_type {c.instance_type!r}: a type without EFA "
            "launches into no placement group", DOC_ODCR_CPG)
    elif not PLACEMENT_GROUP_NAME_RE.match(name):
        yield ConfigIssue(
            "capacity.placement_group_name", name,
            "must be 1 to 255 printable ASCII characters (an EC2 placement group name)",
            DOC_PLACEMENT_GROUP_NAME)
