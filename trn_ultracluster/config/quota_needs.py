"""What a configuration needs of each account quota (:data:`~trn_ultracluster.contracts.quotas.QUOTAS`),
counted from its address plan: ``preflight`` compares it with the account's applied values,
the estimate with AWS's defaults."""

from __future__ import annotations

from trn_ultracluster.config.model import ClusterConfig
from trn_ultracluster.contracts.quotas import QUOTAS, QuotaNeed

__all__ = ["quota_needs"]


def _need(key: str, need: int, why: str, **name: str) -> QuotaNeed:
    quota = QUOTAS[key]
    return QuotaNeed(quota, need, why, quota.name.format(**name))


def quota_needs(c: ClusterConfig) -> list[QuotaNeed]:
    """The quotas ``c`` needs at ``nodes.max``, in a fixed order.

    - every orchestrator: NAU (``AddressPlan.nau``), CIDR blocks (``AddressPlan.cidr_blocks``)
      and network interfaces of the compute AZ (``AddressPlan.interfaces``);
    - ``eks``: nodes per managed node group (the largest group of the plan) and node groups
      per cluster (the plan's groups and the system node group);
    - ``eks`` and ``standalone``: the On-Demand Trn vCPUs (``nodes.max`` x the catalog's
      vCPUs), except with a Capacity Block, whose instances come from the block;
    - ``hyperpod-*``: SageMaker "ml.<type> for cluster usage" (the worker groups' instances);
    - an FSx ``PERSISTENT_2`` file system: its GiB against the Region's Persistent_2 quota.

    Raises:
        trn_ultracluster.network_plan.PlanError: the VPC cannot address ``nodes.max`` nodes
            (a configuration that passed its rules always can).
    """
    plan, per = c.address_plan, c.node_addresses
    nodes = f"{c.nodes.max:,} nodes"
    needs = [
        _need("vpc_network_address_usage", plan.nau,
              f"{nodes} x {per.nau} NAU ({per.rule}) + {plan.services_nau:,} for the rest"),
        _need("vpc_cidr_blocks", plan.cidr_blocks,
              f"the primary and {len(plan.secondary_blocks)} secondary blocks"),
        _need("network_interfaces", plan.interfaces,
              f"{nodes} x {per.interfaces} interfaces in {c.compute_az_id}"),
    ]
    if c.orchestrator == "eks":
        needs += [
            _need("eks_nodes_per_nodegroup", max((g.nodes for g in plan.groups), default=0),
                  f"the largest of {len(plan.groups)} Trainium node groups"),
            _need("eks_nodegroups_per_cluster", len(plan.groups) + 1,
                  f"{len(plan.groups)} Trainium node groups + the system node group"),
        ]
    spec = c.instance
    if c.orchestrator.startswith("hyperpod"):
        workers = sum(c.hyperpod_worker_counts.values())
        needs.append(_need("hyperpod_instances", workers,
                           f"{len(c.hyperpod_worker_counts)} worker groups",
                           ml_type=spec.hyperpod_instance_type or c.instance_type))
    elif c.capacity.type != "capacity-block":
        needs.append(_need("trn_vcpus", c.nodes.max * spec.vcpus,
                           f"{nodes} x {spec.name} x {spec.vcpus} vCPUs"))
    if c.fsx.deployment_type == "PERSISTENT_2":
        needs.append(_need("fsx_lustre_persistent_2_gib", c.fsx.storage_capacity_gib,
                           "fsx.storage_capacity_gib"))
    return needs
