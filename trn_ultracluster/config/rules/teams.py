"""Rules of ``teams`` and ``scheduling``: names every scheduler accepts, quotas on pools that
exist in units the scheduler counts, priority classes that exist, and an orchestrator with a
scheduler.

Each message names the field, the value, what is allowed and ``docs/teams.md``.
"""

from __future__ import annotations

from collections.abc import Iterator

from trn_ultracluster.config.errors import ConfigIssue, one_of
from trn_ultracluster.config.model import ClusterConfig
from trn_ultracluster.config.model.teams import DOC_TEAMS, TEAM_NAME_MAX, TEAM_NAME_PATTERN

__all__ = ["KUBERNETES_RESERVED_NAMESPACES", "PRIORITY_CLASSES_MAX", "PRIORITY_WEIGHT_RANGE",
           "pool_capacity", "priority_classes", "team_names", "team_quotas",
           "teams_orchestrator"]

PRIORITY_CLASSES_MAX = 10
"""At most 10 priority classes: HyperPod's ``SchedulerConfig.PriorityClasses`` list (botocore
1.44.8 SageMaker model, shape ``PriorityClassList``: max 10); one limit on every scheduler so a
configuration moves between orchestrators."""
PRIORITY_WEIGHT_RANGE = (0, 100)
"""``PriorityClass.Weight``: 0 to 100 (botocore 1.44.8 SageMaker model, shape
``PriorityWeight``)."""
KUBERNETES_RESERVED_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease",
                                  "kueue-system")
"""Namespaces a team cannot take: Kubernetes' own (Kubernetes docs "Namespaces", "Initial
namespaces"; any ``kube-`` prefix is reserved) and Kueue's (its chart installs into
``kueue-system``); the stack's ``eks.training_namespace`` is checked too."""


def teams_orchestrator(c: ClusterConfig) -> Iterator[ConfigIssue]:
    """``standalone`` has no scheduler: nothing would enforce a quota, so ``teams`` there is
    refused rather than silently ignored."""
    if c.teams and c.orchestrator == "standalone":
        yield ConfigIssue(
            "teams", [t.name for t in c.teams],
            "must be left out with orchestrator 'standalone': its nodes have no scheduler to "
            "enforce a team's quota or priority; use 'eks' (Kueue), 'hyperpod-eks' (HyperPod "
            "task governance) or 'hyperpod-slurm' (Slurm accounting)", DOC_TEAMS)


def team_names(c: ClusterConfig) -> Iterator[ConfigIssue]:
    """Each name is a Slurm account, a Kubernetes namespace and a HyperPod team at once
    (:data:`~trn_ultracluster.config.model.teams.TEAM_NAME_PATTERN`), unique, not a reserved
    namespace; at most one team is ``default``."""
    seen: set[str] = set()
    reserved = {*KUBERNETES_RESERVED_NAMESPACES, c.eks.training_namespace}
    for i, team in enumerate(c.teams):
        field = f"teams[{i}].name"
        if not TEAM_NAME_PATTERN.match(team.name) or len(team.name) > TEAM_NAME_MAX:
            yield ConfigIssue(
                field, team.name,
                f"must be 1 to {TEAM_NAME_MAX} lowercase letters, digits and hyphens, starting "
                "with a letter and ending with a letter or digit: it is the team's Slurm "
                "account, Kubernetes namespace and HyperPod task-governance team at once",
                DOC_TEAMS)
            continue
        if team.name in reserved or team.name.startswith("kube-"):
            yield ConfigIssue(field, team.name,
                              f"must not be a namespace Kubernetes, Kueue or this stack uses "
                              f"({one_of(sorted(reserved))} or kube-*): it becomes the "
                              "team's namespace", DOC_TEAMS)
        if team.name in seen:
            yield ConfigIssue(field, team.name, "must be unique: a team of that name is "
                              "already listed", DOC_TEAMS)
        seen.add(team.name)
    defaults = [t.name for t in c.teams if t.default]
    if len(defaults) > 1:
        yield ConfigIssue("teams[].default", defaults,
                          "must be true on at most one team (the team `submit` uses without "
                          "--team)", DOC_TEAMS)


def pool_capacity(c: ClusterConfig, pool_name: str) -> int:
    """Nodes a pool can hold for the teams: HyperPod runs a fixed ``nodes.desired``, the other
    orchestrators scale to ``nodes.max``."""
    pool = c.pool(pool_name)
    return pool.nodes.desired if c.orchestrator.startswith("hyperpod") else pool.nodes.max


def team_quotas(c: ClusterConfig) -> Iterator[ConfigIssue]:
    """Each quota names a pool, in a unit its scheduler counts; a Trainium-only unit is not
    given on a CPU pool; HyperPod can express the borrow/lend pair; per pool the quotas fit
    what the pool holds (a warning when every team holding quota there may borrow, an
    error otherwise: a team that cannot borrow is promised nodes that do not exist)."""
    if not c.teams:
        return
    pools = {p.name: p for p in c.node_pools}
    names = ", ".join(pools)
    for i, team in enumerate(c.teams):
        for pool_name, quota in team.quota.items():
            field = f"teams[{i}].quota.{pool_name}"
            if pool_name not in pools:
                yield ConfigIssue(field, quota.model_dump(exclude_none=True),
                                  f"must name a pool of this cluster ({names})", DOC_TEAMS)
                continue
            pool = pools[pool_name]
            try:
                spec = pool.instance
            except ValueError:
                continue  # the pools rules report the type
            if quota.neuron_cores is not None and not spec.accelerated:
                yield ConfigIssue(f"{field}.neuron_cores", quota.neuron_cores,
                                  f"must be left out on the CPU pool {pool_name!r} "
                                  f"({spec.name} has no NeuronCores): give nodes", DOC_TEAMS)
                continue
            yield from _unit(c, field, pool_name, team.name, quota.neuron_cores, spec)
        if c.orchestrator == "hyperpod-eks" and team.borrow and not team.lend:
            yield ConfigIssue(
                f"teams[{i}].lend", False,
                "must be true when borrow is true on hyperpod-eks: HyperPod task governance "
                "has Lend, DontLend and LendAndBorrow (ResourceSharingConfig.Strategy), no "
                "borrowing without lending; set borrow: false or lend: true", DOC_TEAMS)
    yield from _sums(c)


def _unit(c: ClusterConfig, field: str, pool_name: str, team: str, cores: int | None,
          spec) -> Iterator[ConfigIssue]:
    """A NeuronCore quota converts exactly into what the orchestrator's scheduler counts."""
    if cores is None or cores == 0:
        return
    per_node = spec.neuron_cores
    per_chip = per_node // spec.chips
    if c.orchestrator.startswith("hyperpod") and cores % per_node:
        counted = ("Slurm counts whole nodes (GrpTRES=node=N)" if c.orchestrator ==
                   "hyperpod-slurm" else "HyperPod task governance counts whole instances "
                   "(ComputeQuotaResourceConfig.Count)")
        yield ConfigIssue(f"{field}.neuron_cores", cores,
                          f"must be a multiple of {per_node} (the NeuronCores of one "
                          f"{spec.name}) for team {team!r}: {counted}; or give nodes",
                          DOC_TEAMS)
    elif c.orchestrator == "eks" and cores % per_chip:
        yield ConfigIssue(f"{field}.neuron_cores", cores,
                          f"must be a multiple of {per_chip} (the NeuronCores of one "
                          f"{spec.name} chip) for team {team!r}: Kueue counts the Neuron "
                          "devices (aws.amazon.com/neuron, one per chip) a job requests; or "
                          "give nodes", DOC_TEAMS)


def _sums(c: ClusterConfig) -> Iterator[ConfigIssue]:
    """Per pool, the quotas' sum against :func:`pool_capacity`."""
    for pool in c.node_pools:
        holders = [t for t in c.team_list if pool.name in {q.pool for q in t.quotas}
                   and (t.quota(pool.name).neuron_cores or t.quota(pool.name).nodes)]
        if not holders:
            continue
        try:
            per_node = pool.instance.neuron_cores
        except ValueError:
            continue
        total = sum(t.quota(pool.name).nodes if t.quota(pool.name).nodes is not None
                    else t.quota(pool.name).neuron_cores / per_node for t in holders)
        capacity = pool_capacity(c, pool.name)
        if total <= capacity:
            continue
        which = "nodes.desired (HyperPod runs that many)" if c.orchestrator.startswith(
            "hyperpod") else "nodes.max"
        shares = ", ".join(f"{t.name} {_nodes(t.quota(pool.name), per_node)}" for t in holders)
        fixed = [t.name for t in holders if not t.borrow]
        field = pool.key("nodes.desired" if c.orchestrator.startswith("hyperpod")
                         else "nodes.max")
        if fixed:
            yield ConfigIssue(
                field, capacity,
                f"must hold the teams' quotas on pool {pool.name!r} ({shares}: {_fmt(total)} "
                f"nodes) with borrowing off for {', '.join(fixed)}: its {which} is {capacity}; "
                "raise it, lower the quotas, or let those teams borrow", DOC_TEAMS)
        else:
            yield ConfigIssue(
                field, capacity,
                f"should hold the teams' quotas on pool {pool.name!r} ({shares}: {_fmt(total)} "
                f"nodes; its {which} is {capacity}): every team there may borrow, so the "
                "quotas act as shares, and a team may wait for its quota while another holds "
                "it", DOC_TEAMS, severity="warning")


def _nodes(quota, per_node: int) -> str:
    return (f"{quota.nodes}" if quota.nodes is not None
            else f"{quota.neuron_cores} NeuronCores = {_fmt(quota.neuron_cores / per_node)}")


def _fmt(value: float) -> str:
    return f"{value:g}"


def priority_classes(c: ClusterConfig) -> Iterator[ConfigIssue]:
    """Priority classes: at most :data:`PRIORITY_CLASSES_MAX`, names unique and valid on
    every scheduler, weights in :data:`PRIORITY_WEIGHT_RANGE` and distinct (two classes of
    one weight would not order anything); each team's ``priority`` names one."""
    if not c.teams:
        return
    classes = c.scheduling.priority_classes
    if not classes:
        yield ConfigIssue("scheduling.priority_classes", [],
                          "must list at least one class with teams (e.g. training, "
                          "experiment)", DOC_TEAMS)
    if len(classes) > PRIORITY_CLASSES_MAX:
        yield ConfigIssue("scheduling.priority_classes", [p.name for p in classes],
                          f"must hold at most {PRIORITY_CLASSES_MAX} classes (HyperPod's "
                          "PriorityClasses list)", DOC_TEAMS)
    lo, hi = PRIORITY_WEIGHT_RANGE
    names: set[str] = set()
    weights: dict[int, str] = {}
    for i, cls in enumerate(classes):
        field = f"scheduling.priority_classes[{i}]"
        if not TEAM_NAME_PATTERN.match(cls.name) or len(cls.name) > TEAM_NAME_MAX:
            yield ConfigIssue(f"{field}.name", cls.name,
                              f"must be 1 to {TEAM_NAME_MAX} lowercase letters, digits and "
                              "hyphens, starting with a letter (a Slurm QOS, a Kueue "
                              "WorkloadPriorityClass and a HyperPod priority class)", DOC_TEAMS)
        elif cls.name in names:
            yield ConfigIssue(f"{field}.name", cls.name, "must be unique", DOC_TEAMS)
        names.add(cls.name)
        if not lo <= cls.weight <= hi:
            yield ConfigIssue(f"{field}.weight", cls.weight,
                              f"must be {lo} to {hi} (HyperPod's PriorityClass.Weight range; "
                              "higher runs first)", DOC_TEAMS)
        elif cls.weight in weights:
            yield ConfigIssue(f"{field}.weight", cls.weight,
                              f"must differ from {weights[cls.weight]!r}'s: classes of one "
                              "weight order nothing", DOC_TEAMS)
        weights.setdefault(cls.weight, cls.name)
    for i, team in enumerate(c.teams):
        if team.priority is not None and team.priority not in names:
            yield ConfigIssue(f"teams[{i}].priority", team.priority,
                              f"must be one of scheduling.priority_classes "
                              f"({one_of(sorted(names)) if names else 'none given'})",
                              DOC_TEAMS)
