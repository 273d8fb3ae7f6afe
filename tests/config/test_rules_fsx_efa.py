"""``fsx.efa``: the rules of EFA-enabled FSx for Lustre (FSx for Lustre user guide, "Working
with EFA-enabled file systems", "Configuring EFA clients", "Managing storage capacity") and
what ``auto`` decides.

Each rule is a named test that cites its page; a failing rule with ``true`` is one exact error,
with ``auto`` it keeps EFA off."""

from __future__ import annotations

import pytest

from tests.config import STYLE, errors, load, warnings_about
from trn_ultracluster.config.facts import (
    FSX_EFA_CAPACITY_STEP_GIB,
    FSX_EFA_CLIENT_TYPES,
    FSX_EFA_MAX_CONNECTIONS,
)
from trn_ultracluster.config.fsx_efa import client_interfaces, plan_fsx_efa
from trn_ultracluster.contracts.catalog import CATALOG

EFA_PAGE = "https://docs.aws.amazon.com/fsx/latest/LustreGuide/efa-file-systems.html"
CLIENTS_PAGE = "https://docs.aws.amazon.com/fsx/latest/LustreGuide/configure-efa-clients.html"
CAPACITY_PAGE = "https://docs.aws.amazon.com/fsx/latest/LustreGuide/managing-storage-capacity.html"
def true_suffix(field: str) -> str:
    """What every error of ``fsx.efa: true`` adds: meet the rule or set false, and what
    false does to a deployed EFA-enabled file system."""
    del field  # the same for every field
    return (". fsx.efa is true, which needs this rule: meet it, or set fsx.efa to false for a "
            "file system without EFA (on a deployed stack whose file system has EFA, that "
            "replaces the file system and deletes what it holds beyond its S3 export: "
            "README.md#fsx-for-lustre-over-efa)")
STEPS = ("steps: 38,400 GiB at 125, 19,200 GiB at 250, 9,600 GiB at 500, 4,800 GiB at 1000")

# A trn1 UltraCluster whose file system meets every rule: 14,400 GiB at 1000 MB/s/TiB is
# 14,062 MB/s, above the 10 GB/s from which AWS recommends EFA.
FAST = {"instance_type": "trn1.32xlarge", "nodes.max": "128", "nodes.desired": "0",
        "fsx.storage_capacity_gib": "14400", "fsx.per_unit_storage_throughput": "1000"}
# The smallest EFA-enabled file system at 1000 MB/s/TiB: valid with true, too slow for auto.
SMALLEST = {**FAST, "fsx.storage_capacity_gib": "4800"}


def plan(overrides):
    return plan_fsx_efa(load(overrides).config)


# --- auto --------------------------------------------------------------------------------

def test_auto_is_the_default_and_stays_off_below_the_recommended_throughput():
    """The EFA page: "If you are creating a file system with over 10 GBps of throughput
    capacity, we recommend enabling Elastic Fabric Adapter (EFA)"."""
    default = plan({})
    assert (default.setting, default.enabled, default.mode) == ("auto", False, "off")
    assert default.reason == ("off (auto): the file system's throughput is not above 10,000 "
                              "MB/s, from which AWS recommends EFA")
    assert plan(SMALLEST).enabled is False  # every rule holds, 4,688 MB/s
    assert warnings_about({}, "fsx.efa") == []


def test_auto_turns_efa_on_where_every_rule_holds_above_10_gb_s():
    fast = plan(FAST)
    assert (fast.enabled, fast.mode, fast.failed) == (True, "preferred", ())
    assert fast.interfaces_per_client == 2 and fast.connections == 256
    (warning,) = warnings_about(FAST, "fsx.efa")
    assert warning.startswith("warning: fsx.efa = 'auto': should be true or false, not auto, "
                              "now that auto turns EFA on: EFA is fixed when the file system is "
                              "created, so if this stack is deployed with a file system without "
                              "EFA this deploy replaces it")
    assert STYLE.match(warning)


@pytest.mark.parametrize("overrides, field", [
    ({"instance_type": "trn2.48xlarge", "az_ids": "use2-az3,use2-az1",
      "efa_interface_layout": "efa-only"}, "instance_type"),
    ({"nodes.max": "513"}, "nodes.max"),
    ({"fsx.storage_capacity_gib": "16800"}, "fsx.storage_capacity_gib"),
], ids=["trn2 client", "connections", "capacity step"])
def test_auto_keeps_efa_off_and_says_why_when_a_rule_fails(overrides, field):
    config = {**FAST, **overrides}
    efa = plan(config)
    assert efa.enabled is False and efa.mode == "off"
    assert [r.field for r in efa.failed] == [field]
    (warning,) = warnings_about(config, "fsx.efa")
    assert "from which AWS recommends EFA, but EFA stays off because " + field in warning
    assert efa.reason.startswith(f"off (auto): {field} must ")


def test_auto_names_every_rule_that_keeps_efa_off():
    """A user who fixes the first rule learns of the second now, not at the next synth."""
    config = {**FAST, "nodes.max": "600", "fsx.storage_capacity_gib": "16800"}
    efa = plan(config)
    assert [r.field for r in efa.failed] == ["fsx.storage_capacity_gib", "nodes.max"]
    (warning,) = warnings_about(config, "fsx.efa")
    assert "because fsx.storage_capacity_gib must " in warning
    assert "; and nodes.max must be at most 512" in warning
    assert efa.reason.startswith("off (auto): fsx.storage_capacity_gib must ")
    assert "; nodes.max must be at most 512" in efa.reason


def test_auto_says_why_a_scratch_file_system_above_10_gb_s_has_no_efa():
    """Scratch types take no per-unit throughput; at their 200 MB/s/TiB baseline 60,000 GiB
    is about 11.7 GB/s, above the 10 GB/s from which AWS recommends EFA, so auto warns that
    EFA-enabled file systems are PERSISTENT_2 only. 50,400 GiB (9.8 GB/s) stays silent."""
    big = {**FAST, "fsx.deployment_type": "SCRATCH_2", "fsx.per_unit_storage_throughput": "null",
           "fsx.storage_capacity_gib": "60000"}
    efa = plan(big)
    assert efa.gains and not efa.enabled
    assert [r.name for r in efa.failed] == ["deployment"]
    (warning,) = warnings_about(big, "fsx.efa")
    assert "EFA stays off because fsx.deployment_type must be PERSISTENT_2" in warning
    small = {**big, "fsx.storage_capacity_gib": "50400"}
    assert not plan(small).gains and warnings_about(small, "fsx.efa") == []


def test_false_never_enables_efa():
    efa = plan({**FAST, "fsx.efa": "false"})
    assert (efa.enabled, efa.mode, efa.reason) == (False, "off", "off: fsx.efa is false")
    assert warnings_about({**FAST, "fsx.efa": "false"}, "fsx.efa") == []


def test_true_requires_efa_on_every_node():
    efa = plan({**SMALLEST, "fsx.efa": "true"})
    assert (efa.enabled, efa.mode, efa.reason) == (True, "required", "on: fsx.efa is true")


# --- each rule, as the error of true ----------------------------------------------------

def test_efa_needs_persistent_2_with_a_metadata_configuration():
    """The EFA page, Considerations: "EFA is supported on Persistent 2 file systems with a
    metadata configuration specified"."""
    assert errors({"fsx.efa": "true", "fsx.deployment_type": "PERSISTENT_1",
                   "fsx.per_unit_storage_throughput": "200"}) == [
        "error: fsx.deployment_type = 'PERSISTENT_1': must be PERSISTENT_2: EFA is supported on "
        "Persistent 2 file systems with a metadata configuration"
        + true_suffix("fsx.deployment_type") + f" (see {EFA_PAGE})"]
    assert errors({"fsx.efa": "true", "fsx.lustre_version": "2.12", **SMALLEST}) == [
        "error: fsx.lustre_version = '2.12': must be 2.15: EFA needs a metadata configuration, "
        "which the stack gives PERSISTENT_2 on Lustre 2.15 (the FSx API creates no other "
        "version with one)" + true_suffix("fsx.lustre_version") + f" (see {EFA_PAGE})"]


@pytest.mark.parametrize("tier, step", sorted(FSX_EFA_CAPACITY_STEP_GIB.items()))
def test_efa_capacity_comes_in_larger_steps_per_throughput_tier(tier, step):
    """"Managing storage capacity": "For an EFA-enabled file system, this value must be in
    multiples of 38400 GiB for 125 MBps/TiB ... 19200 GiB for 250 ... 9600 GiB for 500 ...
    4800 GiB for 1000 MBps/TiB file systems"."""
    base = {"fsx.efa": "true", "fsx.per_unit_storage_throughput": str(tier),
            "nodes.max": "1", "nodes.desired": "1"}
    for ok in (step, 2 * step):
        load({**base, "fsx.storage_capacity_gib": str(ok)})
    bad = step + 2400  # a valid step without EFA
    assert errors({**base, "fsx.storage_capacity_gib": str(bad)}) == [
        f"error: fsx.storage_capacity_gib = {bad}: must be a multiple of {step:,} GiB at "
        f"{tier} MB/s/TiB for an EFA-enabled file system ({step // 1200}x the 1,200 GiB "
        f"minimum without EFA; {STEPS})" + true_suffix("fsx.storage_capacity_gib")
        + f" (see {CAPACITY_PAGE})"]


def test_the_default_file_system_is_16_times_too_small_for_efa():
    """ADT PR #1124's warning, checked against the capacity page: at 250 MB/s/TiB the
    smallest EFA-enabled file system is 19,200 GiB, 16x the 1,200 GiB default."""
    (error,) = errors({"fsx.efa": "true"})
    assert "must be a multiple of 19,200 GiB at 250 MB/s/TiB" in error and "(16x" in error


@pytest.mark.parametrize("instance_type, az_ids, extra", [
    ("trn2.48xlarge", "use2-az3,use2-az1", {"efa_interface_layout": "efa-only"}),
    ("trn2.3xlarge", "sae1-az1,sae1-az2", {"orchestrator": "standalone",
                                          "placement_group": "false"}),
    ("trn2u.48xlarge", "use2-az3,use2-az1", {"nodes.max": "4", "nodes.desired": "4"}),
    ("trn1.2xlarge", "usw2-az4,usw2-az1", {"orchestrator": "standalone",
                                          "placement_group": "false"}),
])
def test_efa_clients_are_trn1_and_trn1n_32xlarge_only(instance_type, az_ids, extra):
    """The EFA page and "Configuring EFA clients": "EFA is supported on Nitro v4 (or higher)
    EC2 instances that support EFA, excluding the trn2 instance family"; trn1.2xlarge has no
    EFA."""
    found = errors({**SMALLEST, "fsx.efa": "true", "instance_type": instance_type,
                    "az_ids": az_ids, "nodes.max": "1", "nodes.desired": "1", **extra})
    assert (f"error: instance_type = '{instance_type}': must be one of trn1.32xlarge, "
            "trn1n.32xlarge: clients of an EFA-enabled file system are Nitro v4 or newer "
            "instances with EFA, excluding the trn2 instance family" + true_suffix("instance_type")
            + f" (see {CLIENTS_PAGE})") in found


def test_efa_connections_bound_the_nodes_of_one_file_system():
    """"Configuring EFA clients": "Each FSx for Lustre file system has a maximum limit of 1024
    EFA connections across all client instances"; each bound EFA interface is one."""
    load({**SMALLEST, "fsx.efa": "true", "nodes.max": "512"})
    assert errors({**SMALLEST, "fsx.efa": "true", "nodes.max": "513"}) == [
        "error: nodes.max = 513: must be at most 512: each node binds 2 EFA interface(s) to "
        "Lustre, each one of the file system's 1,024 EFA connections (1,026 needed; past the "
        "limit is not documented)" + true_suffix("nodes.max") + f" (see {CLIENTS_PAGE})"]


def test_efa_clients_share_the_file_systems_16_block():
    """The EFA page: "Use the same Availability Zone and /16 CIDR as your EFA-enabled client
    instances"; the address plan puts the nodes past the primary block in secondary blocks."""
    config = {**SMALLEST, "fsx.efa": "true", "orchestrator": "eks", "nodes.max": "500",
              "vpc_cidr": "10.0.0.0/20", "vpc_secondary_cidrs": "100.64.0.0/16"}
    beside = load({**config, "fsx.efa": "false"}).config.address_plan.nodes_beside_file_system
    assert beside < 500
    (error,) = [e for e in errors(config) if e.startswith("error: vpc_cidr")]
    assert error.startswith(
        f"error: vpc_cidr = '10.0.0.0/20': must hold every node beside the file system: clients "
        f"use the same Availability Zone and /16 CIDR as the file system, and this block holds "
        f"{beside:,} of the 500 nodes (the address plan puts the others in secondary blocks); "
        "use a larger primary block (at most a /16) or lower nodes.max")


def test_efa_setting_is_true_false_or_auto():
    assert errors({"fsx.efa": "maybe"}) == [
        "error: fsx.efa = 'maybe': must be true, false or 'auto' "
        "(see README.md#fsx-for-lustre-over-efa)"]
    assert plan({**SMALLEST, "fsx.efa": "TRUE"}).setting is True


@pytest.mark.parametrize("word", ["yes", "no", "on", "off", "y"])
def test_yaml_1_1_booleans_are_not_an_efa_setting(word, tmp_path):
    """YAML 1.1 (PyYAML's default) reads ``on``/``yes`` as true and ``off``/``no`` as false;
    the loader reads YAML 1.2's booleans only, so these are refused, from ``-c`` and from a
    profile alike, instead of silently turning EFA on or off."""
    expected = [f"error: fsx.efa = '{word}': must be true, false or 'auto' "
                "(see README.md#fsx-for-lustre-over-efa)"]
    assert errors({"fsx.efa": word}) == expected
    profile = tmp_path / "p.yaml"
    profile.write_text(f"fsx:\n  efa: {word}\n")
    assert errors({"config": str(profile)}) == expected


def test_every_rule_message_has_the_one_style():
    for overrides in ({"fsx.efa": "true"},
                      {**SMALLEST, "fsx.efa": "true", "nodes.max": "600"}):
        for line in errors(overrides):
            assert STYLE.match(line), line


# --- the facts behind the rules -----------------------------------------------------------

def test_efa_client_types_are_catalog_rows_with_efa_and_several_network_cards():
    for name in FSX_EFA_CLIENT_TYPES:
        spec = CATALOG[name]
        assert spec.supports_efa and not name.startswith("trn2")
        assert client_interfaces(spec) == 2


@pytest.mark.parametrize("name, interfaces", [("trn1.32xlarge", 2), ("trn1n.32xlarge", 2),
                                              ("trn2.3xlarge", 1), ("trn1.2xlarge", 0)])
def test_client_interfaces_follow_the_guides_default_table(name, interfaces):
    """"Configuring EFA clients", default interfaces: 2 for "Other instances with multiple
    network cards", 1 for "Other instances with a single network card"."""
    assert client_interfaces(CATALOG[name]) == interfaces
    assert 512 * client_interfaces(CATALOG["trn1.32xlarge"]) == FSX_EFA_MAX_CONNECTIONS
