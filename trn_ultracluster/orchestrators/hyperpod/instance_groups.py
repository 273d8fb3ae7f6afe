"""The worker instance groups (one or more per node pool, Trainium or CPU) and the
``AWS::SageMaker::Cluster`` of both HyperPod orchestrators.

Sources of the property names and limits (checked against both by the tests):

- CloudFormation schema of ``AWS::SageMaker::Cluster`` as bundled with cfn-lint 1.58.0
  (template reference
  https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/aws-resource-sagemaker-cluster.html);
- botocore 1.44.5 ``data/sagemaker/2017-07-24/service-2.json``, operation ``CreateCluster``
  (shapes ``ClusterInstanceGroupSpecification``, ``ClusterEbsVolumeConfig``,
  ``OnStartDeepHealthChecks``, ``ClusterKubernetesConfig``, ``ClusterSlurmConfig``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from aws_cdk import aws_sagemaker as sagemaker
from constructs import Construct

from trn_ultracluster import network_plan
from trn_ultracluster.config import HyperPodConfig
from trn_ultracluster.config.model import Pool
from trn_ultracluster.contracts.catalog import InstanceSpec
from trn_ultracluster.contracts.hyperpod import part_group_name
from trn_ultracluster.orchestrators.base import Foundation

__all__ = ["CPU_THREADS_PER_CORE", "WORKER_THREADS_PER_CORE", "GroupNetworks", "Network",
           "WorkerPart", "compute_group", "group_networks", "hyperpod_cluster", "ml_name",
           "pool_instance_counts", "pool_instance_groups", "worker_parts"]

WORKER_THREADS_PER_CORE = 1
"""Hyperthreading off on the Trainium groups (``ThreadsPerCore`` 1), as the AWS HyperPod
samples configure their accelerated groups (aws-samples/awsome-distributed-training
``1.architectures/5.sagemaker-hyperpod/automate-smhp-slurm/automate-cluster-creation.sh``,
``create_config``: worker groups ``"ThreadsPerCore": 1``, controller and login groups 2;
``1.architectures/7.sagemaker-hyperpod-eks/cfn-templates/nested-stacks/hyperpod-cluster-stack.yaml``:
``AcceleratedThreadsPerCore`` default 1)."""
CPU_THREADS_PER_CORE = 2
"""Hyperthreading on in a CPU pool's groups (``ThreadsPerCore`` 2): data preparation and
tools use every vCPU. ``ThreadsPerCore``: "For instance types that support multithreading,
you can specify 1 for disabling multithreading and 2 for enabling multithreading" (botocore
1.44.8 SageMaker model, ``ClusterInstanceGroupSpecification``); every type of
:data:`~trn_ultracluster.contracts.catalog.CPU_CATALOG` supports it
(``VCpuInfo.DefaultThreadsPerCore`` 2, ``ValidThreadsPerCore`` [1, 2] in moto's copy of EC2
DescribeInstanceTypes), and the catalog's ``vcpus`` (``DefaultVCpus``) count both threads of
each core. The AWS HyperPod samples give their CPU controller and login groups 2 (same
``create_config`` as above)."""

Group = sagemaker.CfnCluster.ClusterInstanceGroupProperty


def ml_name(instance: InstanceSpec) -> str:
    """The SageMaker HyperPod name of a catalog instance type (``ml.trn1.32xlarge``).

    Raises:
        ValueError: the type has no HyperPod name (the configuration rules refuse it first).
    """
    name = instance.hyperpod_instance_type
    if name is None:  # the config rules reject this already
        raise ValueError(f"{instance.name} has no SageMaker HyperPod instance type")
    return name


@dataclass(frozen=True)
class WorkerPart:
    """One worker instance group: a part of a worker group in one compute subnet.

    Attributes:
        worker_group: the worker group it belongs to (``hyperpod.worker_groups`` entry, or
            with ``pools`` the pool's group; its Slurm partition).
        name: the instance group's name (:func:`~trn_ultracluster.contracts.hyperpod.part_group_name`).
        count: its instances.
        subnet: its compute subnet (index of ``Foundation.compute_subnets``).
        pool: the node pool whose instances it runs (type, Trainium or CPU; index 0 is the
            main pool).
    """

    worker_group: str
    name: str
    count: int
    subnet: int
    pool: Pool

    @property
    def instance(self) -> InstanceSpec:
        """Catalog entry of the pool's instance type."""
        return self.pool.instance


def worker_parts(parts: Mapping[str, Sequence[network_plan.Group]],
                 pools: Mapping[str, Pool]) -> list[WorkerPart]:
    """The worker instance groups of ``parts`` (worker group -> its groups of the address
    plan, ``ClusterConfig.hyperpod_worker_parts``), in order: the first part of a worker
    group keeps its name, so a deployed cluster keeps the group; more are ``<name>-2``, ...

    Args:
        pools: worker group -> its pool (``ClusterConfig.hyperpod_worker_groups``).

    Raises:
        KeyError: a worker group of ``parts`` has no pool in ``pools``.
    """
    return [WorkerPart(worker, part_group_name(worker, i), group.nodes, group.subnet,
                       pools[worker])
            for worker, groups in parts.items() for i, group in enumerate(groups)]


def pool_instance_counts(parts: Sequence[WorkerPart]) -> dict[str, int]:
    """Pool name -> the instances of its instance groups (their ``InstanceCount``s summed):
    what HyperPod runs, as many as the pool's ``nodes.desired``, and so the most nodes a job
    of the pool can have (the ``instances`` of the stack output ``Pools``)."""
    counts: dict[str, int] = {}
    for part in parts:
        counts[part.pool.name] = counts.get(part.pool.name, 0) + part.count
    return counts


def pool_instance_groups(parts: Sequence[WorkerPart]) -> dict[str, str]:
    """Pool name -> its instance groups' names, comma-joined, in order (the ``instance_groups``
    of the stack output ``Pools``, which the reader splits at commas), e.g.
    ``{"trn1": "trn1", "cpu": "cpu,cpu-2"}``."""
    names: dict[str, list[str]] = {}
    for part in parts:
        names.setdefault(part.pool.name, []).append(part.name)
    return {pool: ",".join(groups) for pool, groups in names.items()}


@dataclass(frozen=True)
class Network:
    """Where HyperPod creates a group's nodes: subnet ids and security group ids (tokens).

    ``VpcConfig`` (botocore 1.44.8 SageMaker model, shape ``VpcConfig``): 1-16 subnets, 1-5
    security groups."""

    subnets: tuple[str, ...]
    security_groups: tuple[str, ...]

    def vpc_config(self) -> sagemaker.CfnCluster.VpcConfigProperty:
        """This network as a ``VpcConfig`` / ``OverrideVpcConfig``."""
        return sagemaker.CfnCluster.VpcConfigProperty(
            security_group_ids=list(self.security_groups), subnets=list(self.subnets))


@dataclass(frozen=True)
class GroupNetworks:
    """The networks of every instance group of one HyperPod cluster: what the cluster's
    ``VpcConfig`` and each group's ``OverrideVpcConfig`` say, and so everything the execution
    role must let HyperPod create interfaces in (:attr:`subnets`, :attr:`security_groups`;
    ``execution_role`` reads them). Built once by :func:`group_networks` and passed to both
    the cluster and the role, so the two cannot name different networks.

    Attributes:
        cluster: the cluster's ``VpcConfig``: compute subnet 0 with the nodes' security
            group; the controller and login groups (Slurm) and the worker parts in compute
            subnet 0 use it.
        overrides: instance group name -> its ``OverrideVpcConfig`` (the worker parts in
            another compute subnet).
    """

    cluster: Network
    overrides: Mapping[str, Network] = field(default_factory=dict)

    def override_vpc_config(self, group: str) -> sagemaker.CfnCluster.VpcConfigProperty | None:
        """The ``OverrideVpcConfig`` of instance group ``group``, or ``None`` (it uses the
        cluster's)."""
        network = self.overrides.get(group)
        return network.vpc_config() if network is not None else None

    @property
    def subnets(self) -> tuple[str, ...]:
        """Every subnet id of the cluster's and the groups' networks, each once, in order."""
        return _unique([self.cluster, *self.overrides.values()], "subnets")

    @property
    def security_groups(self) -> tuple[str, ...]:
        """Every security group id of the cluster's and the groups' networks, each once."""
        return _unique([self.cluster, *self.overrides.values()], "security_groups")


def _unique(networks: Sequence[Network], attribute: str) -> tuple[str, ...]:
    return tuple(dict.fromkeys(v for n in networks for v in getattr(n, attribute)))


def group_networks(parts: Sequence[WorkerPart], foundation: Foundation) -> GroupNetworks:
    """The networks of a cluster whose worker groups are ``parts``: ``VpcConfig`` in compute
    subnet 0 (HyperPod requires a private subnet, SageMaker developer guide, HyperPod EKS
    prerequisites) with the EFA security group; a part in compute subnet ``i > 0`` overrides
    it with its one compute subnet and the same security group.

    ``ClusterInstanceGroupSpecification.OverrideVpcConfig`` (botocore 1.44.8 SageMaker model,
    shape ``VpcConfig``: 1-16 subnets, 1-5 security groups) "customize[s] the Amazon VPC
    configuration at the instance group level ... to override a SageMaker HyperPod cluster's
    default Amazon VPC configuration"; the model documents it for multi-AZ deployments and
    names no orchestrator. Whether HyperPod accepts it on a Slurm-orchestrated cluster as on
    an EKS one: not verified (the linked guide section, "Setting up SageMaker HyperPod
    clusters across multiple AZs", was not read). A group gets one subnet because HyperPod
    reports one ``SubnetId`` per instance group (``InstanceGroupMetadata``)."""
    groups = (foundation.node_security_group.security_group_id,)
    return GroupNetworks(
        cluster=Network((foundation.compute_subnet.subnet_id,), groups),
        overrides={part.name: Network((foundation.compute_subnets[part.subnet].subnet_id,), groups)
                   for part in parts if part.subnet != 0})


def compute_group(part: WorkerPart, settings: HyperPodConfig, *,
                  vpc_config: sagemaker.CfnCluster.VpcConfigProperty | None,
                  execution_role: str,
                  life_cycle_config: sagemaker.CfnCluster.ClusterLifeCycleConfigProperty,
                  slurm_config: sagemaker.CfnCluster.ClusterSlurmConfigProperty | None = None,
                  kubernetes_config: sagemaker.CfnCluster.ClusterKubernetesConfigProperty | None = None,
                  ) -> sagemaker.CfnCluster.ClusterInstanceGroupProperty:
    """One worker instance group: ``part.count`` nodes of its pool's ``ml.`` type, an EBS
    volume of ``hyperpod.worker_ebs_volume_gib`` GiB (mounted by HyperPod at
    ``/opt/sagemaker``), ``vpc_config`` and the orchestrator's ``SlurmConfig`` or
    ``KubernetesConfig``; and by pool:

    - a Trainium pool: :data:`WORKER_THREADS_PER_CORE` and ``hyperpod.deep_health_checks``
      on start;
    - a CPU pool: :data:`CPU_THREADS_PER_CORE` and no deep health checks. HyperPod's deep
      health checks test accelerators and EFA: every check of "List of deep health checks
      done by SageMaker HyperPod" lists "GPU", "Trainium" or "GPU and Trainium" as its
      instance type compatibility (SageMaker developer guide, "Deep health checks",
      https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-eks-resiliency-deep-health-checks.html;
      the Slurm page, .../sagemaker-hyperpod-resiliency-slurm-deep-health-checks.html:
      ``InstanceConnectivity`` "is only supported on instances with multi-node GPU
      communication capabilities"), so a CPU type has none to run;
    - the main pool (index 0): ``hyperpod.training_plan_arn``. A training plan reserves
      instances of one type (botocore 1.44.8 SageMaker model: ``SearchTrainingPlanOfferings``
      takes an ``InstanceType``, ``ReservedCapacitySummary.InstanceType``), and the
      configuration's plan is the main pool's (its rules check it against ``nodes``).

    Args:
        part: the group's name, instances (0 to 6758, ``ClusterInstanceCount``), subnet and
            pool.
        settings: the ``hyperpod`` configuration section.
        vpc_config: its ``OverrideVpcConfig`` (:meth:`GroupNetworks.override_vpc_config`).
        execution_role: ARN of the instance group's role.
        life_cycle_config: the lifecycle scripts it runs.
        slurm_config: Slurm node type and partition (Slurm only).
        kubernetes_config: Kubernetes labels and taints of its nodes (EKS only).

    Raises:
        ValueError: the pool's type has no HyperPod name (:func:`ml_name`).
    """
    accelerated = part.instance.accelerated
    return Group(
        instance_group_name=part.name,
        instance_type=ml_name(part.instance),
        instance_count=part.count,
        threads_per_core=WORKER_THREADS_PER_CORE if accelerated else CPU_THREADS_PER_CORE,
        instance_storage_configs=[sagemaker.CfnCluster.ClusterInstanceStorageConfigProperty(
            ebs_volume_config=sagemaker.CfnCluster.ClusterEbsVolumeConfigProperty(
                volume_size_in_gb=settings.worker_ebs_volume_gib))],
        on_start_deep_health_checks=(list(settings.deep_health_checks) or None) if accelerated
        else None,
        training_plan_arn=settings.training_plan_arn if part.pool.index == 0 else None,
        slurm_config=slurm_config,
        kubernetes_config=kubernetes_config,
        execution_role=execution_role,
        life_cycle_config=life_cycle_config,
        override_vpc_config=vpc_config,
    )


def hyperpod_cluster(scope: Construct, construct_id: str, settings: HyperPodConfig,
                     foundation: Foundation, networks: GroupNetworks,
                     instance_groups: Sequence[sagemaker.CfnCluster.ClusterInstanceGroupProperty],
                     orchestrator: sagemaker.CfnCluster.OrchestratorProperty,
                     ) -> sagemaker.CfnCluster:
    """The ``AWS::SageMaker::Cluster`` ``hyperpod.cluster_name`` with ``instance_groups``,
    ``hyperpod.node_recovery`` and ``orchestrator`` (Slurm or EKS), its ``VpcConfig``
    ``networks.cluster`` (the instance groups carry their own overrides, from the same
    ``networks``). It waits for ``foundation.compute_routes``: the NAT route and every
    compute subnet's route table association, which the nodes' lifecycle scripts need to
    reach AWS."""
    cluster = sagemaker.CfnCluster(
        scope,
        construct_id,
        cluster_name=settings.cluster_name,
        instance_groups=list(instance_groups),
        vpc_config=networks.cluster.vpc_config(),
        node_recovery=settings.node_recovery,
        orchestrator=orchestrator,
    )
    cluster.node.add_dependency(foundation.compute_routes)
    return cluster
