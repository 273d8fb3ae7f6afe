"""Rules of ``teams`` on ``hyperpod-eks``, where SageMaker HyperPod task governance enforces
them (:mod:`trn_ultracluster.orchestrators.hyperpod_eks.task_governance` says what the stack
makes): a node for the add-on to install on, at most as many instance types as a compute
quota lists, and a warning where a team's borrowing cannot reach.

Each message names the field, the value, what is allowed and ``docs/teams.md``.
"""

from __future__ import annotations

from collections.abc import Iterator

from trn_ultracluster.config.errors import ConfigIssue
from trn_ultracluster.config.model import ClusterConfig
from trn_ultracluster.config.model.teams import DOC_TEAMS
from trn_ultracluster.config.rules.teams import pool_capacity

__all__ = ["QUOTA_INSTANCE_TYPES_MAX", "task_governance"]

QUOTA_INSTANCE_TYPES_MAX = 15
"""``ComputeQuotaConfig.ComputeQuotaResources`` holds at most 15 entries, one per instance
type (botocore 1.44.8 SageMaker model, shape ``ComputeQuotaResourceConfigList``: max 15;
the ``AWS::SageMaker::ComputeQuota`` schema of cfn-lint 1.58: ``maxItems`` 15)."""


def task_governance(c: ClusterConfig) -> Iterator[ConfigIssue]:
    """With ``teams`` on ``hyperpod-eks``:

    - some pool runs a node: "A HyperPod node must already exist in the EKS cluster before
      installing the HyperPod task governance add-on" (SageMaker developer guide, "Task
      governance setup", HyperPod task governance prerequisites,
      https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-eks-operate-console-ui-governance-setup-task-governance.html);
    - the pools have at most :data:`QUOTA_INSTANCE_TYPES_MAX` ``ml.`` types (a team's quota
      lists every one);
    - warning: a team that may borrow but holds no quota on a pool borrows nothing there:
      the borrow limit is "expressed as a percentage of their guaranteed quota" (same
      guide, "Policies", "Percentage-based borrow limit").
    """
    if not c.teams or c.orchestrator != "hyperpod-eks":
        return
    pools = c.node_pools
    if sum(pool_capacity(c, p.name) for p in pools) == 0:
        yield ConfigIssue(
            pools[0].key("nodes.desired"), 0,
            "must be 1 or more on some pool with teams on hyperpod-eks: HyperPod task "
            "governance's EKS add-on installs only once a HyperPod node is in the cluster; "
            "give a pool nodes, or leave teams out", DOC_TEAMS)
    types = {p.instance_type for p in pools}
    if len(types) > QUOTA_INSTANCE_TYPES_MAX:
        yield ConfigIssue(
            "pools", sorted(types),
            f"must hold at most {QUOTA_INSTANCE_TYPES_MAX} instance types with teams on "
            "hyperpod-eks: a HyperPod compute quota lists each type once "
            "(ComputeQuotaResources, at most 15); merge pools of fewer types", DOC_TEAMS)
    for team in c.team_list:
        if not team.borrow:
            continue
        for quota in team.quotas:
            if quota.nodes == 0 and pool_capacity(c, quota.pool) > 0:
                yield ConfigIssue(
                    f"teams[{team.index}].quota.{quota.pool}", {"nodes": 0},
                    f"should be 1 node or more for team {team.name!r} to borrow on pool "
                    f"{quota.pool!r} on hyperpod-eks: HyperPod task governance lets a team "
                    "borrow a percentage of its own quota there (BorrowLimit), so with none "
                    "it borrows nothing", DOC_TEAMS, severity="warning")
