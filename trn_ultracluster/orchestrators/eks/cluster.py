"""The EKS orchestrator construct: an EKS cluster ready for distributed training on the
Trainium nodes of an EKS managed node group (the cluster itself: :mod:`.control_plane`;
versions and their sources: :mod:`.versions`)."""

from __future__ import annotations

from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_eks_v2 as eks
from constructs import Construct

from trn_ultracluster.config import ClusterConfig
from trn_ultracluster.contracts.outputs import OutputKey
from trn_ultracluster.orchestrators.base import Foundation, NodeShape
from trn_ultracluster.orchestrators.eks import manifests as k8s
from trn_ultracluster.orchestrators.eks.control_plane import EksCluster, EksProps
from trn_ultracluster.orchestrators.eks.versions import EFA_PLUGIN_CHART, NEURON_CHART

__all__ = ["EksOrchestrator", "EksProps"]

JOB_BACKEND = "eks"
"""The job CLI backend of this orchestrator: TrainJobs through the Kubernetes API."""


class EksOrchestrator(EksCluster):
    """The shared EKS cluster (:class:`~.control_plane.EksCluster`) plus its Trainium nodes.

    - ``trainium_nodegroup``: the Efa launch template (instance type, one EFA interface
      per network card, placement group, capacity options), AMI ``AL2023_X86_64_NEURON``,
      only the compute subnet, ``nodes`` min/desired/max, taint
      ``aws.amazon.com/neuron=true:NoSchedule``, the EFA label on EFA instance types
      (the kubelet sets ``node.kubernetes.io/instance-type`` itself).
    - Helm charts: Neuron (device plugin + node problem detector), EFA device plugin (only
      on nodes labelled ``vpc.amazonaws.com/efa.present=true``).
    - The Neuron ``ClusterTrainingRuntime`` selects the EC2 instance type.
    """

    job_backend = JOB_BACKEND

    @classmethod
    def from_config(cls, scope: Construct, construct_id: str, config: ClusterConfig,
                    foundation: Foundation) -> EksOrchestrator:
        """The orchestrator of ``config`` (what :func:`trn_ultracluster.orchestrators.build`
        calls)."""
        assert config.kubernetes_version is not None  # eks has a default version
        return cls(scope, construct_id, EksProps(
            foundation=foundation,
            shape=NodeShape.of(config),
            settings=config.eks,
            fsx_capacity_gib=config.fsx.storage_capacity_gib,
            kubernetes_version=config.kubernetes_version))

    def compute_nodegroups(self) -> list[eks.Nodegroup]:
        shape, base = self.props.shape, self.props.foundation
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
            labels=k8s.trainium_node_labels(shape.instance) or None,
        )
        return [self.trainium_nodegroup]

    def device_plugin_charts(self) -> None:
        self.neuron_chart = self.chart("NeuronChart", NEURON_CHART, {
            "devicePlugin": {"enabled": True},
            "scheduler": {"enabled": False},
            "npd": {"enabled": True},
        })
        self.efa_chart = self.chart("EfaDevicePluginChart", EFA_PLUGIN_CHART,
                                    k8s.efa_plugin_values())

    def training_runtime_manifest(self) -> k8s.Manifest:
        return k8s.neuron_training_runtime(self.props.shape.instance,
                                           image=self.props.foundation.training_image.image_uri)

    def outputs(self) -> dict[OutputKey, str]:
        """EKS outputs: cluster, kubeconfig command, namespace, PVC, runtime, node group."""
        return {**self.cluster_outputs(),
                OutputKey.EKS_TRAINIUM_NODEGROUP: self.trainium_nodegroup.nodegroup_name}
