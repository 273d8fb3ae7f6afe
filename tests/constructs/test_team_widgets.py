"""The dashboard's teams row: only with ``teams``, each team's quota per pool in the units the
configuration resolves, and where each scheduler's records of a team's use are read; the
claim that no per-team metric reaches CloudWatch holds for the add-on configuration the stack
writes."""

from __future__ import annotations

import json

import pytest

from tests.config import load
from tests.constructs.test_observability import body
from tests.conftest import profile_path
from trn_ultracluster.constructs.team_widgets import RECORDS, TeamsView, team_rows

TEAMS = profile_path("teams")


def view(orchestrator: str, **overrides) -> TeamsView:
    config = load({"config": str(TEAMS), "orchestrator": orchestrator, **overrides}).config
    return TeamsView(orchestrator, config.team_list)


def markdown(v: TeamsView) -> str:
    """The markdown of the row's one text widget (two graphs of 12 wide)."""
    ((widget,),) = team_rows(v, 12)
    (rendered,) = widget.to_json()
    assert rendered["type"] == "text" and rendered["width"] == 24
    return rendered["properties"]["markdown"]


@pytest.mark.parametrize("orchestrator, enforcer, directly", [
    ("eks", "Kueue", "`kubectl get workloads -n <namespace>`"),
    ("hyperpod-eks", "HyperPod task governance (Kueue)", "`kubectl get workloads -n <namespace>`"),
    ("hyperpod-slurm", "Slurm accounting", "`sacct --accounts <account>`"),
])
def test_the_row_lists_each_teams_quota_and_where_its_use_is(orchestrator, enforcer, directly):
    text = markdown(view(orchestrator))
    lines = text.splitlines()
    assert lines[0] == f"## Teams (quotas enforced by {enforcer})"
    assert lines[2:6] == [
        "| team | trn1 quota | cpu quota | borrow | lend | priority |",
        "|---|---|---|---|---|---|",
        "| research (default) | 2 nodes (64 NeuronCores) | 1 node | yes | yes | experiment |",
        "| platform | 1 node (32 NeuronCores) | 1 node | no | no | training |"]
    assert "`trn-ultracluster usage`" in lines[7] and "`trn-ultracluster status`" in lines[7]
    assert directly in lines[7]
    assert "CloudWatch gets no per-team metric here" in lines[7]


def test_a_quota_of_no_whole_node_shows_its_neuron_cores_and_chips():
    v = view("eks", teams=[{"name": "alpha", "quota": {"trn1": {"neuron_cores": 48}}},
                           {"name": "beta"}])
    rows = markdown(v).splitlines()[4:6]
    assert rows == ["| alpha | 48 NeuronCores (24 chips) | - | yes | yes | experiment |",
                    "| beta | - | - | yes | yes | experiment |"]


def test_no_teams_no_row():
    assert team_rows(None, 12) == []
    assert team_rows(TeamsView("eks", ()), 12) == []


def test_every_orchestrator_with_teams_has_records_and_standalone_none():
    assert sorted(RECORDS) == ["eks", "hyperpod-eks", "hyperpod-slurm"]
    with pytest.raises(KeyError):
        team_rows(TeamsView("standalone", view("eks").teams), 12)


@pytest.fixture(scope="module")
def teams_eks(synth):
    return synth(TEAMS)


def test_the_stack_adds_the_row_with_teams(teams_eks, default):
    texts = [w["properties"]["markdown"] for w in json.loads(body(teams_eks))["widgets"]
             if w["type"] == "text"]
    assert sum(t.startswith("## Teams (quotas enforced by Kueue)") for t in texts) == 1
    assert not any("## Teams" in w.get("properties", {}).get("markdown", "")
                   for w in json.loads(body(default))["widgets"])


def test_no_kueue_metric_reaches_cloudwatch_in_this_stack(teams_eks):
    """The row says the CloudWatch Observability add-on leaves ``kueue_container_insights``
    off: its configuration is the tolerations only. Turning it on (an ``agent`` key) must
    change the row's words (team_widgets ``_KUEUE_NO_METRIC``)."""
    (addon,) = [r["Properties"] for r in teams_eks.resources("AWS::EKS::Addon").values()
                if r["Properties"]["AddonName"] == "amazon-cloudwatch-observability"]
    configuration = json.loads(addon["ConfigurationValues"])
    assert list(configuration) == ["tolerations"]
    assert "kueue" not in addon["ConfigurationValues"]
