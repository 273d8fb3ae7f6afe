"""The ``Teams`` output: :meth:`TeamsInfo.to_json` (what the stack writes and ``teams --json``
prints) and :func:`parse_teams` / :meth:`TeamsInfo.from_json` (what the job CLI reads) are one
shape; a value of another shape is a clean error; the team and class a job runs as."""

from __future__ import annotations

import json
from types import SimpleNamespace as NS

import pytest

from trn_ultracluster.contracts.teams import (
    PriorityClassInfo,
    TeamError,
    TeamInfo,
    TeamQuotaInfo,
    TeamsInfo,
    parse_teams,
    teams_info,
)

RESEARCH = TeamInfo("research", True, "experiment", True, True,
                    (TeamQuotaInfo("trn1", 2, 64, 32), TeamQuotaInfo("cpu", 1, 0, 0)),
                    namespace="research", queue="research-queue", cluster_queue="research-cq")
PLATFORM = TeamInfo("platform", False, "training", False, False,
                    (TeamQuotaInfo("trn1", None, 48, 24),), account="platform")
INFO = TeamsInfo((RESEARCH, PLATFORM),
                 (PriorityClassInfo("training", 100, "trn-training"),
                  PriorityClassInfo("experiment", 10)), "lower-priority")


def test_to_json_and_parse_teams_are_inverse():
    text = json.dumps(INFO.to_json())
    assert parse_teams(text) == INFO
    assert TeamsInfo.from_json(json.loads(text)) == INFO
    written = json.loads(text)
    assert written["teams"][1]["quotas"] == [
        {"pool": "trn1", "nodes": None, "neuron_cores": 48, "neuron_devices": 24}]
    assert written["priority_classes"][0] == {"name": "training", "weight": 100,
                                              "scheduler_name": "trn-training"}


def test_the_reader_orders_classes_highest_first_and_fills_optional_keys():
    data = {"teams": [{"name": "a", "default": False, "priority": "low", "borrow": True,
                       "lend": True}],
            "priority_classes": [{"name": "low", "weight": 1}, {"name": "high", "weight": 9}]}
    info = TeamsInfo.from_json(data)
    assert [p.name for p in info.priority_classes] == ["high", "low"]
    assert info.preemption == "never"
    team = info.teams[0]
    assert (team.quotas, team.account, team.namespace, team.queue, team.cluster_queue) == (
        (), "", "", "", "")
    assert info.priority_classes[1].scheduled_as == "low"
    assert INFO.priority_classes[0].scheduled_as == "trn-training"


def test_no_output_is_no_teams():
    info = parse_teams(None)
    assert not info and info.teams == () and info.to_json() == {
        "teams": [], "priority_classes": [], "preemption": "never"}


@pytest.mark.parametrize("text, why", [
    ("not json", "Expecting value"),
    ("[]", "not an object"),
    ('{"priority_classes": []}', "'teams'"),
    ('{"teams": [{"name": "a"}]}', "'default'"),
    ('{"teams": [], "priority_classes": [{"name": "x", "weight": "high"}]}', "invalid literal"),
])
def test_a_value_of_another_shape_is_a_clean_error(text, why):
    with pytest.raises(ValueError) as err:
        parse_teams(text)
    assert str(err.value).startswith("the stack output Teams is not the teams' JSON (")
    assert why in str(err.value)


def test_teams_info_merges_what_the_orchestrator_adds():
    teams = [NS(name="a", default=True, priority="low", borrow=True, lend=False,
                quotas=[NS(pool="trn1", nodes=1, neuron_cores=32, neuron_devices=16)])]
    classes = [NS(name="low", weight=1), NS(name="high", weight=90)]
    info = teams_info(teams, classes, "never", {"a": {"account": "a-acct"}}, {"high": "qos-high"})
    assert info.teams == (TeamInfo("a", True, "low", True, False,
                                   (TeamQuotaInfo("trn1", 1, 32, 16),), account="a-acct"),)
    assert info.priority_classes == (PriorityClassInfo("high", 90, "qos-high"),
                                     PriorityClassInfo("low", 1, ""))
    assert info.preemption == "never"


def test_the_team_a_job_runs_as():
    assert INFO.team(None) is RESEARCH
    assert INFO.team("platform") is PLATFORM
    assert RESEARCH.quota("cpu") == TeamQuotaInfo("cpu", 1, 0, 0)
    assert RESEARCH.quota("gpu") is None
    with pytest.raises(TeamError, match=r"^--team 'x' names no team of this stack; its teams: "
                                        r"research \(default\), platform$"):
        INFO.team("x")
    no_default = TeamsInfo((PLATFORM, TeamInfo("b", False, "training", True, True)))
    with pytest.raises(TeamError, match=r"^this stack has 2 teams and none is the default: "
                                        r"choose one with --team NAME; its teams: platform, b$"):
        no_default.team(None)
    with pytest.raises(TeamError, match="this stack has no teams"):
        TeamsInfo().team("x")


def test_the_class_a_job_runs_at():
    assert INFO.priority(None, RESEARCH).name == "experiment"
    assert INFO.priority("training", RESEARCH).scheduled_as == "trn-training"
    with pytest.raises(TeamError, match=r"^--priority 'urgent' names no priority class of this "
                                        r"stack; its classes \(weight, higher first\): "
                                        r"training \(100\), experiment \(10\)$"):
        INFO.priority("urgent", PLATFORM)
