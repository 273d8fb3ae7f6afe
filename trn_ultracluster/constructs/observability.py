"""Observability: the stack's CloudWatch dashboard, its alarms and the encrypted SNS topic the
alarms notify, for whichever orchestrator runs the nodes.

The orchestrator says where its metrics are
(:class:`~trn_ultracluster.constructs.metric_source.MetricSource`: Container Insights on EKS,
the stack's node exporter elsewhere); the metric names are the same everywhere
(:mod:`trn_ultracluster.contracts.metrics`), so nothing here depends on which orchestrator it
is. Here: the alarm topic and the dashboard; the metrics they read are built in
:mod:`.metric_source`, the alarms in :mod:`.alarms`.

Built from aws-cdk-lib's ``aws_cloudwatch`` L2 constructs. cdk-monitoring-constructs (PyPI)
was considered: its monitors cover AWS services such as Lambda, API Gateway, DynamoDB or ECS
(its README's feature table), not Container Insights' Neuron/EFA metrics, our node exporter's
or FSx for Lustre, so it would add a dependency and a layer of its own for widgets we would
still write by hand.

Source of the AWS fact used here: an alarm that notifies an SNS topic encrypted with a
customer managed key needs the key policy to let ``cloudwatch.amazonaws.com`` use
``kms:Decrypt`` and ``kms:GenerateDataKey*`` (CloudWatch user guide, "Using Amazon
CloudWatch alarms", section on encrypted SNS topics); an AWS managed key (``alias/aws/sns``)
cannot be used for that.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from aws_cdk import Duration, RemovalPolicy, Stack
from aws_cdk import aws_cloudwatch as cw
from aws_cdk import aws_cloudwatch_actions as cw_actions
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subs
from constructs import Construct

from trn_ultracluster.config import ObservabilityConfig
from trn_ultracluster.config.fsx_efa import EfaMode
from trn_ultracluster.constructs.alarms import (
    errors_alarm,
    fsx_free_threshold_bytes,
    fsx_full_alarm,
    idle_alarm,
    lustre_efa_alarm,
)
from trn_ultracluster.constructs.metric_source import (
    GRAPH_PERIOD,
    LUSTRE_EFA_RANGE,
    LUSTRE_EFA_TITLE,
    MetricSource,
    cluster_metric,
    fsx_metric,
    lustre_efa_per_node,
    node_count,
    per_node,
    training_filters,
    training_metric,
)
from trn_ultracluster.constructs.pool_widgets import PoolView, pool_rows
from trn_ultracluster.constructs.team_widgets import TeamsView, team_rows
from trn_ultracluster.contracts.metrics import NodeMetric, TrainingMetric

__all__ = ["Observability", "ObservabilityProps", "dashboard_url"]

TOPIC_KEY_ACTIONS = ("kms:Decrypt", "kms:GenerateDataKey*")


@dataclass(frozen=True)
class ObservabilityProps:
    """What the dashboard and alarms watch.

    Attributes:
        metric_source: where the orchestrator's node and training metrics are
            (:class:`~trn_ultracluster.constructs.metric_source.MetricSource`); ``None``: a
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
        self.alarms: list[cw.Alarm] = [fsx_full_alarm(self, props.file_system_id,
                                                      props.fsx_capacity_gib, props.settings)]
        source = props.metric_source
        if source is not None:
            if source.training_logs is not None:
                training_filters(self, source)
            self.alarms += [errors_alarm(self, source), idle_alarm(self, source, props.settings)]
            if props.fsx_efa_mode != "off":
                self.alarms.append(lustre_efa_alarm(self, source, props.fsx_efa_mode))
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

    # --- dashboard ---------------------------------------------------------------------------

    def _widgets(self) -> None:
        source, width = self.props.metric_source, 12
        rows: list[list[cw.IWidget]] = []
        if source is not None:
            rows += [
                [cw.GraphWidget(title="NeuronCore utilization per node (%)", width=width,
                                left=[per_node(source, NodeMetric.NEURONCORE_UTILIZATION,
                                               "Average", "")],
                                left_y_axis=cw.YAxisProps(min=0, max=100)),
                 cw.GraphWidget(title="Neuron device memory used per node (bytes)", width=width,
                                left=[per_node(source, NodeMetric.DEVICE_MEMORY_USED,
                                               "Average", "")])],
                [cw.GraphWidget(title="EFA received per node (bytes/s)", width=width,
                                left=[per_node(source, NodeMetric.EFA_RX_BYTES, "Average", "")]),
                 cw.GraphWidget(title="EFA sent per node (bytes/s)", width=width,
                                left=[per_node(source, NodeMetric.EFA_TX_BYTES, "Average", "")])],
                [cw.GraphWidget(title="Neuron errors (cluster, count per 5 min)", width=width,
                                left=[cluster_metric(source, NodeMetric.EXECUTION_ERRORS,
                                                     "Sum", label="execution errors"),
                                      cluster_metric(source, NodeMetric.ECC_EVENTS, "Sum",
                                                     label="ECC events")]),
                 cw.GraphWidget(title="Trainium nodes reporting", width=width,
                                left=[node_count(source)],
                                left_y_axis=cw.YAxisProps(min=0))],
                [cw.GraphWidget(title="Training tokens/s (average over jobs)", width=width,
                                left=[training_metric(source,
                                                      TrainingMetric.TOKENS_PER_SECOND)]),
                 cw.GraphWidget(title="Training MFU (fraction of peak)", width=width,
                                left=[training_metric(source, TrainingMetric.MFU)],
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
        fs = self.props.file_system_id
        read, write = fsx_metric(fs, "DataReadBytes"), fsx_metric(fs, "DataWriteBytes")
        rows.append([
            cw.GraphWidget(
                title="FSx for Lustre throughput (bytes/s)", width=width,
                left=[cw.MathExpression(expression="r / PERIOD(r)", using_metrics={"r": read},
                                        label="read", period=GRAPH_PERIOD),
                      cw.MathExpression(expression="w / PERIOD(w)", using_metrics={"w": write},
                                        label="write", period=GRAPH_PERIOD)]),
            cw.GraphWidget(
                title="FSx for Lustre free capacity (bytes)", width=width,
                left=[fsx_metric(fs, "FreeDataStorageCapacity")],
                left_annotations=[cw.HorizontalAnnotation(
                    value=fsx_free_threshold_bytes(self.props.settings,
                                                   self.props.fsx_capacity_gib),
                    label=f"alarm: {self.props.settings.fsx_full_percent} % full")],
                left_y_axis=cw.YAxisProps(min=0)),
        ])
        if source is not None and self.props.fsx_efa_mode != "off":
            rows.append([cw.GraphWidget(
                title=LUSTRE_EFA_TITLE, width=2 * width, start=LUSTRE_EFA_RANGE,
                left=[lustre_efa_per_node(source)],
                left_y_axis=cw.YAxisProps(min=0, max=1))])
        rows.append([cw.AlarmStatusWidget(title="Alarms", width=2 * width, alarms=self.alarms)])
        for row in rows:
            self.dashboard.add_widgets(*row)
