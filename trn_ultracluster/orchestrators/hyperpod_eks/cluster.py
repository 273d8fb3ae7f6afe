"""HyperPod on EKS orchestrator: SageMaker HyperPod's Trainium nodes as the Kubernetes nodes of
the stack's EKS cluster.

What it creates, on top of the EKS cluster the ``eks`` orchestrator builds
(:class:`~trn_ultracluster.orchestrators.eks.control_plane.EksCluster`: control plane,
system node group, add-ons, FSx CSI, Kubeflow Trainer, FSx PV/PVC), instead of its EKS
managed Trainium node group:

- the HyperPod dependencies HyperPod requires before the cluster is created, as the Helm
  release ``hyperpod-dependencies`` of the vendored part of HyperPod's chart
  (``charts/``: health-monitoring agent, deep-health-check and job-auto-restart RBAC,
  HyperPod patching RBAC, Neuron device plugin for ``ml.`` types) and the EFA device plugin
  chart with HyperPod's toleration;
- ``AWS::SageMaker::Cluster`` with ``Orchestrator.Eks.ClusterArn`` = the EKS cluster, one
  worker instance group per compute subnet each worker group fills
  (:func:`~trn_ultracluster.orchestrators.hyperpod.instance_groups.worker_parts`; with
  ``pools``, one worker group per pool, of its type; :func:`~trn_ultracluster.orchestrators.
  hyperpod.instance_groups.compute_group`: ``ml.`` type, count, threads per core, EBS volume,
  deep health checks and training plan; ``KubernetesConfig``: on Trainium groups the Neuron
  taint and the EFA label the device plugins and the training runtime expect, and with
  ``pools`` the pool label :data:`~trn_ultracluster.contracts.pools.POOL_LABEL` on every
  group), ``NodeRecovery``, ``VpcConfig`` = compute subnet 0 + EFA security group
  (``OverrideVpcConfig`` for a group in another compute subnet); the controllers run on the
  EKS system node group;
- the lifecycle bucket (``sagemaker-`` prefix) with ``scripts/on_create.sh``, the shared node
  scripts (``lcs.py``, ``lustre_efa.sh``: FSx for Lustre over EFA) and the stack's
  ``trn_ultracluster.json`` (:func:`lifecycle_node_file`), and the execution role (shared
  part + :mod:`.execution_role`; with ``fsx.efa`` on it may publish metrics in
  ``TrnUltraCluster/Neuron``: :func:`~trn_ultracluster.node_metrics.grant_put_metrics`);
- a Neuron ``ClusterTrainingRuntime`` that selects HyperPod nodes by their ``ml.`` instance
  type and ``node-health-status=Schedulable``, and recreates a failed TrainJob's JobSet up to
  ``hyperpod.job_max_restarts`` times (docs/hyperpod-eks.md, "Auto-resume");
- with ``teams`` only, SageMaker HyperPod task governance (:mod:`.task_governance`: its
  add-on, the cluster policy, a compute quota per team, the FSx claim in each team's
  namespace), after the HyperPod cluster and deleted before it.

Create and delete order: the SageMaker cluster refers to the EKS cluster's ARN and depends
on every add-on, the dependencies and EFA charts, the execution role's policy, the lifecycle
upload and the compute subnets' routes, so CloudFormation creates it after all of them and deletes it (its
nodes and their interfaces, and the access entries HyperPod made) before any of them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from aws_cdk import Stack
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3_assets as s3_assets
from aws_cdk import aws_sagemaker as sagemaker
from constructs import Construct

from trn_ultracluster import network_plan
from trn_ultracluster.config import ClusterConfig, HyperPodConfig
from trn_ultracluster.config.fsx_efa import EfaMode
from trn_ultracluster.config.model import HyperPodWorkerGroupConfig, Pool
from trn_ultracluster.config.model.teams import SchedulingConfig, Team
from trn_ultracluster.contracts.hyperpod import LIFECYCLE_FILE
from trn_ultracluster.contracts.pools import POOL_LABEL
from trn_ultracluster.contracts.outputs import OutputKey
from trn_ultracluster.nag import acknowledge, bootstrap_assets_finding
from trn_ultracluster.node_metrics import grant_put_metrics
from trn_ultracluster.orchestrators.base import Foundation, NodeShape
from trn_ultracluster.orchestrators.eks import manifests as k8s
from trn_ultracluster.orchestrators.eks.control_plane import EksCluster, EksProps
from trn_ultracluster.orchestrators.eks.versions import EFA_PLUGIN_CHART
from trn_ultracluster.orchestrators.hyperpod.execution_role import execution_role
from trn_ultracluster.orchestrators.hyperpod.instance_groups import (
    WorkerPart,
    compute_group,
    group_networks,
    hyperpod_cluster,
    ml_name,
    pool_instance_counts,
    pool_instance_groups,
    worker_parts,
)
from trn_ultracluster.orchestrators.hyperpod.lifecycle import (
    lifecycle_bucket,
    lifecycle_config,
    upload_lifecycle_files,
)
from trn_ultracluster.orchestrators.hyperpod_eks import task_governance as governance
from trn_ultracluster.orchestrators.hyperpod_eks.execution_role import add_eks_permissions
from trn_ultracluster.orchestrators.nodes import (
    FSX_SCRIPT,
    LUSTRE_EFA_HELPER,
    LUSTRE_EFA_SCRIPT,
    NODE_SCRIPTS,
    efa_node_settings,
)
from trn_ultracluster.orchestrators.hyperpod_eks.versions import (
    DEPENDENCIES_CHART,
    DEPENDENCIES_NAMESPACE,
    DEPENDENCIES_RELEASE,
    HEALTH_STATUS_LABEL,
    LIFECYCLE_SCRIPTS,
    ON_CREATE,
    ON_CREATE_NO_EFA,
    SCHEDULABLE,
    UNSCHEDULABLE_TAINT,
)

__all__ = ["HyperPodEksOrchestrator", "HyperPodEksProps", "lifecycle_node_file",
           "node_selector"]

JOB_BACKEND = "hyperpod-eks"
"""The job CLI backend of this orchestrator: TrainJobs on the HyperPod nodes."""


@dataclass(frozen=True)
class HyperPodEksProps(EksProps):
    """What HyperPod on EKS builds on: the EKS cluster's props plus the HyperPod ones.

    Attributes:
        hyperpod: the ``hyperpod`` configuration section (cluster name, deep health checks,
            node recovery, EBS volume, training plan, TrainJob restarts).
        worker_parts: each worker group's parts in the address plan, in order
            (``ClusterConfig.hyperpod_worker_parts``).
        worker_groups: each worker group with its pool, in order
            (``ClusterConfig.hyperpod_worker_groups``).
        pool_labels: whether every instance group labels its nodes with their pool
            (:data:`~trn_ultracluster.contracts.pools.POOL_LABEL`): a configuration with
            ``pools``. Without, the groups keep the ``KubernetesConfig`` they had before pools
            existed.
        teams, scheduling, tags: ``ClusterConfig.team_list``, ``scheduling`` and ``tags``;
            no teams: no task governance.
    """

    hyperpod: HyperPodConfig = HyperPodConfig()
    worker_parts: dict[str, tuple[network_plan.Group, ...]] | None = None
    worker_groups: tuple[tuple[HyperPodWorkerGroupConfig, Pool], ...] = ()
    pool_labels: bool = False
    teams: tuple[Team, ...] = ()
    scheduling: SchedulingConfig = SchedulingConfig()
    tags: Mapping[str, str] = field(default_factory=dict)


def node_selector(shape: NodeShape) -> dict[str, str]:
    """Node labels a training pod requires on HyperPod: the ``ml.`` instance type and
    HyperPod's ``node-health-status=Schedulable`` (nodes under deep health checks or waiting
    for replacement carry another value), e.g. ``{"node.kubernetes.io/instance-type":
    "ml.trn1.32xlarge", "sagemaker.amazonaws.com/node-health-status": "Schedulable"}``."""
    return {k8s.INSTANCE_TYPE_LABEL: ml_name(shape.instance), HEALTH_STATUS_LABEL: SCHEDULABLE}


def lifecycle_node_file(efa_mode: EfaMode, efa_interfaces: int, metrics_cluster: str,
                        region: str) -> dict[str, Any]:
    """``trn_ultracluster.json`` of the Trainium instance group's lifecycle script
    (``on_create.sh`` reads it with ``lcs.py``): the ``fsx.efa`` section of every node file
    (:func:`~trn_ultracluster.orchestrators.nodes.efa_node_settings`) and what
    ``lustre_efa.sh report`` needs (values may be tokens)::

        {"fsx": {"efa": {...}}, "node": {"metrics_cluster": str, "region": str}}

    Args:
        efa_mode, efa_interfaces: ``Foundation.fsx_efa_mode`` and ``fsx_efa_interfaces``.
        metrics_cluster: the ``ClusterName`` dimension of ``node_fsx_lustre_over_efa``: the
            EKS cluster's name, as Container Insights gives the cluster's other node metrics.
        region: the stack's Region.
    """
    return {"fsx": {"efa": efa_node_settings(efa_mode, efa_interfaces)},
            "node": {"metrics_cluster": metrics_cluster, "region": region}}


class HyperPodEksOrchestrator(EksCluster):
    """The shared EKS cluster plus a SageMaker HyperPod cluster of every pool's nodes in it.

    Attributes:
        dependencies_chart: the ``hyperpod-dependencies`` Helm release.
        efa_chart: the EFA device plugin release.
        bucket, deployment: the lifecycle bucket and the upload of ``scripts/``, the node
            scripts and ``trn_ultracluster.json``.
        networks: the instance groups' networks (``VpcConfig``, ``OverrideVpcConfig``),
            which the execution role is scoped to.
        role: the instance groups' execution role.
        hyperpod_cluster: the ``AWS::SageMaker::Cluster``.
        worker_groups: the worker instance groups (every part of every worker group, of
            every pool).
        task_governance: with teams, :class:`.task_governance.TaskGovernance`; else ``None``.
    """

    job_backend = JOB_BACKEND
    props: HyperPodEksProps

    @classmethod
    def from_config(cls, scope: Construct, construct_id: str, config: ClusterConfig,
                    foundation: Foundation) -> HyperPodEksOrchestrator:
        """The orchestrator of ``config`` (what :func:`trn_ultracluster.orchestrators.build`
        calls)."""
        assert config.kubernetes_version is not None  # hyperpod-eks has a default version
        return cls(scope, construct_id, HyperPodEksProps(
            foundation=foundation,
            shape=NodeShape.of(config),
            settings=config.eks,
            fsx_capacity_gib=config.fsx.storage_capacity_gib,
            kubernetes_version=config.kubernetes_version,
            hyperpod=config.hyperpod_settings,
            worker_parts=config.hyperpod_worker_parts,
            worker_groups=config.hyperpod_worker_groups,
            pool_labels=bool(config.pools),
            teams=config.team_list,
            scheduling=config.scheduling,
            tags=config.tags))

    def __init__(self, scope: Construct, construct_id: str, props: HyperPodEksProps) -> None:
        super().__init__(scope, construct_id, props)
        base, settings = props.foundation, props.hyperpod
        self.worker_groups = worker_parts(props.worker_parts or {},
                                          {g.name: p for g, p in props.worker_groups})

        self.bucket = lifecycle_bucket(self, base)
        self.deployment = upload_lifecycle_files(
            self, self.bucket, [LIFECYCLE_SCRIPTS, NODE_SCRIPTS],
            {LIFECYCLE_FILE: lifecycle_node_file(base.fsx_efa_mode, base.fsx_efa_interfaces,
                                                 self.cluster.cluster_name,
                                                 Stack.of(self).region)},
            # fsx.sh finds and mounts the file system on Slurm and standalone nodes; here the
            # FSx CSI driver mounts it, so the role needs none of fsx.sh's Describe calls; and
            # lustre_efa.sh and lustre_efa.py only with fsx.efa on; the CPU groups' entry point
            # only with them.
            exclude=[FSX_SCRIPT, *([LUSTRE_EFA_SCRIPT, LUSTRE_EFA_HELPER]
                                   if base.fsx_efa_mode == "off" else []),
                     *([] if any(not p.instance.accelerated for p in self.worker_groups)
                       else [ON_CREATE_NO_EFA])])
        self.networks = group_networks(self.worker_groups, base)
        self.role = execution_role(self, base, self.bucket, self.networks)
        add_eks_permissions(self.role, self.cluster, base)
        # With fsx.efa on, the lifecycle scripts publish node_fsx_lustre_over_efa
        # (node_metrics); with it off they publish nothing, and the role may not.
        metrics_policy = (grant_put_metrics(self, self.role) if base.fsx_efa_mode != "off"
                          else None)
        self.hyperpod_cluster = hyperpod_cluster(
            self, "HyperPodCluster", settings, base, self.networks, self._instance_groups(),
            sagemaker.CfnCluster.OrchestratorProperty(
                eks=sagemaker.CfnCluster.ClusterOrchestratorEksConfigProperty(
                    cluster_arn=self.cluster.cluster_arn)))
        # HyperPod needs the EKS side ready before it creates its nodes ("Before creating a
        # HyperPod cluster, you need a running Amazon EKS cluster ... installed using Helm",
        # SageMaker developer guide, HyperPod EKS prerequisites): the add-ons (VPC CNI, Pod
        # Identity, FSx CSI, ...), the dependencies and EFA charts; and its nodes run the
        # lifecycle script with the role's permissions and reach AWS through the NAT route
        # (hyperpod_cluster waits for every compute subnet's). The same edges make
        # CloudFormation delete the cluster before all of them.
        for needed in (*self.addons.values(), self.dependencies_chart, self.efa_chart,
                       self.deployment, self.role, metrics_policy):
            if needed is not None:
                self.hyperpod_cluster.node.add_dependency(needed)
        self._let_vpc_cni_attach_interfaces()
        self.task_governance = governance.TaskGovernance(
            self, "TaskGovernance", governance.TaskGovernanceProps(
                props.teams, props.scheduling, props.tags,
                props.settings.addon_versions.amazon_sagemaker_hyperpod_taskgovernance),
            self) if props.teams else None

    def _let_vpc_cni_attach_interfaces(self) -> None:
        """On HyperPod nodes the VPC CNI does not call ``ec2:AttachNetworkInterface`` (not
        authorized there) but asks SageMaker with ``sagemaker:AttachClusterNodeNetworkInterface``
        on the HyperPod cluster, and reads its account with ``sts:GetCallerIdentity`` to build
        the cluster's ARN (aws/amazon-vpc-cni-k8s PR #3874, merged 2026-09-14,
        ``docs/iam-policy.md`` "SageMaker HyperPod nodes"; nodes found by their
        ``providerID`` ``aws:///<az>/sagemaker/cluster/hyperpod-<cluster id>-<instance id>``).
        The PR's ``docs/iam-policy.md`` says "the node role must be granted" it: the execution
        role, which aws-node uses when it has no role of its own; here aws-node takes its
        credentials from the VPC CNI's Pod Identity role. Both get the action, on this cluster
        only (the execution role already holds the CNI's EC2 actions, ``execution_role.py``). ``sts:GetCallerIdentity`` needs no permission (STS
        API reference, GetCallerIdentity). Which ``vpc-cni`` add-on build first ships the PR is
        not verified; older builds never call the action, so the grant is harmless there.
        The Service Reference lists the ``cluster`` resource type for the action (cfn-lint
        1.58's copy, ``data/AdditionalSpecs/Policies.json``, from
        https://servicereference.us-east-1.amazonaws.com; ``tests/test_service_roles.py``
        evaluates the call on this cluster's ARN against both roles).

        A policy of its own, attached after the cluster exists (it names the cluster's ARN):
        until then aws-node uses the primary interface's addresses and retries the attach."""
        iam.Policy(
            self, "VpcCniHyperPodAttach", roles=[self.cni_role, self.role],
            statements=[iam.PolicyStatement(
                actions=["sagemaker:AttachClusterNodeNetworkInterface"],
                resources=[self.hyperpod_cluster.attr_cluster_arn])])

    # --- EksCluster hooks --------------------------------------------------------------

    def device_plugin_charts(self) -> None:
        asset = s3_assets.Asset(self, "DependenciesChartAsset", path=str(DEPENDENCIES_CHART))
        self.dependencies_chart = self.chart(
            "HyperPodDependencies", None,
            {"health-monitoring-agent": {"region": Stack.of(self).region}},
            chart_asset=asset, release=DEPENDENCIES_RELEASE, namespace=DEPENDENCIES_NAMESPACE)
        handler = self.cluster.kubectl_provider.node.find_child("Handler")  # type: ignore[union-attr]
        for finding in (bootstrap_assets_finding(Stack.of(self)),
                        "AwsSolutions-IAM5[Action::s3:GetBucket*]",
                        "AwsSolutions-IAM5[Action::s3:GetObject*]",
                        "AwsSolutions-IAM5[Action::s3:List*]"):
            acknowledge(handler, finding,
                        "aws-eks-v2's kubectl handler reads the HyperPod dependencies chart, an "
                        "S3 asset of this stack, from the CDK bootstrap asset bucket "
                        "(HelmChart chartAsset: grantRead on that bucket, read only).")
        self.efa_chart = self.chart("EfaDevicePluginChart", EFA_PLUGIN_CHART,
                                    self._efa_plugin_values())

    def _efa_plugin_values(self) -> dict[str, Any]:
        """The EFA device plugin's values (:func:`~trn_ultracluster.orchestrators.eks.
        manifests.efa_plugin_values`, with HyperPod's health-check toleration) for the
        ``ml.`` types of every EFA pool: the chart's DaemonSet runs only on the instance-type
        label values its ``supportedInstanceLabels.values`` lists, and each EFA pool's nodes
        carry their own (a trn2 pool beside a trn1 one). One type, the main pool's, without
        other EFA pools, as before pools existed."""
        types = list(dict.fromkeys(
            [ml_name(self.props.shape.instance),
             *(ml_name(p.instance) for _, p in self.props.worker_groups
               if p.instance.supports_efa)]))
        values = k8s.efa_plugin_values(types[0], UNSCHEDULABLE_TAINT.toleration())
        values["supportedInstanceLabels"]["values"] = types
        return values

    def node_tolerations(self) -> tuple[dict[str, str], ...]:
        """The Neuron taint and HyperPod's deep-health-check taint (the agents run while a
        node is checked)."""
        return (k8s.NEURON_TAINT.toleration(), UNSCHEDULABLE_TAINT.toleration())

    def training_runtime_manifest(self) -> k8s.Manifest:
        image = self.props.foundation.training_image
        return k8s.neuron_training_runtime(
            self.props.shape.instance, image=image.image_uri, stack=image.props.neuron_stack,
            node_selector=node_selector(self.props.shape),
            max_restarts=self.props.hyperpod.job_max_restarts,
            fsx_claim=self.fsx_claim_name)

    # --- parts -------------------------------------------------------------------------

    def _instance_groups(self) -> list[sagemaker.CfnCluster.ClusterInstanceGroupProperty]:
        """One instance group per part of a worker group, of its pool's type. A group of a
        CPU pool (no EFA device) runs :data:`~trn_ultracluster.orchestrators.
        hyperpod_eks.versions.ON_CREATE_NO_EFA` (the lifecycle script with Lustre over TCP,
        whatever ``fsx.efa`` says); the others :data:`~trn_ultracluster.orchestrators.
        hyperpod_eks.versions.ON_CREATE`. Each group's ``LifeCycleConfig`` is its own
        (botocore 1.44.8 SageMaker model, ``ClusterInstanceGroupSpecification.LifeCycleConfig``,
        required per group)."""
        settings = self.props.hyperpod
        return [compute_group(
                    part, settings,
                    vpc_config=self.networks.override_vpc_config(part.name),
                    execution_role=self.role.role_arn,
                    life_cycle_config=lifecycle_config(
                        self.bucket, on_create=ON_CREATE if part.instance.accelerated
                        else ON_CREATE_NO_EFA),
                    kubernetes_config=self._kubernetes_config(part))
                for part in self.worker_groups]

    def _kubernetes_config(self, part: WorkerPart,
                           ) -> sagemaker.CfnCluster.ClusterKubernetesConfigProperty | None:
        """A group's node labels and taints: on a Trainium pool the Neuron taint (only pods
        that tolerate it run there) and, on EFA types, the EFA label
        (:func:`~trn_ultracluster.orchestrators.eks.manifests.trainium_node_labels`); a CPU
        pool's nodes take any pod, with neither; with :attr:`HyperPodEksProps.pool_labels`,
        every group's nodes also carry :data:`~trn_ultracluster.contracts.pools.POOL_LABEL`
        = the pool's name, which a job's node selector names."""
        labels = dict(k8s.trainium_node_labels(part.instance)) if part.instance.accelerated \
            else {}
        if self.props.pool_labels:
            labels[POOL_LABEL] = part.pool.name
        taints = ([sagemaker.CfnCluster.ClusterKubernetesTaintProperty(
            key=k8s.NEURON_TAINT.key, value=k8s.NEURON_TAINT.value,
            effect=k8s.NEURON_TAINT.effect)] if part.instance.accelerated else None)
        if not labels and taints is None:
            return None
        return sagemaker.CfnCluster.ClusterKubernetesConfigProperty(labels=labels or None,
                                                                     taints=taints)

    def pool_details(self) -> dict[str, dict[str, object]]:
        """Pool name -> ``{"instance_groups": its instance groups, comma-joined, "instances":
        their instances}`` (merged
        into the stack output ``Pools``)."""
        counts = pool_instance_counts(self.worker_groups)
        return {pool: {"instance_groups": groups, "instances": counts[pool]}
                for pool, groups in pool_instance_groups(self.worker_groups).items()}

    def team_details(self) -> dict[str, dict[str, str]]:
        """Team -> its namespace, LocalQueue and ClusterQueue under task governance
        (:func:`.task_governance.team_details`)."""
        return governance.team_details(self.props.teams)

    def priority_class_names(self) -> dict[str, str]:
        """Class -> its WorkloadPriorityClass, ``<class>-priority``."""
        return governance.priority_class_names(self.props.scheduling.priority_classes)

    def outputs(self) -> dict[OutputKey, str]:
        """The EKS cluster's outputs and the HyperPod cluster's (name, ARN, instance groups,
        lifecycle bucket)."""
        return {
            **self.cluster_outputs(),
            OutputKey.HYPERPOD_CLUSTER_NAME: self.props.hyperpod.cluster_name,
            OutputKey.HYPERPOD_CLUSTER_ARN: self.hyperpod_cluster.attr_cluster_arn,
            OutputKey.HYPERPOD_WORKER_GROUPS: ",".join(p.name for p in self.worker_groups),
            OutputKey.HYPERPOD_LIFECYCLE_BUCKET: self.bucket.bucket_name,
        }

    def compute_nodegroups(self) -> list[eks.Nodegroup]:
        """None: HyperPod runs the Trainium nodes."""
        return []
