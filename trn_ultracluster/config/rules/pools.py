"""Rules of ``pools``: names, types, the main pool, and the settings a CPU pool cannot have.

The per-pool rules of the nodes themselves (counts, UltraServers, EFA) are in
:mod:`.compute`; they run for every pool, the one-pool shorthand included.
"""

from __future__ import annotations

from collections.abc import Iterator

from trn_ultracluster.config.errors import ConfigIssue, one_of
from trn_ultracluster.config.facts import DOC_CAPACITY_BLOCKS, DOC_PLACEMENT, DOC_POOLS
from trn_ultracluster.config.model import ClusterConfig, HyperPodConfig
from trn_ultracluster.config.model.pools import POOL_NAME_MAX, POOL_NAME_PATTERN, id_suffix
from trn_ultracluster.contracts.catalog import CATALOG, CPU_CATALOG

__all__ = ["cpu_pool_settings", "pool_names", "pool_types", "pools_replace_shorthand"]


def pool_names(c: ClusterConfig) -> Iterator[ConfigIssue]:
    """Each name matches :data:`~trn_ultracluster.config.model.pools.POOL_NAME_PATTERN`
    (it becomes a partition, node group, label value, instance group name and logical id
    part), is at most :data:`POOL_NAME_MAX` characters and unique, also as a logical id
    part (``a-b`` and ``ab`` differ, ``a-b`` and ``a--b`` would not)."""
    seen: dict[str, str] = {}
    for i, pool in enumerate(c.pools):
        field = f"pools[{i}].name"
        if not POOL_NAME_PATTERN.match(pool.name) or len(pool.name) > POOL_NAME_MAX:
            yield ConfigIssue(
                field, pool.name,
                f"must be 1 to {POOL_NAME_MAX} lowercase letters, digits and hyphens, starting "
                "with a letter and not ending with a hyphen (it names the pool's Slurm "
                "partition, EKS node groups, Kubernetes label and HyperPod instance groups)",
                DOC_POOLS)
            continue
        key = id_suffix(pool.name).lower()
        if key in seen:
            yield ConfigIssue(field, pool.name,
                              f"must be unique: {seen[key]!r} is already a pool name"
                              + ("" if seen[key] == pool.name else " (the two make the same "
                                 "resource names)"), DOC_POOLS)
        seen[key] = pool.name


def pool_types(c: ClusterConfig) -> Iterator[ConfigIssue]:
    """Each pool's type is in the Trainium or the CPU catalog; the first is Trainium (the
    main pool: it keeps the one-pool resource names, its Neuron stack is the main image's)."""
    for i, pool in enumerate(c.pools):
        if pool.instance_type not in CATALOG and pool.instance_type not in CPU_CATALOG:
            yield ConfigIssue(
                f"pools[{i}].instance_type", pool.instance_type,
                f"must be a Trainium type ({one_of(sorted(CATALOG))}) or a CPU type "
                f"({one_of(sorted(CPU_CATALOG))})", DOC_POOLS)
    if c.pools and c.pools[0].instance_type in CPU_CATALOG:
        yield ConfigIssue(
            "pools[0].instance_type", c.pools[0].instance_type,
            f"must be a Trainium type ({one_of(sorted(CATALOG))}): the first pool is the "
            "cluster's main Trainium pool; put CPU pools after it", DOC_POOLS)


def pools_replace_shorthand(c: ClusterConfig) -> Iterator[ConfigIssue]:
    """With ``pools``, the top-level ``instance_type`` and ``nodes`` are the first pool's (the
    model copies them); a different value there is a second, conflicting answer. HyperPod's
    ``worker_groups`` are the pools then (one worker group and partition per pool)."""
    if not c.pools:
        return
    first = c.pools[0]
    if c.instance_type != first.instance_type:
        yield ConfigIssue("instance_type", c.instance_type,
                          f"must be left out with pools (the first pool's type, "
                          f"{first.instance_type!r}, is the main one)", DOC_POOLS)
    if c.nodes != first.nodes:
        yield ConfigIssue("nodes", c.nodes.model_dump(),
                          "must be left out with pools (each pool has its own nodes)",
                          DOC_POOLS)
    if c.hyperpod.worker_groups != HyperPodConfig().worker_groups:
        yield ConfigIssue("hyperpod.worker_groups", [g.name for g in c.hyperpod.worker_groups],
                          "must be left out with pools: each pool is one HyperPod worker group "
                          "and a Slurm partition of its name", DOC_POOLS)


def cpu_pool_settings(c: ClusterConfig) -> Iterator[ConfigIssue]:
    """A CPU pool has no EFA, no NeuronCores and no Capacity Block: a placement group, an EFA
    layout or a Neuron stack set on one is a Trainium-only setting in the wrong place, and
    Capacity Blocks for ML sell accelerated instances only (EC2 API reference,
    ``CapacityBlock``: "Reserve powerful GPU instances on a future date to support your short
    duration machine learning (ML) workloads", and UltraServers; ``PurchaseCapacityBlock``:
    "you ensure GPU capacity is available for machine learning (ML) workloads"; the EC2 user
    guide's list of the types offered as Capacity Blocks was not read here)."""
    for i, pool in enumerate(c.pools):
        if pool.instance_type not in CPU_CATALOG:
            continue
        wrong = {"placement_group": pool.placement_group is True,
                 "efa_interface_layout": pool.efa_interface_layout is not None,
                 "neuron_stack": pool.neuron_stack is not None}
        for key, bad in wrong.items():
            if bad:
                yield ConfigIssue(
                    f"pools[{i}].{key}", getattr(pool, key),
                    f"must be left out for the CPU type {pool.instance_type}: it is a Trainium "
                    "setting (EFA, placement group, Neuron stack)",
                    DOC_PLACEMENT if key == "placement_group" else DOC_POOLS)
        capacity = pool.capacity if pool.capacity is not None else c.capacity
        if capacity.type == "capacity-block":
            field = (f"pools[{i}].capacity.type" if pool.capacity is not None
                     else "capacity.type")
            fix = ("set it to on-demand" if pool.capacity is not None else
                   "give the pool its own capacity: {type: on-demand}")
            yield ConfigIssue(
                field, "capacity-block",
                f"must not be capacity-block for the CPU pool {pool.name!r} "
                f"({pool.instance_type}): Capacity Blocks for ML hold accelerated instances "
                f"only; {fix}", DOC_CAPACITY_BLOCKS)
