"""Environment of a Neuron training process on a TrnUltraCluster node, on every orchestrator.

EKS puts it in the ClusterTrainingRuntime's container, HyperPod and the standalone nodes write
it into ``/fsx/.trn-ultracluster/env`` (sourced by every login shell and job), and the job CLI
relies on one of the two. Standard library only.

Sources, by Neuron training stack (:mod:`trn_ultracluster.contracts.neuron_stack`):

- Both: ``FI_PROVIDER=efa`` and ``FI_EFA_USE_DEVICE_RDMA=1`` for multi-node training over EFA
  (Neuron docs, "Setting up Trn1 multi-node execution", aws-neuron/aws-neuron-sdk
  ``general/setup/setup-trn1-multi-node-execution.rst``); they configure libfabric, which the
  Neuron collectives use on either stack. ``FI_EFA_FORK_SAFE`` is needed only on kernels older
  than 5.15 and is left out.
- ``xla``: ``NEURON_CC_FLAGS=--cache_dir=...`` puts the compiler cache on shared storage
  (Neuron docs, "Neuron Persistent Cache"; XLA flow only: "PyTorch NeuronX Environment
  Variables", archived with the XLA training flow in Neuron 2.32).
- ``native``: ``TORCH_NEURONX_NEFF_CACHE_DIR`` is TorchNeuron's persistent NEFF cache, "NFS or
  local disk", written atomically (temp file + rename) so that processes and nodes may share it,
  default ``/tmp/neff_cache`` (torch-neuronx's ``PersistentCacheBackend`` header, namespace
  ``at::neuron``, read from a public copy whose repository the search index does not name). The
  Neuron "TorchNeuron environment variables" page (torch/reference/env-vars.html, 2026-10-14)
  has a caching section we could not read in full: the name is not verified against it.
"""

from __future__ import annotations

from trn_ultracluster.contracts.catalog import InstanceSpec
from trn_ultracluster.contracts.neuron_stack import XLA, NeuronStackName, compile_cache_dir

__all__ = ["NATIVE_CACHE_VARIABLE", "neuron_environment"]

NATIVE_CACHE_VARIABLE = "TORCH_NEURONX_NEFF_CACHE_DIR"
"""TorchNeuron's persistent compile cache directory (module docstring: not verified against
Neuron's page)."""


def neuron_environment(spec: InstanceSpec, stack: NeuronStackName) -> dict[str, str]:
    """Variables for Neuron training on ``spec`` with ``stack`` (the EFA ones only for EFA
    types).

    Returns:
        name -> value, e.g. trn1.32xlarge, ``xla`` -> ``{"NEURON_CC_FLAGS":
        "--cache_dir=/fsx/neuron-compile-cache", "FI_PROVIDER": "efa",
        "FI_EFA_USE_DEVICE_RDMA": "1"}``; trn2.48xlarge, ``native`` ->
        ``{"TORCH_NEURONX_NEFF_CACHE_DIR": "/fsx/neuron-compile-cache-native", "FI_PROVIDER":
        "efa", "FI_EFA_USE_DEVICE_RDMA": "1"}``.
    """
    cache = compile_cache_dir(stack)
    env = ({"NEURON_CC_FLAGS": f"--cache_dir={cache}"} if stack == XLA
           else {NATIVE_CACHE_VARIABLE: cache})
    if spec.supports_efa:
        env |= {"FI_PROVIDER": "efa", "FI_EFA_USE_DEVICE_RDMA": "1"}
    return env
