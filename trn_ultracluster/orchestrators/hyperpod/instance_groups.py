"""The Trainium instance group of both HyperPod orchestrators.

Sources of the property names and limits (checked against both by the tests):

- CloudFormation schema of ``AWS::SageMaker::Cluster`` as bundled with cfn-lint 1.58.0
  (template reference
  https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/aws-resource-sagemaker-cluster.html);
- botocore 1.44.5 ``data/sagemaker/2017-07-24/service-2.json``, operation ``CreateCluster``
  (shapes ``ClusterInstanceGroupSpecification``, ``ClusterEbsVolumeConfig``,
  ``OnStartDeepHealthChecks``, ``ClusterKubernetesConfig``, ``ClusterSlurmConfig``).
"""

from __future__ import annotations

from aws_cdk import aws_sagemaker as sagemaker

from trn_ultracluster.config import HyperPodConfig
from trn_ultracluster.contracts.catalog import InstanceSpec

__all__ = ["WORKER_THREADS_PER_CORE", "ml_name", "trainium_group"]

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
