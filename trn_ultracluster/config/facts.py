"""AWS facts and limits that the configuration rules check, each with its source, and the
documentation link every message points to.

Instance facts (NeuronCores, EFA cards, AZ IDs seen) live in
:mod:`trn_ultracluster.contracts.catalog`; the VPC address plan in
:mod:`trn_ultracluster.network_plan`.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass, field

README_CONFIG = "README.md#configuration"
README_POOLS = "docs/pools.md"
DOC_CFN_STACK_NAME = "https://docs.aws.amazon.com/AWSCloudFormation/latest/APIReference/API_CreateStack.html"
DOC_EKS_CREATE_CLUSTER = "https://docs.aws.amazon.com/eks/latest/APIReference/API_CreateCluster.html"

# --- documentation links, one per topic ------------------------------------------------
DOC_AZ_IDS = "https://docs.aws.amazon.com/ram/latest/userguide/working-with-az-ids.html"
DOC_INSTANCES = "https://docs.aws.amazon.com/ec2/latest/instancetypes/ac.html"
DOC_EFA = "https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa-acc-inst-types.html"
DOC_VPC_CIDR = "https://docs.aws.amazon.com/vpc/latest/userguide/vpc-cidr-blocks.html"
DOC_SUBNET_IPS = "https://docs.aws.amazon.com/vpc/latest/userguide/subnet-sizing.html"
DOC_VPC_CIDR_RULES = (
    "https://docs.aws.amazon.com/vpc/latest/userguide/vpc-cidr-blocks.html"
    "#add-cidr-block-restrictions")
DOC_NAU = "https://docs.aws.amazon.com/vpc/latest/userguide/network-address-usage.html"
DOC_VPC_QUOTAS = "https://docs.aws.amazon.com/vpc/latest/userguide/amazon-vpc-limits.html"
DOC_EKS_QUOTAS = "https://docs.aws.amazon.com/eks/latest/userguide/service-quotas.html"
DOC_EKS_PCP = "https://docs.aws.amazon.com/eks/latest/userguide/eks-provisioned-control-plane.html"
DOC_EKS_ULTRA = ("https://aws.amazon.com/blogs/containers/amazon-eks-enables-ultra-scale-ai-ml-"
                 "workloads-with-support-for-100k-nodes-per-cluster/")
DOC_VPC_CNI = "https://github.com/aws/amazon-vpc-cni-k8s#minimum_ip_target-v160"
README_SCALE = "README.md#scale"
DOC_NAT = "https://docs.aws.amazon.com/vpc/latest/userguide/vpc-nat-gateway.html"
DOC_FSX_DEPLOY = "https://docs.aws.amazon.com/fsx/latest/LustreGuide/using-fsx-lustre.html"
DOC_FSX_CAPACITY = (
    "https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/"
    "aws-resource-fsx-filesystem.html#cfn-fsx-filesystem-storagecapacity"
)
DOC_FSX_THROUGHPUT = (
    "https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/"
    "aws-properties-fsx-filesystem-lustreconfiguration.html"
    "#cfn-fsx-filesystem-lustreconfiguration-perunitstoragethroughput"
)
DOC_FSX_VERSION = "https://docs.aws.amazon.com/fsx/latest/LustreGuide/managing-lustre-version.html"
DOC_FSX_DRA = "https://docs.aws.amazon.com/fsx/latest/LustreGuide/create-dra-linked-data-repo.html"
DOC_CAPACITY_BLOCKS = "https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/capacity-blocks-launch.html"
DOC_EKS_CAPACITY_BLOCKS = "https://docs.aws.amazon.com/eks/latest/userguide/capacity-blocks-mng.html"
DOC_ODCR = "https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/capacity-reservations-launch.html"
DOC_PLACEMENT = "https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/placement-strategies.html"
DOC_ODCR_CPG = "https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/cr-cpg.html"
DOC_PLACEMENT_GROUP_NAME = (
    "https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_CreatePlacementGroup.html")
DOC_EBS_GP3 = "https://docs.aws.amazon.com/ebs/latest/userguide/general-purpose.html"
DOC_K8S_LARGE = "https://kubernetes.io/docs/setup/best-practices/cluster-large/"
DOC_FSX_QUOTAS = "https://docs.aws.amazon.com/fsx/latest/LustreGuide/limits.html"
DOC_TAGS = "https://docs.aws.amazon.com/tag-editor/latest/userguide/tagging.html"
DOC_HYPERPOD = "https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod.html"
DOC_RESOURCE_IDS = "https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/resource-ids.html"
DOC_HYPERPOD_CREATE = "https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_CreateCluster.html"
DOC_HYPERPOD_GROUP = (
    "https://docs.aws.amazon.com/sagemaker/latest/APIReference/"
    "API_ClusterInstanceGroupSpecification.html"
)
DOC_HYPERPOD_SLURM = "https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-ref.html"
DOC_EKS_ENDPOINT = "https://docs.aws.amazon.com/eks/latest/userguide/cluster-endpoint.html"
DOC_EKS_ACCESS = "https://docs.aws.amazon.com/eks/latest/userguide/access-entries.html"
DOC_EKS_ADDONS = "https://docs.aws.amazon.com/eks/latest/userguide/eks-add-ons.html"
DOC_K8S_NAMES = "https://kubernetes.io/docs/concepts/overview/working-with-objects/names/"
DOC_EKS_VERSIONS = "https://docs.aws.amazon.com/eks/latest/userguide/kubernetes-versions.html"
DOC_NODE_UPDATES = "README.md#upgrading-a-deployed-stack"
DOC_HYPERPOD_EKS = (
    "https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-eks-prerequisites.html")
DOC_HYPERPOD_EKS_AUTO_RESUME = "docs/hyperpod-eks.md#auto-resume"
DOC_HYPERPOD_EKS_HELM = (
    "https://docs.aws.amazon.com/sagemaker/latest/dg/"
    "sagemaker-hyperpod-eks-install-packages-using-helm-chart.html")
DOC_NEURON_DLAMI = (
    "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/deploy/environments/dlami.html"
)
DOC_DEVICE_NAMES = "https://docs.aws.amazon.com/ebs/latest/userguide/device_naming.html"
DOC_SSM_PARAMETER_NAMES = (
    "https://docs.aws.amazon.com/systems-manager/latest/APIReference/API_PutParameter.html"
)
README_STANDALONE = "docs/standalone.md"
README_TRAINING_STACKS = "README.md#training-stacks"
DOC_CUSTOM_IMAGE = "docs/custom-image.md"
DOC_TORCHNEURON = "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/index.html"
DOC_TRN2_ULTRASERVER = (
    "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/about-neuron/arch/neuron-hardware/"
    "trn2-arch.html")

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

# --- FSx for Lustre --------------------------------------------------------------------

FSX_THROUGHPUT_MB_S_TIB: dict[str, tuple[int, ...]] = {
    # PerUnitStorageThroughput (MB/s/TiB) allowed per deployment type (SSD storage).
    # Source: CloudFormation AWS::FSx::FileSystem LustreConfiguration (DOC_FSX_THROUGHPUT).
    "PERSISTENT_1": (50, 100, 200),
    "PERSISTENT_2": (125, 250, 500, 1000),
}
FSX_DRA_DEPLOYMENT_TYPES = ("SCRATCH_2", "PERSISTENT_1", "PERSISTENT_2")
FSX_DRA_LUSTRE_VERSIONS = ("2.12", "2.15")
"""Data repository associations are "supported on all FSx for Lustre 2.12 and 2.15 file
systems, excluding scratch_1" (FSx API reference, CreateDataRepositoryAssociation,
https://docs.aws.amazon.com/fsx/latest/APIReference/API_CreateDataRepositoryAssociation.html)."""
FSX_DRA_PATH_MAX_CHARS = 4096
"""``FileSystemPath`` of a data repository association: 1-4096 characters (botocore's FSx
model, ``CreateDataRepositoryAssociationRequest.FileSystemPath``, shape ``Namespace``); the
API documents it as a directory such as ``/ns1/`` with a required leading ``/``."""
FSX_LUSTRE_VERSIONS: dict[str, tuple[str, ...]] = {
    # FileSystemTypeVersion allowed per deployment type. PERSISTENT_2 needs 2.12 or newer.
    # Source: FSx for Lustre user guide, "Lustre versions" (DOC_FSX_VERSION).
    "SCRATCH_1": ("2.10", "2.12", "2.15"),
    "SCRATCH_2": ("2.10", "2.12", "2.15"),
    "PERSISTENT_1": ("2.10", "2.12", "2.15"),
    "PERSISTENT_2": ("2.12", "2.15"),
}
FSX_MAX_STORAGE_GIB = 2_147_483_647
"""Largest ``StorageCapacity`` the FSx API takes (botocore FSx model, shape
``StorageCapacity``: max 2147483647 GiB)."""
FSX_MIN_MB_S_PER_NODE = 10
"""Our bound of file system throughput per node (no AWS guideline relates FSx throughput to
the number of clients): a restart reads a checkpoint on every node at once; with less than
this share, reading the bf16 weights of the 8B recipe (:data:`RESTART_READ_GB`) on every node
takes more than about half an hour. The file system's throughput is capacity (TiB) x
``PerUnitStorageThroughput`` ("File system throughput capacity is calculated by multiplying
file system storage capacity (TiB) by the PerUnitStorageThroughput (MB/s/TiB)", FSx API
reference, ``LustreConfiguration``)."""
RESTART_READ_GB = 16
"""What each node reads at a restart in that bound: Llama-3-8B's weights in bf16, 8 billion
parameters x 2 bytes."""
FSX_DEFAULT_QUOTA_GIB = 100_800
"""Default account quota "Total storage for all file systems" of FSx for Lustre in the
larger Regions (FSx for Lustre user guide, "Quotas": 100,800 GiB in us-east-1, us-east-2,
us-west-2 and others, 25,200 GiB in smaller Regions; adjustable up to petabytes)."""

# --- FSx for Lustre over EFA -------------------------------------------------------------
# Pages of the FSx for Lustre user guide; "the EFA page" below is DOC_FSX_EFA.
DOC_FSX_EFA = "https://docs.aws.amazon.com/fsx/latest/LustreGuide/efa-file-systems.html"
DOC_FSX_EFA_CLIENTS = "https://docs.aws.amazon.com/fsx/latest/LustreGuide/configure-efa-clients.html"
DOC_FSX_EFA_CAPACITY = (
    "https://docs.aws.amazon.com/fsx/latest/LustreGuide/managing-storage-capacity.html")
README_FSX_EFA = "README.md#fsx-for-lustre-over-efa"

FSX_EFA_DEPLOYMENT_TYPE = "PERSISTENT_2"
FSX_EFA_LUSTRE_VERSION = "2.15"
"""EFA-enabled file systems: "EFA is supported on Persistent 2 file systems with a metadata
configuration specified" (the EFA page, Considerations). The stack gives PERSISTENT_2 a
metadata configuration on Lustre 2.15 only, and 2.15 is what the FSx API creates with one
("2.12 is supported by all Lustre deployment types, except for PERSISTENT_2 with a metadata
configuration mode": botocore's FSx model, ``CreateFileSystemRequest.FileSystemTypeVersion``)."""
FSX_EFA_CAPACITY_STEP_GIB: dict[int, int] = {125: 38_400, 250: 19_200, 500: 9_600, 1000: 4_800}
"""``PerUnitStorageThroughput`` (MB/s/TiB) -> the step of an EFA-enabled file system's storage
capacity, GiB: "For an EFA-enabled file system, this value must be in multiples of 38400 GiB
for 125 MBps/TiB file systems, multiples of 19200 GiB for 250 MBps/TiB file systems, multiples
of 9600 GiB for 500 MBps/TiB file systems, and multiples of 4800 GiB for 1000 MBps/TiB file
systems" (user guide, "Managing storage capacity", DOC_FSX_EFA_CAPACITY). One step is also the
smallest such file system: 16x the 1,200 GiB minimum without EFA at 250 MB/s/TiB."""
FSX_EFA_CLIENT_TYPES = frozenset({"trn1.32xlarge", "trn1n.32xlarge"})
"""Trainium types that may be clients of an EFA-enabled file system: "EFA is supported on
Nitro v4 (or higher) EC2 instances that support EFA, excluding the trn2 instance family"
(the EFA page and DOC_FSX_EFA_CLIENTS). Trn1 and Trn1n are Nitro v4 (EC2 instance types guide,
accelerated computing specifications, DOC_INSTANCES) and only their 32xlarge sizes have EFA
(the catalog). trn2, trn2.3xlarge and trn2u are out: the first two by name, trn2u (its own row
in EC2's tables) because no FSx page says it is outside "the trn2 instance family" (not
verified either way)."""
FSX_EFA_MAX_CONNECTIONS = 1024
""""Each FSx for Lustre file system has a maximum limit of 1024 EFA connections across all
client instances", and "Each configured EFA interface on a client instance counts as one
connection" (DOC_FSX_EFA_CLIENTS, "EFA interfaces"). What happens past it is not documented
(not found: refused, or TCP). It depends on ``nodes.max``, so it is a warning and never
decides whether the file system has EFA (:mod:`trn_ultracluster.config.fsx_efa`): past it the
nodes run in mode ``preferred`` and one without an EFA connection falls back to TCP."""
FSX_EFA_MULTI_CARD_INTERFACES = 2
"""EFA interfaces a client binds to LNet: AWS's client set-up binds 2 on "Other instances
with multiple network cards" and 1 on "Other instances with a single network card"
(DOC_FSX_EFA_CLIENTS, "EFA interfaces", default table; AWS ParallelCluster binds all 8 on
trn1.32xlarge instead, aws/aws-parallelcluster PR #7572: the stack keeps the guide's number,
which lets 512 nodes share one file system's 1,024 connections)."""
FSX_EFA_RECOMMENDED_MB_S = 10_000
"""``auto`` turns EFA on above this file system throughput: "If you are creating a file system
with over 10 GBps of throughput capacity, we recommend enabling Elastic Fabric Adapter (EFA)
to optimize throughput per client instance" (the EFA page)."""
FSX_CLIENT_GBPS = {"tcp": 100, "efa": 700}
"""Throughput of one client instance, Gbps: 100 over ENA (TCP), 700 over EFA; "the traffic
between an individual client instance and an individual FSx for Lustre object storage server
is limited to 5 Gbps" over TCP (user guide, "Performance", "Throughput to individual client
instances"). Read from three copies of that table, not from the page itself (not verified
against a primary copy)."""
FSX_TCP_GBPS_PER_SERVER = 5
"""Over TCP, one client reaches one storage server (OSS) at most at this rate, Gbps: the
footnote of the TCP rows of :data:`FSX_CLIENT_GBPS`'s table (same source, same caveat). So a
client reaches :data:`FSX_CLIENT_GBPS` ``["tcp"]`` only through at least 20 storage servers
(derived)."""
DOC_FSX_SERVERS = "https://docs.aws.amazon.com/fsx/latest/LustreGuide/using-fsx-lustre.html"
FSX_STORAGE_PER_SERVER_GIB: dict[str, int] = {
    "PERSISTENT_2": 2_400, "PERSISTENT_1": 2_400, "SCRATCH_2": 2_400, "SCRATCH_1": 3_600}
"""SSD storage per storage server (OSS) by deployment type, GiB, without EFA: "2.4 TiB per
OSS" (Persistent 2 non-EFA, Persistent 1 SSD, Scratch 2), "3.6 TiB per OSS" (Scratch 1); an
EFA-enabled Persistent 2 file system has one OSS per :data:`FSX_EFA_CAPACITY_STEP_GIB` step
("38.4 TiB per OSS" at 125 MB/s/TiB ... "4.8 TiB per OSS" at 1000) (user guide, "Deployment and
storage class options", "IP addresses for file systems", DOC_FSX_SERVERS). The page's "TiB"
is 1,000 GiB here, as the capacity steps show (4.8 TiB per OSS, multiples of 4800 GiB). The
same page's table of Scratch file servers fits it: 2 for 1.2 and 2.4 TiB, 3 for 4.8, 5 for 9.6,
22 for 50.4 TiB, i.e. one per 2.4 TiB (at least one) plus one (our reading: the metadata
server)."""
FSX_SCRATCH_MB_S_TIB: dict[str, int] = {"SCRATCH_1": 200, "SCRATCH_2": 200}
"""Baseline throughput of the scratch types, MB/s per TiB (they take no
``PerUnitStorageThroughput``): 200 for both (user guide, "Deployment and storage class
options", throughput per TiB by deployment type, DOC_FSX_SERVERS; "Performance
characteristics of SSD and HDD storage classes", SCRATCH_2's network baseline, burst up to
1,300). Read from copies of those tables, not from the pages themselves. Used only to decide
whether ``fsx.efa: auto`` should say why a scratch file system stays without EFA."""
FSX_EFA_CLIENT_OS = "Amazon Linux 2023, RHEL 9.5 or newer, Ubuntu 22.04 or newer with kernel 6.8+"
"""The client operating systems of EFA-enabled file systems (DOC_FSX_EFA_CLIENTS: "Amazon
Linux 2023 (AL2023); Red Hat Enterprise Linux (RHEL) 9.5 or newer; Ubuntu 22.04 or newer with
kernel version 6.8+"). Checked on each node at boot (``node_scripts/lustre_efa.sh``): the
stack does not know the kernel of every AMI."""

# --- SageMaker HyperPod ------------------------------------------------------------------
# Patterns and ranges below are botocore 1.44.5's SageMaker model
# (botocore/data/sagemaker/2017-07-24/service-2.json): shapes ClusterName,
# ClusterInstanceGroupName, ClusterPartitionNames, ClusterInstanceCount (0-6758),
# ClusterEbsVolumeSizeInGB (1-16384) and TrainingPlanArn; the CloudFormation schema of
# AWS::SageMaker::Cluster (as bundled with cfn-lint 1.58.0) has the same.
STACK_NAME_RE = re.compile(r"^[A-Za-z][-A-Za-z0-9]*\Z")
STACK_NAME_MAX_CHARS = 128
"""CloudFormation stack names: "can contain only alphanumeric characters (case sensitive) and
hyphens. It must start with an alphabetical character and can't be longer than 128
characters"; unique per account and Region (CloudFormation API reference, CreateStack
``StackName``, DOC_CFN_STACK_NAME)."""
EKS_CLUSTER_NAME_MAX_CHARS = 100
"""EKS cluster names: letters, digits, ``-`` and ``_``, at most 100 characters (EKS API
reference, CreateCluster ``name``). The stack names its cluster ``<stack name>-<8 hex>``
(:func:`trn_ultracluster.constructs.names.stack_unique_name`)."""
HYPERPOD_NAME_MAX_CHARS = 63
HYPERPOD_NAME_RE = re.compile(r"^[a-zA-Z0-9](-*[a-zA-Z0-9])*\Z")
HYPERPOD_TYPE_RE = re.compile(r"^ml\.[a-z0-9-]+\.[a-z0-9]+\Z")
TRAINING_PLAN_RE = re.compile(r"^arn:aws[a-z\-]*:sagemaker:[a-z0-9\-]*:[0-9]{12}:training-plan/.+\Z")
HYPERPOD_MAX_INSTANCE_COUNT = 6758
HYPERPOD_EBS_GIB_RANGE = (1, 16384)
"""Size of a worker's extra EBS volume, GiB (``ClusterEbsVolumeSizeInGB``)."""

# --- Amazon EKS and Kubernetes -----------------------------------------------------------

IAM_ROLE_ARN_RE = re.compile(r"^arn:aws[a-z-]*:iam::[0-9]{12}:role/[\w+=,.@/-]{1,512}\Z")
IAM_PRINCIPAL_ARN_RE = re.compile(
    r"^arn:aws[a-z-]*:iam::[0-9]{12}:(role|user)/[\w+=,.@/-]{1,512}\Z")
"""IAM role and user ARNs (names of letters, digits and ``+=,.@_-``, with an optional path):
IAM user guide, "IAM identifiers"; EKS access entries take either, a role with its path
(EKS user guide, "Create access entries")."""
ADDON_VERSION_RE = re.compile(r"^v(\d+)\.(\d+)\.(\d+)-eksbuild\.\d+\Z")
DNS_LABEL_RE = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?\Z")
INSTANCE_TYPE_RE = re.compile(r"^[a-z][a-z0-9-]*\.[a-z0-9-]+\Z")
EKS_KUBERNETES_VERSIONS = ("1.34", "1.35", "1.36")
"""Kubernetes versions the stack can build an EKS cluster with: each has an EKS AL2023 Neuron
AMI (awslabs/amazon-eks-ami ``CHANGELOG.md`` @ 81fec2e8, 2026-07-23, release v20260714:
``amazon-eks-node-al2023-x86_64-neuron-1.34-v20260714``, ``-1.35-v20260714`` and
``-1.36-v20260714``; the newest 1.36 name read is
``amazon-eks-node-al2023-x86_64-neuron-1.36-v20260903``, and release v20261119's AMI table
still lists AL2023_x86_64_NEURON source AMIs for "K8s 1.33 – 1.35" and "K8s 1.36 – 1.37"), an
``aws_eks_v2.KubernetesVersion`` in aws-cdk-lib 2.275.0 (V1_25 .. V1_36) and a pinned kubectl
Lambda layer (``aws-cdk.lambda-layer-kubectl-v34`` 2.2.2, ``-v35`` 2.2.2, ``-v36`` 2.0.1;
PyPI). 1.37 has Neuron AMIs (v20261023, v20261119) but no ``KubernetesVersion.V1_37`` in
aws-cdk-lib 2.275.0, the newest on PyPI. :mod:`trn_ultracluster.orchestrators.eks.versions`
maps each to those (a test checks the two agree)."""
DEFAULT_KUBERNETES_VERSION = {"eks": "1.36", "hyperpod-eks": "1.34"}
"""``eks.kubernetes_version`` when it is null, per orchestrator. ``eks``: the newest of
:data:`EKS_KUBERNETES_VERSIONS`. ``hyperpod-eks``: 1.34, not 1.35, the newest of
:data:`HYPERPOD_EKS_KUBERNETES_VERSIONS`, for two reasons. Changing a default upgrades, on its
next deploy, the control plane of every deployed cluster that left the version null, in place
and for good ("you can update only one minor version at a time"; "You cannot downgrade the
Kubernetes of an Amazon EKS cluster": EKS user guide, "Update existing cluster to new
Kubernetes version"). And HyperPod's support of 1.35 is known only from a mirror of AWS's page.
Set ``eks.kubernetes_version: "1.35"`` to use it."""
HYPERPOD_EKS_KUBERNETES_VERSIONS = ("1.30", "1.31", "1.32", "1.33", "1.34", "1.35")
"""Kubernetes versions of the EKS cluster that SageMaker HyperPod supports: "SageMaker
HyperPod supports Kubernetes versions 1.30, 1.31, 1.32, 1.33, 1.34, and 1.35" (SageMaker
developer guide, "Getting started with Amazon EKS support in SageMaker HyperPod",
DOC_HYPERPOD_EKS, ``sagemaker-hyperpod-eks-prerequisites``; read from a GitHub mirror of the
page, c2hans/aws-docs ``docs/sagemaker/latest/dg/sagemaker-hyperpod-eks-prerequisites.md`` @
07f049df, date unknown, the newest revision found; older revisions list 1.28 .. 1.34). 1.36 is
not listed. The stack can build only those also in :data:`EKS_KUBERNETES_VERSIONS`."""
HYPERPOD_EKS_AUTH_MODES = ("API", "API_AND_CONFIG_MAP")
"""EKS authentication modes HyperPod supports (same page); aws-eks-v2 clusters use ``API``."""
VPC_CNI_MIN_FOR_HYPERPOD = (1, 18, 3)
""""SageMaker HyperPod requires the Amazon VPC Container Network Interface (CNI) plugin
version 1.18.3 or later" (same page)."""
HYPERPOD_HMA_IMAGE_ACCOUNTS: dict[str, str] = {
    "us-east-1": "767398015722", "us-west-2": "905418368575", "us-east-2": "851725546812",
    "us-west-1": "011528288828", "eu-central-1": "211125453373", "eu-north-1": "654654141839",
    "eu-west-1": "533267293120", "eu-west-2": "011528288831", "eu-south-2": "626887787726",
    "ap-northeast-1": "533267052152", "ap-south-1": "011528288864",
    "ap-southeast-1": "905418428165", "ap-southeast-2": "851725636348",
    "ap-southeast-3": "971422672635", "ap-southeast-4": "084375568333",
    "ca-central-1": "843976229209", "sa-east-1": "025066253954",
}
"""Region -> AWS account of the ECR repository ``hyperpod-health-monitoring-agent``, from the
HyperPod Helm chart's ``health-monitoring-agent/templates/_helpers.tpl``
(``regionAccountMap``; aws/sagemaker-hyperpod-cli commit 011ca927, vendored in
``orchestrators/hyperpod_eks/charts``). In another Region the chart falls back to the
us-east-1 image; the configuration refuses such a Region instead."""
JOB_MAX_RESTARTS_RANGE = (0, 100)
"""``hyperpod.job_max_restarts``: JobSet ``failurePolicy.maxRestarts`` is an int32 (Kubeflow
Trainer 2.3.0 CRD); 100 is our bound (each restart reloads the last checkpoint)."""
VPC_CNI_MIN_FOR_EFA_ONLY = (1, 19, 0)
"""First VPC CNI minor after aws/amazon-vpc-cni-k8s PR #3047 ("Filter for interfaces with
no ip info", merged 2024-09-26), which lets the CNI start on nodes with ``efa-only``
interfaces. The exact first release is not verified; v1.19.0 is the next minor."""
HYPERPOD_NEURON_PLUGIN_TYPES = ("ml.trn1.2xlarge", "ml.trn1.32xlarge", "ml.trn1n.32xlarge",
                                "ml.trn2.48xlarge")
"""The Trainium ``ml.`` types the Neuron device plugin of SageMaker HyperPod's Helm chart runs
on: the node affinity ``node.kubernetes.io/instance-type In [...]`` of
``charts/neuron-device-plugin/templates/k8s-neuron-device-plugin.yaml`` (aws/sagemaker-hyperpod-cli
commit 011ca927, vendored in ``orchestrators/hyperpod_eks/charts``; unchanged upstream as
stored in 2026-11). ``ml.trn2.3xlarge``, which HyperPod offers (botocore 1.40.72), is not
in it, so a HyperPod on EKS node of that type would offer no ``aws.amazon.com/neuron``."""

# --- standalone nodes ---------------------------------------------------------------------

@dataclass(frozen=True)
class NeuronStack:
    """One Neuron SDK release and what this project takes from it: the training image the
    container runtime builds on, the DLAMI the standalone nodes boot and the DLAMI's virtual
    environment of the ``dlami-venv`` runtime. Tests (tests/config/test_facts.py) check that
    they agree with each other, with ``training/Dockerfile`` and with the configuration's
    defaults.

    Attributes:
        sdk_release: the Neuron SDK release, e.g. ``"2.30.0"``.
        training_image: the base image of ``training/Dockerfile`` (its ``BASE_IMAGE``).
        dlami_name: the DLAMI's name without its date suffix; AMI names are this name, a
            space and a date (``"... (Ubuntu 20.04) 20240328"`` in the Neuron docs'
            ``announce-eos-dlami.rst``).
        dlami_venvs: the virtual environments that DLAMI has at :attr:`sdk_release`.
        venv: the one of :attr:`dlami_venvs` that ``runtime: dlami-venv`` uses.
        sources: attribute name -> where the value comes from.
    """

    sdk_release: str
    training_image: str
    dlami_name: str
    dlami_venvs: tuple[str, ...]
    venv: str
    sources: dict[str, str] = field(default_factory=dict, compare=False)
    packages: dict[str, str] = field(default_factory=dict)
    """Package -> pinned version that ``training/Dockerfile`` installs on :attr:`training_image`
    (empty when the base image is Neuron's own training image, which has them)."""
    base_dlami_parameter: str | None = None
    """Public SSM parameter of the AMI standalone nodes boot when the stack's own DLAMI cannot be
    found by release (``None``: :meth:`dlami_filters` finds it)."""

    @property
    def dlami_description(self) -> str:
        """The ``description`` filter of DescribeImages that selects this release's DLAMIs:
        "Each Neuron DLAMI includes the SDK version in its description" (Neuron DLAMI User
        Guide, "Finding a DLAMI for a specific Neuron SDK version", DOC_NEURON_DLAMI, at
        aws-neuron/aws-neuron-sdk v2.32.0 ``deploy/environments/dlami.rst``)."""
        return f"*Neuron SDK {self.sdk_release}*"

    def dlami_filters(self) -> list[dict[str, object]]:
        """The EC2 ``DescribeImages`` filters of this release's DLAMI: the guide's own
        ``name`` and ``description`` filters (its example: ``Name=name,Values=Deep Learning
        AMI Neuron*`` and ``Name=description,Values=*Neuron SDK 2.32.0*``), the name narrowed
        to :attr:`dlami_name`, and x86_64 / available (Trn1 and Trn2 are x86_64 instances)."""
        return [
            {"Name": "name", "Values": [f"{self.dlami_name} *"]},
            {"Name": "description", "Values": [self.dlami_description]},
            {"Name": "architecture", "Values": ["x86_64"]},
            {"Name": "state", "Values": ["available"]},
        ]


XLA_STACK = NeuronStack(
    sdk_release="2.30.0",
    training_image=("public.ecr.aws/neuron/pytorch-training-neuronx:"
                    "2.9.0-neuronx-py312-sdk2.30.0-ubuntu24.04"),
    dlami_name="Deep Learning AMI Neuron PyTorch 2.9 (Ubuntu 24.04)",
    dlami_venvs=("/opt/aws_neuronx_venv_pytorch_2_9",
                 "/opt/aws_neuronx_venv_pytorch_2_9_nxd_training",
                 "/opt/aws_neuronx_venv_pytorch_2_9_nxd_inference"),
    venv="/opt/aws_neuronx_venv_pytorch_2_9_nxd_training",
    sources={
        "sdk_release": (
            "The last release with both: the pytorch-training-neuronx DLC \"is no longer "
            "published\" from 2.31.0 (Neuron release notes, components/containers.rst), and "
            "\"Starting with Neuron SDK 2.31.0, NeuronX Distributed Training (NxDT) is no "
            "longer included in Neuron DLAMIs ... use a DLAMI associated with a previous Neuron "
            "SDK release (2.30.0 or earlier)\" (components/dlamis.rst, 2.31.0, 7/7/2026). From "
            "2.32.0 no PyTorch 2.9 DLAMI is published at all (dlamis.rst, 2.32.0). 2.30.0 was "
            "released May 21, 2026 (release-notes/prev/2.30.0.rst); there is no 2.30.1 tag."),
        "training_image": (
            "aws-neuron/deep-learning-containers README (commit 2be9ed1), pytorch-training-"
            "neuronx table: its top row, Neuron SDK 2.30.0; training/Dockerfile BASE_IMAGE."),
        "dlami_name": (
            "Neuron DLAMI User Guide at aws-neuron/aws-neuron-sdk v2.30.0, "
            "deploy/environments/dlami.rst, single framework DLAMIs table."),
        "dlami_venvs": (
            "Same guide at v2.30.0, \"Virtual Environments pre-installed\": the PyTorch 2.9 "
            "(Ubuntu 24.04) DLAMI lists these three; at v2.31.0 the nxd_training one is gone."),
        "venv": "Same table: \"PyTorch 2.9 NxD Training, Torch NeuronX\".",
        "dlami_lookup": (
            "No SSM parameter names a DLAMI of one SDK release: \"Currently, SSM parameters "
            "support finding the latest DLAMI ID for each DLAMI type. Support for finding "
            "specific Neuron SDK version DLAMIs will be added in future releases.\" (same "
            "guide, v2.30.0 to v2.32.0). The guide's way to a release's DLAMI is "
            "describe-images with owner amazon and a description filter (dlami_filters)."),
    },
)
"""The PyTorch/XLA (Trn1) stack of this project: Neuron SDK 2.30.0, its training image, its
PyTorch 2.9 DLAMI and that DLAMI's NxD Training environment. Not verified against a live
account (no AWS account here): that every Region with Trainium has the 2.30.0 DLAMI, and the
exact AMI name and description strings beyond what the guide quotes."""
NATIVE_STACK = NeuronStack(
    sdk_release="2.33.0",
    training_image="public.ecr.aws/docker/library/ubuntu:26.04",
    dlami_name="Deep Learning AMI Neuron torch-neuronx 2.14.0",
    dlami_venvs=("/opt/aws_neuronx_venv_torch_neuronx_2_14_0",),
    venv="/opt/aws_neuronx_venv_torch_neuronx_2_14_0",
    packages={
        "torch": "2.14.0",
        "torch-neuronx": "2.14.3.0.*",
        "neuronx-cc": "2.28.7631.0",
        "nki": "0.7.0",
        "aws-neuronx-runtime-lib": "2.35.30.0*",
        "aws-neuronx-collectives": "2.35.43.0*",
        "aws-neuronx-tools": "2.33.38.0*",
    },
    base_dlami_parameter="/aws/service/neuron/dlami/base/ubuntu-24.04/latest/image_id",
    sources={
        "sdk_release": (
            "TorchNeuron, the native PyTorch backend, is a public beta from Neuron SDK 2.33.0 "
            "(October 19, 2026; release-notes/2.33.0.rst): \"torch-neuronx 2.13.3.0 and 2.14.3.0 "
            "(Neuron 2.33.0 Release) ... adds the neuron device through the PyTorch PrivateUse1 "
            "extension ... to run them on Trainium2 or Trainium3\" (release-notes/components/"
            "torchneuron.rst). 2.33.1 (November 11, 2026) is a bug-fix release whose full "
            "package versions we could not read, so the pins are 2.33.0's."),
        "training_image": (
            "No training image: the 2.33.0 docs name a \"PyTorch Training (TorchNeuron)\" DLC "
            "(setup/pytorch/dlc.rst) but neither its repository nor a tag could be verified (the "
            "aws-neuron/deep-learning-containers README read stops at 2.32.0, commit 2be9ed1). So "
            "training/Dockerfile builds the stack on Ubuntu 26.04, the OS of every 2.33.0 Neuron "
            "image (\"Starting with Neuron 2.33.0, Neuron DLC images are published on Ubuntu 26.04 "
            "only\", deploy/environments/dlc-images.rst), from Docker's official image on ECR "
            "Public as Neuron's own DLC Dockerfiles do (pytorch/training/2.9.0/Dockerfile.neuronx: "
            "FROM public.ecr.aws/docker/library/ubuntu:24.04). Its Python is 3.14 (Ubuntu 26.04's "
            "default: OpenStack \"Tested Runtimes for 2026.2\"), which TorchNeuron supports "
            "(3.12, 3.13 and 3.14, torchneuron.rst)."),
        "packages": (
            "torch-neuronx 2.14.3.0 with PyTorch 2.14.0 (torchneuron.rst support matrix; "
            "\"install torch-neuronx==2.14.* with PyTorch 2.14\"; the full build string was not "
            "seen, hence 2.14.3.0.*); neuronx-cc 2.28.7631.0, nki 0.7.0, aws-neuronx-runtime-lib "
            "2.35.30.0, aws-neuronx-collectives 2.35.43.0, aws-neuronx-tools 2.33.38.0 (release-"
            "notes/releasecontent.html at v2.33.0); the apt versions end in a build hash, hence "
            "the trailing '*'. Pip index and PyTorch CPU index from setup/pytorch/update-dlami.rst "
            "(v2.33.0)."),
        "dlami_name": (
            "\"Starting with Neuron SDK 2.33.0, the Deep Learning AMI Neuron torch-neuronx 2.14.0 "
            "DLAMI provides TorchNeuron ... for PyTorch 2.14 on Ubuntu 24.04 and Ubuntu 26.04, in "
            "the /opt/aws_neuronx_venv_torch_neuronx_2_14_0 virtual environment\" "
            "(setup/pytorch/update-dlami.rst, v2.33.0). Its exact AMI name and SSM parameter are "
            "not in the docs read."),
        "base_dlami_parameter": (
            "The Neuron Base DLAMI's public parameter: prefix /aws/service/neuron/dlami/base/"
            "ubuntu-24.04 and suffix /latest/image_id (Neuron DLAMI User Guide, \"SSM Parameter "
            "Prefix\" table, deploy/environments/dlami.rst at v2.32.0). It has the Neuron driver "
            "and the EFA software; jobs run in the training image."),
    },
)
"""The native (TorchNeuron) stack of this project: Neuron SDK 2.33.0 on Trn2 and newer. Not
verified: that Neuron's apt repository serves Ubuntu 26.04 (training/Dockerfile uses the
``jammy`` suite, as Neuron's own Ubuntu 24.04 DLC does), the AMI name of the torch-neuronx
DLAMI (so the standalone nodes boot the Base DLAMI by its parameter instead), and that the
newest Base DLAMI's driver serves the 2.33.0 runtime in the image (the Base DLAMI follows the
newest SDK; no driver/runtime compatibility table was read)."""
STACK_RELEASES: dict[str, NeuronStack] = {"xla": XLA_STACK, "native": NATIVE_STACK}
"""Each Neuron training stack (:mod:`trn_ultracluster.contracts.neuron_stack`) -> its SDK
release: the DLAMI (or Base DLAMI parameter) the standalone nodes boot by default and the
virtual environment of ``runtime: dlami-venv``."""
NEURON_DLAMI_LATEST_PARAMETER = "/aws/service/neuron/dlami/pytorch-2.9/ubuntu-24.04/latest/image_id"
"""The public SSM parameter of the newest PyTorch 2.9 DLAMI (same guide, "SSM Parameter
Prefix" table; ``<prefix>/latest/image_id``). Not the default any more: no PyTorch 2.9 DLAMI
is published from SDK 2.32.0, so it stays on the last 2.31.x one (inferred from the release
notes, not read from SSM), which has no ``/opt/aws_neuronx_venv_pytorch_2_9_nxd_training``."""
AMI_ID_RE = re.compile(r"^ami-([0-9a-f]{8}|[0-9a-f]{17})\Z")
"""An AMI id: ``ami-`` and 8 or 17 hexadecimal characters (EC2 user guide, "Resource IDs",
DOC_RESOURCE_IDS)."""
NEURON_DLAMI_ROOT_DEVICE = "/dev/sda1"
"""Root device of the Ubuntu Neuron DLAMIs: EC2 reserves ``/dev/sda1`` and ``/dev/xvda`` for
root volumes (EC2 user guide, "Device names for volumes on Amazon EC2 instances"), and
Ubuntu-based images use ``/dev/sda1``; Hugging Face's build of its Neuron AMI on the Ubuntu
Neuron DLAMI maps ``/dev/sda1`` to a 512 GB root volume (huggingface/optimum-neuron
``infrastructure/ami/hcl2-files/build.pkr.hcl``). Not verified with DescribeImages (no AWS
account here)."""
ROOT_DEVICE_RE = re.compile(r"^/dev/[a-z][a-z0-9]*\Z")
SSM_PARAMETER_NAME_RE = re.compile(r"^/[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)*\Z")
SSM_PARAMETER_NAME_CHARS = 1011
SSM_PARAMETER_MAX_LEVELS = 15
"""SSM parameter names: letters, digits and ``_.-``, ``/`` between the levels of a
hierarchy (a leading ``/`` for hierarchical names), at most fifteen levels; the 2048
characters the API reports include 1037 reserved for the ARN, which leaves 1011 (SSM API
reference, ``PutParameter``, ``Name``, DOC_SSM_PARAMETER_NAMES)."""
LINUX_PATH_RE = re.compile(r"^/[A-Za-z0-9_.+-]+(/[A-Za-z0-9_.+-]+)*\Z")
"""An absolute path without spaces, quotes or shell characters (our rule: it goes into shell
scripts unquoted-safe)."""

# --- tags --------------------------------------------------------------------------------

TAG_PUNCTUATION = "+ - = . _ : / @"
"""Punctuation allowed in tag keys and values besides letters, numbers and spaces.

Source:
AWS tagging guide, "Tag naming limits and requirements" (DOC_TAGS): keys 1-128 and values
0-256 characters of letters, numbers and spaces representable in UTF-8 and + - = . _ : / @;
the "aws:" prefix is reserved for AWS. CloudFormation refuses other characters only at
deploy time, after the template is written."""
TAG_KEY_CHARS = 128
TAG_VALUE_CHARS = 256

# --- observability (dashboard, alarms, Container Insights) -------------------------------
DOC_SNS_EMAIL = "https://docs.aws.amazon.com/sns/latest/dg/sns-email-notifications.html"
DOC_CW_ALARMS = (
    "https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/AlarmThatSendsEmail.html")
DOC_CW_OBSERVABILITY_ADDON = (
    "https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/"
    "install-CloudWatch-Observability-EKS-addon.html")
EMAIL_RE = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+\Z")
"""A plausible e-mail address; SNS itself confirms it with a mail (DOC_SNS_EMAIL)."""
FSX_FULL_PERCENT_RANGE = (50, 99)
"""Our bounds for the file-system alarm: below 50 % it would fire on an ordinary file system,
at 100 % never."""
IDLE_HOURS_RANGE = (1, 24)
"""The idle alarm evaluates 1-hour periods; 24 of them is one day, within the limit of
PutMetricAlarm (EvaluationPeriods x Period at most one day, 86,400 s, for alarms with periods
under one hour, longer only for hourly and longer periods: CloudWatch API reference,
PutMetricAlarm ``EvaluationPeriods``). We stay at one day either way."""
CLOUDWATCH_OBSERVABILITY_MIN = (3, 1, 0)
"""Oldest ``amazon-cloudwatch-observability`` add-on that takes its IAM role through EKS Pod
Identity ("If you use version 3.1.0 or later of the add-on, you can use EKS Pod Identity",
CloudWatch user guide, "Quick start with the Amazon CloudWatch Observability EKS add-on",
https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/Container-Insights-setup-EKS-addon.html).
It is newer than the versions that brought the Neuron metrics (v1.5.0-eksbuild.1) and the
EFA metrics (v1.5.2-eksbuild.1), see
:mod:`trn_ultracluster.orchestrators.eks.observability`."""
