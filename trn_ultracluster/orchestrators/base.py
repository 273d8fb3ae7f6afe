"""The seam between the stack and an orchestrator: what it gets, what it gives back."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from aws_cdk import RemovalPolicy
from constructs import IDependable
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_fsx as fsx
from aws_cdk import aws_s3 as s3

from trn_ultracluster.constructs.metric_source import MetricSource
from trn_ultracluster.contracts.catalog import InstanceSpec
from trn_ultracluster.contracts.outputs import OutputKey
from trn_ultracluster.network_plan import AddressPlan, PoolPlan

if TYPE_CHECKING:
    from trn_ultracluster.config import CapacityConfig, ClusterConfig, NodeCounts
    from trn_ultracluster.config.fsx_efa import EfaMode
    from trn_ultracluster.config.model import Pool
    from trn_ultracluster.constructs.efa import PoolLaunch
    from trn_ultracluster.constructs.training_image import TrainingImage

__all__ = ["Foundation", "NodeShape", "Orchestrator", "PoolFoundation"]


@dataclass(frozen=True)
class PoolFoundation:
    """What the foundation gives one node pool.

    Attributes:
        pool: the pool's resolved settings (name, instance type, counts, capacity, ...).
        launch: its launch template and placement group (:class:`~trn_ultracluster.
            constructs.efa.PoolLaunch`); the main pool's is ``Foundation.launch_template``.
        plan: its part of the address plan: its node groups, each in one compute subnet.
        training_image: the image its jobs run: the image of its Neuron stack, the main
            image for a CPU pool.
        fsx_efa_mode: what its nodes do about Lustre over EFA
            (:meth:`~trn_ultracluster.config.fsx_efa.FsxEfaPlan.pool_mode`): ``off`` for a
            pool whose type is no EFA client of the file system (a CPU pool always), which
            mounts over TCP.
    """

    pool: Pool
    launch: PoolLaunch
    plan: PoolPlan
    training_image: TrainingImage
    fsx_efa_mode: EfaMode = "off"

    @property
    def shape(self) -> NodeShape:
        """The pool's instance type, counts and capacity."""
        return NodeShape(self.pool.instance, self.pool.nodes, self.pool.capacity)

    @property
    def id_suffix(self) -> str:
        """What the pool adds to construct ids (``""`` for the main pool)."""
        return self.pool.id_suffix


@dataclass(frozen=True)
class Foundation:
    """What the stack's foundation gives every orchestrator (the handles, not the constructs).

    Attributes:
        vpc: the stack's VPC.
        private_subnets: its private subnets, in ``az_ids`` order.
        compute_subnet: the private subnet of the compute AZ ID (Trainium nodes, FSx); its
            ``internet_connectivity_established`` is the route to the NAT gateway.
        compute_subnets: every compute subnet of the address plan, ``compute_subnet`` first;
            a group of nodes (``address_plan.groups``, ``Group.subnet``) stays in one.
        compute_routes: what a node in any compute subnet waits for (NAT route, route table
            associations).
        address_plan: the plan: node groups, their sizes and subnets.
        node_security_group: the Trainium nodes' security group (EFA: all traffic within
            itself; admitted by the file system's group).
        launch_template_id, launch_template_version: the EFA launch template (instance type,
            one EFA interface per network card, placement group, capacity options).
        file_system: the FSx for Lustre file system (id, DNS name, mount name).
        data_bucket: the bucket the file system is linked to (datasets, checkpoints).
        log_bucket: the S3 access-log bucket.
        data_repository_path: the file system path linked to ``data_bucket`` (e.g. ``/``),
            or ``None`` without a link.
        training_image: the training image (``image_uri``, ``image_tag``, ``repository``,
            ``build``: the deploy-time build that pushes it).
        data_removal: what ``cdk destroy`` does with data-bearing resources
            (``data_removal_policy``).
        fsx_efa_mode, fsx_efa_interfaces: the node side of ``fsx.efa``
            (:class:`~trn_ultracluster.config.fsx_efa.FsxEfaPlan` ``mode`` and
            ``interfaces_per_client``): what the node scripts do about Lustre over EFA and
            how many EFA interfaces they bind to LNet.
        launch_template: the EFA launch template resource itself, for an orchestrator whose
            nodes boot straight from it (standalone's Auto Scaling group adds the AMI, the
            instance profile and the user data with
            :func:`trn_ultracluster.constructs.efa.boot_from`); ``None`` where the stack
            gives none.
        pools: every node pool (:class:`PoolFoundation`), the main pool first; the
            single-valued fields above (``launch_template*``, ``training_image``) are the main
            pool's.
        cidr_blocks: the VPC's secondary CIDR block associations
            (:attr:`~trn_ultracluster.constructs.network.Network.cidr_blocks`): an EKS
            control plane depends on each, so that a fresh deploy associates every block
            before the cluster is created (:func:`trn_ultracluster.network_plan.new_block_warning`).
    """

    vpc: ec2.IVpc
    private_subnets: Sequence[ec2.ISubnet]
    compute_subnet: ec2.ISubnet
    compute_subnets: Sequence[ec2.ISubnet]
    compute_routes: IDependable
    address_plan: AddressPlan
    node_security_group: ec2.ISecurityGroup
    launch_template_id: str
    launch_template_version: str
    file_system: fsx.LustreFileSystem
    data_bucket: s3.IBucket
    log_bucket: s3.IBucket
    data_repository_path: str | None
    training_image: TrainingImage
    data_removal: RemovalPolicy = RemovalPolicy.RETAIN
    launch_template: ec2.CfnLaunchTemplate | None = None
    fsx_efa_mode: EfaMode = "off"
    fsx_efa_interfaces: int = 0
    cidr_blocks: Sequence[ec2.CfnVPCCidrBlock] = ()
    pools: Sequence[PoolFoundation] = ()


@dataclass(frozen=True)
class NodeShape:
    """The Trainium nodes every orchestrator runs: type, counts, capacity.

    Attributes:
        instance: the catalog entry of ``instance_type``.
        nodes: ``nodes`` (min, desired, max).
        capacity: ``capacity`` (on-demand, Capacity Reservation or Capacity Block).
    """

    instance: InstanceSpec
    nodes: NodeCounts
    capacity: CapacityConfig

    @classmethod
    def of(cls, config: ClusterConfig) -> NodeShape:
        """The node shape of ``config`` (``instance_type``, ``nodes``, ``capacity``)."""
        return cls(config.instance, config.nodes, config.capacity)


class Orchestrator(Protocol):
    """An orchestrator construct, created by :func:`trn_ultracluster.orchestrators.build`.

    Attributes:
        job_backend: the job CLI backend that submits to it (stack output ``JobBackend``).
        metric_source: where its node and training metrics are (:class:`MetricSource`);
            an orchestrator without the attribute gets a dashboard without node metrics.
    """

    job_backend: str
    metric_source: MetricSource | None

    def outputs(self) -> dict[OutputKey, str]:
        """Stack outputs this orchestrator adds, key -> value (may be tokens)."""
        ...

    def pool_details(self) -> dict[str, dict[str, object]]:
        """Pool name -> what the job backend needs to place a job there (keys of
        :class:`~trn_ultracluster.contracts.pools.PoolInfo`: ``partition``, ``node_groups``,
        ``auto_scaling_groups``, ``instance_groups``; values may be tokens), merged into the
        ``Pools`` output. Optional: the stack reads it with ``getattr``."""
        ...

    def team_details(self) -> dict[str, dict[str, str]]:
        """With ``teams``: team name -> where its jobs go (keys of
        :class:`~trn_ultracluster.contracts.teams.TeamInfo`: ``account``, ``namespace``,
        ``queue``, ``cluster_queue``), merged into the ``Teams`` output. Optional."""
        ...

    def priority_class_names(self) -> dict[str, str]:
        """With ``teams``: priority class name -> the name its scheduler knows it by (Slurm
        QOS, Kueue WorkloadPriorityClass), where it differs. Optional."""
        ...
