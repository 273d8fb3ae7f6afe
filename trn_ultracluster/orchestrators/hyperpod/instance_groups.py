"""The Trainium instance group and the ``AWS::SageMaker::Cluster`` of both HyperPod
orchestrators.

Sources of the property names and limits (checked against both by the tests):

- CloudFormation schema of ``AWS::SageMaker::Cluster`` as bundled with cfn-lint 1.58.0
  (template reference
  https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/aws-resource-sagemaker-cluster.html);
- botocore 1.44.5 ``data/sagemaker/2017-07-24/service-2.json``, operation ``CreateCluster``
  (shapes ``ClusterInstanceGroupSpecification``, ``ClusterEbsVolumeConfig``,
  ``OnStartDeepHealthChecks``, ``ClusterKubernetesConfig``, ``ClusterSlurmConfig``).
"""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import aws_sagemaker as sagemaker
from constructs import Construct

from trn_ultracluster.config import HyperPodConfig
from trn_ultracluster.contracts.catalog import InstanceSpec
from trn_ultracluster.orchestrators.base import Foundation

__all__ = ["WORKER_THREADS_PER_CORE", "hyperpod_cluster", "ml_name", "trainium_group"]

WORKER_THREADS_PER_CORE = 1
"""Hyperthreading off on the Trainium groups (``ThreadsPerCore`` 1), as the AWS HyperPod
samples configure their accelerated groups (aws-samples/awsome-distributed-training
``1.architectures/5.sagemaker-hyperpod/automate-smhp-slurm/automate-cluster-creation.sh``,
``create_config``: worker groups ``"ThreadsPerCore": 1``, controller and login groups 2;
``1.architectures/7.sagemaker-hyperpod-eks/cfn-templates/nested-stacks/hyperpod-cluster-stack.yaml``:
``AcceleratedThreadsPerCore`` default 1)."""

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


def trainium_group(name: str, count: int, instance: InstanceSpec, settings: HyperPodConfig, *,
                   execution_role: str,
                   life_cycle_config: sagemaker.CfnCluster.ClusterLifeCycleConfigProperty,
                   slurm_config: sagemaker.CfnCluster.ClusterSlurmConfigProperty | None = None,
                   kubernetes_config: sagemaker.CfnCluster.ClusterKubernetesConfigProperty | None = None,
                   ) -> sagemaker.CfnCluster.ClusterInstanceGroupProperty:
    """One Trainium instance group: ``count`` nodes of ``instance``'s ``ml.`` type,
    :data:`WORKER_THREADS_PER_CORE`, an EBS volume of ``hyperpod.worker_ebs_volume_gib`` GiB
    (mounted by HyperPod at ``/opt/sagemaker``), ``hyperpod.deep_health_checks`` on start,
    ``hyperpod.training_plan_arn``, and the orchestrator's ``SlurmConfig`` or
    ``KubernetesConfig``.

    Args:
        name: instance group name.
        count: instances (0 to 6758, ``ClusterInstanceCount``).
        instance: catalog entry of the Trainium type.
        settings: the ``hyperpod`` configuration section.
        execution_role: ARN of the instance group's role.
        life_cycle_config: the lifecycle scripts it runs.
        slurm_config: Slurm node type and partition (Slurm only).
        kubernetes_config: Kubernetes labels and taints of its nodes (EKS only).
    """
    return Group(
        instance_group_name=name,
        instance_type=ml_name(instance),
        instance_count=count,
        threads_per_core=WORKER_THREADS_PER_CORE,
        instance_storage_configs=[sagemaker.CfnCluster.ClusterInstanceStorageConfigProperty(
            ebs_volume_config=sagemaker.CfnCluster.ClusterEbsVolumeConfigProperty(
                volume_size_in_gb=settings.worker_ebs_volume_gib))],
        on_start_deep_health_checks=list(settings.deep_health_checks) or None,
        training_plan_arn=settings.training_plan_arn,
        slurm_config=slurm_config,
        kubernetes_config=kubernetes_config,
        execution_role=execution_role,
        life_cycle_config=life_cycle_config,
    )


def hyperpod_cluster(scope: Construct, construct_id: str, settings: HyperPodConfig,
                     foundation: Foundation,
                     instance_groups: Sequence[sagemaker.CfnCluster.ClusterInstanceGroupProperty],
                     orchestrator: sagemaker.CfnCluster.OrchestratorProperty,
                     ) -> sagemaker.CfnCluster:
    """The ``AWS::SageMaker::Cluster`` ``hyperpod.cluster_name`` with ``instance_groups``,
    ``hyperpod.node_recovery`` and ``orchestrator`` (Slurm or EKS), its nodes in the compute
    subnet with the EFA security group (``VpcConfig``; HyperPod requires a private subnet,
    SageMaker developer guide, HyperPod EKS prerequisites)."""
    return sagemaker.CfnCluster(
        scope,
        construct_id,
        cluster_name=settings.cluster_name,
        instance_groups=list(instance_groups),
        vpc_config=sagemaker.CfnCluster.VpcConfigProperty(
            security_group_ids=[foundation.node_security_group.security_group_id],
            subnets=[foundation.compute_subnet.subnet_id],
        ),
        node_recovery=settings.node_recovery,
        orchestrator=orchestrator,
    )
