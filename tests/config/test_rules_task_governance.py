"""Rules of ``teams`` on ``hyperpod-eks`` (HyperPod task governance): a node for the add-on,
at most 15 instance types, and the warning for a borrowing team without quota on a pool.
Each case is profiles/teams.yaml changed in one place."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import yaml

from tests.config import STYLE, errors, load
from tests.conftest import profile_path
from trn_ultracluster.config.rules.task_governance import task_governance

DOC = "see docs/teams.md"


def _teams_profile(tmp_path, change=None, orchestrator="hyperpod-eks") -> dict[str, str]:
    """Context keys of profiles/teams.yaml after ``change(data)``, on ``orchestrator``."""
    data = yaml.safe_load(profile_path("teams").read_text())
    if change is not None:
        change(data)
    path = tmp_path / "teams.yaml"
    path.write_text(yaml.safe_dump(data))
    return {"config": str(path), "orchestrator": orchestrator}


def _no_nodes(data):
    for pool in data["pools"]:
        pool["nodes"] = {"min": 0, "desired": 0, "max": 4}
    for team in data["teams"]:
        team["quota"] = {}


def test_the_profile_passes_on_hyperpod_eks(tmp_path):
    loaded = load(_teams_profile(tmp_path))
    assert [w for w in loaded.warnings if "teams" in str(w)] == []


def test_teams_need_a_node_for_the_add_on(tmp_path):
    message = ("error: pools[0].nodes.desired = 0: must be 1 or more on some pool with teams "
               "on hyperpod-eks: HyperPod task governance's EKS add-on installs only once a "
               "HyperPod node is in the cluster; give a pool nodes, or leave teams out "
               f"({DOC})")
    assert STYLE.match(message)
    assert message in errors(_teams_profile(tmp_path, _no_nodes))


def test_a_borrowing_team_without_quota_on_a_pool_is_warned(tmp_path):
    def no_cpu(data):
        del data["teams"][0]["quota"]["cpu"]  # research borrows

    warnings = [str(w) for w in load(_teams_profile(tmp_path, no_cpu)).warnings]
    assert ("warning: teams[0].quota.cpu = {'nodes': 0}: should be 1 node or more for team "
            "'research' to borrow on pool 'cpu' on hyperpod-eks: HyperPod task governance lets "
            "a team borrow a percentage of its own quota there (BorrowLimit), so with none it "
            f"borrows nothing ({DOC})") in warnings
    eks = [str(w) for w in load(_teams_profile(tmp_path, no_cpu, "eks")).warnings]
    assert not [w for w in eks if "BorrowLimit" in w]  # Kueue borrows without a quota


def test_at_most_15_instance_types():
    """Direct: 16 pools of 16 types (the other rules would object to such a cluster first)."""
    pools = [SimpleNamespace(name=f"p{i}", instance_type=f"m7i.{i}xlarge",
                             nodes=SimpleNamespace(desired=1),
                             key=lambda name: f"pools[0].{name}") for i in range(16)]
    config = SimpleNamespace(teams=["t"], orchestrator="hyperpod-eks", node_pools=pools,
                             team_list=(), pool=lambda n: next(p for p in pools if p.name == n))
    issues = [str(i) for i in task_governance(config)]
    assert len(issues) == 1 and issues[0].startswith("error: pools = [")
    assert "must hold at most 15 instance types" in issues[0]
    config.node_pools = pools[:15]
    assert list(task_governance(config)) == []


@pytest.mark.parametrize("orchestrator", ["eks", "hyperpod-slurm"])
def test_nothing_elsewhere(orchestrator):
    config = SimpleNamespace(teams=["t"], orchestrator=orchestrator)
    assert list(task_governance(config)) == []
