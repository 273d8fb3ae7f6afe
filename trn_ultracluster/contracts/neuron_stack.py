"""The two Neuron training stacks and which instance family gets which.

- ``xla``: torch-neuronx over PyTorch/XLA, the stack of Neuron SDK 2.30 and earlier. The only
  one Trn1 and Trn1n run: TorchNeuron, the native backend, supports Trainium2 and Trainium3
  only (Neuron SDK 2.33.0 release notes, TorchNeuron: "Trn2 and Trn3"). Frozen upstream:
  the ``pytorch-training-neuronx`` container is not published after 2.30.0 and the DLAMIs drop
  PyTorch/XLA training from 2.32.0 (:data:`trn_ultracluster.config.facts.XLA_STACK`).
- ``native``: TorchNeuron, standard PyTorch on a ``neuron`` device (eager mode,
  ``torch.compile``, DDP / FSDP2 / DTensor), from Neuron SDK 2.33.0
  (:data:`trn_ultracluster.config.facts.NATIVE_STACK`). The default on Trn2 and every newer
  family.

The job CLI passes the stack to the training program as ``--backend``, the node scripts and
the EKS runtime put its compile cache and environment in place. Standard library only (the
training image ships it).
"""

from __future__ import annotations

from typing import Literal

from trn_ultracluster.contracts.catalog import InstanceSpec
from trn_ultracluster.contracts.shared_storage import FSX_MOUNT_PATH, NEURON_COMPILE_CACHE_DIR

__all__ = ["NATIVE", "NEURON_STACKS", "NeuronStackName", "XLA", "compile_cache_dir",
           "default_stack", "supported_stacks"]

NeuronStackName = Literal["xla", "native"]
XLA: NeuronStackName = "xla"
NATIVE: NeuronStackName = "native"
NEURON_STACKS: tuple[NeuronStackName, ...] = (XLA, NATIVE)

XLA_ONLY_CORE_VERSIONS = ("v2",)
"""NeuronCore versions TorchNeuron does not support: v2 is Trainium (Trn1, Trn1n)."""


def supported_stacks(spec: InstanceSpec) -> tuple[NeuronStackName, ...]:
    """The stacks that can train on ``spec``, the default first.

    Trainium (NeuronCore-v2: trn1, trn1n) has only ``xla``. Trainium2 (NeuronCore-v3: trn2,
    trn2u) has ``native`` first and ``xla`` as well: the 2.30 training image lists "trn1,trn2,
    trn3,inf2" as its instances (aws-neuron/deep-learning-containers README @2be9ed1,
    pytorch-training-neuronx table, Neuron 2.30.0 row), frozen.
    """
    if spec.neuron_core_version in XLA_ONLY_CORE_VERSIONS:
        return (XLA,)
    return (NATIVE, XLA)


def default_stack(spec: InstanceSpec) -> NeuronStackName:
    """``training_image.neuron_stack: auto`` on ``spec``: the first of :func:`supported_stacks`."""
    return supported_stacks(spec)[0]


def compile_cache_dir(stack: NeuronStackName) -> str:
    """The shared compile cache of ``stack`` on FSx, one directory per stack: the two stacks
    ship different compilers, and clearing one never clears the other.

    Returns:
        ``/fsx/neuron-compile-cache`` for ``xla`` (the directory stacks deployed before the
        native stack existed already use) and ``/fsx/neuron-compile-cache-native``.
    """
    return NEURON_COMPILE_CACHE_DIR if stack == XLA else f"{FSX_MOUNT_PATH}/neuron-compile-cache-{NATIVE}"
