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
    DOC_TRN2_ULTRASERVER,
    MAX_NODES,
    README_CONFIG,
    ROOT_VOLUME_GIB_RANGE,
)
from trn_ultracluster.config.model import ClusterConfig
from trn_ultracluster.contracts.catalog import CATALOG

__all__ = ["efa_layout_needs_efa", "instance_type_known", "multi_node_needs_efa", "node_counts",
           "root_volume", "whole_ultraservers"]


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


def whole_ultraservers(c: ClusterConfig) -> Iterator[ConfigIssue]:
    """Nodes of an UltraServer type come in whole UltraServers: ``nodes.max``, and
    ``nodes.min`` / ``nodes.desired`` when not 0, must be multiples of the catalog's
    ``ultraserver_nodes`` (4 for trn2u.48xlarge).

    This is the project's rule, derived from these facts; AWS itself validates no such count:

    - "A Trn2 UltraServer comprises four trn2u.48xlarge instances connected together via the
      NeuronLink-v3 chip-to-chip interconnect" (Neuron docs, Trn2 architecture,
      DOC_TRN2_ULTRASERVER);
    - trn2u capacity is bought per UltraServer: "For Trn2u instances, a capacity block ID
      refers to an EC2 UltraServer" (EC2 API reference, ``Instance.CapacityBlockId``), and
      Capacity Block offerings are counted in UltraServers (``DescribeCapacityBlockOfferings``
      ``UltraserverCount``);
    - Neuron's UltraServer init script (aws-neuron/aws-neuron-sdk
      ``src/k8/k8s-ultraserver-init-script.sh``) stops a job with "Incorrect number of nodes
      with server id" unless exactly the configured number of its nodes (4 by default) share an
      UltraServer.

    A Capacity Block does let fewer instances run than it holds (EC2 user guide, "Launch
    instances into Capacity Blocks"), so a count that is not a multiple leaves part of an
    UltraServer paid for and idle, or splits a NeuronLink domain between jobs. ``nodes.min`` /
    ``nodes.desired`` of 0 (idle, or waiting for the block to start) are allowed.
    """
    spec = CATALOG.get(c.instance_type)
    n = c.nodes
    if spec is None or spec.ultraserver_nodes is None or min(n.min, n.desired, n.max) < 0:
        return  # instance_type_known / node_counts report those
    size = spec.ultraserver_nodes
    for name in ("max", "min", "desired"):
        value = getattr(n, name)
        if value % size == 0 or (value == 0 and name != "max"):
            continue
        lower, upper = value // size * size, (value // size + 1) * size
        nearest = f"{lower} or {upper}" if lower else f"{upper}"
        allowed = "a multiple of" if name == "max" else "0 or a multiple of"
        yield ConfigIssue(
            f"nodes.{name}", value,
            f"must be {allowed} {size} for {c.instance_type} (e.g. {nearest}): an UltraServer "
            f"is {size} {c.instance_type} instances in one NeuronLink domain, sold as one "
            f"Capacity Block, and a {size}-node Neuron UltraServer job (Neuron's default) "
            f"needs all {size} of one UltraServer",
            DOC_TRN2_ULTRASERVER)


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
