"""The ``eks`` job backend: Kubeflow Trainer ``TrainJob``s on the stack's EKS cluster.

Jobs are TrainJobs (:mod:`~trn_ultracluster.cli.backends.trainjob`) in the stack's training
namespace, named by their job name. The CLI reaches the cluster with the caller's AWS
credentials (:mod:`~trn_ultracluster.cli.backends.eks_auth`), or with a kubeconfig context
(``--kube-context``); ``scale`` sets the size of the Trainium node group
(:mod:`~trn_ultracluster.cli.backends.eks_scale`).
"""

from __future__ import annotations

from typing import Any

from trn_ultracluster.cli.backends.base import (
    BackendOption,
    BackendTexts,
    JobBackend,
    JobState,
    RenderedJob,
)
from trn_ultracluster.cli.backends.eks_scale import scale_eks_nodes
from trn_ultracluster.cli.backends.trainjob import (
    CODE_ANNOTATION,
    TrainJobClient,
    job_state,
    train_job,
)
from trn_ultracluster.cli.errors import CliError, ExitCode
from trn_ultracluster.cli.job_args import JobRequest
from trn_ultracluster.contracts.outputs import OutputKey

__all__ = ["EksBackend", "trainjob_client"]

ENDED = ("Complete", "Failed")
"""TrainJob states (:func:`~trn_ultracluster.cli.backends.trainjob.job_state`) of a job
that has ended."""


def trainjob_client(namespace: str, *, session: Any, region: str, cluster_name: str,
                    context: str | None = None) -> TrainJobClient:
    """A :class:`TrainJobClient` for the stack's cluster.

    Default: authenticate with the caller's AWS credentials through EKS
    (:func:`trn_ultracluster.cli.backends.eks_auth.eks_api_client`), no kubeconfig needed. With
    ``context``: that kubeconfig context.

    Raises:
        CliError: (CLUSTER) the kubeconfig has no such context; others as ``eks_api_client``.
    """
    if context is None:
        from trn_ultracluster.cli.backends.eks_auth import eks_api_client

        return TrainJobClient(namespace, eks_api_client(session, region, cluster_name))
    import os

    import yaml
    from kubernetes import config

    # KUBECONFIG is read here, not when the kubernetes package was imported (its default),
    # so the environment of the call counts; ':'-separated lists work as with kubectl.
    config_file = os.environ.get("KUBECONFIG") or "~/.kube/config"
    try:
        api_client = config.new_client_from_config(config_file=config_file, context=context)
    except (config.ConfigException, OSError, ValueError, yaml.YAMLError) as err:
        raise CliError(f"kubeconfig context {context!r} is not usable ({err})",
                       "leave --kube-context out to reach the cluster with your AWS "
                       "credentials, or fix the kubeconfig", ExitCode.CLUSTER) from None
    return TrainJobClient(namespace, api_client)


class EksBackend(JobBackend):
    """TrainJobs on the stack's ClusterTrainingRuntime; a job's handle is its name."""

    name = "eks"
    options = (BackendOption(
        "--kube-context", "EKS: use this kubeconfig context (default: reach the cluster with "
                          "your AWS credentials, no kubeconfig needed)"),)
    texts = BackendTexts(label="EKS", job="TrainJob name", dry_run="the TrainJob manifest",
                         time_limit="the TrainJob's activeDeadlineSeconds",
                         env="the trainer container")

    def connect(self) -> TrainJobClient:
        session = self.session
        return trainjob_client(self.outputs.get(OutputKey.EKS_TRAINING_NAMESPACE),
                               session=session, region=session.region_name,
                               cluster_name=self.outputs.get(OutputKey.EKS_CLUSTER_NAME),
                               context=self.option("kube_context"))

    def render(self, job: JobRequest) -> RenderedJob:
        import yaml

        manifest = train_job(job, spec=self.spec,
                             namespace=self.outputs.get(OutputKey.EKS_TRAINING_NAMESPACE),
                             runtime=self.outputs.get(OutputKey.EKS_TRAINING_RUNTIME))
        return RenderedJob(job, yaml.safe_dump(manifest, sort_keys=False), manifest)

    def submit(self, job: RenderedJob) -> str:
        self.client.create(job.payload)
        return job.job.name

    def status(self, job: str | None) -> list[str]:
        client = self.client
        jobs = [client.get(job)] if job else client.list()
        if not jobs:
            return [f"no TrainJobs in namespace {client.namespace}"]
        lines = []
        for found in jobs:
            trainer = found.get("spec", {}).get("trainer", {})
            code = found["metadata"].get("annotations", {}).get(CODE_ANNOTATION)
            lines.append(f"{found['metadata']['name']:<40} {job_state(found):<10} "
                         f"nodes={trainer.get('numNodes')}"
                         + (f" code={code[:12]}" if code else ""))
        return lines

    def state(self, job: str) -> JobState:
        state = job_state(self.client.get(job))
        return JobState(state, state in ENDED)

    def logs(self, job: str, tail_lines: int | None = None) -> str:
        return str(self.client.logs(job, tail_lines))

    def cancel(self, job: str) -> None:
        self.client.delete(job)

    def scale(self, nodes: int) -> str:
        result = scale_eks_nodes(self.session, self.outputs, nodes)
        names = result.nodegroups
        where = names[0] if len(names) == 1 else (
            f"{len(names)} node groups ("
            + ", ".join(f"{n}: {size}" for n, size in zip(names, result.sizes)) + ")")
        return (f"{where}: {result.before} -> {result.after} nodes "
                "(new nodes join in a few minutes; watch with kubectl get nodes)")
