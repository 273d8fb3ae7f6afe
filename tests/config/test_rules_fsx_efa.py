"""``fsx.efa``: the rules of EFA-enabled FSx for Lustre (FSx for Lustre user guide, "Working
with EFA-enabled file systems", "Configuring EFA clients", "Managing storage capacity") and
what ``auto`` decides.

Each rule is a named test that cites its page; a failing rule with ``true`` is one exact error,
with ``auto`` it keeps EFA off."""

from __future__ import annotations

import pytest

from tests.config import (
    CPU_POOL,
    STYLE,
    TRN1_POOL,
    TRN2_POOL,
    errors,
    load,
    warnings_about,
    with_pools,
)
from trn_ultracluster.config.facts import (
    FSX_EFA_CAPACITY_STEP_GIB,
    FSX_EFA_CLIENT_TYPES,
    FSX_EFA_MAX_CONNECTIONS,
)
from trn_ultracluster.config.fsx_efa import (
    MODE_IN_LAUNCH_TEMPLATE,
    client_interfaces,
    plan_fsx_efa,
)
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
            "docs/lustre-over-efa.md)")
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


def test_auto_keeps_efa_off_and_says_why_when_a_file_system_rule_fails():
    config = {**FAST, "fsx.storage_capacity_gib": "16800"}
    efa = plan(config)
    assert efa.enabled is False and efa.mode == "off"
    assert [r.field for r in efa.failed] == ["fsx.storage_capacity_gib"]
    (warning,) = warnings_about(config, "fsx.efa")
    assert ("from which AWS recommends EFA, but EFA stays off because "
            "fsx.storage_capacity_gib must be a multiple of 4,800 GiB") in warning
    assert efa.reason.startswith("off (auto): fsx.storage_capacity_gib must ")


def test_auto_names_every_file_system_rule_that_keeps_efa_off():
    """A user who fixes the first rule learns of the second now, not at the next synth."""
    config = {**FAST, "fsx.lustre_version": "2.12", "fsx.storage_capacity_gib": "16800",
              "fsx.data_repository": "null", "data_removal_policy": "destroy"}
    efa = plan(config)
    assert [r.field for r in efa.failed] == ["fsx.lustre_version", "fsx.storage_capacity_gib"]
    (warning,) = warnings_about(config, "fsx.efa")
    assert "because fsx.lustre_version must be 2.15" in warning
    assert "; and fsx.storage_capacity_gib must be a multiple of 4,800 GiB" in warning
    assert efa.reason.startswith("off (auto): fsx.lustre_version must be 2.15")
    assert "; fsx.storage_capacity_gib must " in efa.reason


# --- what never decides: node counts and the client type -----------------------------------

@pytest.mark.parametrize("setting", ["auto", "true"])
def test_no_node_count_decides_whether_the_file_system_has_efa(setting):
    """Turning EFA on or off replaces the file system (EFA is fixed at creation, the EFA page),
    and users grow nodes.max on running clusters: the 1,024-connection and /16 rules are
    checks, so growing past them keeps the file system as it is (on HyperPod, whose nodes
    read the mode from their lifecycle scripts; eks and standalone refuse a grow past them
    with true, below)."""
    base = {**FAST, "fsx.efa": setting, "orchestrator": "hyperpod-slurm"}
    small = plan(base)
    for nodes in ("513", "4000"):
        grown = plan({**base, "nodes.max": nodes})
        assert grown.enabled is small.enabled is True
        assert grown.interfaces_per_client == small.interfaces_per_client == 2
    big = plan({**base, "nodes.max": "4000"})
    assert "connections" in {r.name for r in big.failed}
    assert big.mode == "preferred"  # never required past a limit: no node fails or powers off


def test_a_node_count_past_a_limit_is_a_warning_naming_nodes_max():
    config = {**FAST, "nodes.max": "513"}
    (warning,) = warnings_about(config, "nodes.max")
    assert warning == (
        "warning: nodes.max = 513: should be at most 512 for every node to reach the file "
        "system over EFA: each node binds 2 EFA interface(s) to Lustre, each one of the file "
        "system's 1,024 EFA connections (1,026 needed; what happens past the limit is not "
        "documented). A node that cannot use EFA falls back to TCP (a warning in its log, 0 "
        "on the dashboard). The file system stays EFA-enabled: a node count never replaces it "
        f"(docs/lustre-over-efa.md) (see {CLIENTS_PAGE})")
    assert STYLE.match(warning)
    efa = plan(config)
    assert efa.mode == "preferred"
    assert efa.reason.startswith("on (auto): the file system meets every rule of EFA-enabled "
                                 "file systems and its throughput is above 10,000 MB/s; mode "
                                 "preferred, a node that cannot use EFA falls back to TCP: "
                                 "nodes.max should be at most 512")


def test_the_client_type_does_not_decide_the_file_system_and_its_nodes_use_tcp():
    """A trn2 node cannot be a client of an EFA-enabled file system, which also serves TCP
    clients (module docstring of config/fsx_efa.py): auto decides from the file system, the
    nodes mount it over TCP (mode off), and a warning names instance_type and the way out
    (fsx.efa false, a file-system field)."""
    trn1 = plan(FAST)
    config = {**FAST, "instance_type": "trn2.48xlarge", "az_ids": "use2-az3,use2-az1",
              "efa_interface_layout": "efa-only"}
    efa = plan(config)
    assert efa.enabled is trn1.enabled is True
    assert efa.mode == "off" and [r.name for r in efa.failed] == ["client"]
    assert "; the nodes mount it over TCP: instance_type must be one of" in efa.reason
    (warning,) = warnings_about(config, "instance_type")
    assert warning.startswith(
        "warning: instance_type = 'trn2.48xlarge': should be a client type to use the "
        "EFA-enabled file system that fsx.efa auto decides from the file system's settings")
    assert "set fsx.efa to false for a file system without EFA" in warning
    assert STYLE.match(warning)


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
    EFA connections across all client instances"; each bound EFA interface is one. With true,
    past the limit HyperPod's nodes set up EFA in mode preferred, not required: a node that
    cannot use EFA must not fail its set-up or power off (their lifecycle scripts read the
    mode: no launch template changes)."""
    assert plan({**SMALLEST, "fsx.efa": "true", "nodes.max": "512"}).mode == "required"
    config = {**SMALLEST, "fsx.efa": "true", "nodes.max": "513", "orchestrator": "hyperpod-slurm"}
    efa = plan(config)
    assert (efa.enabled, efa.mode) == (True, "preferred")
    (warning,) = warnings_about(config, "nodes.max")
    assert warning.startswith("warning: nodes.max = 513: should be at most 512 for every node "
                              "to reach the file system over EFA")
    assert ("fsx.efa is true, so the nodes set up Lustre over EFA in mode preferred instead of "
            "required") in warning
    assert "(their lifecycle scripts read it, no launch template)" in warning
    assert warning.endswith(f"(see {CLIENTS_PAGE})") and STYLE.match(warning)
    assert efa.reason.startswith("on: fsx.efa is true; mode preferred, a node that cannot use "
                                 "EFA falls back to TCP: nodes.max should be at most 512")


@pytest.mark.parametrize("orchestrator", sorted(MODE_IN_LAUNCH_TEMPLATE))
def test_true_past_a_limit_is_an_error_where_the_mode_is_in_the_launch_template(orchestrator):
    """On eks and standalone the mode is in the nodes' launch template: dropping to preferred
    past the limit would be a new version that rolls every node (issue 29: a grow changes no
    launch template), and required past it would fail nodes, so the grow is refused."""
    config = {**SMALLEST, "fsx.efa": "true", "nodes.max": "513", "orchestrator": orchestrator}
    (error,) = [e for e in errors(config) if "nodes.max" in e]
    assert error.startswith("error: nodes.max = 513: must be at most 512 for every node to "
                            "reach the file system over EFA")
    assert (f"fsx.efa is true, and on {orchestrator} the nodes' Lustre-over-EFA mode is in "
            "their launch template") in error
    assert "Keep nodes.max within the limit, or set fsx.efa to false" in error
    assert error.endswith(f"(see {CLIENTS_PAGE})") and STYLE.match(error)
    assert plan({**config, "nodes.max": "512"}).mode == "required"  # loads: no error
    assert warnings_about({**config, "fsx.efa": "auto", "fsx.storage_capacity_gib": "14400"},
                          "nodes.max"), "auto keeps its warning (mode preferred either way)"


def test_efa_clients_share_the_file_systems_16_block():
    """The EFA page: "Use the same Availability Zone and /16 CIDR as your EFA-enabled client
    instances"; the address plan puts the nodes past the primary block in secondary blocks,
    which the count check names (nodes.max), as a warning."""
    config = {**SMALLEST, "fsx.efa": "true", "orchestrator": "hyperpod-slurm", "nodes.max": "500",
              "vpc_cidr": "10.0.0.0/20", "vpc_secondary_cidrs": "100.64.0.0/16"}
    beside = load({**config, "fsx.efa": "false"}).config.address_plan.nodes_beside_file_system
    assert beside < 500
    efa = plan(config)
    assert (efa.enabled, efa.mode) == (True, "preferred")
    assert [r.name for r in efa.failed] == ["address-block"]
    (warning,) = warnings_about(config, "nodes.max")
    assert warning.startswith(
        f"warning: nodes.max = 500: should be at most {beside:,} for every node to reach the "
        f"file system over EFA: clients use the same Availability Zone and /16 CIDR as the "
        f"file system, and vpc_cidr 10.0.0.0/20 holds {beside:,} of the 500 nodes (the "
        "address plan puts the others in secondary blocks); a larger primary block (at most a "
        "/16) holds more. fsx.efa is true")
    assert warning.endswith(f"(see {EFA_PAGE})") and STYLE.match(warning)


def test_efa_setting_is_true_false_or_auto():
    assert errors({"fsx.efa": "maybe"}) == [
        "error: fsx.efa = 'maybe': must be true, false or 'auto' "
        "(see docs/lustre-over-efa.md)"]
    assert plan({**SMALLEST, "fsx.efa": "TRUE"}).setting is True


@pytest.mark.parametrize("word", ["yes", "no", "on", "off", "y"])
def test_yaml_1_1_booleans_are_not_an_efa_setting(word, tmp_path):
    """YAML 1.1 (PyYAML's default) reads ``on``/``yes`` as true and ``off``/``no`` as false;
    the loader reads YAML 1.2's booleans only, so these are refused, from ``-c`` and from a
    profile alike, instead of silently turning EFA on or off."""
    expected = [f"error: fsx.efa = '{word}': must be true, false or 'auto' "
                "(see docs/lustre-over-efa.md)"]
    assert errors({"fsx.efa": word}) == expected
    profile = tmp_path / "p.yaml"
    profile.write_text(f"fsx:\n  efa: {word}\n")
    assert errors({"config": str(profile)}) == expected


def test_every_rule_message_has_the_one_style():
    for overrides in ({"fsx.efa": "true"},
                      {**SMALLEST, "fsx.efa": "true", "fsx.lustre_version": "2.12",
                       "fsx.data_repository": "null", "data_removal_policy": "destroy",
                       "instance_type": "trn2.48xlarge",
                       "az_ids": "use2-az3,use2-az1", "efa_interface_layout": "efa-only"}):
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


# --- pools: the file system's clients are every pool's nodes -----------------------------

def _pools(*pools, **overrides):
    return with_pools(*pools, **{k: v for k, v in SMALLEST.items()
                                 if k.startswith("fsx.")}, **overrides)


def test_each_pool_gets_its_own_mode_and_cpu_pools_mount_over_tcp():
    """true asks EFA of every Trainium client: the trn1 pools' nodes require it; a CPU pool
    (no EFA) is never a client and mounts over TCP (mode off), so true fails none of its
    nodes; the reason says so."""
    efa = plan(_pools(TRN1_POOL, {**TRN1_POOL, "name": "trn1b"}, CPU_POOL,
                      **{"fsx.efa": "true"}))
    assert efa.clients == ("trn1", "trn1b") and efa.cpu_pools == ("cpu",)
    assert [efa.pool_mode(p) for p in ("trn1", "trn1b", "cpu")] == ["required", "required",
                                                                     "off"]
    assert efa.mode == "required"  # the main pool's
    assert efa.reason == "on: fsx.efa is true; the CPU pool cpu (no EFA) mounts it over TCP"
    assert [r.field for r in efa.rules if r.kind == "client"] == ["pools[0].instance_type",
                                                                  "pools[1].instance_type"]


def test_a_trainium_pool_that_cannot_be_a_client_is_named_by_its_own_key():
    assert errors(_pools(TRN1_POOL, TRN2_POOL, CPU_POOL, **{"fsx.efa": "true"})) == [
        "error: pools[1].instance_type = 'trn2.48xlarge': must be one of trn1.32xlarge, "
        "trn1n.32xlarge: clients of an EFA-enabled file system are Nitro v4 or newer instances "
        "with EFA, excluding the trn2 instance family" + true_suffix("pools[1].instance_type")
        + f" (see {CLIENTS_PAGE})"]
    fast = {**_pools(TRN1_POOL, TRN2_POOL, CPU_POOL), **{k: v for k, v in FAST.items()
                                                         if k.startswith("fsx.")}}
    efa = plan(fast)
    assert efa.enabled and [efa.pool_mode(p) for p in ("trn1", "trn2", "cpu")] == [
        "preferred", "off", "off"]
    assert efa.reason.endswith("; the CPU pool cpu (no EFA) mounts it over TCP; those pools' "
                               "nodes mount it over TCP: pools[1].instance_type must be one of "
                               "trn1.32xlarge, trn1n.32xlarge: clients of an EFA-enabled file "
                               "system are Nitro v4 or newer instances with EFA, excluding the "
                               "trn2 instance family")
    (warning,) = warnings_about(fast, "pools[1].instance_type")
    assert warning.startswith("warning: pools[1].instance_type = 'trn2.48xlarge': should be a "
                              "client type to use the EFA-enabled file system")


def test_efa_connections_count_the_client_pools_only():
    """1,024 connections across all clients: two trn1 pools of 300 nodes bind 1,200; the
    CPU pool binds none. On eks (mode in the launch template) true past it is an error."""
    def config(orchestrator, cpu_max=2):
        return _pools({**TRN1_POOL, "nodes": {"min": 0, "desired": 0, "max": 300}},
                      {**TRN1_POOL, "name": "trn1b", "nodes": {"min": 0, "desired": 0,
                                                               "max": 300}},
                      {**CPU_POOL, "nodes": {"min": 0, "desired": 0, "max": cpu_max}},
                      **{"fsx.efa": "true", "orchestrator": orchestrator})

    efa = plan(config("hyperpod-slurm", cpu_max=600))
    assert efa.connections == 1200 and efa.pool_mode("trn1") == "preferred"
    (warning,) = warnings_about(config("hyperpod-slurm", cpu_max=600), "pools")
    assert warning.startswith(
        "warning: pools = {'trn1': 300, 'trn1b': 300}: should need at most 1,024 EFA "
        "connections in all for every node to reach the file system over EFA: each node of an "
        "EFA client pool binds EFA interfaces to Lustre (nodes.max x interfaces: trn1: 300 x 2, "
        "trn1b: 300 x 2), each one of the file system's 1,024 EFA connections (1,200 needed;")
    (error,) = [e for e in errors(config("eks")) if e.startswith("error: pools =")]
    assert "Keep the client pools' nodes.max within the limit, or set fsx.efa to false" in error
    assert STYLE.match(error)
