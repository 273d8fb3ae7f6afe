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

from trn_ultracluster.network_plan.addresses import *  # noqa: F403
from trn_ultracluster.network_plan.fill import *  # noqa: F403
from trn_ultracluster.network_plan.subnets import *  # noqa: F403

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
