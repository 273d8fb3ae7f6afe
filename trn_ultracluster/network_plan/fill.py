"""Pools placed into the VPC: :func:`plan`, and the largest cluster that fits. Part of :mod:`trn_ultracluster.network_plan` (its docstring describes the plan). Standard library only."""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from trn_ultracluster.network_plan.addresses import (
    CIDR_BLOCKS_MAX,
    NAU_MAX,
    SERVICES_NAU,
    SUBNET_RESERVED_IPS,
    NodeAddresses,
    PlanError,
)
from trn_ultracluster.network_plan.subnets import (
    AddressPlan,
    ComputeSubnet,
    Group,
    PoolPlan,
    _free_chunks,
    candidate_blocks,
    private_mask,
    subnet0_reserve,
)

@dataclass(frozen=True)
class PoolDemand:
    """What one node pool asks of the plan: ``nodes`` (its ``nodes.max``) of ``per_node``
    addresses each, in groups of at most ``group_size`` nodes (450 for an EKS managed node
    group, 6,758 for a HyperPod instance group)."""

    name: str
    nodes: int
    per_node: NodeAddresses
    group_size: int


def _place(demands: Sequence[PoolDemand], room_ips: Sequence[int]) -> list[list[Group]] | None:
    """Place each pool's nodes, pool by pool in order, into subnets of ``room_ips`` free
    addresses, in groups of at most ``group_size`` that stay in one subnet (a node takes
    ``per_node.ips`` addresses of its subnet); ``None`` when they do not fit. A pool of 0
    nodes gets one empty group where its next node would go. With one pool this is
    :func:`split` over ``room // ips`` nodes per subnet."""
    room = list(room_ips)
    subnet = 0
    placed: list[list[Group]] = []
    for demand in demands:
        ips = max(demand.per_node.ips, 1)
        groups: list[Group] = []
        left = demand.nodes
        while left > 0:
            while subnet < len(room) and room[subnet] < ips:
                subnet += 1
            if subnet == len(room):
                return None
            take = min(max(demand.group_size, 1), room[subnet] // ips, left)
            groups.append(Group(take, subnet))
            room[subnet] -= take * ips
            left -= take
        placed.append(groups or [Group(0, min(subnet, max(len(room) - 1, 0)))])
    return placed


def plan(*, vpc_cidr: str, az_count: int, pools: Sequence[PoolDemand] | None = None,
         nodes: int = 0, per_node: NodeAddresses | None = None, group_size: int = 1,
         secondary_cidrs: Sequence[str] | None = None,
         services_nau: int = SERVICES_NAU) -> AddressPlan:
    """The address plan of the node pools ``pools`` (see the module docstring).

    The pools fill the compute subnets in order, the first pool first, so a one-pool
    cluster's plan is the plan it always had, and a pool added at the end never moves the
    groups of the pools before it. Each subnet holds as many nodes as its free addresses
    allow, whatever their pool.

    Args:
        vpc_cidr: the primary block (``/16`` to ``/28``, validated by the config rules).
        az_count: AZ IDs (at least 1).
        pools: what each pool asks (:class:`PoolDemand`), at least one; or, for one pool,
            ``nodes``, ``per_node`` and ``group_size`` (a pool named ``"nodes"``).
        secondary_cidrs: the secondary blocks to use, in order; ``None``: derived as needed
            from :func:`candidate_blocks`, at most ``CIDR_BLOCKS_MAX - 1``.
        services_nau: NAU kept for the rest of the stack.

    Raises:
        PlanError: the VPC cannot address the pools (``limit`` and ``most`` say why and how
            many nodes of the first pool's kind fit), or their NAU is above :data:`NAU_MAX`.
        ValueError: ``pools`` is empty.
    """
    if pools is None and per_node is not None:
        pools = [PoolDemand("nodes", nodes, per_node, group_size)]
    if not pools:
        raise ValueError("plan needs at least one pool")
    primary = ipaddress.ip_network(vpc_cidr)
    mask = private_mask(primary.prefixlen, az_count)
    first = pools[0].per_node
    ips = max(first.ips, 1)
    subnet0 = ipaddress.ip_network((int(primary.network_address), mask))
    free: list[tuple[str, str]] = [(str(c), vpc_cidr)
                                   for c in _free_chunks(primary, az_count, mask)]
    explicit = secondary_cidrs is not None
    blocks = iter(secondary_cidrs if explicit else candidate_blocks(vpc_cidr))
    subnet0_ips = max(0, 2 ** (32 - mask) - SUBNET_RESERVED_IPS - subnet0_reserve(mask))
    cidrs: list[tuple[str, str, int]] = [(str(subnet0), vpc_cidr, subnet0_ips)]
    total = sum(p.nodes for p in pools)

    def usable(cidr: str) -> int:
        return ipaddress.ip_network(cidr).num_addresses - SUBNET_RESERVED_IPS

    while (placed := _place(pools, [room for _, _, room in cidrs])) is None:
        if free:
            cidr, block = free.pop(0)
            cidrs.append((cidr, block, usable(cidr)))
            continue
        block = next(blocks, None)
        secondary = sum(1 for _, b, _ in cidrs if b != vpc_cidr)
        if block is None or (not explicit and secondary >= CIDR_BLOCKS_MAX - 1):
            most = sum(room // ips for _, _, room in cidrs)
            where = ("the secondary blocks given in vpc_secondary_cidrs" if explicit else
                     f"{CIDR_BLOCKS_MAX} CIDR blocks, the most a VPC may have")
            what = (f"{total} nodes of {first.ips} addresses" if len(pools) == 1 else
                    "the pools' " + " + ".join(f"{p.nodes} x {p.per_node.ips} addresses"
                                               for p in pools))
            raise PlanError(f"{what} do not fit {vpc_cidr} and {where}: at most {most} nodes"
                            + ("" if len(pools) == 1 else f" of {first.ips} addresses"),
                            "address space", most)
        cidrs.append((block, block, usable(block)))
    used = max(g.subnet for groups in placed for g in groups) + 1
    subnets = tuple(ComputeSubnet(cidr, block, room // ips) for cidr, block, room in cidrs[:used])
    result = AddressPlan(
        vpc_cidr=vpc_cidr, az_count=az_count, private_mask=mask, nodes=total,
        per_node=first, compute_subnets=subnets,
        secondary_blocks=tuple(dict.fromkeys(s.block for s in subnets if s.block != vpc_cidr)),
        groups=tuple(g for groups in placed for g in groups), services_nau=services_nau,
        pools=tuple(PoolPlan(p.name, p.nodes, p.per_node, tuple(groups))
                    for p, groups in zip(pools, placed, strict=True)))
    if result.nau > NAU_MAX:
        if len(pools) == 1:
            most = max(0, (NAU_MAX - services_nau) // max(first.nau, 1))
            raise PlanError(f"{total} nodes of {first.nau} NAU units ({first.rule}) need "
                            f"{result.nau:,} NAU units, above the {NAU_MAX:,} one VPC may have "
                            f"(Network Address Usage, quota L-BB24F6E5, at its maximum): at "
                            f"most {most} nodes", "nau", most)
        raise PlanError(_pools_nau_message(result, pools), "nau")
    return result


def _pools_nau_message(result: AddressPlan, pools: Sequence[PoolDemand]) -> str:
    """Why several pools need more NAU than a VPC may have, and by how much: the excess and
    how many fewer nodes of the pool that takes the most NAU would fit."""
    excess = result.nau - NAU_MAX
    big = max(pools, key=lambda p: p.nodes * p.per_node.nau)
    fewer = -(-excess // max(big.per_node.nau, 1))
    return (f"{result.nodes} nodes ({result.per_pool_rule}) need {result.nau:,} NAU units, "
            f"above the {NAU_MAX:,} one VPC may have (Network Address Usage, quota L-BB24F6E5, "
            f"at its maximum): {excess:,} too many, e.g. {fewer:,} fewer nodes in pool "
            f"{big.name!r} ({big.per_node.nau} NAU each)")


def largest_cluster(fits: Callable[[int], bool], upper: int) -> int:
    """The largest ``n`` in ``0..upper`` for which ``fits(n)`` holds, ``fits`` being
    monotonic (true up to some count, false above it): a binary search."""
    lo, hi = 0, upper
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo


DOC_EKS_NEW_BLOCK = ("https://docs.aws.amazon.com/eks/latest/userguide/network-reqs.html"
                     "#network-requirements-vpc")
"""EKS user guide, "View Amazon EKS networking requirements for VPC and subnets", "VPC
requirements and considerations"."""
EKS_NEW_BLOCK_RECOGNIZED_WITHIN = "up to one hour"
""""You can add nodes that use the new CIDR block immediately after you add it. However,
because the control plane recognizes the new CIDR block only after the reconciliation is
complete, it can take a cluster up to one hour for a CIDR block that you associated with a VPC
to be recognized. Then you can run the ``kubectl attach``, ``kubectl cp``, ``kubectl exec``,
``kubectl logs``, and ``kubectl port-forward`` commands (these commands use the ``kubelet
API``) for nodes and pods in the new CIDR block. Also, if you have Pods that operate as a
webhook backend, then you must wait for the control plane reconciliation to complete"
(:data:`DOC_EKS_NEW_BLOCK`; read from awsdocs/amazon-eks-user-guide,
``latest/ug/networking/network-reqs.adoc``)."""


def new_block_warning(blocks: Sequence[str]) -> str:
    """What associating ``blocks`` (new secondary CIDR blocks, e.g. the ``CidrBlock`` of each
    ``AWS::EC2::VPCCidrBlock`` a change adds) does to a running EKS cluster (orchestrators
    ``eks`` and ``hyperpod-eks``), one sentence with its source, for the ``plan`` command and
    ``make deploy`` to print before a deploy that adds one.

    A fresh deploy does not need it: the cluster (``AWS::EKS::Cluster``) depends on every
    block, so each is associated before the control plane is created. On a running cluster the
    blocks are created in the update and the control plane recognizes them later.

    Raises:
        ValueError: ``blocks`` is empty (nothing to warn about).
    """
    if not blocks:
        raise ValueError("new_block_warning needs at least one new CIDR block")
    listed = ", ".join(blocks)
    one = len(blocks) == 1
    return (f"This deploy associates {'a new CIDR block' if one else 'new CIDR blocks'} "
            f"({listed}) with the VPC of a running EKS cluster: its nodes join at once, but "
            f"the control plane recognizes {'the block' if one else 'each block'} only after "
            f"its reconciliation, which takes {EKS_NEW_BLOCK_RECOGNIZED_WITHIN}; until then "
            "kubectl attach, cp, exec, logs and port-forward fail for nodes and pods in it, "
            "and so do webhooks served by pods in it (EKS user guide, \"VPC requirements and "
            f"considerations\": {DOC_EKS_NEW_BLOCK})")
