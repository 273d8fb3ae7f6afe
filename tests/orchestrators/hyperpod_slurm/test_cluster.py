"""HyperPod Slurm orchestrator: the synthesized cluster, role, lifecycle bucket and outputs.

The instance groups and VpcConfig are also checked against botocore's SageMaker
``CreateCluster`` input model after replacing CloudFormation functions with realistic values
(:func:`tests.orchestrators.hyperpod.create_cluster_request`, shared with HyperPod on EKS).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from botocore.validate import validate_parameters

from tests.conftest import REPO_ROOT
from tests.orchestrators.hyperpod import PLACEHOLDERS, create_cluster_request, sagemaker_model
from trn_ultracluster.config import ConfigError, parse_config
from trn_ultracluster.orchestrators.hyperpod_slurm.lifecycle import LIFECYCLE_ASSETS
from trn_ultracluster.contracts.outputs import HYPERPOD_KEYS

PROFILE_16 = REPO_ROOT / "profiles" / "ultracluster-16.yaml"
PLAN = "arn:aws:sagemaker:us-west-2:123456789012:training-plan/trn-plan-0001"
TWO_GROUPS = [{"name": "train", "partition": "train", "instance_count": 2},
              {"name": "dev", "partition": "debug", "instance_count": 1}]


@pytest.fixture(scope="module")
def hp(synth):
    return synth(orchestrator="hyperpod-slurm")


@pytest.fixture(scope="module")
def variant(synth):
    """Two worker groups, a training plan, no login node."""
    return synth(**{"orchestrator": "hyperpod-slurm", "nodes.max": 3,
                    "hyperpod.worker_groups": TWO_GROUPS, "hyperpod.training_plan_arn": PLAN,
                    "hyperpod.login_instance_type": "null"})


def groups(s) -> dict[str, dict[str, Any]]:
    return {g["InstanceGroupName"]: g for g in s.only("AWS::SageMaker::Cluster")["InstanceGroups"]}


def logical_id(s, cfn_type: str, contains: str) -> str:
    (found,) = [k for k in s.resources(cfn_type) if contains in k]
    return found


def test_cluster_groups_match_the_config(hp):
    cluster = hp.only("AWS::SageMaker::Cluster")
    # hyperpod.cluster_name null: the default stack keeps the name it had before stack_name
    assert cluster["ClusterName"] == "trn-ultracluster"
    assert cluster["NodeRecovery"] == "Automatic"
    # API-driven Slurm configuration, strategy set explicitly (the docs disagree on its default)
    assert cluster["Orchestrator"] == {"Slurm": {"SlurmConfigStrategy": "Managed"}}
    g = groups(hp)
    assert list(g) == ["controller", "login", "workers"]
    assert (g["controller"]["InstanceType"], g["controller"]["InstanceCount"]) == ("ml.c5.xlarge", 1)
    assert (g["login"]["InstanceType"], g["login"]["InstanceCount"]) == ("ml.m5.4xlarge", 1)
    workers = g["workers"]
    assert workers["InstanceType"] == hp.config.instance.hyperpod_instance_type == "ml.trn1.32xlarge"
    assert workers["InstanceCount"] == hp.config.nodes.desired
    assert workers["ThreadsPerCore"] == 1
    assert workers["InstanceStorageConfigs"] == [{"EbsVolumeConfig": {"VolumeSizeInGB": 500}}]
    assert workers["OnStartDeepHealthChecks"] == ["InstanceStress", "InstanceConnectivity"]
    assert "TrainingPlanArn" not in workers
    for name in ("controller", "login"):
        assert not {"ThreadsPerCore", "OnStartDeepHealthChecks", "InstanceStorageConfigs"} & set(g[name])
    # one Controller, one Login, Compute groups with their partition (and only they have one)
    assert g["controller"]["SlurmConfig"] == {"NodeType": "Controller"}
    assert g["login"]["SlurmConfig"] == {"NodeType": "Login"}
    assert workers["SlurmConfig"] == {"NodeType": "Compute", "PartitionNames": ["trainium"]}


def test_every_group_runs_our_lifecycle_scripts_with_our_role(hp):
    bucket = logical_id(hp, "AWS::S3::Bucket", "HyperPodLifecycleBucket")
    role = logical_id(hp, "AWS::IAM::Role", "HyperPodExecutionRole")
    for group in groups(hp).values():
        assert group["LifeCycleConfig"] == {
            "OnInitComplete": "on_init_complete.sh",
            "SourceS3Uri": {"Fn::Join": ["", ["s3://", {"Ref": bucket}, "/lifecycle/"]]}}
        assert group["ExecutionRole"] == {"Fn::GetAtt": [role, "Arn"]}


def test_vpc_config_is_the_compute_subnet_and_the_efa_group(hp):
    vpc = hp.only("AWS::SageMaker::Cluster")["VpcConfig"]
    assert vpc["Subnets"] == [hp.output("ComputeSubnetId")]
    assert vpc["SecurityGroupIds"] == [hp.output("EfaSecurityGroupId")]


def test_cluster_waits_for_scripts_role_and_nat_route(hp):
    (cluster,) = hp.resources("AWS::SageMaker::Cluster").values()
    depends = cluster["DependsOn"]
    assert logical_id(hp, "Custom::CDKBucketDeployment", "HyperPodLifecycleScripts") in depends
    assert any(d.startswith("HyperPodExecutionRoleDefaultPolicy") for d in depends)
    assert any(d.startswith("NetworkVpcPrivateSubnet1DefaultRoute") for d in depends)


def test_cluster_and_file_system_are_created_in_parallel(hp):
    """Nothing the cluster needs, directly or through others, is the file system (the
    lifecycle script finds it by its tag), so CloudFormation creates both at once."""
    from trn_ultracluster.template_graph import transitive_dependencies

    (cluster,) = hp.resources("AWS::SageMaker::Cluster")
    fsx = logical_id(hp, "AWS::FSx::FileSystem", "Storage")
    needs = transitive_dependencies(hp.template, cluster)
    assert fsx not in needs
    assert not any(hp.template["Resources"][n]["Type"].startswith("AWS::FSx::") for n in needs)
    tags = hp.resources("AWS::FSx::FileSystem")[fsx]["Properties"]["Tags"]
    assert {"Key": "trn-ultracluster:stack-id", "Value": {"Ref": "AWS::StackId"}} in tags


def test_variant_two_worker_groups_training_plan_no_login(variant):
    g = groups(variant)
    assert list(g) == ["controller", "train", "dev"]
    assert [g["train"]["InstanceCount"], g["dev"]["InstanceCount"]] == [2, 1]
    assert g["train"]["TrainingPlanArn"] == g["dev"]["TrainingPlanArn"] == PLAN
    assert "TrainingPlanArn" not in g["controller"]
    assert [g[n]["SlurmConfig"]["PartitionNames"] for n in ("train", "dev")] == [["train"], ["debug"]]
    assert "login" not in g
    assert variant.output("HyperPodWorkerGroupNames") == "train,dev"


def test_sixteen_node_profile_has_sixteen_workers(synth):
    s = synth(PROFILE_16)
    assert groups(s)["workers"]["InstanceCount"] == 16


# --- botocore CreateCluster --------------------------------------------------------------

@pytest.mark.parametrize("name", ["hp", "variant"])
def test_instance_groups_and_vpc_pass_botocore_validation(name, request):
    s = request.getfixturevalue(name)
    cluster = s.only("AWS::SageMaker::Cluster")
    params = create_cluster_request(cluster, s.template, ("ClusterName", "InstanceGroups",
                                                          "VpcConfig", "NodeRecovery",
                                                          "Orchestrator"))
    assert "Fn::" not in json.dumps(params) and '"Ref"' not in json.dumps(params)
    model = sagemaker_model()
    enum = model.shape_for("ClusterInstanceType").enum
    assert {g["InstanceType"] for g in params["InstanceGroups"]} <= set(enum)
    # validate_parameters does not check enums
    node_types = model.shape_for("ClusterSlurmNodeType").enum
    assert {g["SlurmConfig"]["NodeType"] for g in params["InstanceGroups"]} <= set(node_types)
    strategy = params["Orchestrator"]["Slurm"]["SlurmConfigStrategy"]
    assert strategy in model.shape_for("ClusterSlurmConfigStrategy").enum


def test_botocore_validation_would_catch_a_bad_group():
    from botocore.exceptions import ParamValidationError

    shape = sagemaker_model().operation_model("CreateCluster").input_shape
    bad = {"ClusterName": "x", "InstanceGroups": [{"InstanceGroupName": "g", "InstanceCount": 1,
                                                   "ExecutionRole": PLACEHOLDERS["Arn"],
                                                   "ThreadsPerCores": 1}]}
    with pytest.raises(ParamValidationError, match="ThreadsPerCores"):
        validate_parameters(bad, shape)


# --- role, bucket, upload ----------------------------------------------------------------

def statements(s, policy_contains: str) -> list[dict[str, Any]]:
    policy = s.resources("AWS::IAM::Policy")[logical_id(s, "AWS::IAM::Policy", policy_contains)]
    return policy["Properties"]["PolicyDocument"]["Statement"]


def actions_of(statement: dict[str, Any]) -> set[str]:
    a = statement["Action"]
    return {a} if isinstance(a, str) else set(a)


def test_execution_role_trust_and_permissions(hp):
    role = hp.resources("AWS::IAM::Role")[logical_id(hp, "AWS::IAM::Role", "HyperPodExecutionRole")]
    trust = role["Properties"]["AssumeRolePolicyDocument"]["Statement"]
    assert trust == [{"Action": "sts:AssumeRole", "Effect": "Allow",
                      "Principal": {"Service": "sagemaker.amazonaws.com"}}]
    assert json.dumps(role["Properties"]["ManagedPolicyArns"]).count(
        ":iam::aws:policy/AmazonSageMakerClusterInstanceRolePolicy") == 1
    st = statements(hp, "HyperPodExecutionRoleDefaultPolicy")
    by_action = {a: s for s in st for a in actions_of(s)}
    bucket = logical_id(hp, "AWS::S3::Bucket", "HyperPodLifecycleBucket")
    assert {"s3:GetObject*", "s3:List*"} <= set(by_action)
    assert json.dumps(by_action["s3:GetObject*"]["Resource"]).count(bucket) == 2
    assert "PutObject" not in json.dumps(st)  # read only
    repo = logical_id(hp, "AWS::ECR::Repository", "TrainingImage")
    assert repo in json.dumps(by_action["ecr:BatchGetImage"]["Resource"])
    assert by_action["ecr:GetAuthorizationToken"]["Resource"] == "*"
    for action in ("fsx:DescribeFileSystems", "fsx:DescribeDataRepositoryAssociations",
                   "fsx:DescribeDataRepositoryTasks"):  # the lifecycle script's calls
        assert by_action[action]["Resource"] == "*"  # no resource-level form
    assert "log-group:/aws/sagemaker/Clusters/*" in json.dumps(by_action["logs:PutLogEvents"]["Resource"])
    # aws-samples/awsome-distributed-training 1.architectures/5.sagemaker-hyperpod/
    # 1.AmazonSageMakerClustersExecutionRolePolicy.json, "AdditionToEnableVpcConfig": every
    # action is there, but none that changes an interface is granted on "*"
    assert set(by_action) >= {
        "ec2:CreateNetworkInterface", "ec2:CreateNetworkInterfacePermission",
        "ec2:DeleteNetworkInterface", "ec2:DeleteNetworkInterfacePermission",
        "ec2:DescribeNetworkInterfaces", "ec2:DescribeVpcs", "ec2:DescribeDhcpOptions",
        "ec2:DescribeSubnets", "ec2:DescribeSecurityGroups", "ec2:DetachNetworkInterface",
        "ec2:CreateTags"}
    for action, s in by_action.items():
        if action.startswith("ec2:") and not action.startswith("ec2:Describe"):
            assert s["Resource"] != "*" and "*" not in s["Resource"], action
    create = json.dumps(by_action["ec2:CreateNetworkInterface"]["Resource"])
    subnet = hp.stack.network.compute_subnet.node.default_child
    assert hp.stack.get_logical_id(subnet) in create  # the compute subnet only
    assert logical_id(hp, "AWS::EC2::SecurityGroup", "EfaSecurityGroup") in create
    vpc = logical_id(hp, "AWS::EC2::VPC", "NetworkVpc")
    for action in ("ec2:DeleteNetworkInterface", "ec2:DetachNetworkInterface",
                   "ec2:CreateNetworkInterfacePermission", "ec2:CreateTags"):
        condition = by_action[action]["Condition"]["ArnEqualsIfExists"]["ec2:Vpc"]
        assert vpc in json.dumps(condition), action


def test_lifecycle_bucket_is_encrypted_private_ssl_only_and_logged(hp):
    bucket_id = logical_id(hp, "AWS::S3::Bucket", "HyperPodLifecycleBucket")
    props = hp.template["Resources"][bucket_id]["Properties"]
    assert props["BucketEncryption"]["ServerSideEncryptionConfiguration"] == [
        {"ServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}]
    assert all(props["PublicAccessBlockConfiguration"].values())
    assert props["LoggingConfiguration"]["LogFilePrefix"] == "lifecycle-bucket/"
    policies = [p["Properties"] for p in hp.resources("AWS::S3::BucketPolicy").values()
                if p["Properties"]["Bucket"] == {"Ref": bucket_id}]
    assert "aws:SecureTransport" in json.dumps(policies)


def test_scripts_and_generated_json_are_uploaded_under_lifecycle(hp):
    (upload,) = hp.resources("Custom::CDKBucketDeployment").values()
    props = upload["Properties"]
    assert props["DestinationBucketKeyPrefix"] == "lifecycle"
    assert props["Prune"] is True  # removes provisioning_parameters.json of older stacks
    # the lifecycle scripts, the shared node scripts (fsx.sh, lcs.py, lustre_efa.sh and its
    # helper lustre_efa.py), the node metrics scripts, trn_ultracluster.json
    assert len(props["SourceObjectKeys"]) == 4
    staged = {p.name for key in props["SourceObjectKeys"]
              if (hp.outdir / f"asset.{key.removesuffix('.zip')}").is_dir()
              for p in (hp.outdir / f"asset.{key.removesuffix('.zip')}").iterdir()}
    assert {"on_init_complete.sh", "fsx.sh", "lcs.py", "lustre_efa.sh", "lustre_efa.py",
            "neuron_metrics.sh"} <= staged, staged
    markers = json.dumps(props.get("SourceMarkers", []))
    assert logical_id(hp, "AWS::FSx::FileSystem", "Storage") not in markers
    assert "AWS::StackId" in markers  # the file system's tag value, filled in at deploy time


def test_lifecycle_file_names_groups_fsx_tag_and_environment(variant):
    from trn_ultracluster.contracts.hyperpod import JobEnv
    from trn_ultracluster.orchestrators.hyperpod_slurm.lifecycle import lifecycle_file
    from trn_ultracluster.orchestrators.nodes import efa_node_settings

    data = lifecycle_file(variant.config.hyperpod, ["train", "dev"], {"TRN_X": "1"},
                          "arn:stack", True)
    assert data == {
        "groups": {"controller": "controller", "login": None, "workers": ["train", "dev"]},
        "fsx": {"tag_key": "trn-ultracluster:stack-id", "tag_value": "arn:stack",
                "data_repository": True, "efa": efa_node_settings("off", 0)},
        "names": {m.name: m.value for m in JobEnv},
        "env": {"TRN_X": "1"}}
    default = parse_config({"orchestrator": "hyperpod-slurm"}).config
    assert lifecycle_file(default.hyperpod, ["workers"], {}, "s", True)["groups"]["login"] == "login"
    assert lifecycle_file(default.hyperpod, ["workers"], {}, "s",
                          False)["fsx"]["data_repository"] is False
    assert not (LIFECYCLE_ASSETS / "provisioning_parameters.json").exists()


def test_job_environment_holds_what_job_scripts_need(hp):
    from trn_ultracluster.orchestrators.hyperpod_slurm.lifecycle import job_environment

    orchestrator = hp.stack.orchestrator
    env = job_environment(orchestrator, orchestrator.props.settings, orchestrator.props.shape.instance,
                          orchestrator.props.worker_counts,
                          list(orchestrator.props.partitions.values()),
                          orchestrator.props.foundation)
    resolved = {k: hp.stack.resolve(v) for k, v in env.items()}
    assert resolved["TRN_NEURON_CORES_PER_NODE"] == "32"
    assert resolved["TRN_EFA_INTERFACES_PER_NODE"] == "8"
    assert resolved["TRN_DEFAULT_PARTITION"] == "trainium"
    assert resolved["TRN_NEURON_CACHE_DIR"] == "/fsx/neuron-compile-cache"  # same as EKS
    # the Neuron/EFA environment, from the same function as the EKS runtime's
    assert resolved["NEURON_CC_FLAGS"] == "--cache_dir=/fsx/neuron-compile-cache"
    assert (resolved["FI_PROVIDER"], resolved["FI_EFA_USE_DEVICE_RDMA"]) == ("efa", "1")
    assert resolved["TRN_DATA_PATH"] == "/fsx"  # the whole file system is linked to S3
    assert "#" in json.dumps(resolved["TRN_CONTAINER_IMAGE"])  # Pyxis registry#image form


# --- outputs -------------------------------------------------------------------------------

def test_outputs(hp):
    assert {k.value for k in HYPERPOD_KEYS} <= set(hp.template["Outputs"])
    assert hp.output("HyperPodClusterName") == "trn-ultracluster"
    assert hp.output("HyperPodControllerGroupName") == "controller"
    assert hp.output("HyperPodWorkerGroupNames") == "workers"
    cluster = logical_id(hp, "AWS::SageMaker::Cluster", "HyperPod")
    assert hp.output("HyperPodClusterArn") == {"Fn::GetAtt": [cluster, "ClusterArn"]}
    bucket = logical_id(hp, "AWS::S3::Bucket", "HyperPodLifecycleBucket")
    assert hp.output("HyperPodLifecycleBucketName") == {"Ref": bucket}
    shell = json.dumps(hp.output("HyperPodControllerShellCommand"))
    assert "aws ssm start-session --region us-west-2 --target sagemaker-cluster:" in shell
    assert '"_controller-$(aws sagemaker list-cluster-nodes' in shell
    assert f'"Fn::GetAtt": ["{cluster}", "ClusterArn"]' in shell


# --- config rules ----------------------------------------------------------------------------

@pytest.mark.parametrize("overrides, field, words", [
    ({"hyperpod": {"cluster_name": "bad_name"}}, "hyperpod.cluster_name", "letters, digits"),
    ({"hyperpod": {"controller_instance_type": "c5.xlarge"}}, "hyperpod.controller_instance_type",
     "ml.c5.xlarge"),
    ({"hyperpod": {"worker_groups": []}}, "hyperpod.worker_groups", "at least one"),
    ({"hyperpod": {"worker_groups": [{"name": "controller"}]}}, "hyperpod.worker_groups[0].name",
     "must differ"),
    ({"hyperpod": {"worker_groups": [{"partition": "a_b"}]}}, "hyperpod.worker_groups[0].partition",
     "partition name"),
    ({"hyperpod": {"worker_groups": [{"partition": "dev"}]}}, "hyperpod.worker_groups[0].partition",
     "every node of the cluster"),
    ({"hyperpod": {"worker_groups": [{"instance_count": 5}]}}, "hyperpod.worker_groups",
     "nodes.max"),
    ({"hyperpod": {"worker_ebs_volume_gib": 0}}, "hyperpod.worker_ebs_volume_gib", "1 and 16384"),
    ({"hyperpod": {"training_plan_arn": "plan-1"}}, "hyperpod.training_plan_arn", "training plan"),
    ({"capacity": {"type": "capacity-block", "reservation_id": "cr-0123456789abcdef0"},
      "placement_group": False}, "capacity.type", "training_plan_arn"),
])
def test_hyperpod_rules_name_the_field(overrides, field, words):
    with pytest.raises(ConfigError) as err:
        parse_config({"orchestrator": "hyperpod-slurm", **overrides})
    issues = [i for i in err.value.issues if i.field == field]
    assert issues and words in issues[0].allowed, str(err.value)


def test_hyperpod_rules_do_not_apply_to_eks():
    assert parse_config({"orchestrator": "eks", "hyperpod": {"cluster_name": "bad_name"}})


def test_unknown_hyperpod_key_lists_the_known_ones():
    with pytest.raises(ConfigError, match="known keys here: .*worker_groups"):
        parse_config({"hyperpod": {"workers": 2}})


def test_lifecycle_bucket_name_starts_with_sagemaker(synth):
    from tests.conftest import profile_path

    s = synth(profile_path("ultracluster-16"))
    bucket = s.logical("HyperPodLifecycleBucket")["Properties"]
    # the default stack keeps the name it had before stack_name (an upgrade moves nothing)
    assert bucket["BucketName"] == {"Fn::Join": ["-", [
        "sagemaker-trnuc-lcs", {"Ref": "AWS::AccountId"}, {"Ref": "AWS::Region"}]]}
    stack_id_suffix = {"Fn::Select": [0, {"Fn::Split": ["-", {"Fn::Select": [2, {"Fn::Split": [
        "/", {"Ref": "AWS::StackId"}]}]}]}]}
    other = synth(profile_path("ultracluster-16"), stack_name="TrnTwo")
    assert other.logical("HyperPodLifecycleBucket")["Properties"]["BucketName"] == {
        "Fn::Join": ["-", ["sagemaker-trnuc", stack_id_suffix, {"Ref": "AWS::AccountId"},
                           {"Ref": "AWS::Region"}]]}
    cluster = s.only("AWS::SageMaker::Cluster")
    uri = json.dumps(cluster["InstanceGroups"][0]["LifeCycleConfig"]["SourceS3Uri"])
    assert s.ref_id("HyperPodLifecycleBucket") in uri
