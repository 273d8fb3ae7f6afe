"""What the HyperPod execution role needs on EKS, beyond the shared role
(:func:`trn_ultracluster.orchestrators.hyperpod.execution_role.execution_role`: AWS managed
``AmazonSageMakerClusterInstanceRolePolicy``, lifecycle bucket, training image, cluster logs,
the interfaces HyperPod creates in the VPC).

The role is the HyperPod nodes' identity on EKS: HyperPod gives it an access entry itself
(:mod:`.versions`), and node software uses it. AWS's SageMaker guide page for this role
("AWS Identity and Access Management for SageMaker HyperPod",
https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-prerequisites-iam.html)
could not be read in full here; the statements follow AWS's own HyperPod EKS samples, action
by action, scoped where the Service Authorization Reference allows:
aws-samples/awsome-distributed-training (commit 7217859)
``1.architectures/7.sagemaker-hyperpod-eks/terraform-modules/hyperpod-eks-tf/modules/sagemaker_iam_role/main.tf``
(execution policy: ``eks-auth:AssumeRoleForPodIdentity`` on the cluster ARN; ECR
``BatchCheckLayerAvailability``, ``BatchGetImage``, ``GetAuthorizationToken``,
``GetDownloadUrlForLayer``; ``ec2:AssignPrivateIpAddresses``, ``UnassignPrivateIpAddresses``,
``ModifyNetworkInterfaceAttribute`` on interfaces, instances, the VPC, subnets and the
security group; "EKS CNI" policy: ``ec2:AttachNetworkInterface`` on instances and interfaces,
``ec2:DescribeInstances``, ``DescribeTags``, ``DescribeNetworkInterfaces``,
``DescribeInstanceTypes``, ``DescribeSubnets`` on ``*``) and the CloudFormation sample
``cfn-templates/nested-stacks/sagemaker-iam-role-stack.yaml`` (the same actions on ``*`` plus
the AWS managed ``AmazonEKS_CNI_Policy``).

Left out: ``cloudwatch:DescribeAlarms`` of the samples (no source says what on the nodes uses
it; the stack configures no alarm-based rollback). Not verified against a real cluster
creation (no AWS account here).
"""

from __future__ import annotations

from aws_cdk import Stack
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_iam as iam

from trn_ultracluster.nag import acknowledge, managed_policy_finding
from trn_ultracluster.orchestrators.base import Foundation

__all__ = ["ECR_PULL_POLICY", "VPC_CNI_ACTIONS", "add_eks_permissions"]

ECR_PULL_POLICY = "AmazonEC2ContainerRegistryPullOnly"
"""AWS managed ECR pull policy (what EKS node roles get, EKS user guide "create-node-role"):
HyperPod nodes pull the images of the EKS add-ons (VPC CNI, kube-proxy, Pod Identity agent,
FSx CSI node), of the EFA device plugin and of HyperPod's health-monitoring agent from AWS's
registries in other accounts, so the pull cannot be limited to the stack's repository."""
VPC_CNI_ACTIONS = (
    "ec2:AssignPrivateIpAddresses",
    "ec2:UnassignPrivateIpAddresses",
    "ec2:ModifyNetworkInterfaceAttribute",
    "ec2:AttachNetworkInterface",
)
"""Interface actions of the VPC CNI on HyperPod nodes (module doc), limited to the stack's
VPC (``ec2:Vpc``) and the nodes' security group."""
VPC_CNI_DESCRIBE = ("ec2:DescribeInstances", "ec2:DescribeTags", "ec2:DescribeInstanceTypes")


def add_eks_permissions(role: iam.Role, cluster: eks.ICluster, foundation: Foundation) -> None:
    """Add to the shared execution ``role`` what HyperPod nodes of ``cluster`` need: Pod
    Identity on this cluster, ECR pulls (:data:`ECR_PULL_POLICY`), the VPC CNI's interface
    actions in the stack's VPC (:data:`VPC_CNI_ACTIONS`) and its describe calls; with the
    cdk-nag acknowledgment of the managed policy (the wildcards share the acknowledgments of
    the shared role's policy)."""
    stack = Stack.of(role)
    role.add_managed_policy(iam.ManagedPolicy.from_aws_managed_policy_name(ECR_PULL_POLICY))
    # The Pod Identity agent on a HyperPod node exchanges the node's credentials for a pod's
    # (VPC CNI, FSx CSI): EKS nodes get this action from AmazonEKSWorkerNodePolicy.
    role.add_to_policy(iam.PolicyStatement(
        sid="PodIdentity", actions=["eks-auth:AssumeRoleForPodIdentity"],
        resources=[cluster.cluster_arn]))
    vpc_arn = stack.format_arn(service="ec2", resource="vpc", resource_name=foundation.vpc.vpc_id)
    role.add_to_policy(iam.PolicyStatement(
        sid="VpcCniInterfaces",
        actions=list(VPC_CNI_ACTIONS),
        resources=[
            stack.format_arn(service="ec2", resource="network-interface", resource_name="*"),
            stack.format_arn(service="ec2", resource="instance", resource_name="*", account="*"),
            stack.format_arn(service="ec2", resource="security-group",
                             resource_name=foundation.node_security_group.security_group_id),
        ],
        conditions={"ArnEqualsIfExists": {"ec2:Vpc": vpc_arn}}))
    # No resource-level permissions (Service Authorization Reference, Amazon EC2).
    role.add_to_policy(iam.PolicyStatement(
        sid="VpcCniDescribe", actions=list(VPC_CNI_DESCRIBE), resources=["*"]))
    acknowledge(role, managed_policy_finding(ECR_PULL_POLICY),
                "HyperPod nodes on EKS pull the EKS add-on, device plugin and HyperPod "
                "health-monitoring agent images from AWS-owned ECR registries, as EKS node "
                "roles do with this AWS managed read-only policy.")
