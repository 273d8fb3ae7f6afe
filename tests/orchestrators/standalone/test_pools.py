"""Standalone node pools: profiles/mixed.yaml (trn1.32xlarge main pool ``trn1``, trn2.48xlarge
pool ``trn2`` on the native stack, m7i.8xlarge CPU pool ``cpu``) on the standalone
orchestrator: each pool's Auto Scaling groups, launch template, AMI, tags and user data, the
``Pools`` output's groups, the node role of every pool; and that a one-pool stack keeps its
groups as they were."""

from __future__ import annotations

import json
import re
from types import SimpleNamespace

import pytest
from aws_cdk import aws_ec2 as ec2

from tests.conftest import profile_path
from tests.orchestrators.standalone.template_values import resolve, user_data
from trn_ultracluster.config import StandaloneConfig, parse_config
from trn_ultracluster.config.facts import NATIVE_STACK, XLA_STACK
from trn_ultracluster.config.model import NodeCounts
from trn_ultracluster.contracts.hyperpod import JobEnv
from trn_ultracluster.contracts.pools import POOL_LABEL, parse_pools
from trn_ultracluster.network_plan import Group
from trn_ultracluster.orchestrators.standalone.ami import (
    CPU_AMI_PARAMETER,
    CPU_ROOT_DEVICE,
    pool_settings,
)
from trn_ultracluster.orchestrators.standalone.cluster import node_groups
from trn_ultracluster.orchestrators.standalone.node import pool_efa_settings

GROUP = "AWS::AutoScaling::AutoScalingGroup"
LAUNCH_TEMPLATE = "AWS::EC2::LaunchTemplate"


def launch_template_of(s, group: dict) -> tuple[str, dict]:
    """(logical id, launch template data) of the template ``group`` launches from."""
    spec = group["Properties"]["LaunchTemplate"]
    logical = spec["LaunchTemplateId"]["Ref"]
    assert spec["Version"] == {"Fn::GetAtt": [logical, "LatestVersionNumber"]}
    return logical, s.template["Resources"][logical]["Properties"]["LaunchTemplateData"]


def pool_tag(group: dict) -> dict | None:
    return next((t for t in group["Properties"].get("Tags", []) if t["Key"] == POOL_LABEL), None)


def groups_by_pool(s) -> dict[str, dict[str, dict]]:
    """pool name (its tag) -> {logical id: group}."""
    out: dict[str, dict[str, dict]] = {}
    for logical, group in s.resources(GROUP).items():
        out.setdefault(pool_tag(group)["Value"], {})[logical] = group
    return out


def node_file(s, prefix: str) -> dict:
    """The ``trn_ultracluster.json`` the user data of launch template ``prefix`` writes."""
    text = user_data(s.template, prefix)
    return json.loads(text.split("<<'TRN_CLUSTER_JSON'\n", 1)[1].split("\nTRN_CLUSTER_JSON", 1)[0])


def test_each_pool_has_its_groups_from_its_launch_template_tagged_with_its_name(mixed):
    pools = {p.name: p for p in mixed.config.node_pools}
    by_pool = groups_by_pool(mixed)
    assert set(by_pool) == set(pools) == {"trn1", "trn2", "cpu"}
    compute = resolve(mixed.output("ComputeSubnetIds"), mixed.template).split(",")
    templates = set()
    for name, groups in by_pool.items():
        pool = pools[name]
        for group in groups.values():
            tag = pool_tag(group)
            assert tag == {"Key": POOL_LABEL, "Value": name, "PropagateAtLaunch": True}
            logical, data = launch_template_of(mixed, group)
            templates.add(logical)
            assert data["InstanceType"] == pool.instance_type
            (subnet,) = resolve(group["Properties"]["VPCZoneIdentifier"], mixed.template)
            assert subnet in compute
        for key, count in (("MinSize", pool.nodes.min), ("DesiredCapacity", pool.nodes.desired),
                           ("MaxSize", pool.nodes.max)):
            assert sum(int(g["Properties"][key]) for g in groups.values()) == count, (name, key)
        assert len(groups) == len(mixed.config.address_plan.pool(name).groups)
    assert len(templates) == 3  # one launch template per pool, none shared


def test_the_main_pool_keeps_the_group_ids_and_others_carry_their_suffix(mixed, synth):
    by_pool = groups_by_pool(mixed)
    (main,) = by_pool["trn1"]
    (trn2,) = by_pool["trn2"]
    (cpu,) = by_pool["cpu"]
    one_pool = synth(profile_path("single-node"))
    assert main == next(iter(one_pool.resources(GROUP)))  # StandaloneNodes<hash>
    assert trn2.startswith("StandaloneTrn2Nodes") and cpu.startswith("StandaloneCpuNodes")
    # the main pool's launch template keeps its id; the others add the pool's suffix
    assert launch_template_of(mixed, by_pool["trn1"][main])[0] == mixed.ref_id("EfaLaunchTemplate")
    assert launch_template_of(mixed, by_pool["trn2"][trn2])[0] == mixed.ref_id(
        "EfaLaunchTemplateTrn2")


def test_a_one_pool_stack_has_no_pool_tag_and_its_outputs_name_its_groups(synth):
    """The default configuration's groups keep their tags (no pool tag: a one-pool stack's
    template is what it was); the main pool's groups are still in
    StandaloneAutoScalingGroupName, and in the Pools output."""
    s = synth(orchestrator="standalone")
    groups = s.resources(GROUP)
    # the logical id of a deployed one-pool stack's group, from before pools
    assert list(groups) == ["StandaloneNodesAE63DFB8"]
    assert [pool_tag(g) for g in groups.values()] == [None] * len(groups)
    names = resolve(s.output("StandaloneAutoScalingGroupName"), s.template)
    (pool,) = parse_pools(resolve(s.output("Pools"), s.template))
    assert pool.auto_scaling_groups == tuple(names.split(",")) == tuple(
        f"ref-{logical}" for logical in groups)


def test_each_pool_boots_its_ami(mixed):
    """trn1 (xla): the SDK release's DLAMI, looked up at deploy time; trn2 (native): the Base
    DLAMI's public parameter; cpu: Amazon Linux 2023's public parameter, root /dev/xvda."""
    by_pool = groups_by_pool(mixed)
    data = {name: launch_template_of(mixed, next(iter(groups.values())))[1]
            for name, groups in by_pool.items()}
    (dlami_id, dlami), = mixed.resources("Custom::NeuronDlami").items()
    assert data["trn1"]["ImageId"] == {"Fn::GetAtt": [dlami_id, "ImageId"]}
    assert dlami["Properties"]["SdkRelease"] == XLA_STACK.sdk_release
    parameters = mixed.template["Parameters"]
    assert parameters[data["trn2"]["ImageId"]["Ref"]]["Default"] == NATIVE_STACK.base_dlami_parameter
    cpu_parameter = parameters[data["cpu"]["ImageId"]["Ref"]]
    assert cpu_parameter == {"Type": "AWS::SSM::Parameter::Value<AWS::EC2::Image::Id>",
                             "Default": CPU_AMI_PARAMETER}
    roots = {name: d["BlockDeviceMappings"][0]["DeviceName"] for name, d in data.items()}
    assert roots == {"trn1": "/dev/sda1", "trn2": "/dev/sda1", "cpu": CPU_ROOT_DEVICE}
    assert data["cpu"]["BlockDeviceMappings"][0]["Ebs"]["VolumeSize"] == 256  # the pool's own
    # one instance profile for every pool's nodes
    assert len({json.dumps(d["IamInstanceProfile"]) for d in data.values()}) == 1
    assert mixed.output("StandaloneAmiId") == data["trn1"]["ImageId"]


def test_the_cpu_ami_parameter_is_the_one_aws_cdk_lib_names_for_al2023():
    assert CPU_AMI_PARAMETER == ec2.AmazonLinux2023ImageSsmParameter.ssm_parameter_name(
        cpu_type=ec2.AmazonLinuxCpuType.X86_64, kernel=ec2.AmazonLinux2023Kernel.DEFAULT,
        edition=ec2.AmazonLinuxEdition.STANDARD)


def test_each_pools_user_data_has_its_own_job_environment(mixed):
    """NeuronCores, EFA interfaces, image and runtime are the pool's: the CPU pool's nodes
    have no NeuronCores or EFA, run jobs in the main image (container, whatever
    standalone.runtime says) and mount FSx over TCP; trn2's run the native image."""
    main, trn2, cpu = (node_file(mixed, f"EfaLaunchTemplate{s}") for s in ("", "Trn2", "Cpu"))
    image = {name: resolve(f["env"][JobEnv.TRAINING_IMAGE_URI.value], mixed.template)
             for name, f in (("trn1", main), ("trn2", trn2), ("cpu", cpu))}
    assert image["cpu"] == image["trn1"] != image["trn2"]
    assert "TrainingImageNativeRepository" in image["trn2"]
    for f, pool in ((main, "trn1"), (trn2, "trn2"), (cpu, "cpu")):
        spec = mixed.config.pool(pool).instance
        env = f["env"]
        assert env[JobEnv.INSTANCE_TYPE.value] == spec.name
        assert env[JobEnv.NEURON_CORES_PER_NODE.value] == str(spec.logical_neuron_cores)
        assert env[JobEnv.EFA_INTERFACES_PER_NODE.value] == str(spec.efa_interfaces)
        assert ("FI_PROVIDER" in env) == spec.supports_efa
    assert cpu["env"][JobEnv.NEURON_CORES_PER_NODE.value] == "0"
    assert trn2["env"][JobEnv.NEURON_STACK.value] == "native"
    assert cpu["node"]["runtime"] == "container" and cpu["node"]["venv"] is None
    assert cpu["node"]["imports"] == "" and "Amazon Linux 2023" in cpu["node"]["ami_source"]
    assert cpu["fsx"]["efa"]["mode"] == "off" and cpu["fsx"]["efa"]["interfaces"] == 0
    assert trn2["fsx"]["efa"]["mode"] == "off"  # trn2 is no EFA client of FSx for Lustre
    assert "torch_xla" not in trn2["node"]["imports"] and "torch_xla" in main["node"]["imports"]
    for prefix in ("EfaLaunchTemplate", "EfaLaunchTemplateTrn2", "EfaLaunchTemplateCpu"):
        assert len(user_data(mixed.template, prefix).encode()) < 16 * 1024


def test_the_pools_output_names_each_pools_groups(mixed):
    pools = {p.name: p for p in parse_pools(resolve(mixed.output("Pools"), mixed.template))}
    for name, groups in groups_by_pool(mixed).items():
        assert pools[name].auto_scaling_groups == tuple(f"ref-{g}" for g in groups)
    # the older outputs stay the main pool's
    main = resolve(mixed.output("StandaloneAutoScalingGroupName"), mixed.template)
    assert tuple(main.split(",")) == pools["trn1"].auto_scaling_groups


def test_the_node_role_pulls_every_pools_image_and_each_group_waits_for_its_build(mixed):
    policy = mixed.logical("StandaloneNodeRoleDefaultPolicy")["Properties"]["PolicyDocument"]
    (pull,) = [st for st in policy["Statement"] if "ecr:BatchGetImage" in st["Action"]]
    repositories = {r["Fn::GetAtt"][0] for r in pull["Resource"]}
    assert repositories == {mixed.ref_id("TrainingImageRepository"),
                            mixed.ref_id("TrainingImageNativeRepository")}
    builds = {name: {d for g in groups.values() for d in g["DependsOn"] if "Build" in d}
              for name, groups in groups_by_pool(mixed).items()}
    assert builds == {"trn1": {mixed.ref_id("TrainingImageBuild")},
                      "cpu": {mixed.ref_id("TrainingImageBuild")},
                      "trn2": {mixed.ref_id("TrainingImageNativeBuild")}}


def test_node_group_ids_of_two_pools_never_meet():
    """Pool ``trn2``'s second group and pool ``trn22``'s first: with the suffix behind
    ``Nodes`` both would be ``NodesTrn22``."""
    two = (Group(nodes=4, subnet=0), Group(nodes=4, subnet=1))
    counts = NodeCounts(min=1, desired=5, max=8)
    assert [(g.construct_id, g.min, g.desired, g.max) for g in node_groups(two, counts)] == [
        ("Nodes", 1, 4, 4), ("Nodes2", 0, 1, 4)]
    trn2 = [g.construct_id for g in node_groups(two, counts, "Trn2")]
    trn22 = [g.construct_id for g in node_groups(two, counts, "Trn22")]
    assert trn2 == ["Trn2Nodes", "Trn2Nodes2"] and not set(trn2) & set(trn22)


def test_pool_settings():
    """A CPU pool runs containers on AL2023 whatever the section says; a Trainium pool's
    venv is its own Neuron stack's unless the section names one."""
    config = parse_config({"orchestrator": "standalone", "az_ids": ["use2-az3", "use2-az1"],
                           "pools": [{"name": "trn1", "instance_type": "trn1.32xlarge"},
                                     {"name": "trn2", "instance_type": "trn2.48xlarge"},
                                     {"name": "cpu", "instance_type": "m7i.8xlarge"}]}).config
    section = StandaloneConfig(runtime="dlami-venv", ami_id="ami-0123456789abcdef0")
    trn1, trn2, cpu = (pool_settings(section, p) for p in config.node_pools)
    assert (trn1.dlami_venv, trn2.dlami_venv) == (XLA_STACK.venv, NATIVE_STACK.venv)
    assert trn2.ami_id == "ami-0123456789abcdef0" and trn2.runtime == "dlami-venv"
    assert (cpu.runtime, cpu.dlami_venv, cpu.ami_id, cpu.ami_ssm_parameter,
            cpu.root_device_name) == ("container", None, None, None, CPU_ROOT_DEVICE)
    named = section.model_copy(update={"dlami_venv": "/opt/my_venv"})
    assert pool_settings(named, config.node_pools[1]).dlami_venv == "/opt/my_venv"


def test_on_a_dlami_venv_stack_the_cpu_pool_still_runs_containers(synth):
    """``runtime: dlami-venv`` with a pinned AMI: the Trainium pools boot it and fetch the
    training program, each with its Neuron stack's venv; the CPU pool boots Amazon Linux 2023,
    fetches no program and runs jobs in the training image."""
    s = synth(profile_path("mixed"), orchestrator="standalone",
              **{"standalone.runtime": "dlami-venv", "standalone.ami_id": "ami-0123456789abcdef0"})
    files = {pool: node_file(s, f"EfaLaunchTemplate{suffix}")
             for pool, suffix in (("trn1", ""), ("trn2", "Trn2"), ("cpu", "Cpu"))}
    assert {p: (f["node"]["runtime"], f["node"]["venv"]) for p, f in files.items()} == {
        "trn1": ("dlami-venv", XLA_STACK.venv), "trn2": ("dlami-venv", NATIVE_STACK.venv),
        "cpu": ("container", None)}
    programs = {p: re.search(r"^PROGRAM_URL='([^']*)'$", user_data(s.template, prefix),
                             flags=re.M).group(1)
                for p, prefix in (("trn1", "EfaLaunchTemplate"), ("cpu", "EfaLaunchTemplateCpu"))}
    assert programs["trn1"].startswith("s3://") and programs["cpu"] == ""
    images = {name: launch_template_of(s, next(iter(groups.values())))[1]["ImageId"]
              for name, groups in groups_by_pool(s).items()}
    assert images["trn1"] == images["trn2"] == "ami-0123456789abcdef0"
    assert s.template["Parameters"][images["cpu"]["Ref"]]["Default"] == CPU_AMI_PARAMETER
    # the CPU pool's group waits for the image it pulls; the venv pools' groups for no build
    builds = {name: [d for g in groups.values() for d in g["DependsOn"] if "Build" in d]
              for name, groups in groups_by_pool(s).items()}
    assert builds == {"trn1": [], "trn2": [], "cpu": [s.ref_id("TrainingImageBuild")]}


def test_lustre_over_efa_is_for_the_pools_whose_type_can_be_an_efa_client():
    """With fsx.efa required, the main pool's nodes follow the stack's plan; another pool of
    an EFA client type (trn1.32xlarge) too, with its own interface count; trn2 (no EFA client
    of FSx for Lustre) and a CPU pool mount over TCP."""
    config = parse_config({"orchestrator": "standalone", "az_ids": ["use2-az3", "use2-az1"],
                           "pools": [{"name": "main", "instance_type": "trn1.32xlarge"},
                                     {"name": "dev", "instance_type": "trn1.32xlarge"},
                                     {"name": "big", "instance_type": "trn2.48xlarge"},
                                     {"name": "cpu", "instance_type": "m7i.8xlarge"}]}).config
    foundation = SimpleNamespace(fsx_efa_mode="required", fsx_efa_interfaces=3)
    modes = {p.name: pool_efa_settings(foundation, SimpleNamespace(pool=p))
             for p in config.node_pools}
    assert {n: (m["mode"], m["interfaces"]) for n, m in modes.items()} == {
        "main": ("required", 3), "dev": ("required", 2), "big": ("off", 0), "cpu": ("off", 0)}
