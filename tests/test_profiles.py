"""The example profiles: what the two trn1 UltraCluster profiles do with FSx for Lustre over
EFA (and what their comments say about it), no profile left with a warning about ``fsx.efa``,
and the list of profiles in docs/configuration-guide.md."""

from __future__ import annotations

import pytest

from tests.conftest import PROFILES, REPO_ROOT, cdk_json_context, profile_path
from trn_ultracluster.config import LoadedConfig, load_config
from trn_ultracluster.config.facts import FSX_EFA_RECOMMENDED_MB_S
from trn_ultracluster.config.fsx_efa import plan_fsx_efa


def load(profile, **overrides: str) -> LoadedConfig:
    """``profile`` (a name in profiles/ or a path) loaded as ``npx cdk synth -c config=...``
    would, with ``-c`` style ``overrides``."""
    context = cdk_json_context()
    context["config"] = str(profile_path(profile) if isinstance(profile, str) else profile)
    context.update(overrides)
    return load_config(context, base_dir=REPO_ROOT)


def test_ultracluster_128_reads_an_efa_enabled_file_system_over_efa():
    loaded = load("ultracluster-128")
    c, plan = loaded.config, plan_fsx_efa(loaded.config)
    assert loaded.warnings == ()
    assert (c.instance_type, c.nodes.max, c.orchestrator, c.az_ids[0]) == (
        "trn1.32xlarge", 128, "hyperpod-slurm", "usw2-az4")
    assert (c.fsx.deployment_type, c.fsx.storage_capacity_gib,
            c.fsx.per_unit_storage_throughput) == ("PERSISTENT_2", 14_400, 1000)
    assert c.fsx.throughput_mb_s > FSX_EFA_RECOMMENDED_MB_S  # above 10 GB/s
    assert c.fsx.efa is True and plan.enabled and plan.mode == "required"
    assert [(r.name, r.ok) for r in plan.rules] == [
        ("deployment", True), ("lustre-version", True), ("capacity", True), ("client", True), ("connections", True),
        ("address-block", True)]
    assert plan.connections == 256  # 128 nodes x 2 interfaces of 1,024
    assert c.data_removal_policy == "retain"


def test_ultracluster_128_with_auto_would_turn_efa_on_and_ask_for_true():
    """What its comment says: auto decides the same, with a warning to write true."""
    loaded = load("ultracluster-128", **{"fsx.efa": "auto"})
    assert plan_fsx_efa(loaded.config).mode == "preferred"
    assert [(w.field, w.doc) for w in loaded.warnings] == [
        ("fsx.efa", "docs/lustre-over-efa.md")]


def test_ultracluster_2000_keeps_efa_off_by_its_own_setting():
    loaded = load("ultracluster-2000")
    plan = plan_fsx_efa(loaded.config)
    assert loaded.config.fsx.efa is False and plan.mode == "off"
    assert not [w for w in loaded.warnings if w.field == "fsx.efa"]
    # what its comment says: too many EFA connections, and not a multiple of the step
    assert {r.name for r in plan.failed} == {"capacity", "connections"}
    assert plan.connections == 4000
    auto = load("ultracluster-2000", **{"fsx.efa": "auto"})
    assert not plan_fsx_efa(auto.config).enabled
    assert [w.field for w in auto.warnings if w.field == "fsx.efa"] == ["fsx.efa"]


@pytest.mark.parametrize("profile", PROFILES, ids=[p.stem for p in PROFILES])
def test_no_profile_warns_about_fsx_efa(profile):
    assert not [w for w in load(profile).warnings if w.field == "fsx.efa"]


def test_the_configuration_guide_lists_every_profile():
    text = (REPO_ROOT / "docs" / "configuration-guide.md").read_text(encoding="utf-8")
    start = text.index("Example profiles in `profiles/`:")
    end = text.find("\n## ", start)
    listed = text[start:end if end != -1 else len(text)]
    assert [p.name for p in PROFILES if f"\n- `{p.name}`:" not in listed] == []
