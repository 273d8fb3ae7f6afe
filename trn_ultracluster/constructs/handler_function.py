"""The project's own custom resource handlers: a Python Lambda function from a directory of
this package, with its own log group, and the checkov skips every such function takes."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from aws_cdk import Duration
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from trn_ultracluster.nag import OWN_FUNCTION_SKIPS, checkov_skip

__all__ = ["HANDLER_RUNTIME", "handler_function"]

HANDLER_RUNTIME = lambda_.Runtime.PYTHON_3_14
"""The newest Python runtime in aws-cdk-lib 2.275.0 (botocore's Lambda model lists
``python3.14`` among the runtimes); it ships boto3."""


def handler_function(scope: Construct, construct_id: str, *, code: Path, handler: str,
                     role: iam.IRole, timeout: Duration, description: str,
                     skips: Mapping[str, str] = OWN_FUNCTION_SKIPS) -> lambda_.Function:
    """A function ``construct_id`` running ``handler`` (``module.function``) from ``code``,
    logging to its own log group ``<construct_id>-Logs`` (30 days; ``role`` may write it; the
    stack's :class:`~trn_ultracluster.constructs.logs.StackLogs` encrypts it and gives it the
    data removal policy), with the checkov findings ``skips`` (id -> reason) skipped.
    Default: :data:`~trn_ultracluster.nag.OWN_FUNCTION_SKIPS`, for a custom resource handler
    the CDK provider framework invokes."""
    # 30 days, the stack's default (StackLogs): an L2 log group without a retention gets
    # CDK's two years, which the aspect does not override.
    log_group = logs.LogGroup(scope, f"{construct_id}-Logs",
                              retention=logs.RetentionDays.ONE_MONTH)
    log_group.grant_write(role)
    function = lambda_.Function(
        scope, construct_id, runtime=HANDLER_RUNTIME,
        code=lambda_.Code.from_asset(str(code), exclude=["__pycache__"]),
        handler=handler, timeout=timeout, role=role, log_group=log_group,
        description=description)
    for check, reason in skips.items():
        checkov_skip(function, check, reason)
    return function
