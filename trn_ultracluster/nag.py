"""cdk-nag helpers: every acknowledgment names one finding on one construct, with a reason.

cdk-nag 3 runs as a CDK validation plugin (``Validations.of(app).add_plugins(...)``); a
finding is acknowledged with ``Validations.of(scope).acknowledge(...)`` and its exact id,
e.g. ``AwsSolutions-IAM5[Resource::*]`` (cdk-nag 3.0.2 README, "Migrating from v2": each
granular finding must be acknowledged on its own).
"""

from __future__ import annotations

from aws_cdk import Acknowledgment, CfnResource, Stack, Token, Validations
from constructs import IConstruct

__all__ = [
    "IN_VPC_REASON",
    "LAMBDA_BASIC_EXECUTION",
    "acknowledge",
    "bootstrap_assets_finding",
    "checkov_skip",
    "find_stack_child",
    "LIBRARY_FUNCTION_SKIPS",
    "OWN_FUNCTION_SKIPS",
    "acknowledge_provider_framework",
    "managed_policy_finding",
    "nag_partition",
    "skip_library_function_checks",
    "skip_library_singleton_functions",
]


def managed_policy_finding(name: str) -> str:
    """The IAM4 finding id of the AWS managed policy ``name`` (e.g.
    ``service-role/AWSLambdaBasicExecutionRole``) on a construct whose policy ARN uses the
    ``AWS::Partition`` pseudo parameter, as ``ManagedPolicy.from_aws_managed_policy_name``
    writes it when the stack's partition is not known at synth time."""
    return f"AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/{name}]"


LAMBDA_BASIC_EXECUTION = managed_policy_finding("service-role/AWSLambdaBasicExecutionRole")
"""The IAM4 finding id for the AWS managed Lambda logging policy."""


def nag_partition(stack: Stack) -> str:
    """How cdk-nag writes the partition in finding ids: the literal partition when the stack
    knows it (the feature flags in cdk.json give ``aws`` for a concrete Region), else
    ``<AWS::Partition>``."""
    partition = stack.partition
    return "<AWS::Partition>" if Token.is_unresolved(partition) else partition


def bootstrap_assets_finding(stack: Stack, objects: str = "*") -> str:
    """The IAM5 finding of a grant on the ``objects`` (a key pattern) of the CDK bootstrap
    asset bucket (``cdk-hnb659fds-assets-<account>-<region>``, the default synthesizer's
    name)."""
    return (f"AwsSolutions-IAM5[Resource::arn:{nag_partition(stack)}:s3:::cdk-hnb659fds-"
            f"assets-<AWS::AccountId>-{stack.region}/{objects}]")


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


def checkov_skip(scope: IConstruct, check_id: str, reason: str) -> None:
    """Skip one checkov check on one resource, with the reason, in the template itself.

    checkov reads skips from a resource's ``Metadata.checkov.skip`` list of
    ``{"id": ..., "comment": ...}`` (checkov docs, "Suppressing/Skipping", CloudFormation),
    so anyone running plain checkov on the synthesized template sees the same result.

    Args:
        scope: the resource (``CfnResource``) or an L2 construct whose default child is it.
        check_id: e.g. ``CKV_AWS_117``.
        reason: why the check does not apply, in words a reviewer can check.
    """
    resource = scope if isinstance(scope, CfnResource) else scope.node.default_child
    if not isinstance(resource, CfnResource):
        raise TypeError(f"{scope.node.path} is not (and has no default child that is) a "
                        "CloudFormation resource")
    skips = list((resource.get_metadata("checkov") or {}).get("skip", []))
    if any(s["id"] == check_id for s in skips):
        return
    skips.append({"id": check_id, "comment": reason})
    resource.add_metadata("checkov", {"skip": skips})


IN_VPC_REASON = "TrnUltraCluster::InVpcReason"
"""Template ``Metadata`` key of a Lambda function that runs in the VPC although ``cdk
destroy`` deletes it before its subnets: why it must, and where docs/deploy.md says what that
costs on destroy. A function's network interfaces outlive it by up to 20 minutes (Lambda
developer guide, "Giving Lambda functions access to resources in an Amazon VPC": Lambda
takes "up to 20 minutes to delete the attached Hyperplane ENI") and hold the subnets and
security groups CloudFormation deletes next (aws/aws-cdk #18650, go-to-k/delstack #637);
the retention tests refuse an in-VPC function without this key."""

LIBRARY_FUNCTION_SKIPS = {
    "CKV_AWS_115": "A library-defined custom resource function, invoked only by "
                   "CloudFormation; reserved concurrency would take from the account's "
                   "unreserved pool (at least 10 must stay unreserved, Lambda quotas).",
    "CKV_AWS_116": "A library-defined custom resource function: CloudFormation reports its "
                   "failures on the stack event; a dead-letter queue nobody reads adds nothing.",
    "CKV_AWS_117": "A library-defined custom resource function that calls AWS APIs only; "
                   "outside the VPC its network interfaces cannot delay the VPC's deletion.",
    "CKV_AWS_173": "A library-defined function whose environment holds no secrets.",
}
"""checkov findings on custom resource functions that libraries (aws-cdk-lib, cdklabs)
define, with the reason each is skipped."""

OWN_FUNCTION_SKIPS = {
    "CKV_AWS_115": "Invoked only by the CDK provider framework during a deploy or destroy; "
                   "reserved concurrency would take from the account's unreserved pool (at "
                   "least 10 must stay unreserved, Lambda quotas) and can fail the deploy.",
    "CKV_AWS_116": "Invoked synchronously by the CDK provider framework, which reports a "
                   "failure to CloudFormation; there is no asynchronous event to dead-letter.",
    "CKV_AWS_117": "Calls AWS APIs only, during a deploy or destroy: a VPC-attached "
                   "function's network interfaces would hold the subnets and security "
                   "groups CloudFormation must delete.",
}
"""checkov findings on the project's own custom resource functions, with the reason."""


def skip_library_function_checks(function: IConstruct) -> None:
    """Skip :data:`LIBRARY_FUNCTION_SKIPS` on a library-defined Lambda function."""
    for check, reason in LIBRARY_FUNCTION_SKIPS.items():
        checkov_skip(function, check, reason)


def skip_library_singleton_functions(stack: Stack) -> None:
    """Skip :data:`LIBRARY_FUNCTION_SKIPS` on the stack-level singleton functions that
    aws-cdk-lib creates on demand (construct ids starting ``Custom::``: the default security
    group restriction, bucket auto-delete, bucket deployment providers). Call it once the
    stack's constructs are all created."""
    for child in stack.node.children:
        if not child.node.id.startswith("Custom::"):
            continue
        for node in child.node.find_all():
            if isinstance(node, CfnResource) and node.cfn_resource_type == "AWS::Lambda::Function":
                skip_library_function_checks(node)


def acknowledge_provider_framework(provider: IConstruct, handlers: list[IConstruct]) -> None:
    """cdk-nag acknowledgments and checkov skips for what aws-cdk-lib's
    ``custom_resources.Provider`` defines under ``provider``: its framework functions
    (``framework-onEvent``, ``framework-isComplete``, ``framework-onTimeout``), their roles
    (which invoke ``handlers`` and each other, with ``:*`` for versions), and the waiter
    state machine that polls ``isComplete`` (when the provider has one).

    Args:
        provider: the ``Provider`` construct.
        handlers: the project's own ``onEvent`` / ``isComplete`` functions it invokes.
    """
    stack = Stack.of(provider)
    framework = [c for c in provider.node.children if c.node.id.startswith("framework-")]

    def versions(functions: list[IConstruct]) -> list[str]:
        return [f"AwsSolutions-IAM5[Resource::<{stack.get_logical_id(f.node.default_child)}"
                f".Arn>:*]" for f in functions]

    reason = ("aws-cdk-lib's custom resource provider framework invokes functions by ARN with "
              "':*' for their versions")
    for function in framework:
        skip_library_function_checks(function)
        role = function.node.find_child("ServiceRole")
        acknowledge(role, LAMBDA_BASIC_EXECUTION,
                    "The provider framework's functions only write their own CloudWatch logs; "
                    "aws-cdk-lib attaches this managed policy to their roles.")
        for finding in versions(handlers):
            acknowledge(role.node.find_child("DefaultPolicy"), finding,
                        reason + " (the framework calls the project's handlers).")
    waiter = provider.node.try_find_child("waiter-state-machine")
    if waiter is None:  # a provider without isComplete has no waiter
        return
    polled = [f for f in framework if f.node.id in ("framework-isComplete", "framework-onTimeout")]
    for finding in versions(polled):
        acknowledge(waiter.node.find_child("Role"), finding,
                    reason + " (the waiter calls the framework's isComplete and onTimeout).")
    acknowledge(waiter, "AwsSolutions-SF1",
                "The provider framework's waiter only polls isComplete; every poll logs in the "
                "isComplete function's log group, so the state machine itself logs nothing.")
    acknowledge(waiter, "AwsSolutions-SF2",
                "aws-cdk-lib's provider framework gives its waiter state machine no X-Ray "
                "option; the polls are traced in the handlers' logs.")
