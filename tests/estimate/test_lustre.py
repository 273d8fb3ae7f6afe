"""FSx for Lustre over EFA in the estimate: storage servers, what one client reaches over TCP
and over EFA, why the file system is EFA-enabled or not, the smallest EFA-enabled size and its
price, and the summary's line. Templates are built here (``LustreConfiguration.EfaEnabled``
and the ``FsxEfa`` output as the stack writes them), so the tests do not depend on a profile."""

from __future__ import annotations

import copy

import pytest

from tests.cli.helpers import preflight_config
from tests.conftest import PROFILES
from trn_ultracluster.config.facts import FSX_EFA_CAPACITY_STEP_GIB
from trn_ultracluster.config.fsx_efa import plan_fsx_efa
from trn_ultracluster.estimate import OfflinePrices, estimate, format_estimate
from trn_ultracluster.estimate.bill import FileSystemThroughput
from trn_ultracluster.estimate.lustre import (
    NO_EFA_PRICE,
    efa_ceiling,
    efa_enabled,
    efa_summary,
    storage_servers,
    tcp_ceiling,
    template_reason,
)
from trn_ultracluster.contracts.outputs import fsx_efa_description
from trn_ultracluster.estimate.prices import OFFLINE, Price


def template(gib: int = 14_400, tier: int | None = 1000, deployment: str = "PERSISTENT_2",
             efa: object = None, mode: str | None = None, nodes: int = 128,
             orchestrator: str | None = None, reason: str | None = None,
             instance_type: str = "trn1.32xlarge") -> dict:
    """A TrnUltraCluster template with one file system (``EfaEnabled`` left out when
    ``efa`` is ``None``) and, with ``mode``, the ``FsxEfa`` output (its description carrying
    ``reason`` when given), and the ``Orchestrator`` output when given."""
    lustre: dict = {"DeploymentType": deployment}
    if tier is not None:
        lustre["PerUnitStorageThroughput"] = tier
    if efa is not None:
        lustre["EfaEnabled"] = efa
    outputs = {"Region": {"Value": "us-east-1"}, "NodeCountMax": {"Value": str(nodes)},
               "InstanceType": {"Value": instance_type}}
    if mode is not None:
        outputs["FsxEfa"] = {"Value": mode}
        if reason is not None:
            outputs["FsxEfa"]["Description"] = fsx_efa_description(reason)
    if orchestrator is not None:
        outputs["Orchestrator"] = {"Value": orchestrator}
    return {"Outputs": outputs, "Resources": {
        "Fsx": {"Type": "AWS::FSx::FileSystem",
                "Properties": {"StorageCapacity": gib, "LustreConfiguration": lustre}}}}


def fs(gib: int, tier: int, efa: bool = False, deployment: str = "PERSISTENT_2"):
    return FileSystemThroughput("Fsx", gib, tier, 128, deployment, efa)


def efa_lines(text: str) -> list[str]:
    """The estimate's lines indented under the file system's throughput line."""
    return [line for line in text.splitlines() if line.startswith("  ")]


@pytest.mark.parametrize("f, servers", [
    (fs(1200, 250), 1),  # 2.4 TiB per OSS without EFA, at least one
    (fs(2400, 250), 1),
    (fs(14_400, 1000), 6),
    (fs(14_400, 1000, efa=True), 3),  # 4.8 TiB per OSS with EFA at 1000 MB/s/TiB
    (fs(19_200, 250, efa=True), 1),  # 19.2 TiB per OSS at 250
    (fs(76_800, 125, efa=True), 2),  # 38.4 TiB per OSS at 125
    (fs(4800, 200, deployment="PERSISTENT_1"), 2),
    (fs(3600, 0, deployment="SCRATCH_1"), 1),  # 3.6 TiB per OSS
    (fs(4800, 300, efa=True), None),  # no such tier: no figure
])
def test_storage_servers_per_deployment_type_tier_and_efa(f, servers):
    assert storage_servers(f) == servers


def test_one_client_over_tcp_is_bound_by_the_least_of_three():
    small = tcp_ceiling(fs(1200, 250))  # 293 MB/s in all: 2.3 Gbps, below 1 x 5 Gbps
    assert small.gbps == pytest.approx(1200 / 1024 * 250 * 8 / 1000)
    assert small.bound == "the file system's 293 MB/s"
    servers = tcp_ceiling(fs(14_400, 1000, efa=True))  # 112.5 Gbps in all, 3 OSS
    assert (servers.gbps, servers.bound) == (15, "3 storage servers x 5 Gbps")
    without = tcp_ceiling(fs(14_400, 1000))  # the same capacity without EFA: 6 OSS
    assert (without.gbps, without.bound) == (30, "6 storage servers x 5 Gbps")
    large = tcp_ceiling(fs(115_200, 1000))  # 48 OSS x 5 = 240 Gbps
    assert (large.gbps, large.bound) == (100, "AWS's 100 Gbps per client over TCP")


def test_one_client_over_efa_is_bound_by_700_gbps_or_the_file_system():
    assert efa_ceiling(fs(14_400, 1000)) is None  # not EFA-enabled
    mid = efa_ceiling(fs(14_400, 1000, efa=True))
    assert mid.gbps == pytest.approx(112.5) and mid.bound == "the file system's 14,062 MB/s"
    large = efa_ceiling(fs(115_200, 1000, efa=True))  # 900 Gbps in all
    assert (large.gbps, large.bound) == (700, "AWS's 700 Gbps per client over EFA")


@pytest.mark.parametrize("value, enabled", [
    (True, True), ("true", True), ("True", True), (False, False), ("false", False),
    (None, False)])
def test_efa_enabled_reads_the_cloudformation_boolean(value, enabled):
    assert efa_enabled(template(efa=value)) is enabled


def test_the_template_reason_matches_the_configurations_where_it_can_tell():
    """``true`` and ``auto`` that turned EFA on: the template's mode tells them apart, and
    the sentence is FsxEfaPlan.reason's."""
    fsx = {"storage_capacity_gib": 14_400, "per_unit_storage_throughput": 1000}
    for setting in (True, "auto"):
        plan = plan_fsx_efa(preflight_config(fsx={**fsx, "efa": setting}))
        assert plan.enabled
        assert template_reason(fs(14_400, 1000, efa=True), plan.mode) == plan.reason


@pytest.mark.parametrize("f, reason", [
    (fs(14_400, 1000, efa=True), "on (EfaEnabled)"),  # no FsxEfa output
    (fs(4800, 200, deployment="PERSISTENT_1"),
     "off: EFA-enabled file systems are PERSISTENT_2 only"),
    (fs(1200, 250), "off: fsx.efa is false, or auto, which stays off at a throughput not above "
                    "10,000 MB/s, from which AWS recommends EFA"),
    (fs(21_600, 1000), "off: fsx.efa is false, or auto found a rule that does not hold "
                       "(a synth with this version writes which in the FsxEfa output's description)"),
])
def test_the_template_reason_without_a_mode(f, reason):
    assert template_reason(f, None) == reason
    assert template_reason(f, "off") == reason


def test_an_efa_enabled_file_system_in_the_estimate():
    text = format_estimate(estimate(template(efa=True, mode="required"),
                                    OfflinePrices("us-east-1")))
    assert ("file system Fsx: 14,400 GiB x 1000 MB/s/TiB = 14,062 MB/s in all (with or "
            "without EFA), 109.9 MB/s per node at 128 nodes") in text
    assert efa_lines(text) == [
        "  EFA: on: fsx.efa is true",
        "  one client: over TCP up to 15 Gbps (3 storage servers x 5 Gbps); over EFA up to "
        "112 Gbps (the file system's 14,062 MB/s)",
        "  smallest EFA-enabled size at 1000 MB/s/TiB: 4,800 GiB, then steps of 4,800 GiB (4x "
        "the 1,200 GiB minimum without EFA): $2,880.00 per month at $0.600/GB-month; this one, "
        "14,400 GiB: $8,640.00"]
    assert f"note: {NO_EFA_PRICE}" in text


def test_the_default_file_system_shows_the_16x_before_anyone_pays():
    """1,200 GiB at 250 MB/s/TiB: EFA would need 19,200 GiB, 16 times the storage."""
    text = format_estimate(estimate(template(gib=1200, tier=250), OfflinePrices("us-east-1")))
    usd = OFFLINE[("fsx-lustre", "PERSISTENT_2/250")].usd
    assert FSX_EFA_CAPACITY_STEP_GIB[250] == 19_200
    assert efa_lines(text) == [
        "  EFA: off: fsx.efa is false, or auto, which stays off at a throughput not above "
        "10,000 MB/s, from which AWS recommends EFA",
        "  one client: over TCP up to 2.3 Gbps (the file system's 293 MB/s); over EFA: not "
        "EFA-enabled (up to 700 Gbps per client on an EFA-enabled file system)",
        f"  smallest EFA-enabled size at 250 MB/s/TiB: 19,200 GiB, then steps of 19,200 GiB "
        f"(16x the 1,200 GiB minimum without EFA): ${19_200 * usd:,.2f} per month at "
        f"${usd:.3f}/GB-month; this one, 1,200 GiB: ${1200 * usd:,.2f}"]
    assert "$4,032.00 per month" in text  # 19,200 x $0.21


def test_the_reason_the_stack_wrote_replaces_the_templates_guess():
    reason = "off (auto): fsx.storage_capacity_gib must be a multiple of 4,800 GiB"
    est = estimate(template(gib=1200, tier=250, mode="off", reason=reason),
                   OfflinePrices("us-east-1"))
    assert f"  EFA: {reason}" in format_estimate(est)
    guess = estimate(template(gib=1200, tier=250, mode="off"), OfflinePrices("us-east-1"))
    assert "  EFA: off: fsx.efa is false, or auto" in format_estimate(guess)


def test_the_smallest_size_is_priced_by_the_price_source():
    class Prices:
        name = "test"

        def price(self, key):
            return Price(1.0, "GB-month", "test") if key[0] == "fsx-lustre" else None

    text = format_estimate(estimate(template(gib=9600, tier=500), Prices()))
    assert ("smallest EFA-enabled size at 500 MB/s/TiB: 9,600 GiB, then steps of 9,600 GiB "
            "(8x the 1,200 GiB minimum without EFA): $9,600.00 per month at $1.000/GB-month; "
            "this one, 9,600 GiB: $9,600.00") in text


class _NoFsxPrices:
    name = "no FSx prices"

    def price(self, key):
        return None


def test_a_file_system_without_a_price_shows_the_size_only():
    text = format_estimate(estimate(template(gib=38_400, tier=125), _NoFsxPrices()))
    assert ("  smallest EFA-enabled size at 125 MB/s/TiB: 38,400 GiB, then steps of 38,400 GiB "
            "(32x the 1,200 GiB minimum without EFA)") in text.splitlines()


def test_a_persistent_1_file_system_cannot_be_efa_enabled():
    text = format_estimate(estimate(template(gib=4800, tier=200, deployment="PERSISTENT_1"),
                                    OfflinePrices("us-east-1")))
    assert "  EFA-enabled file systems are PERSISTENT_2 only (this one is PERSISTENT_1)" in text
    assert NO_EFA_PRICE not in text


def test_a_scratch_file_system_has_no_efa_lines():
    text = format_estimate(estimate(template(gib=1200, tier=None, deployment="SCRATCH_2"),
                                    OfflinePrices("us-east-1")))
    assert efa_lines(text) == [] and NO_EFA_PRICE not in text


@pytest.mark.parametrize("profile", PROFILES, ids=[p.stem for p in PROFILES])
def test_every_profiles_estimate_says_what_its_template_has(synth, profile):
    s = synth(profile)
    text = format_estimate(estimate(s.template, OfflinePrices(s.config.region)))
    per_unit = s.config.fsx.per_unit_storage_throughput is not None
    assert ("  EFA: on" in text) == (per_unit and efa_enabled(s.template))
    assert ("  EFA: off" in text) == (per_unit and not efa_enabled(s.template))


@pytest.mark.parametrize("mode, line", [
    (None, "on (EfaEnabled)"),
    ("required", "on: fsx.efa is true; a node whose Lustre traffic does not go over EFA is an "
                 "error on the node (docs/lustre-over-efa.md says what each orchestrator does)"),
    ("preferred", "on (auto): the file system meets every rule of EFA-enabled file systems and "
                  "its throughput is above 10,000 MB/s; a node whose Lustre traffic falls back "
                  "to TCP logs a warning and reports 0 in node_fsx_lustre_over_efa"),
])
def test_the_summary_line_of_an_efa_enabled_file_system(mode, line):
    assert efa_summary(template(efa=True, mode=mode)) == line


@pytest.mark.parametrize("orchestrator, says", [
    ("hyperpod-slurm", "fails its lifecycle script"),
    ("standalone", "fails its set-up and powers off (its Auto Scaling group replaces it)"),
    ("eks", "powers off before it joins (its node group replaces it); one found on TCP after "
            "it joined logs an ERROR"),
    ("hyperpod-eks", "fails its lifecycle script; one found on TCP after it joined logs an "
                     "ERROR"),
])
def test_what_a_required_node_on_tcp_does_depends_on_the_orchestrator(orchestrator, says):
    """A joined Kubernetes node is not failed (docs/lustre-over-efa.md): the summary must not
    promise on EKS what only the Slurm and standalone nodes do."""
    line = efa_summary(template(efa=True, mode="required", orchestrator=orchestrator))
    assert says in line
    assert ("joined" in line) == orchestrator.endswith("eks")
    preferred = efa_summary(template(efa=True, mode="preferred", orchestrator=orchestrator))
    assert preferred.endswith("falls back to TCP logs a warning and reports 0 in "
                              "node_fsx_lustre_over_efa")


def test_the_summary_gives_the_reason_the_stack_wrote():
    """``false`` and an ``auto`` that a rule kept off look alike in the template; the reason
    in the FsxEfa output's description tells them apart."""
    why = "off (auto): fsx.storage_capacity_gib must be a multiple of 4,800 GiB"
    assert efa_summary(template(efa=False, mode="off", reason=why)) == why
    assert efa_summary(template(efa=False, mode="off", reason="off: fsx.efa is false")) == (
        "off: fsx.efa is false")


def test_the_estimate_shows_no_efa_figures_for_a_client_that_cannot_use_them():
    """EFA-enabled file systems exclude the trn2 family: no "up to 700 Gbps" and no smallest
    EFA-enabled size for a trn2 cluster."""
    text = format_estimate(estimate(template(efa=False, mode="off",
                                             instance_type="trn2.48xlarge"),
                                    OfflinePrices("us-east-1")))
    lines = efa_lines(text)
    assert any("over EFA: not for trn2.48xlarge (clients of an EFA-enabled file system are "
               "trn1.32xlarge, trn1n.32xlarge)" in line for line in lines)
    assert not any("700 Gbps" in line or "smallest EFA-enabled" in line for line in lines)


def test_the_summary_line_without_efa():
    assert efa_summary(template(gib=1200, tier=None, deployment="SCRATCH_2", mode="off")) == (
        "off: EFA-enabled file systems are PERSISTENT_2 only")
    assert efa_summary(template(gib=1200, tier=250, efa=False, mode="off")).startswith(
        "off: fsx.efa is false, or auto")
    empty = copy.deepcopy(template())
    empty["Resources"] = {}
    assert efa_summary(empty) == "no file system"
