"""The EKS job backends per node pool: a job of a pool gets the pool's runtime, image,
processes and resources per node (NeuronCores and EFA on trn1 and trn2, CPU and memory on a
CPU pool), and selects its pool's label when it is not the main pool; ``status --pool``
filters TrainJobs and lists the pool's nodes; ``scale --pool`` scales the pool's node groups
within its ``nodes.max`` and checks its own reservation (botocore Stubber)."""

from __future__ import annotations

import datetime as dt
import json
from types import SimpleNamespace
from typing import Any

import pytest

from tests.crds import trainjob_validator
from tests.cli.helpers import StubSession, outputs_values, stubbed
from trn_ultracluster.cli.backends.eks import EksBackend
from trn_ultracluster.cli.backends.hyperpod_eks import HyperPodEksBackend
from trn_ultracluster.cli.backends.trainjob import TrainJobClient
from trn_ultracluster.cli.errors import CliError, ExitCode
from trn_ultracluster.cli.job_args import JobRequest
from trn_ultracluster.cli.launch import Launch
from trn_ultracluster.cli.stack_outputs import StackOutputs
from trn_ultracluster.contracts.pools import POOL_LABEL

MAIN_IMAGE = "123456789012.dkr.ecr.us-west-2.amazonaws.com/trn:abc"
NATIVE_IMAGE = "123456789012.dkr.ecr.us-west-2.amazonaws.com/trn-native:def"
RID = "cr-0123456789abcdef0"


def _pools(trn2_capacity: str = "on-demand", trn2_rid: str = "") -> str:
    """A ``Pools`` output as an ``eks`` stack of profiles/mixed.yaml writes it."""
    def pool(name, instance_type, accelerated, nodes, stack, image, groups, capacity="on-demand",
             rid=""):
        return {"name": name, "instance_type": instance_type, "accelerated": accelerated,
                "nodes": {"min": 0, "desired": nodes[0], "max": nodes[1]},
                "neuron_stack": stack, "image_uri": image, "node_groups": groups,
                "capacity_type": capacity, "capacity_reservation_id": rid}

    return json.dumps([
        pool("trn1", "trn1.32xlarge", True, (1, 2), "xla", MAIN_IMAGE, "trn1-ng"),
        pool("trn2", "trn2.48xlarge", True, (0, 4), "native", NATIVE_IMAGE,
             "trn2-ng-a,trn2-ng-b", trn2_capacity, trn2_rid),
        pool("cpu", "m7i.8xlarge", False, (1, 2), "", MAIN_IMAGE, "cpu-ng"),
    ])


def _outputs(orchestrator: str = "eks", *, pools: str | None = None, **more: str) -> StackOutputs:
    values = outputs_values(orchestrator)
    values.update({"EksClusterName": "trn", "EksTrainiumNodegroupName": "trn1-ng",
                   "NodeCountMax": "2", **more})
    values["Pools"] = _pools() if pools is None else pools
    if not values["Pools"]:
        del values["Pools"]
    return StackOutputs("TrnUltraCluster", values, "test")


def _backend(outputs: StackOutputs, cls: type[EksBackend] = EksBackend,
             session: Any = None) -> EksBackend:
    return cls(outputs, SimpleNamespace(), lambda: session)


def _job(outputs: StackOutputs, pool: str | None, image: str = MAIN_IMAGE,
         nodes: int = 1) -> JobRequest:
    info = outputs.pool(pool) if pool is not None else None
    return JobRequest("job-a", nodes, Launch(("train.py",)), image, pool=info)


def _selector_patches(manifest: dict[str, Any]) -> list[dict[str, str]]:
    return [job["template"]["spec"]["template"]["spec"]["nodeSelector"]
            for patch in manifest["spec"].get("runtimePatches", [])
            for job in patch["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"]
            if "nodeSelector" in job["template"]["spec"]["template"]["spec"]]


# --- TrainJobs ------------------------------------------------------------------------------


@pytest.mark.parametrize("cls", [EksBackend, HyperPodEksBackend])
@pytest.mark.parametrize("pool, runtime, image, procs, resources, selector", [
    ("trn1", "neuron-torch-distributed", MAIN_IMAGE, 32,
     {"aws.amazon.com/neuron": "16", "vpc.amazonaws.com/efa": "8"}, None),
    ("trn2", "torch-distributed-trn2", NATIVE_IMAGE, 64,
     {"aws.amazon.com/neuron": "16", "vpc.amazonaws.com/efa": "16"}, {POOL_LABEL: "trn2"}),
    ("cpu", "torch-distributed-cpu", MAIN_IMAGE, 1, {"cpu": "17", "memory": "65Gi"},
     {POOL_LABEL: "cpu"}),
])
def test_a_pools_trainjob(cls, pool, runtime, image, procs, resources,
                          selector):
    """The main pool's job runs on the stack's runtime with no extra selector (the runtime
    selects the main pool); another pool's on its own runtime, selecting its label, in its
    Neuron stack's image; resources and processes per node from the pool's type."""
    outputs = _outputs("hyperpod-eks" if cls is HyperPodEksBackend else "eks")
    manifest = _backend(outputs, cls).render(_job(outputs, pool)).payload
    trainjob_validator().validate(manifest)
    assert manifest["spec"]["runtimeRef"]["name"] == runtime
    trainer = manifest["spec"]["trainer"]
    assert (trainer["image"], trainer["numProcPerNode"]) == (image, procs)
    assert trainer["resourcesPerNode"]["requests"] == resources
    assert trainer["resourcesPerNode"].get("limits", resources) == resources
    assert _selector_patches(manifest) == ([selector] if selector else [])
    assert manifest["metadata"]["labels"][POOL_LABEL] == pool


def test_a_cpu_job_requests_no_neuron_resources_or_efa():
    outputs = _outputs()
    trainer = _backend(outputs).render(_job(outputs, "cpu", nodes=2)).payload["spec"]["trainer"]
    assert not any(name.startswith(("aws.amazon.com/", "vpc.amazonaws.com/"))
                   for part in trainer["resourcesPerNode"].values() for name in part)
    assert trainer["numNodes"] == 2


def test_an_image_given_with_the_job_is_kept_on_any_pool():
    outputs = _outputs()
    mine = "123456789012.dkr.ecr.us-west-2.amazonaws.com/mine:v1"
    manifest = _backend(outputs).render(_job(outputs, "trn2", image=mine)).payload
    assert manifest["spec"]["trainer"]["image"] == mine


def test_a_stack_without_pools_gets_the_trainjob_it_always_got():
    """No ``Pools`` output (deployed before pools) and no pool: no pool label, no patch, the
    stack's runtime; the same manifest as a job of the main pool but for the label."""
    legacy = _outputs(pools="")
    plain = _backend(legacy).render(_job(legacy, None)).payload
    assert POOL_LABEL not in plain["metadata"]["labels"] and "runtimePatches" not in plain["spec"]
    assert plain["spec"]["runtimeRef"]["name"] == "neuron-torch-distributed"
    main = _backend(legacy).render(_job(legacy, "trainium")).payload
    assert main["metadata"]["labels"].pop(POOL_LABEL) == "trainium"
    assert main == plain


# --- status ---------------------------------------------------------------------------------


class FakeClient:
    """The calls ``status`` makes of a TrainJobClient."""

    namespace = "training"

    def __init__(self, jobs: list[dict[str, Any]], nodes: list[tuple[str, bool]]):
        self.jobs, self._nodes, self.selectors = jobs, nodes, []

    def list(self, namespace=None):
        assert namespace in (None, self.namespace)  # a stack without teams: one namespace
        return self.jobs

    def nodes(self, selector):
        self.selectors.append(selector)
        return self._nodes


def _trainjob(name: str, pool: str | None) -> dict[str, Any]:
    labels = {"trn-ultracluster/managed-by": "trn-ultracluster"}
    if pool:
        labels[POOL_LABEL] = pool
    return {"metadata": {"name": name, "labels": labels}, "spec": {"trainer": {"numNodes": 2}},
            "status": {"conditions": [{"type": "Complete", "status": "True"}]}}


def test_status_of_a_pool_lists_its_jobs_and_nodes():
    outputs = _outputs()
    backend = _backend(outputs)
    backend._client = FakeClient(
        [_trainjob("old", None), _trainjob("dev", "trn1"), _trainjob("big", "trn2")],
        [("ip-10-0-1-1", True), ("ip-10-0-1-2", False)])
    lines = backend.status(None, outputs.pool("trn2"))
    assert lines[0].split() == ["big", "Complete", "nodes=2"]
    assert lines[1] == "pool trn2 (trn2.48xlarge): 2 nodes, 1 ready"
    assert lines[2].split() == ["ip-10-0-1-1", "Ready"] and lines[3].split()[1] == "NotReady"
    assert backend._client.selectors == ["eks.amazonaws.com/nodegroup in (trn2-ng-a,trn2-ng-b)"]
    # a job without a pool label ran on the main pool
    main = [ln.split()[0] for ln in backend.status(None, outputs.pool("trn1"))]
    assert main[:2] == ["old", "dev"] and "big" not in main
    assert backend.status(None, outputs.pool("cpu"))[0] == \
        "no TrainJobs of pool cpu in namespace training"
    assert len(backend.status(None)) == 3  # no pool: every job, no nodes


@pytest.mark.parametrize("pool, selector", [
    ("trn1", "node.kubernetes.io/instance-type=ml.trn1.32xlarge"),
    ("cpu", f"{POOL_LABEL}=cpu"),
])
def test_hyperpod_pools_nodes_by_type_or_label(pool, selector):
    outputs = _outputs("hyperpod-eks", pools=_pools().replace('"node_groups"', '"_"'))
    assert _backend(outputs, HyperPodEksBackend).pool_nodes_selector(
        outputs.pool(pool)) == selector


def test_a_legacy_stacks_nodes_by_instance_type():
    legacy = _outputs(pools="")
    assert _backend(legacy).pool_nodes_selector(legacy.pool(None)) == \
        "node.kubernetes.io/instance-type=trn1.32xlarge"


def test_the_client_lists_nodes_with_their_readiness():
    def node(name, ready):
        return SimpleNamespace(metadata=SimpleNamespace(name=name), status=SimpleNamespace(
            conditions=[SimpleNamespace(type="MemoryPressure", status="False"),
                        SimpleNamespace(type="Ready", status=ready)]))

    calls = []

    def list_node(**kwargs):
        calls.append(kwargs)
        return SimpleNamespace(items=[node("b", "Unknown"), node("a", "True")])

    client = TrainJobClient("training", None)
    client.core = SimpleNamespace(list_node=list_node)
    assert client.nodes(f"{POOL_LABEL}=cpu") == [("a", True), ("b", False)]
    assert calls == [{"label_selector": f"{POOL_LABEL}=cpu"}]


# --- scale ----------------------------------------------------------------------------------


def _describe(stub, name: str, desired: int, most: int = 2) -> None:
    stub.add_response("describe_nodegroup", {"nodegroup": {"scalingConfig": {
        "minSize": 0, "maxSize": most, "desiredSize": desired}}},
        {"clusterName": "trn", "nodegroupName": name})


def test_scale_a_pool_fills_its_node_groups():
    """Its groups, not the main pool's; the main pool's reservation is not checked (the
    Stubber of EC2 has no answer: any call would fail)."""
    outputs = _outputs(CapacityType="capacity-block", CapacityReservationId=RID)
    eks, stub = stubbed("eks")
    ec2, ec2_stub = stubbed("ec2")
    _describe(stub, "trn2-ng-a", 0)
    _describe(stub, "trn2-ng-b", 0)
    for name, size in (("trn2-ng-a", 2), ("trn2-ng-b", 1)):
        stub.add_response("update_nodegroup_config", {}, {
            "clusterName": "trn", "nodegroupName": name, "scalingConfig": {"desiredSize": size}})
    backend = _backend(outputs, session=StubSession(eks=eks, ec2=ec2))
    with stub, ec2_stub:
        line = backend.scale(3, outputs.pool("trn2"))
    stub.assert_no_pending_responses()
    assert line.startswith("pool trn2: 2 node groups (trn2-ng-a: 2, trn2-ng-b: 1): 0 -> 3 nodes")


def test_scale_a_pool_checks_its_own_reservation():
    outputs = _outputs(pools=_pools("capacity-block", RID))
    eks, _ = stubbed("eks")
    ec2, stub = stubbed("ec2")
    stub.add_response("describe_capacity_reservations", {"CapacityReservations": [{
        "CapacityReservationId": RID, "InstanceType": "trn2.48xlarge", "State": "scheduled",
        "TotalInstanceCount": 4,
        "StartDate": dt.datetime(2026, 12, 1, 9, 0, tzinfo=dt.timezone.utc)}]},
        {"CapacityReservationIds": [RID]})
    backend = _backend(outputs, session=StubSession(eks=eks, ec2=ec2))
    with stub, pytest.raises(CliError, match="is scheduled, not active") as err:
        backend.scale(4, outputs.pool("trn2"))
    assert err.value.exit_code == ExitCode.CHECK_FAILED


def test_scale_a_pool_stays_within_its_nodes_max():
    outputs = _outputs()
    with pytest.raises(CliError, match=r"between 0 and pool trn2's nodes.max \(4\), got 5"):
        _backend(outputs, session=StubSession()).scale(5, outputs.pool("trn2"))


def test_scale_the_main_pool_by_name_is_scale_without_a_pool():
    outputs = _outputs()
    for pool in (None, outputs.pool("trn1")):
        eks, stub = stubbed("eks")
        _describe(stub, "trn1-ng", 1)
        stub.add_response("update_nodegroup_config", {}, {
            "clusterName": "trn", "nodegroupName": "trn1-ng",
            "scalingConfig": {"desiredSize": 2}})
        with stub:
            line = _backend(outputs, session=StubSession(eks=eks)).scale(2, pool)
        stub.assert_no_pending_responses()
        assert line.endswith("trn1-ng: 1 -> 2 nodes (new nodes join in a few minutes; watch "
                             "with kubectl get nodes)")
    with pytest.raises(CliError, match=r"the stack's NodeCountMax \(2\)"):
        _backend(outputs, session=StubSession()).scale(3, outputs.pool("trn1"))
