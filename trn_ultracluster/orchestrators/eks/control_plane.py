"""The EKS cluster both EKS-based orchestrators share: control plane, system node group,
add-ons, FSx CSI, Kubeflow Trainer and the training namespace's objects (versions and their
sources: :mod:`.versions`).

:class:`EksCluster` builds everything but the Trainium nodes; a subclass adds them and their
device plugins through three hooks (:meth:`EksCluster.compute_nodegroups`,
:meth:`EksCluster.device_plugin_charts`, :meth:`EksCluster.training_runtime_manifest`):
:class:`~trn_ultracluster.orchestrators.eks.cluster.EksOrchestrator` with an EKS managed node
group, :class:`~trn_ultracluster.orchestrators.hyperpod_eks.cluster.HyperPodEksOrchestrator`
with a SageMaker HyperPod instance group. Every construct is created directly in the
subclass's scope, so the logical ids of a deployed ``eks`` stack did not change when this
base was split out.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from aws_cdk import CfnResource, Duration, Stack
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_logs as logs
from constructs import Construct

from trn_ultracluster.config import EksConfig
from trn_ultracluster.config.facts import CNI_WARM_IP_TARGET, DEFAULT_KUBERNETES_VERSION
from trn_ultracluster.config.model.teams import SchedulingConfig, Team
from trn_ultracluster.constructs.names import stack_unique_name
from trn_ultracluster.contracts.outputs import OutputKey
from trn_ultracluster.contracts.pools import POOL_LABEL
from trn_ultracluster.nag import acknowledge
from trn_ultracluster.orchestrators.base import Foundation, NodeShape, PoolFoundation
from trn_ultracluster.orchestrators.eks import manifests as k8s
from trn_ultracluster.orchestrators.eks.kubectl import place_kubectl_functions
from trn_ultracluster.orchestrators.eks.nag import acknowledge_eks
from trn_ultracluster.orchestrators.eks.node_updates import follow_control_plane
from trn_ultracluster.orchestrators.eks.observability import container_insights
from trn_ultracluster.orchestrators.eks.pools import pool_training_runtime
from trn_ultracluster.orchestrators.eks.training_objects import add_training_objects
from trn_ultracluster.orchestrators.eks.versions import (
    ADMIN_POLICY,
    CONTROL_PLANE_LOG_GROUP,
    FSX_CSI_SERVICE_ACCOUNT,
    NODE_POLICIES,
    SYSTEM_NODES,
    TRAINER_CHART,
    TRAINER_INSTALL_TIMEOUT,
    VPC_CNI_SERVICE_ACCOUNT,
    HelmChartPin,
    kubectl_layer,
    kubernetes_version,
)

__all__ = ["EksCluster", "EksProps", "control_plane_tier", "vpc_cni_configuration"]


def vpc_cni_configuration(pod_ips_per_node: int) -> str:
    """The ``vpc-cni`` add-on's ``ConfigurationValues``: ``MINIMUM_IP_TARGET`` =
    ``eks.pod_ips_per_node`` and ``WARM_IP_TARGET`` =
    :data:`~trn_ultracluster.config.facts.CNI_WARM_IP_TARGET`, so a node holds the addresses
    the address plan counts for it instead of a whole spare interface (``WARM_ENI_TARGET``
    1, the CNI's default, which either target overrides: aws/amazon-vpc-cni-k8s README).

    The managed add-on takes the CNI's environment variables under ``env`` in its
    configuration values ("The managed Amazon VPC CNI add-on lets you set values for the
    WARM_PREFIX_TARGET, WARM_IP_TARGET, and MINIMUM_IP_TARGET" through
    ``configurationValues``: AWS re:Post Knowledge Center, "How do I prevent configuration
    conflicts when I create or update my Amazon EKS managed add-ons?",
    https://repost.aws/knowledge-center/eks-prevent-conflicts-managed-addons); ``env`` is the
    CNI Helm chart's map of variable name to string (aws/amazon-vpc-cni-k8s,
    ``charts/aws-vpc-cni/values.yaml``), so the numbers are strings. The add-on's own
    schema is what ``aws eks describe-addon-configuration --addon-name vpc-cni`` prints.
    """
    return json.dumps({"env": {"MINIMUM_IP_TARGET": str(pod_ips_per_node),
                               "WARM_IP_TARGET": str(CNI_WARM_IP_TARGET)}})


def control_plane_tier(tier: str) -> eks.ControlPlaneScalingTier | None:
    """The cluster's ``control_plane_scaling_tier`` for ``eks.control_plane_tier``; ``None``
    for ``standard``, so the template of a standard cluster has no
    ``ControlPlaneScalingConfig`` and a stack deployed before the setting existed sees no
    change (``standard`` is EKS's default tier). Changing the tier updates the cluster in
    place (``ControlPlaneScalingConfig`` of ``AWS::EKS::Cluster``: "Update requires: No
    interruption"; EKS user guide, "Provisioned Control Plane",
    https://docs.aws.amazon.com/eks/latest/userguide/eks-provisioned-control-plane.html)."""
    return None if tier == "standard" else eks.ControlPlaneScalingTier.of(tier)


@dataclass(frozen=True)
class EksProps:
    """What an EKS-based orchestrator builds on.

    Attributes:
        foundation: the foundation's handles (network, node security group, launch
            template, file system, training image).
        shape: the Trainium nodes (type, counts, capacity).
        settings: the ``eks`` configuration section.
        fsx_capacity_gib: the file system's size (the PersistentVolume's capacity).
        kubernetes_version: Kubernetes minor version, e.g. ``"1.36"``
            (``ClusterConfig.kubernetes_version``). Default: the ``eks`` orchestrator's.
        teams: the resolved teams (``ClusterConfig.team_list``). Default: none (no scheduler
            objects; an orchestrator that enforces teams reads them).
        scheduling: the priority classes and preemption (``ClusterConfig.scheduling``), read
            with ``teams``. Default: ``SchedulingConfig()``.
    """

    foundation: Foundation
    shape: NodeShape
    settings: EksConfig
    fsx_capacity_gib: int
    kubernetes_version: str = DEFAULT_KUBERNETES_VERSION["eks"]
    teams: tuple[Team, ...] = ()
    scheduling: SchedulingConfig = field(default_factory=SchedulingConfig)


class EksCluster(Construct):
    """An EKS cluster ready for distributed training, without its Trainium nodes.

    - Control plane: ``props.kubernetes_version``, all five control-plane log types,
      Kubernetes secrets encrypted with a KMS key (rotation on), API endpoint public
      (allow-list) and private or private only, the Provisioned Control Plane tier of
      ``eks.control_plane_tier`` (:func:`control_plane_tier`), authentication mode ``API``
      (access entries, no aws-auth ConfigMap); ``eks.admin_role_arn`` and
      ``eks.deployer_principal_arn`` get ``AmazonEKSClusterAdminPolicy``. The kubectl
      provider runs in the private subnets so it reaches the private endpoint.
    - ``system_nodegroup``: 2 on-demand ``eks.system_instance_type`` nodes (AL2023) in the
      private subnets for controllers and add-ons, at the control plane's Kubernetes version
      (:func:`.node_updates.follow_control_plane`).
    - Security groups: the Trainium nodes' interfaces are in the EFA group only, so EKS does
      not add its cluster security group to them. Two rules join the groups: cluster group
      <- EFA group (kubelet to API server, pods to CoreDNS and webhooks on system nodes) and
      EFA group <- cluster group (API server to kubelet and webhooks, system pods to training
      pods). The EFA group keeps its all-traffic-within-itself rule for EFA.
    - Add-ons (``AWS::EKS::Addon``): vpc-cni (``MINIMUM_IP_TARGET`` = ``eks.pod_ips_per_node``:
      :func:`vpc_cni_configuration`) and aws-fsx-csi-driver with Pod Identity
      associations, kube-proxy, eks-pod-identity-agent, coredns. EKS does not install its
      self-managed copies (``bootstrap_self_managed_addons=False``).
    - Helm: Kubeflow Trainer (with JobSet), plus the subclass's device plugins.
    - Kubernetes objects: the training namespace, a static FSx PV + PVC, the subclass's
      Neuron ``ClusterTrainingRuntime`` of the main pool and one runtime per other node pool
      (:meth:`pool_training_runtime_manifest`), each applied after the Trainer chart, which
      brings its CRDs, and after the build of the image it names.

    Attributes:
        cluster: the ``aws_eks_v2.Cluster``.
        node_role: role of the EKS managed node groups (system, and Trainium on ``eks``).
        addons: add-on field (``vpc_cni``) -> ``CfnAddon``.
        system_nodegroup: the system node group.
        trainer_chart: the Kubeflow Trainer release.
        namespace, fsx_volume, training_runtime: the Kubernetes objects.
        pool_runtimes: pool name -> the runtime of each pool other than the main one.
        fsx_claim_name: the FSx PersistentVolume and claim's name (:func:`.manifests.fsx_volume_name`).
    """

    def __init__(self, scope: Construct, construct_id: str, props: EksProps) -> None:
        super().__init__(scope, construct_id)
        self.props = props
        settings, base = props.settings, props.foundation

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
            version=kubernetes_version(props.kubernetes_version),
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
                kubectl_layer=kubectl_layer(self, "KubectlLayer", props.kubernetes_version),
                private_subnets=list(base.private_subnets),
            ),
            output_config_command=False,
            control_plane_scaling_tier=control_plane_tier(settings.control_plane_tier),
        )
        self.cluster.node.add_dependency(self.control_plane_logs)
        # Every secondary CIDR block is associated before the control plane is created: the
        # control plane recognizes a block associated later only after its reconciliation, up
        # to an hour, during which kubectl logs/exec/port-forward and webhooks fail for nodes
        # and pods in it (network_plan.new_block_warning, with its source). Only the
        # AWS::EKS::Cluster resource waits; its node groups depend on it already.
        cfn_cluster = self.cluster.node.default_child
        assert isinstance(cfn_cluster, CfnResource)
        for block in base.cidr_blocks:
            cfn_cluster.add_resource_dependency(block)
        place_kubectl_functions(self.cluster, settings)
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
        self.cni_role = cni_role = self._pod_identity_role(
            "VpcCniRole", "VPC CNI (aws-node): manage pod ENIs and IPs",
            [iam.ManagedPolicy.from_aws_managed_policy_name("AmazonEKS_CNI_Policy")])
        self._addon("eks_pod_identity_agent")
        self._addon("vpc_cni", (VPC_CNI_SERVICE_ACCOUNT, cni_role),
                    vpc_cni_configuration(settings.pod_ips_per_node))
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
        follow_control_plane(self.system_nodegroup, props.kubernetes_version)
        for nodegroup in (self.system_nodegroup, *self.compute_nodegroups()):
            for addon in self.addons.values():
                nodegroup.node.add_dependency(addon)

        # CoreDNS and the FSx CSI controller run on the system nodes.
        fsx_role = self._fsx_csi_role()
        for addon in (self._addon("coredns"),
                      self._addon("aws_fsx_csi_driver", (FSX_CSI_SERVICE_ACCOUNT, fsx_role))):
            addon.node.add_dependency(self.system_nodegroup)

        self.device_plugin_charts()
        self.trainer_chart = self.chart("KubeflowTrainerChart", TRAINER_CHART, {},
                                        wait=True, create_namespace=True)
        add_training_objects(self)
        self.metric_source = container_insights(
            self, self.cluster, version=settings.addon_versions.amazon_cloudwatch_observability,
            after=[self.addons["eks_pod_identity_agent"], self.system_nodegroup],
            tolerations=self.node_tolerations())
        acknowledge_eks(self.cluster, self.node_role, cni_role)

    # --- hooks of the subclasses -------------------------------------------------------

    def node_tolerations(self) -> tuple[dict[str, str], ...]:
        """Tolerations of DaemonSets that must run on every Trainium node (Container
        Insights' agents). Default: the Trainium nodes' Neuron taint."""
        return (k8s.NEURON_TAINT.toleration(),)

    def compute_nodegroups(self) -> list[eks.Nodegroup]:
        """Create the EKS managed node groups of the Trainium nodes (called once the system
        node group exists; each waits for the networking add-ons). Default: none."""
        return []

    def device_plugin_charts(self) -> None:
        """Install the Neuron and EFA device plugins (called once CoreDNS and FSx CSI are
        declared, before the Trainer chart). Default: none."""

    def training_runtime_manifest(self) -> k8s.Manifest:
        """The Neuron ``ClusterTrainingRuntime`` the stack applies after the Trainer chart
        (:func:`~trn_ultracluster.orchestrators.eks.manifests.neuron_training_runtime`)."""
        raise NotImplementedError

    def pool_training_runtime_manifest(self, pool: PoolFoundation) -> k8s.Manifest:
        """The ``ClusterTrainingRuntime`` of ``pool``, a pool other than the main one
        (:func:`~trn_ultracluster.orchestrators.eks.pools.pool_training_runtime`, named
        :func:`~trn_ultracluster.orchestrators.eks.pools.pool_runtime_name`): the pool's
        image, Neuron stack and resources, selecting the nodes labelled
        ``trn-ultracluster/pool`` = its name (its nodes must carry the label). Default: that
        label alone, no JobSet restarts; a subclass may select more (HyperPod's health
        label) or restart."""
        return pool_training_runtime(pool.pool.instance, pool_name=pool.pool.name,
                                     image=pool.training_image.image_uri,
                                     stack=pool.pool.neuron_stack,
                                     node_selector={POOL_LABEL: pool.pool.name},
                                     fsx_claim=self.fsx_claim_name)

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

    def _addon(self, field: str, pod_identity: tuple[str, iam.IRole] | None = None,
               configuration: str | None = None) -> eks.CfnAddon:
        """The EKS add-on of an :class:`EksAddonVersionsConfig` field (``vpc_cni`` ->
        ``vpc-cni``) at the configured version (``None``: EKS's default for the cluster),
        with its ``ConfigurationValues`` (JSON) if given."""
        name = field.replace("_", "-")
        addon = eks.CfnAddon(
            self,
            f"Addon-{name}",
            addon_name=name,
            cluster_name=self.cluster.cluster_name,
            addon_version=getattr(self.props.settings.addon_versions, field),
            resolve_conflicts="OVERWRITE",
            configuration_values=configuration,
            pod_identity_associations=[eks.CfnAddon.PodIdentityAssociationProperty(
                service_account=pod_identity[0], role_arn=pod_identity[1].role_arn)]
            if pod_identity else None,
        )
        self.addons[field] = addon
        return addon

    def chart(self, construct_id: str, pin: HelmChartPin | None, values: dict,
              wait: bool = False, create_namespace: bool = False,
              **source: object) -> eks.HelmChart:
        """A Helm release of ``pin`` (or of ``chart_asset=..., release=...`` given in
        ``source``) with ``values``, installed once the system nodes and CoreDNS are up
        (``wait``: ``helm --wait`` with :data:`TRAINER_INSTALL_TIMEOUT`)."""
        where = (dict(chart=pin.chart, repository=pin.repository, version=pin.version,
                      namespace=pin.namespace, release=pin.chart) if pin else source)
        chart = self.cluster.add_helm_chart(
            construct_id,
            **where,  # type: ignore[arg-type]
            values=values or None,
            wait=wait,
            timeout=TRAINER_INSTALL_TIMEOUT if wait else None,
            create_namespace=create_namespace,
        )
        chart.node.add_dependency(self.system_nodegroup)
        chart.node.add_dependency(self.addons["coredns"])
        return chart

    def cluster_outputs(self) -> dict[OutputKey, str]:
        """The outputs of the EKS cluster: name, ARN, kubeconfig command, namespace, PVC,
        runtime (the node group is the subclass's)."""
        region = Stack.of(self).region
        return {
            OutputKey.EKS_CLUSTER_NAME: self.cluster.cluster_name,
            OutputKey.EKS_CLUSTER_ARN: self.cluster.cluster_arn,
            OutputKey.EKS_UPDATE_KUBECONFIG: (
                f"aws eks update-kubeconfig --region {region} --name {self.cluster.cluster_name}"),
            OutputKey.EKS_TRAINING_NAMESPACE: self.props.settings.training_namespace,
            OutputKey.EKS_FSX_PVC_NAME: self.fsx_claim_name,
            OutputKey.EKS_TRAINING_RUNTIME: k8s.TRAINING_RUNTIME_NAME,
        }
