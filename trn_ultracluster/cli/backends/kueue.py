"""Teams on Kueue, as the job CLI reads them: each team's use of its ClusterQueue's quota, the
jobs waiting for quota (``status``), and per-job usage from Workloads (``usage``).

Every name comes from :class:`~trn_ultracluster.contracts.teams.TeamInfo` (``namespace``,
``queue``, ``cluster_queue``), so any EKS-based backend whose stack writes them reuses this
module unchanged; a flavor is mapped to a pool by :class:`PoolResolver`.

What is read (``kueue.x-k8s.io/v1beta2``; fields from the CRDs vendored in
``tests/fixtures/kueue-0.19.2``):

- ClusterQueue ``spec.resourceGroups[].flavors[].resources[].nominalQuota`` (the quota),
  ``status.flavorsUsage`` ("the used quotas, by flavor, currently in use by the workloads
  admitted in this ClusterQueue") and ``status.flavorsReservation`` (reserved, also by
  workloads not admitted yet), each ``[{name, resources: [{name, total, borrowed}]}]``.
- Workload ``metadata.ownerReferences`` (the TrainJob, or a pod or Job: below),
  ``spec.podSets[].count`` and their pod templates' ``nodeSelector``,
  ``spec.priorityClassRef.name``, ``status.admission.
  podSetAssignments[].{flavors, count}``, ``status.accumulatedPastExecutionTimeSeconds``
  ("the total time, in seconds, the workload spent in Admitted state, in the previous Admit -
  Evict cycles"), ``status.conditions``: ``Admitted`` (``True`` since the current admission;
  ``False`` since an eviction), ``Finished`` (set once, ``True``, when the job ended:
  ``pkg/workload/finish/finish.go``, which leaves ``Admitted`` as it was), ``QuotaReserved``
  (``False`` with the reason a pending Workload waits: Kueue 0.20 reports ``WaitingForQuota``,
  ``ExceedsMaxQuota``, ... there, CHANGELOG-0.20 "UnadmittedWorkloadsObservability").

A Workload exists as long as its TrainJob does (owner reference; Kueue deletes neither while
the job exists, by default): ``cancel`` deletes a job and with it its record, so ``usage``
counts the jobs that still exist.

Workloads of a Job or of a pod (``hyperpod-eks``: task governance's Kueue does not manage
TrainJobs; :mod:`~trn_ultracluster.cli.backends.hyperpod_eks` says why): Kueue names a
Workload ``<kind>-<owner name>-<hash>`` and owns it by that object
(``jobframework.GenerateWorkloadNamePrefix``, Kueue v0.19.2), so a Job's Workload is
``job-<job>-...`` with ``numNodes`` pods and a pod's is ``pod-<pod>-...`` with one
(``pkg/controller/jobs/pod``: one pod set, ``count: 1``). Such a Workload is counted for its
TrainJob, found from the labels of the namespace's pods (:meth:`KueueClient.job_owners`), else
under its own owner's name; a job whose pods are Workloads of their own counts once in
``usage``, each pod one node for the time it held quota (:func:`usage_records`), and
``status`` lists each waiting pod. These Workloads go with their pods and Jobs: a JobSet
restart (``hyperpod.job_max_restarts``) deletes them, and the usage of the attempts before it
with them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from trn_ultracluster.cli.backends.trainjob import JOBSET_NAME_LABEL
from trn_ultracluster.cli.usage import Period, UsageRecord
from trn_ultracluster.contracts.catalog import UnknownInstanceTypeError, get_any_instance
from trn_ultracluster.contracts.pools import POOL_LABEL, PoolInfo
from trn_ultracluster.orchestrators.eks.manifests import INSTANCE_TYPE_LABEL

if TYPE_CHECKING:
    from trn_ultracluster.cli.backends.trainjob import TrainJobClient
    from trn_ultracluster.contracts.teams import TeamInfo, TeamsInfo

__all__ = ["KUEUE_GROUP", "KUEUE_VERSION", "KueueClient", "Owners", "PoolResolver",
           "job_handle", "owners_of", "team_status", "usage_records", "workloads_by_namespace"]

KUEUE_GROUP, KUEUE_VERSION = "kueue.x-k8s.io", "v1beta2"
JOB_NAME_LABEL = "batch.kubernetes.io/job-name"
"""The Job controller's label of a Job's pods, the Job's name (kubernetes/kubernetes
``pkg/apis/batch/types.go``, ``JobNameLabel``)."""
CHILD_OWNERS = {("v1", "Pod"), ("batch/v1", "Job")}
"""``(apiVersion, kind)`` of the owners of Workloads made for a TrainJob's pods or Jobs."""
Owners = Mapping[tuple[str, str], str]
"""``(kind, name)`` of a pod or Job -> its TrainJob (:meth:`KueueClient.job_owners`)."""


class KueueClient:
    """Kueue objects through the Kubernetes client of a :class:`TrainJobClient` (its
    ``custom`` API and its error handling)."""

    def __init__(self, client: TrainJobClient) -> None:
        self.client = client

    def cluster_queue(self, name: str) -> dict[str, Any]:
        """ClusterQueue ``name`` (cluster scoped).

        Raises:
            CliError: (CLUSTER) as :meth:`TrainJobClient.call` (404: no such queue).
        """
        return self.client.call(f"get ClusterQueue {name}",
                                self.client.custom.get_cluster_custom_object,
                                KUEUE_GROUP, KUEUE_VERSION, "clusterqueues", name)

    def workloads(self, namespace: str) -> list[dict[str, Any]]:
        """The Workloads of ``namespace``."""
        found = self.client.call(f"list Workloads in {namespace}",
                                 self.client.custom.list_namespaced_custom_object,
                                 KUEUE_GROUP, KUEUE_VERSION, namespace, "workloads")
        return list(found.get("items", []))

    def job_owners(self, namespace: str) -> dict[tuple[str, str], str]:
        """``("Pod", pod)`` and ``("Job", job)`` -> TrainJob name, for each pod of
        ``namespace`` that carries the JobSet label :data:`~trn_ultracluster.cli.backends.
        trainjob.JOBSET_NAME_LABEL` (= its TrainJob's name) and for the Job it names in
        :data:`JOB_NAME_LABEL`.

        Raises:
            CliError: (CLUSTER) as :meth:`TrainJobClient.call`.
        """
        found = self.client.call(f"list pods in {namespace}",
                                 self.client.core.list_namespaced_pod, namespace,
                                 label_selector=JOBSET_NAME_LABEL)
        owners: dict[tuple[str, str], str] = {}
        for pod in found.items:
            labels = pod.metadata.labels or {}
            job = labels.get(JOBSET_NAME_LABEL)
            if not job:
                continue
            owners[("Pod", pod.metadata.name)] = job
            if labels.get(JOB_NAME_LABEL):
                owners[("Job", labels[JOB_NAME_LABEL])] = job
        return owners


class PoolResolver:
    """Which pool a flavor or a Workload's pods run on.

    A flavor named after a pool is that pool (the ``eks`` stack names them so); a flavor
    named after a pool's EC2 or SageMaker HyperPod ``ml.`` instance type is that pool.
    Without a flavor (a Workload evicted or not admitted yet), the pods' ``nodeSelector``:
    its ``trn-ultracluster/pool``, else its instance type.
    """

    def __init__(self, pools: Sequence[PoolInfo]) -> None:
        self.by_name: dict[str, str] = {}
        for pool in reversed(pools):  # the first pool of a type wins
            self.by_name[pool.instance_type] = pool.name
            try:
                ml_name = get_any_instance(pool.instance_type).hyperpod_instance_type
            except UnknownInstanceTypeError:
                ml_name = None
            if ml_name:
                self.by_name[ml_name] = pool.name
        self.by_name.update({p.name: p.name for p in pools})

    def flavor(self, flavor: str) -> str:
        """The pool of ``flavor``; ``""`` when no pool matches."""
        return self.by_name.get(flavor, "")

    def workload(self, workload: Mapping[str, Any]) -> str:
        """The pool a Workload's pods were admitted to or ask for; ``""`` when unknown."""
        for assignment in _assignments(workload):
            for flavor in (assignment.get("flavors") or {}).values():
                if self.flavor(flavor):
                    return self.flavor(flavor)
        for pod_set in workload.get("spec", {}).get("podSets") or []:
            selector = (pod_set.get("template", {}).get("spec", {}).get("nodeSelector") or {})
            if selector.get(POOL_LABEL):
                return str(selector[POOL_LABEL])
            if selector.get(INSTANCE_TYPE_LABEL):
                return self.flavor(str(selector[INSTANCE_TYPE_LABEL]))
        return ""


def _assignments(workload: Mapping[str, Any]) -> list[dict[str, Any]]:
    admission = workload.get("status", {}).get("admission") or {}
    return list(admission.get("podSetAssignments") or [])


def _condition(workload: Mapping[str, Any], kind: str) -> dict[str, Any] | None:
    return next((c for c in workload.get("status", {}).get("conditions") or []
                 if c.get("type") == kind), None)


def _is_true(workload: Mapping[str, Any], kind: str) -> bool:
    found = _condition(workload, kind)
    return found is not None and found.get("status") == "True"


def _time(text: str | None) -> datetime | None:
    """An RFC 3339 time of the API (``2026-11-20T10:00:00Z``), timezone-aware."""
    if not text:
        return None
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _owner(workload: Mapping[str, Any]) -> Mapping[str, Any]:
    """The Workload's controlling owner reference (else its first; else its metadata)."""
    meta = workload.get("metadata", {})
    refs = meta.get("ownerReferences") or []
    return next((o for o in refs if o.get("controller")), None) or next(iter(refs), meta)


def _of_child(workload: Mapping[str, Any]) -> bool:
    """Whether a Workload was made for a pod or a Job (:data:`CHILD_OWNERS`), not a TrainJob."""
    owner = _owner(workload)
    return (owner.get("apiVersion"), owner.get("kind")) in CHILD_OWNERS


def job_handle(workload: Mapping[str, Any], owners: Owners | None = None) -> str:
    """``<namespace>/<job>`` of the job that owns a Workload (its TrainJob; for a pod's or a
    Job's Workload, the TrainJob ``owners`` gives, else that pod or Job), else of the Workload
    itself: the handle ``status``/``logs``/``cancel`` take on a stack with teams."""
    owner = _owner(workload)
    name = str(owner.get("name", ""))
    if owners and _of_child(workload):
        name = owners.get((str(owner.get("kind")), name), name)
    return f"{workload.get('metadata', {}).get('namespace', '')}/{name}"


def owners_of(kueue: KueueClient, namespace: str,
              workloads: Iterable[Mapping[str, Any]]) -> dict[tuple[str, str], str]:
    """:meth:`KueueClient.job_owners` of ``namespace`` when one of ``workloads`` was made for
    a pod or a Job, else ``{}`` (no call: TrainJobs' Workloads name their TrainJob)."""
    if any(_of_child(w) for w in workloads):
        return kueue.job_owners(namespace)
    return {}


def _nodes(workload: Mapping[str, Any]) -> int:
    """Pods of the Workload, one per node on this stack's runtimes: the admitted count,
    else the requested one."""
    assigned = _assignments(workload)
    if assigned:
        return sum(int(a.get("count") or 0) for a in assigned)
    return sum(int(p.get("count") or 0) for p in workload.get("spec", {}).get("podSets") or [])


def _usage_of(workload: Mapping[str, Any], period: Period) -> float:
    """Seconds the Workload held quota inside ``period``.

    The current admission runs from the ``Admitted=True`` transition to the ``Finished``
    transition (or now). Earlier admissions (before evictions) are known only as a total,
    ``accumulatedPastExecutionTimeSeconds``, somewhere between the Workload's creation and
    the end of the last of them (the current admission's start, or the ``Admitted=False``
    transition of an evicted Workload): that total counts in full when this window lies in
    the period, else at most the window's overlap with it (an estimate)."""
    admitted = _condition(workload, "Admitted")
    finished = _condition(workload, "Finished")
    seconds = 0.0
    since = _time((admitted or {}).get("lastTransitionTime"))
    if admitted is not None and admitted.get("status") == "True" and since is not None:
        end = _time(finished.get("lastTransitionTime")) if (
            finished is not None and finished.get("status") == "True") else None
        seconds += period.clip(since, end)
    past = float(workload.get("status", {}).get("accumulatedPastExecutionTimeSeconds") or 0)
    created = _time(workload.get("metadata", {}).get("creationTimestamp"))
    if past and created is not None and since is not None:
        seconds += min(past, period.clip(created, since))
    return seconds


def usage_records(teams: TeamsInfo, workloads: Mapping[str, Iterable[Mapping[str, Any]]],
                  period: Period, pools: PoolResolver,
                  owners: Mapping[str, Owners] | None = None) -> list[UsageRecord]:
    """One :class:`UsageRecord` per job and pool that held quota inside ``period``.

    A job's Workloads (one of its TrainJob; or one per pod, or per Job, on ``hyperpod-eks``)
    make one record: ``nodes`` the nodes they held (a pod's Workload: 1, one pod per node on
    this stack's runtimes), ``seconds`` their node-seconds / ``nodes``, so that nodes x seconds
    is what each pod held, though pods admitted at different times held their node for
    different times.

    Args:
        teams: the stack's teams; a Workload counts for the team whose ``namespace`` holds it.
        workloads: namespace -> its Workloads (:meth:`KueueClient.workloads`).
        period: the period (times are clipped to it).
        pools: flavor -> pool.
        owners: namespace -> its pods' and Jobs' TrainJobs (:func:`owners_of`); ``None``:
            each pod's or Job's Workload counts under its own name.
    """
    held: dict[tuple[str, str, str], list[tuple[int, float]]] = {}
    for team in teams.teams:
        mine = (owners or {}).get(team.namespace)
        for workload in workloads.get(team.namespace, ()):
            seconds = _usage_of(workload, period)
            if seconds > 0:
                key = (team.name, pools.workload(workload), job_handle(workload, mine))
                held.setdefault(key, []).append((_nodes(workload), seconds))
    records = []
    for (team_name, pool, job), parts in held.items():
        nodes = sum(n for n, _ in parts)
        seconds = (sum(n * s for n, s in parts) / nodes if nodes
                   else max(s for _, s in parts))
        records.append(UsageRecord(team_name, pool, job, nodes, seconds))
    return records


def _short(resource: str) -> str:
    """``aws.amazon.com/neuron`` -> ``neuron``."""
    return resource.rsplit("/", 1)[-1]


def _amounts(entries: Iterable[Mapping[str, Any]], key: str) -> dict[str, dict[str, str]]:
    """``[{name: flavor, resources: [{name, <key>}]}]`` -> flavor -> resource -> value."""
    return {f.get("name", ""): {r.get("name", ""): str(r.get(key, "0"))
                                for r in f.get("resources") or []}
            for f in entries or []}


def _quantity(text: str) -> Decimal:
    from kubernetes.utils.quantity import parse_quantity

    return parse_quantity(text)


def _flavor_line(flavor: str, pool: str, quota: Mapping[str, str], used: Mapping[str, str],
                 reserved: Mapping[str, str], borrowed: Mapping[str, str],
                 nodes: int | None) -> str:
    """``  trn1 (quota 2 nodes): neuron 16/32 (+0 borrowed), efa 8/16, ...``: each resource
    with a quota or a use, in use / quota, reserved and borrowed amounts where not 0."""
    parts = []
    for resource, total in quota.items():
        in_use = used.get(resource, "0")
        if _quantity(total) == 0 and _quantity(reserved.get(resource, "0")) == 0:
            continue
        text = f"{_short(resource)} {in_use}/{total}"
        if _quantity(reserved.get(resource, "0")) > _quantity(in_use):
            text += f" (reserved {reserved[resource]})"
        if _quantity(borrowed.get(resource, "0")) > 0:
            text += f" (+{borrowed[resource]} borrowed)"
        parts.append(text)
    where = flavor if pool in ("", flavor) else f"{flavor} (pool {pool})"
    size = f" quota {nodes} node{'s' if nodes != 1 else ''}" if nodes is not None else ""
    return f"  {where}{size}: {', '.join(parts) or 'no quota, nothing in use'}"


def _waiting(workload: Mapping[str, Any], owners: Owners) -> str:
    """``research/job-b [experiment] 2 node(s): WaitingForQuota: <message>``; a pod's or a
    Job's Workload names it: ``research/job-b [...] 1 node(s) (pod job-b-node-0-1-x7k2p): ...``."""
    why = _condition(workload, "QuotaReserved") or _condition(workload, "Evicted") or {}
    reason = why.get("reason") or "Pending"
    message = " ".join(str(why.get("message") or "").split())
    priority = (workload.get("spec", {}).get("priorityClassRef") or {}).get("name")
    label = f" [{priority}]" if priority else ""
    owner = _owner(workload)
    part = (f" ({str(owner.get('kind', '')).lower()} {owner.get('name', '')})"
            if _of_child(workload) else "")
    return (f"    {job_handle(workload, owners)}{label} {_nodes(workload)} node(s){part}: "
            f"{reason}" + (f": {message[:200]}" if message else ""))


def _team_lines(team: TeamInfo, queue: Mapping[str, Any],
                waiting: Sequence[Mapping[str, Any]], pools: PoolResolver,
                owners: Owners) -> list[str]:
    status = queue.get("status") or {}
    quotas: dict[str, dict[str, str]] = {}
    for group in queue.get("spec", {}).get("resourceGroups") or []:
        quotas.update(_amounts(group.get("flavors"), "nominalQuota"))
    used = _amounts(status.get("flavorsUsage"), "total")
    reserved = _amounts(status.get("flavorsReservation"), "total")
    borrowed = _amounts(status.get("flavorsReservation"), "borrowed")
    lines = [f"team {team.name}: ClusterQueue {team.cluster_queue}, queue "
             f"{team.namespace}/{team.queue}; admitted {status.get('admittedWorkloads', 0)}, "
             f"pending {status.get('pendingWorkloads', 0)}"]
    for flavor, quota in quotas.items():
        pool = pools.flavor(flavor)
        info = team.quota(pool) if pool else None
        lines.append(_flavor_line(flavor, pool, quota, used.get(flavor, {}),
                                  reserved.get(flavor, {}), borrowed.get(flavor, {}),
                                  info.nodes if info else None))
    if waiting:
        lines.append("  waiting for quota:")
        lines.extend(_waiting(w, owners) for w in waiting)
    return lines


def team_status(teams: TeamsInfo, kueue: KueueClient,
                pools: PoolResolver) -> list[str]:
    """Per team: its ClusterQueue (``TeamInfo.cluster_queue``, read by name: no other
    ClusterQueue, such as task governance's ``hyperpod-ns-idle-resource-sharing-cq-<n>``, is
    read) with its use of its quota per flavor, and the jobs of its namespace waiting for
    quota, with Kueue's reason.

    Raises:
        CliError: (CLUSTER) a ClusterQueue, the Workloads or the pods cannot be read.
    """
    lines = []
    for team in teams.teams:
        waiting = [w for w in kueue.workloads(team.namespace)
                   if not _is_true(w, "Finished") and not _is_true(w, "Admitted")]
        lines.extend(_team_lines(team, kueue.cluster_queue(team.cluster_queue), waiting,
                                 pools, owners_of(kueue, team.namespace, waiting)))
    return lines


def workloads_by_namespace(teams: TeamsInfo,
                           kueue: KueueClient) -> dict[str, list[dict[str, Any]]]:
    """Each team namespace's Workloads (a namespace two teams share is read once)."""
    return {ns: kueue.workloads(ns) for ns in dict.fromkeys(t.namespace for t in teams.teams)}

