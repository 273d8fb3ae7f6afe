"""The EKS orchestrator construct: an EKS cluster ready for distributed training on the
Trainium nodes (versions and their sources: :mod:`.versions`)."""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import Duration, Stack
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_logs as logs
from aws_cdk.lambda_layer_kubectl_v36 import KubectlV36Layer
from constructs import Construct

from trn_ultracluster.config import ClusterConfig, EksConfig
from trn_ultracluster.contracts.outputs import OutputKey
from trn_ultracluster.nag import acknowledge
from trn_ultracluster.orchestrators.base import Foundation, NodeShape
from trn_ultracluster.orchestrators.eks import manifests as k8s
from trn_ultracluster.orchestrators.eks.nag import acknowledge_eks
from trn_ultracluster.orchestrators.eks.observability import container_insights
from trn_ultracluster.orchestrators.eks.versions import (
    ADMIN_POLICY,
    CONTROL_PLANE_LOG_GROUP,
    EFA_PLUGIN_CHART,
    FSX_CSI_SERVICE_ACCOUNT,
    KUBERNETES_VERSION,
    NEURON_CHART,
    NODE_POLICIES,
    SYSTEM_NODES,
    TRAINER_CHART,
    TRAINER_INSTALL_TIMEOUT,
    VPC_CNI_SERVICE_ACCOUNT,
    HelmChartPin,
    stack_unique_name,
)

__all__ = ["EksOrchestrator", "EksProps"]

JOB_BACKEND = "eks"
"""The job CLI backend of this orchestrator: TrainJobs through the Kubernetes API."""


@dataclass(frozen=True)
class EksProps:
    """What the EKS orchestrator builds on.

    Attributes:
        foundation: the foundation's handles (network, node security group, launch
            template, file system, training image).
        shape: the Trainium nodes (type, counts, capacity).
        settings: the ``eks`` configuration section.
        fsx_capacity_gib: the file system's size (the PersistentVolume's capacity).
    """

    foundation: Foundation
    shape: NodeShape
    settings: EksConfig
    fsx_capacity_gib: int


class EksOrchestrator(Construct):
    """An EKS cluster that is ready for distributed training on the Trainium nodes.

    - Control plane: Kubernetes :data:`KUBERNETES_VERSION`, all five control-plane log
      types, Kubernetes secrets encrypted with a KMS key (rotation on), API endpoint
      public (allow-list) and private or private only, access entries (no aws-auth
      ConfigMap); ``eks.admin_role_arn`` gets ``AmazonEKSClusterAdminPolicy``. The kubectl
      provider runs in the private subnets so it reaches the private endpoint.
    - ``system_nodegroup``: 2 on-demand ``eks.system_instance_type`` nodes (AL2023) in the
      private subnets for controllers and add-ons.
    - ``trainium_nodegroup``: the Efa launch template (instance type, one EFA interface
      per network card, placement group, capacity options), AMI ``AL2023_X86_64_NEURON``,
      only the compute subnet, ``nodes`` min/desired/max, taint
      ``aws.amazon.com/neuron=true:NoSchedule``, the EFA label on EFA instance types
      (the kubelet sets ``node.kubernetes.io/instance-type`` itself).
    - Security groups: the launch template puts every interface in the EFA group only,
      so EKS does not add the cluster security group. Instead of editing the foundation's
      launch template, two rules join the groups: cluster group <- EFA group (kubelet to
      API server, pods to CoreDNS and webhooks on system nodes) and EFA group <- cluster
      group (API server to kubelet and webhooks, system pods to training pods). The EFA
      group keeps its all-traffic-within-itself rule for EFA.
    - Add-ons (``AWS::EKS::Addon``): vpc-cni and aws-fsx-csi-driver with Pod Identity
      associations, kube-proxy, eks-pod-identity-agent, coredns. EKS does not install its
      self-managed copies (``bootstrap_self_managed_addons=False``).
    - Helm charts: Neuron (device plugin + node problem detector), EFA device plugin (only
      on nodes labelled ``vpc.amazonaws.com/efa.present=true``), Kubeflow Trainer.
    - Kubernetes objects: the training namespace, a static FSx PV + PVC, and the Neuron
      ``ClusterTrainingRuntime`` (applied after the Trainer chart, which brings its CRDs).
    """

    job_backend = JOB_BACKEND

    @classmethod
    def from_config(cls, scope: Construct, construct_id: str, config: ClusterConfig,
                    foundation: Foundation) -> EksOrchestrator:
        """The orchestrator of ``config`` (what :func:`trn_ultracluster.orchestrators.build`
        calls)."""
        return cls(scope, construct_id, EksProps(
            foundation=foundation,
            shape=NodeShape(config.instance, config.nodes, config.capacity),
            settings=config.eks,
            fsx_capacity_gib=config.fsx.storage_capacity_gib))

    def __init__(self, scope: Construct, construct_id: str, props: EksProps) -> None:
        super().__init__(scope, construct_id)
        self.props = props
        settings, shape, base = props.settings, props.shape, props.foundation

        self.secrets_key = kms.Key(
            self, "SecretsKey", enable_key_rotation=True,
            removal_policy=base.data_removal, pending_window=Duration.days(7),
            description="Envelope encryption of the EKS cluster's Kubernetes secrets",
        )
        # Named per stack instance, so that the control-plane log group EKS writes to,
        # /aws/eks/<cluster name>/cluster, can be created (encrypted, with a retention, kept
        # or deleted with data_removal_policy) before the cluster, and a kept one never
        # collides with the next deploy's.
        cluster_name = stack_unique_name(Stack.of(self))
        self.control_plane_logs = logs.LogGroup(
            self, "ControlPlaneLogs", log_group_name=CONTROL_PLANE_LOG_GROUP.format(cluster=cluster_name),
            retention=logs.RetentionDays.ONE_MONTH)
        self.cluster = eks.Cluster(
            self,
            "Cluster",
            cluster_name=cluster_name,
            version=KUBERNETES_VERSION,
            vpc=base.vpc,
            vpc_subnets=[ec2.SubnetSelection(subnets=list(base.private_subnets))],
            default_capacity_type=eks.DefaultCapacityType.NODEGROUP,
            default_capacity=0,
            endpoint_access=self._endpoint_access(settings),
            cluster_logging=[
                eks.ClusterLoggingTypes.API,
                eks.ClusterLoggingTypes.AUDIT,
                eks.ClusterLoggingTypes.AUTHENTICATOR,
                eks.ClusterLoggingTypes.CONTROLLER_MANAGER,
                eks.ClusterLoggingTypes.SCHEDULER,
            ],
            secrets_encryption_key=self.secrets_key,
            bootstrap_self_managed_addons=False,
            kubectl_provider_options=eks.KubectlProviderOptions(
                kubectl_layer=KubectlV36Layer(self, "KubectlLayer"),
                private_subnets=list(base.private_subnets),
            ),
            output_config_command=False,
        )
        self.cluster.node.add_dependency(self.control_plane_logs)
        for construct_id, principal in self.admin_principals(settings).items():
            self.cluster.grant_access(
                construct_id, principal,
                [eks.AccessPolicy.from_access_policy_name(
                    ADMIN_POLICY, access_scope_type=eks.AccessScopeType.CLUSTER)],
            )
        self._connect_security_groups()

        self.node_role = iam.Role(
            self,
            "NodeRole",
            assumed_by=iam.ServicePrincipal("ec2.amazonaws.com"),
            description="EKS nodes: join the cluster and pull images (VPC CNI uses Pod Identity)",
            managed_policies=[
                iam.ManagedPolicy.from_aws_managed_policy_name(name) for name in NODE_POLICIES
            ],
        )

        self.addons: dict[str, eks.CfnAddon] = {}
        cni_role = self._pod_identity_role(
            "VpcCniRole", "VPC CNI (aws-node): manage pod ENIs and IPs",
            [iam.ManagedPolicy.from_aws_managed_policy_name("AmazonEKS_CNI_Policy")])
        self._addon("eks_pod_identity_agent")
        self._addon("vpc_cni", (VPC_CNI_SERVICE_ACCOUNT, cni_role))
        self._addon("kube_proxy")

        self.system_nodegroup = self.cluster.add_nodegroup_capacity(
            "SystemNodes",
            instance_types=[ec2.InstanceType(settings.system_instance_type)],
            ami_type=eks.NodegroupAmiType.AL2023_X86_64_STANDARD,
            capacity_type=eks.CapacityType.ON_DEMAND,
            min_size=SYSTEM_NODES,
            desired_size=SYSTEM_NODES,
            max_size=SYSTEM_NODES,
            subnets=ec2.SubnetSelection(subnets=list(base.private_subnets)),
            node_role=self.node_role,
        )
        capacity_block = shape.capacity.type == "capacity-block"
        self.trainium_nodegroup = self.cluster.add_nodegroup_capacity(
            "TrainiumNodes",
            ami_type=eks.NodegroupAmiType.AL2023_X86_64_NEURON,
            launch_template_spec=eks.LaunchTemplateSpec(
                id=base.launch_template_id, version=base.launch_template_version),
            capacity_type=(eks.CapacityType.CAPACITY_BLOCK if capacity_block
                           else eks.CapacityType.ON_DEMAND),
            # A Capacity Block cannot launch instances before it starts, so its node group
            # is created empty and scaled when the block is active (`trn-ultracluster
            # scale`): EKS user guide, "Create a managed node group with Capacity Blocks
            # for ML" (set desiredSize 0 at create, then scale up by scheduled action,
            # update-nodegroup-config or Cluster Autoscaler).
            min_size=0 if capacity_block else shape.nodes.min,
            desired_size=0 if capacity_block else shape.nodes.desired,
            max_size=shape.nodes.max,
            subnets=ec2.SubnetSelection(subnets=[base.compute_subnet]),
            node_role=self.node_role,
            taints=[eks.TaintSpec(effect=eks.TaintEffect.NO_SCHEDULE, key=k8s.NEURON_TAINT.key,
                                  value=k8s.NEURON_TAINT.value)],
            labels=self._trainium_labels(shape),
        )
        for nodegroup in (self.system_nodegroup, self.trainium_nodegroup):
            for addon in self.addons.values():
                nodegroup.node.add_dependency(addon)

        # CoreDNS and the FSx CSI controller run on the system nodes.
        fsx_role = self._fsx_csi_role()
        for addon in (self._addon("coredns"),
                      self._addon("aws_fsx_csi_driver", (FSX_CSI_SERVICE_ACCOUNT, fsx_role))):
            addon.node.add_dependency(self.system_nodegroup)

        self.neuron_chart = self._chart("NeuronChart", NEURON_CHART, {
            "devicePlugin": {"enabled": True},
            "scheduler": {"enabled": False},
            "npd": {"enabled": True},
        })
        self.efa_chart = self._chart("EfaDevicePluginChart", EFA_PLUGIN_CHART, {
            "nodeSelector": {k8s.EFA_NODE_LABEL: "true"},
            "tolerations": [k8s.NEURON_TAINT.toleration()],
        })
        self.trainer_chart = self._chart("KubeflowTrainerChart", TRAINER_CHART, {},
                                         wait=True, create_namespace=True)
        self._kubernetes_objects()
        self.metric_source = container_insights(
            self, self.cluster, version=settings.addon_versions.amazon_cloudwatch_observability,
            after=[self.addons["eks_pod_identity_agent"], self.system_nodegroup])
        acknowledge_eks(self)

    # --- parts -------------------------------------------------------------------------

    @staticmethod
    def admin_principals(settings: EksConfig) -> dict[str, str]:
        """IAM principals given cluster admin through an access entry: construct id -> ARN.

        ``eks.admin_role_arn`` (``AdminAccess``) and ``eks.deployer_principal_arn``
        (``DeployerAccess``; ``make deploy`` sets it to the caller's IAM principal). A
        principal can be in only one access entry (EKS user guide, "Create access
        entries"), so a deployer equal to the admin role gets no second entry. The ids do
        not depend on list positions, so adding one never replaces the other.
        """
        principals = {}
        if settings.admin_role_arn is not None:
            principals["AdminAccess"] = settings.admin_role_arn
        deployer = settings.deployer_principal_arn
        if deployer is not None and deployer != settings.admin_role_arn:
            principals["DeployerAccess"] = deployer
        return principals

    @staticmethod
    def _endpoint_access(settings: EksConfig) -> eks.EndpointAccess:
        if settings.endpoint_access == "private":
            return eks.EndpointAccess.PRIVATE
        return eks.EndpointAccess.PUBLIC_AND_PRIVATE.only_from(*settings.public_access_cidrs)

    @staticmethod
    def _trainium_labels(shape: NodeShape) -> dict[str, str] | None:
        """The label the EFA device plugin selects; the kubelet labels the instance type."""
        return {k8s.EFA_NODE_LABEL: "true"} if shape.instance.supports_efa else None

    def _connect_security_groups(self) -> None:
        efa_group = self.props.foundation.node_security_group
        cluster_group = self.cluster.cluster_security_group
        cluster_group.add_ingress_rule(
            efa_group, ec2.Port.all_traffic(),
            "Trainium nodes to control plane and system nodes (API, DNS, webhooks)")
        efa_group.add_ingress_rule(
            cluster_group, ec2.Port.all_traffic(),
            "Control plane and system nodes to Trainium nodes (kubelet, pods)")

    def _pod_identity_role(self, construct_id: str, description: str,
                           managed_policies: list[iam.IManagedPolicy] | None = None) -> iam.Role:
        return iam.Role(
            self, construct_id, description=description, managed_policies=managed_policies,
            assumed_by=iam.ServicePrincipal("pods.eks.amazonaws.com").with_session_tags(),
        )

    def _fsx_csi_role(self) -> iam.Role:
        """Only what the controller needs for the stack's static volume: describe file
        systems (no dynamic provisioning, no volume expansion; see the module doc).
        ``fsx:DescribeFileSystems`` has no resource-level permissions (Service Authorization
        Reference, Amazon FSx: no resource type listed), so it is granted on ``*``."""
        role = self._pod_identity_role(
            "FsxCsiRole", "FSx CSI controller: describe file systems (read only)")
        role.add_to_policy(iam.PolicyStatement(actions=["fsx:DescribeFileSystems"],
                                               resources=["*"]))
        acknowledge(role.node.find_child("DefaultPolicy"), "AwsSolutions-IAM5[Resource::*]",
                    "fsx:DescribeFileSystems has no resource-level permissions (Service "
                    "Authorization Reference, Amazon FSx); it is read only.")
        return role

    def _addon(self, field: str,
               pod_identity: tuple[str, iam.IRole] | None = None) -> eks.CfnAddon:
        """The EKS add-on of an :class:`EksAddonVersionsConfig` field (``vpc_cni`` ->
        ``vpc-cni``) at the configured version (``None``: EKS's default for the cluster)."""
        name = field.replace("_", "-")
        addon = eks.CfnAddon(
            self,
            f"Addon-{name}",
            addon_name=name,
            cluster_name=self.cluster.cluster_name,
            addon_version=getattr(self.props.settings.addon_versions, field),
            resolve_conflicts="OVERWRITE",
            pod_identity_associations=[eks.CfnAddon.PodIdentityAssociationProperty(
                service_account=pod_identity[0], role_arn=pod_identity[1].role_arn)]
            if pod_identity else None,
        )
        self.addons[field] = addon
        return addon

    def _chart(self, construct_id: str, pin: HelmChartPin, values: dict,
               wait: bool = False, create_namespace: bool = False) -> eks.HelmChart:
        chart = self.cluster.add_helm_chart(
            construct_id,
            chart=pin.chart,
            repository=pin.repository,
            version=pin.version,
            namespace=pin.namespace,
            release=pin.chart,
            values=values or None,
            wait=wait,
            timeout=TRAINER_INSTALL_TIMEOUT if wait else None,
            create_namespace=create_namespace,
        )
        chart.node.add_dependency(self.system_nodegroup)
        chart.node.add_dependency(self.addons["coredns"])
        return chart

    def _kubernetes_objects(self) -> None:
        base, namespace = self.props.foundation, self.props.settings.training_namespace
        capacity = self.props.fsx_capacity_gib
        self.namespace = self.cluster.add_manifest("TrainingNamespace", k8s.namespace(namespace))
        self.fsx_volume = self.cluster.add_manifest(
            "FsxVolume",
            k8s.fsx_persistent_volume(
                file_system_id=base.file_system.file_system_id,
                dns_name=base.file_system.dns_name,
                mount_name=base.file_system.mount_name,
                storage_capacity_gib=capacity,
            ),
            k8s.fsx_persistent_volume_claim(namespace_name=namespace,
                                            storage_capacity_gib=capacity),
        )
        self.fsx_volume.node.add_dependency(self.namespace)
        self.fsx_volume.node.add_dependency(self.addons["aws_fsx_csi_driver"])
        self.training_runtime = self.cluster.add_manifest(
            "NeuronTrainingRuntime",
            k8s.neuron_training_runtime(self.props.shape.instance,
                                        image=base.training_image.image_uri),
        )
        # The ClusterTrainingRuntime CRD and its validating webhook come with the chart; the
        # image it names exists once the build is done (the tag is known before).
        self.training_runtime.node.add_dependency(self.trainer_chart)
        self.training_runtime.node.add_dependency(base.training_image.build)

    def outputs(self) -> dict[OutputKey, str]:
        """EKS outputs: cluster, kubeconfig command, namespace, PVC, runtime, node group."""
        region = Stack.of(self).region
        return {
            OutputKey.EKS_CLUSTER_NAME: self.cluster.cluster_name,
            OutputKey.EKS_CLUSTER_ARN: self.cluster.cluster_arn,
            OutputKey.EKS_UPDATE_KUBECONFIG: (
                f"aws eks update-kubeconfig --region {region} --name {self.cluster.cluster_name}"),
            OutputKey.EKS_TRAINING_NAMESPACE: self.props.settings.training_namespace,
            OutputKey.EKS_FSX_PVC_NAME: k8s.FSX_PVC_NAME,
            OutputKey.EKS_TRAINING_RUNTIME: k8s.TRAINING_RUNTIME_NAME,
            OutputKey.EKS_TRAINIUM_NODEGROUP: self.trainium_nodegroup.nodegroup_name,
        }
