"""The ``standalone`` job backend: the scripts it sends (bash -n, shellcheck), the SSM Run
Command requests (botocore's model, moto), the nodes of the Auto Scaling group (moto), the
submit sequence, job states, chunked logs, scale and shell. The job path for real on CPU:
test_standalone_jobs.py."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys

import boto3
import botocore.session
import moto
import pytest
from botocore.validate import validate_parameters

from tests.cli.backends.local_nodes import LocalNodes
from tests.cli.helpers import (
    REGION,
    STANDALONE_GROUP,
    StubSession,
    dry_run,
    outputs_values,
    run,
    shellcheck,
    write_outputs,
)
from trn_ultracluster.cli.backends import node_jobs
from trn_ultracluster.cli.backends.ssm import RUN_SHELL_SCRIPT, run_command, send_command_request
from trn_ultracluster.cli.backends.standalone import (
    Node,
    StandaloneBackend,
    StandaloneNodes,
    nodes_of_groups,
)
from trn_ultracluster.cli.commands import common
from trn_ultracluster.cli.errors import CliError, ExitCode
from trn_ultracluster.contracts.standalone import READY_FILE, job_dir, job_unit

NODES = [Node("i-0000000000000000a", "10.0.1.10"), Node("i-0000000000000000b", "10.0.1.11")]


def standalone_outputs(tmp_path, **values):
    found = outputs_values("standalone")
    found.update({"NodeCountMax": "2", "NodeCountDesired": "2", **values})
    return write_outputs(tmp_path, found)


class Recorder:
    """A node runner that records (instances, script) and answers from a function."""

    def __init__(self, answer=lambda instance, script: "ok\n"):
        self.calls: list[tuple[list[str], str]] = []
        self.answer = answer

    def __call__(self, instance_ids, script):
        self.calls.append((list(instance_ids), script))
        return {i: self.answer(i, script) for i in instance_ids}


@pytest.fixture
def recorder(monkeypatch):
    nodes = Recorder()
    monkeypatch.setattr(StandaloneBackend, "connect",
                        lambda self: StandaloneNodes(list(NODES), nodes))
    return nodes


def check_bash(script: str, tmp_path, name: str = "script.sh") -> None:
    path = tmp_path / name
    path.write_text(script if script.startswith("#!") else "#!/bin/bash\n" + script)
    subprocess.run(["bash", "-n", str(path)], check=True)
    done = subprocess.run([shellcheck(), str(path)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout


# --- the scripts ------------------------------------------------------------------------------

@pytest.mark.parametrize("runtime, venv", [("container", "none"),
                                           ("dlami-venv", "/opt/aws_neuronx_venv_pytorch_2_9")])
def test_job_script_is_clean_bash_and_runs_torchrun_on_every_neuroncore(capsys, tmp_path,
                                                                       runtime, venv):
    values = {"StandaloneRuntime": runtime, "StandaloneDlamiVenv": venv}
    path = standalone_outputs(tmp_path, **values)
    code, script, err = run(capsys, "submit", "--outputs-file", str(path), "--dry-run", "--name",
                            "job-a", "--recipe", "llama-1b", "--steps", "5", "--data-dir",
                            "/fsx/d", "--env", "X=$Y", "--precompile")
    assert code == 0, err
    check_bash(script, tmp_path)
    torchrun = ('torchrun --nnodes="${NNODES}" --nproc-per-node=32 --node-rank="${NODE_RANK}" '
                '--master-addr="${MASTER_ADDR}" --master-port="${MASTER_PORT}" -m trn_train')
    lines = script.splitlines()
    assert lines[-1].startswith(torchrun) and lines[-2].startswith(
        "neuron_parallel_compile " + torchrun)
    assert "NNODES=2" in lines and "MASTER_PORT=29500" in lines
    assert "source /fsx/.trn-ultracluster/env" in lines and "export X='$Y'" in lines
    if runtime == "container":
        assert "docker run --rm --init --name trn-job-job-a --network host" in script
        assert "  IMAGE=123456789012.dkr.ecr.us-west-2.amazonaws.com/trn:abc" in lines
    else:
        assert f"  source {venv}/bin/activate" in lines and "docker" not in script
        assert "/opt/trn-ultracluster/program/training" in script


def test_node_scripts_are_clean_bash(tmp_path):
    for name, script in {
        "prepare": node_jobs.prepare_script("job-a", "#!/bin/bash\necho hi\n", {"nodes": 2}),
        "start": node_jobs.start_script("job-a", 1, "10.0.1.10", 3600),
        "status": node_jobs.status_script("job-a"),
        "status-all": node_jobs.status_script(None),
        "logs": node_jobs.log_chunk_script("job-a", 0, None, 20),
        "logs-offset": node_jobs.log_chunk_script("job-a", 0, 15000, None),
        "cancel": node_jobs.cancel_script("job-a"),
    }.items():
        check_bash(script, tmp_path, f"{name}.sh")


def test_start_script_checks_readiness_and_starts_a_unit():
    script = node_jobs.start_script("job-a", 1, "10.0.1.10", 90)
    assert f"if [ ! -f {READY_FILE} ]; then" in script
    assert (f"systemd-run --unit={job_unit('job-a')} --collect "
            '--description="trn-ultracluster job job-a" --property=RuntimeMaxSec=90') in script
    assert f"/bin/bash {job_dir('job-a')}/job.sh 1 10.0.1.10" in script
    assert "RuntimeMaxSec" not in node_jobs.start_script("job-a", 0, "10.0.1.10")


def test_a_dlami_venv_stack_refuses_image(capsys, tmp_path):
    path = standalone_outputs(tmp_path, StandaloneRuntime="dlami-venv",
                              StandaloneDlamiVenv="/opt/venv")
    code, _, err = run(capsys, "submit", "--outputs-file", str(path), "--dry-run", "--recipe",
                       "llama-1b", "--steps", "5", "--data-dir", "/fsx/d", "--image", "x/y:z")
    assert code == ExitCode.USAGE
    assert "--image has no effect on this stack" in err


@pytest.mark.parametrize("runtime, venv", [("podman", "none"), ("dlami-venv", "none")])
def test_a_stack_runtime_this_cli_does_not_know_is_a_stack_error(capsys, tmp_path, runtime, venv):
    path = standalone_outputs(tmp_path, StandaloneRuntime=runtime, StandaloneDlamiVenv=venv)
    code, _, err = run(capsys, "submit", "--outputs-file", str(path), "--dry-run", "--recipe",
                       "llama-1b", "--steps", "5", "--data-dir", "/fsx/d")
    assert code == ExitCode.STACK
    assert f"has standalone runtime {runtime!r}" in err and "Traceback" not in err


# --- SSM Run Command: botocore's model and moto ------------------------------------------------

def test_send_command_request_matches_botocore_model():
    model = botocore.session.get_session().get_service_model("ssm")
    request = send_command_request(["i-0000000000000000a", "i-0000000000000000b"], "echo hi\n",
                                   user=None, timeout_s=120)
    validate_parameters(request, model.operation_model("SendCommand").input_shape)
    assert request["DocumentName"] == RUN_SHELL_SCRIPT
    command = request["Parameters"]["commands"][0]
    assert command.endswith("| base64 -d | bash") and "sudo" not in command
    assert base64.b64decode(command.split()[1]).decode() == "echo hi\n"
    with pytest.raises(ValueError, match="1 to 50"):
        send_command_request([f"i-{n:017x}" for n in range(51)], "x", user=None, timeout_s=60)


@moto.mock_aws
def test_run_command_on_several_nodes_through_moto():
    session = boto3.Session(region_name=REGION)
    ids = [i.id for i in boto3.resource("ec2", region_name=REGION).create_instances(
        ImageId="ami-12c6146b", MinCount=2, MaxCount=2)]
    out = run_command(session, ids, "systemctl is-active trn-job-a\n", user=None, poll_s=0)
    assert out == {i: "" for i in ids}  # moto's invocations succeed with empty output
    (sent,) = boto3.client("ssm", region_name=REGION).list_commands()["Commands"]
    assert sorted(sent["InstanceIds"]) == sorted(ids) and sent["DocumentName"] == RUN_SHELL_SCRIPT
    assert sent["Parameters"]["executionTimeout"] == ["300"]


def groups_in_two_subnets(desired: tuple[int, int], max_size: tuple[int, int] = (2, 2),
                          ) -> list[str]:
    """Two Auto Scaling groups (moto), one per subnet, as a stack whose nodes fill two compute
    subnets has: ``STANDALONE_GROUP`` in 10.0.1.0/24 and ``<it>-2`` in 10.0.2.0/24."""
    ec2 = boto3.client("ec2", region_name=REGION)
    vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
    template = ec2.create_launch_template(LaunchTemplateName="efa", LaunchTemplateData={
        "ImageId": "ami-12c6146b", "InstanceType": "trn1.32xlarge"})["LaunchTemplate"]
    names = [STANDALONE_GROUP, f"{STANDALONE_GROUP}-2"]
    for i, name in enumerate(names):
        subnet = ec2.create_subnet(VpcId=vpc, CidrBlock=f"10.0.{i + 1}.0/24")["Subnet"]
        boto3.client("autoscaling", region_name=REGION).create_auto_scaling_group(
            AutoScalingGroupName=name, MinSize=0, MaxSize=max_size[i],
            DesiredCapacity=desired[i], VPCZoneIdentifier=subnet["SubnetId"],
            LaunchTemplate={"LaunchTemplateId": template["LaunchTemplateId"],
                            "Version": "$Latest"})
    return names


@moto.mock_aws
def test_nodes_of_the_groups_are_their_in_service_instances_oldest_first():
    names = groups_in_two_subnets((2, 1))
    session = boto3.Session(region_name=REGION)
    nodes = nodes_of_groups(session, names)
    assert len(nodes) == 3
    assert sorted(n.address.rsplit(".", 1)[0] for n in nodes) == ["10.0.1", "10.0.1", "10.0.2"]
    ec2 = boto3.client("ec2", region_name=REGION)
    described = {i["InstanceId"]: i for r in ec2.describe_instances()["Reservations"]
                 for i in r["Instances"]}
    assert [n.instance_id for n in nodes] == sorted(
        described, key=lambda i: (described[i]["LaunchTime"], i))
    assert len(nodes_of_groups(session, names[:1])) == 2  # an earlier stack's one group
    with pytest.raises(CliError) as err:
        nodes_of_groups(session, [names[0], "missing"])
    assert err.value.exit_code == ExitCode.STACK and "missing" in str(err.value)


@moto.mock_aws
def test_many_nodes_are_described_in_batches(monkeypatch):
    """A 2,000-node cluster is asked for in batches of DESCRIBE_IDS_PER_CALL ids (here 2),
    and every node comes back once."""
    from trn_ultracluster.cli.backends import standalone_nodes

    names = groups_in_two_subnets((2, 1))
    session = boto3.Session(region_name=REGION)
    calls = []
    session.events.register("provide-client-params.ec2.DescribeInstances",
                            lambda params, **_: calls.append(len(params["InstanceIds"])))
    monkeypatch.setattr(standalone_nodes, "DESCRIBE_IDS_PER_CALL", 2)
    assert len({n.instance_id for n in nodes_of_groups(session, names)}) == 3
    assert calls == [2, 1]


# --- submit, status, logs, cancel ---------------------------------------------------------------

def test_submit_prepares_on_the_first_node_then_starts_each_rank(capsys, tmp_path, recorder):
    path = standalone_outputs(tmp_path)
    code, out, err = run(capsys, "submit", "--outputs-file", str(path), "--name", "job-a",
                         "--recipe", "llama-1b", "--steps", "5", "--data-dir", "/fsx/d",
                         "--time", "1:00:00")
    assert code == 0, err
    assert out.startswith("submitted job-a (2 x trn1.32xlarge)")
    (prepare_on, prepare), *starts = recorder.calls
    assert prepare_on == [NODES[0].instance_id] and "exists already" in prepare
    assert [on for on, _ in starts] == [[n.instance_id] for n in NODES]
    for rank, (_, script) in enumerate(starts):
        assert f"job.sh {rank} {NODES[0].address}" in script  # rendezvous on the first node
        assert "--property=RuntimeMaxSec=3600" in script


def test_a_failed_start_cancels_what_started(capsys, tmp_path, monkeypatch):
    def answer(instance, script):
        if "systemd-run" in script and instance == NODES[1].instance_id:
            raise CliError("node not ready", "wait", ExitCode.CLUSTER)
        return "ok\n"

    nodes = Recorder(answer)
    monkeypatch.setattr(StandaloneBackend, "connect",
                        lambda self: StandaloneNodes(list(NODES), nodes))
    code, _, err = run(capsys, "submit", "--outputs-file", str(standalone_outputs(tmp_path)),
                       "--name", "job-a", "--recipe", "llama-1b", "--steps", "5",
                       "--data-dir", "/fsx/d")
    assert code == ExitCode.CLUSTER and "node not ready" in err
    on, script = nodes.calls[-1]
    assert on == [NODES[0].instance_id] and f"systemctl stop {job_unit('job-a')}" in script


def test_too_few_nodes_in_service_says_how_to_scale(capsys, tmp_path, monkeypatch):
    monkeypatch.setattr(StandaloneBackend, "connect",
                        lambda self: StandaloneNodes(NODES[:1], Recorder()))
    code, _, err = run(capsys, "submit", "--outputs-file", str(standalone_outputs(tmp_path)),
                       "--nodes", "2", "--recipe", "llama-1b", "--steps", "5", "--data-dir",
                       "/fsx/d")
    assert code == ExitCode.CLUSTER
    assert (f"1 node(s) of pool trainium (trn1.32xlarge, Auto Scaling group(s) "
            f"{STANDALONE_GROUP}) in service, 2 needed") in err
    assert "scale --nodes 2" in err


@pytest.mark.parametrize("status, state, ended", [
    (dict(active_on=["i-a"]), "RUNNING", False),
    (dict(active_on=["i-a"], cancelled=True), "CANCELLING", False),
    (dict(cancelled=True, exits={"0": 143}), "CANCELLED", True),
    (dict(exits={"0": 0, "1": 0}), "COMPLETED", True),
    (dict(exits={"0": 0, "1": 1}), "FAILED (node 1 exit 1)", True),
    (dict(exits={"0": 0}), "LOST (node 1 neither runs nor ended)", True),
])
def test_job_states(status, state, ended):
    job = node_jobs.JobStatus("job-a", 2, "2026-11-22T10:00:00Z", **status)
    assert (job.state, job.ended) == (state, ended)


def test_nodes_answers_are_merged(capsys, tmp_path, monkeypatch):
    def answer(instance, script):
        active = "true" if instance == NODES[1].instance_id else "false"
        return (f'{{"name": "job-a", "found": true, "nodes": 2, "submitted": "t", "exits": '
                f'{{"0": 0}}, "cancelled": false, "active": {active}}}\n')

    monkeypatch.setattr(StandaloneBackend, "connect",
                        lambda self: StandaloneNodes(list(NODES), Recorder(answer)))
    path = standalone_outputs(tmp_path)
    code, out, _ = run(capsys, "status", "--outputs-file", str(path), "job-a")
    assert code == 0 and out.split()[:2] == ["job-a", "RUNNING"]
    code, _, err = run(capsys, "status", "--outputs-file", str(path), "job-b")
    assert code == ExitCode.CLUSTER and "no job named job-b" in err


def test_status_of_jobs_on_real_files(tmp_path):
    """The status program as the nodes run it, on a job directory with exit files."""
    nodes = LocalNodes(tmp_path, [NODES[0].instance_id])
    directory = nodes.fsx / ".trn-ultracluster/jobs/job-a"
    directory.mkdir(parents=True)
    (directory / "job.json").write_text('{"nodes": 2, "submitted": "t"}')
    (directory / "node-0.exit").write_text("0\n")
    (directory / "node-1.exit").write_text("137\n")
    states = node_jobs.job_states(nodes([NODES[0].instance_id], node_jobs.status_script(None)))
    assert states["job-a"].state == "FAILED (node 1 exit 137)"


def test_logs_come_back_whole_in_chunks_and_tail(capsys, tmp_path, monkeypatch):
    nodes = LocalNodes(tmp_path, [NODES[0].instance_id])
    directory = nodes.fsx / ".trn-ultracluster/jobs/job-a"
    directory.mkdir(parents=True)
    text = "".join(f"line {n} é {'x' * (n % 90)}\n" for n in range(1200))
    (directory / "node-0.log").write_text(text)
    assert len(text.encode()) > 3 * node_jobs.CHUNK_BYTES
    monkeypatch.setattr(StandaloneBackend, "connect",
                        lambda self: StandaloneNodes(NODES[:1], nodes))
    path = standalone_outputs(tmp_path)
    code, out, _ = run(capsys, "logs", "--outputs-file", str(path), "job-a")
    assert code == 0 and out == text
    chunks = -(-len(text.encode()) // node_jobs.CHUNK_BYTES)  # ceiling
    assert len([s for _, s in nodes.scripts if "base64 -w 0" in s]) == chunks
    code, out, _ = run(capsys, "logs", "--outputs-file", str(path), "job-a", "--tail", "3")
    assert out.splitlines() == text.splitlines()[-3:]
    code, _, err = run(capsys, "logs", "--outputs-file", str(path), "job-b")
    assert code == ExitCode.CLUSTER and "job job-b has no log of node 0" in err


def test_cancel_runs_on_every_node(capsys, tmp_path, recorder):
    code, out, _ = run(capsys, "cancel", "--outputs-file", str(standalone_outputs(tmp_path)),
                       "job-a")
    assert (code, out) == (0, "cancelled job-a\n")
    ((on, script),) = recorder.calls
    assert on == [n.instance_id for n in NODES]
    assert f"docker rm -f {job_unit('job-a')}" in script


# --- scale and shell -----------------------------------------------------------------------------

@moto.mock_aws
def test_scale_sets_the_groups_desired_capacity(capsys, tmp_path, monkeypatch):
    autoscaling = boto3.client("autoscaling", region_name=REGION)
    ec2 = boto3.client("ec2", region_name=REGION)
    subnet = ec2.create_subnet(VpcId=ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"],
                               CidrBlock="10.0.1.0/24")["Subnet"]["SubnetId"]
    template = ec2.create_launch_template(LaunchTemplateName="efa", LaunchTemplateData={
        "ImageId": "ami-12c6146b"})["LaunchTemplate"]
    autoscaling.create_auto_scaling_group(
        AutoScalingGroupName=STANDALONE_GROUP, MinSize=0, MaxSize=2, DesiredCapacity=1,
        LaunchTemplate={"LaunchTemplateId": template["LaunchTemplateId"]},
        VPCZoneIdentifier=subnet)
    session = StubSession(autoscaling=autoscaling)
    monkeypatch.setattr(common, "stack_session", lambda args, outputs: session)
    path = standalone_outputs(tmp_path)
    code, out, err = run(capsys, "scale", "--outputs-file", str(path), "--nodes", "0")
    assert code == 0, err
    assert "desired capacity 0 (no instance runs" in out
    group = autoscaling.describe_auto_scaling_groups(
        AutoScalingGroupNames=[STANDALONE_GROUP])["AutoScalingGroups"][0]
    assert group["DesiredCapacity"] == 0
    code, _, err = run(capsys, "scale", "--outputs-file", str(path), "--nodes", "3")
    assert code == ExitCode.USAGE and "--nodes 3 is more than pool trainium" in err


@moto.mock_aws
def test_scale_fills_several_groups_in_order(capsys, tmp_path, monkeypatch):
    """3 nodes over groups of at most 2 and 2: the first full, then the second (as the stack
    spreads nodes.desired); 1 node empties the second group."""
    names = groups_in_two_subnets((0, 0))
    autoscaling = boto3.client("autoscaling", region_name=REGION)
    monkeypatch.setattr(common, "stack_session",
                        lambda args, outputs: StubSession(autoscaling=autoscaling))
    path = standalone_outputs(tmp_path, StandaloneAutoScalingGroupName=",".join(names),
                              NodeCountMax="4")

    def desired():
        groups = autoscaling.describe_auto_scaling_groups(
            AutoScalingGroupNames=names)["AutoScalingGroups"]
        return {g["AutoScalingGroupName"]: g["DesiredCapacity"] for g in groups}

    code, out, err = run(capsys, "scale", "--outputs-file", str(path), "--nodes", "3")
    assert code == 0, err
    assert desired() == {names[0]: 2, names[1]: 1}
    assert f"{names[0]} 2, {names[1]} 1: desired capacity 3" in out
    code, _, err = run(capsys, "scale", "--outputs-file", str(path), "--nodes", "1")
    assert code == 0, err
    assert desired() == {names[0]: 1, names[1]: 0}


@pytest.mark.parametrize("command", ["cancel", "logs", "status"])
@pytest.mark.parametrize("bad", ["*", "x; id", "../x", "Job-A"])
def test_job_names_are_checked_before_they_reach_a_node(capsys, tmp_path, recorder, command, bad):
    """A node runs these scripts as root: a name submit could not have given never gets there
    (a glob would cancel every job, a ';' would run a command)."""
    code, _, err = run(capsys, command, "--outputs-file", str(standalone_outputs(tmp_path)), bad)
    assert code == ExitCode.USAGE and "must be 1-63 lower-case letters" in err
    assert recorder.calls == []


def test_node_scripts_quote_the_paths_they_build():
    from trn_ultracluster.cli.backends import node_jobs

    assert "'" in node_jobs.cancel_script("a b").split("\n")[1]
    assert "stat -c %s '" in node_jobs.log_chunk_script("a b", 0, None, None)


def test_shell_prints_the_session_manager_command(capsys, tmp_path, recorder, monkeypatch):
    monkeypatch.setattr("shutil.which", lambda name: None)  # --print needs neither tool
    monkeypatch.setattr(common, "stack_session", lambda args, outputs: StubSession())
    path = standalone_outputs(tmp_path)
    code, out, _ = run(capsys, "shell", "--outputs-file", str(path), "--node", "1", "--print")
    assert (code, out) == (0, f"aws ssm start-session --region {REGION} --target "
                              f"{NODES[1].instance_id}\n")
    code, _, err = run(capsys, "shell", "--outputs-file", str(path), "--node", "2", "--print")
    assert code == ExitCode.CLUSTER and "2 node(s)" in err and "3 needed" in err


def test_shell_without_the_session_manager_plugin(capsys, tmp_path, recorder, monkeypatch):
    monkeypatch.setattr("shutil.which", lambda name: None if "plugin" in name else name)
    code, _, err = run(capsys, "shell", "--outputs-file", str(standalone_outputs(tmp_path)))
    assert code == ExitCode.USAGE and "Session Manager plugin" in err


def test_other_backends_open_no_shell(capsys, tmp_path):
    code, _, err = run(capsys, "shell", "--outputs-file",
                       str(write_outputs(tmp_path, outputs_values("eks"))))
    assert code == ExitCode.USAGE and "shell is not available with the eks job backend" in err


def test_smoke_test_dry_run_runs_the_allreduce_script(capsys, tmp_path):
    script = dry_run(capsys, tmp_path, "standalone", command="smoke-test")
    assert "cat > /tmp/trn_ultracluster_allreduce.py <<'TRN_ALLREDUCE_EOF'" in script
    check_bash(script, tmp_path)


def test_a_job_ending_while_its_status_is_read_is_completed_not_lost(tmp_path):
    """The status program asks systemd for the unit before it reads the exit files: a job
    whose exit trap writes ``node-0.exit`` and whose unit ends between the two reads is
    COMPLETED (read the other way round it was neither running nor ended: LOST; seen under
    load in tests/cli/backends/test_standalone_pools.py)."""
    jobs = tmp_path / "jobs"
    (jobs / "job-a").mkdir(parents=True)
    (jobs / "job-a" / "job.json").write_text(json.dumps({"nodes": 1}))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    systemctl = bin_dir / "systemctl"  # the job ends now: its trap writes the exit status
    systemctl.write_text(f"#!/bin/sh\necho 0 > {jobs / 'job-a' / 'node-0.exit'}\nexit 3\n")
    systemctl.chmod(0o755)
    done = subprocess.run([sys.executable, "-", str(jobs), job_unit(""), "job-a"],
                          input=node_jobs._STATUS_PROGRAM, capture_output=True, text=True,
                          env={**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"},
                          check=True)
    (line,) = done.stdout.splitlines()
    seen = json.loads(line)
    assert (seen["active"], seen["exits"]) == (False, {"0": 0})
    status = node_jobs.JobStatus(name="job-a", nodes=1, exits={"0": 0})
    assert status.state == "COMPLETED"
