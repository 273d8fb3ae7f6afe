"""Teams on eks: the Kueue objects (placement rules: a flavor per pool, quotas per team and
flavor from the catalog, borrow/lend limits, one cohort, preemption, priority classes), their
validity against Kueue's CRDs (``tests/fixtures/kueue-0.19.2``), and the template of
profiles/teams.yaml (the chart, the objects, their create/delete order); the default and mixed
templates carry none of it."""

from __future__ import annotations

import copy
import json
from decimal import Decimal
from typing import Any

import pytest
import yaml

from tests.conftest import profile_path
from tests.crds import KUEUE_KINDS, kueue_validator
from tests.orchestrators.eks.test_cluster import K8S_VERSION, _charts, _manifests, _objects
from trn_ultracluster.config import parse_config
from trn_ultracluster.contracts.catalog import get_any_instance
from trn_ultracluster.contracts.pools import POOL_LABEL
from trn_ultracluster.contracts.teams import parse_teams
from trn_ultracluster.orchestrators.eks import kueue
from trn_ultracluster.orchestrators.eks.manifests import neuron_resources_per_node
from trn_ultracluster.orchestrators.eks.pools import cpu_resource_requirements

def _raw(**changes: Any) -> dict[str, Any]:
    raw = yaml.safe_load(profile_path("teams").read_text())
    raw.update(changes)
    return raw


def _config(**changes: Any):
    return parse_config(_raw(**changes)).config


def _pools(config) -> list[kueue.FlavorPool]:
    return [kueue.FlavorPool(p.name, p.instance, {POOL_LABEL: p.name}) for p in config.node_pools]


def _queue(config, team: str) -> dict[str, Any]:
    (found,) = [t for t in config.team_list if t.name == team]
    return kueue.cluster_queue(found, _pools(config), config.scheduling.preemption)


def _quota(queue: dict[str, Any], flavor: str) -> dict[str, dict[str, str]]:
    (group,) = queue["spec"]["resourceGroups"]
    (found,) = [f for f in group["flavors"] if f["name"] == flavor]
    return {r["name"]: {k: v for k, v in r.items() if k != "name"} for r in found["resources"]}


# --- placement rules ------------------------------------------------------------------------


def test_a_flavor_per_pool_selects_its_nodes_and_a_trainium_flavor_needs_the_neuron_taint():
    trn1, cpu = (kueue.resource_flavor(p) for p in _pools(_config()))
    assert trn1["metadata"]["name"] == "trn1"
    assert trn1["spec"]["nodeLabels"] == {POOL_LABEL: "trn1"}
    assert trn1["spec"]["nodeTaints"] == [{"key": "aws.amazon.com/neuron", "value": "true",
                                           "effect": "NoSchedule"}]
    assert "tolerations" not in trn1["spec"]  # the runtime tolerates it; Kueue adds none
    assert cpu["spec"] == {"nodeLabels": {POOL_LABEL: "cpu"}}


def test_the_one_pool_without_pools_is_selected_by_its_instance_type(synth):
    """Its nodes carry no pool label (labels_pool): a pool-label flavor would never place."""
    s = synth(**{"orchestrator": "eks", "teams": [{"name": "solo", "quota": {"trainium":
                                                                           {"nodes": 1}}}]})
    (flavor,) = _objects(s, "ResourceFlavor")
    assert flavor["metadata"]["name"] == "trainium"
    assert flavor["spec"]["nodeLabels"] == {"node.kubernetes.io/instance-type":
                                            s.config.instance_type}
    (queue,) = _objects(s, "ClusterQueue")
    assert _quota(queue, "trainium")["aws.amazon.com/neuron"]["nominalQuota"] == str(
        s.config.instance.chips)


def test_quotas_per_team_and_flavor_come_from_the_catalog():
    config = _config()
    research, platform = _queue(config, "research"), _queue(config, "platform")
    # research: trn1 2 nodes (2 x 16 chips, 8 EFA, 128 vCPU, 512 GiB)
    assert {k: v["nominalQuota"] for k, v in _quota(research, "trn1").items()} == {
        "aws.amazon.com/neuron": "32", "vpc.amazonaws.com/efa": "16", "cpu": "256",
        "memory": "1024Gi"}
    # 1 node of m7i.8xlarge: what one training pod requests there (17 vCPUs, 65 GiB)
    assert {k: v["nominalQuota"] for k, v in _quota(research, "cpu").items()} == {
        "aws.amazon.com/neuron": "0", "vpc.amazonaws.com/efa": "0", "cpu": "17",
        "memory": "65Gi"}
    # platform: 32 NeuronCores = 16 chips = one trn1.32xlarge
    assert _quota(platform, "trn1")["aws.amazon.com/neuron"]["nominalQuota"] == "16"
    assert _quota(platform, "trn1")["vpc.amazonaws.com/efa"]["nominalQuota"] == "8"


def test_a_pool_a_team_left_out_is_a_zero_quota_it_can_borrow_on():
    raw = _raw()
    raw["teams"][0]["quota"].pop("cpu")
    queue = _queue(parse_config(raw).config, "research")
    assert {v["nominalQuota"] for v in _quota(queue, "cpu").values()} == {"0", "0Gi"}
    assert all("borrowingLimit" not in v for v in _quota(queue, "cpu").values())


def test_a_quota_of_some_chips_counts_their_share_of_the_node_rounded_down():
    spec = get_any_instance("trn1.32xlarge")  # 16 chips, 8 EFA, 128 vCPU, 512 GiB
    quota = type("Q", (), {"pool": "trn1", "neuron_devices": 3, "neuron_cores": 6})()
    assert kueue.quota_amounts(spec, quota) == {
        "aws.amazon.com/neuron": "3", "vpc.amazonaws.com/efa": "1", "cpu": "24",
        "memory": "96Gi"}
    quota.neuron_devices = None
    with pytest.raises(ValueError, match="team 'x': quota on pool 'trn1' is 6 NeuronCores, "
                                         "no whole number of trn1.32xlarge chips"):
        kueue.quota_amounts(spec, quota, "x")


@pytest.mark.parametrize("instance_type", ["trn1.32xlarge", "trn1n.32xlarge", "trn2.48xlarge",
                                           "trn1.2xlarge", "m7i.8xlarge"])
@pytest.mark.parametrize("nodes", [1, 3])
def test_a_team_runs_exactly_its_quota_in_nodes(instance_type, nodes):
    """What the pods of a k-node job request fits the quota of ``nodes`` nodes iff k <=
    nodes, on every resource the ClusterQueue covers: the chips (or vCPUs) are the limit and
    the EFA interfaces never bind first."""
    spec = get_any_instance(instance_type)
    quota = type("Q", (), {"pool": "p", "nodes": nodes, "neuron_devices": nodes * spec.chips})()
    amounts = {k: _qty(v) for k, v in kueue.quota_amounts(spec, quota).items()}
    per_pod = ({k: Decimal(v) for k, v in neuron_resources_per_node(spec).items()}
               if spec.accelerated else
               {k: _qty(v) for k, v in cpu_resource_requirements(spec)["requests"].items()})
    assert set(per_pod) <= set(kueue.COVERED_RESOURCES)
    for k in (nodes, nodes + 1):
        fits = all(per_pod[r] * k <= amounts[r] for r in per_pod)
        assert fits == (k <= nodes), (k, per_pod, amounts)


def _qty(text: str) -> Decimal:
    from kubernetes.utils.quantity import parse_quantity

    return parse_quantity(text)


@pytest.mark.parametrize("borrow, lend", [(True, True), (False, False), (True, False),
                                          (False, True)])
def test_borrow_and_lend_become_zero_limits_on_every_flavor_and_resource(borrow, lend):
    raw = _raw()
    raw["teams"][1].update(borrow=borrow, lend=lend)
    queue = _queue(parse_config(raw).config, "platform")
    for flavor in ("trn1", "cpu"):
        for entry in _quota(queue, flavor).values():
            assert entry.get("borrowingLimit") == (None if borrow else "0")
            assert entry.get("lendingLimit") == (None if lend else "0")


def test_every_team_is_in_one_cohort_and_takes_jobs_from_its_namespace_only():
    config = _config()
    for team in ("research", "platform"):
        spec = _queue(config, team)["spec"]
        assert spec["cohortName"] == "trn-ultracluster"
        assert spec["namespaceSelector"] == {"matchLabels": {"kubernetes.io/metadata.name": team}}
    assert kueue.local_queue("research") == {
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
        "metadata": {"name": "research", "namespace": "research",
                     "labels": {"trn-ultracluster/managed-by": "trn-ultracluster"}},
        "spec": {"clusterQueue": "research"}}


@pytest.mark.parametrize("preemption, within, reclaim", [
    ("lower-priority", "LowerPriority", "Any"), ("never", "Never", "Never")])
def test_preemption_follows_scheduling(preemption, within, reclaim):
    config = _config(scheduling={"preemption": preemption})
    assert _queue(config, "research")["spec"]["preemption"] == {
        "withinClusterQueue": within, "reclaimWithinCohort": reclaim}


def test_an_unknown_preemption_is_refused():
    config = _config()
    with pytest.raises(ValueError, match="scheduling.preemption 'sometimes': must be one of "
                                         "lower-priority, never"):
        kueue.cluster_queue(config.team_list[0], _pools(config), "sometimes")


def test_a_priority_class_is_a_workload_priority_class_of_its_weight():
    wpc = kueue.workload_priority_class("training", 100)
    assert (wpc["metadata"]["name"], wpc["value"]) == ("training", 100)


def test_kueue_manages_trainjobs_only_and_holds_queue_less_ones_in_the_stacks_namespaces():
    config = kueue.manager_config(["training", "research", "platform", "research"])
    assert config["integrations"] == {"frameworks": ["trainer.kubeflow.org/trainjob"]}
    assert config["manageJobsWithoutQueueName"] is True
    assert config["managedJobsNamespaceSelector"] == {"matchExpressions": [
        {"key": "kubernetes.io/metadata.name", "operator": "In",
         "values": ["training", "research", "platform"]}]}
    values = kueue.chart_values(["training"])
    assert yaml.safe_load(values["managerConfig"]["controllerManagerConfigYaml"])["kind"] == \
        "Configuration"


# --- the CEL rules of the CRDs, which jsonschema does not run -------------------------------


def _check_cluster_queue_rules(queue: dict[str, Any]) -> None:
    """``flavors must have the same number of resources as the coveredResources``;
    ``borrowingLimit``/``lendingLimit`` "must be null if spec.cohortName is empty"; a flavor
    in at most one resource group (ClusterQueue CRD, v1beta2)."""
    spec = queue["spec"]
    seen: set[str] = set()
    for group in spec["resourceGroups"]:
        for flavor in group["flavors"]:
            assert [r["name"] for r in flavor["resources"]] == group["coveredResources"]
            assert flavor["name"] not in seen
            seen.add(flavor["name"])
            if not spec.get("cohortName"):
                assert all("borrowingLimit" not in r and "lendingLimit" not in r
                           for r in flavor["resources"])


# --- the template of profiles/teams.yaml ----------------------------------------------------


@pytest.fixture(scope="module")
def teams(synth):
    return synth(profile_path("teams"))


@pytest.mark.parametrize("kind", sorted(KUEUE_KINDS))
def test_every_kueue_object_is_valid_against_its_crd(teams, kind):
    validator = kueue_validator(kind)
    found = _objects(teams, kind)
    assert found
    for obj in found:
        assert obj["apiVersion"] == "kueue.x-k8s.io/v1beta2"
        assert [e.message for e in validator.iter_errors(obj)] == []
        if kind == "ClusterQueue":
            _check_cluster_queue_rules(obj)


@pytest.mark.parametrize("kind, mutate", [
    ("ClusterQueue", lambda q: q["spec"].__setitem__("cohort", "old-v1beta1-name")),
    ("ClusterQueue", lambda q: q["spec"]["preemption"].__setitem__("withinClusterQueue", "Any")),
    ("ClusterQueue", lambda q: q["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]
     .__setitem__("nominalQuota", "lots")),
    ("ResourceFlavor", lambda f: f["spec"]["nodeTaints"][0].__setitem__("effect", None)),
    ("LocalQueue", lambda q: q["spec"].__setitem__("clusterQueue", "Bad_Name")),
    ("WorkloadPriorityClass", lambda w: w.__setitem__("value", "high")),
])
def test_a_broken_kueue_object_fails_its_crd(teams, kind, mutate):
    obj = copy.deepcopy(_objects(teams, kind)[0])
    mutate(obj)
    assert list(kueue_validator(kind).iter_errors(obj))


def test_a_broken_cluster_queue_fails_the_cel_rules(teams):
    queue = copy.deepcopy(_objects(teams, "ClusterQueue")[0])
    queue["spec"]["resourceGroups"][0]["flavors"][0]["resources"].pop()
    with pytest.raises(AssertionError):
        _check_cluster_queue_rules(queue)


def test_the_chart_is_pinned_with_its_trainjob_integration(teams):
    chart = _charts(teams)["kueue"]["Properties"]
    assert (chart["Repository"], chart["Version"], chart["Namespace"], chart["Release"]) == (
        "oci://registry.k8s.io/kueue/charts/kueue", "0.20.0", "kueue-system", "kueue")
    assert chart["Wait"] is True and chart["CreateNamespace"] is True
    config = yaml.safe_load(json.loads(chart["Values"])["managerConfig"][
        "controllerManagerConfigYaml"])
    assert config["integrations"]["frameworks"] == ["trainer.kubeflow.org/trainjob"]
    assert config["managedJobsNamespaceSelector"]["matchExpressions"][0]["values"] == [
        "training", "research", "platform"]


def test_the_template_has_the_objects_of_each_pool_team_and_class(teams):
    names = {kind: sorted(o["metadata"]["name"] for o in _objects(teams, kind)) for kind in KUEUE_KINDS}
    assert names == {"ResourceFlavor": ["cpu", "trn1"], "ClusterQueue": ["platform", "research"],
                     "LocalQueue": ["platform", "research"],
                     "WorkloadPriorityClass": ["experiment", "training"]}
    assert sorted(o["metadata"]["name"] for o in _objects(teams, "Namespace")) == [
        "platform", "research", "training"]


def test_each_team_namespace_has_its_own_volume_and_claim_of_the_file_system(teams):
    import kubernetes_validate

    volumes = {v["metadata"]["name"]: v for v in _objects(teams, "PersistentVolume")}
    assert sorted(volumes) == ["fsx-lustre", "fsx-lustre-platform", "fsx-lustre-research"]
    handles = {json.dumps(v["spec"]["csi"]) for v in volumes.values()}
    assert len(handles) == 1  # one file system
    claims = {c["metadata"]["namespace"]: c for c in _objects(teams, "PersistentVolumeClaim")}
    assert sorted(claims) == ["platform", "research", "training"]
    for team in ("research", "platform"):
        claim = claims[team]
        assert claim["metadata"]["name"] == "fsx-lustre"  # what the runtimes mount
        assert claim["spec"]["volumeName"] == f"fsx-lustre-{team}"
        for obj in (claim, volumes[f"fsx-lustre-{team}"]):
            kubernetes_validate.validate(obj, K8S_VERSION, strict=True)


def _ids(s, prefix: str) -> list[str]:
    return [k for k in s.template["Resources"] if prefix in k]


def _depends(s, logical_id: str) -> set[str]:
    return set(s.template["Resources"][logical_id].get("DependsOn", []))


def test_create_and_delete_order(teams):
    """Chart after Trainer; flavors and classes after the chart; a ClusterQueue after every
    flavor; a team's namespace, claim and LocalQueue after its ClusterQueue and volume; the
    training namespace after the chart (so deleted while Kueue runs)."""
    (chart,) = _ids(teams, "chartKueueChart")
    (trainer,) = _ids(teams, "chartKubeflowTrainerChart")
    assert trainer in _depends(teams, chart)
    flavors = set(_ids(teams, "manifestKueueFlavor"))
    assert len(flavors) == 2
    for logical_id in flavors | set(_ids(teams, "manifestKueuePriority")):
        assert chart in _depends(teams, logical_id)
    for team in ("research", "platform"):
        (queue,) = _ids(teams, f"manifestKueueTeam{team}ClusterQueue")
        (volume,) = _ids(teams, f"manifestKueueTeam{team}Volume")
        (objects,) = [k for k in _ids(teams, f"manifestKueueTeam{team}")
                      if k not in (queue, volume)]
        assert flavors | {chart} <= _depends(teams, queue)
        assert {chart, queue, volume} <= _depends(teams, objects)
        kinds = [o["kind"] for o in _manifests(teams)[objects]]
        assert kinds == ["Namespace", "PersistentVolumeClaim", "LocalQueue"]
    (namespace,) = _ids(teams, "manifestTrainingNamespace")
    assert chart in _depends(teams, namespace)


def test_the_teams_output_names_where_each_teams_jobs_go(teams):
    info = parse_teams(teams.output("Teams"))
    assert [(t.name, t.namespace, t.queue, t.cluster_queue) for t in info.teams] == [
        ("research", "research", "research", "research"),
        ("platform", "platform", "platform", "platform")]
    assert {p.name: p.scheduled_as for p in info.priority_classes} == {
        "training": "training", "experiment": "experiment"}


@pytest.mark.parametrize("profile", [None, "mixed"])
def test_without_teams_there_is_no_kueue(synth, profile):
    s = synth(profile_path(profile) if profile else None)
    assert "kueue" not in _charts(s)
    assert not [o for objs in _manifests(s).values() for o in objs
                if o["apiVersion"].startswith("kueue.x-k8s.io")]
    assert "Teams" not in s.template["Outputs"]
    (namespace,) = _ids(s, "manifestTrainingNamespace")
    assert not [d for d in _depends(s, namespace) if "Kueue" in d]
