"""Builders for the Kubernetes objects of the EKS orchestrator (plain dicts).

Only the standard library and the contracts are imported, so the job CLI can build a TrainJob with the same names and per-node resources the stack uses.

Sources of the names used below:

- ``aws.amazon.com/neuron`` (Trainium chips) and the ``aws.amazon.com/neuron`` taint
  tolerated by the Neuron device plugin: aws-neuron/neuron-helm-charts
  ``charts/neuron-helm-chart/values.yaml`` (``devicePlugin.tolerations``); Neuron docs
  "Kubernetes getting started".
- ``vpc.amazonaws.com/efa`` (EFA interfaces): aws/eks-charts
  ``stable/aws-efa-k8s-device-plugin``; EKS user guide "Run machine learning training on
  Amazon EKS with Elastic Fabric Adapter" (https://docs.aws.amazon.com/eks/latest/userguide/node-efa.html).
- ``vpc.amazonaws.com/efa.present`` node label: the label used with the EFA device plugin's
  ``nodeSelector`` in terraform-aws-eks and awslabs/data-on-eks examples.
- ``node.kubernetes.io/instance-type``: Kubernetes well-known labels
  (https://kubernetes.io/docs/reference/labels-annotations-taints/#nodekubernetesioinstance-type).
- FSx static provisioning (``fsx.csi.aws.com``, ``volumeHandle`` = file system id,
  ``volumeAttributes`` ``dnsname`` and ``mountname``, ``storageClassName: ""``):
  kubernetes-sigs/aws-fsx-csi-driver ``examples/kubernetes/static_provisioning``.
- ClusterTrainingRuntime layout (``replicatedJobs[name=node]``, container ``node``, label
  ``trainer.kubeflow.org/trainjob-ancestor-step: trainer``): Kubeflow Trainer 2.3.0 chart,
  ``runtime-torch-distributed.yaml`` and its CRDs (vendored for the tests in
  ``tests/fixtures/kubeflow-trainer-2.3.0``).
- Neuron multi-node environment (``FI_PROVIDER=efa``, ``FI_EFA_USE_DEVICE_RDMA=1``,
  ``NEURON_CC_FLAGS=--cache_dir=...``): Neuron docs, multi-node setup (see
  :mod:`trn_ultracluster.contracts.neuron_env`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from trn_ultracluster.contracts.catalog import InstanceSpec
from trn_ultracluster.contracts.hyperpod import JobEnv
from trn_ultracluster.contracts.neuron_env import neuron_environment
from trn_ultracluster.contracts.neuron_stack import NeuronStackName, compile_cache_dir
from trn_ultracluster.contracts.shared_storage import FSX_MOUNT_PATH

Manifest = dict[str, Any]

NEURON_RESOURCE = "aws.amazon.com/neuron"
"""Extended resource of the Neuron device plugin: one unit per Trainium chip."""
EFA_RESOURCE = "vpc.amazonaws.com/efa"
"""Extended resource of the EFA device plugin: one unit per EFA interface."""
EFA_NODE_LABEL = "vpc.amazonaws.com/efa.present"
"""Node label (value ``"true"``) that selects nodes with EFA interfaces."""
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
"""Well-known node label with the EC2 instance type, set by the kubelet."""
FSX_CSI_DRIVER = "fsx.csi.aws.com"
FSX_PV_NAME = "fsx-lustre"
FSX_PVC_NAME = "fsx-lustre"
FSX_EFA_VOLUME_NAME = "fsx-lustre-efa"
"""The PersistentVolume and claim of an EFA-enabled file system. Another name than
:data:`FSX_PV_NAME`: turning ``fsx.efa`` on or off replaces the file system, and a
PersistentVolume's source cannot change ("spec.persistentvolumesource is immutable after
creation", Kubernetes API validation), nor can a claim's ``volumeName``; new names let the
new objects be created beside the old ones, which are then deleted."""


FSX_CLAIM_REQUEST_GIB = 1200
"""The storage the FSx claim requests, GiB: the smallest file system the configuration allows
(``fsx.storage_capacity_gib``: 1200, 2400 or a step above, CloudFormation
``AWS::FSx::FileSystem`` ``StorageCapacity``), so the claim binds to the volume of any file
system the stack makes, and fixed, so that growing the file system leaves the claim as it is.

Why not the file system's size: the claim is statically bound (``storageClassName: ""``,
``volumeName``), and Kubernetes refuses to resize such a claim. Of a bound claim's spec only
``resources.requests`` may change ("spec is immutable after creation except
resources.requests and volumeAttributesClassName for bound claims", Kubernetes API
validation), a larger request passes admission only for a claim of a storage class with
``allowVolumeExpansion`` ("only dynamically provisioned pvc can be resized and the
storageclass that provisions the pvc must support resize", the ``PersistentVolumeClaimResize``
admission plugin, kubernetes ``plugin/pkg/admission/storage/persistentvolume/resize``;
Kubernetes docs, "Persistent Volumes", "Expanding Persistent Volumes Claims": "You can only
expand a PVC if its storage class's allowVolumeExpansion field is set to true"), and a
smaller one is refused by validation. So a capacity grow would fail the manifest update after
the file system had grown, and the rollback could not shrink it back. The claim binds when
its request is at most the volume's capacity (the persistent volume controller's
``checkVolumeSatisfyClaim``: "requested PV is too small" otherwise); the PersistentVolume
keeps the file system's size, which may change (only its source is immutable: see
:data:`FSX_EFA_VOLUME_NAME`). A stack deployed before this rule with a file system above
1200 GiB has a claim that asks for its size; the first deploy with the rule would shrink the
request, which Kubernetes refuses (the update fails and rolls back), until the claim is
recreated once (docs/configuration-guide.md, "File system size on EKS": the steps);
``trn-ultracluster plan`` finds the shrink before the deploy and stops with those steps
(:func:`trn_ultracluster.changes.shrinking_claims`)."""


def fsx_volume_name(efa_enabled: bool) -> str:
    """The name of the FSx PersistentVolume and of its claim: :data:`FSX_EFA_VOLUME_NAME` for
    an EFA-enabled file system, else :data:`FSX_PVC_NAME` (as before EFA existed)."""
    return FSX_EFA_VOLUME_NAME if efa_enabled else FSX_PVC_NAME

TRAINING_RUNTIME_NAME = "neuron-torch-distributed"
TRAINER_API_VERSION = "trainer.kubeflow.org/v1alpha1"
TRAINER_NODE = "node"
"""Name of the trainer replicated job and of its container (Kubeflow Trainer constants)."""
PROJECT_LABEL = "trn-ultracluster/managed-by"


@dataclass(frozen=True)
class Taint:
    """A node taint and the toleration that matches it."""

    key: str
    value: str
    effect: str

    def toleration(self) -> dict[str, str]:
        """The pod toleration for this taint (operator ``Equal``)."""
        return {"key": self.key, "operator": "Equal", "value": self.value, "effect": self.effect}


NEURON_TAINT = Taint(NEURON_RESOURCE, "true", "NoSchedule")
"""Taint of the Trainium nodes: only pods that tolerate it (training jobs, the Neuron and
EFA device plugins) run there."""


def trainium_node_labels(spec: InstanceSpec) -> dict[str, str]:
    """Labels the stack puts on Trainium nodes: the one the EFA device plugin selects
    (:data:`EFA_NODE_LABEL`) on EFA instance types, nothing otherwise (the kubelet labels
    the instance type itself)."""
    return {EFA_NODE_LABEL: "true"} if spec.supports_efa else {}


def efa_plugin_values(instance_type_labels: str | Sequence[str],
                      *extra_tolerations: dict[str, str]) -> dict[str, Any]:
    """Values of the EFA device plugin chart: run only on nodes labelled
    :data:`EFA_NODE_LABEL` whose :data:`INSTANCE_TYPE_LABEL` is one of
    ``instance_type_labels``, and tolerate :data:`NEURON_TAINT` (plus ``extra_tolerations``).

    The chart's DaemonSet also requires the instance-type label to be in its
    ``supportedInstanceLabels.values`` (``templates/daemonset.yaml``, node affinity). The
    chart's default list names EC2 types only: no ``ml.`` name, which HyperPod nodes carry
    (SageMaker HyperPod's own chart sets the list to ``ml.`` names: aws/sagemaker-hyperpod-cli
    ``helm_chart/HyperPodHelmChart/values.yaml``, ``aws-efa-k8s-device-plugin``), and the EC2
    types of its release (trn2.3xlarge only since chart v0.5.23, aws/eks-charts #1278; the
    pinned v0.5.30 has it). So the stack names its own node type there, whatever the chart
    version lists.

    Args:
        instance_type_labels: the values of :data:`INSTANCE_TYPE_LABEL` on the Trainium nodes
            with EFA (one, or one per node pool, in order, each once): the EC2 type on EKS
            node groups, the ``ml.`` name on HyperPod nodes.
        extra_tolerations: more pod tolerations (HyperPod's health-check taint).

    Returns:
        ``nodeSelector``, ``supportedInstanceLabels`` and ``tolerations``, the chart's values.
    """
    labels = ([instance_type_labels] if isinstance(instance_type_labels, str)
              else list(dict.fromkeys(instance_type_labels)))
    return {"nodeSelector": {EFA_NODE_LABEL: "true"},
            "supportedInstanceLabels": {"keys": [INSTANCE_TYPE_LABEL],
                                        "values": labels},
            "tolerations": [NEURON_TAINT.toleration(), *extra_tolerations]}


def neuron_resources_per_node(spec: InstanceSpec) -> dict[str, int]:
    """Extended resources one training pod requests to own a whole Trainium node.

    Args:
        spec: catalog entry of the instance type.

    Returns:
        ``{"aws.amazon.com/neuron": chips, "vpc.amazonaws.com/efa": EFA interfaces}``;
        the EFA entry is left out for types without EFA (trn1.2xlarge). E.g.
        trn1.32xlarge -> ``{neuron: 16, efa: 8}``, trn2.48xlarge -> ``{neuron: 16, efa: 16}``.
    """
    resources = {NEURON_RESOURCE: spec.chips}
    if spec.supports_efa:
        resources[EFA_RESOURCE] = spec.efa_interfaces
    return resources


def neuron_processes_per_node(spec: InstanceSpec) -> int:
    """Training processes per node: one per logical NeuronCore (32 on trn1.32xlarge,
    64 on trn2.48xlarge at LNC=2)."""
    return spec.logical_neuron_cores


def neuron_container_env(spec: InstanceSpec, stack: NeuronStackName) -> list[dict[str, str]]:
    """:func:`trn_ultracluster.contracts.neuron_env.neuron_environment` of ``stack`` as a
    container ``env`` list, with ``TRN_NEURON_STACK`` (the job CLI's ``--backend``) and
    ``TRN_NEURON_CACHE_DIR`` (the shared compile cache, as the env file of the other
    orchestrators names it: the same variables for a user's program everywhere)."""
    env = {**neuron_environment(spec, stack), JobEnv.NEURON_STACK.value: stack,
           JobEnv.NEURON_CACHE_DIR.value: compile_cache_dir(stack)}
    return [{"name": k, "value": v} for k, v in env.items()]


def neuron_resource_requirements(spec: InstanceSpec) -> dict[str, dict[str, str]]:
    """Container ``resources``: requests = limits = :func:`neuron_resources_per_node`."""
    amounts = {name: str(count) for name, count in neuron_resources_per_node(spec).items()}
    return {"requests": dict(amounts), "limits": dict(amounts)}


def object_metadata(name: str, namespace_name: str | None = None) -> dict[str, Any]:
    """``metadata`` of an object the stack makes: ``name``, the project label and, for a
    namespaced object, ``namespace_name``."""
    meta: dict[str, Any] = {"name": name, "labels": {PROJECT_LABEL: "trn-ultracluster"}}
    if namespace_name is not None:
        meta["namespace"] = namespace_name
    return meta


def namespace(name: str) -> Manifest:
    """A ``v1/Namespace``."""
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": object_metadata(name)}


def fsx_persistent_volume(
    *, file_system_id: str, dns_name: str, mount_name: str, storage_capacity_gib: int,
    name: str = FSX_PV_NAME,
) -> Manifest:
    """Static ``PersistentVolume`` for an existing FSx for Lustre file system.

    ``Retain``: deleting the claim never touches the file system (the stack owns it).

    Args:
        file_system_id: ``fs-...`` (the CSI volume handle).
        dns_name: file system DNS name.
        mount_name: Lustre mount name.
        storage_capacity_gib: file system size, GiB (the volume's capacity; it may grow with
            the file system: a PersistentVolume's capacity is not immutable, and the claim's
            fixed request, :data:`FSX_CLAIM_REQUEST_GIB`, stays below it).
        name: the volume's name (:func:`fsx_volume_name`).
    """
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": object_metadata(name),
        "spec": {
            "capacity": {"storage": f"{storage_capacity_gib}Gi"},
            "volumeMode": "Filesystem",
            "accessModes": ["ReadWriteMany"],
            "mountOptions": ["flock"],
            "persistentVolumeReclaimPolicy": "Retain",
            "storageClassName": "",
            "csi": {
                "driver": FSX_CSI_DRIVER,
                "volumeHandle": file_system_id,
                "volumeAttributes": {"dnsname": dns_name, "mountname": mount_name},
            },
        },
    }


def fsx_persistent_volume_claim(*, namespace_name: str, name: str = FSX_PVC_NAME,
                                volume_name: str = FSX_PV_NAME) -> Manifest:
    """``PersistentVolumeClaim`` ``name`` bound to :func:`fsx_persistent_volume`
    ``volume_name`` by name, requesting :data:`FSX_CLAIM_REQUEST_GIB` whatever the file
    system's size (why: there)."""
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": object_metadata(name, namespace_name),
        "spec": {
            "accessModes": ["ReadWriteMany"],
            "storageClassName": "",
            "volumeName": volume_name,
            "resources": {"requests": {"storage": f"{FSX_CLAIM_REQUEST_GIB}Gi"}},
        },
    }


def neuron_training_runtime(spec: InstanceSpec, *, image: str, stack: NeuronStackName,
                            node_selector: dict[str, str] | None = None,
                            max_restarts: int | None = None,
                            fsx_claim: str = FSX_PVC_NAME,
                            name: str = TRAINING_RUNTIME_NAME) -> Manifest:
    """``ClusterTrainingRuntime`` (Kubeflow Trainer 2.3.0) for torchrun on whole Trainium nodes.

    Each node's pod requests all chips and all EFA interfaces of the node
    (:func:`neuron_resources_per_node`), tolerates :data:`NEURON_TAINT`, selects the
    nodes (``node_selector``; default: the EC2 instance type label), mounts the FSx claim
    ``fsx_claim`` (:func:`fsx_volume_name`) at :data:`FSX_MOUNT_PATH` (so TrainJobs run in the namespace that
    holds the claim) and gets :func:`neuron_environment`. ``/dev/shm`` is a memory volume
    for the data loaders. With ``max_restarts`` the JobSet behind every TrainJob is
    recreated up to that many times after a pod failed (JobSet ``failurePolicy.maxRestarts``
    in the runtime's template, Trainer 2.3.0 CRD); without it a failed pod fails the job.

    Trainer 2.3.0's torch policy has no processes-per-node field: the TrainJob sets
    ``spec.trainer.numProcPerNode`` to :func:`neuron_processes_per_node` (the job CLI's
    ``trn_ultracluster.cli.backends.trainjob.train_job`` does); Trainer's default ``auto`` would start one
    process per CPU on a node without GPUs.

    Args:
        spec: catalog entry of the Trainium instance type.
        image: default container image (a TrainJob normally overrides it).
        stack: the image's Neuron training stack (its environment, :func:`neuron_container_env`).
        node_selector: node labels the pods require.
        max_restarts: JobSet restarts after a failure (``None``: the field is left out).
        name: the runtime's name (default :data:`TRAINING_RUNTIME_NAME`, the main pool's;
            another pool's: :func:`~trn_ultracluster.orchestrators.eks.pools.pool_runtime_name`).
    """
    container = {
        "name": TRAINER_NODE,
        "image": image,
        "env": neuron_container_env(spec, stack),
        "resources": neuron_resource_requirements(spec),
        "volumeMounts": training_volume_mounts(),
    }
    pod_spec = {
        "nodeSelector": node_selector or {INSTANCE_TYPE_LABEL: spec.name},
        "tolerations": [NEURON_TAINT.toleration()],
        "containers": [container],
        "volumes": training_volumes(fsx_claim),
    }
    return training_runtime(name, pod_spec, max_restarts)


def training_volume_mounts() -> list[dict[str, str]]:
    """The trainer container's mounts: the FSx claim at :data:`FSX_MOUNT_PATH`, the memory
    volume at ``/dev/shm`` (:func:`training_volumes`)."""
    return [{"name": "fsx", "mountPath": FSX_MOUNT_PATH},
            {"name": "dshm", "mountPath": "/dev/shm"}]


def training_volumes(fsx_claim: str) -> list[dict[str, Any]]:
    """The training pod's volumes: the FSx claim ``fsx_claim`` and a memory ``emptyDir`` for
    ``/dev/shm`` (the data loaders' shared memory)."""
    return [{"name": "fsx", "persistentVolumeClaim": {"claimName": fsx_claim}},
            {"name": "dshm", "emptyDir": {"medium": "Memory"}}]


def training_runtime(name: str, pod_spec: dict[str, Any],
                     max_restarts: int | None = None) -> Manifest:
    """A torch ``ClusterTrainingRuntime`` (Kubeflow Trainer 2.3.0) named ``name``: one
    replicated job :data:`TRAINER_NODE` whose pods are ``pod_spec``, marked as the trainer
    (``trainer.kubeflow.org/trainjob-ancestor-step: trainer``: the TrainJob's ``numNodes``,
    image, command and ``resourcesPerNode`` go there), with JobSet
    ``failurePolicy.maxRestarts`` ``max_restarts`` (``None``: left out)."""
    jobset_spec: dict[str, Any] = {
        "replicatedJobs": [
            {
                "name": TRAINER_NODE,
                "template": {
                    "metadata": {
                        "labels": {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}
                    },
                    "spec": {"template": {"spec": pod_spec}},
                },
            }
        ]
    }
    if max_restarts is not None:
        jobset_spec["failurePolicy"] = {"maxRestarts": max_restarts}
    return {
        "apiVersion": TRAINER_API_VERSION,
        "kind": "ClusterTrainingRuntime",
        "metadata": {
            **object_metadata(name),
            "labels": {PROJECT_LABEL: "trn-ultracluster", "trainer.kubeflow.org/framework": "torch"},
        },
        "spec": {
            "mlPolicy": {"numNodes": 1, "torch": {}},
            "template": {"spec": jobset_spec},
        },
    }
