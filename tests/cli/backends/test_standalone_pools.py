"""The ``standalone`` job backend with node pools: a stack whose ``Pools`` output names each
pool's Auto Scaling groups (moto), a job on a pool runs on that pool's instances, its node
count is checked against the pool, ``scale`` and ``status`` take the pool, a CPU pool runs
its jobs in the training image; and a CPU pool's ``trn_train prepare-data`` job for real on
this machine (a local node, a ``docker`` stand-in), writing to the stand-in ``/fsx``."""

from __future__ import annotations

import base64
import json
import time
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import boto3
import moto
import pytest

from tests.cli.backends.local_nodes import REPO, LocalNodes
from tests.cli.helpers import REGION, outputs_values, write_outputs
from trn_ultracluster.cli.backends import node_jobs
from trn_ultracluster.cli.backends import standalone as backend_module
from trn_ultracluster.cli.backends.standalone import Node, StandaloneBackend, StandaloneNodes
from trn_ultracluster.cli.backends.ssm import MAX_TARGETS
from trn_ultracluster.cli.errors import CliError, ExitCode
from trn_ultracluster.cli.job_args import job_request
from trn_ultracluster.cli.launch import NO_LAUNCHER, Launch
from trn_ultracluster.cli.stack_outputs import outputs_from_file
from trn_ultracluster.contracts.catalog import get_any_instance
from trn_ultracluster.contracts.pools import PoolInfo
from trn_ultracluster.contracts.standalone import job_dir

IMAGE = "123456789012.dkr.ecr.us-west-2.amazonaws.com/trn:abc"
POOLS = (("trn1", "trn1.32xlarge", True, (0, 1, 2), "xla"),
         ("trn2", "trn2.48xlarge", True, (0, 0, 4), "native"),
         ("cpu", "m7i.8xlarge", False, (0, 1, 2), ""))


def pools_json(groups: dict[str, list[str]]) -> str:
    """The ``Pools`` output of the three pools above, each with ``groups[name]`` (the shape
    the stack writes: groups comma-joined)."""
    return json.dumps([{"name": name, "instance_type": kind, "accelerated": accelerated,
                        "nodes": dict(zip(("min", "desired", "max"), counts)),
                        "neuron_stack": stack, "image_uri": IMAGE,
                        "auto_scaling_groups": ",".join(groups.get(name, []))}
                       for name, kind, accelerated, counts, stack in POOLS])


def make_backend(tmp_path: Path, groups: dict[str, list[str]], **values: str,
                 ) -> StandaloneBackend:
    found = outputs_values("standalone")
    found.update({"Pools": pools_json(groups), "NodeCountMax": "2",
                  "StandaloneAutoScalingGroupName": ",".join(groups.get("trn1", [])), **values})
    outputs = outputs_from_file(write_outputs(tmp_path, found), "TrnUltraCluster")
    return StandaloneBackend(outputs, SimpleNamespace(image=None),
                             lambda: boto3.Session(region_name=REGION))


def pool(backend: StandaloneBackend, name: str) -> PoolInfo:
    return next(p for p in backend.outputs.pools() if p.name == name)


def moto_groups(sizes: dict[str, tuple[int, int]]) -> dict[str, list[str]]:
    """One Auto Scaling group per pool in moto, ``sizes[name]`` = (desired, max), in one
    subnet; pool name -> [group name]."""
    ec2 = boto3.client("ec2", region_name=REGION)
    vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
    subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="10.0.1.0/24")["Subnet"]["SubnetId"]
    template = ec2.create_launch_template(LaunchTemplateName="lt", LaunchTemplateData={
        "ImageId": "ami-12c6146b"})["LaunchTemplate"]["LaunchTemplateId"]
    out = {}
    for name, (desired, most) in sizes.items():
        group = f"TrnUltraCluster-Standalone{name.title()}Nodes-X"
        boto3.client("autoscaling", region_name=REGION).create_auto_scaling_group(
            AutoScalingGroupName=group, MinSize=0, MaxSize=most, DesiredCapacity=desired,
            VPCZoneIdentifier=subnet, LaunchTemplate={"LaunchTemplateId": template})
        out[name] = [group]
    return out


def instances_of(group: str) -> list[str]:
    (described,) = boto3.client("autoscaling", region_name=REGION).describe_auto_scaling_groups(
        AutoScalingGroupNames=[group])["AutoScalingGroups"]
    return sorted(i["InstanceId"] for i in described["Instances"])


def a_job(backend: StandaloneBackend, pool_name: str | None, nodes: int = 1, **launch):
    chosen = pool(backend, pool_name) if pool_name else None
    spec = get_any_instance(chosen.instance_type if chosen else "trn1.32xlarge")
    job = job_request(name="job-a", nodes=1, spec=spec, image=IMAGE, output_dir="/fsx/runs/job-a",
                      launch=Launch(program=("python", "-m", "trn_train", "prepare-data"),
                                    **({"launcher": NO_LAUNCHER} | launch)))
    return replace(job, nodes=nodes, pool=chosen)


@pytest.fixture
def recorded(monkeypatch):
    """SSM Run Command replaced by a recorder: [(instance ids, script)], every node answers
    ``ok``."""
    calls: list[tuple[list[str], str]] = []

    def run_command(session, instance_ids, script, **kwargs):
        calls.append((sorted(instance_ids), script))
        return {i: "ok\n" for i in instance_ids}

    monkeypatch.setattr(backend_module, "run_command", run_command)
    return calls


# --- where a job runs ---------------------------------------------------------------------

@moto.mock_aws
def test_a_job_on_a_pool_runs_on_that_pools_instances(tmp_path, recorded):
    groups = moto_groups({"trn1": (2, 2), "trn2": (0, 4), "cpu": (1, 2)})
    backend = make_backend(tmp_path, groups)
    rendered = backend.render(a_job(backend, "cpu"))
    assert backend.submit(rendered) == "job-a"
    cpu = instances_of(groups["cpu"][0])
    (prepare_on, prepare), (start_on, start) = recorded
    assert prepare_on == start_on == cpu
    (line,) = [ln for ln in prepare.splitlines() if ln.endswith("/job.json")]
    meta = json.loads(base64.b64decode(line.split()[1]).decode())
    assert (meta["pool"], meta["instance_type"], meta["runtime"]) == ("cpu", "m7i.8xlarge",
                                                                      "container")
    assert meta["instances"] == cpu
    # without a pool: the main pool's groups (StandaloneAutoScalingGroupName), as before pools
    recorded.clear()
    backend = make_backend(tmp_path, groups)
    backend.submit(backend.render(replace(a_job(backend, None), name="job-b")))
    assert recorded[0][0] == instances_of(groups["trn1"][0])[:1]


def test_more_nodes_than_the_pool_holds_is_refused_naming_the_pool(tmp_path):
    backend = make_backend(tmp_path, {"trn1": ["g1"], "cpu": ["g3"]})
    with pytest.raises(CliError) as err:
        backend.render(a_job(backend, "cpu", nodes=3))
    assert err.value.exit_code == ExitCode.USAGE
    assert "--nodes 3: pool cpu (m7i.8xlarge) has at most 2 nodes (its nodes.max)" in str(
        err.value)


@moto.mock_aws
def test_fewer_nodes_of_the_pool_in_service_says_how_to_scale_that_pool(tmp_path, recorded):
    groups = moto_groups({"trn1": (2, 2), "cpu": (1, 2)})
    backend = make_backend(tmp_path, groups)
    with pytest.raises(CliError) as err:
        backend.submit(backend.render(a_job(backend, "cpu", nodes=2)))
    assert err.value.exit_code == ExitCode.CLUSTER
    assert (f"1 node(s) of pool cpu (m7i.8xlarge, Auto Scaling group(s) {groups['cpu'][0]}) "
            "in service, 2 needed") in err.value.message
    assert "trn-ultracluster scale --pool cpu --nodes 2" in err.value.fix
    assert recorded == []


def test_a_pool_the_pools_output_gives_no_groups_is_a_stack_error(tmp_path):
    backend = make_backend(tmp_path, {"trn1": ["g1"]})
    backend._client = StandaloneNodes([], None, find=lambda groups: [])
    with pytest.raises(CliError) as err:
        backend.scale(1, pool(backend, "cpu"))
    assert err.value.exit_code == ExitCode.STACK
    assert "names no Auto Scaling group of pool cpu" in err.value.message


# --- what a CPU pool's job runs -------------------------------------------------------------

def test_a_cpu_pools_job_runs_in_the_training_image_even_on_a_dlami_venv_stack(tmp_path):
    backend = make_backend(tmp_path, {"trn1": ["g1"], "cpu": ["g3"]},
                           StandaloneRuntime="dlami-venv", StandaloneDlamiVenv="/opt/venv")
    script = backend.render(a_job(backend, "cpu")).text
    assert f"  IMAGE={IMAGE}" in script and "docker run --rm --init" in script
    assert "/opt/venv" not in script
    assert script.splitlines()[-1] == "python -m trn_train prepare-data"
    assert "job job-a, 1 x m7i.8xlarge" in script
    # a Trainium pool of the same stack uses the DLAMI's venv
    trn1 = backend.render(a_job(backend, "trn1")).text
    assert "source /opt/venv/bin/activate" in trn1 and "docker run" not in trn1


def test_torchrun_on_a_cpu_pool_needs_nproc_per_node(tmp_path):
    backend = make_backend(tmp_path, {"trn1": ["g1"], "cpu": ["g3"]})
    job = a_job(backend, "cpu", launcher="torchrun")
    job = replace(job, launch=replace(job.launch, nproc_per_node=None))  # submit gives 1
    with pytest.raises(ValueError, match="m7i.8xlarge has no NeuronCores .* --nproc-per-node N"):
        backend.render(job)
    job = replace(job, launch=replace(job.launch, nproc_per_node=4))
    assert "--nproc-per-node=4" in backend.render(job).text


# --- scale and status -----------------------------------------------------------------------

@moto.mock_aws
def test_scale_sets_only_the_pools_groups(tmp_path):
    groups = moto_groups({"trn1": (1, 2), "cpu": (0, 2)})
    backend = make_backend(tmp_path, groups)
    line = backend.scale(2, pool(backend, "cpu"))
    assert line.startswith(f"pool cpu: Auto Scaling group(s) {groups['cpu'][0]} 2: desired "
                           "capacity 2")
    desired = {g["AutoScalingGroupName"]: g["DesiredCapacity"] for g in boto3.client(
        "autoscaling", region_name=REGION).describe_auto_scaling_groups()["AutoScalingGroups"]}
    assert desired == {groups["trn1"][0]: 1, groups["cpu"][0]: 2}
    with pytest.raises(CliError) as err:
        backend.scale(3, pool(backend, "cpu"))
    assert "between pool cpu's nodes.min (0) and nodes.max (2), got 3" in err.value.message
    backend.scale(0, None)  # the main pool
    desired = {g["AutoScalingGroupName"]: g["DesiredCapacity"] for g in boto3.client(
        "autoscaling", region_name=REGION).describe_auto_scaling_groups()["AutoScalingGroups"]}
    assert desired == {groups["trn1"][0]: 0, groups["cpu"][0]: 2}


def status_line(name: str, pool_name: str, active: bool = False) -> str:
    return json.dumps({"name": name, "found": True, "nodes": 1, "pool": pool_name,
                       "submitted": f"2026-11-27T10:0{len(name)}:00Z", "exits": {"0": 0},
                       "cancelled": False, "active": active}) + "\n"


def test_status_of_a_pool_lists_its_nodes_and_only_its_jobs(tmp_path):
    """Every pool's nodes answer (a job is RUNNING where its unit is active, whichever pool);
    ``status --pool`` keeps that pool's jobs; a job from before pools is the main pool's."""
    nodes = {"g1": [Node("i-trn1", "10.0.1.1")], "g2": [], "g3": [Node("i-cpu", "10.0.1.3")]}
    asked: list[list[str]] = []

    def run(instance_ids, script):
        asked.append(sorted(instance_ids))
        return {i: status_line("prep", "cpu", active=i == "i-cpu") + status_line("train", "trn1")
                + status_line("old", "") for i in instance_ids}

    backend = make_backend(tmp_path, {"trn1": ["g1"], "trn2": ["g2"], "cpu": ["g3"]})
    backend._client = StandaloneNodes([], run, find=lambda groups: nodes[groups[0]])
    lines = backend.status(None, pool(backend, "cpu"))
    assert lines[0] == "pool cpu (m7i.8xlarge): 1 node(s) in service, nodes.max 2"
    assert [ln.split()[:2] for ln in lines[1:]] == [["prep", "RUNNING"]]
    assert asked == [["i-cpu", "i-trn1"]]
    lines = backend.status(None, pool(backend, "trn1"))
    assert sorted(ln.split()[0] for ln in lines[1:]) == ["old", "train"]
    assert all("pool=trn1" in ln for ln in lines[1:])
    assert len(backend.status(None)) == 3  # every pool's jobs
    assert backend.status(None, pool(backend, "trn2")) == [
        "pool trn2 (trn2.48xlarge): 0 node(s) in service, nodes.max 4",
        "no jobs on pool trn2's nodes yet"]
    with pytest.raises(CliError, match="no job named train of pool cpu"):
        backend.status("train", pool(backend, "cpu"))


def test_commands_go_to_at_most_50_instances_each():
    calls = []
    nodes = [Node(f"i-{n:017x}", "10.0.0.1") for n in range(2 * MAX_TARGETS + 3)]
    client = StandaloneNodes([], lambda ids, script: calls.append(ids) or {i: "" for i in ids})
    assert len(client.on(nodes, "true")) == len(nodes)
    assert [len(c) for c in calls] == [MAX_TARGETS, MAX_TARGETS, 3]


# --- a CPU pool's prepare-data job, for real -------------------------------------------------

DOCKER = """#!/bin/bash
# docker stand-in: `run [OPTIONS] IMAGE COMMAND...` runs COMMAND here with the -e variables
# (the image's place is this machine's Python with the training program on PYTHONPATH).
echo "docker $*" >> "$SHIM_STATE/docker.log"
[[ "$1" == run ]] || exit 0
shift
envs=()
while [[ "$1" == -* ]]; do
  case "$1" in
    --rm|--init) shift ;;
    -e) envs+=("$2"); shift 2 ;;
    *) shift 2 ;;
  esac
done
shift  # the image
exec env "${envs[@]}" "$@"
"""


def test_a_cpu_pool_prepares_a_dataset_on_the_shared_file_system(tmp_path, monkeypatch):
    """``python -m trn_train prepare-data`` as a job of the CPU pool: the job script exactly as
    rendered, ``docker run`` of the training image (a stand-in running the command here),
    the dataset written under /fsx, the job COMPLETED in its pool."""
    from trn_train.tokenizer import train_tokenizer

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for n in range(20):
        (corpus / f"doc{n}.txt").write_text(" ".join(f"word{(n * 7 + k) % 50}" for k in range(200)))
    tokenizer = train_tokenizer([str(corpus)], tmp_path / "tokenizer", "bpe", 300)
    node = Node("i-cpu", "127.0.0.1")
    # the image's Python: this test's (first on the nodes' PATH), with the training program
    local = LocalNodes(tmp_path, [node.instance_id],
                       env={"PYTHONPATH": f"{REPO}/training:{REPO}", "OMP_NUM_THREADS": "1"})
    local.mark_ready()
    (local.shims / "docker").write_text(DOCKER)
    (local.shims / "docker").chmod(0o755)
    env_file = local.fsx / ".trn-ultracluster/env"
    env_file.parent.mkdir(parents=True)
    env_file.write_text("export TRN_NEURON_CACHE_DIR=/fsx/neuron-compile-cache\n")
    backend = make_backend(tmp_path, {"trn1": ["g1"], "trn2": ["g2"], "cpu": ["g3"]})
    monkeypatch.setattr(StandaloneBackend, "connect", lambda self: StandaloneNodes(
        [], local, find=lambda groups: [node] if groups == ("g3",) else []))
    job = a_job(backend, "cpu")
    job = replace(job, image="local/trn:cpu", launch=replace(job.launch, program=(
        "python", "-m", "trn_train", "prepare-data", "--input", str(corpus), "--tokenizer",
        str(tokenizer), "--seq-len", "32", "--out", "/fsx/datasets/cpu-prep", "--no-progress")))
    assert backend.submit(backend.render(job)) == "job-a"
    deadline = time.monotonic() + 120
    while not (state := backend.state("job-a")).ended:
        assert time.monotonic() < deadline, state
        time.sleep(0.5)
    directory = Path(str(local.fsx) + job_dir("job-a").removeprefix("/fsx"))
    assert state.text == "COMPLETED", (directory / "node-0.log").read_text()[-3000:]
    manifest = json.loads((local.fsx / "datasets/cpu-prep/manifest.json").read_text())
    assert manifest["seq_len"] == 32
    docker = (local.state[node.instance_id] / "docker.log").read_text()
    assert "docker run --rm --init --name trn-job-job-a" in docker and "--device" not in docker
    assert backend.status("job-a", pool(backend, "cpu"))[1].split()[:2] == ["job-a", "COMPLETED"]
    assert node_jobs.META_FILE in {p.name for p in directory.iterdir()}
