"""TrainingImage: build ``training/Dockerfile`` during ``cdk deploy`` and push it to our ECR."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from aws_cdk import Duration, IgnoreMode, RemovalPolicy, Stack
from aws_cdk import aws_ecr as ecr
from aws_cdk import aws_ecr_assets as ecr_assets
from cdk_ecr_deployment import DockerImageName, ECRDeployment
from constructs import Construct

from trn_ultracluster.nag import LAMBDA_BASIC_EXECUTION, acknowledge, find_stack_child

__all__ = ["BUILD_CONTEXT_INCLUDES", "TrainingImage", "TrainingImageProps"]

REPO_ROOT = Path(__file__).resolve().parents[2]

BUILD_CONTEXT_INCLUDES = (
    "training",
    "trn_ultracluster/__init__.py",
    "trn_ultracluster/catalog.py",
    "trn_ultracluster/shared_storage.py",
)
"""What the image build sees of the repository: the training program, the instance catalog
it reads for MFU and the shared-storage layout (both standard library only). Everything else (.venv, node_modules, cdk.out)
is excluded, which also keeps asset fingerprinting fast."""


def build_context_excludes(includes: tuple[str, ...] = BUILD_CONTEXT_INCLUDES) -> list[str]:
    """Docker-ignore patterns that keep only ``includes`` of the repository.

    A file inside an excluded folder cannot be re-included by a ``!`` pattern alone (the
    folder is skipped), so each parent folder is re-included and its other contents
    excluded again.
    """
    patterns = ["*"]
    for path in includes:
        parts = path.split("/")
        for depth in range(1, len(parts)):
            parent = "/".join(parts[:depth])
            for pattern in (f"!{parent}", f"{parent}/*"):
                if pattern not in patterns:
                    patterns.append(pattern)
        patterns.append(f"!{path}")
    return [*patterns, "**/__pycache__", "**/*.pyc"]


UNTAGGED_IMAGE_EXPIRY_DAYS = 14
KEEP_TAGGED_IMAGES = 20


@dataclass(frozen=True)
class TrainingImageProps:
    """Props of :class:`TrainingImage`.

    Attributes:
        directory: Docker build context. Default: the repository root.
        dockerfile: Dockerfile path relative to ``directory``.
        retain_repository: keep the repository (and images) on ``cdk destroy``.
            Default False: the repository is emptied and deleted.
    """

    directory: Path = REPO_ROOT
    dockerfile: str = "training/Dockerfile"
    retain_repository: bool = False


class TrainingImage(Construct):
    """The training container, built for linux/amd64 and pushed to a stack-owned ECR repository.

    ``cdk deploy`` builds the image with Docker and publishes it as a CDK asset; a
    cdk-ecr-deployment custom resource then copies it into ``repository`` under a tag equal
    to the asset hash, so a changed Dockerfile or program gives a new, traceable tag.

    The repository scans on push, expires untagged images after 14 days, keeps the newest
    20 tagged ones, and is emptied and deleted on ``cdk destroy`` (unless retained).

    Attributes:
        repository: the ECR repository.
        image_uri: ``<account>.dkr.ecr.<region>.amazonaws.com/<repo>:<tag>`` (token).
        asset: the Docker image asset (in the CDK bootstrap repository).
    """

    def __init__(
        self, scope: Construct, construct_id: str, props: TrainingImageProps | None = None
    ) -> None:
        super().__init__(scope, construct_id)
        props = props or TrainingImageProps()
        self.props = props
        self.repository = ecr.Repository(
            self,
            "Repository",
            image_scan_on_push=True,
            encryption=ecr.RepositoryEncryption.AES_256,
            lifecycle_rules=[
                ecr.LifecycleRule(
                    description="expire untagged images",
                    tag_status=ecr.TagStatus.UNTAGGED,
                    max_image_age=Duration.days(UNTAGGED_IMAGE_EXPIRY_DAYS),
                ),
                ecr.LifecycleRule(
                    description="keep the newest tagged images",
                    tag_status=ecr.TagStatus.ANY,
                    max_image_count=KEEP_TAGGED_IMAGES,
                ),
            ],
            removal_policy=RemovalPolicy.RETAIN if props.retain_repository else RemovalPolicy.DESTROY,
            empty_on_delete=not props.retain_repository,
        )
        self.asset = ecr_assets.DockerImageAsset(
            self,
            "Asset",
            directory=str(props.directory),
            file=props.dockerfile,
            platform=ecr_assets.Platform.LINUX_AMD64,
            ignore_mode=IgnoreMode.DOCKER,
            exclude=build_context_excludes(),
        )
        self.image_tag = self.asset.asset_hash
        self.image_uri = f"{self.repository.repository_uri}:{self.image_tag}"
        self.deployment = ECRDeployment(
            self,
            "CopyToRepository",
            src=DockerImageName(self.asset.image_uri),
            dest=DockerImageName(self.image_uri),
        )
        self._acknowledge_copy_function()

    def _acknowledge_copy_function(self) -> None:
        # cdk-ecr-deployment creates one copy function per stack, beside this construct.
        role = find_stack_child(Stack.of(self), "Custom::CDKECRDeployment").node.find_child(
            "ServiceRole"
        )
        acknowledge(
            role,
            LAMBDA_BASIC_EXECUTION,
            "The cdk-ecr-deployment copy function only writes its own CloudWatch logs; "
            "the library attaches this managed policy to its role.",
        )
        acknowledge(
            role,
            "AwsSolutions-IAM5[Resource::*]",
            "cdk-ecr-deployment's copy function needs ecr:GetAuthorizationToken, which has "
            "no resource-level permissions, and pulls from the CDK bootstrap asset "
            "repository, named by the synthesizer; the library sets this policy.",
        )

