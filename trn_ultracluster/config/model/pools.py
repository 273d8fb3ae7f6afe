"""Node pools: ``pools``, the named groups of nodes of one instance type each, and
:class:`Pool`, a pool with every setting resolved (what the constructs, the rules and the job
CLI read).

A cluster without ``pools`` has one pool, :data:`SHORTHAND_POOL`, made of the top-level
``instance_type``, ``nodes``, ``capacity``, ``placement_group``, ``efa_interface_layout``,
``root_volume_gib`` and ``training_image.neuron_stack``. With ``pools``, the first pool is the
cluster's main Trainium pool: it keeps the resource names of a one-pool stack (so turning the
shorthand into a one-item ``pools`` list with the same type replaces nothing but renames the
pool), and every other pool's resources carry its name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from trn_ultracluster.config.model.base import FrozenModel
from trn_ultracluster.config.model.capacity import CapacityConfig
from trn_ultracluster.config.model.compute import NodeCounts
from trn_ultracluster.contracts.catalog import InstanceSpec, get_any_instance
from trn_ultracluster.contracts.neuron_stack import NeuronStackName, default_stack

__all__ = ["POOL_NAME_MAX", "POOL_NAME_PATTERN", "SHORTHAND_POOL", "Pool", "PoolConfig",
           "id_suffix"]

SHORTHAND_POOL = "trainium"
"""The name of the one pool of a configuration without ``pools`` (the partition name the
HyperPod worker group has always had by default)."""
POOL_NAME_MAX = 20
POOL_NAME_PATTERN = re.compile(r"^[a-z]([a-z0-9-]*[a-z0-9])?\Z")
"""A pool's name becomes a Slurm partition, an EKS node group's name part, the value of a
Kubernetes label, a HyperPod instance group's name and a CloudFormation logical id part; the
strictest of their rules holds: lowercase letters, digits and hyphens, starting with a letter
and not ending with a hyphen (a Kubernetes label value: at most 63 characters, alphanumerics,
``-``, ``_``, ``.``, beginning and ending alphanumeric, Kubernetes docs "Labels and Selectors";
a HyperPod instance group: ``[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}``, botocore SageMaker model,
shape ``ClusterInstanceGroupName``; an EKS node group name: letters, digits, hyphens and
underscores, starting alphanumeric, at most 63, EKS API reference ``CreateNodegroup``; a Slurm
partition name: no whitespace or commas, slurm.conf(5) ``PartitionName``; a Kubernetes
namespace-like lowercase rule keeps one spelling everywhere). At most :data:`POOL_NAME_MAX`
characters, so the suffixes the stack adds (``-2`` per extra instance group, the stack's name
on node groups) keep every derived name within 63."""


class PoolConfig(FrozenModel):
    """One node pool: ``pools[i]``. A setting left out takes the top-level one.

    Attributes:
        name: the pool's name (:data:`POOL_NAME_PATTERN`, at most :data:`POOL_NAME_MAX`
            characters, unique): its Slurm partition, node group and ``trn-ultracluster/pool``
            label, and what ``--pool`` names.
        instance_type: a Trainium type of :data:`~trn_ultracluster.contracts.catalog.CATALOG`
            or a CPU type of :data:`~trn_ultracluster.contracts.catalog.CPU_CATALOG`.
        nodes: node counts (min, desired, max) of this pool.
        capacity: where its capacity comes from; ``null``: the top-level ``capacity``.
        placement_group: Trainium pools: a cluster placement group of its own; ``null``: the
            top-level ``placement_group``. CPU pools never have one.
        efa_interface_layout: Trainium pools: ``efa`` or ``efa-only``; ``null``: the top-level
            one.
        root_volume_gib: each node's root volume, GiB; ``null``: the top-level one.
        neuron_stack: Trainium pools: ``auto``, ``xla`` or ``native``; ``null``:
            ``training_image.neuron_stack``. Each stack in use gets its own training image.
    """

    name: str
    instance_type: str
    nodes: NodeCounts = NodeCounts()
    capacity: CapacityConfig | None = None
    placement_group: bool | None = None
    efa_interface_layout: Literal["efa", "efa-only"] | None = None
    root_volume_gib: int | None = None
    neuron_stack: Literal["auto", "xla", "native"] | None = None


def id_suffix(name: str) -> str:
    """The CloudFormation logical id part of a pool name: ``"cpu-tools"`` -> ``"CpuTools"``."""
    return "".join(part[:1].upper() + part[1:] for part in re.split(r"[^A-Za-z0-9]+", name))


@dataclass(frozen=True)
class Pool:
    """A node pool with every setting resolved.

    Attributes:
        name: the pool's name.
        index: its position (0: the main Trainium pool, which keeps the one-pool resource
            names).
        field: the configuration path of its settings, for messages: ``""`` for the shorthand
            pool (its keys are top-level), else ``"pools[<index>]"``.
        instance_type, nodes, capacity, placement_group, efa_interface_layout,
        root_volume_gib: as configured, or the top-level value.
        neuron_stack_setting: ``auto``, ``xla`` or ``native``, as configured.
    """

    name: str
    index: int
    field: str
    instance_type: str
    nodes: NodeCounts
    capacity: CapacityConfig
    placement_group: bool
    efa_interface_layout: Literal["efa", "efa-only"]
    root_volume_gib: int
    neuron_stack_setting: Literal["auto", "xla", "native"]

    def key(self, name: str) -> str:
        """The configuration path of this pool's setting ``name`` (``"nodes.max"`` ->
        ``"pools[1].nodes.max"``; the shorthand pool's is top-level)."""
        return f"{self.field}.{name}" if self.field else name

    @property
    def instance(self) -> InstanceSpec:
        """Catalog entry of :attr:`instance_type` (Trainium or CPU).

        Raises:
            UnknownInstanceTypeError: in neither catalog (the rules report it first).
        """
        return get_any_instance(self.instance_type)

    @property
    def accelerated(self) -> bool:
        """A Trainium pool (False: a CPU pool)."""
        return self.instance.accelerated

    @property
    def neuron_stack(self) -> NeuronStackName | None:
        """The pool's Neuron training stack (``auto`` resolved for its type,
        :func:`~trn_ultracluster.contracts.neuron_stack.default_stack`); ``None`` for a CPU
        pool, whose jobs run in the main pool's image."""
        if not self.accelerated:
            return None
        chosen = self.neuron_stack_setting
        return default_stack(self.instance) if chosen == "auto" else chosen

    @property
    def uses_placement_group(self) -> bool:
        """Whether its nodes launch into a cluster placement group (the stack's own, or
        ``capacity.placement_group_name``): only Trainium pools with EFA."""
        return self.placement_group and self.instance.supports_efa

    @property
    def id_suffix(self) -> str:
        """What this pool adds to a construct id: nothing for the main pool (index 0, so a
        one-pool stack keeps its logical ids), else :func:`id_suffix` of its name."""
        return "" if self.index == 0 else id_suffix(self.name)


def resolve_pools(pools: tuple[PoolConfig, ...], top: Pool) -> tuple[Pool, ...]:
    """Every node pool with its settings resolved, the main (Trainium) pool first: ``top``,
    the one pool :data:`SHORTHAND_POOL` of the top-level keys, when ``pools`` is empty; else
    the ``pools``, each setting left out taken from ``top``."""
    if not pools:
        return (top,)
    return tuple(
        Pool(p.name, i, f"pools[{i}]", p.instance_type, p.nodes,
             p.capacity if p.capacity is not None else top.capacity,
             top.placement_group if p.placement_group is None else p.placement_group,
             p.efa_interface_layout or top.efa_interface_layout,
             top.root_volume_gib if p.root_volume_gib is None else p.root_volume_gib,
             p.neuron_stack or top.neuron_stack_setting)
        for i, p in enumerate(pools))
