"""Observability: the stack's CloudWatch dashboard, its alarms and the encrypted SNS topic the
alarms notify, for whichever orchestrator runs the nodes.

The orchestrator says where its metrics are (:class:`MetricSource`:
Container Insights on EKS, the stack's node exporter elsewhere); the metric names are the same
everywhere (:mod:`trn_ultracluster.contracts.metrics`), so nothing here depends on which
orchestrator it is.

Built from aws-cdk-lib's ``aws_cloudwatch`` L2 constructs. cdk-monitoring-constructs (PyPI)
was considered: its monitors cover AWS services such as Lambda, API Gateway, DynamoDB or ECS
(its README's feature table), not Container Insights' Neuron/EFA metrics, our node exporter's
or FSx for Lustre, so it would add a dependency and a layer of its own for widgets we would
still write by hand.

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
- Alarms on a CloudWatch Metrics Insights query that returns one aggregated time series
  (``SELECT FUNCTION(metricName) FROM SCHEMA(...) WHERE condition``), whose condition is
  evaluated on the latest 3 hours of data only (CloudWatch user guide, "Create a CloudWatch
  alarm based on a Metrics Insights query",
  https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/Create_Metrics_Insights_Alarm.html,
  and "Limits" of such alarms, https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/alarm-limits.html);
  the CloudFormation alarm takes the query as a ``Metrics`` entry's ``Expression``.
  SEARCH finds metrics that reported in the last two weeks (user guide, "Use search
  expressions in graphs").
- An alarm that notifies an SNS topic encrypted with a customer managed key needs the key
  policy to let ``cloudwatch.amazonaws.com`` use ``kms:Decrypt`` and ``kms:GenerateDataKey*``
  (CloudWatch user guide, "Using Amazon CloudWatch alarms", section on encrypted SNS topics);
  an AWS managed key (``alias/aws/sns``) cannot be used for that.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from aws_cdk import Duration, RemovalPolicy, Stack
from aws_cdk import aws_cloudwatch as cw
from aws_cdk import aws_cloudwatch_actions as cw_actions
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subs
from constructs import Construct

from trn_ultracluster.config import ObservabilityConfig
from trn_ultracluster.config.fsx_efa import EfaMode
from trn_ultracluster.constructs.pool_widgets import PoolView, pool_rows
from trn_ultracluster.constructs.team_widgets import TeamsView, team_rows
from trn_ultracluster.contracts.metrics import (
    NODE_DIMENSIONS,
    NODE_METRICS_NAMESPACE,
    NodeMetric,
    TrainingMetric,
)

__all__ = ["MetricSource", "Observability", "ObservabilityProps", "dashboard_url"]

GIB = 1024**3
GRAPH_PERIOD = Duration.minutes(5)
ERROR_PERIOD = Duration.minutes(5)
IDLE_PERIOD = Duration.hours(1)
FSX_PERIOD = Duration.minutes(5)
FSX_EVALUATION_PERIODS = 3
LUSTRE_EFA_PERIOD = Duration.hours(1)
LUSTRE_EFA_RANGE = "-P14D"
"""The Lustre-over-EFA widget: one point per node set-up (``NodeMetric.LUSTRE_OVER_EFA`` is
published once, when the node sets itself up), so hourly minimums over the two weeks in which
SEARCH still finds a node's metric, whatever the dashboard's range."""
LUSTRE_EFA_TITLE = "FSx for Lustre over EFA (per node: 1 = EFA, 0 = TCP)"
TOPIC_KEY_ACTIONS = ("kms:Decrypt", "kms:GenerateDataKey*")


@dataclass(frozen=True)
class MetricSource:
    """Where an orchestrator's node and training metrics are: what the stack's dashboard and
    alarms read (:class:`Observability`); each orchestrator gives one
    (:class:`~trn_ultracluster.orchestrators.base.Orchestrator`). The metric names are the
    same everywhere (:mod:`trn_ultracluster.contracts.metrics`).

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


@dataclass(frozen=True)
class ObservabilityProps:
    """What the dashboard and alarms watch.

    Attributes:
        metric_source: where the orchestrator's node and training metrics are; ``None``: a
            dashboard of the file system only, and no node alarms.
        file_system_id: the FSx for Lustre file system.
        fsx_capacity_gib: its storage capacity, GiB (the full alarm's reference).
        settings: the ``observability`` configuration section.
        fsx_efa_mode: what the nodes do about Lustre over EFA
            (:attr:`~trn_ultracluster.config.fsx_efa.FsxEfaPlan.mode`); other than ``off``,
            the dashboard shows each node's result and an alarm reports a fall back to TCP.
            Default ``off``.
        pools: the node pools (:class:`~trn_ultracluster.constructs.pool_widgets.PoolView`),
            main first; with more than one, the dashboard adds what tells them apart
            (:func:`~trn_ultracluster.constructs.pool_widgets.pool_rows`). Default: none (one
            pool: the dashboard as it always was).
        teams: the teams (:class:`~trn_ultracluster.constructs.team_widgets.TeamsView`):
            a row of their quotas and where their use is read. Default ``None``: no row.
    """

    metric_source: MetricSource | None
    file_system_id: str
    fsx_capacity_gib: int
    settings: ObservabilityConfig
    fsx_efa_mode: EfaMode = "off"
    pools: Sequence[PoolView] = ()
    teams: TeamsView | None = None


def dashboard_url(region: str, dashboard_name: str) -> str:
    """The CloudWatch console address of a dashboard."""
    return (f"https://{region}.console.aws.amazon.com/cloudwatch/home?region={region}"
            f"#dashboards/dashboard/{dashboard_name}")


class Observability(Construct):
    """Dashboard, alarms and alarm topic.

    - ``topic``: SNS topic, encrypted with its own KMS key (rotation on; the key policy lets
      CloudWatch alarms use it), publishing only over TLS; ``observability.alarm_email``
      subscribes an address. Both are deleted on ``cdk destroy`` (they hold no data).
    - Alarms, each notifying the topic: ``NeuronErrorsAlarm`` (the cluster's Neuron execution
      errors, Sum over 5 minutes, above 0), ``IdleAlarm`` (Trainium nodes up, as told by their
      ECC counter, while the cluster's average NeuronCore utilization, missing counted as 0,
      stays under ``idle_utilization_percent`` for ``idle_hours`` hours in a row),
      ``FsxFullAlarm`` (free capacity under ``100 - fsx_full_percent`` % of the file system
      for 15 minutes); with ``fsx_efa_mode`` other than ``off``, ``LustreOverEfaAlarm``
      (a node reported that its Lustre traffic goes over TCP: the minimum of
      ``node_fsx_lustre_over_efa`` over the cluster's nodes under 1 in 5 minutes, a Metrics
      Insights query, since SEARCH is not allowed in alarms). Missing data is not breaching:
      a cluster scaled to zero is quiet.
    - ``dashboard``: per node (one line each): NeuronCore utilization, device memory, EFA
      bytes received and sent; the cluster's Neuron errors and ECC events and its Trainium
      node count; FSx read and write throughput and free capacity; with ``fsx_efa_mode``
      other than ``off``, each node's Lustre over EFA (1) or TCP (0); the training
      program's tokens/s and MFU; with several node pools, what tells them apart
      (:mod:`~trn_ultracluster.constructs.pool_widgets`: per instance type on Container
      Insights, else a note that the node metrics are not per pool); with teams, each
      team's quota per pool and where its use is read
      (:mod:`~trn_ultracluster.constructs.team_widgets`); the alarms' states.
    - With ``metric_source.training_logs``: two metric filters turn the training program's
      JSON lines into ``TokensPerSecond`` and ``MFU``.

    Lustre over EFA is published by the node scripts on every orchestrator in
    :data:`~trn_ultracluster.contracts.metrics.NODE_METRICS_NAMESPACE` with
    :data:`~trn_ultracluster.contracts.metrics.NODE_DIMENSIONS`, also on EKS where the other
    node metrics are Container Insights'; the widget and the alarm select the nodes by the
    metric source's cluster dimensions (``ClusterName``: the HyperPod cluster name on
    HyperPod Slurm, the stack name on standalone nodes, the EKS cluster name on EKS and
    HyperPod on EKS), the value the node scripts must publish with.
    """

    def __init__(self, scope: Construct, construct_id: str, props: ObservabilityProps) -> None:
        super().__init__(scope, construct_id)
        self.props = props
        self.topic = self._topic()
        self.alarms: list[cw.Alarm] = [self._fsx_full_alarm()]
        source = props.metric_source
        if source is not None:
            if source.training_logs is not None:
                self._training_filters(source)
            self.alarms += [self._errors_alarm(source), self._idle_alarm(source)]
            if props.fsx_efa_mode != "off":
                self.alarms.append(self._lustre_efa_alarm(source))
        for alarm in self.alarms:
            alarm.add_alarm_action(cw_actions.SnsAction(self.topic))
        self.dashboard = cw.Dashboard(self, "Dashboard", default_interval=Duration.hours(6))
        self._widgets()

    @property
    def url(self) -> str:
        """The dashboard's console address (a token)."""
        return dashboard_url(Stack.of(self).region, self.dashboard.dashboard_name)

    # --- alarm topic -------------------------------------------------------------------------

    def _topic(self) -> sns.Topic:
        key = kms.Key(self, "TopicKey", enable_key_rotation=True,
                      removal_policy=RemovalPolicy.DESTROY, pending_window=Duration.days(7),
                      description="TrnUltraCluster: encrypts the alarm topic's messages")
        key.add_to_resource_policy(iam.PolicyStatement(
            sid="CloudWatchAlarmsOfThisAccount",
            principals=[iam.ServicePrincipal("cloudwatch.amazonaws.com")],
            actions=list(TOPIC_KEY_ACTIONS), resources=["*"],
            conditions={"StringEquals": {"aws:SourceAccount": Stack.of(self).account}}))
        topic = sns.Topic(self, "AlarmTopic", master_key=key, enforce_ssl=True,
                          display_name="TrnUltraCluster alarms")
        if self.props.settings.alarm_email is not None:
            topic.add_subscription(subs.EmailSubscription(self.props.settings.alarm_email))
        return topic

    # --- metrics -----------------------------------------------------------------------------

    @staticmethod
    def _per_node(source: MetricSource, metric: str, statistic: str, label: str,
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

    @classmethod
    def _lustre_efa_per_node(cls, source: MetricSource) -> cw.MathExpression:
        """Each node's ``node_fsx_lustre_over_efa``, in the stack's own namespace on every
        orchestrator (class doc)."""
        return cls._per_node(source, NodeMetric.LUSTRE_OVER_EFA, "Minimum", "",
                             LUSTRE_EFA_PERIOD, namespace=NODE_METRICS_NAMESPACE,
                             node_dimensions=NODE_DIMENSIONS)

    @staticmethod
    def _cluster(source: MetricSource, metric: str, statistic: str,
                 period: Duration = GRAPH_PERIOD, label: str | None = None) -> cw.Metric:
        return cw.Metric(namespace=source.namespace, metric_name=metric,
                         dimensions_map=dict(source.cluster_dimensions), statistic=statistic,
                         period=period, label=label)

    def _fsx(self, metric: str, period: Duration = GRAPH_PERIOD) -> cw.Metric:
        return cw.Metric(namespace="AWS/FSx", metric_name=metric, statistic="Sum", period=period,
                         dimensions_map={"FileSystemId": self.props.file_system_id})

    @staticmethod
    def _training(source: MetricSource, metric: str) -> cw.Metric:
        return cw.Metric(namespace=source.training_namespace, metric_name=metric,
                         statistic="Average", period=GRAPH_PERIOD)

    def _training_filters(self, source: MetricSource) -> None:
        """Metric filters on the jobs' log group: the training program's ``train`` lines."""
        sel = source.training_log_selector
        for metric, field in TrainingMetric.FIELDS.items():
            logs.MetricFilter(
                self, f"TrainingMetric-{metric}",
                log_group=source.training_logs,
                filter_pattern=logs.FilterPattern.literal(
                    f'{{ ({sel}.event = "{TrainingMetric.EVENT}") && ({sel}.{field} >= 0) }}'),
                metric_namespace=source.training_namespace, metric_name=metric,
                metric_value=f"{sel}.{field}")

    # --- alarms ------------------------------------------------------------------------------

    def _errors_alarm(self, source: MetricSource) -> cw.Alarm:
        return cw.Alarm(
            self, "NeuronErrorsAlarm",
            alarm_description=("Neuron execution errors on a Trainium node (generic, numerical, "
                               "transient, model, runtime or hardware). The dashboard's per-node "
                               "graphs show which node; HyperPod and EKS node health checks may "
                               "replace it."),
            metric=self._cluster(source, NodeMetric.EXECUTION_ERRORS, "Sum", ERROR_PERIOD),
            threshold=0, evaluation_periods=1,
            comparison_operator=cw.ComparisonOperator.GREATER_THAN_THRESHOLD,
            treat_missing_data=cw.TreatMissingData.NOT_BREACHING)

    def _idle_alarm(self, source: MetricSource) -> cw.Alarm:
        o = self.props.settings
        idle = cw.MathExpression(
            expression=f"IF(up > 0 AND FILL(util, 0) < {o.idle_utilization_percent:g}, 1, 0)",
            using_metrics={
                "up": self._cluster(source, NodeMetric.ECC_EVENTS, "SampleCount", IDLE_PERIOD),
                "util": self._cluster(source, NodeMetric.NEURONCORE_UTILIZATION, "Average",
                                      IDLE_PERIOD)},
            label="Trainium nodes up and idle (1) or not (0)", period=IDLE_PERIOD)
        return cw.Alarm(
            self, "IdleAlarm",
            alarm_description=(f"Trainium nodes have run {o.idle_hours} h at under "
                               f"{o.idle_utilization_percent:g} % NeuronCore utilization: scale "
                               "them to 0 (trn-ultracluster scale --nodes 0) if nothing is "
                               "meant to run."),
            metric=idle, threshold=1, evaluation_periods=o.idle_hours,
            datapoints_to_alarm=o.idle_hours,
            comparison_operator=cw.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            treat_missing_data=cw.TreatMissingData.NOT_BREACHING)

    def _lustre_efa_alarm(self, source: MetricSource) -> cw.Alarm:
        where = " AND ".join(f"{k} = '{v}'" for k, v in source.cluster_dimensions.items())
        query = cw.MathExpression(
            expression=(f"SELECT MIN({NodeMetric.LUSTRE_OVER_EFA}) FROM SCHEMA("
                        f"\"{NODE_METRICS_NAMESPACE}\", {', '.join(NODE_DIMENSIONS)}) "
                        f"WHERE {where}"),
            using_metrics={}, label="lowest node (1 = EFA, 0 = TCP)", period=ERROR_PERIOD)
        # The mode, not the setting: "preferred" is auto, or true past a node-count limit
        # (config/fsx_efa.py).
        mode = self.props.fsx_efa_mode
        return cw.Alarm(
            self, "LustreOverEfaAlarm",
            alarm_description=(
                f"A node's FSx for Lustre traffic went over TCP, not EFA (fsx.efa mode "
                f"{mode}). The dashboard's \"{LUSTRE_EFA_TITLE}\" widget shows which node; "
                "its set-up log says why and what the node did about it "
                "(node_scripts/lustre_efa.sh)."),
            metric=query, threshold=1, evaluation_periods=1,
            comparison_operator=cw.ComparisonOperator.LESS_THAN_THRESHOLD,
            treat_missing_data=cw.TreatMissingData.NOT_BREACHING)

    def _fsx_free_threshold_bytes(self) -> int:
        o, capacity = self.props.settings, self.props.fsx_capacity_gib * GIB
        return capacity * (100 - o.fsx_full_percent) // 100

    def _fsx_full_alarm(self) -> cw.Alarm:
        o = self.props.settings
        return cw.Alarm(
            self, "FsxFullAlarm",
            alarm_description=(f"FSx for Lustre {self.props.file_system_id} is more than "
                               f"{o.fsx_full_percent} % full: free space, or raise "
                               "fsx.storage_capacity_gib and deploy."),
            metric=self._fsx("FreeDataStorageCapacity", FSX_PERIOD),
            threshold=self._fsx_free_threshold_bytes(),
            evaluation_periods=FSX_EVALUATION_PERIODS,
            comparison_operator=cw.ComparisonOperator.LESS_THAN_THRESHOLD,
            treat_missing_data=cw.TreatMissingData.NOT_BREACHING)

    # --- dashboard ---------------------------------------------------------------------------

    def _widgets(self) -> None:
        source, width = self.props.metric_source, 12
        rows: list[list[cw.IWidget]] = []
        if source is not None:
            rows += [
                [cw.GraphWidget(title="NeuronCore utilization per node (%)", width=width,
                                left=[self._per_node(source, NodeMetric.NEURONCORE_UTILIZATION,
                                                     "Average", "")],
                                left_y_axis=cw.YAxisProps(min=0, max=100)),
                 cw.GraphWidget(title="Neuron device memory used per node (bytes)", width=width,
                                left=[self._per_node(source, NodeMetric.DEVICE_MEMORY_USED,
                                                     "Average", "")])],
                [cw.GraphWidget(title="EFA received per node (bytes/s)", width=width,
                                left=[self._per_node(source, NodeMetric.EFA_RX_BYTES,
                                                     "Average", "")]),
                 cw.GraphWidget(title="EFA sent per node (bytes/s)", width=width,
                                left=[self._per_node(source, NodeMetric.EFA_TX_BYTES,
                                                     "Average", "")])],
                [cw.GraphWidget(title="Neuron errors (cluster, count per 5 min)", width=width,
                                left=[self._cluster(source, NodeMetric.EXECUTION_ERRORS, "Sum",
                                                    label="execution errors"),
                                      self._cluster(source, NodeMetric.ECC_EVENTS, "Sum",
                                                    label="ECC events")]),
                 cw.GraphWidget(title="Trainium nodes reporting", width=width,
                                left=[self._node_count(source)],
                                left_y_axis=cw.YAxisProps(min=0))],
                [cw.GraphWidget(title="Training tokens/s (average over jobs)", width=width,
                                left=[self._training(source, TrainingMetric.TOKENS_PER_SECOND)]),
                 cw.GraphWidget(title="Training MFU (fraction of peak)", width=width,
                                left=[self._training(source, TrainingMetric.MFU)],
                                left_y_axis=cw.YAxisProps(min=0, max=1))],
            ]
            rows += pool_rows(self.props.pools, source.namespace,
                              dict(source.cluster_dimensions), width, GRAPH_PERIOD)
        else:
            rows.append([cw.TextWidget(
                width=2 * width, height=2,
                markdown="This orchestrator reports no node metrics yet: the file system and "
                         "the alarms are below.")])
        rows += team_rows(self.props.teams, width)
        read, write = self._fsx("DataReadBytes"), self._fsx("DataWriteBytes")
        rows.append([
            cw.GraphWidget(
                title="FSx for Lustre throughput (bytes/s)", width=width,
                left=[cw.MathExpression(expression="r / PERIOD(r)", using_metrics={"r": read},
                                        label="read", period=GRAPH_PERIOD),
                      cw.MathExpression(expression="w / PERIOD(w)", using_metrics={"w": write},
                                        label="write", period=GRAPH_PERIOD)]),
            cw.GraphWidget(
                title="FSx for Lustre free capacity (bytes)", width=width,
                left=[self._fsx("FreeDataStorageCapacity")],
                left_annotations=[cw.HorizontalAnnotation(
                    value=self._fsx_free_threshold_bytes(),
                    label=f"alarm: {self.props.settings.fsx_full_percent} % full")],
                left_y_axis=cw.YAxisProps(min=0)),
        ])
        if source is not None and self.props.fsx_efa_mode != "off":
            rows.append([cw.GraphWidget(
                title=LUSTRE_EFA_TITLE, width=2 * width, start=LUSTRE_EFA_RANGE,
                left=[self._lustre_efa_per_node(source)],
                left_y_axis=cw.YAxisProps(min=0, max=1))])
        rows.append([cw.AlarmStatusWidget(title="Alarms", width=2 * width, alarms=self.alarms)])
        for row in rows:
            self.dashboard.add_widgets(*row)

    def _node_count(self, source: MetricSource) -> cw.MathExpression:
        """Nodes with an ECC counter value in the period: each node's series made 1, summed.
        neuron-monitor reports the counter whether or not an application runs."""
        search = self._per_node(source, NodeMetric.ECC_EVENTS, "SampleCount", "")
        return cw.MathExpression(expression=f"SUM({search.expression} * 0 + 1)",
                                 using_metrics={}, label="nodes", period=GRAPH_PERIOD)
