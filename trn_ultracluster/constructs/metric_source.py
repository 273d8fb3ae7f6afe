"""Where an orchestrator's metrics are (:class:`MetricSource`), and the CloudWatch metrics the
stack's dashboard and alarms read from it (:mod:`trn_ultracluster.constructs.observability`,
:mod:`trn_ultracluster.constructs.alarms`).

The metric names are the same on every orchestrator
(:mod:`trn_ultracluster.contracts.metrics`); only the namespace and dimensions differ.

Sources of the AWS facts used here:

- FSx for Lustre: ``DataReadBytes``/``DataWriteBytes`` (Sum over a period = bytes in it;
  throughput = Sum / period in seconds) and ``FreeDataStorageCapacity`` (Sum = free bytes of
  the file system), namespace ``AWS/FSx``, dimension ``FileSystemId`` (FSx for Lustre user
  guide, "Amazon FSx for Lustre metrics and dimensions",
  https://docs.aws.amazon.com/fsx/latest/LustreGuide/fs-metrics.html, and "How to use Amazon
  FSx for Lustre CloudWatch metrics": total throughput ``SUM(DataReadBytes +
  DataWriteBytes)/PERIOD``).
- SEARCH expressions in graphs (one line per node whose dimensions match), not allowed in
  alarms, and metric math ``IF``, ``AND``, ``FILL``, ``PERIOD`` (CloudWatch user guide,
  "Use search expressions in graphs" and "Using math expressions with CloudWatch metrics").
  SEARCH finds metrics that reported in the last two weeks (user guide, "Use search
  expressions in graphs").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cw
from aws_cdk import aws_logs as logs
from constructs import Construct

from trn_ultracluster.contracts.metrics import (
    NODE_DIMENSIONS,
    NODE_METRICS_NAMESPACE,
    NodeMetric,
    TrainingMetric,
)

__all__ = ["GRAPH_PERIOD", "LUSTRE_EFA_TITLE", "MetricSource", "cluster_metric", "fsx_metric",
           "lustre_efa_per_node", "node_count", "per_node", "training_filters",
           "training_metric"]

GRAPH_PERIOD = Duration.minutes(5)
LUSTRE_EFA_PERIOD = Duration.hours(1)
LUSTRE_EFA_RANGE = "-P14D"
"""The Lustre-over-EFA widget: one point per node set-up (``NodeMetric.LUSTRE_OVER_EFA`` is
published once, when the node sets itself up), so hourly minimums over the two weeks in which
SEARCH still finds a node's metric, whatever the dashboard's range."""
LUSTRE_EFA_TITLE = "FSx for Lustre over EFA (per node: 1 = EFA, 0 = TCP)"


@dataclass(frozen=True)
class MetricSource:
    """Where an orchestrator's node and training metrics are: what the stack's dashboard and
    alarms read (:class:`~trn_ultracluster.constructs.observability.Observability`); each
    orchestrator gives one (:class:`~trn_ultracluster.orchestrators.base.Orchestrator`). The
    metric names are the same everywhere (:mod:`trn_ultracluster.contracts.metrics`).

    Attributes:
        namespace: the per-node Neuron and EFA metrics' namespace (``ContainerInsights`` on
            EKS, ``TrnUltraCluster/Neuron`` from the stack's node exporter).
        cluster_dimensions: the dimensions of the cluster-wide aggregates, e.g.
            ``{"ClusterName": <name>}`` (values may be tokens).
        node_dimensions: the dimension names of the per-node values (a SEARCH schema).
        training_namespace: where the training program's tokens/s and MFU are.
        training_logs: the log group the jobs' stdout lands in, one JSON line per event:
            the stack turns the training lines into metrics with metric filters. ``None``:
            the orchestrator's nodes publish them themselves.
        training_log_selector: the JSON path of a line's fields in each log event (``$``
            when the event is the line itself).
    """

    namespace: str
    cluster_dimensions: Mapping[str, str]
    node_dimensions: tuple[str, ...]
    training_namespace: str
    training_logs: logs.ILogGroup | None = None
    training_log_selector: str = "$"


def per_node(source: MetricSource, metric: str, statistic: str, label: str,
             period: Duration = GRAPH_PERIOD, *, namespace: str | None = None,
             node_dimensions: tuple[str, ...] | None = None) -> cw.MathExpression:
    """One line per node: a SEARCH over the per-node dimension set (default: the
    source's namespace and dimensions) for the source's cluster."""
    schema = ",".join((namespace or source.namespace,
                       *(node_dimensions or source.node_dimensions)))
    filters = " ".join(f'{k}="{v}"' for k, v in source.cluster_dimensions.items())
    return cw.MathExpression(
        expression=(f"SEARCH('{{{schema}}} MetricName=\"{metric}\" {filters}', "
                    f"'{statistic}', {int(period.to_seconds())})"),
        using_metrics={}, label=label, period=period)


def lustre_efa_per_node(source: MetricSource) -> cw.MathExpression:
    """Each node's ``node_fsx_lustre_over_efa``, in the stack's own namespace on every
    orchestrator (:class:`~trn_ultracluster.constructs.observability.Observability`'s class
    doc)."""
    return per_node(source, NodeMetric.LUSTRE_OVER_EFA, "Minimum", "", LUSTRE_EFA_PERIOD,
                    namespace=NODE_METRICS_NAMESPACE, node_dimensions=NODE_DIMENSIONS)


def cluster_metric(source: MetricSource, metric: str, statistic: str,
                   period: Duration = GRAPH_PERIOD, label: str | None = None) -> cw.Metric:
    """The cluster-wide aggregate of ``metric`` (the source's cluster dimensions)."""
    return cw.Metric(namespace=source.namespace, metric_name=metric,
                     dimensions_map=dict(source.cluster_dimensions), statistic=statistic,
                     period=period, label=label)


def node_count(source: MetricSource) -> cw.MathExpression:
    """Nodes with an ECC counter value in the period: each node's series made 1, summed.
    neuron-monitor reports the counter whether or not an application runs."""
    search = per_node(source, NodeMetric.ECC_EVENTS, "SampleCount", "")
    return cw.MathExpression(expression=f"SUM({search.expression} * 0 + 1)",
                             using_metrics={}, label="nodes", period=GRAPH_PERIOD)


def fsx_metric(file_system_id: str, metric: str, period: Duration = GRAPH_PERIOD) -> cw.Metric:
    """An FSx for Lustre metric of the file system, Sum over ``period``."""
    return cw.Metric(namespace="AWS/FSx", metric_name=metric, statistic="Sum", period=period,
                     dimensions_map={"FileSystemId": file_system_id})


def training_metric(source: MetricSource, metric: str) -> cw.Metric:
    """The training program's ``metric``, averaged over the jobs."""
    return cw.Metric(namespace=source.training_namespace, metric_name=metric,
                     statistic="Average", period=GRAPH_PERIOD)


def training_filters(scope: Construct, source: MetricSource) -> None:
    """Metric filters on the jobs' log group (``source.training_logs``), in ``scope``: the
    training program's ``train`` lines become ``TokensPerSecond`` and ``MFU``."""
    sel = source.training_log_selector
    for metric, field in TrainingMetric.FIELDS.items():
        logs.MetricFilter(
            scope, f"TrainingMetric-{metric}",
            log_group=source.training_logs,
            filter_pattern=logs.FilterPattern.literal(
                f'{{ ({sel}.event = "{TrainingMetric.EVENT}") && ({sel}.{field} >= 0) }}'),
            metric_namespace=source.training_namespace, metric_name=metric,
            metric_value=f"{sel}.{field}")
