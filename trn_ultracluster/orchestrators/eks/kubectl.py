"""Where the kubectl provider's Lambda functions run: outside the VPC whenever the EKS API
endpoint lets them, so that ``cdk destroy`` is not held up by their network interfaces.

aws-cdk-lib 2.275.0 ``aws_eks_v2`` puts both functions of the kubectl provider (``Handler``
and the provider framework's ``framework-onEvent``) in the cluster's private subnets as soon
as the endpoint has private access, ``PUBLIC_AND_PRIVATE`` included, whatever
``kubectlProviderOptions`` say (``aws-eks-v2/lib/cluster.js``: ``kubectlSubnets =
privateSubnets`` when ``endpointAccess._config.privateAccess``; ``kubectl-provider.js``
passes the same VPC settings to the framework). A deleted VPC function's Hyperplane network
interfaces stay for up to 20 minutes (Lambda developer guide, "Giving Lambda functions access
to resources in an Amazon VPC") and hold the subnets and the EKS cluster security group, so
the delete of those can fail ``DELETE_FAILED`` (aws/aws-cdk #18650; go-to-k/delstack #637).

Outside the VPC a function reaches the public endpoint from Lambda's own addresses, which
are not fixed: that works only while ``eks.public_access_cidrs`` admits every address
(``0.0.0.0/0``, the default, which a config warning asks to narrow). With a narrowed list or
``eks.endpoint_access: private`` the functions stay in the VPC, and their template metadata
(:data:`~trn_ultracluster.nag.IN_VPC_REASON`) says why and where docs/deploy.md
("A private EKS endpoint") tells what to expect on destroy.
"""

from __future__ import annotations

from aws_cdk import CfnResource
from aws_cdk import aws_eks_v2 as eks

from trn_ultracluster.config import EksConfig
from trn_ultracluster.nag import IN_VPC_REASON

__all__ = ["ANY_ADDRESS", "kubectl_functions", "kubectl_outside_vpc", "place_kubectl_functions"]

ANY_ADDRESS = "0.0.0.0/0"
DESTROY_DOCS = "docs/deploy.md#a-private-eks-endpoint"


def kubectl_outside_vpc(settings: EksConfig) -> bool:
    """Whether the kubectl functions can reach the cluster from outside the VPC: the public
    endpoint is on and open to every address."""
    return (settings.endpoint_access == "public-and-private"
            and ANY_ADDRESS in settings.public_access_cidrs)


def kubectl_functions(cluster: eks.Cluster) -> list[CfnResource]:
    """The ``AWS::Lambda::Function`` resources of ``cluster``'s kubectl provider: the
    handler and the provider framework's ``onEvent``."""
    provider = cluster.kubectl_provider
    assert provider is not None, "the cluster has no kubectl provider"
    functions = [provider.node.find_child("Handler"),
                 provider.node.find_child("Provider").node.find_child("framework-onEvent")]
    return [f.node.default_child for f in functions]  # type: ignore[misc]


def place_kubectl_functions(cluster: eks.Cluster, settings: EksConfig) -> None:
    """Take the kubectl functions out of the VPC when :func:`kubectl_outside_vpc`, else
    record in their metadata why they stay in it (see the module doc)."""
    outside = kubectl_outside_vpc(settings)
    for function in kubectl_functions(cluster):
        if outside:
            function.add_property_deletion_override("VpcConfig")
        else:
            function.add_metadata(
                IN_VPC_REASON,
                f"eks.endpoint_access {settings.endpoint_access!r} with public_access_cidrs "
                f"{list(settings.public_access_cidrs)}: the kubectl provider reaches the API "
                f"through the private endpoint; on destroy see {DESTROY_DOCS}")
