"""Node pools on Kubernetes: the labels of a pool's nodes, the ``ClusterTrainingRuntime`` of
each pool, and what a training pod requests on a Trainium or a CPU node (plain dicts).

Standard library and contracts only, like :mod:`.manifests`: the job CLI builds the TrainJob
of a pool with the same names and resources the stack gives the pool's runtime.

How a job reaches its pool (the stack's side, the job CLI's side):

- every node group of a pool other than the main one carries :data:`POOL_LABEL` = its name
  (:func:`pool_node_labels`); so do the main pool's node groups when the configuration has
  ``pools``. A configuration without ``pools`` keeps its node groups' labels as they were (a
  deployed stack's template changes in nothing but the ``Pools`` output): its one pool needs
  no selector.
- the main pool runs on the stack's runtime (:data:`~.manifests.TRAINING_RUNTIME_NAME`,
  output ``EksTrainingRuntimeName``), which selects the main pool's instance type and, with
  ``pools``, its label; every other pool has a runtime of its own, :func:`pool_runtime_name`,
  that selects its label (:func:`pool_training_runtime`). A TrainJob names the runtime of
  its pool.
"""

from __future__ import annotations

from typing import Any

from trn_ultracluster.contracts.catalog import InstanceSpec
from trn_ultracluster.contracts.neuron_stack import NeuronStackName
from trn_ultracluster.contracts.pools import POOL_LABEL
from trn_ultracluster.orchestrators.eks.manifests import (
    FSX_PVC_NAME,
    TRAINER_NODE,
    Manifest,
    neuron_processes_per_node,
    neuron_resource_requirements,
    neuron_training_runtime,
    trainium_node_labels,
    training_runtime,
    training_volume_mounts,
    training_volumes,
)

__all__ = ["POOL_RUNTIME_PREFIX", "cpu_resource_requirements", "cpu_training_runtime",
           "pool_node_labels", "pool_resource_requirements", "pool_runtime_name",
           "pool_training_runtime", "processes_per_node"]

POOL_RUNTIME_PREFIX = "torch-distributed-"
"""Name prefix of the ``ClusterTrainingRuntime`` of a pool other than the main one (the pool's
name follows: a pool name is at most 20 lowercase letters, digits and hyphens, so the name is
a valid object name)."""


def pool_runtime_name(pool_name: str) -> str:
    """The ``ClusterTrainingRuntime`` of a pool other than the main one: ``"trn2"`` ->
    ``"torch-distributed-trn2"``."""
    return POOL_RUNTIME_PREFIX + pool_name


def pool_node_labels(spec: InstanceSpec, pool_name: str | None) -> dict[str, str]:
    """Kubernetes labels of a pool's nodes: the EFA label on EFA types
    (:func:`~.manifests.trainium_node_labels`) and :data:`POOL_LABEL` = ``pool_name``
    (``None``: no pool label, the main pool of a configuration without ``pools``), e.g.
    ``{"vpc.amazonaws.com/efa.present": "true", "trn-ultracluster/pool": "trn2"}``;
    ``{"trn-ultracluster/pool": "cpu"}`` for a CPU pool."""
    labels = trainium_node_labels(spec)
    if pool_name is not None:
        labels[POOL_LABEL] = pool_name
    return labels


def cpu_resource_requirements(spec: InstanceSpec) -> dict[str, dict[str, str]]:
    """Container ``resources`` of a training pod on a CPU node: requests of just over half
    the node's vCPUs and memory (``m7i.8xlarge``, 32 vCPUs and 128 GiB: ``cpu: "17"``,
    ``memory: "65Gi"``) and no limits.

    Why: two such pods never fit on one node, whatever the node's allocatable (less than its
    capacity: the kubelet's reservations and the DaemonSets take some), so each node of a job
    runs one of its pods, as a Trainium pod owns its node by requesting all its chips; while
    one pod easily fits beside the DaemonSets. No limit: the pod may use the whole node
    (Kubernetes "Resource Management for Pods and Containers": a container may use more
    than its request when the node has it free; a limit caps it).
    """
    return {"requests": {"cpu": str(spec.vcpus // 2 + 1),
                         "memory": f"{spec.memory_gib // 2 + 1}Gi"}}


def pool_resource_requirements(spec: InstanceSpec) -> dict[str, dict[str, str]]:
    """What a training pod requests on a node of ``spec``: all its chips and EFA interfaces
    on a Trainium type (:func:`~.manifests.neuron_resource_requirements`), just over half its
    vCPUs and memory on a CPU type (:func:`cpu_resource_requirements`)."""
    return neuron_resource_requirements(spec) if spec.accelerated \
        else cpu_resource_requirements(spec)


def processes_per_node(spec: InstanceSpec) -> int:
    """torchrun processes per node by default: one per logical NeuronCore on a Trainium type
    (:func:`~.manifests.neuron_processes_per_node`), one on a CPU type (a program that wants
    more says so with ``--nproc-per-node``)."""
    return neuron_processes_per_node(spec) if spec.accelerated else 1


def cpu_training_runtime(spec: InstanceSpec, *, image: str, name: str,
                         node_selector: dict[str, str], fsx_claim: str = FSX_PVC_NAME,
                         max_restarts: int | None = None) -> Manifest:
    """``ClusterTrainingRuntime`` for torchrun (or any program) on the nodes of a CPU pool:
    the pod requests :func:`cpu_resource_requirements`, selects ``node_selector``, mounts the
    FSx claim at ``/fsx`` and a memory ``/dev/shm``; no NeuronCore or EFA resource, no Neuron
    environment and no toleration of the Neuron taint (a CPU pool's nodes have none).
    ``max_restarts`` as :func:`~.manifests.neuron_training_runtime`."""
    container = {
        "name": TRAINER_NODE,
        "image": image,
        "resources": cpu_resource_requirements(spec),
        "volumeMounts": training_volume_mounts(),
    }
    pod_spec: dict[str, Any] = {
        "nodeSelector": dict(node_selector),
        "containers": [container],
        "volumes": training_volumes(fsx_claim),
    }
    return training_runtime(name, pod_spec, max_restarts)


def pool_training_runtime(spec: InstanceSpec, *, pool_name: str, image: str,
                          stack: NeuronStackName | None, node_selector: dict[str, str],
                          fsx_claim: str = FSX_PVC_NAME,
                          max_restarts: int | None = None) -> Manifest:
    """The ``ClusterTrainingRuntime`` of a pool other than the main one, named
    :func:`pool_runtime_name`: the Neuron runtime of the pool's type and Neuron ``stack``
    (:func:`~.manifests.neuron_training_runtime`) for a Trainium pool, :func:`cpu_training_runtime`
    for a CPU pool, each selecting ``node_selector`` (the pool's label).

    Raises:
        ValueError: a Trainium pool without a Neuron ``stack``.
    """
    name = pool_runtime_name(pool_name)
    if not spec.accelerated:
        return cpu_training_runtime(spec, image=image, name=name, node_selector=node_selector,
                                    fsx_claim=fsx_claim, max_restarts=max_restarts)
    if stack is None:
        raise ValueError(f"pool {pool_name!r} ({spec.name}) is a Trainium pool and needs a "
                         "Neuron stack (xla or native) for its runtime's environment")
    return neuron_training_runtime(spec, image=image, stack=stack, node_selector=node_selector,
                                   max_restarts=max_restarts, fsx_claim=fsx_claim, name=name)
