"""The failure report of the image builds: an EventBridge rule on the CodeBuild project's
builds that end without success and the function that answers CloudFormation for them
(``image_build_report/handler.py`` says why: the library answers only from ``post_build``).
Part of :class:`~trn_ultracluster.constructs.training_image.TrainingImage`, which names the
resources (``ReportRole``, ``Report``, ``BuildFailed``)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from aws_cdk import Duration
from aws_cdk import aws_codebuild as codebuild
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from trn_ultracluster.constructs.handler_function import handler_function

__all__ = ["REPORTED_STATUSES", "REPORT_FUNCTION_SKIPS", "REPORT_HANDLER", "report_failures"]

REPORTED_STATUSES = ["FAILED", "FAULT", "STOPPED", "TIMED_OUT"]
"""Build statuses that end a build without success (CodeBuild API reference, ``Build``
``buildStatus``: SUCCEEDED, FAILED, FAULT, TIMED_OUT, IN_PROGRESS, STOPPED)."""
REPORT_HANDLER = Path(__file__).resolve().parent / "image_build_report"
REPORT_FUNCTION_SKIPS = {
    "CKV_AWS_115": "Invoked by one EventBridge rule, once per failed image build; reserved "
                   "concurrency would take from the account's unreserved pool (at least 10 "
                   "must stay unreserved, Lambda quotas).",
    "CKV_AWS_116": "EventBridge retries a failed invocation; a lost report leaves "
                   "CloudFormation's own one-hour timeout, so a dead-letter queue adds nothing.",
    "CKV_AWS_117": "Calls the CodeBuild API and a pre-signed S3 URL only; in the VPC its "
                   "network interfaces would hold the subnets that cdk destroy deletes.",
}
"""checkov findings on the failure-report function, with the reason each is skipped."""


def report_failures(scope: Construct, project: codebuild.Project,
                    builds: Iterable[Construct]) -> lambda_.Function:
    """An EventBridge rule on ``project``'s builds that end in :data:`REPORTED_STATUSES` and
    the function that answers CloudFormation for them, in ``scope``. The custom resource of
    each of ``builds`` (``ContainerImageBuild``\\s, child ``Resource``) depends on both, so
    they exist before any build starts.

    Returns:
        The report function.
    """
    role = iam.Role(scope, "ReportRole", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
                    description="Report a failed training image build to CloudFormation")
    # BatchGetBuilds takes the project ARN (aws-cdk-lib's CodeBuildAction grants it so).
    role.add_to_policy(iam.PolicyStatement(actions=["codebuild:BatchGetBuilds"],
                                           resources=[project.project_arn]))
    function = handler_function(
        scope, "Report", code=REPORT_HANDLER, handler="handler.handler", role=role,
        timeout=Duration.seconds(30), skips=REPORT_FUNCTION_SKIPS,
        description="TrnUltraCluster: report a failed training image build to CloudFormation")
    # CodeBuild user guide, "Build notifications input format reference".
    rule = events.Rule(scope, "BuildFailed", description="Failed training image builds",
                       event_pattern=events.EventPattern(
                           source=["aws.codebuild"], detail_type=["CodeBuild Build State Change"],
                           detail={"project-name": [project.project_name],
                                   "build-status": REPORTED_STATUSES}),
                       targets=[targets.LambdaFunction(function)])
    for build in dict.fromkeys(builds):
        build.node.find_child("Resource").node.add_dependency(rule, function)
    return function
