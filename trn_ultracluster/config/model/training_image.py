"""The training image: ``training_image``."""

from __future__ import annotations

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
            ``native`` choose one where the family has both (README "Training stacks").
    """

    build: Literal["codebuild", "local"] = "codebuild"
    neuron_stack: Literal["auto", "xla", "native"] = "auto"
