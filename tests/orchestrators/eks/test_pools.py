"""EKS node pools: each pool of ``profiles/mixed.yaml`` (trn1.32xlarge main, trn2.48xlarge
efa-only, m7i.8xlarge CPU) is its own managed node groups with its own launch template, AMI
type, labels and taint, and its own ClusterTrainingRuntime; the ``Pools`` output names each
pool's node groups; a pool's capacity and FSx-over-EFA user data are its own; the default
configuration's node groups, launch template, charts and Kubernetes objects are what the
snapshot holds."""

from __future__ import annotations

import base64
import json
import re
from typing import Any

import pytest

from tests.conftest import REPO_ROOT, profile_path
from tests.crds import runtime_validator
from tests.orchestrators.eks.test_cluster import _manifests, _pod_spec
from tests.orchestrators.standalone.template_values import resolve
from tests.test_snapshots import normalize
from trn_ultracluster.config import parse_config
from trn_ultracluster.config.quota_needs import quota_needs
from trn_ultracluster.contracts.pools import POOL_LABEL, parse_pools
from trn_ultracluster.orchestrators.eks.cluster import labels_pool

NEURON_TAINT = [{"Key": "aws.amazon.com/neuron", "Value": "true", "Effect": "NO_SCHEDULE"}]
EFA_LABEL = "vpc.amazonaws.com/efa.present"
EDGE = """\
az_ids: [use2-az3, use2-az1]
orchestrator: eks
pools:
  - name: dev
    instance_type: trn1.32xlarge
    nodes: {min: 0, desired: 1, max: 2}
  - name: big
    instance_type: trn1n.32xlarge
    nodes: {min: 0, desired: 2, max: 4}
    capacity: {type: capacity-block, reservation_id: cr-0123456789abcdef0}
    placement_group: false
  - name: tools
    instance_type: m7i.4xlarge
    nodes: {min: 1, desired: 1, max: 1}
fsx:
  deployment_type: PERSISTENT_2
  storage_capacity_gib: 14400
  per_unit_storage_throughput: 1000
  lustre_version: "2.15"
  efa: auto
"""
"""A trn1.32xlarge main pool, a trn1n.32xlarge pool on a Capacity Block and a CPU pool, with
an EFA-enabled file system (14,400 GiB at 1,000 MB/s/TiB: above 10 GB/s, so ``auto`` turns
EFA on; mode ``preferred``). Trn1 and Trn1n can be its clients, the CPU type cannot."""


@pytest.fixture(scope="module")
def mixed(synth):
    return synth(profile_path("mixed"))


@pytest.fixture(scope="module")
def edge(synth, tmp_path_factory):
    path = tmp_path_factory.mktemp("profiles") / "edge.yaml"
    path.write_text(EDGE)
    return synth(path)


def _by_construct(s, cfn_type: str, prefix: str) -> dict[str, dict[str, Any]]:
    """Construct id (logical id without ``prefix`` and CDK's 8-character hash) -> resource."""
    return {k[len(prefix):-8]: r for k, r in s.resources(cfn_type).items()
            if k.startswith(prefix)}


def _nodegroups(s) -> dict[str, dict[str, Any]]:
    """Construct id -> properties of every node group but the system one."""
    found = _by_construct(s, "AWS::EKS::Nodegroup", "EksClusterNodegroup")
    return {k: r["Properties"] for k, r in found.items() if k != "SystemNodes"}


def _launch_template_of(s, nodegroup: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    lt_id = nodegroup["LaunchTemplate"]["Id"]["Ref"]
    assert nodegroup["LaunchTemplate"]["Version"] == {
        "Fn::GetAtt": [lt_id, "LatestVersionNumber"]}
    return lt_id, s.template["Resources"][lt_id]["Properties"]["LaunchTemplateData"]


def _runtimes(s) -> dict[str, dict[str, Any]]:
    return {o["metadata"]["name"]: o for objs in _manifests(s).values() for o in objs
            if o["kind"] == "ClusterTrainingRuntime"}


# --- node groups ----------------------------------------------------------------------------


def test_each_pool_is_its_own_node_groups(mixed):
    """The main pool keeps the one-pool ids; the others carry their suffix. Each group takes
    its pool's launch template (which names the instance type), AMI type, counts and subnet."""
    groups = _nodegroups(mixed)
    assert sorted(groups) == ["PoolCpuNodes", "PoolTrn2Nodes", "TrainiumNodes"]
    expected = {  # construct id: (launch template, instance type, AMI type, min/desired/max)
        "TrainiumNodes": ("EfaLaunchTemplate", "trn1.32xlarge", "AL2023_x86_64_NEURON", (0, 1, 2)),
        "PoolTrn2Nodes": ("EfaLaunchTemplateTrn2", "trn2.48xlarge", "AL2023_x86_64_NEURON",
                          (0, 0, 4)),
        "PoolCpuNodes": ("EfaLaunchTemplateCpu", "m7i.8xlarge", "AL2023_x86_64_STANDARD",
                         (0, 1, 2)),
    }
    subnets = mixed.output("ComputeSubnetIds")  # one subnet: a Ref, several: a join
    compute_subnets = subnets["Fn::Join"][1] if "Fn::Join" in subnets else [subnets]
    plan = mixed.config.address_plan
    for construct_id, (template, instance_type, ami, counts) in expected.items():
        ng = groups[construct_id]
        lt_id, data = _launch_template_of(mixed, ng)
        assert lt_id == mixed.ref_id(template)
        assert data["InstanceType"] == instance_type and "InstanceTypes" not in ng
        assert ng["AmiType"] == ami
        scaling = ng["ScalingConfig"]
        assert (scaling["MinSize"], scaling["DesiredSize"], scaling["MaxSize"]) == counts
        assert ng["CapacityType"] == "ON_DEMAND"
        pool = next(p for p in mixed.config.node_pools if p.instance_type == instance_type)
        (group,) = plan.pool(pool.name).groups
        assert ng["Subnets"] == [compute_subnets[group.subnet]]


def test_the_node_group_quota_counts_what_the_stack_makes(mixed):
    """``preflight``'s need of "Managed node groups per cluster" is the plan's groups of every
    pool plus the system group: exactly the node groups in the template."""
    (need,) = [n for n in quota_needs(mixed.config)
               if n.quota.key == "eks_nodegroups_per_cluster"]
    assert need.need == len(mixed.resources("AWS::EKS::Nodegroup")) == 4


def test_labels_name_the_pool_and_only_trainium_pools_are_tainted(mixed):
    groups = _nodegroups(mixed)
    assert groups["TrainiumNodes"]["Labels"] == {EFA_LABEL: "true", POOL_LABEL: "trn1"}
    assert groups["PoolTrn2Nodes"]["Labels"] == {EFA_LABEL: "true", POOL_LABEL: "trn2"}
    assert groups["PoolCpuNodes"]["Labels"] == {POOL_LABEL: "cpu"}
    assert groups["TrainiumNodes"]["Taints"] == groups["PoolTrn2Nodes"]["Taints"] == NEURON_TAINT
    # untainted: the DaemonSets (VPC CNI, FSx CSI node plugin, ...) run there as anywhere
    assert "Taints" not in groups["PoolCpuNodes"]


def test_each_pool_has_the_network_cards_of_its_type(mixed):
    """trn2.48xlarge, efa-only: an ENA primary interface and 16 EFA-only ones on 16 cards, in
    its own placement group; the CPU pool: one ordinary interface, no placement group."""
    groups = _nodegroups(mixed)
    _, trn2 = _launch_template_of(mixed, groups["PoolTrn2Nodes"])
    interfaces = [(i["NetworkCardIndex"], i["DeviceIndex"], i.get("InterfaceType"))
                  for i in trn2["NetworkInterfaces"]]
    assert interfaces == [(0, 0, None), (0, 1, "efa-only")] + [
        (card, 0, "efa-only") for card in range(1, 16)]
    assert trn2["Placement"]["GroupName"] == {"Ref": mixed.ref_id("EfaPlacementGroupTrn2")}
    _, cpu = _launch_template_of(mixed, groups["PoolCpuNodes"])
    (interface,) = cpu["NetworkInterfaces"]
    assert "InterfaceType" not in interface and "Placement" not in cpu
    _, trn1 = _launch_template_of(mixed, groups["TrainiumNodes"])
    assert [i["InterfaceType"] for i in trn1["NetworkInterfaces"]] == ["efa"] * 8


def test_every_pool_waits_for_the_routes_and_the_networking_addons(mixed):
    """The compute subnet's default route and route table association (what the main pool's
    node group has always waited for) and the networking add-ons, on every pool's groups."""
    res = mixed.template["Resources"]
    addons = {r["Properties"]["AddonName"]: k for k, r in mixed.resources("AWS::EKS::Addon").items()}
    routes = {k for k in res if k.startswith("NetworkVpcPrivateSubnet1")
              and res[k]["Type"] in ("AWS::EC2::Route", "AWS::EC2::SubnetRouteTableAssociation")}
    assert len(routes) == 2
    for logical_id, ng in mixed.resources("AWS::EKS::Nodegroup").items():
        if "SystemNodes" in logical_id:
            continue
        assert {addons["vpc-cni"], addons["kube-proxy"]} <= set(ng["DependsOn"])
        assert routes <= set(ng["DependsOn"])
        assert ng["Properties"]["Version"] == "1.36"  # follows the control plane


def test_outputs_name_each_pools_node_groups(mixed):
    """``EksTrainiumNodegroupName`` keeps the main pool's (``scale`` without ``--pool``); the
    ``Pools`` output names every pool's, and its capacity."""
    assert mixed.output("EksTrainiumNodegroupName") == {
        "Fn::GetAtt": [mixed.ref_id("EksClusterNodegroupTrainiumNodes"), "NodegroupName"]}
    text = resolve(mixed.output("Pools"), mixed.template)
    pools = {p.name: p for p in parse_pools(text)}
    for name, construct_id in (("trn1", "TrainiumNodes"), ("trn2", "PoolTrn2Nodes"),
                               ("cpu", "PoolCpuNodes")):
        ref = mixed.ref_id(f"EksClusterNodegroup{construct_id}")
        assert pools[name].node_groups == (f"{ref}-NodegroupName",)
        assert (pools[name].capacity_type, pools[name].capacity_reservation_id) == (
            "on-demand", "")


def test_efa_plugin_runs_on_every_pools_efa_type(mixed):
    (chart,) = [r["Properties"] for k, r in mixed.resources("Custom::AWSCDK-EKS-HelmChart").items()
                if k.startswith("EksClusterchartEfaDevicePlugin")]
    values = json.loads(chart["Values"])
    assert values["supportedInstanceLabels"]["values"] == ["trn1.32xlarge", "trn2.48xlarge"]
    assert values["nodeSelector"] == {EFA_LABEL: "true"}


# --- runtimes -------------------------------------------------------------------------------


def test_each_pool_has_its_runtime(mixed):
    """The main pool's runtime keeps its name and selects its type and label; the trn2 pool's
    requests its 16 chips and 16 EFA interfaces with the native stack's environment; the CPU
    pool's requests CPU and memory only, with no Neuron environment or toleration."""
    runtimes = _runtimes(mixed)
    assert sorted(runtimes) == ["neuron-torch-distributed", "torch-distributed-cpu",
                                "torch-distributed-trn2"]
    validator = runtime_validator()
    for runtime in runtimes.values():
        assert [e.message for e in validator.iter_errors(runtime)] == []
    main = _pod_spec(runtimes["neuron-torch-distributed"])
    assert main["nodeSelector"] == {"node.kubernetes.io/instance-type": "trn1.32xlarge",
                                    POOL_LABEL: "trn1"}
    trn2 = _pod_spec(runtimes["torch-distributed-trn2"])
    assert trn2["nodeSelector"] == {POOL_LABEL: "trn2"}
    assert trn2["tolerations"] == main["tolerations"]
    (container,) = trn2["containers"]
    assert container["resources"]["requests"] == {"aws.amazon.com/neuron": "16",
                                                  "vpc.amazonaws.com/efa": "16"}
    env = {e["name"]: e["value"] for e in container["env"]}
    assert env["TRN_NEURON_STACK"] == "native" and "NEURON_CC_FLAGS" not in env
    cpu = _pod_spec(runtimes["torch-distributed-cpu"])
    assert cpu["nodeSelector"] == {POOL_LABEL: "cpu"} and "tolerations" not in cpu
    (container,) = cpu["containers"]
    assert container["resources"] == {"requests": {"cpu": "17", "memory": "65Gi"}}
    assert "env" not in container
    assert {"name": "fsx", "mountPath": "/fsx"} in container["volumeMounts"]
    assert {"name": "fsx", "persistentVolumeClaim": {"claimName": "fsx-lustre"}} in cpu["volumes"]


def test_a_pools_runtime_waits_for_the_trainer_chart_and_its_image(mixed):
    res = mixed.template["Resources"]
    trainer = mixed.ref_id("EksClusterchartKubeflowTrainerChart")
    for suffix, build in (("Trn2", "TrainingImageNativeBuild"), ("Cpu", "TrainingImageBuild")):
        runtime = res[mixed.ref_id(f"EksClustermanifestTrainingRuntime{suffix}")]
        assert {trainer, mixed.ref_id(build)} <= set(runtime["DependsOn"])
        # the image it names is its pool's
        assert {"Ref": mixed.ref_id(build.replace("Build", "Repository"))} in \
            runtime["Properties"]["Manifest"]["Fn::Join"][1]


# --- capacity and Lustre over EFA per pool ---------------------------------------------------


def test_a_capacity_block_pool_starts_empty_and_rolls_without_surge(edge):
    groups = _nodegroups(edge)
    big = groups["PoolBigNodes"]
    assert big["CapacityType"] == "CAPACITY_BLOCK"
    assert big["ScalingConfig"] == {"MinSize": 0, "DesiredSize": 0, "MaxSize": 4}
    assert big["UpdateConfig"] == {"MaxUnavailable": 1, "UpdateStrategy": "MINIMAL"}
    for on_demand in ("TrainiumNodes", "PoolToolsNodes"):
        assert groups[on_demand]["CapacityType"] == "ON_DEMAND"
        assert "UpdateConfig" not in groups[on_demand]
    assert groups["PoolToolsNodes"]["ScalingConfig"] == {"MinSize": 1, "DesiredSize": 1,
                                                         "MaxSize": 1}
    pools = {p.name: p for p in parse_pools(resolve(edge.output("Pools"), edge.template))}
    assert (pools["big"].capacity_type, pools["big"].capacity_reservation_id) == (
        "capacity-block", "cr-0123456789abcdef0")
    assert pools["dev"].capacity_type == "on-demand"


def test_lustre_over_efa_user_data_on_every_client_pool(edge):
    """Trn1 and Trn1n pools bind 2 EFA interfaces to LNet at boot; the CPU pool, which cannot
    be a client of an EFA-enabled file system, mounts it over TCP without user data."""
    assert edge.output("FsxEfa") == "preferred"
    groups = _nodegroups(edge)
    for construct_id in ("TrainiumNodes", "PoolBigNodes"):
        _, data = _launch_template_of(edge, groups[construct_id])
        text = base64.b64decode(resolve(data["UserData"], edge.template)).decode()
        assert "MODE='preferred'" in text
        assert re.search(r"--interfaces '2'", text)
    _, tools = _launch_template_of(edge, groups["PoolToolsNodes"])
    assert "UserData" not in tools


# --- the default configuration ---------------------------------------------------------------


def test_default_node_groups_and_kubernetes_objects_are_the_snapshots(default):
    """A stack of the default configuration (no ``pools``) updates without a change to its
    node groups, launch template, Helm charts and Kubernetes objects: its one pool's node group
    has no pool label and its runtime no pool selector (tests/snapshots/default.json, which
    predates pools)."""
    snapshot = json.loads((REPO_ROOT / "tests" / "snapshots" / "default.json").read_text())
    now = json.loads(normalize(default.template))
    kinds = ("AWS::EKS::Nodegroup", "AWS::EC2::LaunchTemplate", "Custom::AWSCDK-EKS-HelmChart",
             "Custom::AWSCDK-EKS-KubernetesResource")

    def pick(template: dict[str, Any]) -> dict[str, Any]:
        return {k: r for k, r in template["Resources"].items() if r["Type"] in kinds}

    assert pick(now) == pick(snapshot) and len(pick(now)) == 9
    (trainium,) = [r for k, r in pick(now).items() if "TrainiumNodes" in k]
    assert POOL_LABEL not in trainium["Properties"]["Labels"]


def test_only_a_configuration_with_pools_labels_its_main_pool():
    """A one-pool ``pools`` list labels its pool (and its runtime selects the label); the
    shorthand's pool keeps its node groups as deployed."""
    shorthand = parse_config({}).config.main_pool
    listed = parse_config({"pools": [{"name": "dev", "instance_type": "trn1.32xlarge"}]})
    assert not labels_pool(shorthand) and shorthand.name == "trainium"
    assert labels_pool(listed.config.main_pool)
