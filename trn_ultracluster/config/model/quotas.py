"""Account quotas the cluster is planned against: ``quotas``.

Each is a Service Quotas value of the account; the defaults are AWS's. Raising one at AWS
and setting it here makes the configuration rules plan with it; ``trn-ultracluster preflight``
reads the account's real values and compares them with what the configuration needs.
"""

from __future__ import annotations

from trn_ultracluster.config.model.base import FrozenModel

__all__ = ["QuotasConfig"]


class QuotasConfig(FrozenModel):
    """The account's quotas that shape the cluster: one the cluster needs more of gives a
    warning naming the quota to raise; past the quota's maximum, an error (docs/scale.md).

    Sources: Amazon VPC quotas (https://docs.aws.amazon.com/vpc/latest/userguide/amazon-vpc-limits.html)
    and Amazon EKS service quotas (EKS user guide, "View and manage Amazon EKS and Fargate
    service quotas"; the codes as AWS's Service Quotas lists them).

    Attributes:
        vpc_network_address_usage: NAU units per VPC (L-BB24F6E5): 64,000, up to 256,000.
        vpc_cidr_blocks: IPv4 CIDR blocks per VPC, the primary included (L-83CA0A9D): 5, up
            to 50.
        network_interfaces: network interfaces per Region (L-DF5E4CA3), "enforced per
            Availability Zone": 5,000.
        eks_nodes_per_nodegroup: nodes per EKS managed node group (L-BD136A63): 450. The
            stack splits the Trainium nodes into node groups of at most this many.
        eks_nodegroups_per_cluster: managed node groups per EKS cluster (L-6D54EA21): 30,
            the system node group included.
    """

    vpc_network_address_usage: int = 64_000
    vpc_cidr_blocks: int = 5
    network_interfaces: int = 5_000
    eks_nodes_per_nodegroup: int = 450
    eks_nodegroups_per_cluster: int = 30
