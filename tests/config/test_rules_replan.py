"""The re-split warning (trn_ultracluster.config.rules.replan): a configuration whose Trainium
groups fill several compute subnets is told, once, which fields decide the split and what a
change of them does to a running cluster. The consequence it names is checked against the
plan itself: another layout or pod address count moves or drops groups."""

from __future__ import annotations

import pytest

from tests.config import (
    CPU_POOL,
    STYLE,
    TRN1_POOL,
    load,
    with_pools,
)

EKS_2000 = {"nodes.max": 2000}
"""2,000 trn1.32xlarge on eks: seven node groups over three compute subnets."""


def _resplit(overrides):
    loaded = load(overrides)
    return loaded, [str(w) for w in loaded.warnings if "re-splits them" in str(w)]


def test_a_cluster_over_several_subnets_is_warned_once():
    loaded, (warning,) = _resplit(EKS_2000)
    assert STYLE.match(warning), warning
    assert warning.startswith(
        "warning: instance_type = 'trn1.32xlarge': should change on a running cluster only "
        "after `trn-ultracluster plan` (or with `make deploy`), and so should "
        "efa_interface_layout (efa) and eks.pod_ips_per_node (16): they set the addresses")
    groups = loaded.config.address_plan.groups
    assert f"split the {len(groups)} Trainium groups over 3 compute subnets" in warning
    assert "Subnets is create-only on AWS::EKS::Nodegroup" in warning


@pytest.mark.parametrize("change", [{"efa_interface_layout": "efa-only"},
                                    {"eks.pod_ips_per_node": 60}])
def test_what_the_warning_says_happens(change):
    """The same 2,000 nodes with another layout or pod address count: some group index (its
    construct id) lands in another subnet, or disappears."""
    before = load(EKS_2000).config.address_plan.groups
    after = load({**EKS_2000, **change}).config.address_plan.groups
    moved = [i for i in range(min(len(before), len(after)))
             if before[i].subnet != after[i].subnet]
    assert moved or len(after) < len(before)


@pytest.mark.parametrize("overrides", [
    {},                                                     # one node, one subnet
    {"nodes.max": 16},
    {"nodes.max": 2000, "orchestrator": "hyperpod-slurm"},  # HyperPod ignores layout and pods
])
def test_no_warning_where_nothing_can_move(overrides):
    assert _resplit(overrides)[1] == []


def test_standalone_names_its_own_fields_and_consequence():
    _, (warning,) = _resplit({"nodes.max": 500, "nodes.desired": 1,
                              "orchestrator": "standalone"})
    assert warning.startswith("warning: instance_type = 'trn1.32xlarge': should ")
    assert "and so should efa_interface_layout (efa): they set" in warning
    assert "VPCZoneIdentifier" in warning


def test_pools_over_several_subnets_name_what_moves_the_later_pools():
    """The pools fill the subnets in order: the trn1 pool's nodes.max decides where the CPU
    pool's groups go, so growing it would move them (checked on the plan)."""
    def pools(trn1_max):
        return with_pools({**TRN1_POOL, "nodes": {"min": 0, "desired": 0, "max": trn1_max}},
                          {**CPU_POOL, "nodes": {"min": 0, "desired": 0, "max": 100}},
                          vpc_cidr="10.0.0.0/20")

    loaded, (warning,) = _resplit(pools(20))
    assert STYLE.match(warning), warning
    assert warning.startswith(
        "warning: pools = ['trn1', 'cpu']: should change on a running cluster only after "
        "`trn-ultracluster plan` (or with `make deploy`) in what decides where their groups go: "
        "each pool's instance_type and efa_interface_layout, eks.pod_ips_per_node (16), the "
        "nodes.max of every pool but the last (trn1: 20) and the pools' order.")
    assert "a pool added after the last moves none" in warning
    before = loaded.config.address_plan.pool("cpu").groups
    after = load(pools(40)).config.address_plan.pool("cpu").groups
    assert [g.subnet for g in before] == [0, 1, 2] and [g.subnet for g in after] == [1, 2]
