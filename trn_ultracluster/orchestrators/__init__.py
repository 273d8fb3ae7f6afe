"""Orchestrators: what runs jobs on the Trainium nodes, behind one seam.

Each orchestrator is a sub-package with its construct, its cdk-nag acknowledgments and its
assets (``eks``: Amazon EKS with Kubeflow Trainer; ``hyperpod_slurm``: SageMaker HyperPod
with Slurm and its lifecycle scripts; ``hyperpod_eks``: SageMaker HyperPod nodes in the
``eks`` orchestrator's cluster; ``standalone``: an Auto Scaling group of nodes reached with
Session Manager). Code two of them share lives in a sub-package of its own (``hyperpod``), in
the one the other builds on (``eks.control_plane``), or, for the nodes that run our own
scripts, in :mod:`.nodes`. The stack builds the one the configuration names
through :func:`build`; it gets the foundation's handles (:class:`~.base.Foundation`), the
node shape (:class:`~.base.NodeShape`) and its own configuration section, and gives back
its stack outputs and the name of the job CLI backend that submits to it
(:class:`~.base.Orchestrator`).

Adding an orchestrator: a sub-package whose construct has a ``from_config`` class method
and a ``job_backend``, one entry in :data:`ORCHESTRATORS`, and one job backend in the CLI.

Importing this package imports no orchestrator: each pulls in large modules (the kubectl
and AWS CLI Lambda layers) that the others do not need.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from constructs import Construct

    from trn_ultracluster.config import ClusterConfig
    from trn_ultracluster.orchestrators.base import Foundation, Orchestrator

__all__ = ["ORCHESTRATORS", "build"]

ORCHESTRATORS: dict[str, tuple[str, str, str]] = {
    "eks": ("trn_ultracluster.orchestrators.eks.cluster", "EksOrchestrator", "Eks"),
    "hyperpod-slurm": ("trn_ultracluster.orchestrators.hyperpod_slurm.cluster",
                       "HyperPodSlurmOrchestrator", "HyperPod"),
    "hyperpod-eks": ("trn_ultracluster.orchestrators.hyperpod_eks.cluster",
                     "HyperPodEksOrchestrator", "HyperPodEks"),
    "standalone": ("trn_ultracluster.orchestrators.standalone.cluster",
                   "StandaloneOrchestrator", "Standalone"),
}
"""``orchestrator`` config value -> (module, construct class, construct id). The construct
id is part of every resource's logical id: changing it replaces the orchestrator's
resources on the next deploy."""


def build(scope: Construct, config: ClusterConfig, foundation: Foundation) -> Orchestrator:
    """Create the orchestrator ``config.orchestrator`` names, in ``scope``.

    Raises:
        KeyError: an orchestrator without an entry in :data:`ORCHESTRATORS` (the
            configuration model only allows those that have one; a test checks it).
    """
    module, cls, construct_id = ORCHESTRATORS[config.orchestrator]
    orchestrator: Orchestrator = getattr(import_module(module), cls).from_config(
        scope, construct_id, config, foundation)
    return orchestrator
