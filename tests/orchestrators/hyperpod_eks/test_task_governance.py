"""HyperPod task governance on ``hyperpod-eks`` (one synth: profiles/teams.yaml with
``orchestrator=hyperpod-eks``, as the profile-wide tests make it): the add-on, the cluster
policy and a compute quota per team; their requests against botocore's SageMaker model
(required members and types, and the enums, patterns and ranges botocore's own validator
skips); the placement rules (borrow/lend -> ``Strategy``, NeuronCores -> ``Count``); the create
and delete order; the FSx claim in each team's namespace; the ``Teams`` output and the
TrainJob the job CLI renders from it (its labels on every replicated job of the synthesized
runtimes); and none of it without teams."""

from __future__ import annotations

import json
import re
from typing import Any

import jsonschema
import pytest
import yaml
from botocore.validate import validate_parameters

from tests.crds import trainjob_validator
from tests.cli.helpers import dry_run
from tests.conftest import REPO_ROOT, profile_path
from tests.orchestrators.hyperpod import resolve, sagemaker_model
from trn_ultracluster.cli.backends.hyperpod_eks import TASK_GOVERNANCE_PATCH_MANAGER
from trn_ultracluster.config.model.teams import (
    PriorityClassConfig,
    SchedulingConfig,
    Team,
    TeamQuota,
    TeamQuotaConfig,
)
from trn_ultracluster.contracts.catalog import CATALOG, CPU_CATALOG
from trn_ultracluster.contracts.teams import KUEUE_PRIORITY_LABEL, KUEUE_QUEUE_LABEL, parse_teams
from trn_ultracluster.orchestrators.hyperpod_eks import task_governance as tg
from trn_ultracluster.template_graph import dependencies, transitive_dependencies

QUOTA = "AWS::SageMaker::ComputeQuota"
POLICY = "AWS::SageMaker::ClusterSchedulerConfig"
WAIT = "Custom::AWSCDK-EKS-KubernetesObjectValue"
MANIFEST = "Custom::AWSCDK-EKS-KubernetesResource"
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?\Z")
"""A Kubernetes label value: at most 63 characters of this form (Kubernetes docs, "Labels
and Selectors", "Syntax and character set")."""


def _profile(name: str) -> dict[str, str]:
    """The context keys tests/stacks/conftest.py gives a profile on hyperpod-eks (one cached
    synth shared with the profile-wide tests)."""
    return {"config": str(REPO_ROOT / "profiles" / f"{name}.yaml"),
            "orchestrator": "hyperpod-eks"}


@pytest.fixture(scope="module")
def teams(synth):
    return synth(**_profile("teams"))



# --- botocore's SageMaker model --------------------------------------------------------------

def shape_problems(value: Any, shape: Any, path: str = "") -> list[str]:
    """What botocore's ``validate_parameters`` leaves unchecked: enums, patterns (the model's
    are unanchored: matched whole; the ``\\p{...}`` ones of free text are skipped, Python's
    ``re`` lacks them), string lengths, list sizes and number ranges, recursively."""
    meta, kind, found = shape.metadata, shape.type_name, []
    if kind == "structure":
        for key, inner in value.items():
            found += shape_problems(inner, shape.members[key], f"{path}.{key}")
    elif kind == "list":
        if not meta.get("min", 0) <= len(value) <= meta.get("max", len(value)):
            found.append(f"{path}: {len(value)} items")
        for i, inner in enumerate(value):
            found += shape_problems(inner, shape.member, f"{path}[{i}]")
    elif kind == "string":
        if shape.enum and value not in shape.enum:
            found.append(f"{path}: {value!r} not in {shape.enum}")
        pattern = meta.get("pattern")
        if pattern and "\\p" not in pattern and not re.fullmatch(pattern, value):
            found.append(f"{path}: {value!r} !~ {pattern}")
        if not meta.get("min", 0) <= len(value) <= meta.get("max", len(value)):
            found.append(f"{path}: length {len(value)}")
    elif kind in ("integer", "long", "float", "double"):
        if not meta.get("min", value) <= value <= meta.get("max", value):
            found.append(f"{path}: {value} out of range")
    return found


def api_request(operation: str, properties: dict[str, Any], template: dict[str, Any],
                ) -> dict[str, Any]:
    """The SageMaker ``operation`` request of a resource's properties (CloudFormation's names
    are the API's), validated by botocore and by :func:`shape_problems`."""
    shape = sagemaker_model().operation_model(operation).input_shape
    params = resolve({k: v for k, v in properties.items() if k in shape.members}, template)
    assert set(properties) <= set(shape.members), set(properties) - set(shape.members)
    validate_parameters(params, shape)
    assert shape_problems(params, shape) == []
    return params


def test_the_checker_finds_what_botocore_skips():
    """Not a test that cannot fail: an unknown strategy, a bad team name and a weight of 101
    pass botocore's validator but not :func:`shape_problems`."""
    shape = sagemaker_model().operation_model("CreateComputeQuota").input_shape
    arn = "arn:aws:sagemaker:us-west-2:123456789012:cluster/abcdef012345"
    bad = {"Name": "q", "ClusterArn": arn,
           "ComputeQuotaConfig": {"ResourceSharingConfig": {"Strategy": "Borrow"}},
           "ComputeQuotaTarget": {"TeamName": "Research_1", "FairShareWeight": 101}}
    validate_parameters(bad, shape)
    assert len(shape_problems(bad, shape)) == 3


def test_every_request_is_valid_for_botocore(teams):
    (policy,) = teams.resources(POLICY).values()
    request = api_request("CreateClusterSchedulerConfig", policy["Properties"], teams.template)
    assert request["ClusterArn"].endswith(":cluster/abcdef012345")
    quotas = teams.resources(QUOTA)
    assert len(quotas) == 2
    for quota in quotas.values():
        api_request("CreateComputeQuota", quota["Properties"], teams.template)


# --- what the template carries ---------------------------------------------------------------

def test_the_policy_has_the_priority_classes_fair_share_and_idle_sharing(teams):
    (policy,) = teams.resources(POLICY).values()
    props = policy["Properties"]
    assert props["Name"] == tg.SCHEDULER_CONFIG_NAME
    assert props["SchedulerConfig"] == {
        "PriorityClasses": [{"Name": "training", "Weight": 100},
                            {"Name": "experiment", "Weight": 10}],
        "FairShare": "Enabled",
        "IdleResourceSharing": "Enabled",  # research may borrow
    }
    assert {"Key": "env", "Value": "teams"} in props["Tags"]


def test_only_the_policy_and_the_quotas_skip_cfn_lints_region_lists(teams):
    """cfn-lint 1.58 lists the policy's type in us-east-1 but not in us-west-2, the teams
    profile's Region (so it would be E3006 there), and the quota's in us-west-2 but not in
    us-west-1; only E3006 is skipped, only on them."""
    from cfnlint.schema import PROVIDER_SCHEMA_MANAGER as schemas

    def listed(region, cfn_type):
        return cfn_type in schemas.get_resource_types(region)

    assert listed("us-east-1", POLICY) and not listed("us-west-2", POLICY)
    assert listed("us-west-2", QUOTA) and not listed("us-west-1", QUOTA)
    skipping = {k for k, r in teams.template["Resources"].items()
                if "cfn-lint" in r.get("Metadata", {})}
    assert skipping == {*teams.resources(POLICY), *teams.resources(QUOTA)}
    for name in skipping:
        assert teams.template["Resources"][name]["Metadata"]["cfn-lint"] == {
            "config": {"ignore_checks": ["E3006"]}}


@pytest.mark.parametrize("cfn_type", [POLICY, QUOTA])
def test_the_properties_fit_cfn_lints_schema_of_the_type(teams, cfn_type):
    """What E3006 skips in a Region whose list lacks the type: the properties against the
    type's schema (us-east-1 has both), tags aside (their ``\\p{L}`` patterns are not
    Python's; the schema is not checked against the metaschema for the same reason)."""
    from cfnlint.schema import PROVIDER_SCHEMA_MANAGER as schemas

    validator = jsonschema.Draft7Validator(
        schemas.get_resource_schema("us-east-1", cfn_type).schema)
    for resource in teams.resources(cfn_type).values():
        props = resolve(resource["Properties"], teams.template)
        assert "Tags" in props and "Description" not in props
        validator.validate({k: v for k, v in props.items() if k != "Tags"})
        assert list(validator.iter_errors({**props, "Tags": "x", "Name": ""}))  # it can fail


def test_a_quota_per_team_in_whole_instances_with_its_sharing(teams):
    quotas = {r["Properties"]["Name"]: r["Properties"] for r in teams.resources(QUOTA).values()}
    research, platform = quotas["research"], quotas["platform"]
    # research: trn1 2 nodes, cpu 1 node; platform: 32 NeuronCores = 1 trn1.32xlarge, cpu 1
    assert research["ComputeQuotaConfig"]["ComputeQuotaResources"] == [
        {"InstanceType": "ml.trn1.32xlarge", "Count": 2},
        {"InstanceType": "ml.m7i.8xlarge", "Count": 1}]
    assert platform["ComputeQuotaConfig"]["ComputeQuotaResources"] == [
        {"InstanceType": "ml.trn1.32xlarge", "Count": 1},
        {"InstanceType": "ml.m7i.8xlarge", "Count": 1}]
    assert research["ComputeQuotaConfig"]["ResourceSharingConfig"] == {
        "Strategy": "LendAndBorrow", "BorrowLimit": tg.BORROW_LIMIT_PERCENT}
    assert platform["ComputeQuotaConfig"]["ResourceSharingConfig"] == {"Strategy": "DontLend"}
    for name, quota in quotas.items():
        assert quota["ComputeQuotaTarget"] == {"TeamName": name,
                                               "FairShareWeight": tg.FAIR_SHARE_WEIGHT}
        assert quota["ComputeQuotaConfig"]["PreemptTeamTasks"] == "LowerPriority"
        assert quota["ActivationState"] == "Enabled"
        assert quota["ClusterArn"] == {"Fn::GetAtt": [
            teams.ref_id("HyperPodEksHyperPodCluster"), "ClusterArn"]}
        assert {"Key": "env", "Value": "teams"} in quota["Tags"]  # Tags.of skips CfnResource


def test_the_add_on_is_task_governance_at_the_configured_version(teams):
    addons = {r["Properties"]["AddonName"]: r["Properties"]
              for r in teams.resources("AWS::EKS::Addon").values()}
    governance = addons[tg.ADDON_NAME]
    assert "AddonVersion" not in governance  # null: EKS's default build
    assert governance["ResolveConflicts"] == "OVERWRITE"


# --- order -----------------------------------------------------------------------------------

def test_created_after_the_hyperpod_cluster_and_deleted_before_it(teams):
    """Create: HyperPod cluster, add-on, policy, quotas, namespace waits, volumes; CloudFormation
    deletes in the reverse order, so the quotas and the policy are gone before the cluster
    ("cluster deletion fails due to attached ... task governance policies")."""
    t, graph = teams.template, dependencies(teams.template)
    cluster = teams.ref_id("HyperPodEksHyperPodCluster")
    (addon,) = [k for k, r in teams.resources("AWS::EKS::Addon").items()
                if r["Properties"]["AddonName"] == tg.ADDON_NAME]
    (policy,) = teams.resources(POLICY)
    fsx_csi = teams.ref_id("HyperPodEksAddonawsfsxcsidriver")
    assert cluster in graph[addon] and addon in graph[policy]
    for team in ("research", "platform"):
        quota = next(k for k in teams.resources(QUOTA) if team in k)
        wait = next(k for k in teams.resources(WAIT) if team in k)
        volume = next(k for k in teams.resources(MANIFEST) if f"FsxVolume{team}" in k)
        assert policy in graph[quota] and quota in graph[wait]
        assert {wait, fsx_csi} <= graph[volume]
        assert cluster in transitive_dependencies(t, quota)
    governance = {addon, policy, *teams.resources(QUOTA), *teams.resources(WAIT)}
    assert not governance & transitive_dependencies(t, cluster)  # no cycle


# --- the FSx claim in each team's namespace --------------------------------------------------

def manifest_objects(resource: dict[str, Any]) -> list[dict[str, Any]]:
    """The objects of a ``KubernetesManifest``, its tokens (inside JSON strings) as ``T``."""
    manifest = resource["Properties"]["Manifest"]
    if isinstance(manifest, dict):
        manifest = "".join(p if isinstance(p, str) else "T" for p in manifest["Fn::Join"][1])
    return json.loads(manifest)


def test_each_team_namespace_gets_the_file_systems_claim(teams):
    manifests = teams.resources(MANIFEST)
    training_pv, training_pvc = manifest_objects(next(
        r for k, r in manifests.items() if k.startswith("HyperPodEksClustermanifestFsxVolume")))
    for team in ("research", "platform"):
        wait = next(r for k, r in teams.resources(WAIT).items() if team in k)["Properties"]
        assert (wait["ObjectType"], wait["ObjectName"]) == ("namespace", f"hyperpod-ns-{team}")
        assert wait["TimeoutSeconds"] == 13 * 60  # within the kubectl Lambda's 15 minutes
        pv, pvc = manifest_objects(next(r for k, r in manifests.items()
                                        if f"FsxVolume{team}" in k))
        assert pv["metadata"]["name"] == f"fsx-lustre-hyperpod-ns-{team}"
        assert pv["spec"] == training_pv["spec"]  # the same file system
        assert pvc["metadata"]["namespace"] == f"hyperpod-ns-{team}"
        assert pvc["metadata"]["name"] == training_pvc["metadata"]["name"]  # the runtime's
        assert pvc["spec"] == {**training_pvc["spec"], "volumeName": pv["metadata"]["name"]}


# --- what the job CLI reads, and the TrainJob it renders ---------------------------------------

def test_the_teams_output_names_task_governances_objects(teams):
    info = parse_teams(teams.output("Teams"))
    research = info.team("research")
    assert (research.namespace, research.queue, research.cluster_queue) == (
        "hyperpod-ns-research", "hyperpod-ns-research-localqueue",
        "hyperpod-ns-research-clusterqueue")
    assert {p.name: p.scheduled_as for p in info.priority_classes} == {
        "training": "training-priority", "experiment": "experiment-priority"}


def test_a_team_job_goes_to_its_namespace_and_queue_at_its_class(capsys, tmp_path, teams,
                                                                   monkeypatch):
    from tests.cli import helpers

    base = helpers.outputs_values
    monkeypatch.setattr(helpers, "outputs_values",
                        lambda *a, **k: {**base(*a, **k), "Teams": teams.output("Teams")})
    manifest = yaml.safe_load(dry_run(capsys, tmp_path, "hyperpod-eks", "--team", "platform",
                                      "--priority", "experiment"))
    trainjob_validator().validate(manifest)
    meta = manifest["metadata"]
    assert meta["namespace"] == "hyperpod-ns-platform"
    assert meta["labels"][KUEUE_QUEUE_LABEL] == "hyperpod-ns-platform-localqueue"
    assert meta["labels"][KUEUE_PRIORITY_LABEL] == "experiment-priority"
    default = yaml.safe_load(dry_run(capsys, tmp_path, "hyperpod-eks"))  # research, its class
    assert default["metadata"]["namespace"] == "hyperpod-ns-research"
    assert default["metadata"]["labels"][KUEUE_PRIORITY_LABEL] == "experiment-priority"
    # ... and on the Job and pod templates of every replicated job of the stack's runtimes
    runtimes = [o for r in teams.resources(MANIFEST).values() for o in manifest_objects(r)
                if o["kind"] == "ClusterTrainingRuntime"]
    assert len(runtimes) == 2  # pools trn1 and cpu
    (patch,) = [p for p in manifest["spec"]["runtimePatches"]
                if p["manager"] == TASK_GOVERNANCE_PATCH_MANAGER]
    patched = {j["name"]: j["template"] for j in
               patch["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"]}
    for runtime in runtimes:
        names = [j["name"] for j in runtime["spec"]["template"]["spec"]["replicatedJobs"]]
        assert names == list(patched), runtime["metadata"]["name"]
    labels = {KUEUE_QUEUE_LABEL: "hyperpod-ns-platform-localqueue",
              KUEUE_PRIORITY_LABEL: "experiment-priority"}
    for template in patched.values():
        assert template["metadata"]["labels"] == labels
        assert template["spec"]["template"]["metadata"]["labels"] == labels


def test_the_longest_names_are_valid_label_values():
    team, cls = "t" * 40, "c" * 40  # TEAM_NAME_MAX, the longest the rules allow
    assert len(tg.local_queue(team)) == 63
    assert LABEL_VALUE.match(tg.local_queue(team)) and LABEL_VALUE.match(
        tg.priority_class_name(cls))
    assert len(tg.team_namespace(team)) <= 63  # a namespace is a DNS label


# --- placement rules -------------------------------------------------------------------------

TRN1, CPU = CATALOG["trn1.32xlarge"], CPU_CATALOG["m7i.8xlarge"]


def _team(borrow: bool, lend: bool, *quotas: TeamQuota) -> Team:
    return Team("t", 0, tuple(quotas), borrow, lend, "training", False)


@pytest.mark.parametrize("borrow, lend, sharing", [
    (True, True, {"Strategy": "LendAndBorrow", "BorrowLimit": 10000}),
    (False, True, {"Strategy": "Lend"}),
    (False, False, {"Strategy": "DontLend"}),
])
def test_borrow_and_lend_become_the_strategy(borrow, lend, sharing):
    assert tg.resource_sharing(_team(borrow, lend)) == sharing


def test_borrowing_without_lending_has_no_strategy():
    with pytest.raises(ValueError, match="cannot borrow without lending"):
        tg.resource_sharing(_team(True, False))


def test_neuron_cores_become_whole_instances_summed_per_type():
    """64 NeuronCores of trn1.32xlarge = 2 instances; two pools of one type are one entry
    (task governance allocates by instance type); a CPU pool counts its nodes."""
    quotas = (TeamQuota.of("a", TRN1, TeamQuotaConfig(neuron_cores=64)),
              TeamQuota.of("cpu", CPU, TeamQuotaConfig(nodes=0)),
              TeamQuota.of("b", TRN1, TeamQuotaConfig(nodes=3)))
    assert tg.quota_resources(_team(True, True, *quotas)) == [
        {"InstanceType": "ml.trn1.32xlarge", "Count": 5},
        {"InstanceType": "ml.m7i.8xlarge", "Count": 0}]
    with pytest.raises(ValueError, match="no whole number of nodes"):
        tg.quota_resources(_team(True, True, TeamQuota.of(
            "a", TRN1, TeamQuotaConfig(neuron_cores=16))))


@pytest.mark.parametrize("preemption, value", [("lower-priority", "LowerPriority"),
                                               ("never", "Never")])
def test_preemption_becomes_preempt_team_tasks(preemption, value):
    props = tg.compute_quota_properties(_team(False, False), cluster_arn="arn",
                                        preemption=preemption, tags={})
    assert props["ComputeQuotaConfig"]["PreemptTeamTasks"] == value
    assert "Tags" not in props


def test_idle_sharing_only_when_some_team_borrows():
    classes = SchedulingConfig(priority_classes=(PriorityClassConfig(name="a", weight=1),))
    assert tg.scheduler_config(classes, [_team(False, True)])["IdleResourceSharing"] == "Disabled"
    assert tg.scheduler_config(classes, [_team(False, True), _team(True, True)])[
        "IdleResourceSharing"] == "Enabled"


# --- nothing without teams -------------------------------------------------------------------

@pytest.mark.parametrize("name", ["hyperpod-eks", "mixed"])
def test_without_teams_no_task_governance(synth, name):
    """profiles/hyperpod-eks.yaml, and profiles/mixed.yaml on hyperpod-eks (the synths of
    test_cluster.py and of the profile-wide tests)."""
    s = synth(profile_path(name)) if name == "hyperpod-eks" else synth(**_profile(name))
    assert not s.resources(QUOTA) and not s.resources(POLICY) and not s.resources(WAIT)
    assert tg.ADDON_NAME not in {r["Properties"]["AddonName"]
                                 for r in s.resources("AWS::EKS::Addon").values()}
    assert "Teams" not in s.template["Outputs"]
