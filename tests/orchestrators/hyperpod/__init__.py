"""Tests of what both HyperPod orchestrators share, and helpers for their tests: the
synthesized ``AWS::SageMaker::Cluster`` turned into a ``CreateCluster`` request and checked
against botocore's SageMaker model."""

from __future__ import annotations

from typing import Any

import botocore.session
from botocore.validate import validate_parameters

PLACEHOLDERS = {
    "Arn": "arn:aws:iam::123456789012:role/TrnUltraCluster-HyperPodExecutionRole-ABCDEF",
    "GroupId": "sg-0123456789abcdef0",
}
"""Realistic values for the ``Fn::GetAtt`` attributes a cluster's properties use (role ARN,
security group id)."""
REFS = {
    "AWS::EC2::Subnet": "subnet-0123456789abcdef0",
    "AWS::S3::Bucket": "trnultracluster-hyperpodlifecyclebucket-abc123",
    "AWS::EKS::Cluster": "TrnUltraCluster-0123abcd",
}
"""Realistic values for the ``Ref`` of each resource type a cluster's properties use."""
GET_ATTS = {("AWS::EKS::Cluster", "Arn"):
            "arn:aws:eks:us-west-2:123456789012:cluster/TrnUltraCluster-0123abcd",
            ("AWS::SageMaker::Cluster", "ClusterArn"):
            "arn:aws:sagemaker:us-west-2:123456789012:cluster/abcdef012345"}
"""Attributes whose value depends on the resource type (``Fn::GetAtt``)."""


def resolve(value: Any, template: dict[str, Any]) -> Any:
    """Replace CloudFormation functions with realistic values of the right shape."""
    if isinstance(value, list):
        return [resolve(v, template) for v in value]
    if not isinstance(value, dict):
        return value
    if "Ref" in value:
        if value["Ref"] == "AWS::Region":
            return "us-west-2"
        if value["Ref"] == "AWS::AccountId":
            return "123456789012"
        return REFS[template["Resources"][value["Ref"]]["Type"]]
    if "Fn::GetAtt" in value:
        name, attribute = value["Fn::GetAtt"]
        kind = template["Resources"][name]["Type"]
        return GET_ATTS.get((kind, attribute), PLACEHOLDERS.get(attribute))
    if "Fn::Join" in value:
        sep, parts = value["Fn::Join"]
        return sep.join(resolve(p, template) for p in parts)
    return {k: resolve(v, template) for k, v in value.items()}


def sagemaker_model():
    """botocore's SageMaker service model (the version pinned in requirements.txt)."""
    return botocore.session.get_session().get_service_model("sagemaker")


def create_cluster_request(properties: dict[str, Any], template: dict[str, Any],
                           keys: tuple[str, ...]) -> dict[str, Any]:
    """The ``CreateCluster`` request of the cluster's ``keys``, validated against botocore's
    input shape (which does not check enums; the callers do).

    Raises:
        botocore.exceptions.ParamValidationError: a property botocore's model refuses.
    """
    params = resolve({k: properties[k] for k in keys if k in properties}, template)
    validate_parameters(params, sagemaker_model().operation_model("CreateCluster").input_shape)
    return params
