"""The lifecycle files of both HyperPod orchestrators: the ``sagemaker-``-prefixed bucket,
the upload of a scripts directory plus generated JSON files, and the instance groups'
``LifeCycleConfig``."""

from __future__ import annotations

from collections.abc import Sequence

from pathlib import Path
from typing import Any

from aws_cdk import Aws, Fn, Stack
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_s3_deployment as s3deploy
from aws_cdk import aws_sagemaker as sagemaker
from constructs import Construct

from trn_ultracluster.constructs.buckets import NONCURRENT_VERSION_EXPIRATION, private_bucket
from trn_ultracluster.contracts.hyperpod import LIFECYCLE_PREFIX
from trn_ultracluster.contracts.outputs import STACK_NAME
from trn_ultracluster.nag import (
    LAMBDA_BASIC_EXECUTION,
    acknowledge,
    bootstrap_assets_finding,
    find_stack_child,
)
from trn_ultracluster.constructs.names import stack_id_suffix
from trn_ultracluster.orchestrators.base import Foundation

__all__ = ["LEGACY_LIFECYCLE_BUCKET", "LIFECYCLE_BUCKET_PREFIX", "LIFECYCLE_PREFIX",
           "lifecycle_bucket", "lifecycle_bucket_name", "lifecycle_config",
           "upload_lifecycle_files"]

LIFECYCLE_BUCKET_PREFIX = "sagemaker-trnuc"
"""HyperPod reads lifecycle scripts from buckets named ``sagemaker-*`` (see
:func:`lifecycle_bucket`)."""
LEGACY_LIFECYCLE_BUCKET = "sagemaker-trnuc-lcs"
"""Prefix of the default stack's lifecycle bucket (:func:`lifecycle_bucket_name`)."""


def lifecycle_bucket_name(stack: Stack) -> str:
    """``sagemaker-trnuc-<8 hex digits of the stack id>-<account>-<region>`` (a deploy-time
    token): the stack id's UUID makes it unique per stack (two stacks in one account and
    Region, and a new stack after a destroy, get their own bucket), account and Region across
    them; at most 15 + 8 + 12 + 14 + 3 = 52 of S3's 63 characters. The default stack
    (:data:`~trn_ultracluster.contracts.outputs.STACK_NAME`) keeps the name it had before
    ``stack_name`` existed, :data:`LEGACY_LIFECYCLE_BUCKET` ``-<account>-<region>``, so an
    upgrade does not move a running cluster's lifecycle scripts (a bucket name is
    create-only)."""
    if stack.stack_name == STACK_NAME:
        return Fn.join("-", [LEGACY_LIFECYCLE_BUCKET, Aws.ACCOUNT_ID, Aws.REGION])
    return Fn.join("-", [LIFECYCLE_BUCKET_PREFIX, stack_id_suffix(), Aws.ACCOUNT_ID, Aws.REGION])


def lifecycle_bucket(scope: Construct, foundation: Foundation) -> s3.Bucket:
    """The stack-owned lifecycle bucket (construct id ``LifecycleBucket``): SSE-S3, SSL
    only, no public access, access logs to the foundation's log bucket, versioned; emptied
    and deleted on ``cdk destroy`` (the scripts are rebuilt from the repository)."""
    return private_bucket(
        scope,
        "LifecycleBucket",
        retain=False,
        # "Make sure that the S3 bucket path starts with s3://sagemaker-" (SageMaker API
        # reference, ClusterLifeCycleConfig.SourceS3Uri,
        # https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_ClusterLifeCycleConfig.html).
        bucket_name=lifecycle_bucket_name(Stack.of(scope)),
        server_access_logs_bucket=foundation.log_bucket,
        server_access_logs_prefix="lifecycle-bucket/",
        # Versions record which scripts each node generation ran (replaced nodes run the
        # current ones); old versions expire.
        versioned=True,
        lifecycle_rules=[s3.LifecycleRule(
            noncurrent_version_expiration=NONCURRENT_VERSION_EXPIRATION)],
    )


def upload_lifecycle_files(scope: Construct, bucket: s3.Bucket, scripts: Sequence[Path],
                           data_files: dict[str, Any], exclude: Sequence[str] = (),
                           ) -> s3deploy.BucketDeployment:
    """Upload the files of the ``scripts`` directories, but those named in ``exclude``, and
    each of ``data_files`` (file name -> JSON data, tokens allowed) under
    :data:`LIFECYCLE_PREFIX` (construct id ``LifecycleScripts``). Files removed from the repository are removed from the bucket
    (``prune``), as is the ``provisioning_parameters.json`` of Slurm stacks from before the
    API-driven Slurm configuration."""
    deployment = s3deploy.BucketDeployment(
        scope,
        "LifecycleScripts",
        destination_bucket=bucket,
        destination_key_prefix=LIFECYCLE_PREFIX,
        sources=[
            *(s3deploy.Source.asset(str(d), exclude=["__pycache__", "*.pyc", *exclude])
              for d in scripts),
            *(s3deploy.Source.json_data(name, data) for name, data in data_files.items()),
        ],
        prune=True,
    )
    _acknowledge_upload_function(bucket)
    return deployment


def lifecycle_config(bucket: s3.IBucket, *, on_create: str | None = None,
                     on_init_complete: str | None = None,
                     ) -> sagemaker.CfnCluster.ClusterLifeCycleConfigProperty:
    """An instance group's ``LifeCycleConfig``: the scripts under :data:`LIFECYCLE_PREFIX`
    and the entrypoint HyperPod runs, ``OnCreate`` (its own configuration is left to the
    script) or ``OnInitComplete`` (after HyperPod's AMI-based configuration); the two are
    mutually exclusive (CloudFormation schema of ``AWS::SageMaker::Cluster``,
    ``ClusterLifeCycleConfig``)."""
    return sagemaker.CfnCluster.ClusterLifeCycleConfigProperty(
        source_s3_uri=bucket.s3_url_for_object(LIFECYCLE_PREFIX) + "/",
        on_create=on_create, on_init_complete=on_init_complete)


def _acknowledge_upload_function(bucket: s3.Bucket) -> None:
    """cdk-nag findings on the upload function aws-cdk-lib creates once per stack, beside
    the orchestrator, for every BucketDeployment (its role and policy are aws-cdk-lib's)."""
    stack = Stack.of(bucket)
    bucket_id = stack.get_logical_id(bucket.node.default_child)
    bucket_objects = f"AwsSolutions-IAM5[Resource::<{bucket_id}.Arn>/*]"
    handler = find_stack_child(stack, "Custom::CDKBucketDeployment")
    role = handler.node.find_child("ServiceRole")
    acknowledge(handler.node.find_child("Resource"), "AwsSolutions-L1",
                "aws-cdk-lib 2.275.0 sets the BucketDeployment function's runtime; we do "
                "not own that function.")
    acknowledge(role, LAMBDA_BASIC_EXECUTION,
                "The CDK BucketDeployment function only writes its own CloudWatch logs.")
    bootstrap_assets = bootstrap_assets_finding(stack)
    copy = "The CDK BucketDeployment function copies the lifecycle files"
    for finding, reason in {
        "AwsSolutions-IAM5[Action::s3:GetObject*]": f"{copy} (read of the asset).",
        "AwsSolutions-IAM5[Action::s3:GetBucket*]": f"{copy} (read of the asset).",
        "AwsSolutions-IAM5[Action::s3:List*]": f"{copy} (listing to prune old files).",
        "AwsSolutions-IAM5[Action::s3:DeleteObject*]": f"{copy} (prunes removed files).",
        "AwsSolutions-IAM5[Action::s3:Abort*]": f"{copy} (aborts failed multipart uploads).",
        bootstrap_assets: f"{copy} from the CDK bootstrap asset bucket.",
        bucket_objects: f"{copy} into the stack's own lifecycle bucket.",
    }.items():
        acknowledge(role, finding, reason)
