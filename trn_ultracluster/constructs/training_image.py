"""TrainingImage: build ``training/Dockerfile`` during ``cdk deploy`` and put it in ECR.

Two ways to build (config ``training_image.build``):

- ``codebuild`` (default): the image is built **inside AWS** during the deploy by
  ``cdklabs.deploy-time-build``'s ``ContainerImageBuild`` (PyPI ``cdklabs.deploy-time-build``
  0.1.14, construct source ``lib/container-image-build.js``): the build context is uploaded
  as a small S3 asset, a CodeBuild project runs ``docker buildx build`` on it, then
  ``docker push`` to the stack's repository, and the build itself answers CloudFormation
  (the trigger Lambda only calls ``codebuild:StartBuild``), so there is no Lambda copy, no
  15-minute Lambda limit and no Docker on the user's machine. CloudFormation waits for the
  answer up to a custom resource's limit of one hour (CloudFormation user guide,
  ``AWS::CloudFormation::CustomResource`` ``ServiceTimeout``: 1-3600 s, default 3600).
- ``local``: the CDK CLI builds the image with the local Docker and publishes it to the CDK
  bootstrap repository as an ordinary Docker image asset; jobs pull it from there. No copy.

The CodeBuild build, within that hour (:meth:`TrainingImage._tune_build_project`):

- **Time limits.** The library sets none, so CodeBuild's defaults would apply: 60 minutes of
  build and 8 hours in the queue (botocore CodeBuild model, ``CreateProjectInput``
  ``timeoutInMinutes`` 5-2160, default 60, and ``queuedTimeoutInMinutes`` 5-480; CodeBuild
  user guide, builds-working.html: "The default timeout value is eight hours"). We set
  :data:`BUILD_TIMEOUT` and :data:`BUILD_QUEUED_TIMEOUT` so that a build that queues and then
  runs the longest still ends :data:`REPORT_MARGIN` before CloudFormation gives up.
- **Failure report.** The library answers CloudFormation from ``post_build``, and nothing in
  the CodeBuild docs says ``post_build`` runs after a timeout or a stop, so an EventBridge
  rule on the project's FAILED/FAULT/STOPPED/TIMED_OUT builds invokes a small function
  (``image_build_report/handler.py``) that answers FAILED with the build id, status and log
  stream instead of CloudFormation's generic timeout an hour later.
- **Push.** The library builds with ``--output type=docker,name=artifact:<tag>``, then runs
  ``docker tag`` and ``docker push``. On the build host's default ``docker`` driver (the
  buildspec creates no other builder) buildx turns a ``type=docker`` output without ``dest``
  into the Docker daemon's own image exporter (docker/buildx ``build/opt.go``: ``if
  nodeDriver.IsMobyDriver() { e.Type = "image" }``, then ``"moby"``), so the image is written
  into the daemon's store and no tarball is exported or loaded; ``docker push`` is the one
  upload. A direct ``push=true`` cannot be passed in: the library appends ``type=docker`` and
  ``name=artifact:$imageTag`` to the same ``--output`` value (``buildCommandOptions.outputs``)
  and buildx keeps the last ``type=`` and ``name=`` of a value (``util/buildflags/export.go``),
  and its buildspec pushes ``artifact:$imageTag`` afterwards. The library moved from
  ``push=true`` to ``docker push`` for CodeBuild's Docker server feature
  (tmokmss/deploy-time-build #49, #50, #52), which we do not use.
- **Cache.** CodeBuild's local Docker layer cache (``LOCAL_DOCKER_LAYER_CACHE``: "a good choice
  for projects that build or pull large Docker images"; Linux, privileged mode, not with a
  VPC or ``BUILD_GENERAL1_2XLARGE``; it lives on one build host, so "not the best option if
  your builds are infrequent": CodeBuild user guide, "Local caching"). A BuildKit registry
  cache in ECR is not possible here: it "is not supported with the default docker driver"
  (Docker docs, "Registry cache", https://docs.docker.com/build/cache/backends/registry/),
  and the library's buildspec creates no other builder. So no cache tag lives in the
  repository, and its lifecycle rules and ``EmptyOnDelete`` see only image tags.

Why CodeBuild and this library (alternatives weighed in docs/deploy.md "Training image"): the base
image is many GB (a Neuron DLC); building next to ECR avoids pulling and pushing it over the
user's connection; ``cdk-ecr-deployment`` (the previous approach) needs the image built
locally first, copies it with a 512 MiB Lambda capped at 15 minutes whose role may write to
every ECR repository; EC2 Image Builder container recipes have no build context for our
``COPY`` lines.

The image tag is the content hash of the build context, the Dockerfile path, the platform
and the build arguments (:func:`image_tag`), so it is known at synth time: consumers (the
EKS runtime, the HyperPod environment file) reference ``<repository>:<tag>`` without
waiting for the build, and CloudFormation still waits for the build before the stack is
complete, so no job can start before the image exists.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from aws_cdk import Duration, IgnoreMode, RemovalPolicy, Stack
from aws_cdk import aws_codebuild as codebuild
from aws_cdk import aws_ecr as ecr
from aws_cdk import aws_ecr_assets as ecr_assets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_logs as logs
from constructs import Construct

from trn_ultracluster.constructs.image_build_failures import report_failures
from trn_ultracluster.constructs.image_content import (
    DOCKERFILE,
    IGNORE_FILE,
    PLATFORM,
    REPO_ROOT,
    build_context_patterns,
    image_tag,
)
from trn_ultracluster.constructs.user_image import UserImage, keep_base_rule
from trn_ultracluster.contracts.neuron_stack import NeuronStackName
from trn_ultracluster.nag import (
    LAMBDA_BASIC_EXECUTION,
    acknowledge,
    bootstrap_assets_finding,
    checkov_skip,
    find_stack_child,
    managed_policy_finding,
    nag_partition,
    skip_library_function_checks,
)

__all__ = [
    "BUILD_CACHE",
    "BUILD_COMPUTE_TYPE",
    "BUILD_QUEUED_TIMEOUT",
    "BUILD_TIMEOUT",
    "DOCKERFILE",
    "IGNORE_FILE",
    "PLATFORM",
    "TrainingImage",
    "TrainingImageProps",
    "build_context_patterns",
    "image_tag",
]

BUILD_COMPUTE_TYPE = "BUILD_GENERAL1_LARGE"
"""CodeBuild compute type (CloudFormation ``AWS::CodeBuild::Project`` ``Environment.ComputeType``): up to 16 GiB memory and 8 vCPUs (botocore CodeBuild
model, ``ProjectEnvironment.computeType``) and 128 GB of disk on the Linux on-demand fleet
(CodeBuild user guide, "Build environment compute modes and types"; the disk figure is from
that page's table, not verified here). The library's default, SMALL (2 vCPUs, 64 GB), is
tight for a Neuron DLC that is pulled, extended and pushed whole."""
BUILD_TIMEOUT = Duration.minutes(50)
"""CodeBuild ``TimeoutInMinutes`` of the image build (5-2160; the default of 60 would outlast
CloudFormation's wait)."""
BUILD_QUEUED_TIMEOUT = Duration.minutes(5)
"""CodeBuild ``QueuedTimeoutInMinutes`` (5-480, default 480): the minimum, so that a build
stuck behind the account's concurrent-build quota fails inside the window too."""
REPORT_MARGIN = Duration.minutes(5)
"""What the window keeps after the longest queue plus build: the trigger Lambda's
``StartBuild`` (up to 10 retries 5 s apart on IAM propagation, ``trigger-codebuild/index.ts``),
then the state-change event and the report function."""
CUSTOM_RESOURCE_WINDOW = Duration.hours(1)
"""CloudFormation's wait for a custom resource (``ServiceTimeout`` default and maximum 3600 s;
the library sets none)."""
BUILD_CACHE = {"Type": "LOCAL", "Modes": ["LOCAL_DOCKER_LAYER_CACHE"]}
"""CloudFormation ``AWS::CodeBuild::Project`` ``Cache`` (CodeBuild user guide, "Specify a local
cache", CloudFormation: ``Type: LOCAL``, ``Modes``; needs ``PrivilegedMode``, which the
library sets)."""
BUILD_LOG_RETENTION = logs.RetentionDays.ONE_MONTH
UNTAGGED_IMAGE_EXPIRY_DAYS = 14
KEEP_TAGGED_IMAGES = 20
ECR_PUBLIC_READ = "AmazonElasticContainerRegistryPublicReadOnly"
"""Managed policy the library attaches to the build role: the base image comes from
``public.ecr.aws`` and the build logs in to ECR Public first."""
IMMUTABLE_TAGS_SKIP = (
    "Tags are content hashes, so a tag is only ever written with the same content. An "
    "IMMUTABLE repository rejects pushing an existing tag even with the same digest "
    "(aws/containers-roadmap#2179, moby/buildkit#3776), and a CloudFormation rollback re-runs "
    "the previous build with the previous tag, so immutability would make rollbacks fail."
)


@dataclass(frozen=True)
class TrainingImageProps:
    """Props of :class:`TrainingImage`.

    Attributes:
        build: ``codebuild`` (build in AWS during the deploy) or ``local`` (the CDK CLI
            builds with the local Docker and publishes to the bootstrap repository).
        removal_policy: what ``cdk destroy`` does with the build's log group (the
            repository is always emptied and deleted: images are rebuilt from the source).
        log_key: KMS key of the build's log group (codebuild only).
        directory: Docker build context. Default: the repository root.
        dockerfile: Dockerfile path relative to ``directory``.
        neuron_stack: the Dockerfile's ``NEURON_STACK`` build argument, the stage the image
            starts from: ``xla`` or ``native``
            (:mod:`trn_ultracluster.contracts.neuron_stack`).
        user_build: ``(dockerfile, context)``, absolute paths, of the user's image built on
            this one (``training_image.user_dockerfile``,
            :class:`~trn_ultracluster.constructs.user_image.UserImage`; ``codebuild`` only).
            Default: none, jobs run this image.
    """

    build: Literal["codebuild", "local"] = "codebuild"
    removal_policy: RemovalPolicy = RemovalPolicy.DESTROY
    log_key: kms.IKey | None = None
    directory: Path = REPO_ROOT
    dockerfile: str = DOCKERFILE
    neuron_stack: NeuronStackName = "xla"
    user_build: tuple[Path, Path] | None = None

    @property
    def build_args(self) -> dict[str, str]:
        """The ``docker build --build-arg`` values: ``{"NEURON_STACK": neuron_stack}``."""
        return {"NEURON_STACK": self.neuron_stack}


class TrainingImage(Construct):
    """The training container for linux/amd64, in ECR, tagged with its content hash: the
    stage of ``training/Dockerfile`` that ``props.neuron_stack`` names, and the user's image
    on top of it when ``props.user_build`` is given.

    ``image_tag``, ``image_uri`` and ``build`` are what jobs run, the one place every consumer
    reads (the ``TrainingImageUri`` output, the EKS training runtime, the node job
    environment, HyperPod's Pyxis image): the user's image when there is one, else the
    stack's.

    Attributes:
        repository: the ECR repository jobs pull from (the stack's own with ``codebuild``:
            scan on push, KMS encryption with the AWS managed key, untagged images expire
            after 14 days, the newest 20 tagged ones are kept, emptied and deleted on
            ``cdk destroy``; the CDK bootstrap repository with ``local``).
        image_tag: content tag of the image jobs run (known at synth time).
        image_uri: ``<account>.dkr.ecr.<region>.amazonaws.com/<repository>:<tag>`` (token).
        build: what pushes that image: a ``ContainerImageBuild`` (``codebuild``) or the
            ``DockerImageAsset`` (``local``).
        base_image_tag, base_image_uri, base_build: the same for the stack's own image.
        user_image: the :class:`~trn_ultracluster.constructs.user_image.UserImage`, or None.
    """

    def __init__(
        self, scope: Construct, construct_id: str, props: TrainingImageProps | None = None
    ) -> None:
        super().__init__(scope, construct_id)
        props = props or TrainingImageProps()
        self.props = props
        patterns = build_context_patterns(props.directory / "training" / "Dockerfile.dockerignore")
        if props.build == "local":
            if props.user_build is not None:
                raise ValueError("a user image needs build codebuild: the CDK CLI cannot pass "
                                 "one image asset's URI to another's build")
            asset = ecr_assets.DockerImageAsset(
                self, "Asset", directory=str(props.directory), file=props.dockerfile,
                platform=PLATFORM, ignore_mode=IgnoreMode.DOCKER, exclude=patterns,
                build_args=props.build_args)
            self.user_image = None
            self.repository = asset.repository
            self.base_build = self.build = asset
            self.base_image_tag = self.image_tag = asset.asset_hash
            self.base_image_uri = self.image_uri = asset.image_uri
            return
        self.base_image_tag = image_tag(props.directory, props.dockerfile, patterns,
                                        props.build_args)
        self.repository = self._repository(
            keep_tag=self.base_image_tag if props.user_build else None)
        self.base_image_uri = f"{self.repository.repository_uri}:{self.base_image_tag}"
        from cdklabs.deploy_time_build import ContainerImageBuild

        self.base_build = ContainerImageBuild(
            self, "Build",
            directory=str(props.directory), file=props.dockerfile, platform=PLATFORM,
            ignore_mode=IgnoreMode.DOCKER, exclude=patterns, build_args=props.build_args,
            repository=self.repository, tag=self.base_image_tag,
        )
        self.build, self.image_tag, self.image_uri = (
            self.base_build, self.base_image_tag, self.base_image_uri)
        self.user_image = None
        if props.user_build is not None:
            dockerfile, context = props.user_build
            self.user_image = UserImage(
                self, "User", repository=self.repository, base_build=self.base_build,
                base_tag=self.base_image_tag, base_uri=self.base_image_uri,
                dockerfile=dockerfile, context=context)
            self.build, self.image_tag, self.image_uri = (
                self.user_image.build, self.user_image.image_tag, self.user_image.image_uri)
        self._tune_build_project()

    def _repository(self, keep_tag: str | None) -> ecr.Repository:
        """The stack's repository; ``keep_tag``: the stack image's tag when a user image
        builds on it (:func:`~trn_ultracluster.constructs.user_image.keep_base_rule`)."""
        keep = []
        if keep_tag is not None:
            keep = [keep_base_rule(keep_tag)]
        repository = ecr.Repository(
            self,
            "Repository",
            image_scan_on_push=True,
            encryption=ecr.RepositoryEncryption.KMS,
            image_tag_mutability=ecr.TagMutability.MUTABLE,
            lifecycle_rules=[
                ecr.LifecycleRule(
                    description="expire untagged images",
                    tag_status=ecr.TagStatus.UNTAGGED,
                    max_image_age=Duration.days(UNTAGGED_IMAGE_EXPIRY_DAYS),
                ),
                *keep,
                ecr.LifecycleRule(
                    description="keep the newest tagged images",
                    tag_status=ecr.TagStatus.ANY,
                    max_image_count=KEEP_TAGGED_IMAGES,
                ),
            ],
            removal_policy=RemovalPolicy.DESTROY,
            empty_on_delete=True,
        )
        checkov_skip(repository, "CKV_AWS_51", IMMUTABLE_TAGS_SKIP)
        return repository

    def _tune_build_project(self) -> None:
        """The library's CodeBuild project (one per stack): a larger compute type, time limits
        inside CloudFormation's hour, the local Docker layer cache, our own log group
        (encrypted, retained per ``data_removal_policy``) and the failure report; then the
        cdk-nag acknowledgments and checkov skips for what the library defines.

        Raises:
            ValueError: the queue and build timeouts plus :data:`REPORT_MARGIN` exceed
                :data:`CUSTOM_RESOURCE_WINDOW`.
        """
        stack = Stack.of(self)
        project = find_stack_child(stack, "ContainerImageBuildAmd64")
        assert isinstance(project, codebuild.Project)
        cfn = project.node.default_child
        assert isinstance(cfn, codebuild.CfnProject)
        cfn.add_property_override("Environment.ComputeType", BUILD_COMPUTE_TYPE)
        budget = BUILD_QUEUED_TIMEOUT.to_minutes() + BUILD_TIMEOUT.to_minutes()
        if budget + REPORT_MARGIN.to_minutes() > CUSTOM_RESOURCE_WINDOW.to_minutes():
            raise ValueError(f"queue and build timeouts must end {REPORT_MARGIN.to_minutes()} min "
                             f"inside CloudFormation's {CUSTOM_RESOURCE_WINDOW.to_minutes()} min, "
                             f"got {budget} min")
        cfn.add_property_override("TimeoutInMinutes", int(BUILD_TIMEOUT.to_minutes()))
        cfn.add_property_override("QueuedTimeoutInMinutes", int(BUILD_QUEUED_TIMEOUT.to_minutes()))
        cfn.add_property_override("Cache", BUILD_CACHE)
        self.log_group = logs.LogGroup(
            self, "BuildLogs", retention=BUILD_LOG_RETENTION,
            encryption_key=self.props.log_key, removal_policy=self.props.removal_policy)
        cfn.add_property_override("LogsConfig.CloudWatchLogs",
                                  {"Status": "ENABLED", "GroupName": self.log_group.log_group_name})
        project.add_to_role_policy(iam.PolicyStatement(
            actions=["logs:CreateLogStream", "logs:PutLogEvents"],
            resources=[self.log_group.log_group_arn]))
        self.report_function = report_failures(self, project, (self.base_build, self.build))
        self._acknowledge(stack, project)

    def _acknowledge(self, stack: Stack, project: codebuild.Project) -> None:
        role_policy = project.role.node.find_child("DefaultPolicy")
        acknowledge(project.role, managed_policy_finding(ECR_PUBLIC_READ),
                    "The image build pulls the Neuron base image from public.ecr.aws "
                    "(read only); cdklabs.deploy-time-build attaches this managed policy.")
        build_reason = ("cdklabs.deploy-time-build's image build: CodeBuild writes its "
                        "report groups and log streams, reads the build context asset and "
                        "pushes to the stack's own repository")
        project_id = stack.get_logical_id(project.node.default_child)
        partition, region = nag_partition(stack), stack.region
        for finding in (
            "AwsSolutions-IAM5[Resource::*]",
            "AwsSolutions-IAM5[Action::s3:GetBucket*]",
            "AwsSolutions-IAM5[Action::s3:GetObject*]",
            "AwsSolutions-IAM5[Action::s3:List*]",
            bootstrap_assets_finding(stack),
            f"AwsSolutions-IAM5[Resource::arn:{partition}:logs:{region}:<AWS::AccountId>:"
            f"log-group:/aws/codebuild/<{project_id}>:*]",
            f"AwsSolutions-IAM5[Resource::arn:{partition}:codebuild:{region}:"
            f"<AWS::AccountId>:report-group/<{project_id}>-*]",
        ):
            acknowledge(role_policy, finding, build_reason + " (ecr:GetAuthorizationToken "
                        "has no resource-level permission; the asset is read with the CDK "
                        "grant_read wildcards; CodeBuild names its report groups and log "
                        "streams after the project).")
        acknowledge(project.node.default_child, "AwsSolutions-CB4",
                    "The build output is a container image in the stack's KMS-encrypted ECR "
                    "repository; CodeBuild encrypts its own artifacts with the AWS managed key.")
        handler = find_stack_child(stack, "DeployTimeBuildCustomResourceHandler")
        acknowledge(handler.node.find_child("ServiceRole"), LAMBDA_BASIC_EXECUTION,
                    "deploy-time-build's trigger function only writes its own logs and calls "
                    "codebuild:StartBuild on the stack's build project.")
        acknowledge(handler.node.default_child, "AwsSolutions-L1",
                    "cdklabs.deploy-time-build 0.1.14 pins its trigger function's runtime "
                    "(nodejs22.x); it cannot be set here.")
        skip_library_function_checks(handler)
