"""Rules of ``teams`` and ``scheduling`` (trn_ultracluster.config.rules.teams and the shape
checks of the teams models): each bad input gives one exact error naming the field, the value,
what is allowed and docs/teams.md; quota sums above a pool warn when every team there may
borrow and fail otherwise; and the conversions of ``TeamQuota.of`` / ``ClusterConfig.team_list``
(nodes, NeuronCores, Neuron devices, vCPUs) that every scheduler reads."""

from __future__ import annotations

from typing import Any

import pytest

from tests.config import (
    CPU_POOL,
    STYLE,
    TRN1_POOL,
    TRN2_POOL,
    check_one_error,
    errors,
    load,
    warnings_about,
    with_pools,
)
from trn_ultracluster.config.model import TeamQuota, TeamQuotaConfig
from trn_ultracluster.contracts.catalog import get_any_instance

DOC = "docs/teams.md"
NAME_RULE = ("must be 1 to 40 lowercase letters, digits and hyphens, starting with a letter and "
             "ending with a letter or digit")
TEAM_NAME = f"{NAME_RULE}: it is the team's Slurm account, Kubernetes namespace and HyperPod " \
            "task-governance team at once"
RESERVED = ("must not be 'default', 'kube-node-lease', 'kube-public', 'kube-system', "
            "'kueue-system', 'training', or start with kube-: the team's name becomes its "
            "Kubernetes namespace, and these are Kubernetes', Kueue's or this stack's "
            "(eks.training_namespace)")
ONE_UNIT = ("must give the quota in one unit, nodes: N (whole nodes) or neuron_cores: N "
            "(NeuronCores of a Trainium pool)")


def team(name: str = "alpha", **settings: Any) -> dict[str, Any]:
    """A ``teams`` item."""
    return {"name": name, **settings}


def teams(*items: dict[str, Any], orchestrator: str = "eks", pools=(TRN1_POOL, CPU_POOL),
          **overrides: Any) -> dict[str, Any]:
    """``-c`` overrides of a cluster of ``pools`` (trn1 0/1/2, cpu 0/1/2) with ``teams``."""
    return with_pools(*pools, orchestrator=orchestrator, teams=list(items), **overrides)


def classes(*pairs: tuple[str, int], **more: Any) -> dict[str, Any]:
    """``scheduling`` with these priority classes."""
    return {"priority_classes": [{"name": n, "weight": w} for n, w in pairs], **more}


def test_the_teams_profile_is_valid_on_each_orchestrator_with_a_scheduler():
    for orchestrator in ("eks", "hyperpod-eks", "hyperpod-slurm"):
        config = load({"config": "profiles/teams.yaml", "orchestrator": orchestrator}).config
        assert [t.name for t in config.team_list] == ["research", "platform"]


BAD_INPUTS = [
    # quotas
    ("unknown pool in a quota", teams(team(quota={"gpu": {"nodes": 1}})),
     "error: teams[0].quota.gpu = {'nodes': 1}: must name a pool of this cluster: there is no "
     f"pool 'gpu' (its pools: trn1, cpu) (see {DOC})"),
    ("NeuronCores on a CPU pool", teams(team(quota={"cpu": {"neuron_cores": 32}})),
     "error: teams[0].quota.cpu.neuron_cores = 32: must be left out on the CPU pool 'cpu' "
     f"(m7i.8xlarge has no NeuronCores): give its quota in nodes instead (see {DOC})"),
    ("both units", teams(team(quota={"trn1": {"nodes": 1, "neuron_cores": 32}})),
     f"error: teams[0].quota.trn1 = {{'nodes': 1, 'neuron_cores': 32}}: {ONE_UNIT}, not both "
     f"(see {DOC})"),
    ("neither unit", teams(team(quota={"trn1": {}})),
     f"error: teams[0].quota.trn1 = {{}}: {ONE_UNIT}, got neither (see {DOC})"),
    ("negative nodes", teams(team(quota={"trn1": {"nodes": -1}})),
     f"error: teams[0].quota.trn1.nodes = -1: must be greater than or equal to 0 (see {DOC})"),
    ("negative NeuronCores", teams(team(quota={"trn1": {"neuron_cores": -32}})),
     "error: teams[0].quota.trn1.neuron_cores = -32: must be greater than or equal to 0 "
     f"(see {DOC})"),
    ("half a node on hyperpod-slurm",
     teams(team(quota={"trn1": {"neuron_cores": 48}}), orchestrator="hyperpod-slurm"),
     "error: teams[0].quota.trn1.neuron_cores = 48: must be a multiple of 32, the NeuronCores "
     "of one trn1.32xlarge, on hyperpod-slurm (team 'alpha'): Slurm counts whole nodes "
     f"(GrpTRES=node=N); e.g. 32 or 64, or give nodes (see {DOC})"),
    ("half a node on hyperpod-eks",
     teams(team(quota={"trn1": {"neuron_cores": 16}}), orchestrator="hyperpod-eks"),
     "error: teams[0].quota.trn1.neuron_cores = 16: must be a multiple of 32, the NeuronCores "
     "of one trn1.32xlarge, on hyperpod-eks (team 'alpha'): HyperPod task governance counts "
     f"whole instances (ComputeQuotaResourceConfig.Count); e.g. 32, or give nodes (see {DOC})"),
    ("part of a trn1 chip on eks", teams(team(quota={"trn1": {"neuron_cores": 3}})),
     "error: teams[0].quota.trn1.neuron_cores = 3: must be a multiple of 2, the NeuronCores of "
     "one trn1.32xlarge chip, on eks (team 'alpha'): Kueue counts the Neuron devices "
     f"(aws.amazon.com/neuron, one per chip) a job requests; e.g. 2 or 4, or give nodes "
     f"(see {DOC})"),
    ("part of a trn2 chip on eks",
     teams(team(quota={"trn2": {"neuron_cores": 12}}), pools=(TRN1_POOL, TRN2_POOL)),
     "error: teams[0].quota.trn2.neuron_cores = 12: must be a multiple of 8, the NeuronCores of "
     "one trn2.48xlarge chip, on eks (team 'alpha'): Kueue counts the Neuron devices "
     f"(aws.amazon.com/neuron, one per chip) a job requests; e.g. 8 or 16, or give nodes "
     f"(see {DOC})"),
    ("borrow without lend on hyperpod-eks",
     teams(team(borrow=True, lend=False), orchestrator="hyperpod-eks"),
     "error: teams[0].lend = False: must be true when borrow is true on hyperpod-eks (team "
     "'alpha'): HyperPod task governance has Lend, DontLend and LendAndBorrow "
     "(ResourceSharingConfig.Strategy), no borrowing without lending; set lend: true, or "
     f"borrow: false (see {DOC})"),
    # priority classes
    ("a priority naming no class", teams(team(priority="urgent")),
     "error: teams[0].priority = 'urgent': must name a class of scheduling.priority_classes "
     f"('experiment' or 'training'), or be left out for the lowest one (see {DOC})"),
    ("duplicate class", teams(team(), scheduling=classes(("high", 90), ("high", 10))),
     "error: scheduling.priority_classes[1].name = 'high': must be unique: a class of that name "
     f"is already listed (see {DOC})"),
    ("invalid class name", teams(team(), scheduling=classes(("High_Prio", 90))),
     f"error: scheduling.priority_classes[0].name = 'High_Prio': {NAME_RULE}: it is a Slurm "
     "QOS, a Kueue WorkloadPriorityClass and a HyperPod priority class at once "
     f"(see {DOC})"),
    ("eleven classes", teams(team(), scheduling=classes(*((f"c{i}", i) for i in range(11)))),
     "error: scheduling.priority_classes = ['c0', 'c1', 'c2', 'c3', 'c4', 'c5', 'c6', 'c7', "
     "'c8', 'c9', 'c10']: must hold at most 10 classes, got 11: HyperPod task governance takes "
     "at most 10 (SchedulerConfig.PriorityClasses), and one limit holds on every orchestrator "
     f"(see {DOC})"),
    ("no class", teams(team(), scheduling=classes()),
     "error: scheduling.priority_classes = []: must list at least one class when teams are "
     "given, e.g. {name: training, weight: 100}; left out, it is training 100 and experiment "
     f"10 (see {DOC})"),
    ("weight above 100", teams(team(), scheduling=classes(("high", 101))),
     "error: scheduling.priority_classes[0].weight = 101: must be 0 to 100, higher first "
     f"(HyperPod's PriorityClass.Weight range, used on every orchestrator) (see {DOC})"),
    ("negative weight", teams(team(), scheduling=classes(("high", 10), ("low", -1))),
     "error: scheduling.priority_classes[1].weight = -1: must be 0 to 100, higher first "
     f"(HyperPod's PriorityClass.Weight range, used on every orchestrator) (see {DOC})"),
    ("equal weights", teams(team(), scheduling=classes(("high", 50), ("low", 50))),
     "error: scheduling.priority_classes[1].weight = 50: must differ from the weight of class "
     f"'high': two classes of one weight would not be ordered (see {DOC})"),
    ("unknown preemption", teams(team(), scheduling={"preemption": "always"}),
     "error: scheduling.preemption = 'always': must be 'lower-priority' or 'never' "
     f"(see {DOC})"),
    # orchestrator
    ("teams on standalone", teams(team(), team("beta"), orchestrator="standalone"),
     "error: teams = ['alpha', 'beta']: must be left out with orchestrator 'standalone': its "
     "nodes have no scheduler to enforce a team's quota or priority; use 'eks' (Kueue), "
     "'hyperpod-eks' (HyperPod task governance) or 'hyperpod-slurm' (Slurm accounting) "
     f"(see {DOC})"),
    # names
    ("upper-case name", teams(team("Research")),
     f"error: teams[0].name = 'Research': {TEAM_NAME} (see {DOC})"),
    ("underscore", teams(team("ml_infra")),
     f"error: teams[0].name = 'ml_infra': {TEAM_NAME} (see {DOC})"),
    ("41 characters", teams(team("a" * 41)),
     f"error: teams[0].name = '{'a' * 41}': {NAME_RULE} (it has 41 characters): it is the "
     "team's Slurm account, Kubernetes namespace and HyperPod task-governance team at once "
     f"(see {DOC})"),
    ("starting with a digit", teams(team("1st")),
     f"error: teams[0].name = '1st': {TEAM_NAME} (see {DOC})"),
    ("ending with a hyphen", teams(team("infra-")),
     f"error: teams[0].name = 'infra-': {TEAM_NAME} (see {DOC})"),
    ("a kube- namespace", teams(team("kube-x")),
     f"error: teams[0].name = 'kube-x': {RESERVED} (see {DOC})"),
    ("the default namespace", teams(team("default")),
     f"error: teams[0].name = 'default': {RESERVED} (see {DOC})"),
    ("the training namespace", teams(team("training")),
     f"error: teams[0].name = 'training': {RESERVED} (see {DOC})"),
    ("duplicate team", teams(team("alpha"), team("alpha")),
     "error: teams[1].name = 'alpha': must be unique: a team of that name is already listed "
     f"(see {DOC})"),
    ("two default teams", teams(team("alpha", default=True), team("beta", default=True)),
     "error: teams[].default = ['alpha', 'beta']: must be true on at most one team: it is the "
     f"team `submit` uses without --team; keep it on one of alpha, beta (see {DOC})"),
    ("a team without a name", teams({"quota": {"trn1": {"nodes": 1}}}),
     f"error: teams[0].name = None: must be given (see {DOC})"),
    ("a misspelt key", teams(team(quotas={"trn1": {"nodes": 1}})),
     "error: teams[0].quotas = {'trn1': {'nodes': 1}}: must be one of the known keys here: "
     f"borrow, default, lend, name, priority, quota (see {DOC})"),
    # sums
    ("quotas above nodes.max with a team that may not borrow",
     teams(team(quota={"trn1": {"nodes": 2}}),
           team("beta", quota={"trn1": {"neuron_cores": 32}}, borrow=False)),
     "error: pools[0].nodes.max = 2: must hold the teams' quotas on pool 'trn1' (alpha 2 + beta "
     "1 = 3 nodes) since beta may not borrow: its nodes.max is 2; raise it, lower the quotas, "
     f"or set borrow: true on those teams (see {DOC})"),
    ("quotas above nodes.desired on HyperPod",
     teams(team(quota={"trn1": {"nodes": 2}}, borrow=False), orchestrator="hyperpod-slurm"),
     "error: pools[0].nodes.desired = 1: must hold the teams' quotas on pool 'trn1' (alpha 2 "
     "nodes) since alpha may not borrow: its nodes.desired (the instances HyperPod runs) is 1; "
     f"raise it, lower the quotas, or set borrow: true on those teams (see {DOC})"),
]


@pytest.mark.parametrize("case, overrides, message", BAD_INPUTS, ids=[c[0] for c in BAD_INPUTS])
def test_bad_teams_input_gives_one_exact_message(case, overrides, message):
    check_one_error(overrides, message)
    assert STYLE.match(message)
    assert message.endswith(f"(see {DOC})")


def test_a_name_of_40_characters_is_a_team():
    config = load(teams(team("a" * 40))).config
    assert config.team_list[0].name == "a" * 40


def test_a_quota_whose_sum_fits_gives_no_issue():
    loaded = load(teams(team(quota={"trn1": {"nodes": 1}}, borrow=False),
                        team("beta", quota={"trn1": {"neuron_cores": 32}}, borrow=False)))
    assert not [w for w in loaded.warnings if "quota" in w.allowed]


def test_quotas_above_a_pool_only_warn_when_every_team_there_may_borrow():
    """Borrowing on: the quotas are shares of the pool, not promises of nodes."""
    overrides = teams(team(quota={"trn1": {"nodes": 2}}),
                      team("beta", quota={"trn1": {"neuron_cores": 16}}))
    assert warnings_about(overrides, "pools[0].nodes.max") == [
        "warning: pools[0].nodes.max = 2: should hold the teams' quotas on pool 'trn1' (alpha 2 "
        "+ beta 16 NeuronCores (0.5 node) = 2.5 nodes; its nodes.max is 2): every team there "
        "may borrow, so the quotas act as shares, and a team may wait for its quota while "
        f"another holds it (see {DOC})"]


def test_a_team_that_may_not_borrow_elsewhere_does_not_make_the_sum_an_error():
    """Only the teams holding quota on the pool count: beta's quota is on cpu."""
    overrides = teams(team(quota={"trn1": {"nodes": 3}}),
                      team("beta", quota={"cpu": {"nodes": 1}}, borrow=False))
    assert len(warnings_about(overrides, "pools[0].nodes.max")) == 1


def test_hyperpod_compares_nodes_desired_and_eks_nodes_max():
    """trn1 runs 1 node (desired) of at most 2: 2 nodes of quota fit eks, not HyperPod."""
    fixed = team(quota={"trn1": {"nodes": 2}}, borrow=False)
    assert load(teams(fixed)).config.team_list[0].quota("trn1").nodes == 2
    for orchestrator in ("hyperpod-slurm", "hyperpod-eks"):
        assert [e.split(":")[1] for e in errors(teams(fixed, orchestrator=orchestrator))] == [
            " pools[0].nodes.desired = 1"]


def test_a_cpu_neuron_core_quota_is_one_error_and_left_out_of_the_sum():
    """The CPU pool's NeuronCores are reported once, not summed (no division by its 0
    NeuronCores per node)."""
    overrides = teams(team(quota={"cpu": {"neuron_cores": 64}}),
                      team("beta", quota={"cpu": {"nodes": 3}}, borrow=False))
    assert [e.split(" = ")[0] for e in errors(overrides)] == [
        "error: teams[0].quota.cpu.neuron_cores", "error: pools[1].nodes.max"]


def test_no_teams_no_scheduling_rule():
    """Without teams, scheduling is unused: a bad class there is not reported."""
    loaded = load(with_pools(TRN1_POOL, scheduling=classes(("x", 500))))
    assert loaded.config.teams == () and loaded.config.team_list == ()


# --- conversions ---------------------------------------------------------------------------

@pytest.mark.parametrize("instance_type, quota, expected", [
    # trn1.32xlarge: 32 NeuronCores, 16 chips (2 per chip)
    ("trn1.32xlarge", {"nodes": 2}, (2, 64, 32, 256, 1024)),
    ("trn1.32xlarge", {"neuron_cores": 32}, (1, 32, 16, 128, 512)),
    ("trn1.32xlarge", {"neuron_cores": 16}, (None, 16, 8, None, None)),
    ("trn1.32xlarge", {"neuron_cores": 3}, (None, 3, None, None, None)),
    # trn2.48xlarge: 128 physical NeuronCores, 16 chips (8 per chip)
    ("trn2.48xlarge", {"nodes": 1}, (1, 128, 16, 192, 2048)),
    ("trn2.48xlarge", {"neuron_cores": 64}, (None, 64, 8, None, None)),
    ("trn2.48xlarge", {"neuron_cores": 4}, (None, 4, None, None, None)),
    # trn2.3xlarge: 8 NeuronCores, 1 chip
    ("trn2.3xlarge", {"neuron_cores": 16}, (2, 16, 2, 24, 256)),
    # a CPU pool: nodes only, no NeuronCores, no devices
    ("m7i.8xlarge", {"nodes": 3}, (3, 0, 0, 96, 384)),
    ("m7i.8xlarge", {"nodes": 0}, (0, 0, 0, 0, 0)),
    ("trn1.32xlarge", {"neuron_cores": 0}, (0, 0, 0, 0, 0)),
])
def test_team_quota_converts_with_the_catalog(instance_type, quota, expected):
    spec = get_any_instance(instance_type)
    q = TeamQuota.of("p", spec, TeamQuotaConfig(**quota))
    assert (q.nodes, q.neuron_cores, q.neuron_devices, q.vcpus, q.memory_gib) == expected
    assert q.pool == "p" and q.instance is spec


def test_the_catalog_counts_the_conversions_use():
    """The figures the parametrized conversions assume (contracts/catalog.py cites them)."""
    facts = {t: (get_any_instance(t).neuron_cores, get_any_instance(t).chips)
             for t in ("trn1.32xlarge", "trn2.48xlarge", "trn2.3xlarge", "m7i.8xlarge")}
    assert facts == {"trn1.32xlarge": (32, 16), "trn2.48xlarge": (128, 16),
                     "trn2.3xlarge": (8, 1), "m7i.8xlarge": (0, 0)}


def test_team_list_resolves_every_pool_priority_and_default():
    config = load(teams(
        team("alpha", quota={"trn1": {"neuron_cores": 32}}, priority="training"),
        team("beta", quota={"cpu": {"nodes": 2}}, borrow=False, lend=False, default=True),
        scheduling=classes(("training", 100), ("experiment", 10), ("scavenger", 1)))).config
    alpha, beta = config.team_list
    assert (alpha.index, alpha.priority, alpha.default, alpha.borrow, alpha.lend) == (
        0, "training", False, True, True)
    assert (beta.index, beta.priority, beta.default, beta.borrow, beta.lend) == (
        1, "scavenger", True, False, False)  # no priority: the lowest class
    assert [(q.pool, q.nodes, q.neuron_cores) for q in alpha.quotas] == [
        ("trn1", 1, 32), ("cpu", 0, 0)]  # a pool left out: quota 0 there
    assert [(q.pool, q.nodes) for q in beta.quotas] == [("trn1", 0), ("cpu", 2)]
    assert beta.quota("cpu").vcpus == 64
    with pytest.raises(KeyError):
        beta.quota("gpu")


def test_a_single_team_is_the_default_and_two_without_one_have_none():
    one = load(teams(team("solo"))).config.team_list
    assert [t.default for t in one] == [True]
    two = load(teams(team("alpha"), team("beta"))).config.team_list
    assert [t.default for t in two] == [False, False]
