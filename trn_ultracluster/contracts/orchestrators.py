"""What the stack, the configuration and the job CLI know of each orchestrator: its output
keys and how its nodes are counted against service quotas."""

from __future__ import annotations

from dataclasses import dataclass

from trn_ultracluster.contracts.outputs import (
    EKS_KEYS,
    HYPERPOD_EKS_KEYS,
    HYPERPOD_KEYS,
    STANDALONE_KEYS,
    OutputKey,
)

__all__ = ["ORCHESTRATORS", "OrchestratorFacts"]


@dataclass(frozen=True)
class OrchestratorFacts:
    """One orchestrator as the other parts of the project see it.

    Attributes:
        name: the ``orchestrator`` configuration value and the ``Orchestrator`` output.
        output_keys: the stack outputs it adds to the foundation's.
    """

    name: str
    output_keys: tuple[OutputKey, ...]


ORCHESTRATORS: dict[str, OrchestratorFacts] = {
    facts.name: facts for facts in (
        OrchestratorFacts("eks", EKS_KEYS),
        OrchestratorFacts("hyperpod-slurm", HYPERPOD_KEYS),
        OrchestratorFacts("hyperpod-eks", HYPERPOD_EKS_KEYS),
        OrchestratorFacts("standalone", STANDALONE_KEYS),
    )
}
"""The orchestrators, by configuration value."""
