"""Eks orchestrator (issue 3): EKS cluster, Trainium node group, add-ons, Kubeflow Trainer.

Facts used here and their sources:

- Kubernetes 1.36: the newest version with an EKS AL2023 Neuron AMI
  (awslabs/amazon-eks-ami release v20260818 publishes
  ``amazon-eks-node-al2023-x86_64-neuron-1.36-v20260818``; SSM
  ``/aws/service/eks/optimized-ami/1.36/amazon-linux-2023/x86_64/neuron/recommended/image_id``)
  and the newest ``aws_eks_v2.KubernetesVersion`` in aws-cdk-lib 2.275.0 (V1_25 .. V1_36).
  The kubectl layer matches it: ``aws-cdk.lambda-layer-kubectl-v36==2.0.1`` (PyPI).
- Neuron Helm chart ``oci://public.ecr.aws/neuron/neuron-helm-chart`` 1.10.0 (pulled
  2026-09-11, digest sha256:ed5d8f73...); values ``devicePlugin.enabled``,
  ``scheduler.enabled``, ``npd.enabled`` (aws-neuron/neuron-helm-charts
  ``charts/neuron-helm-chart/values.yaml`` and README). The chart's extra kube-scheduler
  (``my-scheduler``, kube-scheduler v1.31 in 1.10.0) is off: no pod of the stack names it
  (``schedulerName``), and whole-node pods need no contiguous-core placement.
- EFA device plugin: chart ``aws-efa-k8s-device-plugin`` v0.5.20 in
  ``https://aws.github.io/eks-charts`` (aws/eks-charts ``stable/aws-efa-k8s-device-plugin/Chart.yaml``,
  release v0.0.238 "Adding efa release 0.5.20"); values ``nodeSelector`` and
  ``tolerations`` (``templates/daemonset.yaml``).
- Kubeflow Trainer chart 2.3.0, ``oci://ghcr.io/kubeflow/charts/kubeflow-trainer``
  (project DESIGN §4). It installs JobSet too: kubeflow/trainer
  ``charts/kubeflow-trainer/Chart.yaml`` (version 2.3.0) lists the dependency ``jobset``
  0.12.0 from ``oci://registry.k8s.io/jobset/charts`` with ``condition: jobset.install``,
  and ``charts/kubeflow-trainer/values.yaml`` sets ``jobset.install: true``.
- Add-on names ``vpc-cni``, ``coredns``, ``kube-proxy``, ``eks-pod-identity-agent``,
  ``aws-fsx-csi-driver``, service accounts ``aws-node`` (VPC CNI) and
  ``fsx-csi-controller-sa`` (FSx CSI controller): EKS user guide, "Amazon EKS add-ons"
  and "Use Pod Identity with the VPC CNI / FSx CSI driver".
- Pod Identity trust: principal ``pods.eks.amazonaws.com``, actions ``sts:AssumeRole``
  and ``sts:TagSession`` (EKS user guide, "pod-id-role"); ``ServicePrincipal(...)
  .with_session_tags()`` writes both in one statement.
- FSx CSI controller: ``fsx:DescribeFileSystems`` is in the driver's IAM policy
  (kubernetes-sigs/aws-fsx-csi-driver ``docs/install.md``, "Set up driver permissions").
  The rest of that policy (create/delete/update file systems, S3 data repositories) is for
  dynamic provisioning and volume expansion, which a static volume does not use.
- Node role policies ``AmazonEKSWorkerNodePolicy`` and
  ``AmazonEC2ContainerRegistryPullOnly`` (EKS user guide, "create-node-role").
"""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import Aws, Duration, Fn, Stack
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_logs as logs
from aws_cdk.lambda_layer_kubectl_v36 import KubectlV36Layer
from constructs import Construct

from trn_ultracluster import k8s
from trn_ultracluster.config import ClusterConfig
from trn_ultracluster.constructs.orchestrator import OrchestratorProps
from trn_ultracluster.nag import (
    LAMBDA_BASIC_EXECUTION,
    acknowledge,
    managed_policy_finding,
    skip_library_function_checks,
)
from trn_ultracluster.contracts.outputs import OutputKey

__all__ = [
    "EFA_PLUGIN_CHART",
    "EksOrchestrator",
    "HelmChartPin",
    "KUBERNETES_VERSION",
    "NEURON_CHART",
    "TRAINER_CHART",
]

KUBERNETES_VERSION = eks.KubernetesVersion.V1_36
"""Newest version with an EKS AL2023 Neuron AMI and in aws-cdk-lib 2.275.0 (see module doc)."""
SYSTEM_NODES = 2
"""On-demand system nodes for controllers and add-ons (two, for one failure)."""
NODE_POLICIES = {
    "AmazonEKSWorkerNodePolicy": "nodes describe EC2 and join the cluster",
    "AmazonEC2ContainerRegistryPullOnly": "nodes pull images from ECR, read only",
}
"""Managed policies of the node role (name -> why): join the cluster, pull images, nothing
else (EKS user guide, "create-node-role")."""
VPC_CNI_SERVICE_ACCOUNT = "aws-node"
FSX_CSI_SERVICE_ACCOUNT = "fsx-csi-controller-sa"
KUBE_SYSTEM = "kube-system"


@dataclass(frozen=True)
class HelmChartPin:
    """A Helm chart at a pinned version (never "latest") and the namespace it goes to."""

    chart: str
    repository: str
    version: str
    namespace: str


NEURON_CHART = HelmChartPin(
    "neuron-helm-chart", "oci://public.ecr.aws/neuron/neuron-helm-chart", "1.10.0", KUBE_SYSTEM)
EFA_PLUGIN_CHART = HelmChartPin(
    "aws-efa-k8s-device-plugin", "https://aws.github.io/eks-charts", "v0.5.20", KUBE_SYSTEM)
TRAINER_CHART = HelmChartPin(
    "kubeflow-trainer", "oci://ghcr.io/kubeflow/charts/kubeflow-trainer", "2.3.0",
    "kubeflow-system")
TRAINER_INSTALL_TIMEOUT = Duration.minutes(10)
"""``helm --wait`` timeout of the Kubeflow Trainer chart. The install runs inside aws-eks-v2's
kubectl handler, a Lambda function with a 15-minute timeout (aws-cdk-lib 2.275.0
``aws-eks-v2/lib/kubectl-provider.ts``: ``timeout: Duration.minutes(15)``; Lambda's maximum),
which also pulls the chart and runs helm: 10 minutes leaves it that margin, so a slow
rollout fails with helm's message instead of a Lambda timeout."""
ADMIN_POLICY = "AmazonEKSClusterAdminPolicy"
"""EKS access policy for cluster-wide admin (EKS user guide, "Review access policy
permissions")."""


def stack_unique_name(stack: Stack) -> str:
    """``<stack name>-<first 8 hex digits of the stack id's UUID>`` (a deploy-time token):
    unique per stack instance. A stack id is
    ``arn:aws:cloudformation:<region>:<account>:stack/<name>/<uuid>`` (CloudFormation
    ``AWS::StackId`` pseudo parameter). EKS cluster names allow 100 characters of letters,
    digits, ``-`` and ``_`` (EKS API reference, CreateCluster ``name``)."""
    uuid = Fn.select(2, Fn.split("/", Aws.STACK_ID))
    return Fn.join("-", [stack.stack_name, Fn.select(0, Fn.split("-", uuid))])


CONTROL_PLANE_LOG_GROUP = "/aws/eks/{cluster}/cluster"
"""Where EKS sends control-plane logs (EKS user guide, "Send control plane logs to
CloudWatch Logs"; AWS Knowledge Center, "eks-get-control-plane-logs")."""


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

    def __init__(self, scope: Construct, construct_id: str, props: OrchestratorProps) -> None:
        super().__init__(scope, construct_id)
        self.props = props
        config = props.config
        net = props.network

        self.secrets_key = kms.Key(
            self, "SecretsKey", enable_key_rotation=True,
            removal_policy=props.data_removal, pending_window=Duration.days(7),
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
            vpc=net.vpc,
            vpc_subnets=[ec2.SubnetSelection(subnets=net.private_subnets)],
            default_capacity_type=eks.DefaultCapacityType.NODEGROUP,
            default_capacity=0,
            endpoint_access=self._endpoint_access(config),
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
                private_subnets=net.private_subnets,
            ),
            output_config_command=False,
        )
        self.cluster.node.add_dependency(self.control_plane_logs)
        for construct_id, principal in self.admin_principals(config).items():
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
            instance_types=[ec2.InstanceType(config.eks.system_instance_type)],
            ami_type=eks.NodegroupAmiType.AL2023_X86_64_STANDARD,
            capacity_type=eks.CapacityType.ON_DEMAND,
            min_size=SYSTEM_NODES,
            desired_size=SYSTEM_NODES,
            max_size=SYSTEM_NODES,
            subnets=ec2.SubnetSelection(subnets=net.private_subnets),
            node_role=self.node_role,
        )
        capacity_block = config.capacity.type == "capacity-block"
        self.trainium_nodegroup = self.cluster.add_nodegroup_capacity(
            "TrainiumNodes",
            ami_type=eks.NodegroupAmiType.AL2023_X86_64_NEURON,
            launch_template_spec=eks.LaunchTemplateSpec(
                id=props.efa.launch_template_id, version=props.efa.launch_template_version),
            capacity_type=(eks.CapacityType.CAPACITY_BLOCK if capacity_block
                           else eks.CapacityType.ON_DEMAND),
            # A Capacity Block cannot launch instances before it starts, so its node group
            # is created empty and scaled when the block is active (`trn-ultracluster
            # scale`): EKS user guide, "Create a managed node group with Capacity Blocks
            # for ML" (set desiredSize 0 at create, then scale up by scheduled action,
            # update-nodegroup-config or Cluster Autoscaler).
            min_size=0 if capacity_block else config.nodes.min,
            desired_size=0 if capacity_block else config.nodes.desired,
            max_size=config.nodes.max,
            subnets=ec2.SubnetSelection(subnets=[net.compute_subnet]),
            node_role=self.node_role,
            taints=[eks.TaintSpec(effect=eks.TaintEffect.NO_SCHEDULE, key=k8s.NEURON_TAINT.key,
                                  value=k8s.NEURON_TAINT.value)],
            labels=self._trainium_labels(config),
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
        self._kubernetes_objects(config)
        self._acknowledge()

    # --- parts -------------------------------------------------------------------------

    @staticmethod
    def admin_principals(config: ClusterConfig) -> dict[str, str]:
        """IAM principals given cluster admin through an access entry: construct id -> ARN.

        ``eks.admin_role_arn`` (``AdminAccess``) and ``eks.deployer_principal_arn``
        (``DeployerAccess``; ``make deploy`` sets it to the caller's IAM principal). A
        principal can be in only one access entry (EKS user guide, "Create access
        entries"), so a deployer equal to the admin role gets no second entry. The ids do
        not depend on list positions, so adding one never replaces the other.
        """
        eks_config = config.eks
        principals = {}
        if eks_config.admin_role_arn is not None:
            principals["AdminAccess"] = eks_config.admin_role_arn
        deployer = eks_config.deployer_principal_arn
        if deployer is not None and deployer != eks_config.admin_role_arn:
            principals["DeployerAccess"] = deployer
        return principals

    @staticmethod
    def _endpoint_access(config: ClusterConfig) -> eks.EndpointAccess:
        if config.eks.endpoint_access == "private":
            return eks.EndpointAccess.PRIVATE
        return eks.EndpointAccess.PUBLIC_AND_PRIVATE.only_from(*config.eks.public_access_cidrs)

    @staticmethod
    def _trainium_labels(config: ClusterConfig) -> dict[str, str] | None:
        """The label the EFA device plugin selects; the kubelet labels the instance type."""
        return {k8s.EFA_NODE_LABEL: "true"} if config.instance.supports_efa else None

    def _connect_security_groups(self) -> None:
        efa_group = self.props.efa.security_group
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
            addon_version=getattr(self.props.config.eks.addon_versions, field),
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

    def _kubernetes_objects(self, config: ClusterConfig) -> None:
        storage = self.props.storage
        capacity = config.fsx.storage_capacity_gib
        self.namespace = self.cluster.add_manifest(
            "TrainingNamespace", k8s.namespace(config.eks.training_namespace))
        self.fsx_volume = self.cluster.add_manifest(
            "FsxVolume",
            k8s.fsx_persistent_volume(
                file_system_id=storage.file_system.file_system_id,
                dns_name=storage.dns_name,
                mount_name=storage.mount_name,
                storage_capacity_gib=capacity,
            ),
            k8s.fsx_persistent_volume_claim(
                namespace_name=config.eks.training_namespace, storage_capacity_gib=capacity),
        )
        self.fsx_volume.node.add_dependency(self.namespace)
        self.fsx_volume.node.add_dependency(self.addons["aws_fsx_csi_driver"])
        self.training_runtime = self.cluster.add_manifest(
            "NeuronTrainingRuntime",
            k8s.neuron_training_runtime(config.instance,
                                        image=self.props.training_image.image_uri),
        )
        # The ClusterTrainingRuntime CRD and its validating webhook come with the chart; the
        # image it names exists once the build is done (the tag is known before).
        self.training_runtime.node.add_dependency(self.trainer_chart)
        self.training_runtime.node.add_dependency(self.props.training_image.build)

    def _acknowledge(self) -> None:
        """cdk-nag findings on roles and functions that EKS or aws-eks-v2 define."""
        acknowledge(self.cluster.role, managed_policy_finding("AmazonEKSClusterPolicy"),
                    "The EKS cluster service role needs the AWS managed AmazonEKSClusterPolicy "
                    "(EKS user guide, 'cluster-iam-role').")
        for policy, why in NODE_POLICIES.items():
            acknowledge(self.node_role, managed_policy_finding(policy),
                        f"EKS node role policy required by EKS ({why}); EKS user guide "
                        "'create-node-role'. The CNI policy is not on the node role.")
        acknowledge(self.node.find_child("VpcCniRole"),
                    managed_policy_finding("AmazonEKS_CNI_Policy"),
                    "The VPC CNI (aws-node, via Pod Identity) needs AmazonEKS_CNI_Policy to "
                    "attach ENIs and assign pod IPs; EKS user guide 'cni-iam-role'.")
        provider = self.cluster.kubectl_provider
        assert provider is not None
        handler = provider.node.find_child("Handler")
        on_event = provider.node.find_child("Provider").node.find_child("framework-onEvent")
        lambda_reason = ("aws-eks-v2's kubectl provider Lambda (defined by aws-cdk-lib) logs to "
                         "CloudWatch and runs in the private subnets to reach the private "
                         "API endpoint")
        for scope in (handler, on_event):
            skip_library_function_checks(scope)
            acknowledge(scope, LAMBDA_BASIC_EXECUTION, lambda_reason)
            acknowledge(scope,
                        managed_policy_finding("service-role/AWSLambdaVPCAccessExecutionRole"),
                        lambda_reason)
        acknowledge(handler, managed_policy_finding("AmazonEC2ContainerRegistryReadOnly"),
                    "aws-eks-v2's kubectl handler pulls Helm charts from OCI registries in ECR.")
        condition = handler.node.find_child("HasEcrPublic")
        acknowledge(handler, ECR_PUBLIC_FINDING.replace(
                        "{condition}", Stack.of(self).get_logical_id(condition)),
                    "aws-eks-v2's kubectl handler logs in to ECR Public (read only) to pull the "
                    "Neuron Helm chart from oci://public.ecr.aws/neuron.")
        acknowledge(handler, "AwsSolutions-L1",
                    "The kubectl handler's runtime is chosen by aws-cdk-lib 2.275.0 to match "
                    "its bundled kubectl/helm; it cannot be set here.")
        acknowledge(on_event, "AwsSolutions-IAM5[Resource::<{}.Arn>:*]".format(
                    Stack.of(self).get_logical_id(handler.node.default_child)),
                    "The custom resource framework invokes the kubectl handler and its "
                    "versions (ARN:*); aws-cdk-lib defines it.")

    def outputs(self) -> dict[OutputKey, str]:
        """EKS outputs: cluster, kubeconfig command, namespace, PVC, runtime, node group."""
        region = Stack.of(self).region
        return {
            OutputKey.EKS_CLUSTER_NAME: self.cluster.cluster_name,
            OutputKey.EKS_CLUSTER_ARN: self.cluster.cluster_arn,
            OutputKey.EKS_UPDATE_KUBECONFIG: (
                f"aws eks update-kubeconfig --region {region} --name {self.cluster.cluster_name}"),
            OutputKey.EKS_TRAINING_NAMESPACE: self.props.config.eks.training_namespace,
            OutputKey.EKS_FSX_PVC_NAME: k8s.FSX_PVC_NAME,
            OutputKey.EKS_TRAINING_RUNTIME: k8s.TRAINING_RUNTIME_NAME,
            OutputKey.EKS_TRAINIUM_NODEGROUP: self.trainium_nodegroup.nodegroup_name,
        }


ECR_PUBLIC_FINDING = (
    'AwsSolutions-IAM4[Policy::{"Fn::If":["{condition}",{"Fn::Join":["",["arn:",'
    '{"Ref":"AWS::Partition"},":iam::aws:policy/AmazonElasticContainerRegistryPublicReadOnly"]]},'
    '{"Ref":"AWS::NoValue"}]}]'
)
"""IAM4 finding of the conditional ECR Public policy aws-eks-v2 gives its kubectl handler."""
