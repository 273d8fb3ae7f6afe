"""Standalone nodes: ``standalone``."""

from __future__ import annotations

from typing import Literal

from trn_ultracluster.config.facts import NEURON_DLAMI_ROOT_DEVICE, STACK_RELEASES
from trn_ultracluster.config.model.base import FrozenModel
from trn_ultracluster.contracts.neuron_stack import NeuronStackName

__all__ = ["StandaloneConfig"]


class StandaloneConfig(FrozenModel):
    """Standalone Trainium nodes (used when ``orchestrator`` is ``standalone``): an Auto Scaling
    group of ``nodes`` instances from the EFA launch template, reached with Session Manager.
    See docs/standalone.md.

    Default, by the cluster's Neuron stack (``ClusterConfig.neuron_stack``, releases in
    :data:`STACK_RELEASES`): ``xla`` boots the Deep Learning AMI Neuron PyTorch 2.9 (Ubuntu
    24.04) of the training image's Neuron SDK release
    (:data:`trn_ultracluster.config.facts.XLA_STACK`, 2.30.0), found at deploy time by EC2
    DescribeImages (no SSM parameter names one SDK release's DLAMI); ``native`` boots the
    newest Neuron Base DLAMI through its public SSM parameter
    (:data:`trn_ultracluster.config.facts.NATIVE_STACK` ``base_dlami_parameter``), because
    the AMI name and SSM parameter of the torch-neuronx DLAMI are not verified. Either way
    jobs run in the stack's training image.

    Attributes:
        ami_id: the nodes' AMI, pinned (``ami-...``, of the stack's Region). Default: the
            stack's AMI above (the DLAMI lookup runs when the stack is created, and again
            only when the lookup's filters change; the Base DLAMI parameter is resolved at
            each deploy).
        ami_ssm_parameter: instead of ``ami_id``, an SSM parameter holding the AMI id
            (public, e.g. a DLAMI's ``.../latest/image_id``, or your own), resolved by
            CloudFormation at each deploy (a changed AMI reaches new nodes only). The
            ``latest`` PyTorch 2.9 DLAMI is a 2.31 one without the ``xla`` stack's venv.
        runtime: ``container`` runs jobs in the training image (pulled from ECR when a node
            starts) with ``/fsx`` and the Neuron and EFA devices; ``dlami-venv`` runs them in
            the AMI's Neuron virtual environment :attr:`dlami_venv`, with the training
            program copied to each node. On ``native`` it needs ``ami_id`` or
            ``ami_ssm_parameter`` (the Base DLAMI has no TorchNeuron environment).
        dlami_venv: the virtual environment of ``runtime: dlami-venv`` (an absolute path on
            the AMI). Default (null): the stack's (``XLA_STACK.venv``,
            ``NATIVE_STACK.venv``), filled in by :meth:`resolved`.
        root_device_name: the AMI's root device, which the launch template's root volume
            (``root_volume_gib``) resizes; ``/dev/sda1`` on Ubuntu AMIs, ``/dev/xvda`` on
            Amazon Linux. A wrong name adds a second volume instead.
    """

    ami_id: str | None = None
    ami_ssm_parameter: str | None = None
    runtime: Literal["container", "dlami-venv"] = "container"
    dlami_venv: str | None = None
    root_device_name: str = NEURON_DLAMI_ROOT_DEVICE

    def resolved(self, stack: NeuronStackName) -> StandaloneConfig:
        """This section with :attr:`dlami_venv` filled in: as given, else the virtual
        environment of ``stack``'s DLAMI (:data:`STACK_RELEASES`)."""
        if self.dlami_venv is not None:
            return self
        return self.model_copy(update={"dlami_venv": STACK_RELEASES[stack].venv})
