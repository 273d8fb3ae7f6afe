"""The HyperPod orchestrator's lifecycle files: the bucket, what is uploaded to it, and the
generated ``trn_ultracluster.json`` with the job environment."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from aws_cdk import Aws, Fn, Stack
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_s3_deployment as s3deploy
from constructs import Construct

from trn_ultracluster.config import HyperPodConfig
from trn_ultracluster.constructs.storage import NONCURRENT_VERSION_EXPIRATION, private_bucket
from trn_ultracluster.contracts.catalog import InstanceSpec
from trn_ultracluster.contracts.hyperpod import (
    CONTROLLER_GROUP,
    LIFECYCLE_FILE,
    LOGIN_GROUP,
    JobEnv,
)
from trn_ultracluster.contracts.neuron_env import neuron_environment
from trn_ultracluster.contracts.shared_storage import (
    FSX_MOUNT_PATH,
    FSX_STACK_TAG,
    NEURON_COMPILE_CACHE_DIR,
    fsx_path,
)
from trn_ultracluster.nag import (
    LAMBDA_BASIC_EXECUTION,
    acknowledge,
    bootstrap_assets_finding,
    find_stack_child,
)
from trn_ultracluster.node_metrics import SCRIPTS as NODE_METRICS_SCRIPTS
from trn_ultracluster.orchestrators.base import Foundation

__all__ = ["LIFECYCLE_ASSETS", "LIFECYCLE_PREFIX", "job_environment", "lifecycle_bucket",
           "lifecycle_file", "upload_lifecycle_files"]

LIFECYCLE_ASSETS = Path(__file__).resolve().parent / "scripts"
"""Our lifecycle scripts (uploaded as they are)."""
LIFECYCLE_PREFIX = "lifecycle"
"""Key prefix of the lifecycle files in the lifecycle bucket."""
LIFECYCLE_BUCKET_PREFIX = "sagemaker-trnuc-lcs"
"""HyperPod reads lifecycle scripts from buckets named ``sagemaker-*`` (see
:func:`lifecycle_bucket`)."""


def lifecycle_file(settings: HyperPodConfig, env: dict[str, str], fsx_tag_value: str,
                   data_repository: bool) -> dict[str, Any]:
    """``trn_ultracluster.json``, what the lifecycle script reads (values may be tokens).

    Shape::

        {"groups": {"controller": str, "login": str | None, "workers": [str, ...]},
         "fsx": {"tag_key": str, "tag_value": str, "data_repository": bool},
         "names": {JobEnv member: variable, ...},
         "env": {variable: value, ...}}

    ``groups`` tells the script a node's Slurm role (with HyperPod's
    ``resource_config.json``); ``fsx`` finds the stack's file system (tagged with
    :data:`~trn_ultracluster.contracts.shared_storage.FSX_STACK_TAG`) and says whether it is
    linked to S3 (the script then waits for the link's metadata import before it writes
    files); ``names`` is :class:`~trn_ultracluster.contracts.hyperpod.JobEnv`, which the
    scripts read instead of copies of the names; ``env`` is the job environment. Nothing in
    it refers to the file system itself, so the lifecycle files, and the cluster that waits
    for them, do not wait for FSx.
    """
    return {
        "groups": {
            "controller": CONTROLLER_GROUP,
            "login": LOGIN_GROUP if settings.login_instance_type is not None else None,
            "workers": [g.name for g in settings.worker_groups],
        },
        "fsx": {"tag_key": FSX_STACK_TAG, "tag_value": fsx_tag_value,
                "data_repository": data_repository},
        "names": {member.name: member.value for member in JobEnv},
        "env": env,
    }


def job_environment(scope: Construct, settings: HyperPodConfig, instance: InstanceSpec,
                    worker_counts: dict[str, int], foundation: Foundation) -> dict[str, str]:
    """What job scripts read from ``/fsx/.trn-ultracluster/env``: variable -> value (values
    may be tokens).

    The file system's id is not here (it would make the lifecycle files wait for the file
    system): the lifecycle script adds ``JobEnv.FSX_FILE_SYSTEM_ID`` once it has found the
    file system by its tag.
    """
    image = foundation.training_image
    registry = Fn.select(0, Fn.split("/", image.repository.repository_uri))
    repository = image.repository.repository_name
    partitions = list(dict.fromkeys(g.partition for g in settings.worker_groups))
    data_path = foundation.data_repository_path
    env = {
        JobEnv.REGION: Stack.of(scope).region,
        JobEnv.CLUSTER_NAME: settings.cluster_name,
        JobEnv.INSTANCE_TYPE: instance.name,
        JobEnv.NEURON_CORES_PER_NODE: str(instance.logical_neuron_cores),
        JobEnv.NEURON_CHIPS_PER_NODE: str(instance.chips),
        JobEnv.EFA_INTERFACES_PER_NODE: str(instance.efa_interfaces),
        JobEnv.WORKER_NODES: str(sum(worker_counts.values())),
        JobEnv.PARTITIONS: ",".join(partitions),
        JobEnv.DEFAULT_PARTITION: partitions[0],
        JobEnv.TRAINING_IMAGE_URI: image.image_uri,
        JobEnv.ECR_REGISTRY: registry,
        # Pyxis names a registry image "<registry>#<repository>:<tag>" (Pyxis README,
        # --container-image).
        JobEnv.CONTAINER_IMAGE: f"{registry}#{repository}:{image.image_tag}",
        JobEnv.FSX_MOUNT_POINT: FSX_MOUNT_PATH,
        JobEnv.DATA_BUCKET: foundation.data_bucket.bucket_name,
        JobEnv.DATA_PATH: fsx_path(data_path) if data_path else "",
        JobEnv.NEURON_CACHE_DIR: NEURON_COMPILE_CACHE_DIR,
    }
    return {**{k.value: v for k, v in env.items()}, **neuron_environment(instance)}


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
        # Account and Region make it unique; at most 19 + 12 + 14 + 2 = 47 characters.
        bucket_name=Fn.join("-", [LIFECYCLE_BUCKET_PREFIX, Aws.ACCOUNT_ID, Aws.REGION]),
        server_access_logs_bucket=foundation.log_bucket,
        server_access_logs_prefix="lifecycle-bucket/",
        # Versions record which scripts each node generation ran (replaced nodes run the
        # current ones); old versions expire.
        versioned=True,
        lifecycle_rules=[s3.LifecycleRule(
            noncurrent_version_expiration=NONCURRENT_VERSION_EXPIRATION)],
    )


def upload_lifecycle_files(scope: Construct, bucket: s3.Bucket,
                           data: dict[str, Any]) -> s3deploy.BucketDeployment:
    """Upload the scripts of :data:`LIFECYCLE_ASSETS` and ``data`` as
    :data:`~trn_ultracluster.contracts.hyperpod.LIFECYCLE_FILE` under
    :data:`LIFECYCLE_PREFIX` (construct id ``LifecycleScripts``). Files removed from the
    repository are removed from the bucket (``prune``), as is the ``provisioning_parameters.json``
    of stacks from before the API-driven Slurm configuration."""
    deployment = s3deploy.BucketDeployment(
        scope,
        "LifecycleScripts",
        destination_bucket=bucket,
        destination_key_prefix=LIFECYCLE_PREFIX,
        sources=[
            s3deploy.Source.asset(str(LIFECYCLE_ASSETS), exclude=["__pycache__", "*.pyc"]),
            s3deploy.Source.asset(str(NODE_METRICS_SCRIPTS), exclude=["__pycache__", "*.pyc"]),
            s3deploy.Source.json_data(LIFECYCLE_FILE, data),
        ],
        prune=True,
    )
    _acknowledge_upload_function(bucket)
    return deployment


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
