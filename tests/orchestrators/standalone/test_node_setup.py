"""The standalone nodes' user data and node_setup.sh, run against a fake root.

The user data is taken from the synthesized template (its CloudFormation functions given
plausible values, :mod:`.template_values`) and run with bash, with ``TRN_ROOT`` pointing at a
temporary directory and a PATH whose ``aws``, ``mount``, ``docker``, ``systemctl``,
``apt-get``, ``dnf``, ``curl``, ``gpg`` and ``sleep`` are stubs that record their arguments
(an Ubuntu DLAMI node; a CPU pool's node on Amazon Linux 2023, with ``dnf``). The
``aws`` stub copies the S3 assets the user data fetches from the synth's cloud assembly
(where the CDK CLI would upload them from) and answers the FSx Describe calls with prepared
answers, as the HyperPod lifecycle tests do.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.helpers import python39, shellcheck
from tests.conftest import REPO_ROOT
from tests.orchestrators.lustre_efa_stubs import (
    EFA_DEVICES,
    UBUNTU_24,
    fake_node,
    install_stubs,
    lnet_state,
    write_python3,
)
from tests.orchestrators.standalone.conftest import NATIVE_AMI_ID
from tests.orchestrators.standalone.template_values import STACK_ID, user_data
from trn_ultracluster.config.fsx_efa import plan_fsx_efa
from trn_ultracluster.config.facts import NATIVE_STACK, XLA_STACK
from trn_ultracluster.contracts.standalone import NODE_DIR, NODE_LOG, PROGRAM_DIR, READY_FILE
from trn_ultracluster.orchestrators.nodes import FSX_SCRIPT, LUSTRE_EFA_SCRIPT, NODE_SCRIPTS
from trn_ultracluster.orchestrators.standalone.node import SCRIPTS

FS_ID = "fs-0123456789abcdef0"
FSX_DNS, FSX_MOUNT = f"{FS_ID}.fsx.us-west-2.amazonaws.com", "abcdefgh"
INSTANCE = "i-0123456789abcdef0"
TEST_IMPORTS = "torch,transformers,tokenizers,tqdm,numpy,yaml"
"""What this test venv has of what trn_train imports on Neuron (no torch_xla here)."""

AWS_STUB = r'''#!PYTHON
"""aws stub: records the call; s3 cp copies an asset of the cloud assembly; fsx describe-*
answer prepared JSON; ecr get-login-password prints a token; logs calls keep the events."""
import json, os, shutil, sys, zipfile
from pathlib import Path
args = sys.argv[1:]
with open(os.environ["STUB_LOG"], "a") as log:
    log.write("aws " + " ".join(args) + "\n")
if args[:2] == ["s3", "cp"]:
    url, dest = [a for a in args[2:] if not a.startswith("--") and a != os.environ["REGION"]][-2:]
    name = url.rsplit("/", 1)[1]
    assembly = Path(os.environ["ASSEMBLY"])
    found = assembly / f"asset.{name}"
    folder = assembly / f"asset.{name.rsplit('.', 1)[0]}"
    if found.is_file():
        shutil.copy(found, dest)
    elif not folder.is_dir():
        sys.exit("fatal error: An error occurred (404) when calling the HeadObject operation")
    else:  # a directory asset: the CDK CLI uploads it zipped
        with zipfile.ZipFile(dest, "w") as z:
            for path in folder.rglob("*"):
                z.write(path, path.relative_to(folder))
elif args[:1] == ["fsx"]:
    print(open(os.path.join(os.environ["STUB_AWS_DIR"], args[1] + ".json")).read())
elif args[:2] == ["ecr", "get-login-password"]:
    print("token")
elif args[:2] == ["logs", "put-log-events"]:
    events = args[args.index("--log-events") + 1].removeprefix("file://")
    shutil.copy(events, os.environ["STUB_EVENTS"])
'''
STUB = """#!/bin/bash
name="${0##*/}"  # not $(basename): a fork and an exec per call
echo "$name $*" >> "$STUB_LOG"
if [[ "$name" == mount && "${STUB_MOUNT_FAIL:-}" == 1 ]]; then
  echo "mount.lustre: mount failed: Connection timed out" >&2; exit 32
fi
if [[ "$name" == mount && -n "${STUB_PROC_MOUNTS:-}" ]]; then  # mount -t lustre -o OPTS SRC DIR
  echo "$5 $6 lustre rw 0 0" >> "$STUB_PROC_MOUNTS"
fi
if [[ " $* " == *" --password-stdin "* ]]; then cat > /dev/null; fi  # docker login reads it
if [[ "$name" == curl ]]; then
  while (( $# )); do if [[ "$1" == -o ]]; then echo key > "$2"; fi; shift; done
fi
if [[ "$name" == gpg ]]; then
  while (( $# )); do if [[ "$1" == -o ]]; then echo gpgkey > "$2"; fi; shift; done
fi
exit 0
"""
STUBS = ("mount", "docker", "systemctl", "apt-get", "curl", "gpg", "sleep", "mount.lustre")


def answers(data_repository: bool = True, efa: bool = False) -> dict:
    """DescribeFileSystems (the stack's file system, tagged with its stack id, AVAILABLE;
    ``efa``: EFA-enabled, else without the field, as a file system created without EFA is
    described), and its data repository association with a finished import (botocore fsx
    model)."""
    lustre: dict = {"MountName": FSX_MOUNT, **({"EfaEnabled": True} if efa else {})}
    fs = {"FileSystemId": FS_ID, "Lifecycle": "AVAILABLE", "DNSName": FSX_DNS,
          "Tags": [{"Key": "trn-ultracluster:stack-id", "Value": STACK_ID}],
          "LustreConfiguration": lustre}
    return {"describe-file-systems": {"FileSystems": [fs]},
            "describe-data-repository-associations": {"Associations": [
                {"AssociationId": "dra-1", "FileSystemId": FS_ID, "Lifecycle": "AVAILABLE"}]},
            "describe-data-repository-tasks": {"DataRepositoryTasks": [
                {"TaskId": "task-1", "Type": "IMPORT_METADATA_FROM_REPOSITORY",
                 "Lifecycle": "SUCCEEDED", "CreationTime": "2026-11-22T10:00:00Z"}]}}


class Node:
    """A fake root with the stubs; ``run_user_data()`` and ``run_setup()`` run the scripts."""

    def __init__(self, tmp_path: Path, template: dict, assembly: Path,
                 stubs: tuple[str, ...] = STUBS, launch_template: str = ""):
        self.root, self.bin, self.aws_dir = (tmp_path / "root", tmp_path / "bin",
                                             tmp_path / "aws")
        for d in (self.root / "etc", self.bin, self.aws_dir):
            d.mkdir(parents=True)
        (self.root / "etc/os-release").write_text('NAME="Ubuntu"\nVERSION_CODENAME=noble\n')
        self.log, self.events = tmp_path / "calls.log", tmp_path / "events.json"
        self.console = tmp_path / "console"
        self.log.touch()
        self.console.touch()
        for name, text in {"aws": AWS_STUB.replace("#!PYTHON", f"#!{sys.executable} -S"),
                           **{s: STUB for s in stubs}}.items():
            path = self.bin / name
            path.write_text(text)
            path.chmod(path.stat().st_mode | stat.S_IEXEC)
        write_python3(self.bin)
        for name, answer in answers().items():
            (self.aws_dir / f"{name}.json").write_text(json.dumps(answer))
        self.user_data = user_data(template, launch_template)
        self.assembly = assembly
        self.node_dir = self.root / NODE_DIR.lstrip("/")

    def env(self, **extra: str) -> dict[str, str]:
        return {"PATH": f"{self.bin}:{os.environ['PATH']}", "STUB_LOG": str(self.log),
                "STUB_AWS_DIR": str(self.aws_dir), "STUB_EVENTS": str(self.events),
                "ASSEMBLY": str(self.assembly), "REGION": "us-west-2",
                "TRN_ROOT": str(self.root), "TRN_INSTANCE_ID": INSTANCE,
                "TRN_RETRY_DELAY_S": "0", "TRN_FSX_POLL_S": "0",
                # never power off or write to the console here: record instead
                "TRN_POWEROFF": str(self.log), "TRN_CONSOLE": str(self.console), **extra}

    def run_user_data(self, **extra: str) -> subprocess.CompletedProcess:
        return subprocess.run(["bash", "-c", self.user_data], env=self.env(**extra),
                              capture_output=True, text=True, timeout=120)

    def run_setup(self, **extra: str) -> subprocess.CompletedProcess:
        return subprocess.run(["bash", str(self.node_dir / "node_setup.sh")],
                              env=self.env(**extra), capture_output=True, text=True, timeout=120)

    def calls(self, name: str) -> list[str]:
        return [ln for ln in self.log.read_text().splitlines() if ln.split(" ", 1)[0] == name]

    def path(self, absolute: str) -> Path:
        return self.root / absolute.lstrip("/")


@pytest.fixture
def node(tmp_path, single):
    return Node(tmp_path, single.template, single.outdir)


def test_scripts_parse_and_are_shellcheck_clean():
    scripts = sorted(SCRIPTS.glob("*.sh"))
    assert [s.name for s in scripts] == ["node_setup.sh", "user_data.sh"]
    for script in scripts:
        subprocess.run(["bash", "-n", str(script)], check=True)
    done = subprocess.run([shellcheck(), "-x", *map(str, scripts), str(NODE_SCRIPTS / FSX_SCRIPT),
                           str(NODE_SCRIPTS / LUSTRE_EFA_SCRIPT)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout


def test_scripts_name_job_variables_by_contract_member_only():
    """The scripts read the job environment's variables through lcs.py by JobEnv member
    (``lcs env-get TRAINING_IMAGE_URI``), never by copies of their names."""
    from trn_ultracluster.contracts.hyperpod import JobEnv

    for path in SCRIPTS.glob("*.sh"):
        text = path.read_text()
        copies = [m.value for m in JobEnv if m.value in text]
        assert not copies, f"{path.name} names {copies}"


def test_rendered_user_data_is_shellcheck_clean(tmp_path, single, small, mixed):
    for s, prefix in ((single, ""), (small, ""), (mixed, "EfaLaunchTemplateCpu")):
        path = tmp_path / "user-data.sh"
        path.write_text(user_data(s.template, prefix))
        done = subprocess.run([shellcheck(), str(path)], capture_output=True, text=True)
        assert done.returncode == 0, done.stdout


def test_container_node_mounts_fsx_writes_the_environment_pulls_the_image_and_is_ready(node):
    result = node.run_user_data()
    assert result.returncode == 0, result.stdout + result.stderr
    # the scripts and the stack's file, fetched by the user data
    assert sorted(p.name for p in node.node_dir.iterdir()) == [
        "fsx.sh", "lcs.py", "lustre_efa.py", "lustre_efa.sh", "neuron_metrics.py",
        "neuron_metrics.sh", "node_setup.sh", "trn_ultracluster.json"]
    assert (node.node_dir / "node_setup.sh").read_text() == (SCRIPTS / "node_setup.sh").read_text()
    # FSx: found by its tag, the link's import waited for, mounted, in fstab
    aws = node.calls("aws")
    assert any(c.startswith("aws fsx describe-file-systems") for c in aws)
    assert any(c.startswith("aws fsx describe-data-repository-tasks") for c in aws)
    assert node.calls("mount") == [
        f"mount -t lustre -o relatime,flock {FSX_DNS}@tcp:/{FSX_MOUNT} {node.root}/fsx"]
    assert f"{FSX_DNS}@tcp:/{FSX_MOUNT} /fsx lustre" in node.path("/etc/fstab").read_text()
    # the same job environment file as the other orchestrators, compile cache on FSx
    env = node.path("/fsx/.trn-ultracluster/env").read_text()
    assert f"export TRN_FSX_FILE_SYSTEM_ID={FS_ID}" in env.splitlines()
    assert "export NEURON_CC_FLAGS=--cache_dir=/fsx/neuron-compile-cache" in env.splitlines()
    assert "export FI_PROVIDER=efa" in env.splitlines()
    assert node.path("/fsx/neuron-compile-cache").is_dir()
    assert ". /fsx/.trn-ultracluster/env" in node.path("/etc/profile.d/trn-ultracluster.sh").read_text()
    # the training image: Docker on, logged in to the stack's registry, pulled
    image = next(ln.split("=", 1)[1] for ln in env.splitlines()
                 if ln.startswith("export TRN_TRAINING_IMAGE_URI="))
    registry = image.split("/", 1)[0]
    assert node.calls("docker") == [f"docker login --username AWS --password-stdin {registry}",
                                    f"docker pull -q {image}"]
    assert "systemctl enable --now docker" in node.calls("systemctl")
    assert "aws ecr get-login-password --region us-west-2" in aws
    assert node.calls("apt-get") == []  # the Lustre client (mount.lustre) and Docker are there
    # the node metrics exporter of HyperPod Slurm nodes (no neuron-monitor here: a warning)
    assert node.path("/opt/trn-ultracluster/metrics/neuron_metrics.py").is_file()
    assert "no Neuron metrics from this node" in result.stdout
    # and the training metrics of the jobs' first nodes (node-0.log on FSx)
    unit = node.path("/etc/systemd/system/trn-training-metrics.service").read_text()
    assert "--jobs-dir /fsx/.trn-ultracluster/jobs --log-glob */node-0.log" in unit
    # ready, and the log sent to the stack's log group
    assert node.path(READY_FILE).read_text().startswith("runtime=container\n")
    log = node.path(NODE_LOG).read_text()
    assert log.rstrip().endswith("[trn-ultracluster] node_setup done")
    stream = f"--log-stream-name {INSTANCE}/node-setup"
    assert any(c.startswith("aws logs create-log-stream") and stream in c for c in aws)
    events = json.loads(node.events.read_text())
    assert events and "node_setup done" in events[-1]["message"]


@pytest.mark.nodes
@pytest.mark.parametrize("member", ["ECR_REGISTRY", "TRAINING_IMAGE_URI"])
def test_a_container_node_without_its_image_in_the_environment_fails_saying_so(node, member):
    """Both values come from one ``lcs env-get`` call; either missing, the last one too (an
    empty last line is dropped by the command substitution), fails with the message."""
    assert node.run_user_data().returncode == 0
    path = node.node_dir / "trn_ultracluster.json"
    cluster = json.loads(path.read_text())
    del cluster["env"][cluster["names"][member]]
    path.write_text(json.dumps(cluster))
    pulled = node.calls("docker")  # by the first run
    result = node.run_setup()
    assert result.returncode == 1
    assert "the job environment lacks ECR_REGISTRY or TRAINING_IMAGE_URI" in result.stdout
    assert node.calls("docker") == pulled


@pytest.mark.nodes
def test_rerun_is_idempotent(node):
    assert node.run_user_data().returncode == 0
    node.path("/proc").mkdir()
    node.path("/proc/mounts").write_text(f"{FSX_DNS}@tcp:/{FSX_MOUNT} {node.root}/fsx lustre rw 0 0\n")
    node.log.write_text("")
    result = node.run_setup()
    assert result.returncode == 0, result.stdout + result.stderr
    assert node.calls("mount") == []
    assert len(node.path("/etc/fstab").read_text().splitlines()) == 1
    assert "already mounted" in result.stdout
    assert node.path(READY_FILE).is_file()


@pytest.mark.nodes
def test_without_a_lustre_client_it_is_installed_from_the_fsx_repository(tmp_path, single):
    node = Node(tmp_path, single.template, single.outdir,
                stubs=tuple(s for s in STUBS if s != "mount.lustre"))
    result = node.run_user_data()
    assert result.returncode == 0, result.stdout + result.stderr
    listing = node.path("/etc/apt/sources.list.d/fsxlustreclientrepo.list").read_text()
    assert listing.strip() == (
        "deb [signed-by=/usr/share/keyrings/fsx-ubuntu-public-key.gpg] "
        "https://fsx-lustre-client-repo.s3.amazonaws.com/ubuntu noble main")
    kernel = os.uname().release
    assert node.calls("apt-get")[-1] == f"apt-get install -y -q lustre-client-modules-{kernel}"
    assert any("fsx-ubuntu-public-key.asc" in c for c in node.calls("curl"))
    assert node.path("/usr/share/keyrings/fsx-ubuntu-public-key.gpg").is_file()


AL2023 = 'NAME="Amazon Linux"\nVERSION="2023"\nID="amzn"\nVERSION_ID="2023"\n'
"""/etc/os-release of Amazon Linux 2023 (the fields node_setup.sh reads)."""
DNF_STUB = """#!/bin/bash
# dnf stub: records the call; `install` makes the command a package would bring (a stub).
echo "dnf $*" >> "$STUB_LOG"
bin="$(dirname "$0")"
for package in "$@"; do
  case "$package" in
    docker) cp "$bin/systemctl" "$bin/docker" ;;
    lustre-client) cp "$bin/systemctl" "$bin/mount.lustre" ;;
  esac
done
"""


def path_without(directory: Path, *names: str) -> str:
    """This machine's PATH without the programs ``names``: ``directory`` with a link to every
    other program of the PATH's directories (the first of each name), so that a script sees
    no ``docker`` even where the machine has one."""
    directory.mkdir()
    for entry in os.environ["PATH"].split(os.pathsep):
        if not Path(entry).is_dir():
            continue
        for program in Path(entry).iterdir():
            link = directory / program.name
            if program.name not in names and not link.exists() and not link.is_symlink():
                link.symlink_to(program)
    return str(directory)


def cpu_node(tmp_path: Path, mixed, python: str | None = None) -> tuple[Node, dict[str, str]]:
    """A node of the mixed profile's CPU pool on Amazon Linux 2023: no Lustre client, no
    Docker (dnf installs them); ``python``: the ``python3`` the scripts run. ``(node, env)``:
    its environment hides the machine's Docker."""
    node = Node(tmp_path, mixed.template, mixed.outdir, launch_template="EfaLaunchTemplateCpu",
                stubs=tuple(s for s in STUBS if s not in ("docker", "mount.lustre")))
    node.path("/etc/os-release").write_text(AL2023)
    (node.bin / "dnf").write_text(DNF_STUB)
    (node.bin / "dnf").chmod(0o755)
    if python is not None:
        (node.bin / "python3").unlink()
        (node.bin / "python3").symlink_to(python)
    system = path_without(tmp_path / "system-bin", "docker", "mount.lustre")
    return node, {"PATH": f"{node.bin}:{system}"}


@pytest.mark.nodes
def test_a_cpu_pool_node_on_amazon_linux_installs_lustre_and_docker_and_is_ready(tmp_path,
                                                                                 mixed):
    node, env = cpu_node(tmp_path, mixed)
    result = node.run_user_data(**env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert node.calls("dnf") == ["dnf install -y -q lustre-client", "dnf install -y -q docker"]
    assert node.calls("apt-get") == [] and node.calls("curl") == []
    assert node.calls("mount") == [
        f"mount -t lustre -o relatime,flock {FSX_DNS}@tcp:/{FSX_MOUNT} {node.root}/fsx"]
    env = node.path("/fsx/.trn-ultracluster/env").read_text().splitlines()
    assert "export TRN_INSTANCE_TYPE=m7i.8xlarge" in env
    assert "export TRN_NEURON_CORES_PER_NODE=0" in env
    assert not [ln for ln in env if "FI_PROVIDER" in ln]
    # the main pool's training image, pulled by the Docker dnf installed
    image = next(ln.split("=", 1)[1] for ln in env if ln.startswith("export TRN_TRAINING_IMAGE_URI="))
    assert "TrainingImageRepository" in image
    assert node.calls("docker")[-1] == f"docker pull -q {image}"
    assert not (node.node_dir / "program.zip").exists()
    assert node.path(READY_FILE).read_text().startswith("runtime=container\n")


@pytest.mark.nodes
def test_the_node_scripts_run_with_amazon_linux_2023s_python_3_9(tmp_path, mixed):
    python = python39()
    if python is None:
        pytest.skip("no Python 3.9 interpreter here")
    node, env = cpu_node(tmp_path, mixed, python)
    result = node.run_user_data(**env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert node.path(READY_FILE).is_file()
    assert "export TRN_NEURON_CORES_PER_NODE=0" in node.path(
        "/fsx/.trn-ultracluster/env").read_text().splitlines()


@pytest.mark.nodes
def test_a_failed_mount_fails_the_node_ships_the_log_and_leaves_it_not_ready(node):
    result = node.run_user_data(STUB_MOUNT_FAIL="1", TRN_MOUNT_ATTEMPTS="2")
    assert result.returncode == 1
    assert len(node.calls("mount")) == 2
    assert "ERROR: could not mount FSx for Lustre" in result.stdout
    assert not node.path(READY_FILE).exists()
    assert node.calls("docker") == []
    events = json.loads(node.events.read_text())
    assert "ERROR: could not mount FSx for Lustre" in events[-1]["message"]


def test_a_missing_asset_stops_the_user_data_before_the_setup(node):
    node.assembly = node.root / "empty"  # the aws stub finds no asset
    node.assembly.mkdir()
    result = node.run_user_data(TRN_FETCH_ATTEMPTS="2")
    assert result.returncode != 0
    assert "could not fetch" in result.stderr
    assert not node.path(NODE_LOG).exists()


HEAVY_MODULES = ("torch", "transformers", "tokenizers")
"""Modules this test's Python has whose import takes seconds: :func:`fake_venv` puts empty
stand-ins for them first on the venv's path (the node's check only imports them by name)."""


def fake_venv(node: Node, venv: str, modules: tuple[str, ...] = ()) -> None:
    """A virtual environment at ``venv`` on the node: this test's Python, plus an empty
    module for each of ``modules`` (what a DLAMI's venv has and this one has not) and of
    :data:`HEAVY_MODULES`, found before the real ones."""
    bin_dir = node.path(venv) / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "activate").write_text("# fake venv\n")
    extra = node.path(venv) / "fake-modules"
    for module in (*HEAVY_MODULES, *modules):
        (extra / module).mkdir(parents=True)
        (extra / module / "__init__.py").write_text("")
    python = bin_dir / "python"
    python.write_text(
        f'#!/bin/bash\nPYTHONPATH="{extra}:${{PYTHONPATH}}" exec {sys.executable} "$@"\n')
    python.chmod(0o755)


def test_dlami_venv_node_unpacks_the_program_and_checks_the_venv_imports_it(tmp_path, small):
    node = Node(tmp_path, small.template, small.outdir)
    fake_venv(node, XLA_STACK.venv)
    # the DLAMI's venv would have torch_xla and torch_neuronx; this one has not
    result = node.run_user_data()
    assert result.returncode == 1
    assert "cannot import the training program or one of torch,torch_xla" in result.stdout
    assert not node.path(READY_FILE).exists()
    # with what this venv has, the same node sets up
    cluster = json.loads((node.node_dir / "trn_ultracluster.json").read_text())
    cluster["node"]["imports"] = TEST_IMPORTS
    (node.node_dir / "trn_ultracluster.json").write_text(json.dumps(cluster))
    result = node.run_setup()
    assert result.returncode == 0, result.stdout + result.stderr
    program = node.path(PROGRAM_DIR)
    assert (program / "training/trn_train/cli.py").read_text() == (
        REPO_ROOT / "training/trn_train/cli.py").read_text()
    assert (program / "trn_ultracluster/contracts/catalog.py").is_file()
    assert not (program / "trn_ultracluster/cli").exists()  # the image's files only
    assert node.calls("docker") == []
    assert "export FI_PROVIDER=efa" not in node.path("/fsx/.trn-ultracluster/env").read_text()
    assert node.path(READY_FILE).read_text().startswith("runtime=dlami-venv\n")


@pytest.mark.nodes
def test_a_native_dlami_venv_node_imports_torch_neuronx_and_no_torch_xla(tmp_path, native_venv):
    """The native stack's venv check imports torch_neuronx and not torch_xla: a venv with
    torch_neuronx (faked) and without torch_xla sets the node up; without torch_neuronx it
    fails naming the native modules."""
    assert importlib.util.find_spec("torch_xla") is None  # nor has this test's Python
    node = Node(tmp_path, native_venv.template, native_venv.outdir)
    fake_venv(node, NATIVE_STACK.venv)
    result = node.run_user_data()
    assert result.returncode == 1
    assert ("cannot import the training program or one of "
            "torch,torch_neuronx,transformers,tokenizers,tqdm,numpy,yaml") in result.stdout
    node.path(NATIVE_STACK.venv).rename(tmp_path / "old-venv")
    fake_venv(node, NATIVE_STACK.venv, modules=("torch_neuronx",))
    result = node.run_setup()
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"{NATIVE_STACK.venv} imports it" in result.stdout
    assert node.path(READY_FILE).read_text().startswith("runtime=dlami-venv\n")


@pytest.mark.nodes
def test_native_dlami_venv_missing_on_the_ami_says_which_dlami_has_it(tmp_path, native_venv):
    """The pinned AMI lacks the torch-neuronx venv (a Base DLAMI, say): the message names the
    torch-neuronx DLAMI and tells to name it with standalone.ami_id or ami_ssm_parameter."""
    node = Node(tmp_path, native_venv.template, native_venv.outdir)
    result = node.run_user_data(TRN_AMI_ID=NATIVE_AMI_ID)
    assert result.returncode == 1
    (error,) = [ln for ln in result.stdout.splitlines() if "ERROR:" in ln]
    for part in (f"the AMI {NATIVE_AMI_ID} has no virtual environment {NATIVE_STACK.venv} "
                 "(standalone.dlami_venv)",
                 f"The nodes' AMI is standalone.ami_id {NATIVE_AMI_ID}.",
                 f"is in the {NATIVE_STACK.dlami_name} DLAMI from Neuron SDK "
                 f"{NATIVE_STACK.sdk_release}, not in the Neuron Base DLAMI",
                 "boot it by setting standalone.ami_id or standalone.ami_ssm_parameter to it",
                 "Fix one of: boot that DLAMI"):
        assert part in error
    assert not node.path(READY_FILE).exists()


@pytest.mark.nodes
def test_dlami_venv_missing_on_the_ami_is_a_clear_error(tmp_path, small):
    """A 2.31 PyTorch 2.9 DLAMI (the last 'latest') has /opt/aws_neuronx_venv_pytorch_2_9
    but not NxD Training's: the message names the AMI, what it has, the SDK release whose
    DLAMI has the venv, and the settings that fix it; the node is not ready."""
    node = Node(tmp_path, small.template, small.outdir)
    other = node.path("/opt/aws_neuronx_venv_pytorch_2_9/bin")
    other.mkdir(parents=True)
    (other / "activate").write_text("# fake venv\n")
    result = node.run_user_data(TRN_AMI_ID="ami-0fedcba9876543210")
    assert result.returncode == 1
    (error,) = [ln for ln in result.stdout.splitlines() if "ERROR:" in ln]
    venv = XLA_STACK.venv  # standalone.dlami_venv unset: the xla stack's
    for part in (f"the AMI ami-0fedcba9876543210 has no virtual environment {venv} "
                 "(standalone.dlami_venv)",
                 "its Neuron environments: /opt/aws_neuronx_venv_pytorch_2_9.",
                 f"The nodes' AMI is the default of the xla stack: the {XLA_STACK.dlami_name} "
                 f"DLAMI of Neuron SDK {XLA_STACK.sdk_release}",
                 f"is in the {XLA_STACK.dlami_name} DLAMI of Neuron SDK "
                 f"{XLA_STACK.sdk_release} and in no later DLAMI",
                 "boot it by unsetting standalone.ami_id and standalone.ami_ssm_parameter",
                 "set standalone.runtime: container"):
        assert part in error
    assert not node.path(READY_FILE).exists()
    assert node.calls("docker") == []
    events = json.loads(node.events.read_text())
    assert "has no virtual environment" in events[-1]["message"]


@pytest.mark.nodes
def test_missing_venv_without_instance_metadata_still_says_what_to_do(tmp_path, small):
    node = Node(tmp_path, small.template, small.outdir)
    result = node.run_user_data()  # the curl stub answers the metadata service with nothing
    assert result.returncode == 1
    assert (f"the AMI (id unknown) has no virtual environment {XLA_STACK.venv}"
            in result.stdout)
    assert "its Neuron environments: none." in result.stdout


# --- FSx for Lustre over EFA (fsx.efa) ------------------------------------------------------

EFA_SINGLE = {"fsx.efa": "true", "fsx.storage_capacity_gib": "4800",
              "fsx.per_unit_storage_throughput": "1000"}
"""single-node.yaml with an EFA-enabled file system (fsx.efa: true; 4,800 GiB, the EFA step
at 1000 MB/s/TiB): mode required, 2 EFA interfaces."""


@pytest.fixture(scope="module")
def single_efa(synth):
    from tests.conftest import profile_path

    return synth(profile_path("single-node"), **EFA_SINGLE)


def efa_node(tmp_path: Path, built, **fake: object) -> tuple[Node, dict[str, str]]:
    """A standalone node of ``built`` with the LNet stubs and EFA devices; ``(node, env)``."""
    node = Node(tmp_path, built.template, built.outdir)
    install_stubs(node.bin, aws=False)
    fake_node(node.root, os_release=UBUNTU_24, **fake)  # type: ignore[arg-type]
    if plan_fsx_efa(built.config).mode != "off":  # the file system is EFA-enabled
        (node.aws_dir / "describe-file-systems.json").write_text(
            json.dumps(answers(efa=True)["describe-file-systems"]))
    node.path("/proc").mkdir()
    (tmp_path / "lnet").mkdir()
    return node, {"STUB_LNET": str(tmp_path / "lnet"), "TRN_NI_WAIT_S": "0",
                  "TRN_NODE_NAME": "node-1", "STUB_PROC_MOUNTS": str(node.path("/proc/mounts"))}


def put_metric(node: Node) -> list[str]:
    return [c for c in node.calls("aws") if c.startswith("aws cloudwatch put-metric-data")]


@pytest.mark.nodes
def test_mode_off_node_runs_nothing_of_efa(tmp_path, single):
    node, env = efa_node(tmp_path, single)
    result = node.run_user_data(**env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert node.calls("lnetctl") == [] and node.calls("modprobe") == [] and put_metric(node) == []
    assert "x-systemd.requires=network-online.target 0 0" in node.path("/etc/fstab").read_text()


def test_efa_node_mounts_over_efa_reports_1_and_is_ready(tmp_path, single_efa):
    assert plan_fsx_efa(single_efa.config).mode == "required"
    node, env = efa_node(tmp_path, single_efa)
    result = node.run_user_data(**env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert (node.node_dir / "lustre_efa.sh").read_text() == (
        NODE_SCRIPTS / LUSTRE_EFA_SCRIPT).read_text()
    efa = lnet_state(tmp_path / "lnet")["nets"]["efa"]
    assert [ni["if"] for ni in efa] == [EFA_DEVICES[0], EFA_DEVICES[-1]]
    assert node.path("/etc/fstab").read_text().rstrip().endswith(
        "x-systemd.requires=network-online.target,x-systemd.requires=trn-lustre-efa.service,"
        "x-systemd.after=trn-lustre-efa.service 0 0")
    assert "lustre-efa check: efa" in result.stdout
    cluster = json.loads((node.node_dir / "trn_ultracluster.json").read_text())
    (put,) = put_metric(node)
    assert put.endswith(f"--value 1 --dimensions ClusterName={cluster['node']['metrics_cluster']},"
                        f"InstanceId={INSTANCE},NodeName=node-1")
    assert node.path(READY_FILE).is_file()


@pytest.mark.nodes
def test_required_node_on_tcp_fails_without_its_ready_marker(tmp_path, single_efa):
    node, env = efa_node(tmp_path, single_efa)
    result = node.run_user_data(**env, STUB_ROUTE="tcp")
    assert result.returncode == 1
    assert ("ERROR: FSx for Lustre over EFA is required (fsx.efa: true) and this node's FSx for "
            "Lustre traffic goes over TCP, not EFA") in result.stdout
    assert "--value 0 " in put_metric(node)[0]
    assert not node.path(READY_FILE).exists()
    assert node.calls("docker") == []
    events = json.loads(node.events.read_text())
    assert any("goes over TCP, not EFA" in e["message"] for e in events)
    assert events[-1]["message"].endswith("the node powers off, so that its Auto Scaling group "
                                          "replaces it")
    assert "goes over TCP, not EFA" in node.console.read_text()
    assert node.calls("poweroff") == ["poweroff"]  # required, first boot (the user data)


def powered_off_after_the_log_was_shipped(node: Node) -> bool:
    lines = node.log.read_text().splitlines()
    shipped = [i for i, ln in enumerate(lines) if ln.startswith("aws logs put-log-events")]
    return "poweroff" in lines and bool(shipped) and shipped[-1] < lines.index("poweroff")


@pytest.mark.nodes
@pytest.mark.parametrize("fake, env, cause", [
    ({}, {"STUB_NO_KEFALND": "1"}, "(no-kefalnd): no kefalnd kernel module"),
    ({"devices": ()}, {}, "(no-efa-device): no EFA device"),
    ({}, {"STUB_LNET_DOWN": "1"}, "(ni-not-up): 0 of 2 EFA NIs"),
])
def test_required_node_that_cannot_configure_lnet_fails_early(tmp_path, single_efa, fake, env,
                                                              cause):
    node, base = efa_node(tmp_path, single_efa, **fake)
    result = node.run_user_data(**base, **env)
    assert result.returncode == 1
    assert ("ERROR: FSx for Lustre over EFA is required (fsx.efa: true) and LNet could not be "
            f"configured for EFA: {cause}") in result.stdout
    assert not any(c.startswith("aws fsx") for c in node.calls("aws"))
    assert node.calls("mount") == [] and not node.path(READY_FILE).exists()
    assert "--value 0 " in put_metric(node)[0]
    # first boot, mode required: the cause on the console, the log shipped, then off
    console = node.console.read_text()
    assert "ERROR: FSx for Lustre over EFA is required (fsx.efa: true)" in console
    assert cause in console and "(the node powers off)" in console
    assert powered_off_after_the_log_was_shipped(node)
    events = json.loads(node.events.read_text())
    assert any(cause in e["message"] for e in events)


@pytest.mark.nodes
def test_a_rerun_by_hand_never_powers_the_node_off(tmp_path, single_efa):
    node, env = efa_node(tmp_path, single_efa, devices=())
    assert node.run_user_data(**env).returncode == 1
    node.log.write_text("")
    node.console.write_text("")
    result = node.run_setup(**env)  # sudo bash node_setup.sh, without --boot
    assert result.returncode == 1
    assert "(no-efa-device)" in result.stdout
    assert node.calls("poweroff") == [] and node.console.read_text() == ""


@pytest.mark.nodes
def test_a_failure_that_is_not_lustre_over_efa_never_powers_the_node_off(tmp_path, single_efa):
    node, env = efa_node(tmp_path, single_efa)
    result = node.run_user_data(**env, STUB_MOUNT_FAIL="1", TRN_MOUNT_ATTEMPTS="1")
    assert result.returncode == 1
    assert "ERROR: could not mount FSx for Lustre" in result.stdout
    assert node.calls("poweroff") == [] and node.console.read_text() == ""
    assert not node.path(READY_FILE).exists()


@pytest.mark.nodes
def test_preferred_node_never_powers_off(tmp_path, single_efa):
    """The stack's file says required; this node's copy is made preferred and set up as at a
    first boot (--boot): a WARNING, 0 on the dashboard, the node ready, never off."""
    node, env = efa_node(tmp_path, single_efa, devices=())
    assert node.run_user_data(**env).returncode == 1  # fetches the files (required: fails)
    node.log.write_text("")
    node.console.write_text("")
    setup = node.node_dir / "node_setup.sh"
    cluster = json.loads((node.node_dir / "trn_ultracluster.json").read_text())
    cluster["fsx"]["efa"]["mode"] = "preferred"
    (node.node_dir / "trn_ultracluster.json").write_text(json.dumps(cluster))
    result = subprocess.run(["bash", str(setup), "--boot"], env=node.env(**env),
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "WARNING: LNet could not be configured for EFA: (no-efa-device)" in result.stdout
    assert node.calls("poweroff") == [] and node.console.read_text() == ""
    assert "--value 0 " in put_metric(node)[0]
    assert node.path(READY_FILE).is_file()


def test_required_node_on_ubuntu_22_04_with_kernel_5_15_fails(tmp_path, single_efa):
    node, env = efa_node(tmp_path, single_efa)
    node.path("/etc/os-release").write_text('ID=ubuntu\nVERSION_ID="22.04"\nVERSION_CODENAME=jammy\n')
    result = node.run_user_data(**env, STUB_KERNEL="5.15.0-1051-aws")
    assert result.returncode == 1
    assert "(os): Ubuntu 22.04 with kernel 5.15.0-1051-aws" in result.stdout
    assert not node.path(READY_FILE).exists()
