"""Metric names and namespaces shared by the stack (dashboard, alarms, IAM conditions) and the
node scripts that publish them (``trn_ultracluster/node_metrics/``). Standard library only.

Node metrics carry the names Container Insights gives them on EKS, so that the dashboard
reads the same names from either source and only the namespace and the dimensions differ
(:class:`trn_ultracluster.constructs.observability.MetricSource`). The names, units and dimension
sets below are Container Insights' (Amazon CloudWatch user guide, "Amazon EKS and Kubernetes
Container Insights with enhanced observability metrics", sections "AWS Neuron metrics for AWS
Trainium and AWS Inferentia" and "AWS Elastic Fabric Adapter (EFA) metrics",
https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/Container-Insights-metrics-enhanced-EKS.html;
the same names and dimension sets are in aws/amazon-cloudwatch-agent's EMF exporter
declarations, ``getAwsNeuronMetricDeclarations`` and ``getEFAMetricDeclarations``).
"""

from __future__ import annotations

__all__ = [
    "CLUSTER_DIMENSION",
    "CONTAINER_INSIGHTS_NAMESPACE",
    "NODE_DIMENSIONS",
    "NODE_METRICS_NAMESPACE",
    "NodeMetric",
    "TrainingMetric",
    "training_namespace",
]

CONTAINER_INSIGHTS_NAMESPACE = "ContainerInsights"
"""Where Container Insights publishes on EKS (user guide page above)."""
NODE_METRICS_NAMESPACE = "TrnUltraCluster/Neuron"
"""Where the stack's own node exporter publishes (HyperPod Slurm, standalone): the same metric
names and dimension names as Container Insights, in our namespace."""
CLUSTER_DIMENSION = "ClusterName"
"""The dimension of cluster-wide aggregates (``{ClusterName}``)."""
NODE_DIMENSIONS = ("ClusterName", "InstanceId", "NodeName")
"""The dimension set of per-node values (Container Insights: ``ClusterName, InstanceId,
NodeName`` for every node_* Neuron and EFA metric)."""


class NodeMetric:
    """Per-node metric names (Container Insights names; unit in each comment)."""

    NEURONCORE_UTILIZATION = "node_neuroncore_utilization"  # Percent
    DEVICE_MEMORY_USED = "node_neurondevice_runtime_memory_used_bytes"  # Bytes
    EXECUTION_ERRORS = "node_neuron_execution_errors_total"  # Count
    ECC_EVENTS = "node_neurondevice_hw_ecc_events_total"  # Count (corrected + uncorrected)
    EFA_RX_BYTES = "node_efa_rx_bytes"  # Bytes/Second
    EFA_TX_BYTES = "node_efa_tx_bytes"  # Bytes/Second
    LUSTRE_OVER_EFA = "node_fsx_lustre_over_efa"
    """Ours, not Container Insights': 1 when the node's FSx for Lustre traffic goes over EFA,
    0 when it fell back to TCP (Count; published once per node set-up by
    ``node_scripts/lustre_efa.sh`` on every orchestrator, in :data:`NODE_METRICS_NAMESPACE`
    with :data:`NODE_DIMENSIONS`)."""


class TrainingMetric:
    """The training program's own metrics (its ``{"event": "train", ...}`` JSON lines,
    ``training/trn_train/metrics.py``): metric name -> JSON field."""

    TOKENS_PER_SECOND = "TokensPerSecond"
    MFU = "MFU"
    FIELDS = {TOKENS_PER_SECOND: "tokens_per_s", MFU: "mfu"}
    EVENT = "train"
    """The ``event`` value of the lines that carry them."""


def training_namespace(cluster_name: str) -> str:
    """``TrnUltraCluster/Training/<cluster name>``: one namespace per cluster, because a
    CloudWatch Logs metric filter (EKS) can take dimension values only from the log event
    (CloudWatch Logs API reference, MetricTransformation ``Dimensions``), and the training
    program's lines do not name the cluster."""
    return f"TrnUltraCluster/Training/{cluster_name}"
