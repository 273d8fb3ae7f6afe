"""Kueue objects of a ``hyperpod-eks`` stack of profiles/teams.yaml as HyperPod task governance
would hold them, and a fake of the Kubernetes client's core API (pods and their logs).

The names are task governance's (``orchestrators/hyperpod_eks/task_governance.py``: namespace
``hyperpod-ns-<team>``, LocalQueue ``...-localqueue``, ClusterQueue ``...-clusterqueue``,
WorkloadPriorityClass ``<class>-priority``); flavors named by ``ml.`` instance type and the
ClusterQueues ``hyperpod-ns-idle-resource-sharing-cq-<n>`` beside the teams' are field
reports, not stated by AWS. The Workloads are Kueue v0.19.2's for a pod (``pod-<pod>-<hash>``,
owned by the pod, one pod set ``main`` of one pod: ``pkg/controller/jobs/pod``,
``constructPodSet``) and for a Job (``job-<job>-<hash>``, owned by the Job), built from
:func:`tests.cli.backends.kueue_objects.workload` and checked against the vendored CRDs by the
tests. None was captured from a cluster.
"""

from __future__ import annotations

import copy
from types import SimpleNamespace
from typing import Any

from tests.cli.backends.kueue_objects import cluster_queue, workload
from tests.config import load
from trn_ultracluster.contracts.teams import TeamsInfo, teams_info
from trn_ultracluster.orchestrators.hyperpod_eks import task_governance as tg

ML_FLAVORS = {"trn1": "ml.trn1.32xlarge", "cpu": "ml.m7i.8xlarge"}
"""Pool of profiles/teams.yaml -> the flavor task governance names by its ``ml.`` type."""
IDLE_QUEUE = "hyperpod-ns-idle-resource-sharing-cq-1"
SELECTOR = {"node.kubernetes.io/instance-type": "ml.trn1.32xlarge",
            "sagemaker.amazonaws.com/node-health-status": "Schedulable"}
"""The node selector of the stack's HyperPod runtime (``hyperpod_eks/cluster.py``)."""


def hyperpod_teams() -> TeamsInfo:
    """The ``Teams`` output of profiles/teams.yaml on ``hyperpod-eks``, as the stack writes it
    (task governance's names)."""
    config = load({"config": "profiles/teams.yaml", "orchestrator": "hyperpod-eks"}).config
    classes = config.scheduling.priority_classes
    return teams_info(config.team_list, classes, config.scheduling.preemption,
                      tg.team_details(config.team_list), tg.priority_class_names(classes))


def _retarget(obj: dict[str, Any], team: str) -> dict[str, Any]:
    """An object of :mod:`kueue_objects` (named for ``eks``) renamed for task governance:
    namespace, queues, flavors, priority classes (a copy)."""
    obj = copy.deepcopy(obj)
    spec, status = obj.get("spec", {}), obj.get("status", {})
    if obj["kind"] == "ClusterQueue":
        obj["metadata"]["name"] = tg.cluster_queue(team)
        spec["namespaceSelector"] = {"matchLabels": {
            "kubernetes.io/metadata.name": tg.team_namespace(team)}}
        for entry in (*spec["resourceGroups"][0]["flavors"], *status["flavorsUsage"]):
            entry["name"] = ML_FLAVORS[entry["name"]]
        status["flavorsReservation"] = copy.deepcopy(status["flavorsUsage"])
        return obj
    obj["metadata"]["namespace"] = tg.team_namespace(team)
    spec["queueName"] = tg.local_queue(team)
    spec["priorityClassRef"]["name"] = tg.priority_class_name(spec["priorityClassRef"]["name"])
    spec["podSets"][0]["name"] = "main"
    spec["podSets"][0]["template"]["spec"]["nodeSelector"] = dict(SELECTOR)
    for assignment in (status.get("admission") or {}).get("podSetAssignments", []):
        assignment["name"] = "main"
        assignment["flavors"] = {r: ML_FLAVORS["trn1"] for r in assignment["flavors"]}
    if "admission" in status:
        status["admission"]["clusterQueue"] = tg.cluster_queue(team)
    return obj


def pod_name(job: str, index: int) -> str:
    """The name of pod ``index`` of a TrainJob's JobSet: ``<job>-node-0-<index>-<suffix>``."""
    return f"{job}-node-0-{index}-x7k{index}p"


def owned_by(obj: dict[str, Any], kind: str, name: str) -> dict[str, Any]:
    """A Workload made for pod or Job ``name`` (``kind``), named as Kueue names it."""
    api = {"Pod": "v1", "Job": "batch/v1"}[kind]
    obj["metadata"]["name"] = f"{kind.lower()}-{name}-5c2e1"
    obj["metadata"]["ownerReferences"] = [{"apiVersion": api, "kind": kind, "name": name,
                                           "uid": f"uid-{name}", "controller": True,
                                           "blockOwnerDeletion": True}]
    obj["metadata"]["labels"] = {"kueue.x-k8s.io/job-uid": f"uid-{name}"}
    return obj


def pod_workload(team: str, job: str, index: int, **kwargs: Any) -> dict[str, Any]:
    """The Workload of pod ``index`` of TrainJob ``job`` (``kwargs``: as
    :func:`~tests.cli.backends.kueue_objects.workload`, one node)."""
    return owned_by(_retarget(workload(team, job, 1, **kwargs), team), "Pod",
                    pod_name(job, index))


def recorded_workloads() -> dict[str, list[dict[str, Any]]]:
    """The Workloads of both team namespaces on 2026-11-20.

    research: ``wide`` 2 nodes, a Workload per pod: pod 0 admitted 10:00, pod 1 at 10:30,
    both finished 12:00 (3.5 node-hours); ``late`` 2 nodes: pod 0 admitted 11:00 and running,
    pod 1 waiting for quota; ``gang`` 2 nodes, one Workload of its Job (as with the
    ``batch/job`` integration), admitted 09:00 and running. platform: ``solo`` 1 node, its
    pod admitted 09:30 and running."""
    wide = dict(priority="experiment", created="2026-11-20T09:55:00Z",
                finished="2026-11-20T12:00:00Z")
    late = dict(priority="experiment", created="2026-11-20T10:59:00Z")
    return {
        "hyperpod-ns-research": [
            pod_workload("research", "wide", 0, admitted="2026-11-20T10:00:00Z", **wide),
            pod_workload("research", "wide", 1, admitted="2026-11-20T10:30:00Z", **wide),
            pod_workload("research", "late", 0, admitted="2026-11-20T11:00:00Z", **late),
            pod_workload("research", "late", 1, **late,
                         pending="couldn't assign flavors to pod set main: insufficient unused "
                                 "quota for aws.amazon.com/neuron in flavor ml.trn1.32xlarge, "
                                 "16 more needed"),
            owned_by(_retarget(workload("research", "gang", 2, priority="experiment",
                                        created="2026-11-20T08:59:00Z",
                                        admitted="2026-11-20T09:00:00Z"), "research"),
                     "Job", "gang-node-0"),
        ],
        "hyperpod-ns-platform": [
            pod_workload("platform", "solo", 0, priority="training",
                         created="2026-11-20T09:29:00Z", admitted="2026-11-20T09:30:00Z"),
        ],
    }


def recorded_pods() -> dict[str, list[tuple[str, dict[str, str]]]]:
    """Namespace -> ``(pod, labels)`` of the recorded Workloads' pods (JobSet's and the Job
    controller's labels)."""
    pods: dict[str, list[tuple[str, dict[str, str]]]] = {}
    for namespace, found in recorded_workloads().items():
        for obj in found:
            owner = obj["metadata"]["ownerReferences"][0]
            if owner["kind"] == "Pod":
                job, index = owner["name"].split("-node-0-")[0], owner["name"].split("-")[-2]
                pods.setdefault(namespace, []).append((owner["name"], pod_labels(job, index)))
            else:
                job = owner["name"].removesuffix("-node-0")
                pods.setdefault(namespace, []).extend(
                    (pod_name(job, i), pod_labels(job, str(i))) for i in range(2))
    return pods


def pod_labels(job: str, index: str) -> dict[str, str]:
    """The labels a pod of TrainJob ``job`` carries (those the CLI reads)."""
    return {"jobset.sigs.k8s.io/jobset-name": job,
            "batch.kubernetes.io/job-name": f"{job}-node-0",
            "batch.kubernetes.io/job-completion-index": index}


def recorded_queues() -> dict[str, dict[str, Any]]:
    """The teams' ClusterQueues as seen at 11:30 (research uses 48 of its 32 chips, 16
    borrowed: ``late``'s pod 0 and ``gang``; platform 16 of 16: ``solo``) and an
    idle-resource-sharing ClusterQueue, which the CLI must not read."""
    queues = {
        tg.cluster_queue("research"): _retarget(cluster_queue("research", 32, False, {
            "aws.amazon.com/neuron": ("48", "16"), "vpc.amazonaws.com/efa": ("24", "8")},
            2, 1), "research"),
        tg.cluster_queue("platform"): _retarget(cluster_queue("platform", 16, True, {
            "aws.amazon.com/neuron": ("16", "0"), "vpc.amazonaws.com/efa": ("8", "0")},
            1, 0), "platform"),
    }
    idle = _retarget(cluster_queue("idle", 16, False, {}, 0, 0), "idle")
    idle["metadata"]["name"] = IDLE_QUEUE
    return {**queues, IDLE_QUEUE: idle}


class FakeCore:
    """The core-API calls the CLI makes: pods by label selector (``k=v,...`` or ``k``: the
    key exists) and their logs. A TrainJob created in ``custom`` has pods
    :func:`pod_name` 0..numNodes-1.

    Attributes:
        pods: namespace -> ``(name, labels)`` besides those of the created TrainJobs.
        logs: ``(namespace, pod)`` -> log bytes.
        selectors: ``(namespace, selector)`` of each pod listing.
    """

    def __init__(self, custom: Any, pods: dict[str, list[tuple[str, dict[str, str]]]]) -> None:
        self.custom, self.pods = custom, pods
        self.logs: dict[tuple[str, str], bytes] = {}
        self.selectors: list[tuple[str, str]] = []

    def _all(self, namespace: str) -> list[tuple[str, dict[str, str]]]:
        made = [(pod_name(name, i), pod_labels(name, str(i)))
                for (ns, name), job in self.custom.trainjobs.items() if ns == namespace
                for i in range(job["spec"]["trainer"]["numNodes"])]
        return [*self.pods.get(namespace, []), *made]

    def list_namespaced_pod(self, namespace: str, label_selector: str) -> Any:
        self.selectors.append((namespace, label_selector))
        terms = [t.partition("=") for t in label_selector.split(",")]
        items = [SimpleNamespace(metadata=SimpleNamespace(name=name, labels=labels))
                 for name, labels in self._all(namespace)
                 if all(k in labels and (not eq or labels[k] == v) for k, eq, v in terms)]
        return SimpleNamespace(items=items)

    def read_namespaced_pod_log(self, pod: str, namespace: str, container: str,
                                **_: Any) -> Any:
        return SimpleNamespace(data=self.logs[(namespace, pod)], release_conn=lambda: None)
