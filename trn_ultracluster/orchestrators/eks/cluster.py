"""The EKS orchestrator construct: an EKS cluster ready for distributed training on the
nodes of EKS managed node groups, one set of node groups per node pool (the cluster itself:
:mod:`.control_plane`; versions and their sources: :mod:`.versions`; how a job reaches its
pool: :mod:`.pools`)."""

from __future__ import annotations

from aws_cdk import Fn, Stack
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_eks_v2 as eks
from constructs import Construct

from trn_ultracluster import network_plan
from trn_ultracluster.config import ClusterConfig
from trn_ultracluster.config.facts import FSX_EFA_CLIENT_TYPES
from trn_ultracluster.config.fsx_efa import client_interfaces
from trn_ultracluster.config.model import Pool
from trn_ultracluster.contracts.pools import POOL_LABEL
from trn_ultracluster.contracts.outputs import OutputKey
from trn_ultracluster.node_metrics import grant_put_metrics
from trn_ultracluster.orchestrators.base import Foundation, NodeShape, PoolFoundation
from trn_ultracluster.orchestrators.eks import manifests as k8s
from trn_ultracluster.orchestrators.eks.control_plane import EksCluster, EksProps
from trn_ultracluster.orchestrators.eks.lustre_efa import (
    LustreEfaHelper,
    add_lustre_efa_user_data,
)
from trn_ultracluster.orchestrators.eks.node_updates import (
    follow_control_plane,
    node_update,
    set_node_update,
)
from trn_ultracluster.orchestrators.eks.kueue import FlavorPool
from trn_ultracluster.orchestrators.eks.pools import pool_node_labels
from trn_ultracluster.orchestrators.eks.teams import (
    KueueObjects,
    add_kueue,
    priority_class_names,
    team_details,
)
from trn_ultracluster.orchestrators.eks.versions import EFA_PLUGIN_CHART, NEURON_CHART

__all__ = ["EksOrchestrator", "EksProps", "labels_pool"]

JOB_BACKEND = "eks"
"""The job CLI backend of this orchestrator: TrainJobs through the Kubernetes API."""


def labels_pool(pool: Pool) -> bool:
    """Whether ``pool``'s nodes carry ``trn-ultracluster/pool``: every pool of a configuration
    with ``pools``; not the one pool of a configuration without (``Pool.field`` ``""``: its
    keys are top-level), whose node groups and runtime stay as they were deployed."""
    return pool.index > 0 or bool(pool.field)


class EksOrchestrator(EksCluster):
    """The shared EKS cluster (:class:`~.control_plane.EksCluster`) plus the nodes of every
    node pool (``foundation.pools``, the main pool first).

    - ``pool_nodegroups``: per pool, one managed node group per group of the pool's part of
      the address plan (``PoolFoundation.plan.groups``: at most
      ``quotas.eks_nodes_per_nodegroup`` nodes, 450 by default, each in one compute subnet),
      in fill order (``trainium_nodegroups``: the main pool's). Each has the pool's launch
      template (``PoolFoundation.launch``: instance type, one EFA interface per network card
      on an EFA type or one ordinary interface on a CPU type, placement group, capacity
      options), its one compute subnet, max size the group's nodes and the pool's
      ``nodes.min``/``nodes.desired`` spread over its groups in order
      (:func:`~trn_ultracluster.network_plan.spread`; 0 and 0 on a Capacity Block), and waits
      for the compute subnets' routes; it runs the control plane's Kubernetes version
      (:func:`.node_updates.follow_control_plane`) and rolls without surge instances on
      reserved capacity (:func:`.node_updates.node_update`, by the pool's capacity).
      A Trainium pool's groups take the AMI type ``AL2023_X86_64_NEURON`` and the taint
      ``aws.amazon.com/neuron=true:NoSchedule``; a CPU pool's take
      ``AL2023_X86_64_STANDARD`` and no taint, so the DaemonSets every node runs (VPC CNI,
      kube-proxy, Pod Identity agent, the FSx CSI node plugin that mounts ``/fsx``, Container
      Insights) run there without tolerations. Labels: the EFA label on EFA instance types
      (the kubelet sets ``node.kubernetes.io/instance-type`` itself) and
      ``trn-ultracluster/pool`` = the pool's name (:func:`.pools.pool_node_labels`; not on
      the main pool of a configuration without ``pools``, whose template stays as it was).
      With ``fsx.efa`` on, the launch template of every pool whose type can be a client of
      an EFA-enabled file system gets the user data of :mod:`.lustre_efa` (Lustre client,
      LNet over EFA before kubelet starts, the check of the first Lustre mount); the others
      mount it over TCP, and with ``fsx.efa`` off no template has user data, as before.
    - Helm charts: Neuron (device plugin + node problem detector, on Neuron instance types
      only: the chart's node affinity), EFA device plugin (only on nodes labelled
      ``vpc.amazonaws.com/efa.present=true`` of the pools' EFA types).
    - The main pool's Neuron ``ClusterTrainingRuntime`` selects its EC2 instance type (and,
      with ``pools``, its label); every other pool has its own
      (:meth:`~.control_plane.EksCluster.pool_training_runtime_manifest`).
    - With ``fsx.efa`` on, the node role may publish metrics in ``TrnUltraCluster/Neuron``
      (:func:`~trn_ultracluster.node_metrics.grant_put_metrics`: Lustre over EFA) and read
      the S3 asset of ``lustre_efa.py``, which the user data fetches
      (:class:`~.lustre_efa.LustreEfaHelper`; ``lustre_efa_helper``); the node groups wait for
      both policies.
    - With ``teams``: Kueue and its objects (:mod:`.teams`, :mod:`.kueue`): a ResourceFlavor
      per pool, a ClusterQueue per team in one cohort, a namespace, FSx claim and LocalQueue
      per team, a WorkloadPriorityClass per priority class (``kueue``: what was made). Without
      ``teams`` nothing of it is in the template.
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
            kubernetes_version=config.kubernetes_version,
            teams=config.team_list,
            scheduling=config.scheduling))

    def __init__(self, scope: Construct, construct_id: str, props: EksProps) -> None:
        super().__init__(scope, construct_id, props)
        self.kueue: KueueObjects | None = None
        if props.teams:
            self.kueue = add_kueue(self, props.teams, props.scheduling, self.flavor_pools())

    # --- teams (Kueue: :mod:`.teams`) ----------------------------------------------------

    def flavor_pools(self) -> list[FlavorPool]:
        """Every pool as a Kueue flavor, main pool first: its nodes' :data:`POOL_LABEL`, or
        the instance type for the one pool of a configuration without ``pools``, whose nodes
        carry no pool label (:func:`labels_pool`)."""
        return [FlavorPool(p.pool.name, p.pool.instance,
                           {POOL_LABEL: p.pool.name} if labels_pool(p.pool)
                           else {k8s.INSTANCE_TYPE_LABEL: p.pool.instance_type})
                for p in self.props.foundation.pools]

    def team_details(self) -> dict[str, dict[str, str]]:
        """With ``teams``: team -> ``namespace``, ``queue``, ``cluster_queue`` (merged into the
        ``Teams`` output; :func:`.teams.team_details`); without, empty."""
        return team_details(self.props.teams)

    def priority_class_names(self) -> dict[str, str]:
        """With ``teams``: priority class -> its Kueue WorkloadPriorityClass; without, empty."""
        return priority_class_names(self.props.scheduling) if self.props.teams else {}

    def compute_nodegroups(self) -> list[eks.Nodegroup]:
        """The node groups of every pool (see the class docstring), the main pool's first.

        Construct ids: the main pool's are ``TrainiumNodes``, ``TrainiumNodes2``,
        ``TrainiumNodes3``... by fill order: the first keeps the id of the single node group
        of earlier versions, so a deployed stack's node group is not replaced, and raising
        ``nodes.max`` only appends groups (the plan keeps the groups of a smaller cluster).
        Another pool's are ``Pool<suffix>Nodes``, ``Pool<suffix>Nodes2``... with the pool's
        :attr:`~trn_ultracluster.orchestrators.base.PoolFoundation.id_suffix` (``trn2`` ->
        ``PoolTrn2Nodes``), so no pool name meets the main or the system node group's ids.

        Raises:
            ValueError: the foundation has no pools, or ``fsx.efa`` is on and the main
                pool's launch template is not given.
        """
        base = self.props.foundation
        if not base.pools:
            raise ValueError("Foundation.pools is empty: the EKS orchestrator makes the node "
                             "groups of each pool (the stack gives at least the main one)")
        # With fsx.efa on, the Trainium nodes' scripts publish node_fsx_lustre_over_efa
        # (node_metrics); with it off they publish nothing, and the role may not.
        waits_for = [base.compute_routes]
        self.lustre_efa_helper: LustreEfaHelper | None = None
        if base.fsx_efa_mode != "off":
            waits_for.append(grant_put_metrics(self, self.node_role))
            self.lustre_efa_helper = LustreEfaHelper(self, "LustreEfaHelper", role=self.node_role)
            waits_for.append(self.lustre_efa_helper.policy)
        self.pool_nodegroups: dict[str, list[eks.Nodegroup]] = {}
        for pool in base.pools:
            self._lustre_efa_user_data(pool)
            self.pool_nodegroups[pool.pool.name] = self._pool_nodegroups(pool, waits_for)
        self.trainium_nodegroups = self.pool_nodegroups[base.pools[0].pool.name]
        return [ng for groups in self.pool_nodegroups.values() for ng in groups]

    def _lustre_efa_user_data(self, pool: PoolFoundation) -> None:
        """With ``fsx.efa`` on, the :mod:`.lustre_efa` user data on ``pool``'s launch
        template: always on the main pool's (``fsx.efa`` decides by its type), on another
        pool's when its type can be a client of an EFA-enabled file system
        (:data:`~trn_ultracluster.config.facts.FSX_EFA_CLIENT_TYPES`: Trn1 and Trn1n with
        EFA, not trn2 nor a CPU type), binding
        :func:`~trn_ultracluster.config.fsx_efa.client_interfaces` of its type. A pool
        without it mounts the file system over TCP (an EFA-enabled file system also serves
        TCP clients: :mod:`trn_ultracluster.config.fsx_efa`)."""
        base, helper = self.props.foundation, self.lustre_efa_helper
        if helper is None:  # fsx.efa off
            return
        main = pool.pool.index == 0
        if main:
            if base.launch_template is None:
                raise ValueError("fsx.efa is on, and the EKS node groups' launch template is "
                                 "not given (Foundation.launch_template) to carry its user data")
            template, interfaces = base.launch_template, base.fsx_efa_interfaces
        elif pool.pool.instance_type in FSX_EFA_CLIENT_TYPES:
            template, interfaces = (pool.launch.launch_template,
                                    client_interfaces(pool.pool.instance))
        else:
            return
        add_lustre_efa_user_data(template, base.fsx_efa_mode, interfaces,
                                 cluster_name=self.cluster.cluster_name,
                                 region=Stack.of(self).region, helper=helper.source)

    def _pool_nodegroups(self, pool: PoolFoundation,
                         waits_for: list) -> list[eks.Nodegroup]:
        """One managed node group per group of ``pool``'s plan (class docstring)."""
        base, settings = self.props.foundation, self.props.settings
        spec, counts, capacity = pool.pool.instance, pool.pool.nodes, pool.pool.capacity
        capacity_block = capacity.type == "capacity-block"
        groups = pool.plan.groups
        sizes = [g.nodes for g in groups]
        # A Capacity Block cannot launch instances before it starts, so its node groups are
        # created empty and scaled when the block is active (`trn-ultracluster scale`): EKS
        # user guide, "Create a managed node group with Capacity Blocks for ML" (set
        # desiredSize 0 at create, then scale up by scheduled action,
        # update-nodegroup-config or Cluster Autoscaler).
        mins = [0] * len(groups) if capacity_block else network_plan.spread(counts.min, sizes)
        desired = ([0] * len(groups) if capacity_block
                   else network_plan.spread(counts.desired, sizes))
        # The AMI of a Trainium pool: the EKS-optimized AL2023 Neuron AMI; of a CPU pool: the
        # standard AL2023 x86_64 AMI (EKS API reference, Nodegroup amiType valid values
        # AL2023_x86_64_NEURON, AL2023_x86_64_STANDARD; EKS user guide, "Simplify node
        # lifecycle with managed node groups": "create one node group with the standard Amazon
        # EKS optimized Amazon Linux AMI for some workloads and another with the GPU variant").
        # The launch template names the instance type, not an AMI, so EKS picks the AMI.
        ami = (eks.NodegroupAmiType.AL2023_X86_64_NEURON if spec.accelerated
               else eks.NodegroupAmiType.AL2023_X86_64_STANDARD)
        taints = ([eks.TaintSpec(effect=eks.TaintEffect.NO_SCHEDULE, key=k8s.NEURON_TAINT.key,
                                 value=k8s.NEURON_TAINT.value)] if spec.accelerated else None)
        labels = pool_node_labels(spec, pool.pool.name if labels_pool(pool.pool) else None)
        nodegroups = []
        for i, group in enumerate(groups):
            number = "" if i == 0 else str(i + 1)
            nodegroup = self.cluster.add_nodegroup_capacity(
                f"TrainiumNodes{number}" if pool.pool.index == 0
                else f"Pool{pool.id_suffix}Nodes{number}",
                ami_type=ami,
                launch_template_spec=eks.LaunchTemplateSpec(
                    id=pool.launch.launch_template_id,
                    version=pool.launch.launch_template_version),
                capacity_type=(eks.CapacityType.CAPACITY_BLOCK if capacity_block
                               else eks.CapacityType.ON_DEMAND),
                min_size=mins[i],
                desired_size=desired[i],
                max_size=group.nodes,
                subnets=ec2.SubnetSelection(subnets=[base.compute_subnets[group.subnet]]),
                node_role=self.node_role,
                taints=taints,
                labels=labels or None,
            )
            nodegroup.node.add_dependency(*waits_for)
            follow_control_plane(nodegroup, self.props.kubernetes_version)
            set_node_update(nodegroup, node_update(capacity.type, group.nodes,
                                                   settings.node_update_config))
            nodegroups.append(nodegroup)
        return nodegroups

    def device_plugin_charts(self) -> None:
        self.neuron_chart = self.chart("NeuronChart", NEURON_CHART, {
            "devicePlugin": {"enabled": True},
            "scheduler": {"enabled": False},
            "npd": {"enabled": True},
        })
        # The main pool's type first (as before pools), then every other pool's EFA type.
        efa_types = [self.props.shape.instance.name] + [
            p.pool.instance_type for p in self.props.foundation.pools[1:]
            if p.pool.instance.supports_efa]
        self.efa_chart = self.chart("EfaDevicePluginChart", EFA_PLUGIN_CHART,
                                    k8s.efa_plugin_values(efa_types))

    def training_runtime_manifest(self) -> k8s.Manifest:
        """The main pool's runtime: its instance type, and with ``pools`` its label (a
        configuration without ``pools`` keeps the runtime it had)."""
        image = self.props.foundation.training_image
        main = self.props.foundation.pools[0].pool if self.props.foundation.pools else None
        selector = ({k8s.INSTANCE_TYPE_LABEL: main.instance_type, POOL_LABEL: main.name}
                    if main is not None and labels_pool(main) else None)
        return k8s.neuron_training_runtime(self.props.shape.instance, image=image.image_uri,
                                           stack=image.props.neuron_stack,
                                           node_selector=selector,
                                           fsx_claim=self.fsx_claim_name)

    def outputs(self) -> dict[OutputKey, str]:
        """EKS outputs: cluster, kubeconfig command, namespace, PVC, runtime, and the main
        pool's node groups' names, comma separated in fill order (one name, as before, for a
        cluster of one group); other pools' are in the ``Pools`` output
        (:meth:`pool_details`)."""
        return {**self.cluster_outputs(),
                OutputKey.EKS_TRAINIUM_NODEGROUP: ",".join(
                    ng.nodegroup_name for ng in self.trainium_nodegroups)}

    def pool_details(self) -> dict[str, dict[str, object]]:
        """Per pool, what the job backend needs (merged into the ``Pools`` output):
        ``node_groups`` (the pool's node group names, comma separated in fill order:
        ``scale --pool``) and ``capacity_type``, ``capacity_reservation_id`` (``""`` for
        none: ``scale --pool`` checks the pool's reservation, not the main pool's)."""
        pools = {p.pool.name: p.pool for p in self.props.foundation.pools}
        return {name: {"node_groups": Fn.join(",", [ng.nodegroup_name for ng in groups]),
                       "capacity_type": pools[name].capacity.type,
                       "capacity_reservation_id": pools[name].capacity.reservation_id or ""}
                for name, groups in self.pool_nodegroups.items()}
