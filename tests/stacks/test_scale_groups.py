"""At UltraCluster scale (``scale_stack``: 2,000 trn1.32xlarge), the HyperPod instance groups
and the standalone Auto Scaling groups follow the address plan: each in one compute subnet of
the plan, within its limit, the counts adding up to the nodes, and the group in compute subnet
0 keeping the name or logical id a smaller cluster's only group has."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import SCALE_NODES, Synth, profile_path
from trn_ultracluster.config.facts import HYPERPOD_MAX_INSTANCE_COUNT


def subnet_cidrs(s: Synth) -> dict[str, str]:
    """Logical id of each subnet -> its CIDR block."""
    return {k: r["Properties"]["CidrBlock"] for k, r in s.resources("AWS::EC2::Subnet").items()}


def plan_index(s: Synth, subnets: list[Any]) -> int:
    """The compute subnet (index in the plan) of a group given ``subnets`` (template
    references): exactly one, one of the plan's."""
    assert len(subnets) == 1, subnets
    cidr = subnet_cidrs(s)[subnets[0]["Ref"]]
    return [c.cidr for c in s.config.address_plan.compute_subnets].index(cidr)


def route_associations(s: Synth) -> set[str]:
    """The route table associations of the compute subnets after the first."""
    return {k for k, r in s.resources("AWS::EC2::SubnetRouteTableAssociation").items()
            if k.startswith("NetworkCompute")}


@pytest.mark.parametrize("orchestrator", ["hyperpod-slurm", "hyperpod-eks"])
def test_hyperpod_instance_groups_follow_the_plan(scale_stack, orchestrator):
    s = scale_stack(orchestrator)
    (cluster_id, cluster), = s.resources("AWS::SageMaker::Cluster").items()
    props = cluster["Properties"]
    workers = [g for g in props["InstanceGroups"] if g["InstanceType"].startswith("ml.trn1")]
    plan = s.config.address_plan
    assert len(plan.compute_subnets) > 1 and len(workers) > 1  # the case this test is for
    placed = []
    for group in workers:
        override = group.get("OverrideVpcConfig")
        subnets = override["Subnets"] if override else props["VpcConfig"]["Subnets"]
        subnet = plan_index(s, subnets)
        assert (override is None) == (subnet == 0)
        if override:
            assert override["SecurityGroupIds"] == props["VpcConfig"]["SecurityGroupIds"]
        assert 0 < group["InstanceCount"] <= HYPERPOD_MAX_INSTANCE_COUNT
        assert group["InstanceCount"] <= plan.compute_subnets[subnet].capacity
        placed.append((group["InstanceGroupName"], group["InstanceCount"], subnet))
    assert sum(count for _, count, _ in placed) == SCALE_NODES
    assert [(c, i) for _, c, i in placed] == [(g.nodes, g.subnet) for g in plan.groups]
    # the first part keeps the worker group's name; the rest are numbered
    assert [name for name, _, _ in placed] == ["workers"] + [
        f"workers-{n}" for n in range(2, len(placed) + 1)]
    assert s.output("HyperPodWorkerGroupNames") == ",".join(n for n, _, _ in placed)
    if orchestrator == "hyperpod-slurm":  # every part in the worker group's partition
        assert {tuple(g["SlurmConfig"]["PartitionNames"]) for g in workers} == {("trainium",)}
    # nodes in every subnet boot with their route to the NAT gateway
    assert route_associations(s) <= set(cluster["DependsOn"])


def test_standalone_auto_scaling_groups_follow_the_plan(scale_stack, synth):
    s = scale_stack("standalone")
    plan = s.config.address_plan
    groups = s.resources("AWS::AutoScaling::AutoScalingGroup")
    assert len(plan.compute_subnets) > 1 and len(groups) == len(plan.compute_subnets)
    by_subnet = {}
    for logical, group in groups.items():
        props = group["Properties"]
        subnet = plan_index(s, props["VPCZoneIdentifier"])
        assert int(props["MaxSize"]) <= plan.compute_subnets[subnet].capacity
        assert route_associations(s) <= set(group["DependsOn"])
        by_subnet[subnet] = (logical, props)
    assert sorted(by_subnet) == list(range(len(plan.compute_subnets)))  # one per subnet
    for key in ("MaxSize", "DesiredCapacity"):
        assert sum(int(p[key]) for _, p in by_subnet.values()) == SCALE_NODES
    assert sum(int(p["MinSize"]) for _, p in by_subnet.values()) == 0
    # desired fills subnet 0 first, as the plan does
    assert [int(p["DesiredCapacity"]) for _, p in by_subnet.values()] == [
        g.nodes for g in plan.groups]
    # subnet 0's group keeps the single group's logical id: a deployed stack keeps it
    single = synth(profile_path("single-node"))
    (single_id,) = single.resources("AWS::AutoScaling::AutoScalingGroup")
    assert by_subnet[0][0] == single_id
    names = s.output("StandaloneAutoScalingGroupName")
    assert names == {"Fn::Join": [",", [{"Ref": by_subnet[i][0]} for i in sorted(by_subnet)]]}
