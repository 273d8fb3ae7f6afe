"""The estimate at scale, from a template of a large EKS cluster: the Provisioned Control
Plane tier's hourly price, idle (every group at its minimum) and running (at its maximum)
across several Trainium node groups, the file system's throughput and each node's share,
and the quota increases the configuration needs."""

from __future__ import annotations

import copy

import pytest

from tests.cli.helpers import preflight_config
from trn_ultracluster.config.quota_needs import quota_needs
from trn_ultracluster.estimate import OfflinePrices, estimate, format_estimate
from trn_ultracluster.estimate.prices import HOURS_PER_MONTH, OFFLINE

NODES = 900
"""Two Trainium node groups of 450 (EKS' default nodes per managed node group)."""


def nodegroup(instance_type: str, low: int, high: int) -> dict:
    return {"Type": "AWS::EKS::Nodegroup", "Properties": {
        "InstanceTypes": [instance_type],
        "ScalingConfig": {"MinSize": low, "DesiredSize": low, "MaxSize": high}}}


TEMPLATE = {
    "Outputs": {"Region": {"Value": "us-east-1"}, "NodeCountMax": {"Value": str(NODES)}},
    "Resources": {
        "Cluster": {"Type": "AWS::EKS::Cluster", "Properties": {
            "ControlPlaneScalingConfig": {"Tier": "tier-4xl"}}},
        "SystemNodes": nodegroup("m6i.xlarge", 2, 2),
        "TrainiumNodes0": nodegroup("trn1.32xlarge", 0, 450),
        "TrainiumNodes1": nodegroup("trn1.32xlarge", 0, 450),
        "Fsx": {"Type": "AWS::FSx::FileSystem", "Properties": {
            "StorageCapacity": 115_200, "LustreConfiguration": {
                "DeploymentType": "PERSISTENT_2", "PerUnitStorageThroughput": 1000}}},
    },
}


def test_idle_bills_the_minimum_and_running_the_maximum_of_every_group():
    est = estimate(TEMPLATE, OfflinePrices("us-east-1"))
    trn = OFFLINE[("ec2", "trn1.32xlarge")].usd
    fixed = (0.10 + 6.90 + 2 * 0.192
             + 115_200 * OFFLINE[("fsx-lustre", "PERSISTENT_2/1000")].usd / HOURS_PER_MONTH)
    assert est.idle_usd == pytest.approx(fixed)
    assert est.running_usd == pytest.approx(fixed + NODES * trn)
    assert est.complete


@pytest.mark.parametrize("tier, usd", [("tier-xl", 1.65), ("tier-2xl", 3.40),
                                       ("tier-4xl", 6.90), ("tier-8xl", 13.90)])
def test_a_provisioned_control_plane_tier_bills_its_hourly_price(tier, usd):
    template = copy.deepcopy(TEMPLATE)
    template["Resources"]["Cluster"]["Properties"]["ControlPlaneScalingConfig"]["Tier"] = tier
    est = estimate(template, OfflinePrices("us-east-1"))
    pcp = [line for line in est.lines if line.item.key[0] == "eks-pcp"]
    assert [(p.item.key, p.idle_usd, p.running_usd) for p in pcp] == [
        (("eks-pcp", tier), usd, usd)]
    assert not pcp[0].price.verified and "NOT VERIFIED" in pcp[0].price.source
    assert f"EKS Provisioned Control Plane {tier} Cluster" in format_estimate(est)


@pytest.mark.parametrize("scaling", [{}, {"ControlPlaneScalingConfig": {"Tier": "standard"}}])
def test_the_standard_control_plane_bills_no_tier(scaling):
    template = copy.deepcopy(TEMPLATE)
    template["Resources"]["Cluster"]["Properties"] = scaling
    est = estimate(template, OfflinePrices("us-east-1"))
    assert [line.item.key for line in est.lines if line.item.key[0].startswith("eks")] == [
        ("eks", "cluster")]


def test_a_tier_without_a_price_is_shown_unpriced():
    template = copy.deepcopy(TEMPLATE)
    template["Resources"]["Cluster"]["Properties"]["ControlPlaneScalingConfig"]["Tier"] = \
        "tier-ultra"
    est = estimate(template, OfflinePrices("us-east-1"))
    assert not est.complete
    assert "'n/a': no price in this source" in format_estimate(est)


def test_file_system_throughput_and_each_nodes_share():
    est = estimate(TEMPLATE, OfflinePrices("us-east-1"))
    (fs,) = est.throughput
    assert fs.aggregate_mb_s == 112_500  # 112.5 TiB x 1000 MB/s/TiB
    assert fs.per_node_mb_s == 125
    assert ("file system Fsx: 115,200 GiB x 1000 MB/s/TiB = 112,500 MB/s in all (with or "
            "without EFA), 125.0 MB/s per node at 900 nodes") in format_estimate(est)


def test_a_scratch_file_system_has_no_per_unit_throughput():
    template = copy.deepcopy(TEMPLATE)
    template["Resources"]["Fsx"]["Properties"]["LustreConfiguration"] = {
        "DeploymentType": "SCRATCH_2"}
    assert estimate(template, OfflinePrices("us-east-1")).throughput == []


def test_quota_increases_are_the_needs_above_the_aws_default():
    config = preflight_config(nodes={"min": 0, "desired": 0, "max": 1000},
                              quotas={"eks_nodegroups_per_cluster": 30},
                              vpc_secondary_cidrs=["10.1.0.0/16", "10.2.0.0/16", "10.3.0.0/16",
                                                   "10.4.0.0/16", "10.5.0.0/16"])
    needs = {n.quota.key: n for n in quota_needs(config)}
    est = estimate(TEMPLATE, OfflinePrices("us-east-1"), list(needs.values()))
    listed = {n.quota.key for n in est.quota_increases}
    assert listed == {k for k, n in needs.items()
                      if n.quota.default is None or n.need > n.quota.default}
    assert "trn_vcpus" in listed  # its default differs per account
    assert "eks_nodegroups_per_cluster" not in listed  # 3 groups, default 30
    text = format_estimate(est)
    assert ("quota increase: ec2 L-2C3B7624 Running On-Demand Trn instances: need 128,000 vCPUs "
            "(1,000 nodes x trn1.32xlarge x 128 vCPUs); AWS default differs per account "
            "(preflight reads it): https://us-east-1.console.aws.amazon.com/servicequotas/home/"
            "services/ec2/quotas/L-2C3B7624") in text
    nau = needs["vpc_network_address_usage"]
    assert (nau.need > 64_000) == ("quota increase: vpc L-BB24F6E5" in text)


def test_no_needs_no_quota_lines():
    assert "quota increase" not in format_estimate(estimate(TEMPLATE, OfflinePrices("us-east-1")))
