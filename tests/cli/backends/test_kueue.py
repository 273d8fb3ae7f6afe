"""Teams on the EKS job backends: a team's TrainJob goes to its namespace with its Kueue queue
and priority class; handles ``<namespace>/<name>`` (or a bare name found in one namespace);
``status`` shows each team's use of its ClusterQueue's quota and its jobs waiting for quota;
``usage`` counts node-hours from Workloads. The cluster is a fake of the Kubernetes client's
custom-objects API serving recorded Kueue objects (``kueue_objects.py``), which are checked
against Kueue's CRDs."""

from __future__ import annotations

import json
import re
from types import SimpleNamespace

import pytest
import yaml

from tests.cli.backends.kueue_objects import (
    POOLS,
    TEAMS,
    FakeCustomObjects,
    period,
    recorded_queues,
    recorded_workloads,
    usage_rows,
    workload,
)
from tests.cli.helpers import outputs_values, run, write_outputs
from tests.crds import kueue_validator, trainjob_validator
from trn_ultracluster.cli.backends.hyperpod_eks import HyperPodEksBackend
from trn_ultracluster.cli.backends.kueue import PoolResolver, usage_records
from trn_ultracluster.cli.errors import ExitCode
from trn_ultracluster.cli.stack_outputs import StackOutputs
from trn_ultracluster.contracts.pools import parse_pools
from trn_ultracluster.contracts.teams import TeamsInfo

RECIPE = ["--recipe", "llama-1b", "--steps", "10", "--data-dir", "/fsx/d"]


@pytest.fixture
def cluster(tmp_path, monkeypatch):
    """A stack of profiles/teams.yaml on eks, its cluster a :class:`FakeCustomObjects`."""
    from kubernetes import client as k8s

    from trn_ultracluster.cli.backends import eks, trainjob

    custom = FakeCustomObjects(recorded_queues(), recorded_workloads())
    logs = []

    class Core:
        def list_namespaced_pod(self, namespace, label_selector):
            logs.append(namespace)
            return SimpleNamespace(items=[SimpleNamespace(metadata=SimpleNamespace(
                name="pod-0"))])

        def read_namespaced_pod_log(self, pod, namespace, container, **kw):
            return SimpleNamespace(data=f"log of {namespace}\n".encode(),
                                   release_conn=lambda: None)

    def connect(namespace, **_):
        api = trainjob.TrainJobClient(namespace, k8s.ApiClient())
        api.custom, api.core = custom, Core()
        return api

    monkeypatch.setattr(eks, "trainjob_client", connect)
    values = outputs_values("eks")
    values.update(Teams=json.dumps(TEAMS.to_json()), Pools=POOLS)
    path = write_outputs(tmp_path, values)
    return SimpleNamespace(args=["--outputs-file", str(path)], custom=custom, logs=logs)


def test_the_recorded_kueue_objects_are_valid_against_the_crds():
    queues = kueue_validator("ClusterQueue")
    for queue in recorded_queues().values():
        assert [e.message for e in queues.iter_errors(queue)] == []
    workloads = kueue_validator("Workload")
    for found in recorded_workloads().values():
        for obj in found:
            assert [e.message for e in workloads.iter_errors(obj)] == []


# --- where a team's job goes ----------------------------------------------------------------


@pytest.mark.parametrize("team_args, namespace, priority", [
    (["--team", "platform", "--priority", "training", "--nodes", "1"], "platform", "training"),
    ([], "research", "experiment"),  # the default team and its default class
])
def test_a_teams_trainjob_runs_in_its_namespace_on_its_queue(capsys, cluster,
                                                            team_args, namespace, priority):
    code, out, err = run(capsys, "submit", *cluster.args, "--name", "job-a", *RECIPE,
                         *team_args)
    assert code == 0, err
    assert out.startswith(f"submitted {namespace}/job-a ")
    assert f"watch: trn-ultracluster status {namespace}/job-a" in out
    stored = cluster.custom.trainjobs[(namespace, "job-a")]
    labels = stored["metadata"]["labels"]
    assert labels["kueue.x-k8s.io/queue-name"] == namespace
    assert labels["kueue.x-k8s.io/priority-class"] == priority
    stored = {k: v for k, v in stored.items() if k != "status"}
    trainjob_validator().validate(stored)


def test_a_dry_run_prints_the_placement_without_contacting_the_cluster(capsys, cluster):
    code, out, err = run(capsys, "submit", *cluster.args, "--name", "job-a", *RECIPE,
                         "--team", "research", "--priority", "training", "--dry-run")
    assert code == 0, err
    manifest = yaml.safe_load(out)
    assert manifest["metadata"]["namespace"] == "research"
    assert manifest["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] == "training"
    assert cluster.custom.calls == []


def test_a_team_without_names_in_the_stack_output_is_refused(capsys, tmp_path, monkeypatch):
    teams = TEAMS.to_json()
    teams["teams"][0]["queue"] = ""
    values = outputs_values("eks")
    values.update(Teams=json.dumps(teams), Pools=POOLS)
    code, _, err = run(capsys, "submit", "--outputs-file", str(write_outputs(tmp_path, values)),
                       "--name", "job-a", *RECIPE, "--dry-run")
    assert code == ExitCode.STACK
    assert "gives team research no namespace or Kueue queue" in err


# --- handles --------------------------------------------------------------------------------


def test_a_teams_job_is_found_by_its_handle_or_by_its_bare_name(capsys, cluster):
    assert run(capsys, "submit", *cluster.args, "--name", "job-a", *RECIPE, "--nodes", "2")[0] == 0
    code, out, _ = run(capsys, "status", *cluster.args, "research/job-a")
    assert code == 0 and re.match(r"research/job-a\s+Complete\s+nodes=2", out)
    code, out, _ = run(capsys, "status", *cluster.args, "job-a")  # found in research only
    assert code == 0 and out.startswith("research/job-a ")
    assert run(capsys, "logs", *cluster.args, "job-a")[1] == "log of research\n"
    assert run(capsys, "cancel", *cluster.args, "research/job-a")[0] == 0
    assert ("research", "job-a") not in cluster.custom.trainjobs
    code, _, err = run(capsys, "logs", *cluster.args, "job-a")
    assert code == ExitCode.CLUSTER
    assert "no TrainJob job-a in namespaces training, research, platform" in err


def test_a_bare_name_in_two_namespaces_must_be_named_with_its_namespace(capsys, cluster):
    for team in ("research", "platform"):
        assert run(capsys, "submit", *cluster.args, "--name", "job-a", *RECIPE, "--team", team,
                   "--nodes", "1")[0] == 0
    code, _, err = run(capsys, "cancel", *cluster.args, "job-a")
    assert code == ExitCode.USAGE
    assert "TrainJob job-a is in several namespaces: research/job-a, platform/job-a" in err
    assert len(cluster.custom.trainjobs) == 2


@pytest.mark.parametrize("handle", ["a/b/c", "/job", "team/"])
def test_a_malformed_handle_is_refused(capsys, cluster, handle):
    code, _, err = run(capsys, "status", *cluster.args, handle)
    assert code == ExitCode.USAGE
    assert f"job {handle!r} is not NAME or NAMESPACE/NAME" in err
    assert cluster.custom.calls == []


# --- status: each team's quota --------------------------------------------------------------


def test_status_lists_every_namespaces_jobs_and_each_teams_use_of_its_quota(capsys, cluster):
    assert run(capsys, "submit", *cluster.args, "--name", "job-a", *RECIPE, "--nodes", "2")[0] == 0
    code, out, err = run(capsys, "status", *cluster.args)
    assert code == 0, err
    lines = out.splitlines()
    assert re.match(r"research/job-a\s+Complete\s+nodes=2", lines[0])
    assert lines[1:] == [
        "team research: ClusterQueue research, queue research/research; admitted 2, pending 1",
        "  trn1 quota 2 nodes: neuron 48/32 (+16 borrowed), efa 24/16 (+8 borrowed), "
        "cpu 0/256, memory 0/1024Gi",
        "  cpu quota 1 node: cpu 0/17, memory 0/65Gi",
        "  waiting for quota:",
        "    research/waiting [experiment] 2 node(s): WaitingForQuota: couldn't assign flavors "
        "to pod set node: insufficient unused quota for aws.amazon.com/neuron in flavor trn1, "
        "16 more needed",
        "team platform: ClusterQueue platform, queue platform/platform; admitted 1, pending 1",
        "  trn1 quota 1 node: neuron 16/16, efa 8/8, cpu 0/128, memory 0/512Gi",
        "  cpu quota 1 node: cpu 0/17, memory 0/65Gi",
        "  waiting for quota:",
        "    platform/bumped [experiment] 1 node(s): Pending: couldn't assign flavors to pod set "
        "node: insufficient unused quota for aws.amazon.com/neuron in flavor trn1, 16 more "
        "needed",
    ]
    listed = [(c[1], c[2]) for c in cluster.custom.calls if c[0] == "list"]
    assert ("training", "trainjobs") in listed and ("platform", "workloads") in listed


# --- usage ----------------------------------------------------------------------------------


def _records(since: str, until: str) -> dict[str, tuple[str, int, float]]:
    records = usage_records(TEAMS, recorded_workloads(), period(since, until),
                            PoolResolver(parse_pools(POOLS)))
    return {r.job: (r.team, r.pool, r.nodes, r.seconds) for r in records}


def test_usage_counts_each_admitted_workload_inside_the_period():
    assert _records("2026-11-20T00:00", "2026-11-20T12:30") == {
        "research/big": ("research", "trn1", 2, 7200.0),      # 10:00 to its finish at 12:00
        "research/small": ("research", "trn1", 1, 5400.0),    # 11:00, still running
        "platform/prod": ("platform", "trn1", 1, 12600.0),    # 09:00, still running
        "platform/bumped": ("platform", "trn1", 1, 1800.0),   # 1,800 s before its eviction
    }


def test_usage_clips_to_the_period_and_bounds_an_evicted_jobs_past_time():
    """From 09:15: ``bumped`` ran 1,800 s somewhere between 08:00 and 09:30, at most the
    900 s of that window inside the period; ``small`` started at the period's end."""
    assert _records("2026-11-20T09:15", "2026-11-20T11:00") == {
        "research/big": ("research", "trn1", 2, 3600.0),
        "platform/prod": ("platform", "trn1", 1, 6300.0),
        "platform/bumped": ("platform", "trn1", 1, 900.0),
    }


def test_the_usage_command_adds_up_node_and_neuroncore_hours_per_team(capsys, cluster):
    rows = usage_rows(capsys, cluster.args)
    assert set(rows) == {("research", "trn1"), ("platform", "trn1")}
    assert (rows["research", "trn1"]["jobs"], rows["research", "trn1"]["node_hours"]) == (2, 5.5)
    assert rows["research", "trn1"]["neuron_core_hours"] == 5.5 * 32
    assert (rows["platform", "trn1"]["jobs"], rows["platform", "trn1"]["node_hours"]) == (2, 4.0)


def test_pools_are_found_by_flavor_name_instance_type_or_the_pods_selector():
    pools = PoolResolver(parse_pools(POOLS))
    assert (pools.flavor("trn1"), pools.flavor("m7i.8xlarge"), pools.flavor("ml.trn1.32xlarge"),
            pools.flavor("other")) == ("trn1", "cpu", "trn1", "")
    pending = workload("research", "w", 1, priority="training", created="2026-11-20T10:00:00Z",
                       pool="cpu")
    assert pools.workload(pending) == "cpu"  # no admission: the pods' pool label
    del pending["spec"]["podSets"][0]["template"]["spec"]["nodeSelector"]["trn-ultracluster/pool"]
    assert pools.workload(pending) == "trn1"  # then their instance type


# --- another EKS-based backend reuses it by its TeamInfo names -------------------------------


def test_the_hyperpod_eks_backend_places_and_reads_by_the_names_its_stack_gives():
    teams = TEAMS.to_json()
    for team in teams["teams"]:
        team.update(namespace=f"hyperpod-ns-{team['name']}", queue=f"{team['name']}-lq",
                    cluster_queue=f"{team['name']}-cq")
    values = outputs_values("hyperpod-eks")
    values.update(Teams=json.dumps(teams), Pools=POOLS)
    outputs = StackOutputs("TrnUltraCluster", values, "test")
    info = outputs.teams()
    backend = HyperPodEksBackend(outputs, SimpleNamespace(), lambda: None)
    namespace, labels = backend.placement(info.teams[1], info.priority_classes[0])
    assert (namespace, labels) == ("hyperpod-ns-platform", {
        "kueue.x-k8s.io/queue-name": "platform-lq", "kueue.x-k8s.io/priority-class": "training"})
    queues = {f"{t}-cq": q for t, q in recorded_queues().items()}
    workloads = {f"hyperpod-ns-{t}": w for t, w in recorded_workloads().items()}
    custom = FakeCustomObjects(queues, workloads)
    backend._client = SimpleNamespace(custom=custom, call=lambda what, fn, *a: fn(*a))
    lines = backend.team_status(TeamsInfo.from_json(teams))
    assert lines[0] == ("team research: ClusterQueue research-cq, queue "
                        "hyperpod-ns-research/research-lq; admitted 2, pending 1")
    assert ("get", None, "clusterqueues", "platform-cq") in custom.calls
    assert ("list", "hyperpod-ns-platform", "workloads", None) in custom.calls
