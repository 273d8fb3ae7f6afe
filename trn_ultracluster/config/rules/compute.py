"""Rules of the Trainium nodes: instance type, node counts, EFA for more than one node,
root volume."""

from __future__ import annotations

from collections.abc import Iterator

from trn_ultracluster.config.errors import ConfigIssue, one_of
from trn_ultracluster.config.facts import (
    DOC_EBS_GP3,
    DOC_EFA,
    DOC_INSTANCES,
    DOC_EKS_ULTRA,
    MAX_NODES,
    README_CONFIG,
    ROOT_VOLUME_GIB_RANGE,
)
from trn_ultracluster.config.model import ClusterConfig
from trn_ultracluster.contracts.catalog import CATALOG

__all__ = ["efa_layout_needs_efa", "instance_type_known", "multi_node_needs_efa", "node_counts",
           "root_volume"]


def instance_type_known(c: ClusterConfig) -> Iterator[ConfigIssue]:
    if c.instance_type not in CATALOG:
        yield ConfigIssue(
            "instance_type", c.instance_type, f"must be one of {one_of(sorted(CATALOG))}",
            DOC_INSTANCES,
        )


def node_counts(c: ClusterConfig) -> Iterator[ConfigIssue]:
    for name in ("min", "desired", "max"):
        value = getattr(c.nodes, name)
        if value < 0:
            yield ConfigIssue(f"nodes.{name}", value, "must be 0 or more", README_CONFIG)
    n = c.nodes
    if min(n.min, n.desired, n.max) < 0:
        return
    if n.min > n.max:
        yield ConfigIssue("nodes.min", n.min, f"must be at most nodes.max ({n.max})", README_CONFIG)
    elif not n.min <= n.desired <= n.max:
        yield ConfigIssue(
            "nodes.desired", n.desired,
            f"must be between nodes.min ({n.min}) and nodes.max ({n.max})", README_CONFIG,
        )
    if n.max == 0:
        yield ConfigIssue("nodes.max", 0, "must be at least 1 (use nodes.desired = 0 to idle)",
                          README_CONFIG)
    if n.max > MAX_NODES:
        yield ConfigIssue("nodes.max", n.max,
                          f"must be at most {MAX_NODES:,} (the largest EKS cluster)",
                          DOC_EKS_ULTRA)


def multi_node_needs_efa(c: ClusterConfig) -> Iterator[ConfigIssue]:
    spec = CATALOG.get(c.instance_type)
    if spec is not None and not spec.supports_efa and c.nodes.max > 1:
        efa_types = sorted(name for name, s in CATALOG.items() if s.supports_efa)
        yield ConfigIssue(
            "nodes.max", c.nodes.max,
            f"must be 1 for {c.instance_type}, which has no EFA (single-node only); "
            f"for more nodes use {one_of(efa_types)}",
            DOC_EFA,
        )


def efa_layout_needs_efa(c: ClusterConfig) -> Iterator[ConfigIssue]:
    """``efa-only`` names an interface layout of EFA devices; a type without EFA gets one
    ordinary interface whatever the layout (:func:`~trn_ultracluster.constructs.efa.
    efa_network_interfaces`), so the setting does nothing: a warning, not an error."""
    spec = CATALOG.get(c.instance_type)
    if spec is not None and not spec.supports_efa and c.efa_interface_layout == "efa-only":
        yield ConfigIssue(
            "efa_interface_layout", "efa-only",
            f"should be left out for {c.instance_type}, which has no EFA: the nodes get one "
            "ordinary network interface, so 'efa-only' has no effect", DOC_EFA,
            severity="warning")


def root_volume(c: ClusterConfig) -> Iterator[ConfigIssue]:
    lo, hi = ROOT_VOLUME_GIB_RANGE
    if not lo <= c.root_volume_gib <= hi:
        yield ConfigIssue("root_volume_gib", c.root_volume_gib,
                          f"must be between {lo} and {hi} GiB", DOC_EBS_GP3)
