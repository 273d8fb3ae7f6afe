"""The VPC address plan: what one node really uses, which subnets hold the nodes, and how a
cluster fits the VPC's quotas.

One module that the config rules, the network construct, the orchestrators (node groups and
instance groups), ``preflight``, the estimate and ``benchmarks/scale.py`` all read. Standard
library only.

The layout, for ``az_count`` AZ IDs (the first is the compute AZ):

- the **primary block** (``vpc_cidr``) holds, as CDK allocates them in order, one private
  subnet of :func:`private_mask` per AZ ID, then one public /24 per AZ ID. The compute AZ's
  private subnet is **compute subnet 0**: it also holds the file system, so
  :func:`subnet0_reserve` addresses of it are kept for the file system and the services;
- the rest of the primary block, cut into the largest aligned blocks at least as large as
  a private subnet, gives further **compute subnets** in the compute AZ (largest first). They
  share the file system's /16, which EFA-enabled FSx for Lustre needs of its clients;
- beyond that, **secondary CIDR blocks** (``AWS::EC2::VPCCidrBlock``), each one compute subnet.

Nodes fill the compute subnets in that order, in **groups** (an EKS managed node group, a
HyperPod instance group, an Auto Scaling group) of at most ``group_size`` nodes that each
stay in one subnet: an Auto Scaling group given several subnets of one AZ "selects a subnet
from the Availability Zone at random" and retries only in another AZ (Amazon EC2 Auto Scaling
user guide, "Benefits of Auto Scaling"), and HyperPod reports one ``SubnetId`` per instance
group (SageMaker API ``InstanceGroupMetadata``). A larger cluster only appends groups and
subnets: the subnets and groups of a smaller one keep their blocks and sizes, so growing
``nodes.max`` never replaces a subnet (a subnet's CIDR block cannot change after creation:
SageMaker HyperPod prerequisites; ``CidrBlock`` of ``AWS::EC2::Subnet`` is create-only).

EFA between subnets: the EC2 user guide's EFA limitations today say "EFA OS-bypass traffic
can't cross Availability Zones, VPCs, or AWS accounts" and restrict subnets only in Local
Zones ("can't be sent across subnets in a Local Zone"); its 2023 text said "EFA OS-bypass
traffic is limited to a single subnet". The current text was read as quoted in a third-party
post, not on the live page, and no dated announcement was found: partly verified. The plan
therefore fills one subnet before the next, so a cluster that fits one subnet stays in one.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

__all__ = [
    "BLOCK_MASK",
    "CIDR_BLOCKS_DEFAULT",
    "CIDR_BLOCKS_MAX",
    "DOC_EKS_NEW_BLOCK",
    "EKS_NEW_BLOCK_RECOGNIZED_WITHIN",
    "HYPERPOD_EKS_PRIMARY_CARD_IPS",
    "MIN_PRIVATE_SUBNET_MASK",
    "NAU_DEFAULT",
    "NAU_MAX",
    "PUBLIC_SUBNET_MASK",
    "SERVICES_NAU",
    "SUBNET_RESERVED_IPS",
    "AddressPlan",
    "ComputeSubnet",
    "Group",
    "NodeAddresses",
    "PlanError",
    "PoolDemand",
    "PoolPlan",
    "candidate_blocks",
    "largest_cluster",
    "new_block_warning",
    "node_addresses",
    "plan",
    "private_mask",
    "split",
    "spread",
    "subnet0_reserve",
]

SUBNET_RESERVED_IPS = 5
"""AWS reserves the first four and the last address of every subnet (VPC user guide,
"Subnet CIDR blocks", https://docs.aws.amazon.com/vpc/latest/userguide/subnet-sizing.html)."""
PUBLIC_SUBNET_MASK = 24
"""Public subnets hold only NAT gateways and load balancers: a /24 each."""
MIN_PRIVATE_SUBNET_MASK = 20
"""The primary block's private subnets are /20 when the VPC has room for them and the public
/24s (the size every earlier version gave a small cluster, so a deployed stack keeps them)."""
BLOCK_MASK = 16
"""Secondary blocks the plan derives are /16, the largest a VPC CIDR block may be ("The
allowed block size is between a /28 netmask and /16 netmask", VPC user guide, "VPC CIDR
blocks"); a subnet may be a whole block ("The CIDR block of a subnet can be the same as the
CIDR block for the VPC", "Subnet CIDR blocks")."""

NAU_DEFAULT = 64_000
NAU_MAX = 256_000
"""Network Address Usage units per VPC: "Each VPC can have up to 64,000 NAU units by default.
You can request a quota increase up to 256,000." (VPC user guide, "Network Address Usage",
https://docs.aws.amazon.com/vpc/latest/userguide/network-address-usage.html; Service Quotas
code L-BB24F6E5). Past it, ``RunInstances`` and ``AssignPrivateIpAddresses`` fail with
``NetworkAddressUsageLimitExceeded``."""
CIDR_BLOCKS_DEFAULT = 5
CIDR_BLOCKS_MAX = 50
"""IPv4 CIDR blocks per VPC, the primary included: 5, adjustable up to 50 (Amazon VPC quotas,
https://docs.aws.amazon.com/vpc/latest/userguide/amazon-vpc-limits.html, L-83CA0A9D)."""
NAU_PER_SERVICE = 6
"""NAU of a NAT gateway, a Lambda function in the VPC, a VPC endpoint per AZ ("Network
Address Usage" table)."""
SERVICES_NAU = 1_024
"""NAU kept for what is not a Trainium node: NAT gateways and in-VPC Lambda functions (6
each), the file system's and the EKS control plane's interfaces, the EKS system nodes and
HyperPod controller/login nodes with their pods. A design margin, not an AWS figure (the file
system's interface count is not published)."""
HYPERPOD_EKS_PRIMARY_CARD_IPS = 50
"""SageMaker HyperPod prerequisites ("Setting up SageMaker HyperPod", subnet sizing,
https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-prerequisites.html):
"For Slurm-orchestrated clusters, each P5 instance can create 32 IP addresses (one per network
card). For EKS-orchestrated clusters, each P5 instance can create 81 IP addresses (50 from the
primary card plus one from each of the remaining 31 cards)." The page gives P5 only; the plan
applies the same rule to Trainium's network cards (trn1.32xlarge: 8 with Slurm, 57 with EKS)."""

_RANGES = tuple(ipaddress.ip_network(n) for n in (
    "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10"))
_SHARED = ipaddress.ip_network("100.64.0.0/10")
_NO_10_0_16 = (ipaddress.ip_network("10.0.0.0/15"), ipaddress.ip_network("10.0.0.0/16"))
"""VPC user guide, "IPv4 CIDR block association restrictions", primary block in 10.0.0.0/8:
permitted "Any other CIDR block from the 10.0.0.0/8 range that's not restricted ... or a CIDR
block from the 100.64.0.0/10 range"; restricted: the other RFC 1918 ranges, 198.19.0.0/16,
and "If any of the CIDR blocks associated with the VPC are from the 10.0.0.0/15 range ... you
cannot add a CIDR block from the 10.0.0.0/16 range". The plan applies the same pattern (the
primary's own range, then 100.64.0.0/10) to 172.16.0.0/12 and 192.168.0.0/16 primaries; only
the 10.0.0.0/8 row was read in the guide."""


class PlanError(ValueError):
    """The cluster does not fit: ``limit`` names what bounds it (``"address space"``,
    ``"nau"``, ``"cidr_blocks"``); ``most`` is the largest node count that fits, when known."""

    def __init__(self, message: str, limit: str, most: int | None = None) -> None:
        super().__init__(message)
        self.limit = limit
        self.most = most


@dataclass(frozen=True)
class NodeAddresses:
    """What one Trainium node takes from the VPC.

    Attributes:
        interface_ips: addresses on the node's own network interfaces.
        pod_ips: addresses for pods (Kubernetes nodes only).
        interfaces: network interfaces (ENIs, EFA and EFA-only interfaces).
        efa_interfaces: EFA and EFA-only interfaces among them (1 NAU each, with or without
            an address: "EFA interface (EFA with an ENA device) or an EFA-only interface", 1).
        rule: how the numbers were reached, for messages and the table of docs/scale.md.
    """

    interface_ips: int
    pod_ips: int
    interfaces: int
    efa_interfaces: int
    rule: str

    @property
    def ips(self) -> int:
        """VPC addresses of one node: interface and pod addresses."""
        return self.interface_ips + self.pod_ips

    @property
    def nau(self) -> int:
        """NAU units of one node: 1 per address ("Each private or public IPv4 ... address
        assigned to a network interface", and "Amazon EKS pod", 1) and 1 per EFA or EFA-only
        interface (VPC user guide, "Network Address Usage"). An interface with an address
        counts both, as the table lists both rows."""
        return self.ips + self.efa_interfaces


def node_addresses(orchestrator: str, layout: str, network_cards: int, efa_interfaces: int,
                   pod_ips: int) -> NodeAddresses:
    """Addresses, interfaces and NAU of one node.

    Args:
        orchestrator: ``eks``, ``hyperpod-slurm``, ``hyperpod-eks`` or ``standalone``.
        layout: ``efa`` (one EFA interface with an address per network card) or ``efa-only``
            (an ENA primary with the only address, EFA-only interfaces without one; EC2 user
            guide, "Maximize network bandwidth on accelerated instance types"); HyperPod
            makes its own interfaces, so it is ignored there.
        network_cards: the instance type's network cards.
        efa_interfaces: its EFA interfaces (0: a type without EFA gets one ordinary interface).
        pod_ips: pod addresses per node on ``eks`` (the VPC CNI's ``MINIMUM_IP_TARGET``).
    """
    if orchestrator == "hyperpod-slurm":
        return NodeAddresses(network_cards, 0, network_cards, efa_interfaces,
                             f"HyperPod with Slurm: one address per network card "
                             f"({network_cards})")
    if orchestrator == "hyperpod-eks":
        pods = HYPERPOD_EKS_PRIMARY_CARD_IPS - 1
        others = (f" + 1 on each of the other {network_cards - 1}" if network_cards > 1
                  else " (its only card)")
        return NodeAddresses(network_cards, pods, network_cards, efa_interfaces,
                             f"HyperPod on EKS: {HYPERPOD_EKS_PRIMARY_CARD_IPS} on the primary "
                             f"card{others}")
    if efa_interfaces == 0:
        interface_ips, interfaces, efa, what = 1, 1, 0, "one interface (no EFA)"
    elif layout == "efa-only":
        interface_ips, interfaces, efa = 1, 1 + efa_interfaces, efa_interfaces
        what = f"1 ENA address + {efa_interfaces} EFA-only interfaces"
    else:
        interface_ips, interfaces, efa = network_cards, network_cards, efa_interfaces
        what = f"{network_cards} EFA interfaces with an address"
    if orchestrator != "eks":
        return NodeAddresses(interface_ips, 0, interfaces, efa, what)
    return NodeAddresses(interface_ips, pod_ips, interfaces, efa, f"{what} + {pod_ips} pods")


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
