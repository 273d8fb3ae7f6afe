"""Cluster configuration: parsed once, validated once, then frozen.

Layers, lowest precedence first:

1. the defaults of :class:`ClusterConfig`;
2. the ``trn-ultracluster`` object in ``cdk.json`` context;
3. a profile file given with ``-c config=path.yaml``;
4. single keys given with ``-c key=value``; nested keys use dots
   (``-c fsx.storage_capacity_gib=2400``), lists use commas (``-c az_ids=usw2-az4,usw2-az1``).

Parsing has two phases. Pydantic checks shape and types (unknown keys, wrong types, values
outside a fixed set). Then :data:`RULES` check the AWS rules that span fields (FSx capacity
steps per deployment type, EFA needs, CIDR sizes, ...). Every problem becomes a
:class:`ConfigIssue` that names the field, the bad value, what is allowed and where to read
more; :func:`load_config` raises :class:`ConfigError` with all of them, before any construct
is created.

Constructs never read context: they receive the frozen :class:`ClusterConfig`.
"""

from __future__ import annotations

import copy
import ipaddress
import math
import re
import unicodedata
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from trn_ultracluster.contracts.catalog import CATALOG, InstanceSpec, get_instance
from trn_ultracluster.contracts.hyperpod import ALL_NODES_PARTITION, CONTROLLER_GROUP, LOGIN_GROUP

__all__ = [
    "CONTEXT_KEY",
    "PROFILE_CONTEXT_KEY",
    "CapacityConfig",
    "ClusterConfig",
    "ConfigError",
    "ConfigIssue",
    "DataRepositoryConfig",
    "FsxConfig",
    "LoadedConfig",
    "NodeCounts",
    "TrainingImageConfig",
    "load_config",
    "parse_config",
    "region_of_az_id",
]

CONTEXT_KEY = "trn-ultracluster"
"""cdk.json context key that holds the default configuration object."""

PROFILE_CONTEXT_KEY = "config"
"""``-c config=path.yaml`` names a profile file."""

README_CONFIG = "README.md#configuration"

# --- documentation links, one per topic ------------------------------------------------
DOC_AZ_IDS = "https://docs.aws.amazon.com/ram/latest/userguide/working-with-az-ids.html"
DOC_INSTANCES = "https://docs.aws.amazon.com/ec2/latest/instancetypes/ac.html"
DOC_EFA = "https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa-acc-inst-types.html"
DOC_VPC_CIDR = "https://docs.aws.amazon.com/vpc/latest/userguide/vpc-cidr-blocks.html"
DOC_SUBNET_IPS = "https://docs.aws.amazon.com/vpc/latest/userguide/subnet-sizing.html"
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
DOC_EBS_GP3 = "https://docs.aws.amazon.com/ebs/latest/userguide/general-purpose.html"
DOC_K8S_LARGE = "https://kubernetes.io/docs/setup/best-practices/cluster-large/"
DOC_FSX_QUOTAS = "https://docs.aws.amazon.com/fsx/latest/LustreGuide/limits.html"
DOC_TAGS = "https://docs.aws.amazon.com/tag-editor/latest/userguide/tagging.html"
DOC_HYPERPOD = "https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod.html"
DOC_RESOURCE_IDS = "https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/resource-ids.html"

# --- AWS facts used by the rules -------------------------------------------------------

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
_AZ_ID_RE = re.compile(r"^(?P<prefix>[a-z]+[0-9]+)-az(?P<n>[0-9]+)$")

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
FSX_LUSTRE_VERSIONS: dict[str, tuple[str, ...]] = {
    # FileSystemTypeVersion allowed per deployment type. PERSISTENT_2 needs 2.12 or newer.
    # Source: FSx for Lustre user guide, "Lustre versions" (DOC_FSX_VERSION).
    "SCRATCH_1": ("2.10", "2.12", "2.15"),
    "SCRATCH_2": ("2.10", "2.12", "2.15"),
    "PERSISTENT_1": ("2.10", "2.12", "2.15"),
    "PERSISTENT_2": ("2.12", "2.15"),
}

SUBNET_RESERVED_IPS = 5
"""AWS reserves the first four and the last address of every subnet (DOC_SUBNET_IPS)."""
PODS_PER_NODE = 110
"""Pod IPs budgeted per node: the kubelet's default ``maxPods`` (Kubernetes docs,
"Considerations for large clusters": no more than 110 pods per node). The VPC CNI gives
every pod a VPC address, so the compute subnet must hold them."""
PUBLIC_SUBNET_MASK = 24
"""Public subnets hold only NAT gateways and load balancers: a /24 each."""
MIN_PRIVATE_SUBNET_MASK = 20
"""Private subnets get at least a /20 when the VPC has room, for growth."""
PRIVATE_RANGES = tuple(ipaddress.ip_network(n) for n in (
    "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10"))
"""VPC IPv4 blocks this stack accepts: the RFC 1918 private ranges and RFC 6598 shared
address space. The VPC user guide ("VPC CIDR blocks", DOC_VPC_CIDR) recommends the RFC 1918
ranges and lists 100.64.0.0/10 among the allowed blocks; a publicly routable block would
shadow real internet addresses for the nodes (which reach the internet through NAT)."""
MAX_NODES = 5000
"""Upper bound of ``nodes.max``: Kubernetes supports clusters of at most 5,000 nodes
(kubernetes.io, "Considerations for large clusters"), which also bounds the EKS node group;
a HyperPod instance group takes at most 6,758 instances (botocore SageMaker model,
``ClusterInstanceCount``), and the VPC's address space is usually the tighter bound
(:func:`_vpc_cidr`)."""
FSX_MAX_STORAGE_GIB = 2_147_483_647
"""Largest ``StorageCapacity`` the FSx API takes (botocore FSx model, shape
``StorageCapacity``: max 2147483647 GiB)."""
FSX_DEFAULT_QUOTA_GIB = 100_800
"""Default account quota "Total storage for all file systems" of FSx for Lustre in the
larger Regions (FSx for Lustre user guide, "Quotas": 100,800 GiB in us-east-1, us-east-2,
us-west-2 and others, 25,200 GiB in smaller Regions; adjustable up to petabytes)."""
VPC_PREFIX_RANGE = (16, 28)
"""A VPC CIDR block is between /16 and /28 (DOC_VPC_CIDR)."""
ROOT_VOLUME_GIB_RANGE = (64, 16384)
"""Our minimum (Neuron container images are tens of GiB) to the gp3 maximum, 16 TiB
(DOC_EBS_GP3)."""
_RESOURCE_ID_RE = re.compile(r"^cr-([0-9a-f]{8}|[0-9a-f]{17})$")
"""Capacity Reservation / Capacity Block IDs: ``cr-`` and 8 or 17 hex digits
(DOC_RESOURCE_IDS)."""


def region_of_az_id(az_id: str) -> str:
    """Return the AWS Region of an AZ ID, e.g. ``"usw2-az4"`` -> ``"us-west-2"``.

    Raises:
        ValueError: the AZ ID is malformed or its region code is not in
            :data:`AZ_ID_PREFIX_TO_REGION`.
    """
    match = _AZ_ID_RE.match(az_id)
    if not match:
        raise ValueError(f"{az_id!r} is not an AZ ID like 'usw2-az4'")
    prefix = match.group("prefix")
    if prefix not in AZ_ID_PREFIX_TO_REGION:
        known = ", ".join(sorted(AZ_ID_PREFIX_TO_REGION))
        raise ValueError(f"unknown region code {prefix!r} in AZ ID {az_id!r}; known: {known}")
    return AZ_ID_PREFIX_TO_REGION[prefix]


# --- the model ---------------------------------------------------------------------------


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=False)


class NodeCounts(_Frozen):
    """Trainium node counts of the compute node group / instance group.

    Default: 0 minimum (the cluster can go idle), 1 desired, 1 maximum.
    """

    min: int = 0
    desired: int = 1
    max: int = 1


class DataRepositoryConfig(_Frozen):
    """An FSx data repository association (DRA) that links a file system path to S3.

    Attributes:
        s3_path: ``s3://bucket/prefix/``; default ``None`` links the stack's data bucket.
        file_system_path: the part of the file system linked to S3: ``/`` (default) links
            the whole file system, so everything written to it is exported (and, with
            ``data_removal_policy: retain``, kept after ``cdk destroy``); a path such as
            ``/s3`` links only that directory.
        auto_import: new and changed S3 objects appear in the file system.
        auto_export: new and changed files (checkpoints) are written back to S3.
    """

    s3_path: str | None = None
    file_system_path: str = "/"
    auto_import: bool = True
    auto_export: bool = True


_FLOAT_VERSIONS = {float(v): v for v in ("2.10", "2.12", "2.15")}


class FsxConfig(_Frozen):
    """FSx for Lustre shared storage.

    Default: PERSISTENT_2, 1200 GiB, 250 MB/s/TiB, LZ4 compression, Lustre 2.15, linked to
    the stack's data bucket over the whole file system (``/``).
    """

    deployment_type: Literal["SCRATCH_1", "SCRATCH_2", "PERSISTENT_1", "PERSISTENT_2"] = (
        "PERSISTENT_2"
    )
    storage_capacity_gib: int = 1200
    per_unit_storage_throughput: int | None = 250
    data_compression: Literal["NONE", "LZ4"] = "LZ4"
    lustre_version: Literal["2.10", "2.12", "2.15"] = "2.15"
    data_repository: DataRepositoryConfig | None = DataRepositoryConfig()

    @field_validator("lustre_version", mode="before")
    @classmethod
    def _version_as_text(cls, value: Any) -> Any:
        """YAML reads ``2.10`` as the float 2.1: map the floats of the known versions back
        to their text, and show any other float as written (``2.150001`` is not 2.15)."""
        if isinstance(value, float):
            return _FLOAT_VERSIONS.get(value, repr(value))
        return value


class CapacityConfig(_Frozen):
    """Where compute capacity comes from.

    ``on-demand`` (default); ``capacity-reservation`` targets an On-Demand Capacity
    Reservation; ``capacity-block`` targets an EC2 Capacity Block for ML. Both need
    ``reservation_id``.
    """

    type: Literal["on-demand", "capacity-reservation", "capacity-block"] = "on-demand"
    reservation_id: str | None = None


class EksAddonVersionsConfig(_Frozen):
    """Versions of the EKS add-ons (``aws eks describe-addon-versions`` names them).

    Default ``null`` for every add-on: EKS installs its default version for the cluster's
    Kubernetes version (no pinned build could be verified without an AWS account). To pin
    one, pick it from
    ``aws eks describe-addon-versions --kubernetes-version 1.36 --addon-name <name>``.
    See docs/eks.md "What is installed, and why".

    Attributes:
        vpc_cni: ``vpc-cni``; a pinned version must be v1.19.0 or newer with
            ``efa_interface_layout: efa-only`` (the CNI skips interfaces without an IP
            address since aws/amazon-vpc-cni-k8s PR #3047, merged 2024-09-26, after v1.18).
        coredns: ``coredns``.
        kube_proxy: ``kube-proxy`` (a pinned minor version must match the cluster's).
        eks_pod_identity_agent: ``eks-pod-identity-agent``.
        aws_fsx_csi_driver: ``aws-fsx-csi-driver``.
    """

    vpc_cni: str | None = None
    coredns: str | None = None
    kube_proxy: str | None = None
    eks_pod_identity_agent: str | None = None
    aws_fsx_csi_driver: str | None = None


class EksConfig(_Frozen):
    """EKS orchestrator settings (used when ``orchestrator`` is ``eks``).

    Default: API endpoint public and private, public side open to ``0.0.0.0/0`` (a warning
    asks you to narrow it), no extra admin role, two ``m6i.xlarge`` system nodes, jobs in
    the ``training`` namespace, the add-on versions of :class:`EksAddonVersionsConfig`.

    Attributes:
        endpoint_access: ``public-and-private`` (kubectl from the allow-list and from the
            VPC) or ``private`` (only from inside the VPC).
        public_access_cidrs: IPv4 CIDR blocks allowed to the public endpoint.
        admin_role_arn: IAM role given cluster admin through an EKS access entry
            (``AmazonEKSClusterAdminPolicy``), e.g. the role your team uses with kubectl.
        deployer_principal_arn: the IAM role or user that runs the deploy, also given
            cluster admin. ``make deploy`` sets it (``-c eks.deployer_principal_arn=...``)
            to the caller of ``aws sts get-caller-identity``, an assumed role resolved to its
            role ARN, so that whoever deployed can use kubectl and the job CLI at once.
            With neither set, only the CloudFormation execution role is admin.
        system_instance_type: instance type of the 2 on-demand system nodes (controllers,
            add-ons); must not be a Trainium type.
        training_namespace: Kubernetes namespace of training jobs and the FSx claim.
        addon_versions: EKS add-on versions.
    """

    endpoint_access: Literal["public-and-private", "private"] = "public-and-private"
    public_access_cidrs: tuple[str, ...] = ("0.0.0.0/0",)
    admin_role_arn: str | None = None
    deployer_principal_arn: str | None = None
    system_instance_type: str = "m6i.xlarge"
    training_namespace: str = "training"
    addon_versions: EksAddonVersionsConfig = EksAddonVersionsConfig()


class HyperPodWorkerGroupConfig(_Frozen):
    """One HyperPod worker instance group = one Slurm partition of Trainium nodes.

    Attributes:
        name: instance group name (``[a-zA-Z0-9](-*[a-zA-Z0-9])*``, at most 63 characters).
        partition: Slurm partition the group's nodes join (same pattern).
        instance_count: nodes in the group. Default ``None``: ``nodes.desired``.
    """

    name: str = "workers"
    partition: str = "trainium"
    instance_count: int | None = None


class HyperPodConfig(_Frozen):
    """SageMaker HyperPod Slurm settings (used when ``orchestrator`` is ``hyperpod-slurm``).

    Default: a cluster named ``trn-ultracluster`` with an ``ml.c5.xlarge`` Slurm controller,
    an ``ml.m5.4xlarge`` login node, one worker group of ``nodes.desired`` Trainium nodes in
    the ``trainium`` partition, each with a 500 GiB EBS volume at ``/opt/sagemaker``, deep
    health checks (stress and connectivity) when nodes start, and automatic node recovery.

    Attributes:
        cluster_name: HyperPod cluster name (1-63 characters, letters, digits, hyphens).
        controller_instance_type: ``ml.`` type of the Slurm controller.
        login_instance_type: ``ml.`` type of the login node; ``null`` for no login node.
        worker_groups: one or more Trainium worker groups; each is a Slurm partition.
        worker_ebs_volume_gib: extra EBS volume per worker, GiB (1-16384), mounted by
            HyperPod at ``/opt/sagemaker`` (container images, local scratch).
        deep_health_checks: checks run on workers when they start: ``InstanceStress``,
            ``InstanceConnectivity``; empty for none.
        node_recovery: ``Automatic`` replaces or reboots faulty nodes; ``None`` only
            labels them.
        training_plan_arn: SageMaker training plan for the workers (reserved capacity),
            ``arn:aws:sagemaker:<region>:<account>:training-plan/<name>``; ``null`` for
            on-demand capacity.
    """

    cluster_name: str = "trn-ultracluster"
    controller_instance_type: str = "ml.c5.xlarge"
    login_instance_type: str | None = "ml.m5.4xlarge"
    worker_groups: tuple[HyperPodWorkerGroupConfig, ...] = (HyperPodWorkerGroupConfig(),)
    worker_ebs_volume_gib: int = 500
    deep_health_checks: tuple[Literal["InstanceStress", "InstanceConnectivity"], ...] = (
        "InstanceStress",
        "InstanceConnectivity",
    )
    node_recovery: Literal["Automatic", "None"] = "Automatic"
    training_plan_arn: str | None = None


class TrainingImageConfig(_Frozen):
    """How ``cdk deploy`` builds the training image (``training/Dockerfile``).

    Attributes:
        build: ``codebuild`` (default): built in AWS CodeBuild during the deploy and pushed
            to the stack's ECR repository; no Docker needed where ``cdk deploy`` runs.
            ``local``: built by the CDK CLI with the local Docker and published to the CDK
            bootstrap repository (faster iteration when Docker is at hand).
    """

    build: Literal["codebuild", "local"] = "codebuild"


class ClusterConfig(_Frozen):
    """The whole cluster configuration (frozen). See README "Configuration".

    Attributes:
        instance_type: Trainium instance type; one of :data:`catalog.CATALOG`.
        nodes: node counts; 0 allowed for an idle cluster.
        az_ids: AZ IDs; the first holds the compute nodes and FSx, the others the
            services that need two AZs (EKS control plane, NAT per AZ).
        vpc_cidr: VPC IPv4 CIDR block.
        nat_gateways: 1, or one per AZ.
        placement_group: put the nodes in a cluster placement group.
        efa_interface_layout: ``efa`` (every card an EFA interface with an IP, as in the
            AWS Neuron samples) or ``efa-only`` (ENA primary plus an EFA-only interface,
            without IP, on every card, as the EC2 user guide recommends today).
        root_volume_gib: size of each node's encrypted gp3 root volume, GiB.
        fsx: FSx for Lustre settings.
        orchestrator: ``eks`` or ``hyperpod-slurm``.
        eks: EKS settings (used with ``orchestrator: eks``).
        hyperpod: HyperPod settings (used with ``orchestrator: hyperpod-slurm``).
        capacity: on-demand, capacity reservation or Capacity Block.
        training_image: how the training image is built.
        data_removal_policy: ``retain`` keeps the data bucket and FSx on ``cdk destroy``.
        tags: tags on every resource.
    """

    instance_type: str = "trn1.32xlarge"
    nodes: NodeCounts = NodeCounts()
    az_ids: tuple[str, ...] = ("usw2-az4", "usw2-az1")
    vpc_cidr: str = "10.0.0.0/16"
    nat_gateways: int = 1
    placement_group: bool = True
    efa_interface_layout: Literal["efa", "efa-only"] = "efa"
    root_volume_gib: int = 512
    fsx: FsxConfig = FsxConfig()
    orchestrator: Literal["eks", "hyperpod-slurm"] = "eks"
    eks: EksConfig = EksConfig()
    hyperpod: HyperPodConfig = HyperPodConfig()
    capacity: CapacityConfig = CapacityConfig()
    training_image: TrainingImageConfig = TrainingImageConfig()
    data_removal_policy: Literal["retain", "destroy"] = "retain"
    tags: dict[str, str] = Field(default_factory=dict)

    # --- derived values (never configured) ---
    @property
    def instance(self) -> InstanceSpec:
        """Catalog entry of :attr:`instance_type`."""
        return get_instance(self.instance_type)

    @property
    def region(self) -> str:
        """AWS Region, derived from the first AZ ID."""
        return region_of_az_id(self.az_ids[0])

    @property
    def compute_az_id(self) -> str:
        """AZ ID of the compute nodes and FSx (the first AZ ID)."""
        return self.az_ids[0]

    @property
    def ips_per_node(self) -> int:
        """VPC addresses one node may take: one per EFA interface with an IP, plus pods."""
        spec = self.instance
        with_ip = spec.network_cards if self.efa_interface_layout == "efa" else 1
        return with_ip + PODS_PER_NODE

    @property
    def private_subnet_mask(self) -> int:
        """Prefix length of each private subnet: room for ``nodes.max`` nodes, at least /20
        when the VPC has room (see :data:`MIN_PRIVATE_SUBNET_MASK`)."""
        needed = self.nodes.max * self.ips_per_node + SUBNET_RESERVED_IPS
        mask = 32 - math.ceil(math.log2(max(needed, 16)))
        vpc_prefix = ipaddress.ip_network(self.vpc_cidr, strict=False).prefixlen
        roomy = MIN_PRIVATE_SUBNET_MASK
        if _fits(vpc_prefix, len(self.az_ids), min(mask, roomy)):
            return min(mask, roomy)
        return mask

    @property
    def hyperpod_worker_counts(self) -> dict[str, int]:
        """HyperPod worker group name -> instance count (``nodes.desired`` where not given)."""
        return {g.name: self.worker_group_count(g) for g in self.hyperpod.worker_groups}

    def worker_group_count(self, group: HyperPodWorkerGroupConfig) -> int:
        """Instances of one HyperPod worker group: its ``instance_count`` or ``nodes.desired``."""
        return self.nodes.desired if group.instance_count is None else group.instance_count

    @property
    def uses_placement_group(self) -> bool:
        """Whether the stack creates a cluster placement group."""
        return self.placement_group and self.instance.supports_efa


def _fits(vpc_prefix: int, az_count: int, private_mask: int) -> bool:
    """True when ``az_count`` private and public subnets fit in the VPC block.

    Subnets are allocated largest first (private, then public), so there is no alignment
    waste and a sum of sizes is exact.
    """
    need = az_count * (2 ** (32 - private_mask) + 2 ** (32 - PUBLIC_SUBNET_MASK))
    return need <= 2 ** (32 - vpc_prefix)


# --- issues and errors -------------------------------------------------------------------


@dataclass(frozen=True)
class ConfigIssue:
    """One problem in the configuration.

    Attributes:
        field: dotted path of the field, e.g. ``fsx.storage_capacity_gib``.
        value: the value given.
        allowed: what is allowed, as a sentence fragment ("must be ...").
        doc: where to read more (URL or README anchor).
        severity: ``error`` stops synth; ``warning`` is printed and synth goes on.
    """

    field: str
    value: Any
    allowed: str
    doc: str
    severity: Literal["error", "warning"] = "error"

    @property
    def message(self) -> str:
        """``field = value: allowed (see doc)``, without the severity, on one line; a long
        value is cut (:data:`MAX_VALUE_CHARS`) and says how long it was."""
        field = self.field if self.field.isprintable() and " " not in self.field \
            else _shown(self.field)
        return (f"{field} = {_shown(self.value)}: {' '.join(self.allowed.split())} "
                f"(see {self.doc})")

    def __str__(self) -> str:
        return f"{self.severity}: {self.message}"


MAX_VALUE_CHARS = 120
"""Longest value shown in a message; longer ones are cut with their length."""


def _shown(value: Any) -> str:
    text = " ".join(repr(value).split())
    if len(text) <= MAX_VALUE_CHARS:
        return text
    return f"{text[:MAX_VALUE_CHARS - 3]}... ({len(repr(value))} characters)"


class ConfigError(ValueError):
    """Raised by :func:`load_config` when the configuration has errors.

    Attributes:
        issues: the errors (and any warnings found with them), one line each in ``str()``.
    """

    def __init__(self, issues: list[ConfigIssue]):
        self.issues = issues
        lines = "\n".join(f"  {issue}" for issue in issues)
        super().__init__(f"invalid TrnUltraCluster configuration:\n{lines}")


@dataclass(frozen=True)
class LoadedConfig:
    """A validated configuration and the warnings found while validating it."""

    config: ClusterConfig
    warnings: tuple[ConfigIssue, ...] = ()


# --- rules ----------------------------------------------------------------------------

Rule = Callable[[ClusterConfig], Iterator[ConfigIssue]]
RULES: list[Rule] = []


def _rule(fn: Rule) -> Rule:
    RULES.append(fn)
    return fn


def _one_of(values: tuple[Any, ...] | list[Any]) -> str:
    items = [repr(v) for v in values]
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " or " + items[-1]


@_rule
def _instance_type_known(c: ClusterConfig) -> Iterator[ConfigIssue]:
    if c.instance_type not in CATALOG:
        yield ConfigIssue(
            "instance_type", c.instance_type, f"must be one of {_one_of(sorted(CATALOG))}",
            DOC_INSTANCES,
        )


@_rule
def _node_counts(c: ClusterConfig) -> Iterator[ConfigIssue]:
    for name in ("min", "desired", "max"):
        value = getattr(c.nodes, name)
        if value < 0:
            yield ConfigIssue(f"nodes.{name}", value, "must be 0 or more", README_CONFIG)
    n = c.nodes
    if min(n.min, n.desired, n.max) < 0:
        return
    if n.min > n.max:
        yield ConfigIssue("nodes.min", n.min, f"must be at most nodes.max ({n.max})", README_CONFIG)
    elif not n.min <= n.desired <= n.max:
        yield ConfigIssue(
            "nodes.desired", n.desired,
            f"must be between nodes.min ({n.min}) and nodes.max ({n.max})", README_CONFIG,
        )
    if n.max == 0:
        yield ConfigIssue("nodes.max", 0, "must be at least 1 (use nodes.desired = 0 to idle)",
                          README_CONFIG)
    if n.max > MAX_NODES:
        yield ConfigIssue("nodes.max", n.max,
                          f"must be at most {MAX_NODES} (the largest Kubernetes cluster)",
                          DOC_K8S_LARGE)


@_rule
def _multi_node_needs_efa(c: ClusterConfig) -> Iterator[ConfigIssue]:
    spec = CATALOG.get(c.instance_type)
    if spec is not None and not spec.supports_efa and c.nodes.max > 1:
        efa_types = sorted(name for name, s in CATALOG.items() if s.supports_efa)
        yield ConfigIssue(
            "nodes.max", c.nodes.max,
            f"must be 1 for {c.instance_type}, which has no EFA (single-node only); "
            f"for more nodes use {_one_of(efa_types)}",
            DOC_EFA,
        )


@_rule
def _az_ids(c: ClusterConfig) -> Iterator[ConfigIssue]:
    if len(c.az_ids) < 2:
        yield ConfigIssue(
            "az_ids", list(c.az_ids),
            "must list at least 2 AZ IDs of one Region (first = compute AZ; a second for "
            "the services that need two AZs)", DOC_AZ_IDS,
        )
    if len(set(c.az_ids)) != len(c.az_ids):
        yield ConfigIssue("az_ids", list(c.az_ids), "must not repeat an AZ ID", DOC_AZ_IDS)
    regions: dict[str, str] = {}
    for i, az_id in enumerate(c.az_ids):
        match = _AZ_ID_RE.match(az_id)
        if not match:
            yield ConfigIssue(f"az_ids[{i}]", az_id,
                              "must be an AZ ID like 'usw2-az4' (AZ IDs name the same zone in "
                              "every account; AZ names like 'us-west-2a' do not)", DOC_AZ_IDS)
        elif match.group("prefix") not in AZ_ID_PREFIX_TO_REGION:
            yield ConfigIssue(f"az_ids[{i}]", az_id,
                              f"has an unknown Region code {match.group('prefix')!r}; known: "
                              f"{', '.join(sorted(AZ_ID_PREFIX_TO_REGION))}", DOC_AZ_IDS)
        else:
            regions[az_id] = region_of_az_id(az_id)
    if len(set(regions.values())) > 1:
        by_region = ", ".join(f"{az} is in {region}" for az, region in regions.items())
        yield ConfigIssue("az_ids", list(c.az_ids),
                          f"must all be in one Region ({by_region})", DOC_AZ_IDS)


@_rule
def _az_offers_instance(c: ClusterConfig) -> Iterator[ConfigIssue]:
    spec = CATALOG.get(c.instance_type)
    if spec is None or not c.az_ids or c.az_ids[0] in spec.az_ids_seen:
        return
    yield ConfigIssue(
        "az_ids[0]", c.az_ids[0],
        f"{c.instance_type} has not been seen offered there (seen in "
        f"{', '.join(spec.az_ids_seen)}); run `preflight` to check your account",
        DOC_AZ_IDS, severity="warning",
    )


@_rule
def _vpc_cidr(c: ClusterConfig) -> Iterator[ConfigIssue]:
    try:
        net = ipaddress.ip_network(c.vpc_cidr, strict=True)
    except ValueError as err:
        yield ConfigIssue("vpc_cidr", c.vpc_cidr,
                          f"must be an IPv4 CIDR block like '10.0.0.0/16' ({err})", DOC_VPC_CIDR)
        return
    lo, hi = VPC_PREFIX_RANGE
    if net.version != 4 or not lo <= net.prefixlen <= hi:
        yield ConfigIssue("vpc_cidr", c.vpc_cidr,
                          f"must be an IPv4 block between /{lo} and /{hi}", DOC_VPC_CIDR)
        return
    if not any(net.subnet_of(r) for r in PRIVATE_RANGES):
        yield ConfigIssue("vpc_cidr", c.vpc_cidr,
                          "must lie in a private range: 10.0.0.0/8, 172.16.0.0/12 or "
                          "192.168.0.0/16 (RFC 1918) or 100.64.0.0/10 (RFC 6598)", DOC_VPC_CIDR)
        return
    if not 0 <= c.nodes.max <= MAX_NODES or c.instance_type not in CATALOG or not c.az_ids:
        return  # reported by their own rules
    mask = c.private_subnet_mask
    if not _fits(net.prefixlen, len(c.az_ids), mask):
        azs = len(c.az_ids)
        need_prefix = 32 - math.ceil(math.log2(azs * (2 ** (32 - mask) + 2 ** (32 - PUBLIC_SUBNET_MASK))))
        if need_prefix >= lo:
            advice = f"use a /{need_prefix} or larger"
        else:
            advice = (f"no VPC is that large (at most /{lo}); with {azs} AZ IDs at most "
                      f"{_max_nodes(c, lo)} nodes fit: lower nodes.max")
        yield ConfigIssue(
            "vpc_cidr", c.vpc_cidr,
            f"is too small: {c.nodes.max} nodes x {c.ips_per_node} addresses "
            f"({c.ips_per_node - PODS_PER_NODE} interfaces + {PODS_PER_NODE} pods) need a "
            f"/{mask} private subnet in each of {azs} AZs plus a /{PUBLIC_SUBNET_MASK} public "
            f"one; {advice}",
            DOC_SUBNET_IPS,
        )


def _max_nodes(c: ClusterConfig, vpc_prefix: int) -> int:
    """Most nodes whose subnets fit a VPC of ``vpc_prefix`` with ``c``'s AZ IDs."""
    for mask in range(17, 29):
        if _fits(vpc_prefix, len(c.az_ids), mask):
            return (2 ** (32 - mask) - SUBNET_RESERVED_IPS) // c.ips_per_node
    return 0


@_rule
def _nat_gateways(c: ClusterConfig) -> Iterator[ConfigIssue]:
    allowed = sorted({1, len(c.az_ids)})
    if c.nat_gateways not in allowed:
        yield ConfigIssue("nat_gateways", c.nat_gateways,
                          f"must be {_one_of(allowed)} (one, or one per AZ ID)", DOC_NAT)


@_rule
def _root_volume(c: ClusterConfig) -> Iterator[ConfigIssue]:
    lo, hi = ROOT_VOLUME_GIB_RANGE
    if not lo <= c.root_volume_gib <= hi:
        yield ConfigIssue("root_volume_gib", c.root_volume_gib,
                          f"must be between {lo} and {hi} GiB", DOC_EBS_GP3)


@_rule
def _fsx_capacity(c: ClusterConfig) -> Iterator[ConfigIssue]:
    gib, kind = c.fsx.storage_capacity_gib, c.fsx.deployment_type
    # Source: CloudFormation AWS::FSx::FileSystem StorageCapacity (DOC_FSX_CAPACITY):
    # SCRATCH_1: 1200, 2400, 3600 and multiples of 3600 GiB; SCRATCH_2, PERSISTENT_1 and
    # PERSISTENT_2 (SSD): 1200, 2400 and multiples of 2400 GiB.
    step = 3600 if kind == "SCRATCH_1" else 2400
    if gib not in (1200, 2400) and (gib <= 0 or gib % step):
        yield ConfigIssue(
            "fsx.storage_capacity_gib", gib,
            f"must be 1200, 2400 or a multiple of {step} GiB for {kind}", DOC_FSX_CAPACITY,
        )
    elif gib > FSX_MAX_STORAGE_GIB:
        yield ConfigIssue("fsx.storage_capacity_gib", gib,
                          f"must be at most {FSX_MAX_STORAGE_GIB} GiB (the FSx API's maximum)",
                          DOC_FSX_CAPACITY)
    elif gib > FSX_DEFAULT_QUOTA_GIB:
        yield ConfigIssue("fsx.storage_capacity_gib", gib,
                          f"is above the default FSx for Lustre storage quota of "
                          f"{FSX_DEFAULT_QUOTA_GIB} GiB per account and Region (25,200 in "
                          "smaller Regions): make sure yours was raised, or the file system "
                          "fails to create", DOC_FSX_QUOTAS, severity="warning")


@_rule
def _fsx_throughput(c: ClusterConfig) -> Iterator[ConfigIssue]:
    kind, value = c.fsx.deployment_type, c.fsx.per_unit_storage_throughput
    allowed = FSX_THROUGHPUT_MB_S_TIB.get(kind)
    if allowed is None and value is not None:
        yield ConfigIssue(
            "fsx.per_unit_storage_throughput", value,
            f"must be null for {kind} (only PERSISTENT_1 and PERSISTENT_2 take a throughput)",
            DOC_FSX_THROUGHPUT,
        )
    elif allowed is not None and value not in allowed:
        yield ConfigIssue(
            "fsx.per_unit_storage_throughput", value,
            f"must be {_one_of(allowed)} MB/s/TiB for {kind}", DOC_FSX_THROUGHPUT,
        )


@_rule
def _fsx_version(c: ClusterConfig) -> Iterator[ConfigIssue]:
    allowed = FSX_LUSTRE_VERSIONS[c.fsx.deployment_type]
    if c.fsx.lustre_version not in allowed:
        yield ConfigIssue(
            "fsx.lustre_version", c.fsx.lustre_version,
            f"must be {_one_of(allowed)} for {c.fsx.deployment_type}", DOC_FSX_VERSION,
        )


@_rule
def _fsx_data_repository(c: ClusterConfig) -> Iterator[ConfigIssue]:
    dra = c.fsx.data_repository
    if dra is None or c.fsx.lustre_version not in FSX_LUSTRE_VERSIONS[c.fsx.deployment_type]:
        return  # no link, or the version error is reported already
    if (c.fsx.deployment_type not in FSX_DRA_DEPLOYMENT_TYPES
            or c.fsx.lustre_version not in FSX_DRA_LUSTRE_VERSIONS):
        yield ConfigIssue(
            "fsx.data_repository", dra.model_dump(exclude_defaults=True) or "default link",
            f"needs fsx.deployment_type {_one_of(FSX_DRA_DEPLOYMENT_TYPES)} with "
            f"fsx.lustre_version {_one_of(FSX_DRA_LUSTRE_VERSIONS)} (got "
            f"{c.fsx.deployment_type}, {c.fsx.lustre_version}); set it to null otherwise",
            DOC_FSX_DRA,
        )
    if dra.s3_path is not None and not re.match(r"^s3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9](/.*)?$",
                                                dra.s3_path):
        yield ConfigIssue("fsx.data_repository.s3_path", dra.s3_path,
                          "must be an S3 URI like 's3://my-bucket/prefix/' or null for the "
                          "stack's data bucket", DOC_FSX_DRA)
    path = dra.file_system_path
    if path != "/" and not re.match(r"^/[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)*$", path):
        yield ConfigIssue("fsx.data_repository.file_system_path", path,
                          "must be '/' (the whole file system) or an absolute directory path "
                          "like '/s3'", DOC_FSX_DRA)


@_rule
def _data_removal(c: ClusterConfig) -> Iterator[ConfigIssue]:
    """``retain`` keeps what the file system holds by exporting it to S3 before
    ``cdk destroy`` deletes the file system (the file system itself cannot outlive the VPC
    it sits in); that needs a data repository association."""
    if c.data_removal_policy != "retain":
        return
    dra = c.fsx.data_repository
    if dra is None:
        yield ConfigIssue(
            "data_removal_policy", "retain",
            "needs fsx.data_repository: 'retain' exports the file system to S3 before cdk "
            "destroy deletes it; without a data repository there is nowhere to export to. "
            "Link one (the default), or set data_removal_policy 'destroy' to delete the "
            "file system's contents with the stack", DOC_FSX_DRA)
    elif dra.file_system_path != "/":
        yield ConfigIssue(
            "fsx.data_repository.file_system_path", dra.file_system_path,
            "links only part of the file system: with data_removal_policy 'retain', files "
            "outside it (e.g. the Neuron compile cache) are not exported and are deleted "
            "with the file system on cdk destroy; use '/' to keep everything",
            DOC_FSX_DRA, severity="warning")


@_rule
def _capacity(c: ClusterConfig) -> Iterator[ConfigIssue]:
    cap = c.capacity
    if cap.type == "on-demand":
        if cap.reservation_id is not None:
            yield ConfigIssue("capacity.reservation_id", cap.reservation_id,
                              "must be null when capacity.type is 'on-demand'", DOC_ODCR)
        return
    doc = DOC_CAPACITY_BLOCKS if cap.type == "capacity-block" else DOC_ODCR
    if cap.reservation_id is None:
        yield ConfigIssue("capacity.reservation_id", None,
                          f"must be set (cr-...) when capacity.type is {cap.type!r}", doc)
    elif not _RESOURCE_ID_RE.match(cap.reservation_id):
        yield ConfigIssue("capacity.reservation_id", cap.reservation_id,
                          "must be 'cr-' followed by 8 or 17 hex digits", DOC_RESOURCE_IDS)
    if cap.type == "capacity-block" and c.orchestrator == "eks" and (c.nodes.min or c.nodes.desired):
        yield ConfigIssue(
            "nodes", {"min": c.nodes.min, "desired": c.nodes.desired},
            "are not applied with a Capacity Block: the node group is created with 0 nodes "
            "(no instance can launch before the block starts); when it is active, run "
            "`trn-ultracluster scale --nodes N`",
            DOC_EKS_CAPACITY_BLOCKS, severity="warning")
    if cap.type == "capacity-block" and c.placement_group:
        yield ConfigIssue(
            "placement_group", True,
            "must be false with capacity.type 'capacity-block' (Capacity Blocks are already "
            "placed close together and cannot be combined with a cluster placement group)",
            DOC_CAPACITY_BLOCKS,
        )


@_rule
def _orchestrator(c: ClusterConfig) -> Iterator[ConfigIssue]:
    spec = CATALOG.get(c.instance_type)
    if c.orchestrator == "hyperpod-slurm" and spec is not None and spec.hyperpod_instance_type is None:
        offered = sorted(n for n, s in CATALOG.items() if s.hyperpod_instance_type)
        yield ConfigIssue(
            "orchestrator", c.orchestrator,
            f"cannot run {c.instance_type}: SageMaker HyperPod offers {_one_of(offered)}; "
            "use orchestrator 'eks' or another instance type",
            DOC_HYPERPOD,
        )


# --- HyperPod rules (issue 4) ---
DOC_HYPERPOD_CREATE = "https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_CreateCluster.html"
DOC_HYPERPOD_GROUP = (
    "https://docs.aws.amazon.com/sagemaker/latest/APIReference/"
    "API_ClusterInstanceGroupSpecification.html"
)
# Patterns and ranges below are botocore 1.44.5's SageMaker model
# (botocore/data/sagemaker/2017-07-24/service-2.json): shapes ClusterName,
# ClusterInstanceGroupName, ClusterPartitionNames, ClusterInstanceCount (0-6758),
# ClusterEbsVolumeSizeInGB (1-16384) and TrainingPlanArn; the CloudFormation schema of
# AWS::SageMaker::Cluster (as bundled with cfn-lint 1.58.0) has the same.
_HYPERPOD_NAME_RE = re.compile(r"^[a-zA-Z0-9](-*[a-zA-Z0-9])*$")
_HYPERPOD_TYPE_RE = re.compile(r"^ml\.[a-z0-9-]+\.[a-z0-9]+$")
_TRAINING_PLAN_RE = re.compile(r"^arn:aws[a-z\-]*:sagemaker:[a-z0-9\-]*:[0-9]{12}:training-plan/.+$")
DOC_HYPERPOD_SLURM = "https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-ref.html"
HYPERPOD_MAX_INSTANCE_COUNT = 6758
HYPERPOD_EBS_GIB_RANGE = (1, 16384)
"""Names of the controller and login instance groups (worker groups must differ)."""


@_rule
def _hyperpod(c: ClusterConfig) -> Iterator[ConfigIssue]:
    if c.orchestrator != "hyperpod-slurm":
        return
    hp = c.hyperpod
    name_rule = "must be 1-63 letters, digits and single hyphens, starting and ending with " \
                "a letter or digit"
    if len(hp.cluster_name) > 63 or not _HYPERPOD_NAME_RE.match(hp.cluster_name):
        yield ConfigIssue("hyperpod.cluster_name", hp.cluster_name, name_rule, DOC_HYPERPOD_CREATE)
    for field in ("controller_instance_type", "login_instance_type"):
        value = getattr(hp, field)
        if value is not None and not _HYPERPOD_TYPE_RE.match(value):
            yield ConfigIssue(f"hyperpod.{field}", value,
                              "must be a SageMaker HyperPod instance type like 'ml.c5.xlarge'",
                              DOC_HYPERPOD_GROUP)
    if not hp.worker_groups:
        yield ConfigIssue("hyperpod.worker_groups", [], "must hold at least one worker group",
                          DOC_HYPERPOD_GROUP)
    seen: set[str] = {CONTROLLER_GROUP, LOGIN_GROUP}
    total = 0
    for i, group in enumerate(hp.worker_groups):
        where = f"hyperpod.worker_groups[{i}]"
        if len(group.name) > 63 or not _HYPERPOD_NAME_RE.match(group.name):
            yield ConfigIssue(f"{where}.name", group.name, name_rule, DOC_HYPERPOD_GROUP)
        elif group.name in seen:
            yield ConfigIssue(f"{where}.name", group.name,
                              f"must differ from the other instance group names "
                              f"({', '.join(sorted(seen))})", DOC_HYPERPOD_GROUP)
        seen.add(group.name)
        if not _HYPERPOD_NAME_RE.match(group.partition):
            yield ConfigIssue(f"{where}.partition", group.partition,
                              "must be a Slurm partition name of letters, digits and single "
                              "hyphens", DOC_HYPERPOD_GROUP)
        elif group.partition == ALL_NODES_PARTITION:
            yield ConfigIssue(f"{where}.partition", group.partition,
                              f"must not be '{ALL_NODES_PARTITION}': HyperPod puts every "
                              "node of the cluster in that partition itself", DOC_HYPERPOD_SLURM)
        count = c.worker_group_count(group)
        if not 0 <= count <= HYPERPOD_MAX_INSTANCE_COUNT:
            yield ConfigIssue(f"{where}.instance_count", count,
                              f"must be between 0 and {HYPERPOD_MAX_INSTANCE_COUNT}",
                              DOC_HYPERPOD_GROUP)
        total += max(count, 0)
    if total > c.nodes.max:
        yield ConfigIssue("hyperpod.worker_groups", total,
                          f"ask for {total} worker nodes in all, more than nodes.max "
                          f"({c.nodes.max}), which sizes the compute subnet; raise nodes.max",
                          DOC_SUBNET_IPS)
    lo, hi = HYPERPOD_EBS_GIB_RANGE
    if not lo <= hp.worker_ebs_volume_gib <= hi:
        yield ConfigIssue("hyperpod.worker_ebs_volume_gib", hp.worker_ebs_volume_gib,
                          f"must be between {lo} and {hi} GiB", DOC_HYPERPOD_GROUP)
    if len(set(hp.deep_health_checks)) != len(hp.deep_health_checks):
        yield ConfigIssue("hyperpod.deep_health_checks", list(hp.deep_health_checks),
                          "must not repeat a check", DOC_HYPERPOD_GROUP)
    if hp.training_plan_arn is not None and (
            not 50 <= len(hp.training_plan_arn) <= 2048
            or not _TRAINING_PLAN_RE.match(hp.training_plan_arn)):
        yield ConfigIssue("hyperpod.training_plan_arn", hp.training_plan_arn,
                          "must be a training plan ARN like 'arn:aws:sagemaker:us-west-2:"
                          "123456789012:training-plan/my-plan' (50-2048 characters)",
                          DOC_HYPERPOD_GROUP)
    if c.capacity.type != "on-demand":
        yield ConfigIssue("capacity.type", c.capacity.type,
                          "must be 'on-demand' with orchestrator 'hyperpod-slurm': HyperPod "
                          "does not launch into EC2 capacity reservations; reserve capacity "
                          "with a SageMaker training plan (hyperpod.training_plan_arn)",
                          DOC_HYPERPOD_GROUP)


DOC_EKS_ENDPOINT = "https://docs.aws.amazon.com/eks/latest/userguide/cluster-endpoint.html"
DOC_EKS_ACCESS = "https://docs.aws.amazon.com/eks/latest/userguide/access-entries.html"
DOC_EKS_ADDONS = "https://docs.aws.amazon.com/eks/latest/userguide/eks-add-ons.html"
DOC_K8S_NAMES = "https://kubernetes.io/docs/concepts/overview/working-with-objects/names/"
_IAM_ROLE_ARN_RE = re.compile(r"^arn:aws[a-z-]*:iam::[0-9]{12}:role/[\w+=,.@/-]{1,512}$")
_IAM_PRINCIPAL_ARN_RE = re.compile(
    r"^arn:aws[a-z-]*:iam::[0-9]{12}:(role|user)/[\w+=,.@/-]{1,512}$")
"""IAM role and user ARNs (names of letters, digits and ``+=,.@_-``, with an optional path):
IAM user guide, "IAM identifiers"; EKS access entries take either, a role with its path
(EKS user guide, "Create access entries")."""
_ADDON_VERSION_RE = re.compile(r"^v(\d+)\.(\d+)\.(\d+)-eksbuild\.\d+$")
_DNS_LABEL_RE = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
_INSTANCE_TYPE_RE = re.compile(r"^[a-z][a-z0-9-]*\.[a-z0-9-]+$")
VPC_CNI_MIN_FOR_EFA_ONLY = (1, 19, 0)
"""First VPC CNI minor after aws/amazon-vpc-cni-k8s PR #3047 ("Filter for interfaces with
no ip info", merged 2024-09-26), which lets the CNI start on nodes with ``efa-only``
interfaces. The exact first release is not verified; v1.19.0 is the next minor."""


@_rule
def _eks(c: ClusterConfig) -> Iterator[ConfigIssue]:
    eks = c.eks
    if c.orchestrator != "eks":
        return
    if eks.endpoint_access == "public-and-private":
        if not eks.public_access_cidrs:
            yield ConfigIssue("eks.public_access_cidrs", [],
                              "must list at least one CIDR block with endpoint_access "
                              "'public-and-private' (or use 'private')", DOC_EKS_ENDPOINT)
        for i, cidr in enumerate(eks.public_access_cidrs):
            try:
                net = ipaddress.ip_network(cidr, strict=True)
            except ValueError as err:
                yield ConfigIssue(f"eks.public_access_cidrs[{i}]", cidr,
                                  f"must be an IPv4 CIDR block like '203.0.113.0/24' ({err})",
                                  DOC_EKS_ENDPOINT)
                continue
            if net.version != 4:
                yield ConfigIssue(f"eks.public_access_cidrs[{i}]", cidr,
                                  "must be an IPv4 CIDR block", DOC_EKS_ENDPOINT)
            elif net.prefixlen == 0:
                yield ConfigIssue("eks.public_access_cidrs", cidr,
                                  "opens the Kubernetes API endpoint to the whole internet; "
                                  "list your own networks instead", DOC_EKS_ENDPOINT,
                                  severity="warning")
    if eks.admin_role_arn is None and eks.deployer_principal_arn is None:
        yield ConfigIssue("eks.admin_role_arn", None,
                          "is not set, and neither is eks.deployer_principal_arn (make deploy "
                          "sets it): only the CloudFormation execution role will be cluster "
                          "admin; deploy with make deploy, or set the ARN of the IAM role you "
                          "use with kubectl", DOC_EKS_ACCESS, severity="warning")
    if eks.admin_role_arn is not None and not _IAM_ROLE_ARN_RE.match(eks.admin_role_arn):
        yield ConfigIssue("eks.admin_role_arn", eks.admin_role_arn,
                          "must be an IAM role ARN like 'arn:aws:iam::123456789012:role/Admin'",
                          DOC_EKS_ACCESS)
    deployer = eks.deployer_principal_arn
    if deployer is not None and not _IAM_PRINCIPAL_ARN_RE.match(deployer):
        yield ConfigIssue("eks.deployer_principal_arn", deployer,
                          "must be an IAM role or user ARN like "
                          "'arn:aws:iam::123456789012:role/Admin' (an assumed-role session "
                          "ARN names its role: arn:aws:iam::<account>:role/<role name>)",
                          DOC_EKS_ACCESS)
    if not _INSTANCE_TYPE_RE.match(eks.system_instance_type) or eks.system_instance_type in CATALOG:
        yield ConfigIssue("eks.system_instance_type", eks.system_instance_type,
                          "must be a non-Trainium EC2 instance type like 'm6i.xlarge'",
                          DOC_INSTANCES)
    if not _DNS_LABEL_RE.match(eks.training_namespace):
        yield ConfigIssue("eks.training_namespace", eks.training_namespace,
                          "must be a DNS-1123 label: lowercase letters, digits and '-', "
                          "at most 63 characters", DOC_K8S_NAMES)
    for name, version in eks.addon_versions.model_dump().items():
        if version is not None and not _ADDON_VERSION_RE.match(version):
            yield ConfigIssue(f"eks.addon_versions.{name}", version,
                              "must be an EKS add-on version like 'v1.22.2-eksbuild.1' or null",
                              DOC_EKS_ADDONS)
    cni = eks.addon_versions.vpc_cni
    match = _ADDON_VERSION_RE.match(cni or "")
    if (c.efa_interface_layout == "efa-only" and match
            and tuple(int(g) for g in match.groups()) < VPC_CNI_MIN_FOR_EFA_ONLY):
        need = ".".join(map(str, VPC_CNI_MIN_FOR_EFA_ONLY))
        yield ConfigIssue("eks.addon_versions.vpc_cni", cni,
                          f"must be v{need} or newer with efa_interface_layout 'efa-only' "
                          "(older CNIs fail on interfaces without an IP address)",
                          DOC_EKS_ADDONS)


@_rule
def _tags(c: ClusterConfig) -> Iterator[ConfigIssue]:
    # Source: AWS tagging guide, "Tag naming limits and requirements" (DOC_TAGS): keys 1-128
    # and values 0-256 characters of letters, numbers and spaces representable in UTF-8 and
    # + - = . _ : / @; the "aws:" prefix is reserved for AWS. CloudFormation refuses other
    # characters only at deploy time, after the template is written.
    for key, value in c.tags.items():
        if not 1 <= len(key) <= 128 or key.lower().startswith("aws:"):
            yield ConfigIssue(f"tags.{key}", value,
                              "tag keys must be 1-128 characters and not start with 'aws:'",
                              DOC_TAGS)
        elif not _tag_text(key):
            yield ConfigIssue(f"tags.{key}", value, f"tag keys may hold letters, digits, spaces "
                              f"and {TAG_PUNCTUATION} only", DOC_TAGS)
        elif len(value) > 256:
            yield ConfigIssue(f"tags.{key}", value, "tag values must be at most 256 characters",
                              DOC_TAGS)
        elif not _tag_text(value):
            yield ConfigIssue(f"tags.{key}", value, f"tag values may hold letters, digits, "
                              f"spaces and {TAG_PUNCTUATION} only", DOC_TAGS)


TAG_PUNCTUATION = "+ - = . _ : / @"


def _tag_text(text: str) -> bool:
    """Letters, numbers and space separators (Unicode categories L*, N*, Zs) and
    :data:`TAG_PUNCTUATION`."""
    allowed = set(TAG_PUNCTUATION.replace(" ", ""))
    return all(ch in allowed or unicodedata.category(ch)[0] in "LN"
               or unicodedata.category(ch) == "Zs" for ch in text)


# --- parsing ---------------------------------------------------------------------------

_FIELD_DOCS = {
    "instance_type": DOC_INSTANCES,
    "az_ids": DOC_AZ_IDS,
    "vpc_cidr": DOC_VPC_CIDR,
    "fsx": DOC_FSX_DEPLOY,
    "capacity": DOC_CAPACITY_BLOCKS,
    "placement_group": DOC_PLACEMENT,
    "efa_interface_layout": DOC_EFA,
    "orchestrator": README_CONFIG,
}


def _doc_for(field: str) -> str:
    head = field.split(".", 1)[0].split("[", 1)[0]
    return _FIELD_DOCS.get(field, _FIELD_DOCS.get(head, README_CONFIG))


def _loc_to_field(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


def _allowed_keys(model: type[BaseModel], loc: tuple[Any, ...]) -> list[str]:
    for part in loc[:-1]:
        if isinstance(part, int):
            continue
        annotation = model.model_fields[str(part)].annotation
        nested = [a for a in getattr(annotation, "__args__", (annotation,))
                  if isinstance(a, type) and issubclass(a, BaseModel)]
        if not nested:
            return []
        model = nested[0]
    return sorted(model.model_fields)


_TYPE_MESSAGES = {
    "int_parsing": "must be a whole number",
    "int_type": "must be a whole number",
    "int_from_float": "must be a whole number",
    "bool_parsing": "must be true or false",
    "bool_type": "must be true or false",
    "string_type": "must be text",
    "list_type": "must be a list",
    "tuple_type": "must be a list",
    "dict_type": "must be a mapping of keys to values",
    "model_type": "must be a mapping of keys to values",
    "model_attributes_type": "must be a mapping of keys to values",
}


def _issues_from_pydantic(err: ValidationError) -> list[ConfigIssue]:
    issues = []
    for e in err.errors(include_url=False):
        field = _loc_to_field(e["loc"])
        if e["type"] == "extra_forbidden":
            allowed = ", ".join(_allowed_keys(ClusterConfig, e["loc"]))
            message = f"is not a known key; known keys here: {allowed}"
        elif e["type"] == "literal_error":
            message = "must be " + e["msg"].removeprefix("Input should be ")
        elif e["type"] in _TYPE_MESSAGES:
            message = _TYPE_MESSAGES[e["type"]]
        else:
            message = "must be " + e["msg"].removeprefix("Input should be ")
        issues.append(ConfigIssue(field or "(top level)", e.get("input"), message, _doc_for(field)))
    return issues


def _without(raw: dict[str, Any], locations: list[tuple[Any, ...]]) -> tuple[dict[str, Any], set[str]]:
    """``raw`` without the values at ``locations`` (pydantic error locations), so that they
    take their defaults; returns the copy and the dotted fields that were taken out. A
    location inside a list takes out the whole list."""
    out = copy.deepcopy(raw)
    removed: set[str] = set()
    for loc in locations:
        path = []
        for part in loc:
            if isinstance(part, int):
                break
            path.append(str(part))
        node: Any = out
        for part in path[:-1]:
            node = node.get(part) if isinstance(node, dict) else None
        if path and isinstance(node, dict) and path[-1] in node:
            del node[path[-1]]
            removed.add(".".join(path))
    return out, removed


def _about(issue: ConfigIssue, fields: set[str]) -> bool:
    """Whether ``issue`` is about (or mentions) one of ``fields``."""
    return any(issue.field == f or issue.field.startswith(f + ".") or f.startswith(issue.field + ".")
               or f in issue.allowed for f in fields)


def parse_config(raw: Mapping[str, Any]) -> LoadedConfig:
    """Validate a raw configuration mapping, reporting every problem at once.

    Pydantic checks shape and types first. When some fields are of the wrong type, the
    rules still run on the rest (the bad fields take their defaults for that), and their
    findings are reported too, except those about the bad fields.

    Args:
        raw: configuration keys as in a profile file (nested mappings).

    Returns:
        The frozen config and any warnings.

    Raises:
        ConfigError: one or more fields are invalid; every issue names its field.
    """
    shape_issues: list[ConfigIssue] = []
    replaced: set[str] = set()
    try:
        config = ClusterConfig.model_validate(dict(raw))
    except ValidationError as err:
        shape_issues = _issues_from_pydantic(err)
        rest, replaced = _without(dict(raw), [e["loc"] for e in err.errors()])
        try:
            config = ClusterConfig.model_validate(rest)
        except ValidationError:
            raise ConfigError(shape_issues) from None
    issues = [issue for rule in RULES for issue in rule(config)
              if not (replaced and _about(issue, replaced))]
    errors = shape_issues + [i for i in issues if i.severity == "error"]
    warnings = tuple(i for i in issues if i.severity == "warning")
    if errors:
        raise ConfigError(errors + list(warnings))
    return LoadedConfig(config, warnings)


def _parse_scalar(value: Any) -> Any:
    """Turn a ``-c key=value`` string into YAML's typed value (``"16"`` -> 16)."""
    if not isinstance(value, str):
        return value
    try:
        parsed = yaml.safe_load(value)
    except yaml.YAMLError:
        return value
    return value if isinstance(parsed, dict) else parsed


_LIST_FIELDS = {"az_ids", "eks.public_access_cidrs"}
_MAPPING_FIELDS = {"tags"}
"""Fields whose keys are free text: ``-c tags.team/owner=ml`` sets the key ``team/owner``
(everything after the first dot), even with dots, colons or slashes in it."""


def _kind(value: Any) -> str:
    return {list: "a list", tuple: "a list", dict: "a mapping"}.get(
        type(value), f"the {type(value).__name__} {_shown(value)}")


def _set_dotted(target: dict[str, Any], dotted: str, value: Any) -> ConfigIssue | None:
    """Set a ``-c`` key in ``target``; nested keys use dots, lists use commas.

    Returns:
        ``None``, or the issue when the key goes below a value that is not a mapping
        (``-c nodes.max.x=1``, ``-c az_ids.0=...``); ``target`` is then unchanged.
    """
    head, _, rest = dotted.partition(".")
    parts = [head, rest] if head in _MAPPING_FIELDS and rest else dotted.split(".")
    node = target
    for depth, part in enumerate(parts[:-1]):
        child = node.get(part)
        if child is None:
            child = node[part] = {}
        if not isinstance(child, dict):
            where = ".".join(parts[:depth + 1])
            hint = (f"; give the whole list: -c {where}=a,b" if isinstance(child, (list, tuple))
                    else "")
            return ConfigIssue(dotted, value, f"cannot be set: {where} is {_kind(child)}, not a "
                               f"mapping of keys{hint}", README_CONFIG)
        node = child
    if dotted in _LIST_FIELDS and isinstance(value, str):
        value = [v.strip() for v in value.split(",") if v.strip()]
    node[parts[-1]] = _parse_scalar(value)
    return None


def _deep_merge(base: dict[str, Any], top: Mapping[str, Any]) -> dict[str, Any]:
    """``top`` over ``base``, mappings merged key by key; neither input is changed."""
    out = copy.deepcopy(base)
    for key, value in top.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), dict):
            out[key] = _deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


class _StrictLoader(yaml.SafeLoader):
    """PyYAML's safe loader that refuses a key given twice in one mapping (YAML 1.2 says
    keys must be unique; PyYAML would keep the last one silently)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    "while reading a mapping", node.start_mark,
                    f"found the key {key!r} twice", key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def _profile_issue(path_text: str, allowed: str) -> ConfigError:
    return ConfigError([ConfigIssue(PROFILE_CONTEXT_KEY, path_text, allowed, README_CONFIG)])


def _read_profile(path_text: str, base_dir: Path) -> dict[str, Any]:
    if not path_text.strip():
        raise _profile_issue(path_text, "must name a YAML profile file, e.g. profiles/dev.yaml "
                                        "(it is empty)")
    path = Path(path_text)
    if not path.is_absolute():
        path = base_dir / path
    if not path.is_file():
        raise _profile_issue(path_text, "must name an existing YAML profile file, e.g. "
                                        "profiles/dev.yaml")
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as err:
        raise _profile_issue(path_text, f"must be UTF-8 text (byte {err.start} is not)") from None
    except OSError as err:
        raise _profile_issue(path_text, f"must be a readable file ({err.strerror})") from None
    try:
        data = yaml.load(text, Loader=_StrictLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as err:
        raise _profile_issue(path_text, f"must be valid YAML ({err})") from None
    if data is None:
        raise _profile_issue(path_text, "is empty: a profile holds a YAML mapping of config keys "
                                        "(see profiles/dev.yaml)")
    if not isinstance(data, dict):
        raise _profile_issue(path_text, f"must hold a YAML mapping of config keys, got "
                                        f"{type(data).__name__}")
    return data


def _is_our_key(key: str) -> bool:
    """Context keys that belong to the configuration: any key under a configuration field
    (``tags.team/owner``), and other plain keys (reported as unknown when they are not
    fields); keys with ``:``, ``@`` or ``/`` outside a field are CDK's (feature flags,
    ``aws:cdk:...``)."""
    if key in (CONTEXT_KEY, PROFILE_CONTEXT_KEY):
        return False
    if key.split(".", 1)[0] in ClusterConfig.model_fields:
        return True
    return ":" not in key and "@" not in key and "/" not in key


def load_config(context: Mapping[str, Any], base_dir: Path | str = ".") -> LoadedConfig:
    """Build the configuration from CDK context (cdk.json, ``-c``) and a profile file.

    Args:
        context: all context values, e.g. ``{k: app.node.try_get_context(k) ...}`` or the
            dict a test passes. Keys with ``:``, ``@`` or ``/`` are CDK's and are ignored.
        base_dir: directory that relative profile paths are read from.

    Returns:
        The validated, frozen configuration and its warnings.

    Raises:
        ConfigError: the profile cannot be read, or a field is invalid.
    """
    raw: dict[str, Any] = {}
    defaults = context.get(CONTEXT_KEY) or {}
    if not isinstance(defaults, Mapping):
        raise ConfigError([ConfigIssue(CONTEXT_KEY, defaults,
                                       "must be a mapping of config keys in cdk.json context",
                                       README_CONFIG)])
    raw = _deep_merge(raw, copy.deepcopy(dict(defaults)))
    if PROFILE_CONTEXT_KEY in context:
        raw = _deep_merge(raw, _read_profile(str(context[PROFILE_CONTEXT_KEY] or ""),
                                             Path(base_dir)))
    key_issues = [issue for key in sorted(k for k in context if _is_our_key(k))
                  if (issue := _set_dotted(raw, key, context[key])) is not None]
    try:
        loaded = parse_config(raw)
    except ConfigError as err:
        raise ConfigError(key_issues + err.issues) from None
    if key_issues:
        raise ConfigError(key_issues + list(loaded.warnings))
    return loaded
