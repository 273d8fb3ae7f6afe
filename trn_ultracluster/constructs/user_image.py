"""UserImage: the user's Dockerfile (``training_image.user_dockerfile``) built on the stack's
training image during ``cdk deploy``, for what ``submit --requirements`` cannot install
(system packages, compiled extensions); jobs then run it (docs/custom-image.md).

The build is a second ``cdklabs.deploy-time-build`` ``ContainerImageBuild`` on the same
CodeBuild project as the stack's image (the library's project is one per stack and
platform, ``SingletonProject``), pushed to the same ECR repository, with:

- ``--build-arg TRN_BASE_IMAGE=<repository URI>:<stack image tag>``
  (:data:`~trn_ultracluster.config.dockerfile.BASE_IMAGE_ARG`): the stack's tag is a content
  hash known at synth time, so the argument is the image the first build pushes.
- a custom resource that depends on the first build's, so CloudFormation starts it only once
  the stack's image is in the repository.
- pull rights on that image from the library itself: it grants the project pull and push on
  the repository (``repository.grantPullPush(project)``, ``lib/container-image-build.js`` of
  0.1.14), and its buildspec logs in to the repository's registry before the build (``aws
  ecr get-login-password | docker login ... $repositoryAuthUri``), so ``FROM`` pulls with the
  build's own role.
- its own content tag (:func:`~trn_ultracluster.constructs.image_content.image_tag`) over
  its build context (minus its ``.dockerignore``: :func:`context_patterns`), its Dockerfile
  path and the stack image's tag.

On ``cdk deploy`` of a change: a changed Dockerfile, a changed file in its context or a new
stack image changes the tag, so the custom resource's ``imageTag`` changes and the library's
trigger starts a new build (it builds on Create and Update); the new tag reaches the stack
output ``TrainingImageUri`` and every consumer in the same deploy, and running jobs keep the
image they started with. The library does nothing on Delete (``trigger-codebuild/index.ts``:
"Do nothing on a DELETE event"): an old tag stays in the repository until its lifecycle rules
expire it (the newest tagged images are kept), and ``cdk destroy`` empties and deletes the
repository with every image in it (``EmptyOnDelete``). A stack image that is not rebuilt
while the user's image is rebuilt many times would fall out of the newest tagged images and
be expired, and the next user build could not pull it: :func:`keep_base_rule` keeps the
current stack image out of reach of the count rule. A rollback re-runs the previous build
with the previous tag.

With ``training_image.build: local`` there is no user image: the configuration refuses it
(:func:`trn_ultracluster.config.rules.training_image.user_image` says why).
"""

from __future__ import annotations

from pathlib import Path

from aws_cdk import IgnoreMode
from aws_cdk import aws_ecr as ecr
from constructs import Construct

from trn_ultracluster.config.dockerfile import BASE_IMAGE_ARG
from trn_ultracluster.constructs.image_content import PLATFORM, build_context_patterns, image_tag

__all__ = ["UserImage", "context_patterns", "keep_base_rule"]


def context_patterns(dockerfile: Path, context: Path) -> list[str]:
    """The ``.dockerignore`` patterns of the user's build: ``<Dockerfile>.dockerignore`` when
    it exists, else ``<context>/.dockerignore``, else none. "If both exist, the
    Dockerfile-specific ignore-file takes precedence" (Docker docs, "Build context",
    https://docs.docker.com/build/concepts/context/#filename-and-location)."""
    for ignore in (dockerfile.with_name(dockerfile.name + ".dockerignore"),
                   context / ".dockerignore"):
        if ignore.is_file():
            return build_context_patterns(ignore)
    return []


def keep_base_rule(base_tag: str) -> ecr.LifecycleRule:
    """A lifecycle rule that keeps the stack image the user's image builds on: it selects
    that one tag and expires only images beyond the newest one with it, and "an image that
    matches the tagging requirements of a rule cannot be expired by a rule with a lower
    priority" (ECR user guide, "Lifecycle policies", lifecycle policy evaluation rules,
    https://docs.aws.amazon.com/AmazonECR/latest/userguide/LifecyclePolicies.html), so the
    count rule after it never expires the current stack image."""
    return ecr.LifecycleRule(description="keep the image the user's image builds on",
                             tag_status=ecr.TagStatus.TAGGED, tag_pattern_list=[base_tag],
                             max_image_count=1)


class UserImage(Construct):
    """The user's image: a ``ContainerImageBuild`` of ``dockerfile`` in ``context`` FROM the
    stack's image, in the same repository.

    Attributes:
        build: the ``ContainerImageBuild``; its custom resource depends on ``base_build``'s.
        image_tag: content tag (64 hex characters, known at synth time).
        image_uri: ``<repository URI>:<image_tag>`` (a token).
    """

    def __init__(self, scope: Construct, construct_id: str, *, repository: ecr.IRepository,
                 base_build: Construct, base_tag: str, base_uri: str, dockerfile: Path,
                 context: Path) -> None:
        """Args:
            repository: the stack's repository (the stack image is in it, the user's goes
                there too).
            base_build: the stack image's ``ContainerImageBuild``.
            base_tag, base_uri: the stack image's tag and URI (``<repository URI>:<tag>``).
            dockerfile: the user's Dockerfile, absolute, inside ``context``.
            context: the build context directory, absolute.

        Raises:
            ValueError: ``dockerfile`` is not inside ``context`` (the configuration refuses
                that first).
        """
        super().__init__(scope, construct_id)
        from cdklabs.deploy_time_build import ContainerImageBuild  # as training_image does

        if not dockerfile.resolve().is_relative_to(context.resolve()):
            raise ValueError(f"user Dockerfile {dockerfile} must be inside its context {context}")
        file = dockerfile.resolve().relative_to(context.resolve()).as_posix()
        patterns = context_patterns(dockerfile, context)
        self.image_tag = image_tag(context, file, patterns, {BASE_IMAGE_ARG: base_tag})
        self.image_uri = f"{repository.repository_uri}:{self.image_tag}"
        self.build = ContainerImageBuild(
            self, "Build", directory=str(context), file=file, platform=PLATFORM,
            ignore_mode=IgnoreMode.DOCKER, exclude=patterns, build_args={BASE_IMAGE_ARG: base_uri},
            repository=repository, tag=self.image_tag)
        self.build.node.find_child("Resource").node.add_dependency(
            base_build.node.find_child("Resource"))
