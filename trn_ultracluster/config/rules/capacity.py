"""Rules of compute capacity: On-Demand, a Capacity Reservation or a Capacity Block."""

from __future__ import annotations

from collections.abc import Iterator

from trn_ultracluster.config.errors import ConfigIssue
from trn_ultracluster.config.facts import (
    DOC_CAPACITY_BLOCKS,
    DOC_EKS_CAPACITY_BLOCKS,
    DOC_ODCR,
    DOC_RESOURCE_IDS,
    RESOURCE_ID_RE,
)
from trn_ultracluster.config.model import ClusterConfig

__all__ = ["capacity"]


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
