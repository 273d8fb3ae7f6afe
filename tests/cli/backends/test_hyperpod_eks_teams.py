"""Teams on ``hyperpod-eks`` (HyperPod task governance) through the job CLI: a team's TrainJob
carries its queue and priority labels to the Job and pod templates of every replicated job
(``spec.runtimePatches``, valid against the Trainer 2.3.0 CRD; the JobSet itself unlabelled;
``eks`` unchanged); submit, status, logs, cancel and smoke-test of a job in a team namespace;
``status`` reads the teams' ClusterQueues (flavors named by ``ml.`` type; the
idle-resource-sharing ClusterQueues never); ``usage`` counts a job whose pods are Workloads of
their own once, one node per pod. The cluster is a fake of the Kubernetes client's APIs
serving the objects of ``task_governance_objects.py``, checked against Kueue's CRDs."""

from __future__ import annotations

import json
import re
from types import SimpleNamespace

import pytest
import yaml

from tests.cli.backends.kueue_objects import FakeCustomObjects, period, usage_rows
from tests.cli.backends.task_governance_objects import (
    IDLE_QUEUE,
    FakeCore,
    hyperpod_teams,
    pod_name,
    recorded_pods,
    recorded_queues,
    recorded_workloads,
)
from tests.cli.backends.test_eks import ALLREDUCE
from tests.cli.helpers import run
from tests.cli.program_helpers import make_workdir
from tests.cli.team_helpers import teams_file
from tests.crds import kueue_validator, trainjob_validator
from trn_ultracluster.cli.backends.hyperpod_eks import TASK_GOVERNANCE_PATCH_MANAGER
from trn_ultracluster.cli.backends.kueue import KueueClient, PoolResolver, usage_records
from trn_ultracluster.cli.backends.trainjob import POOL_PATCH_MANAGER, RUNTIME_PATCH_MANAGER
from trn_ultracluster.contracts.pools import parse_pools

RECIPE = ["--recipe", "llama-1b", "--steps", "10", "--data-dir", "/fsx/d"]
RESEARCH = "hyperpod-ns-research"


@pytest.fixture
def outputs(tmp_path) -> str:
    """An outputs file of profiles/teams.yaml on hyperpod-eks with its ``Teams`` output."""
    return teams_file(tmp_path, "hyperpod-eks", teams=hyperpod_teams())


@pytest.fixture
def cluster(outputs, monkeypatch):
    """That stack's cluster: :class:`FakeCustomObjects` and :class:`FakeCore`."""
    from kubernetes import client as k8s

    from trn_ultracluster.cli.backends import eks, trainjob

    custom = FakeCustomObjects(recorded_queues(), recorded_workloads())
    core = FakeCore(custom, recorded_pods())

    def connect(namespace, **_):
        api = trainjob.TrainJobClient(namespace, k8s.ApiClient())
        api.custom, api.core = custom, core
        return api

    monkeypatch.setattr(eks, "trainjob_client", connect)
    return SimpleNamespace(args=["--outputs-file", outputs], custom=custom, core=core)


def _labels_patch(manifest: dict) -> dict:
    (patch,) = [p for p in manifest["spec"].get("runtimePatches", [])
                if p["manager"] == TASK_GOVERNANCE_PATCH_MANAGER]
    return patch["trainingRuntimeSpec"]["template"]


# --- the TrainJob -------------------------------------------------------------------------------


@pytest.mark.parametrize("extra, managers", [
    ([*RECIPE], [TASK_GOVERNANCE_PATCH_MANAGER]),
    (["--pool", "cpu", "--launcher", "none", "--", "python", "train.py"],
     [POOL_PATCH_MANAGER, TASK_GOVERNANCE_PATCH_MANAGER]),
])
def test_a_teams_trainjob_carries_its_labels_to_every_job_and_pod(capsys, tmp_path, outputs, extra,
                                                                  managers):
    work = ["--workdir", str(make_workdir(tmp_path / "work"))] if "--" in extra else []
    code, out, err = run(capsys, "submit", "--outputs-file", outputs, "--name", "job-a",
                         "--team", "platform", "--priority", "experiment", "--nodes", "1",
                         "--dry-run", *work, *extra)
    assert code == 0, err
    manifest = yaml.safe_load(out)
    trainjob_validator().validate(manifest)
    labels = {"kueue.x-k8s.io/queue-name": "hyperpod-ns-platform-localqueue",
              "kueue.x-k8s.io/priority-class": "experiment-priority"}
    assert manifest["metadata"]["namespace"] == "hyperpod-ns-platform"
    assert labels.items() <= manifest["metadata"]["labels"].items()  # as AWS documents
    assert [p["manager"] for p in manifest["spec"]["runtimePatches"]] == managers
    template = _labels_patch(manifest)
    assert "metadata" not in template  # the JobSet's own: Trainer sets its suspend
    assert [j["name"] for j in template["spec"]["replicatedJobs"]] == ["node"]
    for job in template["spec"]["replicatedJobs"]:
        assert job["template"]["metadata"]["labels"] == labels  # the Job
        assert job["template"]["spec"]["template"]["metadata"]["labels"] == labels  # its pods


def test_without_a_class_the_pods_get_the_teams_default(capsys, outputs):
    code, out, err = run(capsys, "submit", "--outputs-file", outputs, "--name", "job-a",
                         *RECIPE, "--dry-run")
    assert code == 0, err
    job = _labels_patch(yaml.safe_load(out))["spec"]["replicatedJobs"][0]
    assert job["template"]["spec"]["template"]["metadata"]["labels"] == {
        "kueue.x-k8s.io/queue-name": "hyperpod-ns-research-localqueue",
        "kueue.x-k8s.io/priority-class": "experiment-priority"}  # research's class


def test_an_eks_teams_trainjob_is_unchanged(capsys, tmp_path):
    """Kueue on ``eks`` manages TrainJobs itself: no labels on the Jobs or pods."""
    code, out, err = run(capsys, "submit", "--outputs-file", teams_file(tmp_path, "eks"),
                         "--name", "job-a", *RECIPE, "--team", "research", "--dry-run")
    assert code == 0, err
    manifest = yaml.safe_load(out)
    assert manifest["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "research-queue"
    assert "runtimePatches" not in manifest["spec"]


DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
HTTP_PATH = re.compile(r"[A-Za-z0-9/\-._~%!$&'()*+,;=:]+")
"""What Trainer's webhook requires of ``runtimePatches[].manager``: a domain-prefixed path
(k8s.io/apimachinery ``validation.IsDomainPrefixedPath``: an RFC 1123 subdomain, ``/``, HTTP
path characters)."""


def test_every_patch_manager_is_its_own_domain_prefixed_path():
    managers = [RUNTIME_PATCH_MANAGER, POOL_PATCH_MANAGER, TASK_GOVERNANCE_PATCH_MANAGER]
    assert len(set(managers)) == len(managers)  # the key of the patch list
    for manager in managers:
        host, _, path = manager.partition("/")
        assert len(manager) <= 253 and len(host) <= 253
        assert DNS1123_SUBDOMAIN.fullmatch(host) and HTTP_PATH.fullmatch(path), manager


# --- a job in a team namespace ------------------------------------------------------------------


def test_submit_status_logs_cancel_of_a_teams_job(capsys, cluster):
    code, out, err = run(capsys, "submit", *cluster.args, "--name", "job-a", *RECIPE,
                         "--team", "research", "--nodes", "2")
    assert code == 0, err
    assert out.startswith(f"submitted {RESEARCH}/job-a ")
    stored = cluster.custom.trainjobs[(RESEARCH, "job-a")]
    assert _labels_patch(stored)["spec"]["replicatedJobs"][0]["name"] == "node"
    code, out, _ = run(capsys, "status", *cluster.args, f"{RESEARCH}/job-a")
    assert code == 0 and re.match(rf"{RESEARCH}/job-a\s+Complete\s+nodes=2", out)
    code, out, _ = run(capsys, "status", *cluster.args, "job-a")  # found in the team's namespace
    assert code == 0 and out.startswith(f"{RESEARCH}/job-a ")
    cluster.core.logs[(RESEARCH, pod_name("job-a", 0))] = b"step 1 loss 7.25\n"
    assert run(capsys, "logs", *cluster.args, "job-a")[1] == "step 1 loss 7.25\n"
    assert (RESEARCH, "jobset.sigs.k8s.io/jobset-name=job-a,"
                      "batch.kubernetes.io/job-completion-index=0") in cluster.core.selectors
    assert run(capsys, "cancel", *cluster.args, f"{RESEARCH}/job-a")[0] == 0
    assert (RESEARCH, "job-a") not in cluster.custom.trainjobs


def test_smoke_test_as_a_team(capsys, cluster):
    cluster.core.logs[(RESEARCH, pod_name("smoke-a", 0))] = \
        f"[rank0]: starting\n{ALLREDUCE}\n".encode()
    code, out, err = run(capsys, "smoke-test", *cluster.args, "--name", "smoke-a",
                         "--team", "research")
    assert code == 0, out + err
    assert f"submitted smoke test {RESEARCH}/smoke-a" in out
    assert "PASS: EFA carries the collectives" in out
    assert _labels_patch(cluster.custom.trainjobs[(RESEARCH, "smoke-a")])


# --- status and usage from task governance's objects --------------------------------------------


def test_the_recorded_objects_are_valid_against_kueues_crds():
    queues, workloads = kueue_validator("ClusterQueue"), kueue_validator("Workload")
    for queue in recorded_queues().values():
        assert [e.message for e in queues.iter_errors(queue)] == []
    for found in recorded_workloads().values():
        for obj in found:
            assert [e.message for e in workloads.iter_errors(obj)] == []


def test_status_reads_each_teams_cluster_queue_and_names_the_waiting_pod(capsys, cluster):
    code, out, err = run(capsys, "status", *cluster.args)
    assert code == 0, err
    assert out.splitlines() == [
        f"no TrainJobs in namespaces training, {RESEARCH}, hyperpod-ns-platform",
        f"team research: ClusterQueue {RESEARCH}-clusterqueue, queue "
        f"{RESEARCH}/{RESEARCH}-localqueue; admitted 2, pending 1",
        "  ml.trn1.32xlarge (pool trn1) quota 2 nodes: neuron 48/32 (+16 borrowed), efa 24/16 "
        "(+8 borrowed), cpu 0/256, memory 0/1024Gi",
        "  ml.m7i.8xlarge (pool cpu) quota 1 node: cpu 0/17, memory 0/65Gi",
        "  waiting for quota:",
        f"    {RESEARCH}/late [experiment-priority] 1 node(s) (pod {pod_name('late', 1)}): "
        "WaitingForQuota: couldn't assign flavors to pod set main: insufficient unused quota "
        "for aws.amazon.com/neuron in flavor ml.trn1.32xlarge, 16 more needed",
        "team platform: ClusterQueue hyperpod-ns-platform-clusterqueue, queue "
        "hyperpod-ns-platform/hyperpod-ns-platform-localqueue; admitted 1, pending 0",
        "  ml.trn1.32xlarge (pool trn1) quota 1 node: neuron 16/16, efa 8/8, cpu 0/128, "
        "memory 0/512Gi",
        "  ml.m7i.8xlarge (pool cpu) quota 1 node: cpu 0/17, memory 0/65Gi",
    ]
    read = [c[3] for c in cluster.custom.calls if c[2] == "clusterqueues"]
    assert read == [f"{RESEARCH}-clusterqueue", "hyperpod-ns-platform-clusterqueue"]
    assert IDLE_QUEUE in cluster.custom.queues  # there, and never read
    # pods are listed only where a waiting Workload is a pod's (research)
    assert cluster.core.selectors == [(RESEARCH, "jobset.sigs.k8s.io/jobset-name")]


def test_usage_counts_a_job_of_per_pod_workloads_once_one_node_per_pod(outputs):
    core = FakeCore(FakeCustomObjects({}, {}), recorded_pods())
    kueue = KueueClient(SimpleNamespace(core=core, call=lambda what, fn, *a, **k: fn(*a, **k)))
    workloads = recorded_workloads()
    owners = {ns: kueue.job_owners(ns) for ns in workloads}
    pools = PoolResolver(parse_pools(json.loads(open(outputs).read())["TrnUltraCluster"]["Pools"]))
    records = usage_records(hyperpod_teams(), workloads,
                            period("2026-11-20T00:00", "2026-11-20T12:30"), pools, owners)
    assert {r.job: (r.team, r.pool, r.nodes, r.nodes * r.seconds) for r in records} == {
        f"{RESEARCH}/wide": ("research", "trn1", 2, 7200.0 + 5400.0),  # 10:00 and 10:30 to 12:00
        f"{RESEARCH}/late": ("research", "trn1", 1, 5400.0),   # pod 1 is still waiting
        f"{RESEARCH}/gang": ("research", "trn1", 2, 2 * 12600.0),  # its Job's Workload
        "hyperpod-ns-platform/solo": ("platform", "trn1", 1, 10800.0),
    }
    by_pod = usage_records(hyperpod_teams(), workloads,
                           period("2026-11-20T00:00", "2026-11-20T12:30"), pools)
    assert f"{RESEARCH}/{pod_name('wide', 1)}" in {r.job for r in by_pod}  # without owners


def test_the_usage_command_counts_jobs_not_pods(capsys, cluster):
    rows = usage_rows(capsys, cluster.args)
    assert set(rows) == {("research", "trn1"), ("platform", "trn1")}
    research, platform = rows["research", "trn1"], rows["platform", "trn1"]
    assert (research["jobs"], research["node_hours"]) == (3, 3.5 + 1.5 + 7.0)
    assert (platform["jobs"], platform["node_hours"]) == (1, 3.0)
    assert platform["neuron_core_hours"] == 3.0 * 32
