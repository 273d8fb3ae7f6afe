"""The configuration model: typed, frozen pydantic models with their defaults.

The defaults here are the only ones: ``cdk.json`` holds only what differs from them. The
shape and types are checked by pydantic; the AWS rules that span fields are in
:mod:`trn_ultracluster.config.rules`.

One module per section, split as the rules are: :mod:`.compute` (``nodes``), :mod:`.fsx`,
:mod:`.capacity`, :mod:`.eks`, :mod:`.hyperpod`, :mod:`.standalone`, :mod:`.training_image`,
:mod:`.observability`, :mod:`.quotas`, :mod:`.pools`, :mod:`.teams`; :mod:`.base` holds what
every model is. A section's module also resolves it against the rest (:mod:`.pools` the
pools' settings, :mod:`.teams` the teams' quotas per pool, :mod:`.hyperpod` the worker
groups and their parts in the address plan). Here, :class:`ClusterConfig` puts the
sections together with the top-level keys (instance type, network, tags, ...), and
:class:`LoadedConfig` is a validated configuration with its warnings.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pydantic import Field, model_validator

from trn_ultracluster import network_plan
from trn_ultracluster.config.errors import ConfigIssue
from trn_ultracluster.config.facts import (
    DEFAULT_KUBERNETES_VERSION,
    HYPERPOD_MAX_INSTANCE_COUNT,
    region_of_az_id,
)
from trn_ultracluster.config.model.base import FrozenModel
from trn_ultracluster.config.model.capacity import CapacityConfig
from trn_ultracluster.config.model.compute import NodeCounts
from trn_ultracluster.config.model.eks import EksAddonVersionsConfig, EksConfig
from trn_ultracluster.config.model.fsx import DataRepositoryConfig, FsxConfig
from trn_ultracluster.config.model.hyperpod import (
    HyperPodConfig,
    HyperPodWorkerGroupConfig,
    resolve_cluster_name,
    resolve_worker_groups,
    worker_group_parts,
)
from trn_ultracluster.config.model.observability import ObservabilityConfig
from trn_ultracluster.config.model.pools import SHORTHAND_POOL, Pool, PoolConfig, resolve_pools
from trn_ultracluster.config.model.quotas import QuotasConfig
from trn_ultracluster.config.model.standalone import StandaloneConfig
from trn_ultracluster.config.model.teams import (
    PriorityClassConfig,
    SchedulingConfig,
    Team,
    TeamConfig,
    TeamQuota,
    TeamQuotaConfig,
    resolve_teams,
)
from trn_ultracluster.config.model.training_image import TrainingImageConfig
from trn_ultracluster.contracts.catalog import InstanceSpec, get_instance
from trn_ultracluster.contracts.neuron_stack import NeuronStackName, default_stack
from trn_ultracluster.contracts.outputs import STACK_NAME

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
    "Pool",
    "PoolConfig",
    "PriorityClassConfig",
    "QuotasConfig",
    "SchedulingConfig",
    "StandaloneConfig",
    "Team",
    "TeamConfig",
    "TeamQuota",
    "TeamQuotaConfig",
    "TrainingImageConfig",
]


class ClusterConfig(FrozenModel):
    """The whole cluster configuration (frozen). How it is read, with examples:
    docs/configuration-guide.md.

    Attributes:
        stack_name: the CloudFormation stack's name (and CDK stack id): 1-128 letters,
            digits and hyphens starting with a letter, at most 91 with ``eks`` and
            ``hyperpod-eks`` (the EKS cluster is ``<stack_name>-<8 hex digits>``) and 63 on
            HyperPod unless ``hyperpod.cluster_name`` is set (then it also names the
            HyperPod cluster, and must not be ``trn-ultracluster``). The physical names
            that must be unique in the account and Region derive from it, so several
            clusters (dev and prod, one per team) live side by side; ``make deploy`` and
            ``make destroy`` address it, and the job CLI defaults to it.
        instance_type: Trainium instance type; one of :data:`catalog.CATALOG` (the table in
            docs/architecture.md).
        nodes: node counts; 0 allowed for an idle cluster.
        az_ids: two or more AZ IDs of one Region, from which the Region is derived; the
            first holds the compute nodes and FSx, the others the services that need two
            AZs (EKS control plane, NAT per AZ). An AZ ID where the catalog never saw the
            type offered gives a warning (run ``trn-ultracluster preflight``).
        vpc_cidr: VPC IPv4 CIDR block (the primary one): /16 to /28 in a private range
            (RFC 1918: 10/8, 172.16/12, 192.168/16; RFC 6598: 100.64/10), with room for at
            least a /20 private and a /24 public subnet per AZ ID. Nodes beyond its compute
            subnets go to secondary blocks (docs/scale.md).
        vpc_secondary_cidrs: the secondary CIDR blocks that hold compute subnets when the
            primary is full, in order; ``null`` (default): the /16s after ``vpc_cidr`` in its
            private range, as many as the nodes need
            (:func:`trn_ultracluster.network_plan.candidate_blocks`). Each an IPv4 /16 to /28
            in ``vpc_cidr``'s private range or 100.64.0.0/10, none overlapping (and none in
            10.0.0.0/16 when a block is in 10.0.0.0/15): the VPC's rules for added blocks.
        nat_gateways: 1, or one per AZ.
        placement_group: put the nodes in a cluster placement group. Must be ``false`` with
            a Capacity Block (whose EKS node group starts at 0 nodes: ``trn-ultracluster
            scale --nodes N`` once the block is active); with a Capacity Reservation, see
            ``capacity.placement_group_name``; HyperPod places its nodes itself (a value other
            than ``true`` there gives a warning).
        efa_interface_layout: ``efa`` (every card an EFA interface with an IP, as in the
            AWS Neuron samples) or ``efa-only`` (ENA primary plus an EFA-only interface,
            without IP, on every card, as the EC2 user guide recommends today). On a type
            without EFA, and on HyperPod, which makes its nodes' interfaces itself, it has no
            effect and gives a warning.
        root_volume_gib: size of each node's encrypted gp3 root volume, GiB (64-16384).
            HyperPod's nodes do not use it: a warning names
            ``hyperpod.worker_ebs_volume_gib``.
        fsx: FSx for Lustre settings.
        orchestrator: ``eks``, ``hyperpod-slurm``, ``hyperpod-eks`` or ``standalone``
            (docs/eks.md, docs/hyperpod.md, docs/hyperpod-eks.md, docs/standalone.md).
        eks: EKS settings (used with ``eks`` and ``hyperpod-eks``).
        hyperpod: HyperPod settings (used with ``hyperpod-slurm`` and ``hyperpod-eks``).
        standalone: standalone node settings (used with ``orchestrator: standalone``).
        capacity: on-demand, capacity reservation or Capacity Block.
        training_image: how the training image is built.
        observability: dashboard and alarms.
        data_removal_policy: what ``cdk destroy`` does with the data: ``retain`` (default)
            exports the FSx file system to S3 before deleting it and keeps the buckets, log
            groups and KMS keys; ``destroy`` deletes everything (docs/deploy.md).
        tags: tags on every resource the stack tags (``cdk.json`` sets
            ``{project: trn-ultracluster}``). Keys 1-128 and values 0-256 characters of
            letters, digits, spaces and ``+ - = . _ : / @``; keys must not start with
            ``aws:``. ``-c tags.team/owner=ml`` sets the key ``team/owner``. What reaches the
            nodes: docs/configuration-guide.md "Tags".
        quotas: the account's quotas the cluster is planned against (AWS's defaults).
        pools: node pools (:class:`~trn_ultracluster.config.model.pools.PoolConfig`), the
            first a Trainium pool, which keeps the one-pool resource names; the others
            Trainium types side by side, or CPU types for data preparation and tools. Empty
            (default): one pool, ``trainium``, of the top-level ``instance_type`` and
            ``nodes``. With ``pools``, leave ``instance_type`` and ``nodes`` out: they are
            read from the first pool. Jobs choose a pool with ``--pool`` (docs/pools.md).
        teams: the teams that share the cluster, each with a quota per pool
            (:class:`~trn_ultracluster.config.model.teams.TeamConfig`); empty (default): no
            teams, every job first come first served. Enforced by Kueue (``eks``), HyperPod
            task governance (``hyperpod-eks``) or Slurm accounting (``hyperpod-slurm``);
            refused on ``standalone`` (docs/teams.md).
        scheduling: priority classes and preemption of the teams' jobs.
    """

    stack_name: str = STACK_NAME
    instance_type: str = "trn1.32xlarge"
    nodes: NodeCounts = NodeCounts()
    az_ids: tuple[str, ...] = ("usw2-az4", "usw2-az1")
    vpc_cidr: str = "10.0.0.0/16"
    vpc_secondary_cidrs: tuple[str, ...] | None = None
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
    quotas: QuotasConfig = QuotasConfig()
    pools: tuple[PoolConfig, ...] = ()
    teams: tuple[TeamConfig, ...] = ()
    scheduling: SchedulingConfig = SchedulingConfig()

    @model_validator(mode="before")
    @classmethod
    def _main_pool_at_top_level(cls, data: Any) -> Any:
        """With ``pools``, the top-level ``instance_type`` and ``nodes`` are the first pool's
        (so everything that reads them reads the main pool); a configuration that gives both
        and differs is refused by the ``pools`` rules."""
        if not isinstance(data, dict):
            return data
        pools = data.get("pools")
        first = pools[0] if isinstance(pools, (list, tuple)) and pools else None
        if isinstance(first, PoolConfig):
            first = first.model_dump(exclude_unset=True)
        if not isinstance(first, dict):
            return data
        data = dict(data)
        for key in ("instance_type", "nodes"):
            if key in first and key not in data:
                data[key] = first[key]
        return data

    # --- derived values (never configured) ---
    @property
    def node_pools(self) -> tuple[Pool, ...]:
        """Every node pool with its settings resolved, the main (Trainium) pool first: the
        ``pools``, or the one pool :data:`~trn_ultracluster.config.model.pools.SHORTHAND_POOL`
        of the top-level keys."""
        top = Pool(SHORTHAND_POOL, 0, "", self.instance_type, self.nodes, self.capacity,
                   self.placement_group, self.efa_interface_layout, self.root_volume_gib,
                   self.training_image.neuron_stack)
        return resolve_pools(self.pools, top)

    @property
    def team_list(self) -> tuple[Team, ...]:
        """Every team with its quotas converted on every pool, in pool order
        (:func:`~trn_ultracluster.config.model.teams.resolve_teams`)."""
        return resolve_teams(self.teams, self.scheduling, self.node_pools)

    @property
    def main_pool(self) -> Pool:
        """The first pool: the one the top-level ``instance_type`` and ``nodes`` describe."""
        return self.node_pools[0]

    def pool(self, name: str) -> Pool:
        """The pool named ``name``.

        Raises:
            KeyError: no such pool; the message lists the pools.
        """
        for pool in self.node_pools:
            if pool.name == name:
                return pool
        raise KeyError(f"no pool {name!r}; pools: {', '.join(p.name for p in self.node_pools)}")

    @property
    def neuron_stacks(self) -> tuple[NeuronStackName, ...]:
        """The Neuron stacks of the Trainium pools, each once, the main pool's first: one
        training image each."""
        return tuple(dict.fromkeys(p.neuron_stack for p in self.node_pools
                                   if p.neuron_stack is not None))

    @property
    def nodes_max(self) -> int:
        """Nodes of every pool at its ``nodes.max``."""
        return sum(p.nodes.max for p in self.node_pools)

    @property
    def instance(self) -> InstanceSpec:
        """Catalog entry of :attr:`instance_type`."""
        return get_instance(self.instance_type)

    @property
    def neuron_stack(self) -> NeuronStackName:
        """The main pool's Neuron training stack: its ``neuron_stack`` or
        ``training_image.neuron_stack``, for ``auto`` the instance family's default
        (:func:`trn_ultracluster.contracts.neuron_stack.default_stack`)."""
        chosen = self.main_pool.neuron_stack_setting
        return default_stack(self.instance) if chosen == "auto" else chosen

    @property
    def standalone_settings(self) -> StandaloneConfig:
        """The ``standalone`` section with ``dlami_venv`` filled in for :attr:`neuron_stack`
        (:meth:`StandaloneConfig.resolved`): what the standalone orchestrator builds from."""
        return self.standalone.resolved(self.neuron_stack)

    @property
    def kubernetes_version(self) -> str | None:
        """Kubernetes version of the EKS cluster: ``eks.kubernetes_version`` or the
        orchestrator's default (:data:`~trn_ultracluster.config.facts.DEFAULT_KUBERNETES_VERSION`);
        ``None`` for an orchestrator without EKS."""
        return self.eks.kubernetes_version or DEFAULT_KUBERNETES_VERSION.get(self.orchestrator)

    @property
    def hyperpod_cluster_name(self) -> str:
        """Name of the HyperPod cluster: ``hyperpod.cluster_name``, else derived from the
        stack's name (:func:`~trn_ultracluster.config.model.hyperpod.resolve_cluster_name`)."""
        return resolve_cluster_name(self.hyperpod, self.stack_name)

    @property
    def hyperpod_settings(self) -> HyperPodConfig:
        """The ``hyperpod`` section with :attr:`hyperpod_cluster_name` filled in: what the
        HyperPod orchestrators build from."""
        return self.hyperpod.model_copy(update={"cluster_name": self.hyperpod_cluster_name})

    @property
    def region(self) -> str:
        """AWS Region, derived from the first AZ ID."""
        return region_of_az_id(self.az_ids[0])

    @property
    def compute_az_id(self) -> str:
        """AZ ID of the compute nodes and FSx (the first AZ ID)."""
        return self.az_ids[0]

    def pool_addresses(self, pool: Pool) -> network_plan.NodeAddresses:
        """What one node of ``pool`` takes from the VPC
        (:func:`trn_ultracluster.network_plan.node_addresses`).

        Raises:
            UnknownInstanceTypeError: the pool's type is in no catalog (rules report it).
        """
        spec = pool.instance
        return network_plan.node_addresses(self.orchestrator, pool.efa_interface_layout,
                                           spec.network_cards, spec.efa_interfaces,
                                           self.eks.pod_ips_per_node)

    @property
    def node_addresses(self) -> network_plan.NodeAddresses:
        """What one node of the main pool takes from the VPC (:meth:`pool_addresses`)."""
        return self.pool_addresses(self.main_pool)

    def pool_group_size(self, pool: Pool) -> int:
        """Most nodes of ``pool`` in one group: an EKS managed node group
        (``quotas.eks_nodes_per_nodegroup``), a HyperPod instance group
        (:data:`~trn_ultracluster.config.facts.HYPERPOD_MAX_INSTANCE_COUNT`); standalone
        has one Auto Scaling group per compute subnet."""
        if self.orchestrator == "eks":
            return self.quotas.eks_nodes_per_nodegroup
        if self.orchestrator.startswith("hyperpod"):
            return HYPERPOD_MAX_INSTANCE_COUNT
        return max(pool.nodes.max, 1)

    @property
    def group_size(self) -> int:
        """Most nodes of the main pool in one group (:meth:`pool_group_size`)."""
        return self.pool_group_size(self.main_pool)

    @property
    def address_plan(self) -> network_plan.AddressPlan:
        """The VPC address plan of every pool at ``nodes.max``
        (:func:`trn_ultracluster.network_plan.plan`), the main pool first; with HyperPod,
        the worker groups' instance groups are :attr:`hyperpod_worker_parts`, placed in its
        subnets.

        Raises:
            network_plan.PlanError: the VPC cannot address the cluster (the ``vpc_cidr``
                rule reports it first).
        """
        return network_plan.plan(
            vpc_cidr=self.vpc_cidr, az_count=len(self.az_ids),
            pools=[network_plan.PoolDemand(p.name, p.nodes.max, self.pool_addresses(p),
                                           self.pool_group_size(p))
                   for p in self.node_pools],
            secondary_cidrs=self.vpc_secondary_cidrs)

    @property
    def hyperpod_worker_groups(self) -> tuple[tuple[HyperPodWorkerGroupConfig, Pool], ...]:
        """HyperPod's worker groups and the pool of each: ``hyperpod.worker_groups``, or one
        per pool with ``pools``
        (:func:`~trn_ultracluster.config.model.hyperpod.resolve_worker_groups`)."""
        return resolve_worker_groups(self.hyperpod, self.node_pools, bool(self.pools))

    @property
    def hyperpod_worker_counts(self) -> dict[str, int]:
        """HyperPod worker group name -> instance count (``nodes.desired`` where not given)."""
        return {g.name: self.worker_group_count(g) for g, _ in self.hyperpod_worker_groups}

    @property
    def hyperpod_worker_parts(self) -> dict[str, tuple[network_plan.Group, ...]]:
        """HyperPod worker group name -> its parts in the address plan, each at most one
        instance group in one compute subnet
        (:func:`~trn_ultracluster.config.model.hyperpod.worker_group_parts`).

        Raises:
            network_plan.PlanError: the VPC cannot address the cluster (as
                :attr:`address_plan`).
        """
        return worker_group_parts(self.hyperpod_worker_groups, self.hyperpod_worker_counts,
                                  self.address_plan, bool(self.pools))

    def hyperpod_worker_pool(self, worker_group: str) -> Pool:
        """The pool of HyperPod worker group ``worker_group``.

        Raises:
            KeyError: no such worker group.
        """
        for group, pool in self.hyperpod_worker_groups:
            if group.name == worker_group:
                return pool
        raise KeyError(worker_group)

    def worker_group_count(self, group: HyperPodWorkerGroupConfig) -> int:
        """Instances of one HyperPod worker group: its ``instance_count`` or ``nodes.desired``."""
        return self.nodes.desired if group.instance_count is None else group.instance_count

    @property
    def uses_placement_group(self) -> bool:
        """Whether the main pool's nodes launch into a cluster placement group: the stack's
        own, or the existing ``capacity.placement_group_name``."""
        return self.main_pool.uses_placement_group


@dataclass(frozen=True)
class LoadedConfig:
    """A validated configuration and the warnings found while validating it."""

    config: ClusterConfig
    warnings: tuple[ConfigIssue, ...] = ()
