"""Kueue objects of the teams on ``eks`` (plain dicts; the construct that applies them is
:mod:`.teams`).

Standard library and contracts only, like :mod:`.manifests`: the names here
(:func:`team_names`) are also what the stack writes into the ``Teams`` output for the job CLI.

What a team gets (``kueue.x-k8s.io/v1beta2``, the API Kueue 0.20 serves; field meanings from
the CRDs vendored in ``tests/fixtures/kueue-0.19.2`` and Kueue's concept pages
``site/content/en/docs/concepts/{resource_flavor,cluster_queue,preemption,
workload_priority_class}.md``):

- a ResourceFlavor per node pool (:func:`resource_flavor`): ``nodeLabels`` select the pool's
  nodes (:data:`~trn_ultracluster.contracts.pools.POOL_LABEL`, or the instance type for the one
  pool of a configuration without ``pools``, whose nodes carry no pool label). Kueue only
  assigns a flavor whose labels agree with the pod's ``nodeSelector`` and, on admission, adds
  the labels to it ("ResourceFlavors that don't match the node affinity of the Workload cannot
  be assigned", resource_flavor.md). A Trainium pool's flavor lists the Neuron taint as
  ``nodeTaints``: "only workloads that explicitly tolerate that taint can consume the quota"
  and Kueue "does not add tolerations for the flavor taints" (resource_flavor.md, "taints for
  user-selective scheduling"); the pool's runtime carries the toleration, as before teams.
- a ClusterQueue per team (:func:`cluster_queue`) in cohort :data:`COHORT`, one resource
  group covering :data:`COVERED_RESOURCES` with every pool's flavor: the team's quota where it
  has one, 0 elsewhere (it can still borrow there). Every resource a training pod requests is
  covered: ``aws.amazon.com/neuron`` and ``vpc.amazonaws.com/efa`` on a Trainium node, ``cpu``
  and ``memory`` on a CPU node (:mod:`.pools`): "By default, administrators must specify all
  resources required by workloads in the ClusterQueue's .spec.resourceGroups[*]" (Kueue docs,
  ``tasks/manage/administer_cluster_quotas.md``; ``quotaCheckStrategy`` ``BlockUndeclared``).
  A quota of N nodes admits N training pods, one per node (:func:`quota_amounts`).
  ``borrowingLimit: 0`` without ``borrow``, ``lendingLimit: 0`` without ``lend`` (CRD:
  ``lendingLimit`` "is in beta stage and is enabled by default"; both "must be null if
  spec.cohortName is empty"). Preemption from ``scheduling.preemption`` (:data:`PREEMPTION`).
  ``namespaceSelector`` admits the team's namespace only ("Defaults to null which is a nothing
  selector", CRD), by the label the API server sets on every namespace
  (:data:`NAMESPACE_NAME_LABEL`).
- a namespace and a LocalQueue (:func:`local_queue`) per team, named after it.
- a WorkloadPriorityClass per priority class (:func:`workload_priority_class`), ``value`` =
  the class's weight; a job names it with the label ``kueue.x-k8s.io/priority-class``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from trn_ultracluster.contracts.catalog import InstanceSpec
from trn_ultracluster.orchestrators.eks.manifests import (
    EFA_RESOURCE,
    NEURON_RESOURCE,
    NEURON_TAINT,
    Manifest,
    object_metadata,
)
from trn_ultracluster.orchestrators.eks.pools import cpu_resource_requirements

if TYPE_CHECKING:
    from trn_ultracluster.config.model.teams import Team, TeamQuota

__all__ = ["COHORT", "COVERED_RESOURCES", "KUEUE_API_VERSION", "NAMESPACE_NAME_LABEL",
           "PREEMPTION", "TRAINJOB_FRAMEWORK", "FlavorPool", "TeamNames", "chart_values",
           "cluster_queue", "local_queue", "manager_config", "quota_amounts", "resource_flavor",
           "team_names", "team_volume_name", "workload_priority_class"]

KUEUE_API_VERSION = "kueue.x-k8s.io/v1beta2"
COHORT = "trn-ultracluster"
"""The cohort of every team's ClusterQueue: queues of one cohort borrow each other's unused
quota (ClusterQueue CRD, ``cohortName``: "a name that links CQs together, but it doesn't
reference any object"; no Cohort object is created)."""
TRAINJOB_FRAMEWORK = "trainer.kubeflow.org/trainjob"
"""Kueue's integration name of Kubeflow Trainer v2 TrainJobs (``integrations.frameworks``;
kubernetes-sigs/kueue ``pkg/controller/jobs/trainjob/trainjob_controller.go``,
``FrameworkName``)."""
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
"""Set by the API server on every namespace to its name (Kubernetes docs, "Well-Known Labels,
Annotations and Taints", ``kubernetes.io/metadata.name``; ``corev1.LabelMetadataName``). Kueue's
own default ``managedJobsNamespaceSelector`` selects namespaces by it
(``apis/config/v1beta2/defaults.go``: ``NotIn [kube-system, <kueue namespace>]``)."""
COVERED_RESOURCES = (NEURON_RESOURCE, EFA_RESOURCE, "cpu", "memory")
"""What the teams' ClusterQueues count: everything a training pod of a pool requests
(:func:`~.pools.pool_resource_requirements`)."""
PREEMPTION: dict[str, dict[str, str]] = {
    "lower-priority": {"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "Any"},
    "never": {"withinClusterQueue": "Never", "reclaimWithinCohort": "Never"},
}
"""``scheduling.preemption`` -> ClusterQueue ``spec.preemption``. ``lower-priority``: a job
may stop its own team's lower-priority jobs ("LowerPriority: only preempt Workloads in the
ClusterQueue that have lower priority") and a team takes back quota it lent ("Any: if the
pending Workload fits within the nominal quota of its ClusterQueue, preempt any Workload in
the cohort", CRD ``reclaimWithinCohort``). ``never``: both ``Never`` (the CRD's defaults).
``borrowWithinCohort`` keeps its default ``Never``: a borrowing job never stops another
team's."""


@dataclass(frozen=True)
class TeamNames:
    """Where a team's jobs go on ``eks`` (the ``Teams`` output's ``namespace``, ``queue`` and
    ``cluster_queue``)."""

    namespace: str
    queue: str
    cluster_queue: str


def team_names(team: str) -> TeamNames:
    """The team's namespace, LocalQueue and ClusterQueue: all its name (a team name is a valid
    namespace and object name: ``config/model/teams.py`` ``TEAM_NAME_PATTERN``)."""
    return TeamNames(namespace=team, queue=team, cluster_queue=team)


def team_volume_name(claim: str, team: str) -> str:
    """The FSx PersistentVolume of ``team``'s claim: a static volume binds one claim, so each
    team namespace gets its own volume of the same file system (``fsx-lustre`` ->
    ``fsx-lustre-research``); the claim keeps the name the runtimes mount."""
    return f"{claim}-{team}"


@dataclass(frozen=True)
class FlavorPool:
    """A node pool as Kueue sees it.

    Attributes:
        name: the pool's name, also its ResourceFlavor's.
        spec: the pool type's catalog entry.
        node_labels: labels every node of the pool carries (the flavor's ``nodeLabels``).
    """

    name: str
    spec: InstanceSpec
    node_labels: Mapping[str, str]


def resource_flavor(pool: FlavorPool) -> Manifest:
    """The ResourceFlavor of ``pool``: its ``nodeLabels``, and on a Trainium type the Neuron
    taint as ``nodeTaints`` (module doc)."""
    spec: dict[str, Any] = {"nodeLabels": dict(pool.node_labels)}
    if pool.spec.accelerated:
        spec["nodeTaints"] = [{"key": NEURON_TAINT.key, "value": NEURON_TAINT.value,
                               "effect": NEURON_TAINT.effect}]
    return {"apiVersion": KUEUE_API_VERSION, "kind": "ResourceFlavor",
            "metadata": object_metadata(pool.name), "spec": spec}


def quota_amounts(spec: InstanceSpec, quota: TeamQuota, team: str = "") -> dict[str, str]:
    """A team's nominal quota on one pool, per :data:`COVERED_RESOURCES` (quantities as the
    API takes them).

    Trainium pool: ``quota.neuron_devices`` chips, and per chip the node's share of EFA
    interfaces, vCPUs and memory, rounded down (trn1.32xlarge, 2 nodes = 32 chips: neuron 32,
    efa 16, cpu 256, memory 1024Gi). Down, so the Neuron devices stay the limit: a whole-node
    pod asks for the chips and interfaces of one node, and k nodes' interfaces always fit the
    rounded share of the chips k nodes need. CPU pool: no Neuron device or EFA interface, and
    ``quota.nodes`` times what a training pod requests on one node
    (:func:`~.pools.cpu_resource_requirements`: just over half the node's vCPUs and memory, so
    that each node runs one), not the nodes' whole vCPUs and memory: with those, 3 nodes of
    m7i.8xlarge (96 vCPUs) would admit 5 pods of 17 vCPUs, a 5-node job on a 3-node quota.

    Raises:
        ValueError: a Trainium quota that is no whole number of chips, or a CPU quota that is
            no whole number of nodes (the configuration rules refuse both before synth).
    """
    if spec.accelerated:
        chips = quota.neuron_devices
        if chips is None:
            raise ValueError(f"team {team!r}: quota on pool {quota.pool!r} is "
                             f"{quota.neuron_cores} NeuronCores, no whole number of "
                             f"{spec.name} chips (Kueue counts {NEURON_RESOURCE})")
        efa = chips * spec.efa_interfaces // spec.chips if spec.supports_efa else 0
        return {NEURON_RESOURCE: str(chips), EFA_RESOURCE: str(efa),
                "cpu": str(chips * spec.vcpus // spec.chips),
                "memory": f"{chips * spec.memory_gib // spec.chips}Gi"}
    if quota.nodes is None:
        raise ValueError(f"team {team!r}: quota on the CPU pool {quota.pool!r} must be whole "
                         "nodes")
    per_node = cpu_resource_requirements(spec)["requests"]
    memory_gib = per_node["memory"].removesuffix("Gi")
    return {NEURON_RESOURCE: "0", EFA_RESOURCE: "0",
            "cpu": str(quota.nodes * int(per_node["cpu"])),
            "memory": f"{quota.nodes * int(memory_gib)}Gi"}


def cluster_queue(team: Team, pools: Sequence[FlavorPool], preemption: str) -> Manifest:
    """The ClusterQueue of ``team`` (module doc): one resource group of
    :data:`COVERED_RESOURCES` over every pool's flavor in pool order, the team's quota per
    flavor (:func:`quota_amounts`), limits from ``borrow``/``lend``, :data:`PREEMPTION`.

    Raises:
        ValueError: ``preemption`` is not a key of :data:`PREEMPTION`, or a quota
            :func:`quota_amounts` refuses.
    """
    if preemption not in PREEMPTION:
        raise ValueError(f"scheduling.preemption {preemption!r}: must be one of "
                         f"{', '.join(PREEMPTION)}")
    names = team_names(team.name)
    flavors = []
    for pool in pools:
        amounts = quota_amounts(pool.spec, team.quota(pool.name), team.name)
        resources = []
        for resource in COVERED_RESOURCES:
            entry: dict[str, Any] = {"name": resource, "nominalQuota": amounts[resource]}
            if not team.borrow:
                entry["borrowingLimit"] = "0"
            if not team.lend:
                entry["lendingLimit"] = "0"
            resources.append(entry)
        flavors.append({"name": pool.name, "resources": resources})
    return {
        "apiVersion": KUEUE_API_VERSION, "kind": "ClusterQueue",
        "metadata": object_metadata(names.cluster_queue),
        "spec": {
            "cohortName": COHORT,
            "namespaceSelector": {"matchLabels": {NAMESPACE_NAME_LABEL: names.namespace}},
            "preemption": dict(PREEMPTION[preemption]),
            "resourceGroups": [{"coveredResources": list(COVERED_RESOURCES),
                                "flavors": flavors}],
        },
    }


def local_queue(team: str) -> Manifest:
    """The LocalQueue of ``team`` in its namespace, feeding its ClusterQueue."""
    names = team_names(team)
    return {"apiVersion": KUEUE_API_VERSION, "kind": "LocalQueue",
            "metadata": object_metadata(names.queue, names.namespace),
            "spec": {"clusterQueue": names.cluster_queue}}


def workload_priority_class(name: str, weight: int) -> Manifest:
    """The WorkloadPriorityClass of a priority class: ``value`` = its weight (0 to 100).
    Cluster scoped, "so they can be used by a job in any namespace"; a job names it with the
    label ``kueue.x-k8s.io/priority-class`` and its Workload gets ``spec.priority`` = the value
    (Kueue docs, ``concepts/workload_priority_class.md``), which orders admission and
    preemption (``concepts/preemption.md``)."""
    return {"apiVersion": KUEUE_API_VERSION, "kind": "WorkloadPriorityClass",
            "metadata": object_metadata(name), "value": weight,
            "description": f"trn-ultracluster priority class {name} (weight {weight})"}


def manager_config(managed_namespaces: Iterable[str]) -> dict[str, Any]:
    """Kueue's ``Configuration`` (``config.kueue.x-k8s.io/v1beta2``, the chart's
    ``managerConfig.controllerManagerConfigYaml``, which replaces the chart's default).

    - ``health``, ``metrics``, ``webhook``, ``leaderElection``: as the chart's default
      (``charts/kueue/values.yaml``; its Deployment's probes and Services use those ports);
      concurrency and client rate limits are left to Kueue's own defaults.
    - ``integrations.frameworks``: :data:`TRAINJOB_FRAMEWORK` only. Not ``batch/job``,
      ``jobset.x-k8s.io/jobset`` or ``pod``: a TrainJob's JobSet, Jobs and pods are Kueue's
      business only through the TrainJob, and a managed ``batch/job`` integration with
      ``manageJobsWithoutQueueName`` would suspend the JobSet's own Jobs.
    - ``manageJobsWithoutQueueName: true`` with ``managedJobsNamespaceSelector`` matching
      ``managed_namespaces`` (the training namespace and every team's): a TrainJob there
      without ``kueue.x-k8s.io/queue-name`` is "suspended and never started unless [it is]
      assigned a queue and eventually admitted. This also applies to jobs created before
      starting the kueue controller" (``apis/config/v1beta2/configuration_types.go``). So no
      job on those namespaces bypasses the quotas, including one submitted to the training
      namespace, which has no LocalQueue. Other namespaces (``kube-system``, the add-ons')
      stay untouched.
    - ``waitForPodsReady``: left to Kueue's default, on since v0.19 ("WaitForPodsReady is now
      enabled by default ... 30 minute timeout, 30 minute recovery timeout", CHANGELOG-0.19):
      an admitted job whose pods are not all ready within 30 minutes (nodes still scaling up,
      say) is evicted and requeued, giving back its quota.
    """
    return {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2",
        "kind": "Configuration",
        "health": {"healthProbeBindAddress": ":8081"},
        "metrics": {"bindAddress": ":8443"},
        "webhook": {"port": 9443},
        "leaderElection": {"leaderElect": True, "resourceName": "c1f6bfd2.kueue.x-k8s.io"},
        "manageJobsWithoutQueueName": True,
        "managedJobsNamespaceSelector": {"matchExpressions": [
            {"key": NAMESPACE_NAME_LABEL, "operator": "In",
             "values": list(dict.fromkeys(managed_namespaces))}]},
        "integrations": {"frameworks": [TRAINJOB_FRAMEWORK]},
    }


def chart_values(managed_namespaces: Iterable[str]) -> dict[str, Any]:
    """Values of the Kueue chart: :func:`manager_config` as ``managerConfig.
    controllerManagerConfigYaml`` (JSON, which YAML reads; the chart parses it with
    ``fromYaml`` and adds ``internalCertManagement``: ``templates/manager/manager-config.yaml``)."""
    return {"managerConfig": {"controllerManagerConfigYaml":
                              json.dumps(manager_config(managed_namespaces), sort_keys=True)}}
