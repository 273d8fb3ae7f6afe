"""Stack outputs of a cluster with teams (``profiles/teams.yaml``: pools trn1 and cpu, teams
research and platform), written by the stack's own writer (``contracts.teams.teams_info`` of
``ClusterConfig.team_list``), and a job backend whose scheduler answers ``usage`` and
``status`` with made-up records (the scheduler branches test their own)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.cli.helpers import write_outputs
from tests.cli.pool_helpers import mixed_outputs
from tests.config import load
from trn_ultracluster.cli.backends import BACKENDS
from trn_ultracluster.contracts.teams import TeamsInfo, teams_info

TEAMS_POOLS = (("trn1", "trn1.32xlarge", (0, 3, 4), "xla"),
               ("cpu", "m7i.8xlarge", (0, 2, 2), ""))
"""The pools of ``profiles/teams.yaml`` (name, type, nodes, Neuron stack)."""


def places(orchestrator: str, team: str) -> dict[str, str]:
    """Where an orchestrator puts a team's jobs (its ``team_details``), as made-up values of
    the documented keys (``TeamInfo``: account, namespace, queue, cluster_queue)."""
    if orchestrator == "hyperpod-slurm":
        return {"account": team}
    return {"namespace": team, "queue": f"{team}-queue", "cluster_queue": f"{team}-cq"}


def teams_of(orchestrator: str = "hyperpod-slurm", **overrides: Any) -> TeamsInfo:
    """The ``Teams`` output of ``profiles/teams.yaml`` (with ``-c`` style ``overrides``) on
    ``orchestrator``, as the stack writes it (``TrnUltraClusterStack._teams_output``)."""
    config = load({"config": "profiles/teams.yaml", "orchestrator": orchestrator,
                   **overrides}).config
    return teams_info(config.team_list, config.scheduling.priority_classes,
                      config.scheduling.preemption,
                      {t.name: places(orchestrator, t.name) for t in config.team_list})


def teams_file(tmp_path: Path, orchestrator: str = "hyperpod-slurm",
               teams: TeamsInfo | None = None, pools=TEAMS_POOLS, **values: str | None) -> str:
    """An outputs file of a stack of ``pools`` with the ``Teams`` output of ``teams`` (default:
    :func:`teams_of` ``orchestrator``; an empty one: no ``Teams`` output) and ``values``."""
    info = teams_of(orchestrator) if teams is None else teams
    out: dict[str, Any] = mixed_outputs(orchestrator, pools)
    if info:
        out["Teams"] = json.dumps(info.to_json())
    out.update(values)
    return str(write_outputs(tmp_path, out))


class FakeScheduler:
    """What the fake scheduler answers and what it was asked.

    Attributes:
        records: ``UsageRecord`` s ``usage`` returns.
        status_lines: lines ``team_status`` returns.
        calls: ``(method, args...)`` of each call.
    """

    def __init__(self) -> None:
        self.records: list[Any] = []
        self.status_lines = ["research: trn1 1/2 nodes", "platform: trn1 0/1 nodes"]
        self.calls: list[tuple[Any, ...]] = []


@pytest.fixture
def scheduler(monkeypatch) -> FakeScheduler:
    """Every backend's ``usage``, ``team_status`` and ``status`` answered by a
    :class:`FakeScheduler` (no cluster reached)."""
    fake = FakeScheduler()

    def usage(self, period, teams):
        fake.calls.append(("usage", period, teams))
        return list(fake.records)

    def team_status(self, teams):
        fake.calls.append(("team_status", teams))
        return list(fake.status_lines)

    def status(self, job, pool=None):
        fake.calls.append(("status", job))
        return ["JOB  STATE"]

    for backend in BACKENDS.values():
        monkeypatch.setattr(backend, "usage", usage)
        monkeypatch.setattr(backend, "team_status", team_status)
        monkeypatch.setattr(backend, "status", status)
    return fake
