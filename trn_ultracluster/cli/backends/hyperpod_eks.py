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

Node pools as on ``eks``: a job of a pool other than the main one runs on the pool's runtime
and selects ``trn-ultracluster/pool: <name>``, which the HyperPod instance groups of that
pool carry (``KubernetesConfig.Labels``); ``status --pool`` lists the main pool's nodes by
their ``ml.`` instance type and another pool's by that label.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from trn_ultracluster.cli.backends.base import BackendTexts
from trn_ultracluster.cli.backends.eks import EksBackend
from trn_ultracluster.cli.errors import CliError
from trn_ultracluster.contracts.pools import POOL_LABEL
from trn_ultracluster.orchestrators.eks.manifests import INSTANCE_TYPE_LABEL

if TYPE_CHECKING:
    from trn_ultracluster.contracts.pools import PoolInfo

__all__ = ["HyperPodEksBackend"]


class HyperPodEksBackend(EksBackend):
    """TrainJobs on the HyperPod nodes; a job's handle is its name."""

    name = "hyperpod-eks"
    texts = BackendTexts(label="HyperPod EKS", job="TrainJob name",
                         dry_run="the TrainJob manifest",
                         time_limit="the TrainJob's activeDeadlineSeconds",
                         env="the trainer container")

    def pool_nodes_selector(self, pool: PoolInfo) -> str:
        """The main pool's nodes by their ``ml.`` instance type (the label HyperPod gives
        them, which the stack's runtime selects; catalog ``hyperpod_instance_type``), another
        pool's by ``trn-ultracluster/pool``."""
        if self.is_main(pool):
            ml_name = self.pool_spec(pool).hyperpod_instance_type or pool.instance_type
            return f"{INSTANCE_TYPE_LABEL}={ml_name}"
        return f"{POOL_LABEL}={pool.name}"

    def scale(self, nodes: int, pool: PoolInfo | None = None) -> str:
        raise CliError("scale changes EKS node groups; the HyperPod instance groups of this "
                       "stack are sized by the stack", "set nodes.desired (or the worker "
                       "group's instance_count) and deploy")
