"""Private S3 buckets: the data bucket and access-log bucket of
:class:`~trn_ultracluster.constructs.storage.Storage`, and the HyperPod lifecycle bucket."""

from __future__ import annotations

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_s3 as s3
from constructs import Construct

__all__ = ["NONCURRENT_VERSION_EXPIRATION", "private_bucket"]

NONCURRENT_VERSION_EXPIRATION = Duration.days(30)


def private_bucket(scope: Construct, construct_id: str, *, retain: bool, **props) -> s3.Bucket:
    """An S3 bucket with SSE-S3 encryption, SSL enforced and all public access blocked.

    Args:
        retain: keep the bucket and its objects on ``cdk destroy``; otherwise CDK's
            auto-delete custom resource empties it and it is deleted.
        props: further ``s3.Bucket`` props (versioning, access logs, name, ...).
    """
    return s3.Bucket(
        scope,
        construct_id,
        encryption=s3.BucketEncryption.S3_MANAGED,
        enforce_ssl=True,
        block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
        removal_policy=RemovalPolicy.RETAIN if retain else RemovalPolicy.DESTROY,
        auto_delete_objects=not retain,
        **props,
    )
