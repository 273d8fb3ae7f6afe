"""SageMaker HyperPod: ``hyperpod`` and its worker groups; the cluster's name, the worker
groups of the node pools and their parts in the address plan
(:class:`~trn_ultracluster.config.model.ClusterConfig` reads them as ``hyperpod_*``)."""

from __future__ import annotations

from typing import Literal

from trn_ultracluster import network_plan
from trn_ultracluster.config.facts import HYPERPOD_MAX_INSTANCE_COUNT
from trn_ultracluster.config.model.base import FrozenModel
from trn_ultracluster.config.model.pools import Pool
from trn_ultracluster.contracts.outputs import STACK_NAME

__all__ = ["LEGACY_HYPERPOD_CLUSTER_NAME", "HyperPodConfig", "HyperPodWorkerGroupConfig",
           "resolve_cluster_name", "resolve_worker_groups", "worker_group_parts"]

LEGACY_HYPERPOD_CLUSTER_NAME = "trn-ultracluster"
"""The HyperPod cluster's name before ``stack_name`` existed, when every stack used it. The
default stack keeps it: ``ClusterName`` is create-only (CloudFormation schema of
``AWS::SageMaker::Cluster``), so a new name would replace a running cluster on upgrade."""


class HyperPodWorkerGroupConfig(FrozenModel):
    """One HyperPod instance group of Trainium nodes (with Slurm: one partition).

    Attributes:
        name: instance group name (``[a-zA-Z0-9](-*[a-zA-Z0-9])*``, at most 63 characters).
        partition: Slurm only: the partition the group's nodes join (same pattern).
        instance_count: nodes in the group. Default ``None``: ``nodes.desired``.
    """

    name: str = "workers"
    partition: str = "trainium"
    instance_count: int | None = None


class HyperPodConfig(FrozenModel):
    """SageMaker HyperPod settings (used when ``orchestrator`` is ``hyperpod-slurm`` or
    ``hyperpod-eks``; the Slurm-only keys are marked).

    Default: a cluster named after the stack (``stack_name``) with an ``ml.c5.xlarge`` Slurm controller,
    an ``ml.m5.4xlarge`` login node, one worker group of ``nodes.desired`` Trainium nodes in
    the ``trainium`` partition, each with a 500 GiB EBS volume at ``/opt/sagemaker``, deep
    health checks (stress and connectivity) when nodes start, and automatic node recovery.
    With ``hyperpod-eks`` the controllers run on the EKS system node group and a failed
    TrainJob is recreated up to 3 times.

    Attributes:
        cluster_name: HyperPod cluster name (1-63 characters, letters, digits, hyphens);
            ``null`` (default): the stack's name (``stack_name``), unique per account and
            Region as stack names are; the default stack ``TrnUltraCluster`` keeps the name
            ``trn-ultracluster`` it had before ``stack_name`` existed.
        controller_instance_type: Slurm only: ``ml.`` type of the Slurm controller.
        login_instance_type: Slurm only: ``ml.`` type of the login node; ``null`` for none.
        worker_groups: one or more Trainium instance groups; with Slurm each is a partition.
        worker_ebs_volume_gib: extra EBS volume per worker, GiB (1-16384), mounted by
            HyperPod at ``/opt/sagemaker`` (container images, local scratch).
        deep_health_checks: checks run on workers when they start: ``InstanceStress``,
            ``InstanceConnectivity``; empty for none.
        node_recovery: ``Automatic`` replaces or reboots faulty nodes; ``None`` only
            labels them.
        training_plan_arn: SageMaker training plan for the workers (reserved capacity),
            ``arn:aws:sagemaker:<region>:<account>:training-plan/<name>``; ``null`` for
            on-demand capacity.
        job_max_restarts: ``hyperpod-eks`` only: how often a TrainJob whose pod failed (a
            node HyperPod replaced, a crash) is recreated from its last checkpoint (JobSet
            ``failurePolicy.maxRestarts`` of the stack's training runtime), 0-100.
    """

    cluster_name: str | None = None
    controller_instance_type: str = "ml.c5.xlarge"
    login_instance_type: str | None = "ml.m5.4xlarge"
    worker_groups: tuple[HyperPodWorkerGroupConfig, ...] = (HyperPodWorkerGroupConfig(),)
    worker_ebs_volume_gib: int = 500
    deep_health_checks: tuple[Literal["InstanceStress", "InstanceConnectivity"], ...] = (
        "InstanceStress",
        "InstanceConnectivity",
    )
    node_recovery: Literal["Automatic", "None"] = "Automatic"
    training_plan_arn: str | None = None
    job_max_restarts: int = 3


def resolve_cluster_name(settings: HyperPodConfig, stack_name: str) -> str:
    """Name of the HyperPod cluster: ``hyperpod.cluster_name``; else, for the default
    stack name, :data:`LEGACY_HYPERPOD_CLUSTER_NAME` (so an upgrade keeps a running
    cluster); else the stack's name."""
    if settings.cluster_name is not None:
        return settings.cluster_name
    return LEGACY_HYPERPOD_CLUSTER_NAME if stack_name == STACK_NAME else stack_name


def resolve_worker_groups(settings: HyperPodConfig, pools: tuple[Pool, ...], from_pools: bool
                          ) -> tuple[tuple[HyperPodWorkerGroupConfig, Pool], ...]:
    """HyperPod's worker groups and the pool of each: without ``pools`` (``from_pools``
    false), the ``hyperpod.worker_groups`` of the one pool; with ``pools``, one worker group
    per pool in the Slurm partition of its name, of ``nodes.desired`` instances, named after
    the pool, except the main pool's, which keeps the default worker group's name
    (``workers``): HyperPod identifies an instance group by its name, so a renamed group is a
    new group whose nodes replace the old ones (``UpdateCluster`` takes the full list of
    instance groups; SageMaker API reference, ``UpdateCluster``), and moving a one-pool stack
    to ``pools`` (the main pool named ``trainium``, the default partition) then changes
    nothing on HyperPod.

    Args:
        settings: the ``hyperpod`` section.
        pools: the node pools, main first (``ClusterConfig.node_pools``).
        from_pools: whether ``pools`` is configured.
    """
    if not from_pools:
        return tuple((g, pools[0]) for g in settings.worker_groups)
    main = HyperPodConfig().worker_groups[0].name
    return tuple((HyperPodWorkerGroupConfig(name=main if p.index == 0 else p.name,
                                            partition=p.name,
                                            instance_count=p.nodes.desired), p)
                 for p in pools)


def worker_group_parts(groups: tuple[tuple[HyperPodWorkerGroupConfig, Pool], ...],
                       counts: dict[str, int], plan: network_plan.AddressPlan,
                       from_pools: bool) -> dict[str, tuple[network_plan.Group, ...]]:
    """HyperPod worker group name -> its parts: the groups of the address plan that hold
    it, each at most one instance group
    (:data:`~trn_ultracluster.config.facts.HYPERPOD_MAX_INSTANCE_COUNT`) in one compute
    subnet, in fill order (a worker group of 0 instances has one empty part). Without
    ``pools`` (``from_pools`` false) the worker groups share the one pool's subnets; with
    ``pools`` each worker group's instances fill its pool's groups in order.

    Args:
        groups: the worker groups and their pools (:func:`resolve_worker_groups`).
        counts: worker group name -> instances.
        plan: the VPC address plan of every pool.
    """
    if from_pools:
        out: dict[str, tuple[network_plan.Group, ...]] = {}
        for group, pool in groups:
            name, count = group.name, counts[group.name]
            pool_groups = plan.pool(pool.name).groups
            sizes = network_plan.spread(min(count, sum(g.nodes for g in pool_groups)),
                                        [g.nodes for g in pool_groups])
            parts = tuple(network_plan.Group(n, g.subnet)
                          for n, g in zip(sizes, pool_groups, strict=True) if n)
            out[name] = parts or (network_plan.Group(0, pool_groups[0].subnet),)
        return out
    capacities = [s.capacity for s in plan.compute_subnets]
    parts = network_plan.split(list(counts.values()), capacities, HYPERPOD_MAX_INSTANCE_COUNT)
    return {name: tuple(groups) for name, groups in zip(counts, parts, strict=True)}
