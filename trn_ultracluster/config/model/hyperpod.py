"""SageMaker HyperPod: ``hyperpod`` and its worker groups."""

from __future__ import annotations

from typing import Literal

from trn_ultracluster.config.model.base import FrozenModel

__all__ = ["HyperPodConfig", "HyperPodWorkerGroupConfig"]


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
