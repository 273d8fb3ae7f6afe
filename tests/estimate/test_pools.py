"""The estimate per node pool: the pools of the ``Pools`` output (an ``Fn::Join`` in the
template), which pool each billed group of nodes belongs to, each pool's idle and running
cost, what the pools share, the file system's clients, and the summary's pool lines.

Templates here are small hand-made ones shaped as the stack writes them (the ``Pools`` output
as ``Stack.to_json_string`` renders it: JSON text with intrinsics in the string values), so
the attribution is tested apart from the orchestrators that name their groups."""

from __future__ import annotations

from typing import Any

import pytest

from tests.estimate import POOLS, pools_output
from trn_ultracluster.contracts.pools import POOL_LABEL
from trn_ultracluster.estimate import OfflinePrices, estimate, format_estimate
from trn_ultracluster.estimate.bill import bill_of_materials
from trn_ultracluster.estimate.pools import template_pools
from trn_ultracluster.estimate.prices import HOURS_PER_MONTH, OFFLINE

def launch_template(itype: str) -> dict[str, Any]:
    return {"Type": "AWS::EC2::LaunchTemplate",
            "Properties": {"LaunchTemplateData": {"InstanceType": itype}}}


def nodegroup(template: str, lo: int, hi: int, **extra: Any) -> dict[str, Any]:
    return {"Type": "AWS::EKS::Nodegroup", "Properties": {
        "LaunchTemplate": {"Id": {"Ref": template}},
        "ScalingConfig": {"MinSize": lo, "DesiredSize": lo, "MaxSize": hi}, **extra}}


SHARED = {
    "EksCluster12345678": {"Type": "AWS::EKS::Cluster", "Properties": {}},
    "Nat12345678": {"Type": "AWS::EC2::NatGateway", "Properties": {}},
    "StorageFileSystem12345678": {"Type": "AWS::FSx::FileSystem", "Properties": {
        "StorageCapacity": 1200, "LustreConfiguration": {
            "DeploymentType": "PERSISTENT_2", "PerUnitStorageThroughput": 250}}},
}


def eks_template() -> dict[str, Any]:
    """trn1 named by the Pools output's node groups (a GetAtt in a comma Fn::Join), trn2 by
    its pool label, cpu by its instance type alone; the system nodes belong to none."""
    resources = {
        **SHARED,
        "LaunchTemplate": launch_template("trn1.32xlarge"),
        "LaunchTemplateTrn2": launch_template("trn2.48xlarge"),
        "LaunchTemplateCpu": launch_template("m7i.8xlarge"),
        "NodesTrn1AAAAAAAA": nodegroup("LaunchTemplate", 0, 2),
        "NodesTrn1BBBBBBBB": nodegroup("LaunchTemplate", 0, 2),
        "NodesTrn2CCCCCCCC": nodegroup("LaunchTemplateTrn2", 0, 2,
                                       Labels={POOL_LABEL: "trn2"}),
        "NodesCpuDDDDDDDD": nodegroup("LaunchTemplateCpu", 0, 3),
        "SystemNodesEEEEEEEE": {"Type": "AWS::EKS::Nodegroup", "Properties": {
            "InstanceTypes": ["m6i.xlarge"],
            "ScalingConfig": {"MinSize": 2, "DesiredSize": 2, "MaxSize": 2}}},
    }
    groups = {"trn1": {"node_groups": {"Fn::Join": [",", [
        {"Fn::GetAtt": ["NodesTrn1AAAAAAAA", "NodegroupName"]},
        {"Fn::GetAtt": ["NodesTrn1BBBBBBBB", "NodegroupName"]}]]}}}
    return {"Resources": resources, "Outputs": {
        "Region": {"Value": "us-east-1"}, "NodeCountMax": {"Value": "4"},
        "InstanceType": {"Value": "trn1.32xlarge"}, "Pools": pools_output(groups)}}


def test_the_pools_output_is_read_with_the_resources_it_names():
    (trn1, trn2, cpu) = template_pools(eks_template())
    assert (trn1.name, trn1.instance_type, trn1.nodes_max) == ("trn1", "trn1.32xlarge", 4)
    assert trn1.node_groups == ("<ref:NodesTrn1AAAAAAAA>", "<ref:NodesTrn1BBBBBBBB>")
    assert trn1.image_uri == "<token>.dkr.ecr.example/repo:tag"
    assert (cpu.accelerated, trn2.node_groups) == (False, ())


@pytest.mark.parametrize("output", [None, {"Value": "not json"}, {"Value": {"Fn::Join": [
    "", ["[{\"name\": 1}]"]]}}], ids=["no output", "not JSON", "not the shape"])
def test_a_template_without_readable_pools_has_none(output):
    template = eks_template()
    del template["Outputs"]["Pools"]
    if output is not None:
        template["Outputs"]["Pools"] = output
    assert template_pools(template) == ()
    assert bill_of_materials(template).throughput[0].nodes == 4  # NodeCountMax then


def test_each_billed_group_of_nodes_belongs_to_its_pool():
    bill = bill_of_materials(eks_template())
    owner = {item.label.split(":")[0].removeprefix("EKS node group "): item.pool
             for item in bill.items if item.key[0] == "ec2"}
    assert owner == {"NodesTrn1": "trn1", "NodesTrn2": "trn2", "NodesCpu": "cpu",
                     "SystemNodes": None}
    # the file system's clients are every pool's nodes: 4 + 2 + 3
    assert bill.throughput[0].nodes == 9


def test_each_pool_is_priced_idle_and_running_and_the_rest_is_shared():
    est = estimate(eks_template(), OfflinePrices("us-east-1"))
    trn1, trn2, cpu = est.pools
    trn1_usd, cpu_usd = OFFLINE[("ec2", "trn1.32xlarge")].usd, OFFLINE[("ec2", "m7i.8xlarge")].usd
    assert (trn1.nodes_idle, trn1.nodes_running) == (0, 4)
    assert (trn1.idle_usd, trn1.running_usd) == (0, pytest.approx(4 * trn1_usd))
    assert cpu.running_usd == pytest.approx(3 * cpu_usd) and not cpu.unpriced
    assert trn2.unpriced  # no offline price for trn2 (prices.py)
    shared = (0.10 + 0.045 + 2 * OFFLINE[("ec2", "m6i.xlarge")].usd
              + 1200 * OFFLINE[("fsx-lustre", "PERSISTENT_2/250")].usd / HOURS_PER_MONTH)
    assert sum(ln.running_usd for ln in est.shared) == pytest.approx(shared)
    assert est.running_usd == pytest.approx(shared + trn1.running_usd + cpu.running_usd)
    text = format_estimate(est)
    assert (f"pool trn1 (trn1.32xlarge x 0-4): idle $0.00/h, running "
            f"${4 * trn1_usd:,.2f}/h") in text
    assert "pool trn2 (trn2.48xlarge x 0-2): idle $0.00/h, running $0.00/h (incomplete: see " \
           "notes)" in text
    assert f"pool cpu (m7i.8xlarge x 0-3): idle $0.00/h, running ${3 * cpu_usd:,.2f}/h" in text
    assert f"shared by the pools (control plane, system nodes, NAT, file system): idle " \
           f"${shared:,.2f}/h, running ${shared:,.2f}/h" in text


def test_one_pool_adds_no_pool_lines(default):
    est = estimate(default.template, OfflinePrices(default.config.region))
    (pool,) = est.pools
    assert pool.name == "trainium" and pool.running_usd == pytest.approx(
        default.config.nodes.max * OFFLINE[("ec2", default.config.instance_type)].usd)
    assert "pool trainium" not in format_estimate(est)


def test_hyperpod_instance_groups_belong_to_the_pool_of_their_name():
    """A worker group split over compute subnets is <pool>, <pool>-2, ...; the controller
    belongs to no pool even where its type is a pool's."""
    template = eks_template()
    for name in [n for n, r in template["Resources"].items()
                 if r["Type"] == "AWS::EKS::Nodegroup"]:
        del template["Resources"][name]
    groups = [("controller", "ml.m7i.8xlarge", 1), ("trn1", "ml.trn1.32xlarge", 2),
              ("trn1-2", "ml.trn1.32xlarge", 1), ("trn2", "ml.trn2.48xlarge", 0),
              ("cpu", "ml.m7i.8xlarge", 1)]
    template["Resources"]["Cluster12345678"] = {"Type": "AWS::SageMaker::Cluster", "Properties": {
        "InstanceGroups": [{"InstanceGroupName": n, "InstanceType": t, "InstanceCount": c}
                           for n, t, c in groups]}}
    bill = bill_of_materials(template)
    assert [i.pool for i in bill.items if i.key[0] == "sagemaker-cluster"] == [
        None, "trn1", "trn1", "trn2", "cpu"]
    est = estimate(template, OfflinePrices("us-east-1"))
    trn1 = est.pools[0]
    assert (trn1.nodes_idle, trn1.nodes_running) == (3, 3) and trn1.unpriced  # ml.: >= EC2
    assert "pool trn1 (trn1.32xlarge x 3): idle $64.50/h, running $64.50/h (incomplete" in \
        format_estimate(est)


def test_a_pool_of_no_billed_group_says_so():
    template = eks_template()
    del template["Resources"]["NodesTrn2CCCCCCCC"]
    assert "pool trn2 (trn2.48xlarge): no nodes of it in this template" in format_estimate(
        estimate(template, OfflinePrices("us-east-1")))


def test_two_neuron_stacks_build_two_images_at_once():
    """Two image builds that depend on nothing of each other start together; the user's
    image, built on the stack's, waits for it and does not count."""
    from trn_ultracluster.deploy_time import IMAGE_BUILD, concurrent_image_builds, critical_path

    template = eks_template()
    build = {"Type": IMAGE_BUILD, "Properties": {}}
    template["Resources"].update({"ImageXla": build, "ImageNative": build,
                                  "ImageUser": {**build, "DependsOn": ["ImageXla"]}})
    assert concurrent_image_builds(template) == 2
    path = critical_path(template)
    assert path.finish["ImageXla"] == path.finish["ImageNative"] == 20  # at once, not 40
    assert path.finish["ImageUser"] == 40
    text = format_estimate(estimate(template, OfflinePrices("us-east-1")))
    assert ("its 2 training image builds run at once, which needs CodeBuild's concurrent "
            "Linux/Large builds quota of at least 2 (a build queued past its 5-minute queue "
            "timeout fails the deploy; this stack builds its images one after the other)") in text


def test_the_estimate_names_the_pools_that_mount_an_efa_file_system_over_tcp():
    from trn_ultracluster.estimate.lustre import file_system_efa, format_file_system_efa

    template = eks_template()
    fsx = template["Resources"]["StorageFileSystem12345678"]["Properties"]
    fsx.update({"StorageCapacity": 19200})
    fsx["LustreConfiguration"]["EfaEnabled"] = True
    bill = bill_of_materials(template)
    efa = file_system_efa(template, bill.throughput[0], OfflinePrices("us-east-1"))
    assert efa.tcp_pools == ("trn2 (trn2.48xlarge)", "cpu (m7i.8xlarge, no EFA)")
    assert "  over TCP (no EFA client): pools trn2 (trn2.48xlarge), cpu (m7i.8xlarge, no EFA)" \
        in format_file_system_efa(efa)
