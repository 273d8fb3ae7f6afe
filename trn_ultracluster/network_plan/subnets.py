"""The plan's subnets and groups, and how nodes are split into them. Part of :mod:`trn_ultracluster.network_plan` (its docstring describes the plan). Standard library only."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from trn_ultracluster.network_plan.addresses import (
    _NO_10_0_16,
    _RANGES,
    _SHARED,
    BLOCK_MASK,
    MIN_PRIVATE_SUBNET_MASK,
    PUBLIC_SUBNET_MASK,
    SERVICES_NAU,
    NodeAddresses,
    PlanError,
)

@dataclass(frozen=True)
class ComputeSubnet:
    """One compute subnet of the plan.

    Attributes:
        cidr: its block, e.g. ``"10.1.0.0/16"``.
        block: the VPC CIDR block that holds it (``vpc_cidr`` or a secondary block).
        capacity: nodes of the first pool it holds (its addresses, less the reserved ones,
            over that pool's :attr:`NodeAddresses.ips`).
    """

    cidr: str
    block: str
    capacity: int


@dataclass(frozen=True)
class Group:
    """A group of nodes in one subnet: ``nodes`` at most, in compute subnet ``subnet``."""

    nodes: int
    subnet: int


@dataclass(frozen=True)
class PoolPlan:
    """One node pool in the plan: ``nodes`` nodes of ``per_node`` addresses, in ``groups``
    (each in one compute subnet, in fill order)."""

    name: str
    nodes: int
    per_node: NodeAddresses
    groups: tuple[Group, ...]


@dataclass(frozen=True)
class AddressPlan:
    """The plan of one cluster (see the module docstring for the layout).

    Attributes:
        vpc_cidr: the primary block.
        az_count: AZ IDs.
        private_mask: prefix length of the primary block's private subnets.
        nodes: nodes the plan holds (every pool's ``nodes.max``).
        per_node: what one node of the first pool takes.
        compute_subnets: the compute subnets the nodes use, subnet 0 first.
        secondary_blocks: the secondary CIDR blocks they need.
        groups: every pool's node groups, in fill order (the first pool's first).
        services_nau: NAU kept for the rest of the stack (:data:`SERVICES_NAU`).
        pools: each pool's nodes, addresses and groups (:class:`PoolPlan`), in order.
    """

    vpc_cidr: str
    az_count: int
    private_mask: int
    nodes: int
    per_node: NodeAddresses
    compute_subnets: tuple[ComputeSubnet, ...]
    secondary_blocks: tuple[str, ...]
    groups: tuple[Group, ...]
    services_nau: int = SERVICES_NAU
    pools: tuple[PoolPlan, ...] = ()

    def pool(self, name: str) -> PoolPlan:
        """The plan of pool ``name``.

        Raises:
            KeyError: no pool of that name.
        """
        for pool in self.pools:
            if pool.name == name:
                return pool
        raise KeyError(name)

    @property
    def per_pool_rule(self) -> str:
        """How the pools' nodes take addresses, for messages: ``"<n> x <NAU> NAU (<rule>)"``
        per pool, joined with ``" + "``."""
        return " + ".join(f"{p.nodes:,} x {p.per_node.nau} NAU ({p.per_node.rule})"
                          for p in self.pools)

    @property
    def nau(self) -> int:
        """NAU units of the whole cluster at ``nodes`` nodes (every pool at its ``nodes.max``)."""
        return sum(p.nodes * p.per_node.nau for p in self.pools) + self.services_nau

    @property
    def cidr_blocks(self) -> int:
        """VPC CIDR blocks, the primary included."""
        return 1 + len(self.secondary_blocks)

    @property
    def interfaces(self) -> int:
        """Network interfaces of every pool's nodes at ``nodes`` nodes."""
        return sum(p.nodes * p.per_node.interfaces for p in self.pools)

    @property
    def nodes_beside_file_system(self) -> int:
        """Nodes in subnets of the file system's block (the primary, at most a /16): the
        clients EFA-enabled FSx for Lustre can serve ("Use the same Availability Zone and /16
        CIDR as your EFA-enabled client instances", FSx for Lustre user guide, "Working with
        EFA-enabled file systems")."""
        return sum(g.nodes for g in self.groups
                   if self.compute_subnets[g.subnet].block == self.vpc_cidr)


def _fits(vpc_prefix: int, az_count: int, mask: int) -> bool:
    need = az_count * (2 ** (32 - mask) + 2 ** (32 - PUBLIC_SUBNET_MASK))
    return need <= 2 ** (32 - vpc_prefix)


def private_mask(vpc_prefix: int, az_count: int) -> int:
    """Prefix length of the primary block's private subnets: /20 where the VPC holds
    ``az_count`` of them and the public /24s, else the largest that fits.

    Raises:
        PlanError: not even a /28 private subnet per AZ fits.
    """
    for mask in range(MIN_PRIVATE_SUBNET_MASK, 29):
        if _fits(vpc_prefix, az_count, mask):
            return mask
    raise PlanError(f"a /{vpc_prefix} VPC cannot hold a private subnet and a "
                    f"/{PUBLIC_SUBNET_MASK} public one in each of {az_count} AZs",
                    "address space", 0)


def subnet0_reserve(mask: int) -> int:
    """Addresses of compute subnet 0 kept for the file system's interfaces, the EKS control
    plane's and the system nodes: a sixteenth of the subnet (256 of a /20), a design margin
    (FSx for Lustre does not publish how many interfaces a file system of a given size uses)."""
    return 2 ** (32 - mask) // 16


def candidate_blocks(vpc_cidr: str) -> Iterator[str]:
    """Secondary /16 blocks the VPC may take, in the order the plan uses them: the /16s of
    the primary's own private range after the primary (wrapping around), then those of
    100.64.0.0/10; never one that overlaps the primary or that the association rules
    forbid (:data:`_NO_10_0_16`)."""
    primary = ipaddress.ip_network(vpc_cidr)
    home = next((r for r in _RANGES if primary.subnet_of(r)), None)
    ranges = [r for r in (home, _SHARED) if r is not None]
    for i, rng in enumerate(dict.fromkeys(ranges)):
        blocks = list(rng.subnets(new_prefix=BLOCK_MASK)) if rng.prefixlen <= BLOCK_MASK else []
        start = 0
        if i == 0:
            start = next((k + 1 for k, b in enumerate(blocks) if primary.overlaps(b)), 0)
        for block in blocks[start:] + blocks[:start]:
            if block.overlaps(primary):
                continue
            if primary.subnet_of(_NO_10_0_16[0]) and block == _NO_10_0_16[1]:
                continue
            yield str(block)


def _free_chunks(primary: ipaddress.IPv4Network, az_count: int,
                 mask: int) -> list[ipaddress.IPv4Network]:
    used = az_count * (2 ** (32 - mask) + 2 ** (32 - PUBLIC_SUBNET_MASK))
    first = primary.network_address + used
    if used >= primary.num_addresses:
        return []
    chunks = ipaddress.summarize_address_range(first, primary.broadcast_address)
    big = [c for c in chunks if c.prefixlen <= mask]
    return sorted(big, key=lambda c: (c.prefixlen, int(c.network_address)))


def split(counts: Sequence[int], capacities: Sequence[int], group_size: int) -> list[list[Group]]:
    """Place node counts, in order, into subnets of ``capacities`` nodes, in groups of at most
    ``group_size`` that each stay in one subnet. A count of 0 gets one empty group in the
    subnet where the next node would go.

    Returns:
        For each count, its groups.

    Raises:
        PlanError: the subnets hold fewer nodes than ``sum(counts)``.
    """
    room = list(capacities)
    subnet = 0
    placed: list[list[Group]] = []
    for count in counts:
        groups: list[Group] = []
        left = count
        while left > 0:
            while subnet < len(room) and room[subnet] == 0:
                subnet += 1
            if subnet == len(room):
                raise PlanError(f"{sum(counts)} nodes need more than the "
                                f"{sum(capacities)} the subnets hold", "address space",
                                sum(capacities))
            take = min(group_size, room[subnet], left)
            groups.append(Group(take, subnet))
            room[subnet] -= take
            left -= take
        placed.append(groups or [Group(0, min(subnet, max(len(room) - 1, 0)))])
    return placed


def spread(total: int, sizes: Sequence[int]) -> list[int]:
    """Spread ``total`` nodes over groups of ``sizes`` nodes at most, filling them in order
    (the first group full before the next gets any), e.g. ``spread(500, [450, 450])`` is
    ``[450, 50]``.

    Raises:
        ValueError: ``total`` is negative or more than the groups hold.
    """
    if not 0 <= total <= sum(sizes):
        raise ValueError(f"{total} nodes do not fit groups of {list(sizes)}")
    out = []
    for size in sizes:
        take = min(size, total)
        out.append(take)
        total -= take
    return out
