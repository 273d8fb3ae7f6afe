"""The VPC's address facts and what one node takes from it. Part of :mod:`trn_ultracluster.network_plan` (its docstring describes the plan). Standard library only."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

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
