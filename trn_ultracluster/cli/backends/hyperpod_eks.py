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
class ``c`` is created as on ``eks`` (:meth:`EksBackend.placement`): in the team's namespace
(``TeamInfo.namespace``, ``hyperpod-ns-t``) with the labels ``kueue.x-k8s.io/queue-name`` = its
LocalQueue (``TeamInfo.queue``) and ``kueue.x-k8s.io/priority-class`` = the class's
WorkloadPriorityClass (``PriorityClassInfo.scheduled_as``, ``c-priority``); its handle is
``hyperpod-ns-t/<name>``. Here the TrainJob also carries both labels down to its Jobs and pods
(:func:`task_governance_patch`), because the Kueue of task governance, as reported, does not
integrate TrainJobs and admits only labelled pods:

- The add-on runs its own Kueue (v0.19.2 in add-on v1.6.0: SageMaker developer guide, "Upgrade
  task governance", sagemaker-hyperpod-eks-operate-console-ui-governance-upgrade.html) whose
  configuration cannot be changed ("managed resources such as KueueManagerConfig ... may be
  updated and overwritten by the service", aws-samples/awsome-distributed-training
  ``1.architectures/7.sagemaker-hyperpod-eks/task-governance/README.md``). Which integrations
  it enables AWS does not list; a third-party field report lists ``pod``, ``deployment``,
  ``statefulset``, ray and Kubeflow training-operator frameworks and not
  ``trainer.kubeflow.org/trainjob``. NOT VERIFIED here (no cluster): check with ``kubectl -n
  kueue-system get cm kueue-manager-config -o yaml``.
- Its ValidatingAdmissionPolicy ``hyperpod-task-governance-admission-policy`` denies Pods,
  Deployments and StatefulSets without a non-empty ``kueue.x-k8s.io/queue-name`` label in the
  namespaces task governance makes (field reports and the Spaces guide at
  awslabs.github.io/ai-on-sagemaker-hyperpod; NOT VERIFIED: ``kubectl get
  validatingadmissionpolicy hyperpod-task-governance-admission-policy -o yaml``).
- Kubeflow Trainer v2.3.0 copies no TrainJob label to the JobSet, its Jobs or pods: their
  labels come from the runtime and the TrainJob's ``spec.runtimePatches``, whose Job-template
  and pod-template labels reach the JobSet's Jobs and pods (kubeflow/trainer v2.3.0
  ``pkg/runtime/core/trainingruntime.go``; test "labels and annotations overrides from the
  TrainJob's RuntimePatches", ``trainingruntime_test.go``).

Without the patch the pods would be denied (if the policy is as reported). With it, Kueue
v0.19.2 makes a Workload of the topmost object it manages that carries a queue name
(``pkg/controller/jobframework``: ``FindAncestorJobManagedByKueue``,
``WorkloadShouldBeSuspended``): each Job (all the pods of a replicated job, one Workload,
admitted together) when the ``batch/job`` integration is on; otherwise each pod on its own
(``pod`` integration: Workload ``pod-<pod name>-<hash>``, ``pkg/controller/jobs/pod``), which
is no gang admission: the pods of one job may be admitted at different times, and those
admitted first hold their nodes waiting for the others at torchrun's rendezvous. The JobSet
itself is not labelled: Trainer sets the JobSet's ``suspend`` to the TrainJob's on every
apply (``pkg/runtime/framework/plugins/jobset/jobset.go``, ``Suspend(trainJob.Spec.Suspend)``),
so a Kueue that suspended the JobSet would be overridden. ``status`` and ``usage`` read
either kind of Workload (:mod:`~trn_ultracluster.cli.backends.kueue`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from trn_ultracluster.cli.backends.base import BackendTexts, RenderedJob
from trn_ultracluster.cli.backends.eks import EksBackend
from trn_ultracluster.cli.backends.trainjob import runtime_patch
from trn_ultracluster.cli.errors import CliError
from trn_ultracluster.contracts.pools import POOL_LABEL
from trn_ultracluster.orchestrators.eks.manifests import INSTANCE_TYPE_LABEL, TRAINER_NODE

if TYPE_CHECKING:
    from collections.abc import Mapping

    from trn_ultracluster.cli.job_args import JobRequest
    from trn_ultracluster.contracts.pools import PoolInfo

__all__ = ["HyperPodEksBackend", "LABELLED_REPLICATED_JOBS", "TASK_GOVERNANCE_PATCH_MANAGER",
           "task_governance_patch"]

TASK_GOVERNANCE_PATCH_MANAGER = "trn-ultracluster/task-governance"
"""``spec.runtimePatches[].manager`` of :func:`task_governance_patch`: the job CLI's own,
set at creation (Trainer 2.3.0: 1-253 characters, immutable, the key of the patch list;
a domain-prefixed path for its webhook, :func:`~trn_ultracluster.cli.backends.trainjob.
runtime_patch`)."""
LABELLED_REPLICATED_JOBS = (TRAINER_NODE,)
"""The replicated jobs of every ClusterTrainingRuntime the stack makes (one, ``node``:
``orchestrators.eks.manifests.training_runtime``, which the main pool's and every other pool's
runtime use; the tests check the synthesized runtimes). Trainer's webhook refuses a patch of a
replicated job the runtime lacks."""


def task_governance_patch(labels: Mapping[str, str]) -> dict[str, Any]:
    """The ``spec.runtimePatches`` item that puts ``labels`` (the team's queue and priority
    labels) on the Job template and on the pod template of each of
    :data:`LABELLED_REPLICATED_JOBS`, so that every Job and pod of the TrainJob carries them
    (module doc: why). The JobSet's own metadata is left alone."""
    return runtime_patch(TASK_GOVERNANCE_PATCH_MANAGER, [
        {"name": name, "template": {"metadata": {"labels": dict(labels)},
                                    "spec": {"template": {"metadata": {"labels": dict(labels)}}}}}
        for name in LABELLED_REPLICATED_JOBS])


class HyperPodEksBackend(EksBackend):
    """TrainJobs on the HyperPod nodes; a job's handle is its name, ``<namespace>/<name>`` for
    a team's job."""

    name = "hyperpod-eks"
    texts = BackendTexts(label="HyperPod EKS",
                         job="TrainJob name (NAMESPACE/NAME for a team's job)",
                         dry_run="the TrainJob manifest",
                         time_limit="the TrainJob's activeDeadlineSeconds",
                         env="the trainer container")

    teams_applied_by = ("HyperPod task governance: AWS::SageMaker::ClusterSchedulerConfig and "
                        "an AWS::SageMaker::ComputeQuota per team")

    def pool_nodes_selector(self, pool: PoolInfo) -> str:
        """The main pool's nodes by their ``ml.`` instance type (the label HyperPod gives
        them, which the stack's runtime selects; catalog ``hyperpod_instance_type``), another
        pool's by ``trn-ultracluster/pool``."""
        if self.is_main(pool):
            ml_name = self.pool_spec(pool).hyperpod_instance_type or pool.instance_type
            return f"{INSTANCE_TYPE_LABEL}={ml_name}"
        return f"{POOL_LABEL}={pool.name}"

    def render(self, job: JobRequest) -> RenderedJob:
        """The ``eks`` backend's TrainJob; a team's job also carries its queue and priority
        labels to its Jobs and pods (:func:`task_governance_patch`)."""
        rendered = super().render(job)
        if job.team is None:
            return rendered
        import yaml

        manifest = rendered.payload
        _, labels = self.placement(job.team, job.priority)
        manifest["spec"].setdefault("runtimePatches", []).append(task_governance_patch(labels))
        return RenderedJob(job, yaml.safe_dump(manifest, sort_keys=False), manifest)

    def scale(self, nodes: int, pool: PoolInfo | None = None) -> str:
        raise CliError("scale changes EKS node groups; the HyperPod instance groups of this "
                       "stack are sized by the stack", "set nodes.desired (or the worker "
                       "group's instance_count) and deploy")
