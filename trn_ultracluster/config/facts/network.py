"""AZ IDs and Regions; the VPC, nodes and volumes. Each fact with its source (the package docstring says more)."""

from __future__ import annotations

import ipaddress
import re

# --- AZ IDs and Regions ------------------------------------------------------------------

AZ_ID_PREFIX_TO_REGION: dict[str, str] = {
    # AZ ID = <region code>-az<n>; the codes below are the ones AWS uses in AZ IDs
    # (AWS RAM user guide "Availability Zone IDs for your AWS resources", DOC_AZ_IDS, explains
    # them). The code-to-Region table itself was read from moto's per-Region AZ ID files
    # (getmoto/moto moto/ec2/resources/instance_type_offerings/availability-zone-id/*.json,
    # e.g. ap-southeast-4.json -> apse4-az1..3); no AWS page listing all of them was found.
    "use1": "us-east-1",
    "use2": "us-east-2",
    "usw1": "us-west-1",
    "usw2": "us-west-2",
    "aps1": "ap-south-1",
    "apse1": "ap-southeast-1",
    "apse2": "ap-southeast-2",
    "apse4": "ap-southeast-4",
    "apne1": "ap-northeast-1",
    "apne2": "ap-northeast-2",
    "euc1": "eu-central-1",
    "euw1": "eu-west-1",
    "euw2": "eu-west-2",
    "eun1": "eu-north-1",
    "sae1": "sa-east-1",
    "cac1": "ca-central-1",
}
AZ_ID_RE = re.compile(r"^(?P<prefix>[a-z]+[0-9]+)-az(?P<n>[0-9]+)\Z")


def region_of_az_id(az_id: str) -> str:
    """Return the AWS Region of an AZ ID, e.g. ``"usw2-az4"`` -> ``"us-west-2"``.

    Raises:
        ValueError: the AZ ID is malformed or its region code is not in
            :data:`AZ_ID_PREFIX_TO_REGION`.
    """
    match = AZ_ID_RE.match(az_id)
    if not match:
        raise ValueError(f"{az_id!r} is not an AZ ID like 'usw2-az4'")
    prefix = match.group("prefix")
    if prefix not in AZ_ID_PREFIX_TO_REGION:
        known = ", ".join(sorted(AZ_ID_PREFIX_TO_REGION))
        raise ValueError(f"unknown region code {prefix!r} in AZ ID {az_id!r}; known: {known}")
    return AZ_ID_PREFIX_TO_REGION[prefix]


# --- VPC, nodes, volumes ---------------------------------------------------------------

PRIVATE_RANGES = tuple(ipaddress.ip_network(n) for n in (
    "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10"))
"""VPC IPv4 blocks this stack accepts: the RFC 1918 private ranges and RFC 6598 shared
address space. The VPC user guide ("VPC CIDR blocks", DOC_VPC_CIDR) recommends the RFC 1918
ranges and lists 100.64.0.0/10 among the allowed blocks; a publicly routable block would
shadow real internet addresses for the nodes (which reach the internet through NAT)."""
VPC_PREFIX_RANGE = (16, 28)
"""A VPC CIDR block is between /16 and /28 (DOC_VPC_CIDR)."""
SHARED_RANGE = ipaddress.ip_network("100.64.0.0/10")
TEN_0_15 = ipaddress.ip_network("10.0.0.0/15")
TEN_0_16 = ipaddress.ip_network("10.0.0.0/16")
"""Secondary blocks (VPC user guide, "IPv4 CIDR block association restrictions",
DOC_VPC_CIDR_RULES), primary in 10.0.0.0/8: permitted "Any other CIDR block from the 10.0.0.0/8
range that's not restricted ... or a CIDR block from the 100.64.0.0/10 range"; restricted:
"CIDR blocks from other RFC 1918 ranges", and "If any of the CIDR blocks associated with the
VPC are from the 10.0.0.0/15 range ..., you cannot add a CIDR block from the 10.0.0.0/16
range". The rule applies the same pattern (the primary's own range or 100.64.0.0/10) to
172.16.0.0/12 and 192.168.0.0/16 primaries; only the 10.0.0.0/8 row was read. (The guide also
permits publicly routable blocks, which the stack refuses as it does for ``vpc_cidr``.)"""
MAX_NODES = 100_000
"""Upper bound of ``nodes.max``: "Amazon EKS now supports up to 100,000 worker nodes in a
single cluster" (AWS Containers blog, "Amazon EKS enables ultra scale AI/ML workloads with
support for 100K nodes per cluster", DOC_EKS_ULTRA, July 2025). The VPC is the tighter bound
(its NAU quota, :mod:`trn_ultracluster.network_plan`), which the ``scale`` rules check."""
K8S_TESTED_NODES = 5_000
"""Kubernetes' own limit: "No more than 5,000 nodes" (kubernetes.io, "Considerations for large
clusters", DOC_K8S_LARGE). Past it an EKS cluster is "ultra scale" (DOC_EKS_ULTRA)."""
CNI_WARM_IP_TARGET = 2
"""The VPC CNI's ``WARM_IP_TARGET`` beside ``MINIMUM_IP_TARGET = eks.pod_ips_per_node``: the
README's example pairs ``MINIMUM_IP_TARGET`` 30 with ``WARM_IP_TARGET`` 2 ("uses roughly half
as many IPs"). With either set the CNI ignores ``WARM_ENI_TARGET`` (default 1: a whole spare
interface, 49 addresses on Trainium). The README warns against ``WARM_IP_TARGET`` "for large
clusters, or if the cluster has high pod churn" (EC2 API calls): the Trainium nodes are
tainted, so they run few, long-lived pods, and stay within ``MINIMUM_IP_TARGET`` without any
call after boot (aws/amazon-vpc-cni-k8s README, DOC_VPC_CNI)."""
POD_IPS_RANGE = (1, 250)
"""``eks.pod_ips_per_node``: at least one pod; at most 250, the ``maxPods`` EKS managed node
groups allow on types of more than 30 vCPUs (EKS user guide, "Create a managed node group")."""
ROOT_VOLUME_GIB_RANGE = (64, 16384)
"""Our minimum (Neuron container images are tens of GiB) to the gp3 maximum, 16 TiB
(DOC_EBS_GP3)."""
CAPACITY_BLOCK_MAX_INSTANCES = 64
""""Each Capacity Block can have up to 64 instances, and you can have up to 256 instances
across Capacity Blocks" (EC2 API reference, DescribeCapacityBlockOfferings ``InstanceCount``).
Its instances "are automatically placed close together inside Amazon EC2 UltraClusters"
(EC2 API reference, ``CapacityBlock``), so "there is no need to use a cluster placement
group with a Capacity Block" (EC2 user guide, "Use Capacity Blocks")."""
TRAINING_PLAN_MAX_INSTANCES = 256
"""A SageMaker training plan offering reserves at most 256 instances (botocore SageMaker
model, ``ReservedCapacityInstanceCount``, max 256)."""
RESOURCE_ID_RE = re.compile(r"^cr-([0-9a-f]{8}|[0-9a-f]{17})\Z")
"""Capacity Reservation / Capacity Block IDs: ``cr-`` and 8 or 17 hex digits
(DOC_RESOURCE_IDS)."""
PLACEMENT_GROUP_NAME_RE = re.compile(r"^[ -~]{1,255}\Z")
"""Placement group names: "Up to 255 ASCII characters" (EC2 API reference,
CreatePlacementGroup ``GroupName``, DOC_PLACEMENT_GROUP_NAME; the same text in botocore's EC2
model). An empty name and ASCII control characters are refused here too: the API documents
no other rule, and a name of control characters is a typing or quoting mistake."""
