"""What every orchestrator construct receives and gives back to the stack."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from aws_cdk import RemovalPolicy

from trn_ultracluster.config import ClusterConfig
from trn_ultracluster.constructs.efa import Efa
from trn_ultracluster.constructs.network import Network
from trn_ultracluster.constructs.storage import Storage
from trn_ultracluster.constructs.training_image import TrainingImage
from trn_ultracluster.contracts.outputs import OutputKey

__all__ = ["Orchestrator", "OrchestratorProps"]


@dataclass(frozen=True)
class OrchestratorProps:
    """The validated config and the foundation constructs an orchestrator builds on."""

    config: ClusterConfig
    network: Network
    efa: Efa
    storage: Storage
    training_image: TrainingImage
    data_removal: RemovalPolicy = RemovalPolicy.RETAIN
    """What ``cdk destroy`` does with data-bearing resources (``data_removal_policy``)."""


class Orchestrator(Protocol):
    """An orchestrator construct (EKS or HyperPod Slurm)."""

    def outputs(self) -> dict[OutputKey, str]:
        """Stack outputs this orchestrator adds, key -> value (may be tokens)."""
        ...
