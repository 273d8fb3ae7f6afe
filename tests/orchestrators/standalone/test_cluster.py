"""Standalone orchestrator: the Auto Scaling group, the launch template it boots from, access
(Session Manager only), the node role, deploy and destroy order, the user data and the
outputs, on the two standalone profiles (single-node: 1x trn1.32xlarge, container runtime;
trn1-2xl: 1x trn1.2xlarge without EFA, DLAMI venv runtime; both the xla stack) and on
trn2.48xlarge (the native stack: its default AMI, its venv and imports)."""

from __future__ import annotations

import json
import re

import pytest

from tests.conftest import REPO_ROOT, profile_path
from tests.orchestrators.standalone.conftest import NATIVE_AMI_ID
from tests.orchestrators.standalone.template_values import user_data
from trn_ultracluster.config.fsx_efa import plan_fsx_efa
from trn_ultracluster.config import ConfigError, parse_config
from trn_ultracluster.config.facts import NATIVE_STACK, NEURON_DLAMI_LATEST_PARAMETER, XLA_STACK
from trn_ultracluster.contracts.hyperpod import JobEnv
from trn_ultracluster.contracts.outputs import STANDALONE_KEYS
from trn_ultracluster.contracts.standalone import NODE_DIR, NODE_LOG, PROGRAM_DIR, READY_FILE
from trn_ultracluster.orchestrators.standalone.dlami import DLAMI_OWNER
from trn_ultracluster.orchestrators.standalone.node import (
    SSM_CORE_POLICY,
    VENV_IMPORTS,
    render_user_data,
)
from trn_ultracluster.template_graph import transitive_dependencies


def the(s, cfn_type: str) -> tuple[str, dict]:
    """The one resource of ``cfn_type``: (logical id, resource)."""
    (found,) = s.resources(cfn_type).items()
    return found


def lt_data(s) -> dict:
    return s.only("AWS::EC2::LaunchTemplate")["LaunchTemplateData"]


def node_json(s) -> dict:
    """The ``node`` section of the ``trn_ultracluster.json`` the user data writes."""
    text = user_data(s.template)
    return json.loads(text.split("<<'TRN_CLUSTER_JSON'\n", 1)[1]
                      .split("\nTRN_CLUSTER_JSON", 1)[0])["node"]


# --- the group and its launch template ---------------------------------------------------

@pytest.mark.parametrize("name", ["single", "small"])
def test_group_launches_from_the_efa_launch_template_in_the_compute_subnet(request, name):
    s = request.getfixturevalue(name)
    group = s.only("AWS::AutoScaling::AutoScalingGroup")
    lt_id, _ = the(s, "AWS::EC2::LaunchTemplate")
    assert group["LaunchTemplate"] == {"LaunchTemplateId": {"Ref": lt_id},
                                       "Version": {"Fn::GetAtt": [lt_id, "LatestVersionNumber"]}}
    n = s.config.nodes
    assert (group["MinSize"], group["DesiredCapacity"], group["MaxSize"]) == (
        str(n.min), str(n.desired), str(n.max))
    assert group["VPCZoneIdentifier"] == [s.output("ComputeSubnetId")]
    assert "AvailabilityZones" not in group and "LaunchConfigurationName" not in group
    assert s.output("LaunchTemplateId") == {"Ref": lt_id}


def test_instances_get_the_configurations_tags_from_the_group(single):
    """The group passes its Name and the configuration's tags on to the instances it launches
    (a tag change updates the group in place and reaches instances launched after it); the
    launch template tags instances, volumes and interfaces with the stack's id only, so a tag
    change makes no new launch template version. No key comes from both."""
    group = single.only("AWS::AutoScaling::AutoScalingGroup")
    propagated = {t["Key"] for t in group["Tags"] if t["PropagateAtLaunch"]}
    assert propagated == {"Name", *single.config.tags}
    (instance_tags,) = [s["Tags"] for s in lt_data(single)["TagSpecifications"]
                        if s["ResourceType"] == "instance"]
    assert {t["Key"] for t in instance_tags} == {"trn-ultracluster:stack-id"}


def test_trainium_type_interfaces_and_placement(single, small):
    big = lt_data(single)
    assert big["InstanceType"] == "trn1.32xlarge"
    assert [i.get("InterfaceType") for i in big["NetworkInterfaces"]] == ["efa"] * 8
    assert big["Placement"] == {"GroupName": {"Ref": single.ref_id("EfaPlacementGroup")}}
    one = lt_data(small)
    assert one["InstanceType"] == "trn1.2xlarge"
    assert len(one["NetworkInterfaces"]) == 1 and "InterfaceType" not in one["NetworkInterfaces"][0]
    assert "Placement" not in one and not small.resources("AWS::EC2::PlacementGroup")


@pytest.mark.parametrize("name", ["single", "small"])
def test_the_launch_template_boots_the_dlami_with_the_node_profile_and_user_data(request, name):
    s = request.getfixturevalue(name)
    assert s.config.neuron_stack == "xla"
    data = lt_data(s)
    # the DLAMI of the training image's SDK release, looked up at deploy time
    dlami_id, dlami = the(s, "Custom::NeuronDlami")
    assert data["ImageId"] == {"Fn::GetAtt": [dlami_id, "ImageId"]}
    assert {k: dlami["Properties"][k] for k in ("Owner", "Filters", "SdkRelease")} == {
        "Owner": DLAMI_OWNER, "Filters": XLA_STACK.dlami_filters(),
        "SdkRelease": XLA_STACK.sdk_release}
    assert not [p for p in s.template.get("Parameters", {}).values()
                if "AWS::EC2::Image::Id" in p["Type"]]
    assert s.output("StandaloneAmiId") == {"Fn::GetAtt": [dlami_id, "ImageId"]}
    profile_id, profile = the(s, "AWS::IAM::InstanceProfile")
    assert data["IamInstanceProfile"] == {"Arn": {"Fn::GetAtt": [profile_id, "Arn"]}}
    assert profile["Properties"]["Roles"] == [{"Ref": s.ref_id("StandaloneNodeRole")}]
    assert "Fn::Base64" in data["UserData"]
    # the root volume resizes the Ubuntu DLAMI's root device, encrypted gp3
    assert data["BlockDeviceMappings"] == [{"DeviceName": "/dev/sda1", "Ebs": {
        "DeleteOnTermination": True, "Encrypted": True, "VolumeType": "gp3",
        "VolumeSize": s.config.root_volume_gib}}]
    assert data["MetadataOptions"] == {"HttpEndpoint": "enabled", "HttpTokens": "required",
                                       "HttpPutResponseHopLimit": 1}


def test_the_native_stack_boots_the_base_dlami_by_its_ssm_parameter(native):
    """On trn2 (native stack) the default AMI is the Neuron Base DLAMI's public parameter,
    resolved by CloudFormation; no DLAMI lookup (its custom resource, function and role)."""
    assert native.config.neuron_stack == "native"
    data = lt_data(native)
    parameter = native.template["Parameters"][data["ImageId"]["Ref"]]
    assert parameter == {"Type": "AWS::SSM::Parameter::Value<AWS::EC2::Image::Id>",
                         "Default": NATIVE_STACK.base_dlami_parameter}
    assert native.output("StandaloneAmiId") == data["ImageId"]
    assert not native.resources("Custom::NeuronDlami")
    assert not [k for k in native.template["Resources"] if k.startswith("StandaloneDlami")]
    # jobs run in the training image, which the group waits for
    assert (native.output("StandaloneRuntime"), native.output("StandaloneDlamiVenv")) == (
        "container", "none")
    _, group = the(native, "AWS::AutoScaling::AutoScalingGroup")
    assert native.ref_id("TrainingImageBuild") in group["DependsOn"]
    node = node_json(native)
    assert node["venv"] is None
    assert NATIVE_STACK.base_dlami_parameter in node["ami_source"]


def test_node_settings_follow_the_stack(single, small, native, native_venv):
    """The venv the node setup checks and the modules it imports: the xla stack's DLAMI venv
    with torch_xla; the native stack's torch-neuronx venv without it."""
    for s, stack, venv in ((single, "xla", None), (small, "xla", XLA_STACK.venv),
                           (native, "native", None), (native_venv, "native", NATIVE_STACK.venv)):
        node = node_json(s)
        assert node["imports"].split(",") == list(VENV_IMPORTS[stack]), stack
        assert node["venv"] == venv
        assert ("torch_xla" in node["imports"]) == (stack == "xla")
        assert {"torch", "torch_neuronx"} <= set(node["imports"].split(","))
        assert (f"the default standalone.dlami_venv of the {stack} stack" in
                node["venv_source"])
    assert node_json(native_venv)["ami_source"] == f"standalone.ami_id {NATIVE_AMI_ID}"
    assert "unsetting standalone.ami_id" in node_json(small)["venv_source"]
    assert "setting standalone.ami_id or" in node_json(native_venv)["venv_source"]


def test_the_venv_imports_are_what_the_training_image_checks():
    """The native stage of training/Dockerfile checks exactly the native venv's modules; the
    xla stage checks the xla venv's and NxD Training's, which a DLAMI venv job does not use."""
    dockerfile = (REPO_ROOT / "training/Dockerfile").read_text()
    stages = re.findall(r'TRN_IMAGE_IMPORTS="([^"]*)"', dockerfile)
    xla_image, native_image = (stage.split() for stage in stages)
    assert tuple(native_image) == VENV_IMPORTS["native"]
    assert set(VENV_IMPORTS["xla"]) <= set(xla_image)
    assert set(xla_image) - set(VENV_IMPORTS["xla"]) == {"neuronx_distributed", "trn_train.nxd"}


def test_an_own_ami_parameter_and_root_device_reach_the_template(synth):
    s = synth(profile_path("single-node"), **{
        "standalone.ami_ssm_parameter": NEURON_DLAMI_LATEST_PARAMETER,
        "standalone.root_device_name": "/dev/xvda"})
    data = lt_data(s)
    parameter = s.template["Parameters"][data["ImageId"]["Ref"]]
    assert parameter == {"Type": "AWS::SSM::Parameter::Value<AWS::EC2::Image::Id>",
                         "Default": NEURON_DLAMI_LATEST_PARAMETER}
    assert data["BlockDeviceMappings"][0]["DeviceName"] == "/dev/xvda"
    assert s.output("StandaloneAmiId") == data["ImageId"]
    assert not s.resources("Custom::NeuronDlami")


def test_a_pinned_ami_id_is_the_launch_templates_as_given(synth):
    s = synth(profile_path("single-node"), **{"standalone.ami_id": "ami-0123456789abcdef0"})
    assert lt_data(s)["ImageId"] == "ami-0123456789abcdef0"
    assert not s.resources("Custom::NeuronDlami")
    assert s.output("StandaloneAmiId") == "ami-0123456789abcdef0"


def test_the_dlami_lookup_may_only_describe_images_and_deletes_nothing(single):
    """Its role's own policy: ec2:DescribeImages (no resource-level permissions) and its logs;
    CloudFormation deletes the resource with the stack (the handler's Delete is a no-op)."""
    dlami_id, dlami = the(single, "Custom::NeuronDlami")
    statements = [st for pid, policy in single.resources("AWS::IAM::Policy").items()
                  if "StandaloneDlami" in pid and "Provider" not in pid
                  for st in policy["Properties"]["PolicyDocument"]["Statement"]]
    actions = sorted({a for st in statements for a in (
        st["Action"] if isinstance(st["Action"], list) else [st["Action"]])})
    assert actions == ["ec2:DescribeImages", "logs:CreateLogStream", "logs:PutLogEvents"]
    describe = next(st for st in statements if st["Action"] == "ec2:DescribeImages")
    assert describe["Resource"] == "*"
    assert dlami.get("DeletionPolicy", "Delete") == "Delete"  # nothing kept: it only read


# --- access: Session Manager only ----------------------------------------------------------

@pytest.mark.parametrize("name", ["single", "small"])
def test_no_key_pair_and_no_inbound_rule_from_outside(request, name):
    s = request.getfixturevalue(name)
    assert "KeyName" not in lt_data(s)
    assert not s.resources("AWS::EC2::KeyPair")
    rules = list(s.resources("AWS::EC2::SecurityGroupIngress").values())
    for group in s.resources("AWS::EC2::SecurityGroup").values():
        rules += [{"Properties": r} for r in group["Properties"].get("SecurityGroupIngress", [])]
    assert rules
    for rule in rules:
        props = rule["Properties"]
        assert "CidrIp" not in props and "CidrIpv6" not in props, props  # groups only
        assert "SourceSecurityGroupId" in props
        assert not (props.get("FromPort", -1) <= 22 <= props.get("ToPort", -1)
                    and "SourceSecurityGroupId" not in props)
    # every interface is in the nodes' (EFA) security group alone
    efa_group = {"Fn::GetAtt": [s.ref_id("EfaSecurityGroup"), "GroupId"]}
    assert all(i["Groups"] == [efa_group] for i in lt_data(s)["NetworkInterfaces"])


def test_node_role_ssm_core_ecr_fsx_data_bucket_logs_and_assets(single):
    s = single
    role = s.logical("StandaloneNodeRole")["Properties"]
    assert role["AssumeRolePolicyDocument"]["Statement"] == [{
        "Action": "sts:AssumeRole", "Effect": "Allow",
        "Principal": {"Service": "ec2.amazonaws.com"}}]
    assert role["ManagedPolicyArns"] == [{"Fn::Join": ["", [
        "arn:", {"Ref": "AWS::Partition"}, f":iam::aws:policy/{SSM_CORE_POLICY}"]]}]
    policy = s.logical("StandaloneNodeRoleDefaultPolicy")["Properties"]["PolicyDocument"]
    statements = policy["Statement"]
    text = json.dumps(statements)

    def actions(statement):
        a = statement["Action"]
        return {a} if isinstance(a, str) else set(a)

    fsx = next(st for st in statements if st.get("Sid") == "FsxDescribe")
    assert actions(fsx) == {"fsx:DescribeFileSystems", "fsx:DescribeDataRepositoryAssociations",
                            "fsx:DescribeDataRepositoryTasks"} and fsx["Resource"] == "*"
    pull = next(st for st in statements if "ecr:BatchGetImage" in actions(st))
    assert pull["Resource"] == {"Fn::GetAtt": [s.ref_id("TrainingImageRepository"), "Arn"]}
    assert any("ecr:GetAuthorizationToken" in actions(st) for st in statements)
    bucket = s.ref_id("StorageDataBucket")
    writes = [st for st in statements if "s3:PutObject" in actions(st)]
    assert len(writes) == 1 and bucket in json.dumps(writes[0]["Resource"])
    logs = next(st for st in statements if "logs:PutLogEvents" in actions(st))
    assert s.ref_id("StandaloneNodeLogs") in json.dumps(logs["Resource"])
    assert "cdk-hnb659fds-assets" in text  # the node scripts, read only
    assert not any(a.endswith(":*") and a != "s3:*" for st in statements for a in actions(st))
    assert "ec2:" not in text and "iam:" not in text


# --- deploy and destroy order --------------------------------------------------------------

def test_group_waits_for_its_permissions_nat_and_image_build_not_for_the_file_system(single):
    s = single
    group_id, group = the(s, "AWS::AutoScaling::AutoScalingGroup")
    depends = set(group["DependsOn"])
    assert {s.ref_id("StandaloneNodeRoleDefaultPolicy"), s.ref_id("TrainingImageBuild")} <= depends
    assert any("PrivateSubnet1DefaultRoute" in d for d in depends)  # the NAT route
    needs = transitive_dependencies(s.template, group_id)
    assert not {k for k in needs if s.template["Resources"][k]["Type"].startswith("AWS::FSx")}


def test_dlami_venv_needs_no_image_build(small):
    group_id, group = the(small, "AWS::AutoScaling::AutoScalingGroup")
    assert not any("TrainingImageBuild" in d for d in group["DependsOn"])


def test_destroy_deletes_the_group_before_what_its_instances_use(single):
    """CloudFormation deletes in reverse dependency order: the group (and so its instances
    and their interfaces) goes before the launch template, the instance profile, the nodes'
    security group, the placement group and the subnet."""
    group_id, _ = the(single, "AWS::AutoScaling::AutoScalingGroup")
    needs = transitive_dependencies(single.template, group_id)
    for prefix in ("EfaLaunchTemplate", "StandaloneNodeInstanceProfile", "EfaSecurityGroup",
                   "EfaPlacementGroup", "NetworkVpcPrivateSubnet1Subnet"):
        assert single.ref_id(prefix) in needs, prefix
    group = single.template["Resources"][group_id]
    assert group.get("DeletionPolicy", "Delete") == "Delete"
    assert "UpdatePolicy" not in group  # a deploy never replaces a node that runs a job


def test_node_log_group_follows_the_data_policy(single, synth):
    logs = single.logical("StandaloneNodeLogs")
    assert logs["DeletionPolicy"] == "Delete"  # single-node: data_removal_policy destroy
    kept = synth(orchestrator="standalone").logical("StandaloneNodeLogs")
    assert kept["DeletionPolicy"] == "Retain" and kept["Properties"]["RetentionInDays"] == 30


# --- the user data --------------------------------------------------------------------------

@pytest.mark.parametrize("name, runtime", [("single", "container"), ("small", "dlami-venv")])
def test_user_data_fetches_the_scripts_writes_the_stack_file_and_runs_the_setup(request, name,
                                                                               runtime):
    s = request.getfixturevalue(name)
    text = user_data(s.template)
    assert not re.search(r"@@[A-Z_]+@@", text)
    assert f'NODE_DIR="${{ROOT}}{NODE_DIR}"' in text
    fetched = re.findall(r"^fetch '(s3://[^']+)' (\S+)$", text, flags=re.M)
    assert [f[1] for f in fetched] == ["node_setup.sh", "fsx.sh", "lcs.py", "lustre_efa.sh",
                                       "lustre_efa.py", "neuron_metrics.sh", "neuron_metrics.py"]
    program = re.search(r"^PROGRAM_URL='([^']*)'$", text, flags=re.M).group(1)
    assert bool(program) == (runtime == "dlami-venv")
    assert text.rstrip().endswith('exec bash "${NODE_DIR}/node_setup.sh" --boot')  # first boot
    data = json.loads(text.split("<<'TRN_CLUSTER_JSON'\n", 1)[1].split("\nTRN_CLUSTER_JSON", 1)[0])
    env = data["env"]
    assert env[JobEnv.INSTANCE_TYPE.value] == s.config.instance_type
    assert env[JobEnv.NEURON_CORES_PER_NODE.value] == str(s.config.instance.logical_neuron_cores)
    assert env["NEURON_CC_FLAGS"] == "--cache_dir=/fsx/neuron-compile-cache"
    assert ("FI_PROVIDER" in env) == s.config.instance.supports_efa
    assert data["fsx"]["tag_value"].startswith("arn:aws:cloudformation:")
    assert data["fsx"]["efa"]["mode"] == plan_fsx_efa(s.config).mode == "off"  # 1,200 GiB: too small
    assert data["names"]["FSX_MOUNT_POINT"] == JobEnv.FSX_MOUNT_POINT.value
    node = data["node"]
    assert node["runtime"] == runtime
    assert (node["venv"] is None) == (runtime == "container")
    assert (node["ready_file"], node["log"], node["program_dir"]) == (READY_FILE, NODE_LOG,
                                                                      PROGRAM_DIR)
    assert node["log_group"] == f"ref-{s.ref_id('StandaloneNodeLogs')}"
    assert node["metrics_cluster"] == "TrnUltraCluster"
    assert len(text.encode()) < 16 * 1024  # EC2's user data limit (16 KB before encoding)


def test_render_user_data_refuses_missing_or_unknown_values():
    with pytest.raises(ValueError, match="differ"):
        render_user_data({"A": "1"}, template="x @@A@@ @@B@@")
    assert render_user_data({"A": "1", "B": "2"}, template="x @@A@@ @@B@@") == "x 1 2"


# --- metrics ---------------------------------------------------------------------------------

def test_nodes_publish_neuron_metrics_the_dashboard_reads(single):
    """The node role may put metrics only in the stack's namespaces; the dashboard searches
    the nodes' namespace with the ClusterName the node setup publishes (the stack's name)."""
    source = single.stack.orchestrator.metric_source
    assert (source.namespace, dict(source.cluster_dimensions)) == (
        "TrnUltraCluster/Neuron", {"ClusterName": "TrnUltraCluster"})
    policy = single.logical("StandaloneNodeMetricsPolicy")["Properties"]
    assert policy["Roles"] == [{"Ref": single.ref_id("StandaloneNodeRole")}]
    (statement,) = policy["PolicyDocument"]["Statement"]
    assert statement["Condition"] == {"StringEquals": {"cloudwatch:namespace": [
        "TrnUltraCluster/Neuron", "TrnUltraCluster/Training/TrnUltraCluster"]}}
    dashboard = json.dumps(single.only("AWS::CloudWatch::Dashboard"))
    assert "TrnUltraCluster/Neuron,ClusterName,InstanceId,NodeName" in dashboard


# --- outputs --------------------------------------------------------------------------------

def test_outputs(single, small, native_venv, synth):
    assert {k.value for k in STANDALONE_KEYS} <= set(single.template["Outputs"])
    group_id, _ = the(single, "AWS::AutoScaling::AutoScalingGroup")
    assert single.output("StandaloneAutoScalingGroupName") == {"Ref": group_id}
    assert single.output("JobBackend") == "standalone"
    assert (single.output("StandaloneRuntime"), single.output("StandaloneDlamiVenv")) == (
        "container", "none")
    # dlami_venv unset: the stack's venv
    assert small.config.standalone.dlami_venv is None
    assert (small.output("StandaloneRuntime"), small.output("StandaloneDlamiVenv")) == (
        "dlami-venv", XLA_STACK.venv)
    assert native_venv.output("StandaloneDlamiVenv") == NATIVE_STACK.venv
    assert native_venv.output("StandaloneAmiId") == NATIVE_AMI_ID
    mine = synth(profile_path("trn1-2xl"),
                 **{"standalone.dlami_venv": "/opt/aws_neuronx_venv_pytorch_2_9"})
    assert mine.output("StandaloneDlamiVenv") == "/opt/aws_neuronx_venv_pytorch_2_9"
    assert node_json(mine)["venv"] == "/opt/aws_neuronx_venv_pytorch_2_9"
    shell = json.dumps(single.output("StandaloneShellCommand"))
    assert "aws ssm start-session --region us-west-2 --target" in shell and group_id in shell


# --- configuration ------------------------------------------------------------------------

def test_standalone_allows_trn1_2xlarge_but_not_two_of_them():
    assert parse_config({"orchestrator": "standalone", "instance_type": "trn1.2xlarge"})
    with pytest.raises(ConfigError, match="nodes.max = 2: must be 1 for trn1.2xlarge"):
        parse_config({"orchestrator": "standalone", "instance_type": "trn1.2xlarge",
                      "nodes": {"min": 0, "desired": 1, "max": 2}})
