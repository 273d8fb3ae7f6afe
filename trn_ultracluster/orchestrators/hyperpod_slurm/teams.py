"""Teams on the HyperPod Slurm orchestrator: the ``slurm_teams.json`` the stack puts in the
lifecycle bucket (only with ``teams``) for ``scripts/slurm_teams.py``, which the controller's
lifecycle script runs, and what the ``Teams`` output says of each team.

Accounting database. HyperPod deploys MariaDB and slurmdbd on the controller itself: "By
default, SageMaker HyperPod deploys MariaDB on your cluster's controller instance, so
accounting works with no database for you to manage" (SageMaker developer guide, "Using an
external accounting database with SageMaker HyperPod Slurm clusters",
https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-external-accounting-db-slurm.html).
The stack uses it, as AWS's base-config lifecycle scripts do on clusters they configure
(aws-samples/awsome-distributed-training ``1.architectures/5.sagemaker-hyperpod/
LifecycleScripts/base-config/setup_mariadb_accounting.sh``: MariaDB on the controller, a
database password generated there, never in a template), rather than an external database
(Amazon RDS, ``Orchestrator.Slurm.AccountingDatabase`` with a Secrets Manager secret), which
the same page says "requires continuous provisioning" and AMIs released after August 30,
2026, and which costs a database instance per cluster. So the stack holds no database and no
password. The price: the accounting database lives on the controller's volume; when HyperPod
replaces the controller, the job records (``usage``) and fair-share history are lost, and
the new controller's lifecycle run creates the accounts, associations and QOS again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from trn_ultracluster.config.model import HyperPodWorkerGroupConfig, Pool, SchedulingConfig, Team
from trn_ultracluster.contracts.hyperpod import (
    SLURM_TEAMS_FILE,
    SLURM_TEAMS_SCRIPT,
    SLURM_TEAMS_STEPS,
    SLURM_USER,
)

__all__ = ["SLURM_TEAMS_FILE", "TEAMS_SCRIPTS", "class_qos_names", "slurm_teams_file",
           "team_accounts"]

TEAMS_SCRIPTS = (SLURM_TEAMS_SCRIPT, SLURM_TEAMS_STEPS)
"""The scripts of ``scripts/`` that make Slurm enforce the teams; uploaded only with teams."""


def slurm_teams_file(teams: Sequence[Team], scheduling: SchedulingConfig,
                     worker_groups: Sequence[tuple[HyperPodWorkerGroupConfig, Pool]],
                     worker_counts: Mapping[str, int], user: str = SLURM_USER) -> dict[str, Any]:
    """``slurm_teams.json`` (shape: ``scripts/slurm_teams.py``): the job user, the
    preemption, the priority classes, each partition with its pool and its nodes (the sum of
    its worker groups' instances: what the pool holds on HyperPod, ``nodes.desired``), and
    each team with its quota per pool in whole nodes (the configuration rules refuse a quota
    that is no whole number of nodes on HyperPod).

    Args:
        teams: ``ClusterConfig.team_list``.
        scheduling: ``ClusterConfig.scheduling``.
        worker_groups: ``ClusterConfig.hyperpod_worker_groups`` (group, pool), in order.
        worker_counts: worker group name -> its instances.
        user: whose associations the teams get (default: the user HyperPod's jobs run as).
    """
    partitions: dict[str, dict[str, Any]] = {}
    for group, pool in worker_groups:
        entry = partitions.setdefault(group.partition,
                                      {"name": group.partition, "pool": pool.name, "nodes": 0})
        entry["nodes"] += worker_counts.get(group.name, 0)
    return {
        "user": user,
        "preemption": scheduling.preemption,
        "priority_classes": [{"name": c.name, "weight": c.weight}
                             for c in sorted(scheduling.priority_classes, key=lambda c: -c.weight)],
        "partitions": list(partitions.values()),
        "teams": [{"name": t.name, "default": t.default, "priority": t.priority,
                   "borrow": t.borrow, "lend": t.lend,
                   "quotas": {q.pool: q.nodes or 0 for q in t.quotas}} for t in teams],
    }


def team_accounts(teams: Sequence[Team]) -> dict[str, dict[str, str]]:
    """Team name -> ``{"account": its Slurm account}``: the account is the team's name (a
    valid account name by the teams rules)."""
    return {t.name: {"account": t.name} for t in teams}


def class_qos_names(scheduling: SchedulingConfig) -> dict[str, str]:
    """Priority class -> its Slurm QOS: the class's name."""
    return {c.name: c.name for c in scheduling.priority_classes}
