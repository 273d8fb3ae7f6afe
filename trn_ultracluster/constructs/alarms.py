"""The stack's alarms (:class:`~trn_ultracluster.constructs.observability.Observability` puts
them in its scope and has them notify its topic): Neuron errors, idle Trainium nodes, a full
file system and Lustre falling back from EFA to TCP.

Sources of the AWS facts used here:

- Alarms on a CloudWatch Metrics Insights query that returns one aggregated time series
  (``SELECT FUNCTION(metricName) FROM SCHEMA(...) WHERE condition``), whose condition is
  evaluated on the latest 3 hours of data only (CloudWatch user guide, "Create a CloudWatch
  alarm based on a Metrics Insights query",
  https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/Create_Metrics_Insights_Alarm.html,
  and "Limits" of such alarms, https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/alarm-limits.html);
  the CloudFormation alarm takes the query as a ``Metrics`` entry's ``Expression``.
- SEARCH expressions are not allowed in alarms, metric math ``IF``, ``AND``, ``FILL`` is
  (CloudWatch user guide, "Use search expressions in graphs" and "Using math expressions
  with CloudWatch metrics"); FSx for Lustre's metrics: :mod:`.metric_source`.
"""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cw
from constructs import Construct

from trn_ultracluster.config import ObservabilityConfig
from trn_ultracluster.config.fsx_efa import EfaMode
from trn_ultracluster.constructs.metric_source import (
    LUSTRE_EFA_TITLE,
    MetricSource,
    cluster_metric,
    fsx_metric,
)
from trn_ultracluster.contracts.metrics import (
    NODE_DIMENSIONS,
    NODE_METRICS_NAMESPACE,
    NodeMetric,
)

__all__ = ["errors_alarm", "fsx_free_threshold_bytes", "fsx_full_alarm", "idle_alarm",
           "lustre_efa_alarm"]

GIB = 1024**3
ERROR_PERIOD = Duration.minutes(5)
IDLE_PERIOD = Duration.hours(1)
FSX_PERIOD = Duration.minutes(5)
FSX_EVALUATION_PERIODS = 3


def errors_alarm(scope: Construct, source: MetricSource) -> cw.Alarm:
    """``NeuronErrorsAlarm``: the cluster's Neuron execution errors, Sum over 5 minutes,
    above 0."""
    return cw.Alarm(
        scope, "NeuronErrorsAlarm",
        alarm_description=("Neuron execution errors on a Trainium node (generic, numerical, "
                           "transient, model, runtime or hardware). The dashboard's per-node "
                           "graphs show which node; HyperPod and EKS node health checks may "
                           "replace it."),
        metric=cluster_metric(source, NodeMetric.EXECUTION_ERRORS, "Sum", ERROR_PERIOD),
        threshold=0, evaluation_periods=1,
        comparison_operator=cw.ComparisonOperator.GREATER_THAN_THRESHOLD,
        treat_missing_data=cw.TreatMissingData.NOT_BREACHING)


def idle_alarm(scope: Construct, source: MetricSource, settings: ObservabilityConfig) -> cw.Alarm:
    """``IdleAlarm``: Trainium nodes up (their ECC counter reports) while the cluster's
    average NeuronCore utilization, missing counted as 0, stays under
    ``idle_utilization_percent`` for ``idle_hours`` hours in a row."""
    o = settings
    idle = cw.MathExpression(
        expression=f"IF(up > 0 AND FILL(util, 0) < {o.idle_utilization_percent:g}, 1, 0)",
        using_metrics={
            "up": cluster_metric(source, NodeMetric.ECC_EVENTS, "SampleCount", IDLE_PERIOD),
            "util": cluster_metric(source, NodeMetric.NEURONCORE_UTILIZATION, "Average",
                                   IDLE_PERIOD)},
        label="Trainium nodes up and idle (1) or not (0)", period=IDLE_PERIOD)
    return cw.Alarm(
        scope, "IdleAlarm",
        alarm_description=(f"Trainium nodes have run {o.idle_hours} h at under "
                           f"{o.idle_utilization_percent:g} % NeuronCore utilization: scale "
                           "them to 0 (trn-ultracluster scale --nodes 0) if nothing is "
                           "meant to run."),
        metric=idle, threshold=1, evaluation_periods=o.idle_hours,
        datapoints_to_alarm=o.idle_hours,
        comparison_operator=cw.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        treat_missing_data=cw.TreatMissingData.NOT_BREACHING)


def lustre_efa_alarm(scope: Construct, source: MetricSource, mode: EfaMode) -> cw.Alarm:
    """``LustreOverEfaAlarm``: a node reported that its Lustre traffic goes over TCP (the
    minimum of ``node_fsx_lustre_over_efa`` over the cluster's nodes under 1 in 5 minutes), a
    Metrics Insights query, since SEARCH is not allowed in alarms. ``mode``: the ``fsx.efa``
    mode, named in the description."""
    where = " AND ".join(f"{k} = '{v}'" for k, v in source.cluster_dimensions.items())
    query = cw.MathExpression(
        expression=(f"SELECT MIN({NodeMetric.LUSTRE_OVER_EFA}) FROM SCHEMA("
                    f"\"{NODE_METRICS_NAMESPACE}\", {', '.join(NODE_DIMENSIONS)}) "
                    f"WHERE {where}"),
        using_metrics={}, label="lowest node (1 = EFA, 0 = TCP)", period=ERROR_PERIOD)
    # The mode, not the setting: "preferred" is auto, or true past a node-count limit
    # (config/fsx_efa.py).
    return cw.Alarm(
        scope, "LustreOverEfaAlarm",
        alarm_description=(
            f"A node's FSx for Lustre traffic went over TCP, not EFA (fsx.efa mode "
            f"{mode}). The dashboard's \"{LUSTRE_EFA_TITLE}\" widget shows which node; "
            "its set-up log says why and what the node did about it "
            "(node_scripts/lustre_efa.sh)."),
        metric=query, threshold=1, evaluation_periods=1,
        comparison_operator=cw.ComparisonOperator.LESS_THAN_THRESHOLD,
        treat_missing_data=cw.TreatMissingData.NOT_BREACHING)


def fsx_free_threshold_bytes(settings: ObservabilityConfig, capacity_gib: int) -> int:
    """Free bytes under which the file system of ``capacity_gib`` GiB is more than
    ``settings.fsx_full_percent`` % full."""
    capacity = capacity_gib * GIB
    return capacity * (100 - settings.fsx_full_percent) // 100


def fsx_full_alarm(scope: Construct, file_system_id: str, capacity_gib: int,
                   settings: ObservabilityConfig) -> cw.Alarm:
    """``FsxFullAlarm``: free capacity under :func:`fsx_free_threshold_bytes` for 15
    minutes."""
    o = settings
    return cw.Alarm(
        scope, "FsxFullAlarm",
        alarm_description=(f"FSx for Lustre {file_system_id} is more than "
                           f"{o.fsx_full_percent} % full: free space, or raise "
                           "fsx.storage_capacity_gib and deploy."),
        metric=fsx_metric(file_system_id, "FreeDataStorageCapacity", FSX_PERIOD),
        threshold=fsx_free_threshold_bytes(o, capacity_gib),
        evaluation_periods=FSX_EVALUATION_PERIODS,
        comparison_operator=cw.ComparisonOperator.LESS_THAN_THRESHOLD,
        treat_missing_data=cw.TreatMissingData.NOT_BREACHING)
