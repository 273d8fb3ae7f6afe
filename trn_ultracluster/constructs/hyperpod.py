"""HyperPod Slurm orchestrator (issue 4): SageMaker HyperPod cluster with Slurm, lifecycle scripts."""

from __future__ import annotations

from constructs import Construct

from trn_ultracluster.constructs.orchestrator import OrchestratorProps
from trn_ultracluster.outputs import OutputKey

__all__ = ["HyperPodSlurmOrchestrator"]


class HyperPodSlurmOrchestrator(Construct):
    """Placeholder until issue 4 lands: creates nothing and adds no outputs."""

    def __init__(self, scope: Construct, construct_id: str, props: OrchestratorProps) -> None:
        super().__init__(scope, construct_id)
        self.props = props

    def outputs(self) -> dict[OutputKey, str]:
        """No outputs yet."""
        return {}
