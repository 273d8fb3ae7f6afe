"""StackLogs: every CloudWatch log group of the stack encrypted with one KMS key, given a
retention, and kept or deleted on ``cdk destroy`` as ``data_removal_policy`` says.

The log groups include those that libraries create for their functions (aws-cdk-lib's
kubectl and custom resource providers, cdklabs.deploy-time-build): an aspect visits every
``AWS::Logs::LogGroup`` of the stack, so none is missed when a library adds one.
"""

from __future__ import annotations

import jsii
from aws_cdk import ArnFormat, Aspects, Duration, IAspect, RemovalPolicy, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_logs as logs
from constructs import Construct, IConstruct

__all__ = ["DEFAULT_RETENTION_DAYS", "LOGS_KEY_ACTIONS", "StackLogs"]

DEFAULT_RETENTION_DAYS = 30
"""Retention of log groups that do not set one (CloudWatch Logs keeps events forever by
default); 30 is one of the values CloudWatch Logs accepts (PutRetentionPolicy)."""
LOGS_KEY_ACTIONS = ("kms:Encrypt*", "kms:Decrypt*", "kms:ReEncrypt*", "kms:GenerateDataKey*",
                    "kms:Describe*")
"""What CloudWatch Logs needs of a customer managed key, for the service principal
``logs.<region>.amazonaws.com`` and log groups of this account and Region (condition on
``kms:EncryptionContext:aws:logs:arn``): CloudWatch Logs user guide, "Encrypt log data in
CloudWatch Logs using AWS Key Management Service", step 2 (key policy),
https://docs.aws.amazon.com/AmazonCloudWatch/latest/logs/encrypt-log-data-kms.html."""
KEY_PENDING_WINDOW = Duration.days(7)
"""Waiting period before a deleted KMS key is destroyed: KMS's minimum (7-30 days)."""


@jsii.implements(IAspect)
class _LogGroupPolicy:
    """Encrypt, expire and keep-or-delete every ``AWS::Logs::LogGroup`` in scope."""

    def __init__(self, key: kms.IKey, removal_policy: RemovalPolicy) -> None:
        self.key = key
        self.removal_policy = removal_policy

    def visit(self, node: IConstruct) -> None:
        if not isinstance(node, logs.CfnLogGroup):
            return
        if node.kms_key_id is None:
            node.kms_key_id = self.key.key_arn
        if node.retention_in_days is None:
            node.retention_in_days = DEFAULT_RETENTION_DAYS
        node.apply_removal_policy(self.removal_policy)


class StackLogs(Construct):
    """The stack's log key, and the aspect that applies it (see the module doc).

    Args:
        removal_policy: ``RETAIN`` (``data_removal_policy: retain``) keeps the log groups and
            the key on ``cdk destroy``; ``DESTROY`` deletes the log groups and schedules the
            key for deletion after :data:`KEY_PENDING_WINDOW`.

    Attributes:
        key: the KMS key (rotation on).
    """

    def __init__(self, scope: Construct, construct_id: str, *,
                 removal_policy: RemovalPolicy) -> None:
        super().__init__(scope, construct_id)
        stack = Stack.of(self)
        self.key = kms.Key(
            self, "Key", enable_key_rotation=True, removal_policy=removal_policy,
            pending_window=KEY_PENDING_WINDOW,
            description="TrnUltraCluster: encrypts the stack's CloudWatch log groups")
        self.key.add_to_resource_policy(iam.PolicyStatement(
            sid="CloudWatchLogsOfThisAccountAndRegion",
            principals=[iam.ServicePrincipal(f"logs.{stack.region}.amazonaws.com")],
            actions=list(LOGS_KEY_ACTIONS),
            resources=["*"],
            conditions={"ArnLike": {"kms:EncryptionContext:aws:logs:arn": stack.format_arn(
                service="logs", resource="log-group", resource_name="*",
                arn_format=ArnFormat.COLON_RESOURCE_NAME)}},
        ))
        Aspects.of(stack).add(_LogGroupPolicy(self.key, removal_policy))
