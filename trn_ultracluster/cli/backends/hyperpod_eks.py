"""The ``hyperpod-eks`` job backend: Kubeflow Trainer ``TrainJob``s on the SageMaker HyperPod
nodes of the stack's EKS cluster.

The same TrainJobs as the ``eks`` backend (:class:`~trn_ultracluster.cli.backends.eks.EksBackend`:
submit, status, logs, cancel, smoke test, ``--kube-context``). What differs is in the stack's
``ClusterTrainingRuntime``, which every TrainJob names (output ``EksTrainingRuntimeName``):
its pods select HyperPod nodes by their ``ml.`` instance type and
``sagemaker.amazonaws.com/node-health-status=Schedulable``, tolerate the Neuron taint of the
HyperPod instance group, and its JobSet is recreated after a failure up to
``hyperpod.job_max_restarts`` times (``trn_ultracluster.orchestrators.hyperpod_eks``;
docs/hyperpod-eks.md, "Auto-resume"). The nodes are HyperPod instance groups, sized by the
stack: ``scale`` is refused.
"""

from __future__ import annotations

from trn_ultracluster.cli.backends.base import BackendTexts
from trn_ultracluster.cli.backends.eks import EksBackend
from trn_ultracluster.cli.errors import CliError

__all__ = ["HyperPodEksBackend"]


class HyperPodEksBackend(EksBackend):
    """TrainJobs on the HyperPod nodes; a job's handle is its name."""

    name = "hyperpod-eks"
    texts = BackendTexts(label="HyperPod EKS", job="TrainJob name",
                         dry_run="the TrainJob manifest",
                         time_limit="the TrainJob's activeDeadlineSeconds",
                         env="the trainer container")

    def scale(self, nodes: int) -> str:
        raise CliError("scale changes EKS node groups; the HyperPod instance groups of this "
                       "stack are sized by the stack", "set nodes.desired (or the worker "
                       "group's instance_count) and deploy")
