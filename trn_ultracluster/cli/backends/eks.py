"""The ``eks`` job backend: Kubeflow Trainer ``TrainJob``s on the stack's EKS cluster.

Jobs are TrainJobs (:mod:`~trn_ultracluster.cli.backends.trainjob`) in the stack's training
namespace, named by their job name. The CLI reaches the cluster with the caller's AWS
credentials (:mod:`~trn_ultracluster.cli.backends.eks_auth`), or with a kubeconfig context
(``--kube-context``); ``scale`` sets the size of a pool's node groups
(:mod:`~trn_ultracluster.cli.backends.eks_scale`).

Node pools (:mod:`trn_ultracluster.orchestrators.eks.pools` says what the stack makes): a job
of the main pool (or of no pool: a stack deployed before pools) runs on the stack's runtime
(output ``EksTrainingRuntimeName``) as before, which selects the main pool's nodes itself; a
job of another pool runs on that pool's runtime
(:func:`~trn_ultracluster.orchestrators.eks.pools.pool_runtime_name`) and its pods also
select ``trn-ultracluster/pool: <name>`` (:meth:`EksBackend.pool_selector`), with the pool's
image, processes and resources per node. The main pool's nodes carry that label only on a
stack configured with ``pools``, so a main-pool job never requires it.

Teams (a stack whose ``Teams`` output names each team's ``namespace``, Kueue ``queue`` and
``cluster_queue``): a job runs in its team's namespace, labelled with the team's LocalQueue
and its priority class's WorkloadPriorityClass (``kueue.x-k8s.io/queue-name``,
``kueue.x-k8s.io/priority-class``), and Kueue admits it within the team's quota. Its handle
is ``<namespace>/<name>``; a bare name is looked up in the training namespace and every team
namespace (a stack without teams has only the first, as before). ``status`` and ``usage``
read Kueue (:mod:`~trn_ultracluster.cli.backends.kueue`).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from trn_ultracluster.cli.backends.base import (
    BackendOption,
    BackendTexts,
    JobBackend,
    JobState,
    RenderedJob,
)
from trn_ultracluster.cli.backends.eks_scale import nodegroup_names, scale_eks_nodes
from trn_ultracluster.cli.backends.kueue import (
    KueueClient,
    PoolResolver,
    owners_of,
    team_status,
    usage_records,
    workloads_by_namespace,
)
from trn_ultracluster.cli.backends.trainjob import (
    CODE_ANNOTATION,
    TrainJobClient,
    job_state,
    train_job,
)
from trn_ultracluster.cli.errors import CliError, ExitCode
from trn_ultracluster.cli.job_args import JobRequest
from trn_ultracluster.contracts.catalog import InstanceSpec
from trn_ultracluster.contracts.outputs import OutputKey
from trn_ultracluster.contracts.pools import POOL_LABEL
from trn_ultracluster.contracts.teams import KUEUE_PRIORITY_LABEL, KUEUE_QUEUE_LABEL
from trn_ultracluster.orchestrators.eks.manifests import INSTANCE_TYPE_LABEL
from trn_ultracluster.orchestrators.eks.pools import pool_runtime_name

if TYPE_CHECKING:
    from trn_ultracluster.cli.usage import Period, UsageRecord
    from trn_ultracluster.contracts.pools import PoolInfo
    from trn_ultracluster.contracts.teams import PriorityClassInfo, TeamInfo, TeamsInfo

__all__ = ["EksBackend", "NODEGROUP_LABEL", "trainjob_client"]

ENDED = ("Complete", "Failed")
"""TrainJob states (:func:`~trn_ultracluster.cli.backends.trainjob.job_state`) of a job
that has ended."""
NODEGROUP_LABEL = "eks.amazonaws.com/nodegroup"
"""Node label with the EKS managed node group's name. EKS user guide, "Simplify node lifecycle
with managed node groups": "Amazon EKS adds Kubernetes labels to managed node group
instances. These Amazon EKS provided labels are prefixed with eks.amazonaws.com"; the page
does not list them by name: this key is what EKS managed nodes' kubelet ``--node-labels``
carry (``eks.amazonaws.com/nodegroup=<name>`` beside ``eks.amazonaws.com/capacityType``) and
what public configurations select node groups by (not verified on an AWS page)."""


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
    """TrainJobs on the stack's ClusterTrainingRuntime; a job's handle is its name, or
    ``<namespace>/<name>`` for a team's job (:meth:`locate`)."""

    name = "eks"
    options = (BackendOption(
        "--kube-context", "EKS: use this kubeconfig context (default: reach the cluster with "
                          "your AWS credentials, no kubeconfig needed)"),)
    texts = BackendTexts(label="EKS", job="TrainJob name (NAMESPACE/NAME for a team's job)",
                         dry_run="the TrainJob manifest",
                         time_limit="the TrainJob's activeDeadlineSeconds",
                         env="the trainer container")

    def connect(self) -> TrainJobClient:
        session = self.session
        return trainjob_client(self.outputs.get(OutputKey.EKS_TRAINING_NAMESPACE),
                               session=session, region=session.region_name,
                               cluster_name=self.outputs.get(OutputKey.EKS_CLUSTER_NAME),
                               context=self.option("kube_context"))

    # --- pools -----------------------------------------------------------------------

    def is_main(self, pool: PoolInfo | None) -> bool:
        """Whether ``pool`` is the stack's main pool (the first of its ``Pools`` output, or
        its only pool); ``None`` (no pool chosen) counts as the main pool."""
        return pool is None or pool.name == self.outputs.pools()[0].name

    def pool_spec(self, pool: PoolInfo | None) -> InstanceSpec:
        """Catalog entry of ``pool``'s instance type (:meth:`StackOutputs.pool_spec`).

        Raises:
            CliError: (STACK) a type this CLI's catalogs lack (a newer stack).
        """
        return self.outputs.pool_spec(pool)

    def pool_runtime(self, pool: PoolInfo | None) -> str:
        """The ClusterTrainingRuntime of ``pool``'s jobs: the stack's (output
        ``EksTrainingRuntimeName``) for the main pool, the pool's own for another
        (:func:`~trn_ultracluster.orchestrators.eks.pools.pool_runtime_name`)."""
        if self.is_main(pool):
            return self.outputs.get(OutputKey.EKS_TRAINING_RUNTIME)
        assert pool is not None
        return pool_runtime_name(pool.name)

    def pool_selector(self, pool: PoolInfo | None) -> dict[str, str] | None:
        """Node labels a job of ``pool`` requires besides its runtime's:
        ``{"trn-ultracluster/pool": <name>}`` for a pool other than the main one; ``None``
        for the main pool, whose runtime selects its nodes and whose nodes carry the label
        only on a stack configured with ``pools`` (module doc)."""
        if self.is_main(pool):
            return None
        assert pool is not None
        return {POOL_LABEL: pool.name}

    def pool_image(self, job: JobRequest) -> str:
        """The image of ``job``: the image of its pool (``PoolInfo.image_uri``: the pool's
        Neuron stack's) when the job has the stack's default image (``TrainingImageUri``, what
        ``submit`` gives without ``--image``), else the job's own (``--image``)."""
        default = self.outputs.values.get(OutputKey.TRAINING_IMAGE_URI.value)
        if job.pool is not None and job.pool.image_uri and job.image == default:
            return job.pool.image_uri
        return job.image

    def pool_nodes_selector(self, pool: PoolInfo) -> str:
        """The label selector of ``pool``'s nodes (``status --pool``): its node groups'
        :data:`NODEGROUP_LABEL` when the ``Pools`` output names them, else (a stack deployed
        before pools: its one pool) the instance type."""
        names = nodegroup_names(",".join(pool.node_groups))
        if names:
            return f"{NODEGROUP_LABEL} in ({','.join(names)})"
        if self.is_main(pool):
            return f"{INSTANCE_TYPE_LABEL}={pool.instance_type}"
        return f"{POOL_LABEL}={pool.name}"

    def job_pool(self, found: dict[str, Any]) -> str:
        """The pool of a TrainJob: its ``trn-ultracluster/pool`` label, else (submitted
        without a pool, or before pools) the main pool's name."""
        labels = found.get("metadata", {}).get("labels") or {}
        return labels.get(POOL_LABEL) or self.outputs.pools()[0].name

    # --- teams and job handles ---------------------------------------------------------

    @property
    def training_namespace(self) -> str:
        """The stack's training namespace (output ``EksTrainingNamespace``)."""
        return self.outputs.get(OutputKey.EKS_TRAINING_NAMESPACE)

    def job_namespaces(self) -> list[str]:
        """Where jobs can be: the training namespace, then each team's (none without
        teams)."""
        teams = self.outputs.teams().teams
        return list(dict.fromkeys([self.training_namespace,
                                   *(t.namespace for t in teams if t.namespace)]))

    def handle(self, namespace: str, name: str) -> str:
        """A job's handle: its name in the training namespace, ``<namespace>/<name>``
        elsewhere (Kubernetes names hold no ``/``)."""
        return name if namespace == self.training_namespace else f"{namespace}/{name}"

    def locate(self, handle: str) -> tuple[str, str]:
        """``(namespace, name)`` of a job handle: ``<namespace>/<name>``, or a bare name,
        which on a stack with teams is looked up in every namespace of
        :meth:`job_namespaces`.

        Raises:
            CliError: (USAGE) a handle of more than one ``/``; a bare name found in several
                namespaces (the message lists them). (CLUSTER) a bare name found nowhere on
                a stack with teams, or the API server failed.
        """
        if "/" in handle:
            namespace, _, name = handle.partition("/")
            if not namespace or not name or "/" in name:
                raise CliError(f"job {handle!r} is not NAME or NAMESPACE/NAME",
                               "`status` lists the jobs with their handles")
            return namespace, name
        namespaces = self.job_namespaces()
        if len(namespaces) == 1:
            return namespaces[0], handle
        found = [ns for ns in namespaces if self.client.find(handle, ns) is not None]
        if len(found) == 1:
            return found[0], handle
        if not found:
            raise CliError(f"no TrainJob {handle} in namespaces {', '.join(namespaces)}",
                           "`status` lists the jobs with their handles", ExitCode.CLUSTER)
        raise CliError(f"TrainJob {handle} is in several namespaces: "
                       + ", ".join(f"{ns}/{handle}" for ns in found),
                       "name one of them as NAMESPACE/NAME")

    def placement(self, team: TeamInfo | None,
                  priority: PriorityClassInfo | None) -> tuple[str, dict[str, str]]:
        """The namespace and Kueue labels of a job of ``team`` at ``priority``: the team's
        namespace, ``kueue.x-k8s.io/queue-name`` = its LocalQueue and
        ``kueue.x-k8s.io/priority-class`` = the class's WorkloadPriorityClass; without a team,
        the training namespace and no labels.

        Raises:
            CliError: (STACK) the stack names no namespace or queue for the team.
        """
        if team is None:
            return self.training_namespace, {}
        if not team.namespace or not team.queue:
            raise CliError(f"the stack's Teams output gives team {team.name} no namespace or "
                           "Kueue queue", "redeploy the stack with this version",
                           ExitCode.STACK)
        labels = {KUEUE_QUEUE_LABEL: team.queue}
        if priority is not None:
            labels[KUEUE_PRIORITY_LABEL] = priority.scheduled_as
        return team.namespace, labels

    def team_status(self, teams: TeamsInfo) -> list[str]:
        """Each team's use of its ClusterQueue's quota per pool and its jobs waiting for
        quota (:func:`~trn_ultracluster.cli.backends.kueue.team_status`)."""
        return team_status(teams, KueueClient(self.client), PoolResolver(self.outputs.pools()))

    teams_applied_by = "Kueue's ClusterQueues, LocalQueues and WorkloadPriorityClasses"
    """The stack's resources that carry the teams (``teams --apply`` names them)."""

    def apply_teams(self, teams: TeamsInfo, *, dry_run: bool = False) -> list[str]:
        """Refused: the teams are resources of the stack's template, which ``cdk deploy``
        updates (nothing on the cluster waits for a lifecycle script).

        Raises:
            CliError: (USAGE) always.
        """
        raise CliError(f"teams --apply is for hyperpod-slurm: on {self.name} `cdk deploy` "
                       f"applies the teams itself ({self.teams_applied_by}, resources of the "
                       "stack), so there is nothing to apply",
                       "change `teams` or `scheduling` in the configuration and deploy")

    def usage(self, period: Period, teams: TeamsInfo) -> list[UsageRecord]:
        """Each job's use of its pool inside ``period``, from the Workloads of the team
        namespaces (:func:`~trn_ultracluster.cli.backends.kueue.usage_records`; a pod's or a
        Job's Workload counted for its TrainJob: :func:`~trn_ultracluster.cli.backends.kueue.
        owners_of`)."""
        kueue = KueueClient(self.client)
        workloads = workloads_by_namespace(teams, kueue)
        owners = {ns: owners_of(kueue, ns, found) for ns, found in workloads.items()}
        return usage_records(teams, workloads, period, PoolResolver(self.outputs.pools()),
                             owners)

    # --- jobs --------------------------------------------------------------------------

    def render(self, job: JobRequest) -> RenderedJob:
        import yaml

        pool = job.pool
        namespace, labels = self.placement(job.team, job.priority)
        manifest = train_job(replace(job, image=self.pool_image(job)),
                             spec=self.pool_spec(pool), namespace=namespace,
                             runtime=self.pool_runtime(pool),
                             pool_selector=self.pool_selector(pool))
        manifest["metadata"]["labels"].update(labels)
        return RenderedJob(job, yaml.safe_dump(manifest, sort_keys=False), manifest)

    def submit(self, job: RenderedJob) -> str:
        self.client.create(job.payload)
        return self.handle(job.payload["metadata"]["namespace"], job.job.name)

    def status(self, job: str | None, pool: PoolInfo | None = None) -> list[str]:
        """Lines of one TrainJob or every one (of the training and team namespaces); with
        ``pool``, only the pool's (:meth:`job_pool`) and then its nodes with their
        readiness."""
        client = self.client
        if job:
            namespace, name = self.locate(job)
            jobs = [(namespace, client.get(name, namespace))]
        else:
            jobs = [(ns, found) for ns in self.job_namespaces() for found in client.list(ns)]
        if pool is not None:
            jobs = [(ns, found) for ns, found in jobs if self.job_pool(found) == pool.name]
        lines = []
        for namespace, found in jobs:
            trainer = found.get("spec", {}).get("trainer", {})
            code = found["metadata"].get("annotations", {}).get(CODE_ANNOTATION)
            lines.append(f"{self.handle(namespace, found['metadata']['name']):<40} "
                         f"{job_state(found):<10} nodes={trainer.get('numNodes')}"
                         + (f" code={code[:12]}" if code else ""))
        if not jobs:
            where = f" of pool {pool.name}" if pool is not None else ""
            namespaces = self.job_namespaces()
            lines.append(f"no TrainJobs{where} in namespace{'s' if len(namespaces) > 1 else ''} "
                         f"{', '.join(namespaces)}")
        if pool is not None:
            nodes = client.nodes(self.pool_nodes_selector(pool))
            ready = sum(1 for _, ok in nodes if ok)
            lines.append(f"pool {pool.name} ({pool.instance_type}): {len(nodes)} nodes, "
                         f"{ready} ready")
            lines.extend(f"  {name:<40} {'Ready' if ok else 'NotReady'}" for name, ok in nodes)
        return lines

    def state(self, job: str) -> JobState:
        namespace, name = self.locate(job)
        state = job_state(self.client.get(name, namespace))
        return JobState(state, state in ENDED)

    def logs(self, job: str, tail_lines: int | None = None) -> str:
        namespace, name = self.locate(job)
        return str(self.client.logs(name, tail_lines, namespace))

    def cancel(self, job: str) -> None:
        namespace, name = self.locate(job)
        self.client.delete(name, namespace)

    def scale(self, nodes: int, pool: PoolInfo | None = None) -> str:
        """Scale ``pool``'s node groups (the main pool's without one:
        :func:`~trn_ultracluster.cli.backends.eks_scale.scale_eks_nodes`)."""
        result = scale_eks_nodes(self.session, self.outputs, nodes, pool,
                                 main=self.is_main(pool))
        names = result.nodegroups
        where = names[0] if len(names) == 1 else (
            f"{len(names)} node groups ("
            + ", ".join(f"{n}: {size}" for n, size in zip(names, result.sizes)) + ")")
        prefix = (f"pool {pool.name}: " if pool is not None and len(self.outputs.pools()) > 1
                  else "")
        return (f"{prefix}{where}: {result.before} -> {result.after} nodes "
                "(new nodes join in a few minutes; watch with kubectl get nodes)")
