"""Environment of a Neuron training process on a TrnUltraCluster node, on every orchestrator.

EKS puts it in the ClusterTrainingRuntime's container, HyperPod writes it into
``/fsx/.trn-ultracluster/env`` (sourced by every login shell and Slurm job), and the job
CLI relies on one of the two. Standard library only.

Sources: ``FI_PROVIDER=efa`` and ``FI_EFA_USE_DEVICE_RDMA=1`` for multi-node training over
EFA (Neuron docs, "Setting up Trn1 multi-node execution",
aws-neuron/aws-neuron-sdk ``general/setup/setup-trn1-multi-node-execution.rst``);
``FI_EFA_FORK_SAFE`` is needed only on kernels older than 5.15 and is left out.
``NEURON_CC_FLAGS=--cache_dir=...`` puts the compiler cache on shared storage (Neuron docs,
"Neuron Persistent Cache").
"""

from __future__ import annotations

from trn_ultracluster.contracts.catalog import InstanceSpec
from trn_ultracluster.contracts.shared_storage import NEURON_COMPILE_CACHE_DIR

__all__ = ["neuron_environment"]


def neuron_environment(spec: InstanceSpec) -> dict[str, str]:
    """Variables for Neuron training on ``spec`` (the EFA ones only for EFA types).

    Returns:
        name -> value, e.g. trn1.32xlarge -> ``{"NEURON_CC_FLAGS": "--cache_dir=/fsx/...",
        "FI_PROVIDER": "efa", "FI_EFA_USE_DEVICE_RDMA": "1"}``.
    """
    env = {"NEURON_CC_FLAGS": f"--cache_dir={NEURON_COMPILE_CACHE_DIR}"}
    if spec.supports_efa:
        env |= {"FI_PROVIDER": "efa", "FI_EFA_USE_DEVICE_RDMA": "1"}
    return env
