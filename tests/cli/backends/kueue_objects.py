"""Kueue objects of an ``eks`` stack of profiles/teams.yaml as the job CLI reads them, and a
fake of the Kubernetes client's custom-objects API that serves them.

The objects are written to the ``v1beta2`` CRDs (tests/fixtures/kueue-0.19.2; the tests
validate them there) in the shapes Kueue gives them: a TrainJob's Workload is named
``trainjob-<name>-<hash>`` and owned by the TrainJob (``GetWorkloadNameForOwnerWithGVK``), has
one pod set ``node`` of ``numNodes`` pods, and a pending one says why in ``QuotaReserved``
(``pkg/scheduler/flavorassigner/flavorassigner.go``: "couldn't assign flavors to pod set ...:
insufficient unused quota for ... in flavor ..., ... more needed"). They were not captured
from a live cluster.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any

from tests.cli.helpers import run
from trn_ultracluster.cli.usage import Period

from trn_ultracluster.contracts.teams import (
    PriorityClassInfo,
    TeamInfo,
    TeamQuotaInfo,
    TeamsInfo,
)

TEAMS = TeamsInfo(
    teams=(TeamInfo("research", True, "experiment", True, True,
                    (TeamQuotaInfo("trn1", 2, 64, 32), TeamQuotaInfo("cpu", 1, 0, 0)),
                    namespace="research", queue="research", cluster_queue="research"),
           TeamInfo("platform", False, "training", False, False,
                    (TeamQuotaInfo("trn1", 1, 32, 16), TeamQuotaInfo("cpu", 1, 0, 0)),
                    namespace="platform", queue="platform", cluster_queue="platform")),
    priority_classes=(PriorityClassInfo("training", 100, "training"),
                      PriorityClassInfo("experiment", 10, "experiment")),
    preemption="lower-priority")
"""The ``Teams`` output of profiles/teams.yaml on eks."""

POOLS = json.dumps([
    {"name": "trn1", "instance_type": "trn1.32xlarge", "accelerated": True,
     "nodes": {"min": 0, "desired": 3, "max": 4}, "neuron_stack": "xla",
     "image_uri": "123456789012.dkr.ecr.us-west-2.amazonaws.com/trn:abc",
     "node_groups": "trn1-ng", "capacity_type": "on-demand", "capacity_reservation_id": ""},
    {"name": "cpu", "instance_type": "m7i.8xlarge", "accelerated": False,
     "nodes": {"min": 0, "desired": 2, "max": 2}, "neuron_stack": "",
     "image_uri": "123456789012.dkr.ecr.us-west-2.amazonaws.com/trn:abc",
     "node_groups": "cpu-ng", "capacity_type": "on-demand", "capacity_reservation_id": ""}])
"""The ``Pools`` output of profiles/teams.yaml on eks."""

TRN1 = {"aws.amazon.com/neuron": "16", "vpc.amazonaws.com/efa": "8"}


def _flavor(name: str, quota: dict[str, str], limits: bool) -> dict[str, Any]:
    resources = []
    for resource, amount in quota.items():
        entry = {"name": resource, "nominalQuota": amount}
        if limits:
            entry.update(borrowingLimit="0", lendingLimit="0")
        resources.append(entry)
    return {"name": name, "resources": resources}


def cluster_queue(team: str, trn1_chips: int, limits: bool,
                  usage: dict[str, tuple[str, str]], admitted: int, pending: int,
                  ) -> dict[str, Any]:
    """The ClusterQueue of ``team`` (the stack's: quota per flavor) with a status: ``usage``
    resource -> (total, borrowed) on flavor ``trn1``."""
    trn1 = {"aws.amazon.com/neuron": str(trn1_chips), "vpc.amazonaws.com/efa": str(trn1_chips // 2),
            "cpu": str(trn1_chips * 8), "memory": f"{trn1_chips * 32}Gi"}
    cpu = {"aws.amazon.com/neuron": "0", "vpc.amazonaws.com/efa": "0", "cpu": "17",
           "memory": "65Gi"}
    used = [{"name": "trn1", "resources": [
                {"name": r, "total": usage.get(r, ("0", "0"))[0],
                 "borrowed": usage.get(r, ("0", "0"))[1]} for r in trn1]},
            {"name": "cpu", "resources": [{"name": r, "total": "0", "borrowed": "0"}
                                          for r in cpu]}]
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
        "metadata": {"name": team, "uid": f"cq-{team}", "resourceVersion": "812",
                     "finalizers": ["kueue.x-k8s.io/resource-in-use"]},
        "spec": {"cohortName": "trn-ultracluster",
                 "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": team}},
                 "preemption": {"withinClusterQueue": "LowerPriority",
                                "reclaimWithinCohort": "Any",
                                "borrowWithinCohort": {"policy": "Never"}},
                 "queueingStrategy": "BestEffortFIFO",
                 "flavorFungibility": {"whenCanBorrow": "MayStopSearch",
                                       "whenCanPreempt": "TryNextFlavor"},
                 "stopPolicy": "None",
                 "resourceGroups": [{"coveredResources": list(trn1),
                                     "flavors": [_flavor("trn1", trn1, limits),
                                                 _flavor("cpu", cpu, limits)]}]},
        "status": {"admittedWorkloads": admitted, "reservingWorkloads": admitted,
                   "pendingWorkloads": pending, "flavorsUsage": used, "flavorsReservation": used,
                   "conditions": [_condition("Active", "True", "Ready",
                                             "Can admit new workloads", "2026-11-01T08:00:00Z")]},
    }


def _condition(kind: str, status: str, reason: str, message: str, when: str) -> dict[str, Any]:
    return {"type": kind, "status": status, "reason": reason, "message": message,
            "lastTransitionTime": when, "observedGeneration": 1}


def _times(quantity: str, n: int) -> str:
    """``"65Gi"`` x 2 -> ``"130Gi"``."""
    number = quantity.removesuffix("Gi")
    return f"{int(number) * n}{quantity[len(number):]}"


def workload(team: str, job: str, nodes: int, *, priority: str, created: str,
             admitted: str | None = None, finished: str | None = None,
             evicted: str | None = None, past_seconds: int = 0, pending: str = "",
             pool: str = "trn1") -> dict[str, Any]:
    """The Workload of TrainJob ``job`` of ``team``: admitted at ``admitted`` (flavor of
    ``pool``), finished at ``finished``, evicted at ``evicted`` after ``past_seconds`` of
    earlier admission, or pending (``pending``: QuotaReserved's message)."""
    weight = {"training": 100, "experiment": 10}[priority]
    selector = {"node.kubernetes.io/instance-type": "trn1.32xlarge",
                "trn-ultracluster/pool": pool}
    requests = TRN1 if pool == "trn1" else {"cpu": "17", "memory": "65Gi"}
    conditions = []
    status: dict[str, Any] = {"conditions": conditions}
    if admitted is not None:
        conditions += [_condition("QuotaReserved", "True", "QuotaReserved",
                                  f"Quota reserved in ClusterQueue {team}", admitted),
                       _condition("Admitted", "True", "Admitted",
                                  "The workload is admitted", admitted)]
        status["admission"] = {"clusterQueue": team, "podSetAssignments": [{
            "name": "node", "count": nodes,
            "flavors": {r: pool for r in requests},
            "resourceUsage": {r: _times(v, nodes) for r, v in requests.items()}}]}
    if finished is not None:
        conditions.append(_condition("Finished", "True", "Succeeded",
                                     "TrainJob finished successfully", finished))
    if evicted is not None:
        conditions += [_condition("QuotaReserved", "False", "Pending",
                                  "couldn't assign flavors to pod set node: insufficient unused "
                                  "quota for aws.amazon.com/neuron in flavor trn1, 16 more "
                                  "needed", evicted),
                       _condition("Admitted", "False", "NoReservation",
                                  "The workload has no reservation", evicted),
                       _condition("Evicted", "True", "Preempted",
                                  "Preempted to accommodate a workload (UID: 7e1b) due to "
                                  "reclamation within the cohort", evicted)]
    if pending:
        conditions.append(_condition("QuotaReserved", "False", "WaitingForQuota", pending,
                                     created))
    if past_seconds:
        status["accumulatedPastExecutionTimeSeconds"] = past_seconds
    container = {"name": "node", "image": "trn:abc",
                 "resources": {"requests": dict(requests), "limits": dict(requests)}}
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
        "metadata": {"name": f"trainjob-{job}-3f9a2", "namespace": team, "uid": f"wl-{job}",
                     "creationTimestamp": created,
                     "labels": {"kueue.x-k8s.io/job-uid": f"tj-{job}"},
                     "ownerReferences": [{"apiVersion": "trainer.kubeflow.org/v1alpha1",
                                          "kind": "TrainJob", "name": job, "uid": f"tj-{job}",
                                          "controller": True, "blockOwnerDeletion": True}],
                     "finalizers": ["kueue.x-k8s.io/resource-in-use"]},
        "spec": {"active": True, "queueName": team, "priority": weight,
                 "priorityClassRef": {"group": "kueue.x-k8s.io",
                                      "kind": "WorkloadPriorityClass", "name": priority},
                 "podSets": [{"name": "node", "count": nodes, "template": {"spec": {
                     "nodeSelector": selector, "containers": [container],
                     "tolerations": [{"key": "aws.amazon.com/neuron", "operator": "Equal",
                                      "value": "true", "effect": "NoSchedule"}]}}}]},
        "status": status,
    }


def recorded_workloads() -> dict[str, list[dict[str, Any]]]:
    """The Workloads of both team namespaces on 2026-11-20.

    research: ``big`` 2 nodes admitted 10:00, finished 12:00 (4 node-hours); ``small`` 1
    node admitted 11:00, still running; ``waiting`` 2 nodes pending for quota. platform:
    ``prod`` 1 node admitted 09:00, still running; ``bumped`` 1 node evicted at 09:30
    after 1,800 s admitted (created 08:00)."""
    return {
        "research": [
            workload("research", "big", 2, priority="experiment", created="2026-11-20T09:55:00Z",
                     admitted="2026-11-20T10:00:00Z", finished="2026-11-20T12:00:00Z"),
            workload("research", "small", 1, priority="experiment",
                     created="2026-11-20T10:59:00Z", admitted="2026-11-20T11:00:00Z"),
            workload("research", "waiting", 2, priority="experiment",
                     created="2026-11-20T11:30:00Z",
                     pending="couldn't assign flavors to pod set node: insufficient unused "
                             "quota for aws.amazon.com/neuron in flavor trn1, 16 more needed"),
        ],
        "platform": [
            workload("platform", "prod", 1, priority="training", created="2026-11-20T08:59:00Z",
                     admitted="2026-11-20T09:00:00Z"),
            workload("platform", "bumped", 1, priority="experiment",
                     created="2026-11-20T08:00:00Z", evicted="2026-11-20T09:30:00Z",
                     past_seconds=1800),
        ],
    }


def recorded_queues() -> dict[str, dict[str, Any]]:
    """The ClusterQueues: research uses 48 of its 32 chips (16 borrowed: ``big`` and
    ``small`` as seen at 11:30), platform 16 of 16."""
    return {
        "research": cluster_queue("research", 32, False, {
            "aws.amazon.com/neuron": ("48", "16"), "vpc.amazonaws.com/efa": ("24", "8")}, 2, 1),
        "platform": cluster_queue("platform", 16, True, {
            "aws.amazon.com/neuron": ("16", "0"), "vpc.amazonaws.com/efa": ("8", "0")}, 1, 1),
    }


class FakeCustomObjects:
    """The custom-objects calls the CLI makes, on TrainJobs (per namespace), ClusterQueues
    and Workloads; every call is recorded as ``(method, namespace or None, plural, name)``."""

    def __init__(self, queues: dict[str, dict[str, Any]],
                 workloads: dict[str, list[dict[str, Any]]]) -> None:
        self.queues, self.workloads = queues, workloads
        self.trainjobs: dict[tuple[str, str], dict[str, Any]] = {}
        self.calls: list[tuple[str, str | None, str, str | None]] = []

    @staticmethod
    def _missing():
        from kubernetes.client.exceptions import ApiException

        return ApiException(status=404, reason="Not Found")

    def create_namespaced_custom_object(self, group, version, namespace, plural, body):
        self.calls.append(("create", namespace, plural, body["metadata"]["name"]))
        assert (group, version, plural) == ("trainer.kubeflow.org", "v1alpha1", "trainjobs")
        assert body["metadata"]["namespace"] == namespace
        self.trainjobs[(namespace, body["metadata"]["name"])] = {
            **body, "status": {"conditions": [{"type": "Complete", "status": "True"}]}}
        return body

    def get_namespaced_custom_object(self, group, version, namespace, plural, name):
        self.calls.append(("get", namespace, plural, name))
        if (namespace, name) not in self.trainjobs:
            raise self._missing()
        return self.trainjobs[(namespace, name)]

    def delete_namespaced_custom_object(self, group, version, namespace, plural, name):
        self.calls.append(("delete", namespace, plural, name))
        if self.trainjobs.pop((namespace, name), None) is None:
            raise self._missing()

    def list_namespaced_custom_object(self, group, version, namespace, plural):
        self.calls.append(("list", namespace, plural, None))
        if plural == "workloads":
            assert (group, version) == ("kueue.x-k8s.io", "v1beta2")
            return {"items": self.workloads.get(namespace, [])}
        return {"items": [j for (ns, _), j in self.trainjobs.items() if ns == namespace]}

    def get_cluster_custom_object(self, group, version, plural, name):
        self.calls.append(("get", None, plural, name))
        assert (group, version, plural) == ("kueue.x-k8s.io", "v1beta2", "clusterqueues")
        if name not in self.queues:
            raise self._missing()
        return self.queues[name]


def period(since: str, until: str) -> Period:
    """The period from ``since`` to ``until`` (``YYYY-MM-DDTHH:MM``, UTC)."""
    return Period(datetime.fromisoformat(since).replace(tzinfo=timezone.utc),
                  datetime.fromisoformat(until).replace(tzinfo=timezone.utc))


def usage_rows(capsys, args: list[str]) -> dict[tuple[str, str], dict[str, Any]]:
    """``usage --json`` on 2026-11-20 from 00:00 to 12:30 through the CLI (``args``: the
    outputs file and cluster): (team, pool) -> its row."""
    code, out, err = run(capsys, "usage", *args, "--since", "2026-11-20",
                         "--until", "2026-11-20T12:30", "--json")
    assert code == 0, err
    return {(r["team"], r["pool"]): r for r in json.loads(out)["usage"]}
