"""cdk-nag acknowledgments of the EKS orchestrator: roles and functions that EKS or
aws-eks-v2 define, each with its reason."""

from __future__ import annotations

from aws_cdk import Stack
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_iam as iam

from trn_ultracluster.nag import (
    LAMBDA_BASIC_EXECUTION,
    acknowledge,
    managed_policy_finding,
    skip_library_function_checks,
)
from trn_ultracluster.orchestrators.eks.versions import NODE_POLICIES

__all__ = ["ECR_PUBLIC_FINDING", "acknowledge_eks"]


def acknowledge_eks(cluster: eks.Cluster, node_role: iam.IRole, cni_role: iam.IRole) -> None:
    """Acknowledge the cdk-nag findings on roles and functions that EKS or aws-eks-v2
    define: the cluster's service role and its kubectl provider's functions, the node role
    ``node_role`` and the VPC CNI's Pod Identity role ``cni_role``."""
    acknowledge(cluster.role, managed_policy_finding("AmazonEKSClusterPolicy"),
                "The EKS cluster service role needs the AWS managed AmazonEKSClusterPolicy "
                "(EKS user guide, 'cluster-iam-role').")
    for policy, why in NODE_POLICIES.items():
        acknowledge(node_role, managed_policy_finding(policy),
                    f"EKS node role policy required by EKS ({why}); EKS user guide "
                    "'create-node-role'. The CNI policy is not on the node role.")
    acknowledge(cni_role, managed_policy_finding("AmazonEKS_CNI_Policy"),
                "The VPC CNI (aws-node, via Pod Identity) needs AmazonEKS_CNI_Policy to "
                "attach ENIs and assign pod IPs; EKS user guide 'cni-iam-role'.")
    provider = cluster.kubectl_provider
    assert provider is not None
    handler = provider.node.find_child("Handler")
    on_event = provider.node.find_child("Provider").node.find_child("framework-onEvent")
    lambda_reason = ("aws-eks-v2's kubectl provider Lambda (defined by aws-cdk-lib) logs to "
                     "CloudWatch; aws-cdk-lib adds the VPC access policy whenever the endpoint "
                     "has private access (the function leaves the VPC when the public "
                     "endpoint is open to it: orchestrators/eks/kubectl.py)")
    for scope in (handler, on_event):
        skip_library_function_checks(scope)
        acknowledge(scope, LAMBDA_BASIC_EXECUTION, lambda_reason)
        acknowledge(scope,
                    managed_policy_finding("service-role/AWSLambdaVPCAccessExecutionRole"),
                    lambda_reason)
    acknowledge(handler, managed_policy_finding("AmazonEC2ContainerRegistryReadOnly"),
                "aws-eks-v2's kubectl handler pulls Helm charts from OCI registries in ECR.")
    condition = handler.node.find_child("HasEcrPublic")
    acknowledge(handler, ECR_PUBLIC_FINDING.replace(
                    "{condition}", Stack.of(cluster).get_logical_id(condition)),
                "aws-eks-v2's kubectl handler logs in to ECR Public (read only) to pull the "
                "Neuron Helm chart from oci://public.ecr.aws/neuron.")
    acknowledge(handler, "AwsSolutions-L1",
                "The kubectl handler's runtime is chosen by aws-cdk-lib 2.275.0 to match "
                "its bundled kubectl/helm; it cannot be set here.")
    acknowledge(on_event, "AwsSolutions-IAM5[Resource::<{}.Arn>:*]".format(
                Stack.of(cluster).get_logical_id(handler.node.default_child)),
                "The custom resource framework invokes the kubectl handler and its "
                "versions (ARN:*); aws-cdk-lib defines it.")


ECR_PUBLIC_FINDING = (
    'AwsSolutions-IAM4[Policy::{"Fn::If":["{condition}",{"Fn::Join":["",["arn:",'
    '{"Ref":"AWS::Partition"},":iam::aws:policy/AmazonElasticContainerRegistryPublicReadOnly"]]},'
    '{"Ref":"AWS::NoValue"}]}]'
)
"""IAM4 finding of the conditional ECR Public policy aws-eks-v2 gives its kubectl handler."""
