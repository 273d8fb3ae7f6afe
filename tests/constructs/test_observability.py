"""Dashboard, alarms and alarm topic, for each orchestrator's metric source."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.conftest import Synth, profile_path
from trn_ultracluster.config.fsx_efa import plan_fsx_efa
from trn_ultracluster.constructs.observability import dashboard_url
from trn_ultracluster.contracts.metrics import NodeMetric

HYPERPOD = {"orchestrator": "hyperpod-slurm"}


def body(s) -> str:
    """The dashboard body with every token written as ``<Ref:...>``/``<Att:...>``."""
    (dash,) = s.resources("AWS::CloudWatch::Dashboard").values()
    parts = dash["Properties"]["DashboardBody"]["Fn::Join"][1]
    return "".join(p if isinstance(p, str) else (
        f"<Ref:{p['Ref']}>" if "Ref" in p else f"<Att:{p['Fn::GetAtt'][0]}>") for p in parts)


def widgets(s) -> dict[str, dict[str, Any]]:
    """Dashboard widgets by title (the alarm status widget too)."""
    text = body(s)
    return {w["properties"].get("title", ""): w for w in json.loads(text)["widgets"]}


def alarms(s) -> dict[str, dict[str, Any]]:
    return {k.removeprefix("Observability")[:-8]: r["Properties"]
            for k, r in s.resources("AWS::CloudWatch::Alarm").items()}


@pytest.fixture(scope="module")
def hyperpod(synth):
    return synth(**HYPERPOD)


def test_eks_dashboard_reads_container_insights_per_node(default):
    cluster = f"<Ref:{default.ref_id('EksCluster')}>"
    w = widgets(default)
    expected = {
        "NeuronCore utilization per node (%)": NodeMetric.NEURONCORE_UTILIZATION,
        "Neuron device memory used per node (bytes)": NodeMetric.DEVICE_MEMORY_USED,
        "EFA received per node (bytes/s)": NodeMetric.EFA_RX_BYTES,
        "EFA sent per node (bytes/s)": NodeMetric.EFA_TX_BYTES,
    }
    for title, metric in expected.items():
        (line,) = w[title]["properties"]["metrics"]
        assert line[0]["expression"] == (
            "SEARCH('{ContainerInsights,ClusterName,InstanceId,NodeName} "
            f"MetricName=\"{metric}\" ClusterName=\"{cluster}\"', 'Average', 300)")
    errors = w["Neuron errors (cluster, count per 5 min)"]["properties"]["metrics"]
    assert [m[:4] for m in errors] == [
        ["ContainerInsights", NodeMetric.EXECUTION_ERRORS, "ClusterName", cluster],
        ["ContainerInsights", NodeMetric.ECC_EVENTS, "ClusterName", cluster]]
    (count,) = w["Trainium nodes reporting"]["properties"]["metrics"]
    assert count[0]["expression"].startswith("SUM(SEARCH('{ContainerInsights,ClusterName,")
    assert f"MetricName=\"{NodeMetric.ECC_EVENTS}\"" in count[0]["expression"]


def test_training_metrics_come_from_filters_on_eks_and_from_the_nodes_on_hyperpod(default,
                                                                                  hyperpod):
    cluster = f"<Ref:{default.ref_id('EksCluster')}>"
    w = widgets(default)
    (tokens,) = w["Training tokens/s (average over jobs)"]["properties"]["metrics"]
    assert tokens[:2] == [f"TrnUltraCluster/Training/{cluster}", "TokensPerSecond"]
    (mfu,) = w["Training MFU (fraction of peak)"]["properties"]["metrics"]
    assert mfu[:2] == [f"TrnUltraCluster/Training/{cluster}", "MFU"]
    filters = {r["Properties"]["MetricTransformations"][0]["MetricName"]: r["Properties"]
               for r in default.resources("AWS::Logs::MetricFilter").values()}
    assert set(filters) == {"TokensPerSecond", "MFU"}
    tokens_filter = filters["TokensPerSecond"]
    assert tokens_filter["FilterPattern"] == (
        '{ ($.log_processed.event = "train") && ($.log_processed.tokens_per_s >= 0) }')
    assert tokens_filter["MetricTransformations"][0]["MetricValue"] == "$.log_processed.tokens_per_s"
    group = default.template["Resources"][tokens_filter["LogGroupName"]["Ref"]]["Properties"]
    assert group["LogGroupName"]["Fn::Join"][1][-1] == "/application"
    # HyperPod: the controller publishes them; no filters, the namespace names the cluster
    assert not hyperpod.resources("AWS::Logs::MetricFilter")
    (tokens,) = widgets(hyperpod)["Training tokens/s (average over jobs)"]["properties"]["metrics"]
    assert tokens[:2] == ["TrnUltraCluster/Training/trn-ultracluster", "TokensPerSecond"]


def test_hyperpod_dashboard_reads_the_node_exporter(hyperpod):
    (line,) = widgets(hyperpod)["NeuronCore utilization per node (%)"]["properties"]["metrics"]
    assert line[0]["expression"] == (
        "SEARCH('{TrnUltraCluster/Neuron,ClusterName,InstanceId,NodeName} "
        "MetricName=\"node_neuroncore_utilization\" ClusterName=\"trn-ultracluster\"', "
        "'Average', 300)")
    assert alarms(hyperpod)["NeuronErrorsAlarm"]["Namespace"] == "TrnUltraCluster/Neuron"


def test_fsx_widgets_and_alarm(default):
    fs = {"Ref": default.ref_id("StorageFileSystem")}
    w = widgets(default)
    throughput = w["FSx for Lustre throughput (bytes/s)"]["properties"]["metrics"]
    expressions = [m[0]["expression"] for m in throughput if isinstance(m[0], dict)]
    assert len(expressions) == 2 and all("/ PERIOD(" in e for e in expressions)
    names = {m[1] for m in throughput if m[0] == "AWS/FSx"}
    assert names == {"DataReadBytes", "DataWriteBytes"}
    free = w["FSx for Lustre free capacity (bytes)"]["properties"]
    assert free["metrics"][0][:3] == ["AWS/FSx", "FreeDataStorageCapacity", "FileSystemId"]
    full = alarms(default)["FsxFullAlarm"]
    assert (full["Namespace"], full["MetricName"], full["Statistic"]) == (
        "AWS/FSx", "FreeDataStorageCapacity", "Sum")
    assert full["Dimensions"] == [{"Name": "FileSystemId", "Value": fs}]
    assert full["ComparisonOperator"] == "LessThanThreshold"
    assert full["Threshold"] == 1200 * 1024**3 * 10 // 100  # 90 % full of 1200 GiB
    assert free["annotations"]["horizontal"][0]["value"] == full["Threshold"]


def test_fsx_threshold_follows_the_configuration(synth):
    s = synth(**{"observability.fsx_full_percent": 80, "fsx.storage_capacity_gib": 2400})
    assert alarms(s)["FsxFullAlarm"]["Threshold"] == 2400 * 1024**3 * 20 // 100


def test_errors_and_idle_alarms(default):
    cluster = {"Ref": default.ref_id("EksCluster")}
    a = alarms(default)
    errors = a["NeuronErrorsAlarm"]
    assert (errors["Namespace"], errors["MetricName"], errors["Statistic"], errors["Period"]) == (
        "ContainerInsights", NodeMetric.EXECUTION_ERRORS, "Sum", 300)
    assert errors["Dimensions"] == [{"Name": "ClusterName", "Value": cluster}]
    assert (errors["Threshold"], errors["ComparisonOperator"]) == (0, "GreaterThanThreshold")
    idle = a["IdleAlarm"]
    assert (idle["EvaluationPeriods"], idle["DatapointsToAlarm"]) == (4, 4)
    (expr,) = [m for m in idle["Metrics"] if "Expression" in m]
    assert expr["Expression"] == "IF(up > 0 AND FILL(util, 0) < 1, 1, 0)"
    stats = {m["Id"]: m["MetricStat"] for m in idle["Metrics"] if "MetricStat" in m}
    assert (stats["up"]["Metric"]["MetricName"], stats["up"]["Stat"]) == (
        NodeMetric.ECC_EVENTS, "SampleCount")
    assert (stats["util"]["Metric"]["MetricName"], stats["util"]["Stat"]) == (
        NodeMetric.NEURONCORE_UTILIZATION, "Average")
    assert stats["util"]["Period"] == 3600
    for alarm in a.values():
        assert alarm["TreatMissingData"] == "notBreaching"
        assert alarm["AlarmActions"] == [{"Ref": default.ref_id("ObservabilityAlarmTopic")}]
    (status,) = [w for w in widgets(default).values() if w["type"] == "alarm"]
    assert len(status["properties"]["alarms"]) == 3


def test_idle_alarm_follows_the_configuration(synth):
    s = synth(**{"observability.idle_hours": 8, "observability.idle_utilization_percent": 5})
    idle = alarms(s)["IdleAlarm"]
    assert (idle["EvaluationPeriods"], idle["DatapointsToAlarm"]) == (8, 8)
    assert any(m.get("Expression") == "IF(up > 0 AND FILL(util, 0) < 5, 1, 0)"
               for m in idle["Metrics"])


def test_topic_is_encrypted_tls_only_and_cloudwatch_may_use_its_key(default):
    topic = default.logical("ObservabilityAlarmTopic")["Properties"]
    key_id = default.ref_id("ObservabilityTopicKey")
    assert topic["KmsMasterKeyId"] == {"Fn::GetAtt": [key_id, "Arn"]}
    key = default.template["Resources"][key_id]
    assert key["Properties"]["EnableKeyRotation"] is True
    assert key["DeletionPolicy"] == "Delete"  # holds no data
    statements = key["Properties"]["KeyPolicy"]["Statement"]
    (cw,) = [s for s in statements if s.get("Sid") == "CloudWatchAlarmsOfThisAccount"]
    assert cw["Principal"] == {"Service": "cloudwatch.amazonaws.com"}
    assert set(cw["Action"]) == {"kms:Decrypt", "kms:GenerateDataKey*"}
    (policy,) = default.resources("AWS::SNS::TopicPolicy").values()
    (deny,) = policy["Properties"]["PolicyDocument"]["Statement"]
    assert deny["Effect"] == "Deny" and deny["Condition"] == {
        "Bool": {"aws:SecureTransport": "false"}}
    assert not default.resources("AWS::SNS::Subscription")


def test_alarm_email_subscribes(synth):
    s = synth(**{"observability.alarm_email": "ml-team@example.com"})
    (sub,) = s.resources("AWS::SNS::Subscription").values()
    assert (sub["Properties"]["Protocol"], sub["Properties"]["Endpoint"]) == (
        "email", "ml-team@example.com")


def test_outputs_link_dashboard_and_topic(default):
    url = default.output("DashboardUrl")["Fn::Join"][1]
    assert url[0].startswith("https://") and {"Ref": default.ref_id("ObservabilityDashboard")} in url
    assert default.output("AlarmTopicArn") == {"Ref": default.ref_id("ObservabilityAlarmTopic")}
    assert dashboard_url("us-west-2", "d") == (
        "https://us-west-2.console.aws.amazon.com/cloudwatch/home?region=us-west-2"
        "#dashboards/dashboard/d")


@pytest.mark.parametrize("profile", ["dev", "ultracluster-16", "trn2"])
def test_every_profile_has_dashboard_and_three_alarms(synth, profile):
    s = synth(profile_path(profile))
    assert len(s.resources("AWS::CloudWatch::Dashboard")) == 1
    assert set(alarms(s)) == {"FsxFullAlarm", "NeuronErrorsAlarm", "IdleAlarm"}


# --- FSx for Lustre over EFA -------------------------------------------------------------------

LUSTRE_EFA = "FSx for Lustre over EFA (per node: 1 = EFA, 0 = TCP)"


def test_lustre_over_efa_widget_and_alarm_when_efa_is_on(fsx_efa):
    """Per node, the stack's own namespace (the metric is published once per node set-up, so
    hourly minimums over the two weeks SEARCH looks back); the alarm is a Metrics Insights
    query, because SEARCH is not allowed in alarms (CloudWatch user guide, "Create a
    CloudWatch alarm based on a Metrics Insights query": ``SELECT FUNCTION(metricName) FROM
    SCHEMA(...) WHERE condition`` for one aggregated series)."""
    graph = widgets(fsx_efa)[LUSTRE_EFA]["properties"]
    (line,) = graph["metrics"]
    assert line[0]["expression"] == (
        "SEARCH('{TrnUltraCluster/Neuron,ClusterName,InstanceId,NodeName} "
        f"MetricName=\"{NodeMetric.LUSTRE_OVER_EFA}\" ClusterName=\"trn-ultracluster\"', "
        "'Minimum', 3600)")
    assert graph["start"] == "-P14D" and graph["yAxis"]["left"] == {"min": 0, "max": 1}
    a = alarms(fsx_efa)
    assert set(a) == {"FsxFullAlarm", "NeuronErrorsAlarm", "IdleAlarm", "LustreOverEfaAlarm"}
    fallback = a["LustreOverEfaAlarm"]
    (query,) = fallback["Metrics"]
    assert query["Expression"] == (
        f"SELECT MIN({NodeMetric.LUSTRE_OVER_EFA}) FROM SCHEMA(\"TrnUltraCluster/Neuron\", "
        "ClusterName, InstanceId, NodeName) WHERE ClusterName = 'trn-ultracluster'")
    assert query["Period"] == 300 and query["ReturnData"] is True
    assert (fallback["Threshold"], fallback["ComparisonOperator"]) == (1, "LessThanThreshold")
    assert fallback["TreatMissingData"] == "notBreaching"
    assert fallback["AlarmActions"] == [{"Ref": fsx_efa.ref_id("ObservabilityAlarmTopic")}]
    assert "(fsx.efa mode required)" in fallback["AlarmDescription"]
    assert LUSTRE_EFA in fallback["AlarmDescription"]
    (status,) = [w for w in widgets(fsx_efa).values() if w["type"] == "alarm"]
    assert len(status["properties"]["alarms"]) == 4


def test_no_lustre_over_efa_widget_or_alarm_without_efa(default, hyperpod):
    for s in (default, hyperpod):
        assert plan_fsx_efa(s.config).mode == "off"
        assert LUSTRE_EFA not in widgets(s)
        assert "LustreOverEfaAlarm" not in alarms(s)
        assert NodeMetric.LUSTRE_OVER_EFA not in json.dumps(s.template)


def test_lustre_over_efa_is_read_from_the_stacks_namespace_on_eks_too():
    """On EKS the other node metrics are Container Insights', but the node scripts publish
    this one in TrnUltraCluster/Neuron, with the EKS cluster's name as ClusterName."""
    import aws_cdk as cdk

    from trn_ultracluster.config.model import ObservabilityConfig
    from trn_ultracluster.constructs.metric_source import MetricSource
    from trn_ultracluster.constructs.observability import Observability, ObservabilityProps
    from trn_ultracluster.contracts.metrics import NODE_DIMENSIONS

    stack = cdk.Stack(cdk.App(), "S")
    source = MetricSource(namespace="ContainerInsights", cluster_dimensions={"ClusterName": "k"},
                          node_dimensions=NODE_DIMENSIONS, training_namespace="T/k")
    o = Observability(stack, "Observability", ObservabilityProps(
        metric_source=source, file_system_id="fs-1", fsx_capacity_gib=1200,
        settings=ObservabilityConfig(), fsx_efa_mode="preferred"))
    s = Synth(cdk.assertions.Template.from_stack(stack).to_json(), None, stack, None, ())
    (line,) = widgets(s)[LUSTRE_EFA]["properties"]["metrics"]
    assert line[0]["expression"].startswith(
        "SEARCH('{TrnUltraCluster/Neuron,ClusterName,InstanceId,NodeName} "
        f"MetricName=\"{NodeMetric.LUSTRE_OVER_EFA}\" ClusterName=\"k\"'")
    alarm = alarms(s)["LustreOverEfaAlarm"]
    assert alarm["Metrics"][0]["Expression"].endswith("WHERE ClusterName = 'k'")
    assert "(fsx.efa mode preferred)" in alarm["AlarmDescription"]
    assert len(o.alarms) == 4


# --- several node pools ------------------------------------------------------------------

def _dashboard(namespace, pools):
    """The dashboard widgets of an Observability of ``pools`` on ``namespace``'s metrics."""
    import aws_cdk as cdk

    from trn_ultracluster.config.model import ObservabilityConfig
    from trn_ultracluster.constructs.metric_source import MetricSource
    from trn_ultracluster.constructs.observability import Observability, ObservabilityProps
    from trn_ultracluster.contracts.metrics import NODE_DIMENSIONS

    stack = cdk.Stack(cdk.App(), "S")
    source = MetricSource(namespace=namespace, cluster_dimensions={"ClusterName": "k"},
                          node_dimensions=NODE_DIMENSIONS, training_namespace="T/k")
    Observability(stack, "Observability", ObservabilityProps(
        metric_source=source, file_system_id="fs-1", fsx_capacity_gib=1200,
        settings=ObservabilityConfig(), pools=pools))
    s = Synth(cdk.assertions.Template.from_stack(stack).to_json(), None, stack, None, ())
    return json.loads(body(s))["widgets"]



def _mixed():
    from trn_ultracluster.constructs.pool_widgets import PoolView

    return [PoolView("trn1", "trn1.32xlarge", True), PoolView("dev", "trn1.32xlarge", True),
            PoolView("trn2", "trn2.48xlarge", True), PoolView("cpu", "m7i.8xlarge", False)]


def test_container_insights_pools_get_a_line_per_instance_type():
    """The per-core and per-interface sets carry InstanceType: one AVG / SUM per type, two
    pools of one type on one line; the CPU pool has no Neuron or EFA metric."""
    widgets = {w["properties"].get("title", ""): w for w in _dashboard("ContainerInsights",
                                                                        _mixed())}
    util = widgets["NeuronCore utilization per instance type (%)"]["properties"]["metrics"]
    assert [m[0]["label"] for m in util] == ["trn1.32xlarge (pools trn1, dev)",
                                             "trn2.48xlarge (pool trn2)"]
    assert util[1][0]["expression"] == (
        "AVG(SEARCH('{ContainerInsights,ClusterName,InstanceType,InstanceId,NodeName,"
        "NeuronDevice,NeuronCore} MetricName=\"node_neuroncore_utilization\" ClusterName=\"k\" "
        "InstanceType=\"trn2.48xlarge\"', 'Average', 300))")
    (rx, _) = widgets["EFA received per instance type (bytes/s)"]["properties"]["metrics"]
    assert rx[0]["expression"].startswith(
        "SUM(SEARCH('{ContainerInsights,ClusterName,NodeName,InstanceId,InstanceType,"
        "NetworkInterfaceId} MetricName=\"node_efa_rx_bytes\" ClusterName=\"k\" "
        "InstanceType=\"trn1.32xlarge\"'")
    assert "EFA sent per instance type (bytes/s)" in widgets
    notes = [w["properties"]["markdown"] for w in widgets.values() if w["type"] == "text"]
    assert any("CPU pool cpu: no Neuron or EFA metrics." in n for n in notes)


def test_the_node_exporters_pools_get_a_note_not_graphs():
    widgets = _dashboard("TrnUltraCluster/Neuron", _mixed())
    titles = [w["properties"].get("title", "") for w in widgets]
    assert not any("per instance type" in t for t in titles)
    (note,) = [w["properties"]["markdown"] for w in widgets if w["type"] == "text"]
    assert note.startswith("Pools: trn1 (trn1.32xlarge), dev (trn1.32xlarge), trn2 "
                           "(trn2.48xlarge), cpu (m7i.8xlarge). This orchestrator's node "
                           "metrics carry no pool or instance type dimension")


def test_one_pool_keeps_the_dashboard_as_it_was():
    from trn_ultracluster.constructs.pool_widgets import PoolView

    one = [PoolView("trainium", "trn1.32xlarge", True)]
    assert _dashboard("ContainerInsights", one) == _dashboard("ContainerInsights", [])
