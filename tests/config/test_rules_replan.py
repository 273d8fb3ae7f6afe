"""The re-split warning (trn_ultracluster.config.rules.replan): a configuration whose Trainium
groups fill several compute subnets is told, once, which fields decide the split and what a
change of them does to a running cluster. The consequence it names is checked against the
plan itself: another layout or pod address count moves or drops groups."""

from __future__ import annotations

import pytest

from tests.config import STYLE, load

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
