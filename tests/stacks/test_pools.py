"""Node pools in the template: a one-pool stack keeps every resource it had (a running
cluster updates without a replacement), and each Trainium pool of profiles/mixed.yaml has
its own cluster placement group and EFA launch template with its type's network cards."""

from __future__ import annotations

import gzip
import json

import pytest

from tests.conftest import REPO_ROOT, profile_path
from trn_ultracluster.changes import classify, summary
from trn_ultracluster.contracts.catalog import get_any_instance
from trn_ultracluster.contracts.pools import parse_pools

BEFORE = REPO_ROOT / "tests" / "fixtures" / "before-pools"
"""``tests/snapshots/<name>.json`` of commit 83c12cb, the last before node pools
(``git show 83c12cb:tests/snapshots/<name>.json | gzip -9n``): one profile per orchestrator."""
ORCHESTRATORS = ("eks", "hyperpod-slurm", "hyperpod-eks", "standalone")
UPDATED_SINCE: dict[str, dict[str, str]] = {
    "single-node": {
        "EfaLaunchTemplate6E39CCE1": "its user data also fetches lustre_efa.py, the helper "
                                     "lustre_efa.sh calls (a new S3 asset)",
        "StandaloneNodesAE63DFB8": "takes the launch template's new version (no update policy: "
                                   "running nodes stay)",
    },
}
"""Resources of a one-pool stack that later work changed on purpose since 83c12cb, by
profile, and why: they must still be there, updated in place (not replaced)."""


def _before(name: str) -> dict:
    with gzip.open(BEFORE / f"{name}.json.gz", "rt", encoding="utf-8") as f:
        return json.load(f)


@pytest.mark.parametrize("name", ["default", "hyperpod-eks", "single-node", "ultracluster-128",
                                  "trn2"])
def test_a_one_pool_stack_keeps_every_resource_and_gains_only_the_pools_output(synth, name):
    """Every resource of the template before pools is there with the same logical id, type
    and properties (asset hashes masked as in the snapshots); the outputs gain ``Pools``."""
    from tests.test_snapshots import normalize

    before = _before(name)
    after = json.loads(normalize(synth(None if name == "default" else profile_path(name))
                                 .template))
    later = UPDATED_SINCE.get(name, {})
    changes = classify(before, after)
    assert summary([c for c in changes if c.logical_id not in later]) == []
    assert {c.logical_id: c.kind for c in changes if c.logical_id in later} == dict.fromkeys(
        later, "updated")
    assert sorted(after["Resources"]) == sorted(before["Resources"])
    assert set(after["Outputs"]) - set(before["Outputs"]) == {"Pools"}
    assert set(before["Outputs"]) <= set(after["Outputs"])


def _mixed(synth, orchestrator):
    return synth(profile_path("mixed"), **({} if orchestrator == "eks" else
                                            {"orchestrator": orchestrator}))


def _by_instance_type(s) -> dict[str, dict]:
    return {lt["Properties"]["LaunchTemplateData"]["InstanceType"]: lt
            for lt in s.resources("AWS::EC2::LaunchTemplate").values()
            if "InstanceType" in lt["Properties"]["LaunchTemplateData"]}


@pytest.mark.parametrize("orchestrator", ORCHESTRATORS)
def test_each_trainium_pool_has_its_own_placement_group_and_launch_template(synth, orchestrator):
    s = _mixed(synth, orchestrator)
    groups = s.resources("AWS::EC2::PlacementGroup")
    assert sorted(groups) == sorted(k for k in groups if k.startswith("EfaPlacementGroup"))
    assert len(groups) == 2  # trn1 and trn2; the CPU pool has none
    templates = _by_instance_type(s)
    assert {"trn1.32xlarge", "trn2.48xlarge", "m7i.8xlarge"} <= set(templates)
    placed = {}
    for itype, lt in templates.items():
        if itype not in ("trn1.32xlarge", "trn2.48xlarge", "m7i.8xlarge"):
            continue
        data = lt["Properties"]["LaunchTemplateData"]
        spec = get_any_instance(itype)
        interfaces = data["NetworkInterfaces"]
        cards = sorted({i["NetworkCardIndex"] for i in interfaces})
        assert cards == list(range(spec.network_cards)), itype
        efa = [i for i in interfaces if i.get("InterfaceType") in ("efa", "efa-only")]
        assert len(efa) == spec.efa_interfaces, itype
        placed[itype] = data.get("Placement", {}).get("GroupName")
    # trn2 uses efa-only (ENA primary + an EFA-only interface per card)
    trn2 = templates["trn2.48xlarge"]["Properties"]["LaunchTemplateData"]["NetworkInterfaces"]
    assert {i.get("InterfaceType") for i in trn2} == {None, "efa-only"}
    assert placed["m7i.8xlarge"] is None
    refs = {itype: ref["Ref"] for itype, ref in placed.items() if ref}
    assert sorted(refs.values()) == sorted(groups)  # one group each, not shared


@pytest.mark.parametrize("orchestrator", ORCHESTRATORS)
def test_the_pools_output_lists_every_pool_with_its_type_counts_and_image(synth, orchestrator):
    s = _mixed(synth, orchestrator)
    value = s.output("Pools")
    text = value if isinstance(value, str) else "".join(
        part if isinstance(part, str) else "TOKEN" for part in value["Fn::Join"][1])
    pools = parse_pools(text)
    assert [(p.name, p.instance_type, p.accelerated, p.nodes_max, p.neuron_stack)
            for p in pools] == [("trn1", "trn1.32xlarge", True, 2, "xla"),
                                ("trn2", "trn2.48xlarge", True, 4, "native"),
                                ("cpu", "m7i.8xlarge", False, 2, "")]
    assert all(p.image_uri for p in pools)


def test_each_neuron_stack_in_use_gets_its_own_training_image(synth):
    """trn1 (xla) and trn2 (native): two ECR repositories, the main pool's keeping the id of a
    one-pool stack; the CPU pool runs the main image."""
    s = _mixed(synth, "eks")
    repos = sorted(k for k in s.resources("AWS::ECR::Repository"))
    assert len(repos) == 2
    assert any(k.startswith("TrainingImageRepository") for k in repos)
    assert any(k.startswith("TrainingImageNativeRepository") for k in repos)


def test_the_second_image_build_waits_for_the_first(synth):
    """The builds share one CodeBuild project; a build queued longer than the 5-minute queue
    timeout fails the deploy, so the native image's build depends on the xla one's and only
    one runs at a time, whatever the account's concurrent-build quota."""
    from trn_ultracluster.deploy_time import IMAGE_BUILD, concurrent_image_builds

    template = _mixed(synth, "eks").template
    builds = {k: r for k, r in template["Resources"].items() if r["Type"] == IMAGE_BUILD}
    [native] = [k for k in builds if k.startswith("TrainingImageNativeBuild")]
    [main] = [k for k in builds if k.startswith("TrainingImageBuild")]
    assert main in builds[native]["DependsOn"]
    assert concurrent_image_builds(template) == 1
