"""What the stack, the configuration and the job CLI know of each orchestrator: its output
keys and how its nodes are counted against service quotas."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

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
        node_quota: which quota its Trainium nodes count against: ``ec2-vcpus`` (EC2
            "Running On-Demand Trn instances", in vCPUs: the nodes are EC2 instances of the
            account) or ``sagemaker-cluster-instances`` (SageMaker "ml.<type> for cluster
            usage", in instances: HyperPod runs the nodes).
    """

    name: str
    output_keys: tuple[OutputKey, ...]
    node_quota: Literal["ec2-vcpus", "sagemaker-cluster-instances"]


ORCHESTRATORS: dict[str, OrchestratorFacts] = {
    facts.name: facts for facts in (
        OrchestratorFacts("eks", EKS_KEYS, "ec2-vcpus"),
        OrchestratorFacts("hyperpod-slurm", HYPERPOD_KEYS, "sagemaker-cluster-instances"),
        OrchestratorFacts("hyperpod-eks", HYPERPOD_EKS_KEYS, "sagemaker-cluster-instances"),
        OrchestratorFacts("standalone", STANDALONE_KEYS, "ec2-vcpus"),
    )
}
"""The orchestrators, by configuration value."""
