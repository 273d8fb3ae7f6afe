"""Node metrics without Kubernetes: the scripts that publish a Trainium node's Neuron and EFA
metrics and the training program's tokens/s and MFU to CloudWatch (``scripts/``, uploaded
and run as they are), and what the stack needs for them (:func:`node_metrics`).

Any orchestrator whose nodes run our scripts uses it: HyperPod Slurm (the lifecycle script
calls ``scripts/neuron_metrics.sh``), and a standalone Auto Scaling group (its user data
would run the same script). The nodes of EKS and HyperPod on EKS, whose Neuron and EFA
metrics are Container Insights', get :func:`grant_put_metrics` alone: their node scripts
publish ``NodeMetric.LUSTRE_OVER_EFA`` in :data:`NODE_METRICS_NAMESPACE` as every
orchestrator's do. Metric names: :mod:`trn_ultracluster.contracts.metrics`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from aws_cdk import aws_iam as iam
from constructs import Construct

from trn_ultracluster.constructs.metric_source import MetricSource
from trn_ultracluster.contracts.metrics import (
    CLUSTER_DIMENSION,
    NODE_DIMENSIONS,
    NODE_METRICS_NAMESPACE,
    training_namespace,
)
from trn_ultracluster.nag import acknowledge

__all__ = ["SCRIPTS", "SETUP_SCRIPT", "grant_put_metrics", "node_metrics"]

SCRIPTS = Path(__file__).resolve().parent / "scripts"
"""``neuron_metrics.sh`` (sets up the services) and ``neuron_metrics.py`` (the exporter)."""
SETUP_SCRIPT = "neuron_metrics.sh"


def grant_put_metrics(scope: Construct, role: iam.IRole,
                      namespaces: Sequence[str] = (NODE_METRICS_NAMESPACE,), *,
                      sid: str = "PutNodeMetrics") -> iam.Policy:
    """Let ``role`` (the nodes' role) publish metrics in ``namespaces`` only.

    Adds the policy ``NodeMetricsPolicy`` (in ``scope``) to ``role``, a policy of its own
    (so a resource that launches the nodes must depend on it, not only on the role):
    ``cloudwatch:PutMetricData`` limited with the condition key ``cloudwatch:namespace``
    (CloudWatch user guide, "Using condition keys to limit access to CloudWatch namespaces",
    https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/iam-cw-condition-keys-namespace.html).
    PutMetricData has no resource type, so the resource is ``*`` (same page's examples).

    Args:
        namespaces: default :data:`NODE_METRICS_NAMESPACE`, where every orchestrator's node
            scripts publish ``NodeMetric.LUSTRE_OVER_EFA``.
        sid: the statement id.
    """
    policy = iam.Policy(scope, "NodeMetricsPolicy", statements=[iam.PolicyStatement(
        sid=sid, actions=["cloudwatch:PutMetricData"], resources=["*"],
        conditions={"StringEquals": {"cloudwatch:namespace": list(namespaces)}})])
    policy.attach_to_role(role)
    acknowledge(policy, "AwsSolutions-IAM5[Resource::*]",
                "cloudwatch:PutMetricData has no resource type; the statement is limited to the "
                "stack's metric namespaces with the cloudwatch:namespace condition key.")
    return policy


def node_metrics(scope: Construct, role: iam.IRole,
                 cluster_name: str) -> tuple[MetricSource, iam.Policy]:
    """Let ``role`` (the nodes' role) publish the node and training metrics of
    ``cluster_name``, and say where they are.

    :func:`grant_put_metrics` with :data:`NODE_METRICS_NAMESPACE` and the cluster's training
    namespace.

    Args:
        cluster_name: the ``ClusterName`` dimension the nodes publish with (a plain string:
            the node script gets the same value).

    Returns:
        The metric source (``TrnUltraCluster/Neuron`` with ``ClusterName``; the training
        metrics are published by the nodes, no log group) and the policy, which whatever
        launches the nodes must wait for.
    """
    policy = grant_put_metrics(scope, role,
                               [NODE_METRICS_NAMESPACE, training_namespace(cluster_name)],
                               sid="PutNodeAndTrainingMetrics")
    return MetricSource(
        namespace=NODE_METRICS_NAMESPACE,
        cluster_dimensions={CLUSTER_DIMENSION: cluster_name},
        node_dimensions=NODE_DIMENSIONS,
        training_namespace=training_namespace(cluster_name),
    ), policy
