"""What a configuration needs of each account quota (:data:`~trn_ultracluster.contracts.quotas.QUOTAS`),
counted from its address plan over every node pool: ``preflight`` compares it with the
account's applied values, the estimate with AWS's defaults."""

from __future__ import annotations

from collections.abc import Callable

from trn_ultracluster.config.model import ClusterConfig, Pool
from trn_ultracluster.contracts.quotas import QUOTAS, QuotaNeed

__all__ = ["quota_needs"]


def _need(key: str, need: int, why: str, **name: str) -> QuotaNeed:
    quota = QUOTAS[key]
    return QuotaNeed(quota, need, why, quota.name.format(**name))


def _per_pool(c: ClusterConfig, pools: list[Pool], each: Callable[[Pool], str],
              unit: str) -> str:
    """``"trn1: 2 x 24 + cpu: 2 x 2 <unit>"``: one term per pool, for a ``why``."""
    return " + ".join(f"{p.name}: {each(p)}" for p in pools) + f" {unit}"


def quota_needs(c: ClusterConfig) -> list[QuotaNeed]:
    """The quotas ``c`` needs with every pool at its ``nodes.max``, in a fixed order.

    - every orchestrator: NAU (``AddressPlan.nau``), CIDR blocks (``AddressPlan.cidr_blocks``)
      and network interfaces of the compute AZ (``AddressPlan.interfaces``), over every pool;
    - ``eks``: nodes per managed node group (the largest group of the plan) and node groups
      per cluster (every pool's groups and the system node group);
    - ``eks`` and ``standalone``: the On-Demand vCPUs of each instance family's quota
      (``InstanceSpec.vcpu_quota``: ``trn_vcpus`` for Trainium pools, which share it,
      ``standard_vcpus`` for CPU pools), ``nodes.max`` x the catalog's vCPUs summed over the
      pools of that quota, except pools on a Capacity Block, whose instances come from the
      block and which the stack has always left out (that a Capacity Block's instances do
      not count against the On-Demand quota is not verified: no AWS page read here says
      either). The EKS system node group's instances (``eks.system_instance_type``) are
      Standard instances too and are not counted;
    - ``hyperpod-*``: SageMaker "ml.<type> for cluster usage" for each pool type (the
      instances of the worker groups of its pools);
    - an FSx ``PERSISTENT_2`` file system: its GiB against the Region's Persistent_2 quota;
    - nothing for the training image builds: with several Neuron stacks the stack builds
      their images one after the other (``stacks/cluster.py``), so one CodeBuild build runs
      at a time as with one image.

    Without ``pools`` each ``why`` reads as it always did (one pool, no names); with pools it
    names each pool's part.

    Raises:
        trn_ultracluster.network_plan.PlanError: the VPC cannot address the pools (a
            configuration that passed its rules always can).
    """
    plan, pools = c.address_plan, list(c.node_pools)
    az = c.compute_az_id
    if not c.pools:
        per, nodes = c.node_addresses, f"{c.nodes.max:,} nodes"
        nau_why = f"{nodes} x {per.nau} NAU ({per.rule})"
        eni_why = f"{nodes} x {per.interfaces} interfaces in {az}"
        groups_why = f"{len(plan.groups)} Trainium node groups"
    else:
        nau_why = _per_pool(c, pools, lambda p: f"{p.nodes.max:,} x {c.pool_addresses(p).nau} "
                            f"({c.pool_addresses(p).rule})", "NAU")
        eni_why = _per_pool(c, pools, lambda p: f"{p.nodes.max:,} x "
                            f"{c.pool_addresses(p).interfaces}", f"interfaces in {az}")
        groups_why = _per_pool(c, pools, lambda p: f"{len(plan.pool(p.name).groups)}",
                               "node groups")
    needs = [
        _need("vpc_network_address_usage", plan.nau,
              f"{nau_why} + {plan.services_nau:,} for the rest"),
        _need("vpc_cidr_blocks", plan.cidr_blocks,
              f"the primary and {len(plan.secondary_blocks)} secondary blocks"),
        _need("network_interfaces", plan.interfaces, eni_why),
    ]
    if c.orchestrator == "eks":
        needs += [
            _need("eks_nodes_per_nodegroup", max((g.nodes for g in plan.groups), default=0),
                  f"the largest of {len(plan.groups)} "
                  + ("Trainium node groups" if not c.pools else "node groups of the pools")),
            _need("eks_nodegroups_per_cluster", len(plan.groups) + 1,
                  f"{groups_why} + the system node group"),
        ]
    if c.orchestrator.startswith("hyperpod"):
        needs += _hyperpod_needs(c)
    else:
        needs += _vcpu_needs(c)
    if c.fsx.deployment_type == "PERSISTENT_2":
        needs.append(_need("fsx_lustre_persistent_2_gib", c.fsx.storage_capacity_gib,
                           "fsx.storage_capacity_gib"))
    return needs


def _vcpu_needs(c: ClusterConfig) -> list[QuotaNeed]:
    """One need per vCPU quota the pools count against (Capacity Block pools left out), in
    :data:`QUOTAS` order: ``trn_vcpus`` before ``standard_vcpus``."""
    by_quota: dict[str, list[Pool]] = {}
    for pool in c.node_pools:
        if pool.capacity.type != "capacity-block":
            by_quota.setdefault(pool.instance.vcpu_quota, []).append(pool)
    needs = []
    for key in (k for k in QUOTAS if k in by_quota):
        pools = by_quota[key]
        total = sum(p.nodes.max * p.instance.vcpus for p in pools)
        if not c.pools:
            (pool,) = pools
            why = f"{pool.nodes.max:,} nodes x {pool.instance_type} x {pool.instance.vcpus} vCPUs"
        else:
            why = _per_pool(c, pools, lambda p: f"{p.nodes.max:,} x {p.instance_type} x "
                            f"{p.instance.vcpus}", "vCPUs")
        needs.append(_need(key, total, why))
    return needs


def _hyperpod_needs(c: ClusterConfig) -> list[QuotaNeed]:
    """SageMaker "ml.<type> for cluster usage": one need per instance type of the worker
    groups, their instances summed, in pool order."""
    counts = c.hyperpod_worker_counts
    by_type: dict[str, list[str]] = {}
    for group, pool in c.hyperpod_worker_groups:
        by_type.setdefault(pool.instance_type, []).append(group.name)
    needs = []
    for itype, groups in by_type.items():
        spec = c.pool(next(p.name for g, p in c.hyperpod_worker_groups
                           if p.instance_type == itype)).instance
        why = (f"{len(groups)} worker groups" if not c.pools else
               f"the worker group{'s' if len(groups) > 1 else ''} of pool"
               f"{'s' if len(groups) > 1 else ''} {', '.join(groups)}")
        needs.append(_need("hyperpod_instances", sum(counts[g] for g in groups), why,
                           ml_type=spec.hyperpod_instance_type or itype))
    return needs
