"""The EKS orchestrator construct: an EKS cluster ready for distributed training on the
Trainium nodes of EKS managed node groups (the cluster itself: :mod:`.control_plane`;
versions and their sources: :mod:`.versions`)."""

from __future__ import annotations

from aws_cdk import Stack
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_eks_v2 as eks
from constructs import Construct

from trn_ultracluster import network_plan
from trn_ultracluster.config import ClusterConfig
from trn_ultracluster.contracts.outputs import OutputKey
from trn_ultracluster.node_metrics import grant_put_metrics
from trn_ultracluster.orchestrators.base import Foundation, NodeShape
from trn_ultracluster.orchestrators.eks import manifests as k8s
from trn_ultracluster.orchestrators.eks.control_plane import EksCluster, EksProps
from trn_ultracluster.orchestrators.eks.lustre_efa import add_lustre_efa_user_data
from trn_ultracluster.orchestrators.eks.node_updates import (
    follow_control_plane,
    node_update,
    set_node_update,
)
from trn_ultracluster.orchestrators.eks.versions import EFA_PLUGIN_CHART, NEURON_CHART

__all__ = ["EksOrchestrator", "EksProps"]

JOB_BACKEND = "eks"
"""The job CLI backend of this orchestrator: TrainJobs through the Kubernetes API."""


class EksOrchestrator(EksCluster):
    """The shared EKS cluster (:class:`~.control_plane.EksCluster`) plus its Trainium nodes.

    - ``trainium_nodegroups``: one managed node group per group of the address plan
      (``foundation.address_plan.groups``: at most ``quotas.eks_nodes_per_nodegroup`` nodes,
      450 by default, each in one compute subnet), in fill order. Each has the Efa launch
      template (instance type, one EFA interface per network card, placement group, capacity
      options), AMI ``AL2023_X86_64_NEURON``, its one compute subnet, max size the group's
      nodes and ``nodes.min``/``nodes.desired`` spread over the groups in order
      (:func:`~trn_ultracluster.network_plan.spread`), taint
      ``aws.amazon.com/neuron=true:NoSchedule``, the EFA label on EFA instance types (the
      kubelet sets ``node.kubernetes.io/instance-type`` itself), and waits for the compute
      subnets' routes; it runs the control plane's Kubernetes version
      (:func:`.node_updates.follow_control_plane`) and rolls without surge instances on
      reserved capacity (:func:`.node_updates.node_update`). With ``fsx.efa`` on, the launch template gets the user data of
      :mod:`.lustre_efa` (Lustre client, LNet over EFA before kubelet starts, the check of
      the first Lustre mount); with it off the template has no user data, as before.
    - Helm charts: Neuron (device plugin + node problem detector), EFA device plugin (only
      on nodes labelled ``vpc.amazonaws.com/efa.present=true``).
    - The Neuron ``ClusterTrainingRuntime`` selects the EC2 instance type.
    - With ``fsx.efa`` on, the node role may publish metrics in ``TrnUltraCluster/Neuron``
      (:func:`~trn_ultracluster.node_metrics.grant_put_metrics`: Lustre over EFA).
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
        """One Trainium node group per group of the address plan (see the class docstring).

        The construct ids are ``TrainiumNodes``, ``TrainiumNodes2``, ``TrainiumNodes3``...
        by fill order: the first keeps the id of the single node group of earlier versions,
        so a deployed stack's node group is not replaced, and raising ``nodes.max`` only
        appends groups (the plan keeps the groups of a smaller cluster).
        """
        shape, base = self.props.shape, self.props.foundation
        # With fsx.efa on, the Trainium nodes' scripts publish node_fsx_lustre_over_efa
        # (node_metrics); with it off they publish nothing, and the role may not.
        waits_for = [base.compute_routes]
        if base.fsx_efa_mode != "off":
            waits_for.append(grant_put_metrics(self, self.node_role))
        capacity_block = shape.capacity.type == "capacity-block"
        groups = base.address_plan.groups
        sizes = [g.nodes for g in groups]
        # A Capacity Block cannot launch instances before it starts, so its node groups are
        # created empty and scaled when the block is active (`trn-ultracluster scale`): EKS
        # user guide, "Create a managed node group with Capacity Blocks for ML" (set
        # desiredSize 0 at create, then scale up by scheduled action,
        # update-nodegroup-config or Cluster Autoscaler).
        mins = [0] * len(groups) if capacity_block else network_plan.spread(shape.nodes.min, sizes)
        desired = ([0] * len(groups) if capacity_block
                   else network_plan.spread(shape.nodes.desired, sizes))
        if base.fsx_efa_mode != "off":
            if base.launch_template is None:
                raise ValueError("fsx.efa is on, and the EKS node groups' launch template is not "
                                 "given (Foundation.launch_template) to carry its user data")
            add_lustre_efa_user_data(base.launch_template, base.fsx_efa_mode,
                                     base.fsx_efa_interfaces,
                                     cluster_name=self.cluster.cluster_name,
                                     region=Stack.of(self).region)
        self.trainium_nodegroups: list[eks.Nodegroup] = []
        for i, group in enumerate(groups):
            nodegroup = self.cluster.add_nodegroup_capacity(
                "TrainiumNodes" if i == 0 else f"TrainiumNodes{i + 1}",
                ami_type=eks.NodegroupAmiType.AL2023_X86_64_NEURON,
                launch_template_spec=eks.LaunchTemplateSpec(
                    id=base.launch_template_id, version=base.launch_template_version),
                capacity_type=(eks.CapacityType.CAPACITY_BLOCK if capacity_block
                               else eks.CapacityType.ON_DEMAND),
                min_size=mins[i],
                desired_size=desired[i],
                max_size=group.nodes,
                subnets=ec2.SubnetSelection(subnets=[base.compute_subnets[group.subnet]]),
                node_role=self.node_role,
                taints=[eks.TaintSpec(effect=eks.TaintEffect.NO_SCHEDULE,
                                      key=k8s.NEURON_TAINT.key, value=k8s.NEURON_TAINT.value)],
                labels=k8s.trainium_node_labels(shape.instance) or None,
            )
            nodegroup.node.add_dependency(*waits_for)
            follow_control_plane(nodegroup, self.props.kubernetes_version)
            set_node_update(nodegroup, node_update(shape.capacity.type, group.nodes,
                                                   self.props.settings.node_update_config))
            self.trainium_nodegroups.append(nodegroup)
        return list(self.trainium_nodegroups)

    def device_plugin_charts(self) -> None:
        self.neuron_chart = self.chart("NeuronChart", NEURON_CHART, {
            "devicePlugin": {"enabled": True},
            "scheduler": {"enabled": False},
            "npd": {"enabled": True},
        })
        self.efa_chart = self.chart("EfaDevicePluginChart", EFA_PLUGIN_CHART,
                                    k8s.efa_plugin_values(self.props.shape.instance.name))

    def training_runtime_manifest(self) -> k8s.Manifest:
        image = self.props.foundation.training_image
        return k8s.neuron_training_runtime(self.props.shape.instance, image=image.image_uri,
                                           stack=image.props.neuron_stack,
                                           fsx_claim=self.fsx_claim_name)

    def outputs(self) -> dict[OutputKey, str]:
        """EKS outputs: cluster, kubeconfig command, namespace, PVC, runtime, and the
        Trainium node groups' names, comma separated in fill order (one name, as before,
        for a cluster of one group)."""
        return {**self.cluster_outputs(),
                OutputKey.EKS_TRAINIUM_NODEGROUP: ",".join(
                    ng.nodegroup_name for ng in self.trainium_nodegroups)}
