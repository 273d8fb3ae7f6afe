"""The VPC address plan: subnet sizes shared by the config rules and the network construct.

Every AZ ID gets one private subnet (Trainium nodes, their pods, FSx) and one public subnet
(NAT gateways, load balancers). The config rules check that the plan fits the VPC block
before anything is synthesized; :mod:`trn_ultracluster.constructs.network` builds it.
Standard library only.
"""

from __future__ import annotations

import math

__all__ = [
    "MIN_PRIVATE_SUBNET_MASK",
    "PODS_PER_NODE",
    "PUBLIC_SUBNET_MASK",
    "SUBNET_RESERVED_IPS",
    "fits",
    "max_nodes",
    "private_subnet_mask",
    "vpc_prefix_needed",
]

SUBNET_RESERVED_IPS = 5
"""AWS reserves the first four and the last address of every subnet (VPC user guide,
"Subnet CIDR blocks", https://docs.aws.amazon.com/vpc/latest/userguide/subnet-sizing.html)."""

PODS_PER_NODE = 110
"""Pod IPs budgeted per node: the kubelet's default ``maxPods`` (Kubernetes docs,
"Considerations for large clusters", https://kubernetes.io/docs/setup/best-practices/cluster-large/:
no more than 110 pods per node). The VPC CNI gives every pod a VPC address, so the compute
subnet must hold them."""

PUBLIC_SUBNET_MASK = 24
"""Public subnets hold only NAT gateways and load balancers: a /24 each."""

MIN_PRIVATE_SUBNET_MASK = 20
"""Private subnets get at least a /20 when the VPC has room, for growth."""

_SMALLEST_SUBNET_IPS = 16
"""The smallest subnet is a /28, 16 addresses (VPC user guide, "Subnet CIDR blocks")."""


def fits(vpc_prefix: int, az_count: int, private_mask: int) -> bool:
    """True when ``az_count`` private and public subnets fit in the VPC block.

    Subnets are allocated largest first (private, then public), so there is no alignment
    waste and a sum of sizes is exact.
    """
    need = az_count * (2 ** (32 - private_mask) + 2 ** (32 - PUBLIC_SUBNET_MASK))
    return need <= 2 ** (32 - vpc_prefix)


def private_subnet_mask(vpc_prefix: int, az_count: int, nodes: int, ips_per_node: int) -> int:
    """Prefix length of each private subnet: room for ``nodes`` nodes of ``ips_per_node``
    addresses, and at least :data:`MIN_PRIVATE_SUBNET_MASK` when the VPC has room."""
    needed = nodes * ips_per_node + SUBNET_RESERVED_IPS
    mask = 32 - math.ceil(math.log2(max(needed, _SMALLEST_SUBNET_IPS)))
    roomy = min(mask, MIN_PRIVATE_SUBNET_MASK)
    return roomy if fits(vpc_prefix, az_count, roomy) else mask


def vpc_prefix_needed(az_count: int, private_mask: int) -> int:
    """Prefix length of the smallest VPC block that holds the plan (may be below /16)."""
    need = az_count * (2 ** (32 - private_mask) + 2 ** (32 - PUBLIC_SUBNET_MASK))
    return 32 - math.ceil(math.log2(need))


def max_nodes(vpc_prefix: int, az_count: int, ips_per_node: int) -> int:
    """Most nodes whose subnets fit a VPC of ``vpc_prefix`` with ``az_count`` AZ IDs."""
    for mask in range(17, 29):
        if fits(vpc_prefix, az_count, mask):
            return (2 ** (32 - mask) - SUBNET_RESERVED_IPS) // ips_per_node
    return 0
