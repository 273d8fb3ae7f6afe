"""The bill of materials read from each synthesized configuration."""

from __future__ import annotations

import pytest

from tests.conftest import PROFILES, profile_path
from trn_ultracluster.estimate import bill_of_materials


def by_key(bill):
    out: dict = {}
    for item in bill.items:
        out.setdefault(item.key, []).append(item)
    return out


def test_eks_bills_node_groups_from_min_to_max_and_one_control_plane(default):
    bill = bill_of_materials(default.template)
    items = by_key(bill)
    trn = items[("ec2", default.config.instance_type)]
    assert [(i.idle, i.running) for i in trn] == [(default.config.nodes.min, default.config.nodes.max)]
    assert len(items[("eks", "cluster")]) == 1
    system = items[("ec2", "m6i.xlarge")][0]
    assert system.idle == system.running == 2
    assert bill.region == default.config.region


def test_hyperpod_bills_every_instance_group_at_its_count(synth):
    s = synth(orchestrator="hyperpod-slurm")
    bill = bill_of_materials(s.template)
    groups = s.only("AWS::SageMaker::Cluster")["InstanceGroups"]
    ml = [i for i in bill.items if i.key[0] == "sagemaker-cluster"]
    assert sorted((i.key[1], i.idle, i.running) for i in ml) == sorted(
        (g["InstanceType"], g["InstanceCount"], g["InstanceCount"]) for g in groups)
    assert all(i.fallback == ("ec2", i.key[1].removeprefix("ml.")) for i in ml)
    assert ("eks", "cluster") not in by_key(bill)


def test_capacity_block_nodes_are_prepaid(synth):
    bill = bill_of_materials(synth(profile_path("trn2")).template)
    trn = by_key(bill)[("ec2", "trn2.48xlarge")]
    assert [i.prepaid for i in trn] == [True]
    assert any("paid up front" in n for n in bill.notes)


def test_file_system_and_nat_gateways_follow_the_configuration(synth):
    s = synth(profile_path("ultracluster-16"))
    items = by_key(bill_of_materials(s.template))
    fsx = s.config.fsx
    key = ("fsx-lustre", f"{fsx.deployment_type}/{fsx.per_unit_storage_throughput}")
    assert [(i.idle, i.running) for i in items[key]] == [(fsx.storage_capacity_gib,) * 2]
    assert len(items[("nat-gateway", "hour")]) == s.config.nat_gateways


@pytest.mark.parametrize("profile", PROFILES, ids=[p.stem for p in PROFILES])
def test_every_profile_bills_its_trainium_nodes(synth, profile):
    s = synth(profile)
    names = {i.key[1].removeprefix("ml.") for i in bill_of_materials(s.template).items}
    assert s.config.instance_type in names
