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
        if not _valid_name(team.name):
            yield ConfigIssue(
                field, team.name,
                f"{_NAME_RULE}{_too_long(team.name)}: it is the team's Slurm account, "
                "Kubernetes namespace and HyperPod task-governance team at once", DOC_TEAMS)
            continue
        if team.name in reserved or team.name.startswith("kube-"):
            yield ConfigIssue(field, team.name,
                              f"must not be {', '.join(map(repr, sorted(reserved)))}, or "
                              "start with kube-: "
                              "the team's name becomes its Kubernetes namespace, and these "
                              "are Kubernetes', Kueue's or this stack's "
                              "(eks.training_namespace)", DOC_TEAMS)
        if team.name in seen:
            yield ConfigIssue(field, team.name, "must be unique: a team of that name is "
                              "already listed", DOC_TEAMS)
        seen.add(team.name)
    defaults = [t.name for t in c.teams if t.default]
    if len(defaults) > 1:
        yield ConfigIssue("teams[].default", defaults,
                          "must be true on at most one team: it is the team `submit` uses "
                          f"without --team; keep it on one of {', '.join(defaults)}", DOC_TEAMS)


_NAME_RULE = (f"must be 1 to {TEAM_NAME_MAX} lowercase letters, digits and hyphens, starting "
              "with a letter and ending with a letter or digit")


def _valid_name(name: str) -> bool:
    return bool(TEAM_NAME_PATTERN.match(name)) and len(name) <= TEAM_NAME_MAX


def _too_long(name: str) -> str:
    return f" (it has {len(name)} characters)" if len(name) > TEAM_NAME_MAX else ""


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
    for i, team in enumerate(c.teams):
        for pool_name, quota in team.quota.items():
            field = f"teams[{i}].quota.{pool_name}"
            given = quota.model_dump(exclude_none=True)
            if pool_name not in pools:
                yield ConfigIssue(field, given,
                                  f"must name a pool of this cluster: there is no pool "
                                  f"{pool_name!r} (its pools: {', '.join(pools)})", DOC_TEAMS)
                continue
            if (quota.nodes is None) == (quota.neuron_cores is None):
                yield ConfigIssue(field, given,
                                  "must give the quota in one unit, nodes: N (whole nodes) or "
                                  "neuron_cores: N (NeuronCores of a Trainium pool), "
                                  f"{'not both' if given else 'got neither'}", DOC_TEAMS)
                continue
            try:
                spec = pools[pool_name].instance
            except ValueError:
                continue  # the pools rules report the type
            if quota.neuron_cores is not None and not spec.accelerated:
                yield ConfigIssue(f"{field}.neuron_cores", quota.neuron_cores,
                                  f"must be left out on the CPU pool {pool_name!r} "
                                  f"({spec.name} has no NeuronCores): give its quota in "
                                  "nodes instead", DOC_TEAMS)
                continue
            yield from _unit(c, field, pool_name, team.name, quota.neuron_cores, spec)
        if c.orchestrator == "hyperpod-eks" and team.borrow and not team.lend:
            yield ConfigIssue(
                f"teams[{i}].lend", False,
                f"must be true when borrow is true on hyperpod-eks (team {team.name!r}): "
                "HyperPod task governance has Lend, DontLend and LendAndBorrow "
                "(ResourceSharingConfig.Strategy), no borrowing without lending; set "
                "lend: true, or borrow: false", DOC_TEAMS)
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
                          f"must be a multiple of {per_node}, the NeuronCores of one "
                          f"{spec.name}, on {c.orchestrator} (team {team!r}): {counted}; "
                          f"e.g. {_multiples(cores, per_node)}, or give nodes", DOC_TEAMS)
    elif c.orchestrator == "eks" and cores % per_chip:
        yield ConfigIssue(f"{field}.neuron_cores", cores,
                          f"must be a multiple of {per_chip}, the NeuronCores of one "
                          f"{spec.name} chip, on eks (team {team!r}): Kueue counts the "
                          "Neuron devices (aws.amazon.com/neuron, one per chip) a job "
                          f"requests; e.g. {_multiples(cores, per_chip)}, or give nodes",
                          DOC_TEAMS)


def _multiples(value: int, step: int) -> str:
    """The multiples of ``step`` around ``value``: ``"32 or 64"`` (``"32"`` below the first)."""
    low = value // step * step
    return f"{low} or {low + step}" if low else f"{step}"


def _sums(c: ClusterConfig) -> Iterator[ConfigIssue]:
    """Per pool, the quotas' sum in nodes against :func:`pool_capacity`; a quota the unit
    rules refuse (NeuronCores on a CPU pool) is left out of the sum."""
    teams = c.team_list
    for pool in c.node_pools:
        try:
            per_node = pool.instance.neuron_cores
        except ValueError:
            continue  # the pools rules report the type
        shares = {t.name: _in_nodes(t.quota(pool.name), per_node) for t in teams}
        holders = [t for t in teams if shares[t.name]]
        total = sum(shares[t.name] or 0 for t in holders)
        capacity = pool_capacity(c, pool.name)
        if not holders or total <= capacity:
            continue
        hyperpod = c.orchestrator.startswith("hyperpod")
        which = "nodes.desired (the instances HyperPod runs)" if hyperpod else "nodes.max"
        listed = " + ".join(f"{t.name} {_nodes(t.quota(pool.name), per_node)}"
                            for t in holders) + (f" = {_fmt(total)}" if len(holders) > 1 else "")
        fixed = [t.name for t in holders if not t.borrow]
        field = pool.key("nodes.desired" if hyperpod else "nodes.max")
        if fixed:
            yield ConfigIssue(
                field, capacity,
                f"must hold the teams' quotas on pool {pool.name!r} ({listed} "
                f"nodes) since {', '.join(fixed)} may not borrow: its {which} is {capacity}; "
                "raise it, lower the quotas, or set borrow: true on those teams", DOC_TEAMS)
        else:
            yield ConfigIssue(
                field, capacity,
                f"should hold the teams' quotas on pool {pool.name!r} ({listed} "
                f"nodes; its {which} is {capacity}): every team there may borrow, so the "
                "quotas act as shares, and a team may wait for its quota while another holds "
                "it", DOC_TEAMS, severity="warning")


def _in_nodes(quota, per_node: int) -> float | None:
    """A quota in nodes (a fraction for NeuronCores that are no whole node); ``None`` for
    NeuronCores on a pool without them."""
    if quota.nodes is not None:
        return quota.nodes
    return quota.neuron_cores / per_node if per_node else None


def _nodes(quota, per_node: int) -> str:
    """A team's share in a sum: ``"2"`` (nodes), or ``"16 NeuronCores (0.5 node)"``."""
    return (f"{quota.nodes}" if quota.nodes is not None
            else f"{quota.neuron_cores} NeuronCores ({_fmt(quota.neuron_cores / per_node)} "
                 "node)")


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
                          "must list at least one class when teams are given, e.g. {name: "
                          "training, weight: 100}; left out, it is training 100 and experiment "
                          "10", DOC_TEAMS)
    if len(classes) > PRIORITY_CLASSES_MAX:
        yield ConfigIssue("scheduling.priority_classes", [p.name for p in classes],
                          f"must hold at most {PRIORITY_CLASSES_MAX} classes, got "
                          f"{len(classes)}: HyperPod task governance takes at most "
                          f"{PRIORITY_CLASSES_MAX} (SchedulerConfig.PriorityClasses), and one "
                          "limit holds on every orchestrator", DOC_TEAMS)
    lo, hi = PRIORITY_WEIGHT_RANGE
    names: set[str] = set()
    weights: dict[int, str] = {}
    for i, cls in enumerate(classes):
        field = f"scheduling.priority_classes[{i}]"
        if not _valid_name(cls.name):
            yield ConfigIssue(f"{field}.name", cls.name,
                              f"{_NAME_RULE}{_too_long(cls.name)}: it is a Slurm QOS, a Kueue "
                              "WorkloadPriorityClass and a HyperPod priority class at once",
                              DOC_TEAMS)
        elif cls.name in names:
            yield ConfigIssue(f"{field}.name", cls.name, "must be unique: a class of that "
                              "name is already listed", DOC_TEAMS)
        names.add(cls.name)
        if not lo <= cls.weight <= hi:
            yield ConfigIssue(f"{field}.weight", cls.weight,
                              f"must be {lo} to {hi}, higher first (HyperPod's "
                              "PriorityClass.Weight range, used on every orchestrator)",
                              DOC_TEAMS)
        elif cls.weight in weights:
            yield ConfigIssue(f"{field}.weight", cls.weight,
                              f"must differ from the weight of class {weights[cls.weight]!r}: "
                              "two classes of one weight would not be ordered", DOC_TEAMS)
        weights.setdefault(cls.weight, cls.name)
    for i, team in enumerate(c.teams):
        if team.priority is not None and team.priority not in names:
            yield ConfigIssue(f"teams[{i}].priority", team.priority,
                              "must name a class of scheduling.priority_classes "
                              f"({one_of(sorted(names)) if names else 'none given'}), or be "
                              "left out for the lowest one", DOC_TEAMS)
