"""Kubeflow Trainer ``TrainJob``: the manifest of a job and the client that runs it.

The stack's ``ClusterTrainingRuntime`` (output ``EksTrainingRuntimeName``) holds the pod
template: tolerations, node selector, the FSx claim at ``/fsx``, the Neuron/EFA
environment. The TrainJob names the image, the command, the node count, the processes
per node and the per-node resources, the last two from the instance catalog.

API: ``trainer.kubeflow.org/v1alpha1`` ``TrainJob`` (the Kubeflow Trainer 2.3.0 CRD
``trainer.kubeflow.org_trainjobs.yaml``, kubeflow/trainer ``manifests/base/crds``).
Resource names: ``aws.amazon.com/neuron`` (one per Trainium chip, Neuron device plugin) and
``vpc.amazonaws.com/efa`` (one per EFA interface, EFA device plugin; EKS user guide
"node-efa"). Pods of a TrainJob carry the JobSet label ``jobset.sigs.k8s.io/jobset-name``
= the TrainJob name (kubernetes-sigs/jobset ``api/jobset/v1alpha2``, ``JobSetNameKey``);
the first node's pod has ``batch.kubernetes.io/job-completion-index=0``
(:data:`COMPLETION_INDEX_LABEL`). Names shared with the stack's runtime (container
``node``, the project label, the per-node resources) come from :mod:`trn_ultracluster.orchestrators.eks.manifests`.

The official Kubernetes Python client is imported only when a cluster is contacted.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from trn_ultracluster.cli.errors import CliError, ExitCode
from trn_ultracluster.cli.job_args import JobRequest
from trn_ultracluster.cli.launch import bash_word
from trn_ultracluster.cli.node_script import NodeContext, node_script
from trn_ultracluster.contracts.catalog import InstanceSpec
from trn_ultracluster.contracts.pools import POOL_LABEL
from trn_ultracluster.orchestrators.eks.manifests import (
    PROJECT_LABEL,
    TRAINER_API_VERSION,
    TRAINER_NODE,
)
from trn_ultracluster.orchestrators.eks.pools import (
    pool_resource_requirements,
    processes_per_node,
)

__all__ = ["TRAINER_GROUP", "TRAINER_VERSION", "TrainJobClient", "job_state", "train_job",
           "runtime_patch", "ultraserver_affinity"]

TRAINER_GROUP, TRAINER_VERSION = TRAINER_API_VERSION.split("/")
"""API group and version of the Trainer CRDs (the custom-objects API takes them apart)."""
TRAINJOB_PLURAL = "trainjobs"
JOBSET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"
COMPLETION_INDEX_LABEL = "batch.kubernetes.io/job-completion-index"
"""Set by the Job controller on pods of Indexed Jobs (JobSet's Jobs are Indexed): Kubernetes
"Well-Known Labels, Annotations and Taints",
https://kubernetes.io/docs/reference/labels-annotations-taints/#batch-kubernetes-io-job-completion-index
(always an annotation; also a label when the ``PodIndexLabel`` feature gate is on)."""


def run_stamp(submitted: str) -> str:
    """The digits of an ISO 8601 time (``2026-11-27T05:20:29+00:00`` -> ``20261127052029``)."""
    return "".join(c for c in submitted.split("+")[0] if c.isdigit())


CODE_ANNOTATION = "trn-ultracluster/code-sha256"
"""Annotation of a TrainJob that runs a working directory snapshot: its SHA-256 (``status``
shows it)."""


def container_command(job: JobRequest) -> list[str]:
    """The trainer container's command: bash running the node script
    (:func:`~trn_ultracluster.cli.node_script.node_script`) with the node's place from
    Kubeflow Trainer's ``PET_*`` variables (kubeflow/trainer torch plugin: ``PET_NNODES``,
    ``PET_NODE_RANK``, ``PET_MASTER_ADDR``, ``PET_MASTER_PORT``, ``PET_NPROC_PER_NODE``);
    torchrun reads its launcher options from the same variables, so it is plain ``torchrun``.
    The run id is the TrainJob's name and submit time: a name is unique in the namespace only
    while the TrainJob exists, and a resubmitted name must not meet an earlier run's failure
    marker."""
    node = NodeContext(rank='"${PET_NODE_RANK}"', nnodes='"${PET_NNODES}"',
                       master_addr='"${PET_MASTER_ADDR}"', master_port='"${PET_MASTER_PORT}"',
                       run_id=bash_word(f"{job.name}-{run_stamp(job.submitted)}"),
                       torchrun="torchrun")
    return ["bash", "-c", "set -euo pipefail\n" + node_script(job, node)]


ULTRASERVER_SERVER_ID = "neuron.amazonaws.com/ultraserver-server-id-{size}"
"""Node label of the Neuron device plugin (2.30.0.0 or later; the Neuron Helm chart 1.10.0
ships 2.32.0.0) on trn2u.48xlarge nodes: the id of the 2- or 4-node group of the Trn2
UltraServer the node is in (Neuron docs, "How to schedule MPI jobs to run on Neuron
UltraServer on EKS", deploy/eks/ultraserver.rst: labels ``ultraserver-server-id-2`` and
``-4``, pods placed with pod affinity on them as topology keys)."""
RUNTIME_PATCH_MANAGER = "trn-ultracluster/ultraserver"
"""``spec.runtimePatches[].manager`` of the job CLI's patch (Trainer 2.3.0 CRD: 1-253
characters, the key of the patch list)."""
POOL_PATCH_MANAGER = "trn-ultracluster/pool"
"""``spec.runtimePatches[].manager`` of the patch that selects a job's node pool."""


def ultraserver_affinity(job_name: str, nodes: int, spec: InstanceSpec) -> dict[str, Any] | None:
    """Pod affinity that places a job's pods by Trn2 UltraServer, as Neuron's EKS guide does
    (deploy/eks/ultraserver.rst): pods of the job together in one 2- or 4-node group
    (required; preferred for a job of several UltraServers, which cannot share one
    group), and no other job's pods in the group (required anti-affinity).

    Args:
        job_name: the TrainJob's name (its pods carry :data:`JOBSET_NAME_LABEL` = it).
        nodes: the job's node count.
        spec: the instance type; ``None`` is returned for a type without UltraServers and
            for one node.

    Placement only: Neuron's guide also runs an init container that writes the
    ``NEURON_RT_ULTRASERVER_*`` and ``NEURON_GLOBAL_TOPOID*`` variables from the node labels
    for its MPI jobs ("required for runtime"); the TrainJob does not set them, so whether a
    torchrun job uses NeuronLink across the UltraServer's nodes is not verified.

    Returns:
        A pod ``affinity``, or ``None``.

    Raises:
        CliError: (USAGE) a node count that is neither 1, 2 or 4 nodes of one UltraServer
            nor whole UltraServers ("trn2u.48xlarge instances can be allocated in set of 1,
            2, or 4", Neuron docs, deploy/eks/dra.rst; the UltraServer init script needs
            exactly that many nodes per server id).
    """
    size = spec.ultraserver_nodes
    if size is None or nodes == 1:
        return None
    if nodes not in (2, size) and nodes % size:
        raise CliError(
            f"--nodes {nodes} on {spec.name}: must be 1, 2, {size} or a multiple of {size} "
            f"(whole Trn2 UltraServers of {size} nodes)",
            "pick such a count (Neuron docs, EKS UltraServer guide)")
    key = ULTRASERVER_SERVER_ID.format(size=2 if nodes == 2 else size)
    this_job = {"matchExpressions": [
        {"key": JOBSET_NAME_LABEL, "operator": "In", "values": [job_name]}]}
    other_jobs = {"matchExpressions": [
        {"key": JOBSET_NAME_LABEL, "operator": "Exists"},
        {"key": JOBSET_NAME_LABEL, "operator": "NotIn", "values": [job_name]}]}
    together = {"labelSelector": this_job, "topologyKey": key}
    return {
        "podAffinity": ({"requiredDuringSchedulingIgnoredDuringExecution": [together]}
                        if nodes <= size else
                        {"preferredDuringSchedulingIgnoredDuringExecution": [
                            {"weight": 100, "podAffinityTerm": together}]}),
        "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": other_jobs, "topologyKey": key}]},
    }


def runtime_patch(manager: str, replicated_jobs: list[dict[str, Any]]) -> dict[str, Any]:
    """One ``spec.runtimePatches`` item (Trainer 2.3.0 CRD): ``replicated_jobs`` (items of the
    JobSet's ``replicatedJobs``, each with the ``name`` of a replicated job of the runtime)
    patched into the runtime's JobSet spec for this TrainJob only. Trainer merges each item
    into the JobSet spec with a strategic merge patch (kubeflow/trainer v2.3.0
    ``pkg/runtime/core/trainingruntime.go``, ``mergeRuntimePatches``), and its webhook
    refuses a replicated job the runtime lacks and a ``manager`` that is no domain-prefixed
    path such as ``trn-ultracluster/pool`` (``pkg/runtime/framework/plugins/jobset/jobset.go``,
    ``validation.IsDomainPrefixedPath``)."""
    return {"manager": manager,
            "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": replicated_jobs}}}}


def pod_patch(manager: str, pod_spec: dict[str, Any]) -> dict[str, Any]:
    """A :func:`runtime_patch` of the pod template of the runtime's :data:`TRAINER_NODE`
    job: a ``nodeSelector`` adds its keys to the runtime's, an ``affinity`` is set."""
    return runtime_patch(manager, [{"name": TRAINER_NODE, "template": {
        "spec": {"template": {"spec": pod_spec}}}}])


def train_job(job: JobRequest, *, spec: InstanceSpec, namespace: str,
              runtime: str, pool_selector: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The ``TrainJob`` manifest of a checked job (a dict ready for the API or ``kubectl
    apply``).

    Args:
        job: the job (name, nodes, program, image, environment, time limit, pool).
        spec: catalog entry of the job's pool's instance type: processes per node
            (``logical_neuron_cores``; 1 on a CPU type) and resources per node
            (:func:`~trn_ultracluster.orchestrators.eks.pools.pool_resource_requirements`:
            NeuronCores and EFA on a Trainium type, CPU and memory on a CPU type) come from it.
        namespace: the stack's training namespace (output ``EksTrainingNamespace``).
        runtime: the ClusterTrainingRuntime of the job's pool (output
            ``EksTrainingRuntimeName`` for the main pool).
        pool_selector: node labels the job's pods require besides the runtime's
            (``{"trn-ultracluster/pool": "trn2"}``), through ``spec.runtimePatches``;
            ``None``: none.

    The time limit becomes ``spec.activeDeadlineSeconds``: seconds the TrainJob may be
    active (from its start, reset on resume) before its pods are stopped and it fails with
    ``DeadlineExceeded`` (Trainer 2.3.0 CRD). On an UltraServer type the pods are placed by
    UltraServer (:func:`ultraserver_affinity`) through ``spec.runtimePatches`` (Trainer 2.3.0
    CRD: per-job patches of the runtime's pod template, ``affinity`` among the fields). A job
    of a pool carries the label ``trn-ultracluster/pool`` (``status --pool`` selects it).

    Raises:
        CliError: a node count that does not fit whole UltraServers.
    """
    trainer: dict[str, Any] = {
        "image": job.image,
        "command": container_command(job),
        "numNodes": job.nodes,
        "numProcPerNode": job.launch.nproc_per_node or processes_per_node(spec),
        "resourcesPerNode": pool_resource_requirements(spec),
    }
    job_spec: dict[str, Any] = {
        "runtimeRef": {"apiGroup": TRAINER_GROUP, "kind": "ClusterTrainingRuntime",
                       "name": runtime},
        "trainer": trainer,
    }
    if job.time_limit_s is not None:
        job_spec["activeDeadlineSeconds"] = job.time_limit_s
    patches = []
    affinity = ultraserver_affinity(job.name, job.nodes, spec)
    if affinity is not None:  # the runtime's pod template, patched for this job only
        patches.append(pod_patch(RUNTIME_PATCH_MANAGER, {"affinity": affinity}))
    if pool_selector:
        patches.append(pod_patch(POOL_PATCH_MANAGER, {"nodeSelector": dict(pool_selector)}))
    if patches:
        job_spec["runtimePatches"] = patches
    labels = {PROJECT_LABEL: "trn-ultracluster"}
    if job.pool is not None:
        labels[POOL_LABEL] = job.pool.name
    metadata: dict[str, Any] = {"name": job.name, "namespace": namespace, "labels": labels}
    if job.launch.code is not None:
        metadata["annotations"] = {CODE_ANNOTATION: job.launch.code.sha256}
    return {"apiVersion": TRAINER_API_VERSION, "kind": "TrainJob", "metadata": metadata,
            "spec": job_spec}


class TrainJobClient:
    """TrainJobs through the official Kubernetes Python client, in the stack's training
    namespace unless a method is given another (a team's, on a stack with teams).

    Args:
        namespace: the stack's training namespace.
        api_client: a ``kubernetes.client.ApiClient``: the EKS backend builds one from
            the stack outputs (or a kubeconfig context); tests pass their own.
    """

    def __init__(self, namespace: str, api_client: Any) -> None:
        from kubernetes import client

        self.namespace = namespace
        self.custom = client.CustomObjectsApi(api_client)
        self.core = client.CoreV1Api(api_client)

    def call(self, what: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        """``fn(*args, **kwargs)`` with the client's failures turned into :class:`CliError`.

        Raises:
            CliError: (CLUSTER) the API server answered with an error, or cannot be reached
                (urllib3's ``MaxRetryError`` and friends are not ``OSError``s).
        """
        from kubernetes.client.exceptions import ApiException
        from urllib3.exceptions import HTTPError

        try:
            return fn(*args, **kwargs)
        except ApiException as err:
            hint = {
                0: "the connection to the API server failed (TLS): check the cluster endpoint "
                   "and its certificate authority (redeploy, or fix --kube-context)",
                401: "refresh credentials: run the stack's EksUpdateKubeconfigCommand",
                403: "your IAM principal needs an EKS access entry: deploy with `make deploy` "
                     "(it adds the deploying principal) or set eks.admin_role_arn",
                404: "check the job name (`status` lists jobs) and that Kubeflow Trainer is "
                     "installed (kubectl get crd trainjobs.trainer.kubeflow.org)",
                409: "a job with this name exists: pick another --name or `cancel` it",
            }.get(err.status, "the Kubernetes API's reason is in this error; fix the request "
                              "or the cluster and retry")
            body = err.body.decode("utf-8", "replace") if isinstance(err.body, bytes) else err.body
            raise CliError(f"{what}: Kubernetes API {err.status} {err.reason}: "
                           f"{(body or '')[:300]}", hint, ExitCode.CLUSTER) from None
        except (HTTPError, OSError) as err:
            raise CliError(f"{what}: cannot reach the Kubernetes API server ({err})",
                           "check the network, the cluster's endpoint access "
                           "(eks.endpoint_access) and --kube-context", ExitCode.CLUSTER) from None

    def create(self, manifest: Mapping[str, Any]) -> dict[str, Any]:
        """Create the TrainJob in its ``metadata.namespace`` (default: the training
        namespace); returns the stored object."""
        namespace = manifest["metadata"].get("namespace") or self.namespace
        return self.call(f"create TrainJob {manifest['metadata']['name']}",
                         self.custom.create_namespaced_custom_object, TRAINER_GROUP,
                         TRAINER_VERSION, namespace, TRAINJOB_PLURAL, dict(manifest))

    def list(self, namespace: str | None = None) -> list[dict[str, Any]]:
        """TrainJobs of ``namespace`` (default: the training namespace)."""
        namespace = namespace or self.namespace
        found = self.call(f"list TrainJobs in {namespace}",
                          self.custom.list_namespaced_custom_object,
                          TRAINER_GROUP, TRAINER_VERSION, namespace, TRAINJOB_PLURAL)
        return list(found.get("items", []))

    def nodes(self, label_selector: str) -> list[tuple[str, bool]]:
        """The cluster's nodes that match ``label_selector`` (Kubernetes label selector
        syntax, ``key=value`` or ``key in (a,b)``), as ``(name, ready)`` in name order;
        ``ready``: the node's ``Ready`` condition is ``True`` (Kubernetes API, ``NodeStatus``
        ``conditions``)."""
        found = self.call("list nodes", self.core.list_node, label_selector=label_selector)
        nodes = []
        for node in found.items:
            conditions = {c.type: c.status for c in (node.status.conditions or [])}
            nodes.append((node.metadata.name, conditions.get("Ready") == "True"))
        return sorted(nodes)

    def get(self, name: str, namespace: str | None = None) -> dict[str, Any]:
        """One TrainJob of ``namespace`` (default: the training namespace)."""
        return self.call(f"get TrainJob {name}", self.custom.get_namespaced_custom_object,
                         TRAINER_GROUP, TRAINER_VERSION, namespace or self.namespace,
                         TRAINJOB_PLURAL, name)

    def find(self, name: str, namespace: str) -> dict[str, Any] | None:
        """TrainJob ``name`` of ``namespace``, or ``None`` when there is none (404)."""
        from kubernetes.client.exceptions import ApiException

        def get_or_none() -> dict[str, Any] | None:
            try:
                return self.custom.get_namespaced_custom_object(
                    TRAINER_GROUP, TRAINER_VERSION, namespace, TRAINJOB_PLURAL, name)
            except ApiException as err:
                if err.status == 404:
                    return None
                raise

        return self.call(f"get TrainJob {name} in {namespace}", get_or_none)

    def delete(self, name: str, namespace: str | None = None) -> None:
        """Delete a TrainJob (its JobSet and pods go with it)."""
        self.call(f"delete TrainJob {name}", self.custom.delete_namespaced_custom_object,
                  TRAINER_GROUP, TRAINER_VERSION, namespace or self.namespace,
                  TRAINJOB_PLURAL, name)

    def logs(self, name: str, tail_lines: int | None = None,
             namespace: str | None = None) -> str:
        """Log of the first node's trainer container (rank 0 prints the metrics), as text.

        Raises:
            CliError: (CLUSTER) no pod yet, or the API server failed the request.
        """
        namespace = namespace or self.namespace
        selector = f"{JOBSET_NAME_LABEL}={name},{COMPLETION_INDEX_LABEL}=0"
        pods = self.call(f"list pods of {name}", self.core.list_namespaced_pod,
                         namespace, label_selector=selector)
        if not pods.items:
            raise CliError(f"TrainJob {name} has no pods yet",
                           f"wait and check `status {name}` (nodes may be scaling up)",
                           ExitCode.CLUSTER)
        pod = pods.items[0].metadata.name
        kwargs: dict[str, Any] = {"container": TRAINER_NODE, "_preload_content": False}
        if tail_lines is not None:
            kwargs["tail_lines"] = tail_lines
        response = self.call(f"logs of {pod}", self.core.read_namespaced_pod_log, pod,
                             namespace, **kwargs)
        try:
            body = self.call(f"logs of {pod}", lambda: response.data)
        finally:
            response.release_conn()
        return decode_log(body)


def decode_log(body: bytes | str) -> str:
    """The text of a pod log body (UTF-8; bytes that are not UTF-8 become U+FFFD).

    :meth:`TrainJobClient.logs` reads the raw body (``_preload_content=False``) because the
    kubernetes client 36.x returns ``read_namespaced_pod_log`` as the repr of the body's
    bytes (``"b'...'"``), or of a dict when the log is one JSON line
    (https://github.com/kubernetes-client/python/issues/2596: the ``str`` response type
    skips the decode and is deserialized with ``json.loads`` then ``str``). A log may hold a
    multi-byte character cut by concurrent writers (progress bars), so undecodable bytes are
    replaced rather than failing the read.
    """
    return body.decode("utf-8", errors="replace") if isinstance(body, bytes) else body


def job_state(job: Mapping[str, Any]) -> str:
    """``Complete``, ``Failed``, ``Suspended``, ``Running`` or ``Pending`` from the TrainJob
    status conditions (Trainer 2.3.0 CRD ``status.conditions``; a condition counts when its
    status is ``"True"``)."""
    conditions = {c.get("type"): c.get("status")
                  for c in job.get("status", {}).get("conditions", [])}
    for state in ("Failed", "Complete", "Suspended"):
        if conditions.get(state) == "True":
            return state
    jobs = job.get("status", {}).get("jobsStatus", [])
    if any(j.get("active", 0) for j in jobs):
        return "Running"
    return "Pending"
