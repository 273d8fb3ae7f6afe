"""cdk-nag helpers: every acknowledgment names one finding on one construct, with a reason.

cdk-nag 3 runs as a CDK validation plugin (``Validations.of(app).add_plugins(...)``); a
finding is acknowledged with ``Validations.of(scope).acknowledge(...)`` and its exact id,
e.g. ``AwsSolutions-IAM5[Resource::*]`` (cdk-nag 3.0.2 README, "Migrating from v2": each
granular finding must be acknowledged on its own).
"""

from __future__ import annotations

from aws_cdk import Acknowledgment, Stack, Validations
from constructs import IConstruct

__all__ = [
    "LAMBDA_BASIC_EXECUTION",
    "acknowledge",
    "find_stack_child",
    "managed_policy_finding",
]


def managed_policy_finding(name: str) -> str:
    """The IAM4 finding id of the AWS managed policy ``name`` (e.g.
    ``service-role/AWSLambdaBasicExecutionRole``) on a construct whose policy ARN uses the
    ``AWS::Partition`` pseudo parameter, as ``ManagedPolicy.from_aws_managed_policy_name``
    writes it when the stack's partition is not known at synth time."""
    return f"AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/{name}]"


LAMBDA_BASIC_EXECUTION = managed_policy_finding("service-role/AWSLambdaBasicExecutionRole")
"""The IAM4 finding id for the AWS managed Lambda logging policy."""


def acknowledge(scope: IConstruct, finding: str, reason: str) -> None:
    """Acknowledge one cdk-nag finding on ``scope`` (and its children).

    Args:
        scope: the narrowest construct that holds the finding.
        finding: exact finding id, ``RuleId`` or ``RuleId[FindingId]``.
        reason: why it is acceptable, in words a reviewer can check.
    """
    Validations.of(scope).acknowledge(Acknowledgment(id=finding, reason=reason))


def find_stack_child(stack: Stack, prefix: str) -> IConstruct:
    """The stack-level child whose id starts with ``prefix`` (singleton providers).

    Raises:
        LookupError: no such child, e.g. a library renamed its singleton.
    """
    for child in stack.node.children:
        if child.node.id.startswith(prefix):
            return child
    raise LookupError(f"no child of {stack.node.path} starts with {prefix!r}")
