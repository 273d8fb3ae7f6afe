"""Rules of the training image: the Neuron training stack the instance family supports."""

from __future__ import annotations

from collections.abc import Iterator

from trn_ultracluster.config.errors import ConfigIssue, one_of
from trn_ultracluster.config.facts import DOC_TORCHNEURON, README_TRAINING_STACKS
from trn_ultracluster.config.model import ClusterConfig
from trn_ultracluster.contracts.catalog import CATALOG
from trn_ultracluster.contracts.neuron_stack import XLA, default_stack, supported_stacks

__all__ = ["neuron_stack"]


def neuron_stack(c: ClusterConfig) -> Iterator[ConfigIssue]:
    """``training_image.neuron_stack`` must be one the instance family runs: ``native``
    (TorchNeuron) is for Trainium2 and newer only ("supported on Trainium 2 (trn2) and
    Trainium 3 (trn3) instances", Neuron docs, torch/index.rst, DOC_TORCHNEURON). ``xla``
    where the family's default is ``native`` is a warning: that stack is frozen at Neuron
    SDK 2.30 (README "Training stacks")."""
    spec = CATALOG.get(c.instance_type)
    chosen = c.training_image.neuron_stack
    if spec is None or chosen == "auto":
        return
    allowed = supported_stacks(spec)
    if chosen not in allowed:
        yield ConfigIssue(
            "training_image.neuron_stack", chosen,
            f"must be {one_of(['auto', *allowed])} on {spec.name}: TorchNeuron, the native "
            "stack, supports Trainium2 and Trainium3 only (Neuron SDK 2.33.0)", DOC_TORCHNEURON)
    elif chosen == XLA and default_stack(spec) != XLA:
        yield ConfigIssue(
            "training_image.neuron_stack", chosen,
            f"should be 'auto' (native) on {spec.name}: the XLA stack is frozen at Neuron SDK "
            "2.30, the last release with a PyTorch/XLA training image; it gets no fixes",
            README_TRAINING_STACKS, severity="warning")
