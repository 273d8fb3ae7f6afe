"""The configuration model: typed, frozen pydantic models with their defaults.

The defaults here are the only ones: ``cdk.json`` holds only what differs from them. The
shape and types are checked by pydantic; the AWS rules that span fields are in
:mod:`trn_ultracluster.config.rules`.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator
from pydantic_core import PydanticCustomError

from trn_ultracluster import network_plan
from trn_ultracluster.config.errors import ConfigIssue
from trn_ultracluster.config.facts import (
    DEFAULT_KUBERNETES_VERSION,
    EKS_KUBERNETES_VERSIONS,
    HYPERPOD_EKS_KUBERNETES_VERSIONS,
    NEURON_DLAMI_ROOT_DEVICE,
    NEURON_DLAMI_SSM_PARAMETER,
    NEURON_DLAMI_VENV,
    region_of_az_id,
)
from trn_ultracluster.contracts.catalog import InstanceSpec, get_instance

__all__ = [
    "CapacityConfig",
    "ClusterConfig",
    "DataRepositoryConfig",
    "EksAddonVersionsConfig",
    "EksConfig",
    "FsxConfig",
    "HyperPodConfig",
    "HyperPodWorkerGroupConfig",
    "LoadedConfig",
    "NodeCounts",
    "ObservabilityConfig",
    "StandaloneConfig",
    "TrainingImageConfig",
]


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=False)

    @field_validator("*", mode="before")
    @classmethod
    def _no_true_for_numbers(cls, value: Any, info: ValidationInfo) -> Any:
        """Lax pydantic reads ``true`` as 1 for a number; ``nodes.max: true`` is a mistake,
        not a count."""
        if isinstance(value, bool) and info.field_name is not None:
            annotation = cls.model_fields[info.field_name].annotation
            types = {annotation, *getattr(annotation, "__args__", ())}
            if bool not in types and int in types:
                raise PydanticCustomError("int_type", "Input should be a valid integer")
            if bool not in types and float in types:
                raise PydanticCustomError("float_type", "Input should be a valid number")
        return value


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
        amazon_cloudwatch_observability: ``amazon-cloudwatch-observability`` (Container
            Insights with its Neuron and EFA metrics); a pinned version must be v3.1.0 or
            newer (Pod Identity; see
            :mod:`trn_ultracluster.orchestrators.eks.observability`).
    """

    vpc_cni: str | None = None
    coredns: str | None = None
    kube_proxy: str | None = None
    eks_pod_identity_agent: str | None = None
    aws_fsx_csi_driver: str | None = None
    amazon_cloudwatch_observability: str | None = None


_FLOAT_K8S_VERSIONS = {float(v): v for v in (*HYPERPOD_EKS_KUBERNETES_VERSIONS,
                                              *EKS_KUBERNETES_VERSIONS)}


class EksConfig(_Frozen):
    """EKS settings (used when ``orchestrator`` is ``eks`` or ``hyperpod-eks``).

    Default: the orchestrator's Kubernetes version, API endpoint public and private, public side open to ``0.0.0.0/0`` (a warning
    asks you to narrow it), no extra admin role, two ``m6i.xlarge`` system nodes, jobs in
    the ``training`` namespace, the add-on versions of :class:`EksAddonVersionsConfig`.

    Attributes:
        kubernetes_version: Kubernetes minor version of the cluster, e.g. ``"1.34"``. Default
            ``None``: 1.36 with ``eks``, 1.34 with ``hyperpod-eks`` (the newest HyperPod
            supports); :data:`~trn_ultracluster.config.facts.EKS_KUBERNETES_VERSIONS` lists
            what the stack can build.
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

    kubernetes_version: str | None = None
    endpoint_access: Literal["public-and-private", "private"] = "public-and-private"
    public_access_cidrs: tuple[str, ...] = ("0.0.0.0/0",)
    admin_role_arn: str | None = None
    deployer_principal_arn: str | None = None
    system_instance_type: str = "m6i.xlarge"
    training_namespace: str = "training"
    addon_versions: EksAddonVersionsConfig = EksAddonVersionsConfig()

    @field_validator("kubernetes_version", mode="before")
    @classmethod
    def _k8s_version_as_text(cls, value: Any) -> Any:
        """YAML reads ``1.30`` as the float 1.3: map the floats of the known versions back to
        their text (as :meth:`FsxConfig._version_as_text` does)."""
        if isinstance(value, float):
            return _FLOAT_K8S_VERSIONS.get(value, repr(value))
        return value


class HyperPodWorkerGroupConfig(_Frozen):
    """One HyperPod instance group of Trainium nodes (with Slurm: one partition).

    Attributes:
        name: instance group name (``[a-zA-Z0-9](-*[a-zA-Z0-9])*``, at most 63 characters).
        partition: Slurm only: the partition the group's nodes join (same pattern).
        instance_count: nodes in the group. Default ``None``: ``nodes.desired``.
    """

    name: str = "workers"
    partition: str = "trainium"
    instance_count: int | None = None


class HyperPodConfig(_Frozen):
    """SageMaker HyperPod settings (used when ``orchestrator`` is ``hyperpod-slurm`` or
    ``hyperpod-eks``; the Slurm-only keys are marked).

    Default: a cluster named ``trn-ultracluster`` with an ``ml.c5.xlarge`` Slurm controller,
    an ``ml.m5.4xlarge`` login node, one worker group of ``nodes.desired`` Trainium nodes in
    the ``trainium`` partition, each with a 500 GiB EBS volume at ``/opt/sagemaker``, deep
    health checks (stress and connectivity) when nodes start, and automatic node recovery.
    With ``hyperpod-eks`` the controllers run on the EKS system node group and a failed
    TrainJob is recreated up to 3 times.

    Attributes:
        cluster_name: HyperPod cluster name (1-63 characters, letters, digits, hyphens).
        controller_instance_type: Slurm only: ``ml.`` type of the Slurm controller.
        login_instance_type: Slurm only: ``ml.`` type of the login node; ``null`` for none.
        worker_groups: one or more Trainium instance groups; with Slurm each is a partition.
        worker_ebs_volume_gib: extra EBS volume per worker, GiB (1-16384), mounted by
            HyperPod at ``/opt/sagemaker`` (container images, local scratch).
        deep_health_checks: checks run on workers when they start: ``InstanceStress``,
            ``InstanceConnectivity``; empty for none.
        node_recovery: ``Automatic`` replaces or reboots faulty nodes; ``None`` only
            labels them.
        training_plan_arn: SageMaker training plan for the workers (reserved capacity),
            ``arn:aws:sagemaker:<region>:<account>:training-plan/<name>``; ``null`` for
            on-demand capacity.
        job_max_restarts: ``hyperpod-eks`` only: how often a TrainJob whose pod failed (a
            node HyperPod replaced, a crash) is recreated from its last checkpoint (JobSet
            ``failurePolicy.maxRestarts`` of the stack's training runtime), 0-100.
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
    job_max_restarts: int = 3


class StandaloneConfig(_Frozen):
    """Standalone Trainium nodes (used when ``orchestrator`` is ``standalone``): an Auto Scaling
    group of ``nodes`` instances from the EFA launch template, reached with Session Manager.
    See docs/standalone.md.

    Default: the newest Deep Learning AMI Neuron PyTorch 2.9 (Ubuntu 24.04), resolved at
    deploy time from its public SSM parameter; jobs run in the stack's training image.

    Attributes:
        ami_ssm_parameter: public (or your own) SSM parameter holding the nodes' AMI id,
            resolved by CloudFormation at each deploy (a changed AMI reaches new nodes only).
        runtime: ``container`` runs jobs in the training image (pulled from ECR when a node
            starts) with ``/fsx`` and the Neuron and EFA devices; ``dlami-venv`` runs them in
            the AMI's Neuron virtual environment :attr:`dlami_venv`, with the training
            program copied to each node.
        dlami_venv: the virtual environment of ``runtime: dlami-venv`` (an absolute path on
            the AMI).
        root_device_name: the AMI's root device, which the launch template's root volume
            (``root_volume_gib``) resizes; ``/dev/sda1`` on Ubuntu AMIs, ``/dev/xvda`` on
            Amazon Linux. A wrong name adds a second volume instead.
    """

    ami_ssm_parameter: str = NEURON_DLAMI_SSM_PARAMETER
    runtime: Literal["container", "dlami-venv"] = "container"
    dlami_venv: str = NEURON_DLAMI_VENV
    root_device_name: str = NEURON_DLAMI_ROOT_DEVICE


class TrainingImageConfig(_Frozen):
    """How ``cdk deploy`` builds the training image (``training/Dockerfile``).

    Attributes:
        build: ``codebuild`` (default): built in AWS CodeBuild during the deploy and pushed
            to the stack's ECR repository; no Docker needed where ``cdk deploy`` runs.
            ``local``: built by the CDK CLI with the local Docker and published to the CDK
            bootstrap repository (faster iteration when Docker is at hand).
    """

    build: Literal["codebuild", "local"] = "codebuild"


class ObservabilityConfig(_Frozen):
    """The stack's dashboard and alarms (``constructs/observability.py``).

    Default: no e-mail subscription, the file-system alarm at 90 % full, the idle alarm after
    4 hours of Trainium nodes at under 1 % NeuronCore utilization.

    Attributes:
        alarm_email: an address subscribed to the alarm topic (SNS sends it a confirmation
            mail first); ``null``: subscribe yourself to the ``AlarmTopicArn`` output.
        fsx_full_percent: the FSx alarm fires when more than this share of the file system's
            storage capacity is used (50-99).
        idle_hours: the idle alarm fires when Trainium nodes run this many hours in a row
            (1-24) at under ``idle_utilization_percent`` NeuronCore utilization.
        idle_utilization_percent: average NeuronCore utilization, percent (0-100 exclusive),
            under which a running Trainium node counts as idle.
    """

    alarm_email: str | None = None
    fsx_full_percent: int = 90
    idle_hours: int = 4
    idle_utilization_percent: float = 1.0


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
        orchestrator: ``eks``, ``hyperpod-slurm``, ``hyperpod-eks`` or ``standalone``.
        eks: EKS settings (used with ``eks`` and ``hyperpod-eks``).
        hyperpod: HyperPod settings (used with ``hyperpod-slurm`` and ``hyperpod-eks``).
        standalone: standalone node settings (used with ``orchestrator: standalone``).
        capacity: on-demand, capacity reservation or Capacity Block.
        training_image: how the training image is built.
        observability: dashboard and alarms.
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
    orchestrator: Literal["eks", "hyperpod-slurm", "hyperpod-eks", "standalone"] = "eks"
    eks: EksConfig = EksConfig()
    hyperpod: HyperPodConfig = HyperPodConfig()
    standalone: StandaloneConfig = StandaloneConfig()
    capacity: CapacityConfig = CapacityConfig()
    training_image: TrainingImageConfig = TrainingImageConfig()
    observability: ObservabilityConfig = ObservabilityConfig()
    data_removal_policy: Literal["retain", "destroy"] = "retain"
    tags: dict[str, str] = Field(default_factory=dict)

    # --- derived values (never configured) ---
    @property
    def instance(self) -> InstanceSpec:
        """Catalog entry of :attr:`instance_type`."""
        return get_instance(self.instance_type)

    @property
    def kubernetes_version(self) -> str | None:
        """Kubernetes version of the EKS cluster: ``eks.kubernetes_version`` or the
        orchestrator's default (:data:`~trn_ultracluster.config.facts.DEFAULT_KUBERNETES_VERSION`);
        ``None`` for an orchestrator without EKS."""
        return self.eks.kubernetes_version or DEFAULT_KUBERNETES_VERSION.get(self.orchestrator)

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
        return with_ip + network_plan.PODS_PER_NODE

    @property
    def private_subnet_mask(self) -> int:
        """Prefix length of each private subnet: room for ``nodes.max`` nodes, at least /20
        when the VPC has room (:func:`trn_ultracluster.network_plan.private_subnet_mask`)."""
        vpc_prefix = ipaddress.ip_network(self.vpc_cidr, strict=False).prefixlen
        return network_plan.private_subnet_mask(vpc_prefix, len(self.az_ids), self.nodes.max,
                                                self.ips_per_node)

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


@dataclass(frozen=True)
class LoadedConfig:
    """A validated configuration and the warnings found while validating it."""

    config: ClusterConfig
    warnings: tuple[ConfigIssue, ...] = ()

