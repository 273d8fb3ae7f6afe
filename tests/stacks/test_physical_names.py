"""Physical names that must be unique in an account and Region derive from the stack, so two
stacks (``stack_name``) in one account and Region never collide, on every orchestrator.

The names are read from the synthesized templates and resolved the way CloudFormation would
in one account and Region: ``AWS::StackName`` is the stack's name, ``AWS::StackId`` carries a
UUID of its own per stack, and a ``Ref``/``Fn::GetAtt`` to a resource without a name of ours
is a name CloudFormation generates, which starts with the stack's name (CloudFormation user
guide, "Name type": "the stack name, the logical ID and a random string").
"""

from __future__ import annotations

from typing import Any

import pytest

from trn_ultracluster.contracts.orchestrators import ORCHESTRATORS

ACCOUNT, REGION = "123456789012", "us-west-2"
NAME_PROPERTIES = {
    "AWS::S3::Bucket": "BucketName",
    "AWS::SageMaker::Cluster": "ClusterName",
    "AWS::EKS::Cluster": "Name",
    "AWS::Logs::LogGroup": "LogGroupName",
    "AWS::IAM::Role": "RoleName",
    "AWS::IAM::InstanceProfile": "InstanceProfileName",
    "AWS::IAM::ManagedPolicy": "ManagedPolicyName",
    "AWS::Lambda::Function": "FunctionName",
    "AWS::EC2::LaunchTemplate": "LaunchTemplateName",
    "AWS::EC2::SecurityGroup": "GroupName",
    "AWS::CloudWatch::Dashboard": "DashboardName",
    "AWS::CloudWatch::Alarm": "AlarmName",
    "AWS::SNS::Topic": "TopicName",
    "AWS::ECR::Repository": "RepositoryName",
    "AWS::KMS::Alias": "AliasName",
    "AWS::SSM::Parameter": "Name",
    "AWS::CodeBuild::Project": "Name",
    "AWS::AutoScaling::AutoScalingGroup": "AutoScalingGroupName",
    "AWS::EKS::Nodegroup": "NodegroupName",
    "AWS::StepFunctions::StateMachine": "StateMachineName",
}
"""Resource type -> the property that names it, for the types whose names are unique per
account and Region (CloudFormation resource reference of each type)."""


def resolve(value: Any, stack: str, uuid: str) -> str:
    """``value`` (a template expression) as CloudFormation resolves it for ``stack``."""
    if isinstance(value, str):
        return value
    (fn, arg), = value.items()
    if fn == "Ref":
        return {"AWS::StackName": stack, "AWS::AccountId": ACCOUNT, "AWS::Region": REGION,
                "AWS::Partition": "aws", "AWS::URLSuffix": "amazonaws.com",
                "AWS::StackId": f"arn:aws:cloudformation:{REGION}:{ACCOUNT}:stack/{stack}/{uuid}",
                }.get(arg, f"{stack}-{arg}-GENERATED")
    if fn == "Fn::GetAtt":
        return f"{stack}-{arg[0]}-GENERATED.{arg[1]}"
    if fn == "Fn::Join":
        return arg[0].join(resolve(v, stack, uuid) for v in arg[1])
    if fn == "Fn::Select":
        return resolve(arg[1], stack, uuid).split("\0")[int(arg[0])]
    if fn == "Fn::Split":
        return "\0".join(resolve(arg[1], stack, uuid).split(arg[0]))
    raise AssertionError(f"no resolver for {fn}")


def physical_names(template: dict[str, Any], stack: str, uuid: str) -> dict[str, str]:
    """Resolved name -> logical id of every resource we name."""
    names = {}
    for logical, resource in template["Resources"].items():
        prop = NAME_PROPERTIES.get(resource["Type"])
        if prop and prop in resource.get("Properties", {}):
            names[resolve(resource["Properties"][prop], stack, uuid)] = logical
    return names


@pytest.mark.parametrize("orchestrator", sorted(ORCHESTRATORS))
def test_two_stacks_in_one_account_and_region_name_nothing_alike(synth, orchestrator):
    one = synth(orchestrator=orchestrator)
    two = synth(orchestrator=orchestrator, stack_name="TrnTwo")
    assert one.stack.stack_name == "TrnUltraCluster" and two.stack.stack_name == "TrnTwo"
    first = physical_names(one.template, "TrnUltraCluster", "1c2fa620-982a-11e3-aff7-50e2416294e0")
    second = physical_names(two.template, "TrnTwo", "8d4e1b3c-0000-11f0-aaaa-0123456789ab")
    assert first, "no named resource found: the test would check nothing"
    assert not set(first) & set(second), sorted(set(first) & set(second))


def test_a_fixed_name_would_be_caught(synth):
    """The check above fails for the old fixed HyperPod cluster name."""
    one = synth(orchestrator="hyperpod-slurm", **{"hyperpod.cluster_name": "trn-ultracluster"})
    two = synth(orchestrator="hyperpod-slurm", stack_name="TrnTwo",
                **{"hyperpod.cluster_name": "trn-ultracluster"})
    shared = set(physical_names(one.template, "TrnUltraCluster", "a-b")) & set(
        physical_names(two.template, "TrnTwo", "c-d"))
    assert shared == {"trn-ultracluster"}


def test_the_hyperpod_cluster_is_named_after_the_stack_unless_configured(synth):
    two = synth(orchestrator="hyperpod-slurm", stack_name="TrnTwo")
    assert two.only("AWS::SageMaker::Cluster")["ClusterName"] == "TrnTwo"
    assert two.output("HyperPodClusterName") == "TrnTwo"
    named = synth(orchestrator="hyperpod-slurm", stack_name="TrnTwo",
                  **{"hyperpod.cluster_name": "team-a"})
    assert named.only("AWS::SageMaker::Cluster")["ClusterName"] == "team-a"


def create_only_properties(resource_type: str) -> set[str]:
    """``createOnlyProperties`` of ``resource_type`` in CloudFormation's resource schema (the
    copy cfn-lint ships, as published in the CloudFormation registry): a change to one of
    them replaces the resource."""
    import json
    from pathlib import Path

    import cfnlint

    schemas = Path(cfnlint.__file__).parent / "data" / "schemas"
    schema_id = json.loads((schemas / "providers" / "us-west-2.json").read_text())[resource_type]
    schema = json.loads((schemas / "resources" / f"{schema_id}.json").read_text())
    return set(schema["createOnlyProperties"])


def test_an_upgrade_keeps_the_default_stacks_create_only_names(synth):
    """The default stack keeps the HyperPod cluster's and the lifecycle bucket's names from
    before stack_name existed, because both are create-only: CloudFormation would replace a
    running cluster (and move its lifecycle scripts) under a new name."""
    assert "/properties/ClusterName" in create_only_properties("AWS::SageMaker::Cluster")
    assert "/properties/BucketName" in create_only_properties("AWS::S3::Bucket")
    before = {"ClusterName": "trn-ultracluster", "BucketName": {"Fn::Join": ["-", [
        "sagemaker-trnuc-lcs", {"Ref": "AWS::AccountId"}, {"Ref": "AWS::Region"}]]}}
    default = synth(orchestrator="hyperpod-slurm")
    assert default.only("AWS::SageMaker::Cluster")["ClusterName"] == before["ClusterName"]
    assert default.logical("HyperPodLifecycleBucket")["Properties"]["BucketName"] == \
        before["BucketName"]
