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

Teams (a stack with ``teams``: SageMaker HyperPod task governance,
:mod:`trn_ultracluster.orchestrators.hyperpod_eks.task_governance`): a job of team ``t`` at
class ``c`` is created in the team's namespace (``TeamInfo.namespace``, ``hyperpod-ns-t``)
with the labels ``kueue.x-k8s.io/queue-name`` = its LocalQueue (``TeamInfo.queue``) and
``kueue.x-k8s.io/priority-class`` = the class's WorkloadPriorityClass
(``PriorityClassInfo.scheduled_as``, ``c-priority``): :func:`team_placement`.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

from trn_ultracluster.cli.backends.base import BackendTexts, RenderedJob
from trn_ultracluster.cli.backends.eks import EksBackend
from trn_ultracluster.cli.backends.trainjob import TrainJobClient
from trn_ultracluster.cli.errors import CliError, ExitCode
from trn_ultracluster.contracts.pools import POOL_LABEL
from trn_ultracluster.contracts.teams import KUEUE_PRIORITY_LABEL, KUEUE_QUEUE_LABEL
from trn_ultracluster.orchestrators.eks.manifests import INSTANCE_TYPE_LABEL

if TYPE_CHECKING:
    from trn_ultracluster.cli.job_args import JobRequest
    from trn_ultracluster.contracts.pools import PoolInfo
    from trn_ultracluster.contracts.teams import PriorityClassInfo, TeamInfo

__all__ = ["HyperPodEksBackend", "team_placement"]


def team_placement(manifest: dict[str, Any], team: TeamInfo,
                   priority: PriorityClassInfo | None) -> dict[str, Any]:
    """``manifest`` (a TrainJob) moved to ``team``'s namespace with its queue label and, with
    ``priority``, its priority-class label (a copy; ``manifest`` is unchanged). The names are
    the stack's (output ``Teams``), which task governance gives: "When submitting the job,
    include your queue name and priority class labels ... kueue.x-k8s.io/queue-name:
    hyperpod-ns-team-name-localqueue, kueue.x-k8s.io/priority-class:
    priority-class-name-priority" (SageMaker developer guide, "Example HyperPod task
    governance AWS CLI commands").

    Raises:
        CliError: (STACK) the team has no namespace or queue in the stack's outputs (a stack
            whose orchestrator wrote none).
    """
    if not team.namespace or not team.queue:
        raise CliError(f"team {team.name} has no namespace or queue in the stack's Teams "
                       "output", "redeploy the stack with this version", ExitCode.STACK)
    placed = copy.deepcopy(manifest)
    metadata = placed["metadata"]
    metadata["namespace"] = team.namespace
    metadata["labels"][KUEUE_QUEUE_LABEL] = team.queue
    if priority is not None:
        metadata["labels"][KUEUE_PRIORITY_LABEL] = priority.scheduled_as
    return placed


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

    def render(self, job: JobRequest) -> RenderedJob:
        """The ``eks`` backend's TrainJob; a team's job placed by :func:`team_placement`."""
        rendered = super().render(job)
        if job.team is None:
            return rendered
        import yaml

        manifest = team_placement(rendered.payload, job.team, job.priority)
        return RenderedJob(job, yaml.safe_dump(manifest, sort_keys=False), manifest)

    def submit(self, job: RenderedJob) -> str:
        """Create the TrainJob in its own namespace (a team's, or the training namespace)."""
        namespace = job.payload["metadata"]["namespace"]
        client = self.client
        if namespace != client.namespace:
            client = TrainJobClient(namespace, client.custom.api_client)
        client.create(job.payload)
        return job.job.name

    def scale(self, nodes: int, pool: PoolInfo | None = None) -> str:
        raise CliError("scale changes EKS node groups; the HyperPod instance groups of this "
                       "stack are sized by the stack", "set nodes.desired (or the worker "
                       "group's instance_count) and deploy")
