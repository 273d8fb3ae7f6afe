"""The training image: ``training_image``."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from trn_ultracluster.config.model.base import FrozenModel

__all__ = ["TrainingImageConfig"]


class TrainingImageConfig(FrozenModel):
    """How ``cdk deploy`` builds the training image (``training/Dockerfile``).

    Attributes:
        build: ``codebuild`` (default): built in AWS CodeBuild during the deploy and pushed
            to the stack's ECR repository; no Docker needed where ``cdk deploy`` runs.
            ``local``: built by the CDK CLI with the local Docker and published to the CDK
            bootstrap repository (faster iteration when Docker is at hand).
        neuron_stack: the Neuron training stack of the image, the job environment and the
            training program's ``--backend``: ``auto`` (default) picks by instance family,
            ``xla`` on Trn1/Trn1n and ``native`` (TorchNeuron) on Trn2 and newer
            (:func:`trn_ultracluster.contracts.neuron_stack.supported_stacks`); ``xla`` or
            ``native`` choose one where the family has both: ``native`` on Trn2 and newer
            only, ``xla`` on Trn2 with a warning (docs/training-stacks.md).
        user_dockerfile: a Dockerfile of the user's, built by the same deploy on top of the
            stack's image (``ARG TRN_BASE_IMAGE`` then ``FROM ${TRN_BASE_IMAGE}``), for what
            ``submit --requirements`` cannot install: system packages, compiled extensions.
            Jobs then run this image (docs/custom-image.md). A relative path is read from the
            project directory (where ``cdk.json`` is; :func:`~trn_ultracluster.config.load_config`
            makes it absolute). With ``build: codebuild`` only. Default: none, jobs run the
            stack's image.
        user_context: the build context of ``user_dockerfile`` (a directory that holds it).
            Default: the Dockerfile's directory.
    """

    build: Literal["codebuild", "local"] = "codebuild"
    neuron_stack: Literal["auto", "xla", "native"] = "auto"
    user_dockerfile: str | None = None
    user_context: str | None = None

    @property
    def user_build(self) -> tuple[Path, Path] | None:
        """``(dockerfile, context)`` of the user's image as paths, or None without one."""
        if self.user_dockerfile is None:
            return None
        dockerfile = Path(self.user_dockerfile)
        return dockerfile, Path(self.user_context) if self.user_context else dockerfile.parent
