"""Rules of scale: the address plan fits the VPC, the account's quotas hold the cluster, the
EKS control plane and the file system keep up (docs/scale.md).

An error is what no quota increase can fix (the VPC's NAU maximum, 50 CIDR blocks, a quota
value above AWS's maximum); a warning names a quota the account must raise first, with its
code: the template is fine, and ``trn-ultracluster preflight`` checks the account's values.
"""

from __future__ import annotations

from collections.abc import Iterator

from trn_ultracluster import network_plan
from trn_ultracluster.config.errors import ConfigIssue
from trn_ultracluster.config.facts import (
    CAPACITY_BLOCK_MAX_INSTANCES,
    DOC_CAPACITY_BLOCKS,
    DOC_EKS_PCP,
    DOC_EKS_QUOTAS,
    DOC_EKS_ULTRA,
    DOC_FSX_THROUGHPUT,
    DOC_HYPERPOD_GROUP,
    DOC_NAU,
    DOC_VPC_CNI,
    DOC_VPC_QUOTAS,
    FSX_MIN_MB_S_PER_NODE,
    K8S_TESTED_NODES,
    MAX_NODES,
    POD_IPS_RANGE,
    RESTART_READ_GB,
    TRAINING_PLAN_MAX_INSTANCES,
)
from trn_ultracluster.config.model import ClusterConfig, Pool
from trn_ultracluster.config.quota_needs import quota_needs
from trn_ultracluster.config.rules.network import valid_blocks
from trn_ultracluster.config.rules.pool_keys import capacity_key
from trn_ultracluster.contracts.catalog import CATALOG, CPU_CATALOG
from trn_ultracluster.contracts.quotas import QUOTAS

__all__ = ["address_plan", "capacity_at_scale", "control_plane", "file_system_throughput",
           "plannable", "quotas"]

_EKS = ("eks", "hyperpod-eks")


def _raise(key: str, need: int, why: str) -> str:
    q = QUOTAS[key]
    upto = f", up to {q.maximum:,}" if q.maximum else ""
    return (f"should be at least {need:,} for {why}: request it (Service Quotas {q.service} "
            f"{q.code}, '{q.name}'{upto}), then set quotas.{key}; `trn-ultracluster preflight` "
            f"checks the account")


def quotas(c: ClusterConfig) -> Iterator[ConfigIssue]:
    """Each quota value is positive and at most what AWS grants."""
    for key, value in c.quotas.model_dump().items():
        q = QUOTAS[key]
        if value < 1:
            yield ConfigIssue(f"quotas.{key}", value, "must be at least 1",
                              DOC_EKS_QUOTAS if q.service == "eks" else DOC_VPC_QUOTAS)
        elif q.maximum is not None and value > q.maximum:
            yield ConfigIssue(f"quotas.{key}", value,
                              f"must be at most {q.maximum:,}, the most AWS grants "
                              f"({q.service} {q.code}, '{q.name}')", DOC_VPC_QUOTAS)
    lo, hi = POD_IPS_RANGE
    if not lo <= c.eks.pod_ips_per_node <= hi:
        yield ConfigIssue("eks.pod_ips_per_node", c.eks.pod_ips_per_node,
                          f"must be between {lo} and {hi}", DOC_VPC_CNI)


def plannable(c: ClusterConfig) -> bool:
    """Whether the fields the address plan reads are valid (their own rules report them
    otherwise), so that ``c.address_plan`` either plans or raises ``PlanError``: every
    pool's ``nodes.max`` and type (a Trainium or, in ``pools``, a CPU type; the main pool's
    a Trainium one), the pool names
    unique (the plan finds a pool by name), the AZ IDs, the blocks, the pod addresses and
    the group sizes."""
    q = c.quotas
    known = (CATALOG.keys() | CPU_CATALOG.keys()) if c.pools else CATALOG.keys()
    names = [p.name for p in c.node_pools]
    return (c.instance_type in CATALOG  # the main pool (pools.pool_types: a Trainium type)
            and all(1 <= p.nodes.max <= MAX_NODES and p.instance_type in known
                    for p in c.node_pools)
            and len(set(names)) == len(names) and c.nodes_max <= MAX_NODES
            and len(c.az_ids) >= 1 and valid_blocks(c)
            and POD_IPS_RANGE[0] <= c.eks.pod_ips_per_node <= POD_IPS_RANGE[1]
            and q.eks_nodes_per_nodegroup >= 1
            and all(c.worker_group_count(g) >= 0 for g in c.hyperpod.worker_groups))


def address_plan(c: ClusterConfig) -> Iterator[ConfigIssue]:
    """The VPC addresses every pool's ``nodes.max`` nodes (an error names the limit and how
    many fit); the account's NAU, CIDR block, network interface and node group quotas hold
    them (a warning names the quota to raise)."""
    if not plannable(c):
        return  # reported by their own rules
    try:
        needs = quota_needs(c)  # plans the cluster
    except network_plan.PlanError as err:
        yield _plan_error(c, err)
        return
    configured = c.quotas.model_dump()
    for need in needs:
        key = need.quota.key
        if key in configured and need.need > configured[key]:
            yield ConfigIssue(f"quotas.{key}", configured[key], _raise(key, need.need, need.why),
                              DOC_NAU if key == "vpc_network_address_usage" else
                              DOC_EKS_QUOTAS if need.quota.service == "eks" else DOC_VPC_QUOTAS,
                              severity="warning")


def _plan_error(c: ClusterConfig, err: network_plan.PlanError) -> ConfigIssue:
    """The error of a plan that does not fit: on ``nodes.max`` (``pools`` with pools) past
    the NAU maximum, else on the block that runs out of addresses."""
    if err.limit == "nau":
        if not c.pools:
            return ConfigIssue("nodes.max", c.nodes.max, f"must fit one VPC: {err}", DOC_NAU)
        return ConfigIssue("pools", {p.name: p.nodes.max for p in c.node_pools},
                           f"must fit one VPC with their nodes.max: {err}", DOC_NAU)
    explicit = c.vpc_secondary_cidrs is not None
    field = "vpc_secondary_cidrs" if explicit and err.most else "vpc_cidr"
    value = list(c.vpc_secondary_cidrs or ()) if field != "vpc_cidr" else c.vpc_cidr
    more = "add blocks" if explicit else "use a /16"
    if not c.pools:
        per = c.node_addresses
        advice = ("use a larger block (a /16 at most)" if not err.most else
                  f"lower nodes.max to {err.most} or {more}")
        return ConfigIssue(field, value,
                           f"must address nodes.max = {c.nodes.max} nodes of {per.ips} "
                           f"addresses ({per.rule}): {err}; {advice}", DOC_VPC_QUOTAS)
    pools = "; ".join(f"{p.key('nodes.max')} = {p.nodes.max} nodes of "
                      f"{c.pool_addresses(p).ips} addresses ({c.pool_addresses(p).rule})"
                      for p in c.node_pools)
    advice = ("use a larger block (a /16 at most)" if not err.most else
              f"lower the pools' nodes.max or {more}")
    return ConfigIssue(field, value, f"must address every pool ({pools}): {err}; {advice}",
                       DOC_VPC_QUOTAS)


def control_plane(c: ClusterConfig) -> Iterator[ConfigIssue]:
    """Past Kubernetes' 5,000 nodes (every pool's together) an EKS cluster is "ultra scale",
    which AWS enables; the tier only applies to the EKS orchestrators."""
    if c.orchestrator in _EKS and c.nodes_max > K8S_TESTED_NODES:
        field, what = (("nodes.max", "") if not c.pools else
                       ("pools", f" (the pools' nodes.max together: {c.nodes_max:,})"))
        yield ConfigIssue(
            field, c.nodes_max if not c.pools else {p.name: p.nodes.max for p in c.node_pools},
            f"should be at most {K8S_TESTED_NODES:,} on one Kubernetes cluster{what} (Kubernetes' "
            f"tested limit): EKS runs up to 100,000 nodes as an ultra scale cluster, which AWS "
            f"sets up with you (ask your account team), on a Provisioned Control Plane tier "
            f"(eks.control_plane_tier; above tier-4xl also through the account team, "
            f"{DOC_EKS_PCP})", DOC_EKS_ULTRA, severity="warning")
    if c.orchestrator not in _EKS and c.eks.control_plane_tier != "standard":
        yield ConfigIssue("eks.control_plane_tier", c.eks.control_plane_tier,
                          f"should be left out with orchestrator {c.orchestrator!r}, which has "
                          "no EKS cluster", DOC_EKS_PCP, severity="warning")


def capacity_at_scale(c: ClusterConfig) -> Iterator[ConfigIssue]:
    """A Capacity Block holds at most 64 instances and a training plan's reserved capacity
    256: the stack takes one of each, so more nodes than that cannot all launch into it. With
    pools, each pool on a Capacity Block, and the pools that share one block together."""
    most = CAPACITY_BLOCK_MAX_INSTANCES
    blocks: dict[str, list[Pool]] = {}
    for pool in c.node_pools:
        if pool.capacity.type != "capacity-block":
            continue
        blocks.setdefault(pool.capacity.reservation_id or "", []).append(pool)
        if pool.nodes.max > most:
            yield ConfigIssue(
                pool.key("nodes.max"), pool.nodes.max,
                f"should be at most {most} with {capacity_key(c, pool, 'type')} "
                f"'capacity-block': one Capacity Block holds up to {most} instances (and an "
                f"account up to 256 across blocks), and the stack targets one; run larger "
                f"clusters on a Capacity Reservation or On-Demand", DOC_CAPACITY_BLOCKS,
                severity="warning")
    for rid, pools in blocks.items():
        total = sum(p.nodes.max for p in pools)
        if len(pools) > 1 and total > most and all(p.nodes.max <= most for p in pools):
            yield ConfigIssue(
                capacity_key(c, pools[-1], "reservation_id"), rid,
                f"should hold the pools that share it: {', '.join(p.name for p in pools)} "
                f"take up to {total} instances together, and one Capacity Block holds up to "
                f"{most}", DOC_CAPACITY_BLOCKS, severity="warning")
    if c.orchestrator.startswith("hyperpod") and c.hyperpod.training_plan_arn is not None:
        for i, (group, pool) in enumerate(c.hyperpod_worker_groups):
            count = c.worker_group_count(group)
            if count > TRAINING_PLAN_MAX_INSTANCES:
                yield ConfigIssue(
                    pool.key("nodes.desired") if c.pools
                    else f"hyperpod.worker_groups[{i}].instance_count", count,
                    f"should be at most {TRAINING_PLAN_MAX_INSTANCES} with "
                    f"hyperpod.training_plan_arn: a training plan's reserved capacity holds up "
                    f"to {TRAINING_PLAN_MAX_INSTANCES} instances", DOC_HYPERPOD_GROUP,
                    severity="warning")


def file_system_throughput(c: ClusterConfig) -> Iterator[ConfigIssue]:
    """The file system's throughput (capacity x per-unit throughput) over every pool's
    ``nodes.max`` (its clients: every node mounts it) is at least
    :data:`~trn_ultracluster.config.facts.FSX_MIN_MB_S_PER_NODE`."""
    aggregate, nodes = c.fsx.throughput_mb_s, c.nodes_max
    if aggregate is None or aggregate <= 0 or nodes < 1:
        return  # no capacity: fsx.storage_capacity_gib's own rule reports it
    share = aggregate / nodes
    if share < FSX_MIN_MB_S_PER_NODE:
        minutes = RESTART_READ_GB * 1000 / share / 60
        need = FSX_MIN_MB_S_PER_NODE * nodes
        yield ConfigIssue(
            "fsx.storage_capacity_gib", c.fsx.storage_capacity_gib,
            f"should give each of the {nodes:,} nodes at least {FSX_MIN_MB_S_PER_NODE} "
            f"MB/s, not {share:.1f}: {c.fsx.storage_capacity_gib:,} GiB x "
            f"{c.fsx.per_unit_storage_throughput} MB/s/TiB is {aggregate:,.0f} MB/s in all, "
            f"so a restart that reads {RESTART_READ_GB} GB on every node waits {minutes:,.0f} "
            f"minutes; raise the capacity or fsx.per_unit_storage_throughput to at least "
            f"{need:,} MB/s in all", DOC_FSX_THROUGHPUT, severity="warning")
