"""Rules of the nodes of every pool: instance type, node counts, EFA for more than one node,
root volume. Each runs per pool (:attr:`~trn_ultracluster.config.model.ClusterConfig.node_pools`)
and names the pool's own keys (top-level for the one-pool shorthand, ``pools[i]....`` else)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from trn_ultracluster.config.errors import ConfigIssue, one_of
from trn_ultracluster.config.facts import (
    DOC_CONFIG,
    DOC_EBS_GP3,
    DOC_EFA,
    DOC_EKS_ULTRA,
    DOC_INSTANCES,
    DOC_TRN2_ULTRASERVER,
    MAX_NODES,
    ROOT_VOLUME_GIB_RANGE,
)
from trn_ultracluster.config.model import ClusterConfig, NodeCounts
from trn_ultracluster.contracts.catalog import CATALOG

__all__ = ["efa_layout_needs_efa", "instance_type_known", "multi_node_needs_efa", "node_counts",
           "root_volume", "whole_ultraservers"]


def instance_type_known(c: ClusterConfig) -> Iterator[ConfigIssue]:
    if c.pools:
        return  # pools.pool_types: each pool's type, the first a Trainium one
    if c.instance_type not in CATALOG:
        yield ConfigIssue(
            "instance_type", c.instance_type, f"must be one of {one_of(sorted(CATALOG))}",
            DOC_INSTANCES,
        )


def node_counts(c: ClusterConfig) -> Iterator[ConfigIssue]:
    for pool in c.node_pools:
        yield from _pool_node_counts(pool.key, pool.nodes)
    total = c.nodes_max
    if len(c.node_pools) > 1 and total > MAX_NODES:
        yield ConfigIssue("pools", total,
                          f"must hold at most {MAX_NODES:,} nodes in all (the largest EKS "
                          "cluster)", DOC_EKS_ULTRA)


def _pool_node_counts(key: Callable[[str], str], n: NodeCounts) -> Iterator[ConfigIssue]:
    for name in ("min", "desired", "max"):
        value = getattr(n, name)
        if value < 0:
            yield ConfigIssue(key(f"nodes.{name}"), value, "must be 0 or more", DOC_CONFIG)
    if min(n.min, n.desired, n.max) < 0:
        return
    if n.min > n.max:
        yield ConfigIssue(key("nodes.min"), n.min, f"must be at most {key('nodes.max')} ({n.max})",
                          DOC_CONFIG)
    elif not n.min <= n.desired <= n.max:
        yield ConfigIssue(
            key("nodes.desired"), n.desired,
            f"must be between {key('nodes.min')} ({n.min}) and {key('nodes.max')} ({n.max})",
            DOC_CONFIG,
        )
    if n.max == 0:
        yield ConfigIssue(key("nodes.max"), 0,
                          f"must be at least 1 (use {key('nodes.desired')} = 0 to idle)",
                          DOC_CONFIG)
    if n.max > MAX_NODES:
        yield ConfigIssue(key("nodes.max"), n.max,
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
    for pool in c.node_pools:
        spec = CATALOG.get(pool.instance_type)
        n = pool.nodes
        if spec is None or spec.ultraserver_nodes is None or min(n.min, n.desired, n.max) < 0:
            continue  # instance_type_known / node_counts report those
        size = spec.ultraserver_nodes
        for name in ("max", "min", "desired"):
            value = getattr(n, name)
            if value % size == 0 or (value == 0 and name != "max"):
                continue
            lower, upper = value // size * size, (value // size + 1) * size
            nearest = f"{lower} or {upper}" if lower else f"{upper}"
            allowed = "a multiple of" if name == "max" else "0 or a multiple of"
            yield ConfigIssue(
                pool.key(f"nodes.{name}"), value,
                f"must be {allowed} {size} for {spec.name} (e.g. {nearest}): an UltraServer "
                f"is {size} {spec.name} instances in one NeuronLink domain, sold as one "
                f"Capacity Block, and a {size}-node Neuron UltraServer job (Neuron's default) "
                f"needs all {size} of one UltraServer",
                DOC_TRN2_ULTRASERVER)


def multi_node_needs_efa(c: ClusterConfig) -> Iterator[ConfigIssue]:
    """A Trainium type without EFA runs single-node jobs only, so its pool holds one node.
    CPU pools have no EFA and need none: their jobs (data preparation, tools) run on one
    node each, or talk over TCP."""
    for pool in c.node_pools:
        spec = CATALOG.get(pool.instance_type)
        if spec is not None and not spec.supports_efa and pool.nodes.max > 1:
            efa_types = sorted(name for name, s in CATALOG.items() if s.supports_efa)
            yield ConfigIssue(
                pool.key("nodes.max"), pool.nodes.max,
                f"must be 1 for {spec.name}, which has no EFA (single-node only); "
                f"for more nodes use {one_of(efa_types)}",
                DOC_EFA,
            )


def efa_layout_needs_efa(c: ClusterConfig) -> Iterator[ConfigIssue]:
    """``efa-only`` names an interface layout of EFA devices; a type without EFA gets one
    ordinary interface whatever the layout (:func:`~trn_ultracluster.constructs.efa.
    efa_network_interfaces`), so the setting does nothing: a warning, not an error."""
    for pool in c.node_pools:
        spec = CATALOG.get(pool.instance_type)
        if spec is not None and not spec.supports_efa and pool.efa_interface_layout == "efa-only":
            yield ConfigIssue(
                pool.key("efa_interface_layout") if c.pools else "efa_interface_layout",
                "efa-only",
                f"should be left out for {spec.name}, which has no EFA: the nodes get one "
                "ordinary network interface, so 'efa-only' has no effect", DOC_EFA,
                severity="warning")


def root_volume(c: ClusterConfig) -> Iterator[ConfigIssue]:
    lo, hi = ROOT_VOLUME_GIB_RANGE
    values = {"root_volume_gib": c.root_volume_gib}
    values.update({f"pools[{i}].root_volume_gib": p.root_volume_gib
                   for i, p in enumerate(c.pools) if p.root_volume_gib is not None})
    for field, value in values.items():
        if not lo <= value <= hi:
            yield ConfigIssue(field, value, f"must be between {lo} and {hi} GiB", DOC_EBS_GP3)
