"""HyperPod lifecycle scripts: lint, the Python helper, and on_create.sh against a fake root.

``on_create.sh`` runs with ``TRN_ROOT`` pointing at a temporary directory and a PATH whose
``mount``, ``systemctl``, ``usermod``, ``chown``, ``curl``, ``apt-get``, ``git``, ``make``,
``dpkg``, ``enroot`` and ``sleep`` are stubs that record their arguments.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from trn_ultracluster.config import parse_config
from trn_ultracluster.constructs.hyperpod import LIFECYCLE_ASSETS, provisioning_parameters
from trn_ultracluster.shared_storage import FSX_MOUNT_PATH, NEURON_COMPILE_CACHE_DIR

sys.path.insert(0, str(LIFECYCLE_ASSETS))
import lcs  # noqa: E402

SHELLCHECK = Path(sys.executable).parent / "shellcheck"
CONTROLLER_IP, LOGIN_IP, WORKER_IPS = "10.0.0.10", "10.0.0.11", ("10.0.0.20", "10.0.0.21")
FSX_DNS, FSX_MOUNT = "fs-0123456789abcdef0.fsx.us-west-2.amazonaws.com", "abcdefgh"
REGISTRY = "123456789012.dkr.ecr.us-west-2.amazonaws.com"

# What the stack writes for the default HyperPod config (controller, login, "workers" in
# partition "trainium").
PARAMS = provisioning_parameters(parse_config({"orchestrator": "hyperpod-slurm"}).config,
                                 FSX_DNS, FSX_MOUNT)
RESOURCES = {"InstanceGroups": [
    {"Name": "controller", "Instances": [{"CustomerIpAddress": CONTROLLER_IP}]},
    {"Name": "login", "Instances": [{"CustomerIpAddress": LOGIN_IP}]},
    {"Name": "workers", "Instances": [{"CustomerIpAddress": ip} for ip in WORKER_IPS]},
]}
CLUSTER = {"env": {"TRN_REGION": "us-west-2", "TRN_ECR_REGISTRY": REGISTRY,
                   "TRN_CONTAINER_IMAGE": f"{REGISTRY}#repo:abc", "TRN_PARTITIONS": "trainium",
                   "TRN_FSX_MOUNT_POINT": FSX_MOUNT_PATH,
                   "TRN_NEURON_CACHE_DIR": NEURON_COMPILE_CACHE_DIR}}

STUB = """#!/bin/bash
echo "$(basename "$0") $*" >> "$STUB_LOG"
name="$(basename "$0")"
if [[ "$name" == mount && "${STUB_MOUNT_FAIL:-}" == 1 ]]; then
  echo "mount.lustre: mount failed: Connection timed out" >&2; exit 32
fi
if [[ "$name" == dpkg ]]; then echo amd64; fi
exit 0
"""
STUBS = ("mount", "systemctl", "usermod", "chown", "curl", "apt-get", "git", "make", "dpkg",
         "sleep")


# --- lint ------------------------------------------------------------------------------

def test_scripts_parse_and_are_shellcheck_clean():
    scripts = sorted(LIFECYCLE_ASSETS.glob("*.sh"))
    assert scripts
    for script in scripts:
        subprocess.run(["bash", "-n", str(script)], check=True)
    result = subprocess.run([str(SHELLCHECK), *map(str, scripts)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout


# --- the Python helper -------------------------------------------------------------------

@pytest.mark.parametrize("ip, role", [(CONTROLLER_IP, "controller"), (LOGIN_IP, "login"),
                                      (WORKER_IPS[1], "compute")])
def test_node_role_from_resource_config(ip, role):
    assert lcs.node_role(RESOURCES, PARAMS, ip) == role


def test_unknown_address_is_an_error():
    with pytest.raises(lcs.LifecycleError, match="10.9.9.9"):
        lcs.node_role(RESOURCES, PARAMS, "10.9.9.9")


def test_env_file_quotes_values_and_rejects_bad_names():
    text = lcs.env_file({"env": {"TRN_B": "it's", "TRN_A": "x y"}})
    assert text.splitlines()[1:] == ["export TRN_A='x y'", "export TRN_B='it'\"'\"'s'"]
    with pytest.raises(lcs.LifecycleError, match="lower"):
        lcs.env_file({"env": {"lower": "1"}})


def test_cli_reports_a_missing_file_with_status_2(tmp_path, capsys):
    assert lcs.main(["--params", str(tmp_path / "nope.json"), "get", "x"]) == 2
    assert "nope.json: file not found" in capsys.readouterr().err


# --- on_create.sh against a fake root ------------------------------------------------------

@pytest.fixture
def node(tmp_path):
    """A fake root, lifecycle dir and stub PATH; returns a runner of on_create.sh."""
    root, lcs_dir, bin_dir = tmp_path / "root", tmp_path / "lcs", tmp_path / "bin"
    for d in (root / "etc", root / "opt/slurm/etc", root / "home/ubuntu", root / "opt/ml/config",
              root / "usr/local/lib/slurm", lcs_dir, bin_dir):
        d.mkdir(parents=True)
    (root / "etc/passwd").write_text(
        "root:x:0:0:root:/root:/bin/bash\n"
        "ubuntu:x:1000:1000:Ubuntu:/home/ubuntu:/bin/bash\n"
        "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n")
    (root / "home/ubuntu/.bashrc").write_text("# rc\n")
    (root / "opt/slurm/etc/slurm.conf").write_text(
        f"SlurmctldHost=ip-10-0-0-10({CONTROLLER_IP})\n"
        "PartitionName=trainium Nodes=ALL Default=YES\n")
    (root / "usr/local/lib/slurm/spank_pyxis.so").write_text("")
    (root / "opt/ml/config/resource_config.json").write_text(json.dumps(RESOURCES))
    for name in ("on_create.sh", "lcs.py"):
        (lcs_dir / name).write_text((LIFECYCLE_ASSETS / name).read_text())
    (lcs_dir / "provisioning_parameters.json").write_text(json.dumps(PARAMS))
    (lcs_dir / "trn_ultracluster.json").write_text(json.dumps(CLUSTER))
    for name in (*STUBS, "enroot"):
        path = bin_dir / name
        path.write_text(STUB)
        path.chmod(path.stat().st_mode | stat.S_IEXEC)
    log = tmp_path / "calls.log"
    log.touch()

    def run(ip: str, **env: str) -> subprocess.CompletedProcess:
        full_env = {
            "PATH": f"{bin_dir}:{os.environ['PATH']}", "STUB_LOG": str(log),
            "TRN_ROOT": str(root), "TRN_LCS_DIR": str(lcs_dir), "TRN_NODE_IP": ip,
            "TRN_RETRY_DELAY_S": "0", "TRN_SLURM_WAIT_S": "0", **env,
        }
        return subprocess.run(["bash", str(lcs_dir / "on_create.sh")], env=full_env,
                              capture_output=True, text=True, timeout=60)

    run.root, run.log, run.bin, run.lcs_dir = root, log, bin_dir, lcs_dir  # type: ignore[attr-defined]
    return run


def calls(node, name: str) -> list[str]:
    return [line for line in node.log.read_text().splitlines() if line.split(" ", 1)[0] == name]


def test_compute_node_mounts_fsx_and_configures_everything(node):
    result = node(WORKER_IPS[0])
    assert result.returncode == 0, result.stdout + result.stderr
    root = node.root
    assert calls(node, "mount") == [
        f"mount -t lustre -o relatime,flock {FSX_DNS}@tcp:/{FSX_MOUNT} {root}/fsx"]
    assert (root / "etc/fstab").read_text().splitlines() == [
        f"{FSX_DNS}@tcp:/{FSX_MOUNT} /fsx lustre defaults,relatime,flock,_netdev,"
        "x-systemd.automount,x-systemd.requires=network.service 0 0"]
    # home on FSx, with the old home's files, and Enroot credentials for ECR
    assert (root / "fsx/home/ubuntu/.bashrc").read_text() == "# rc\n"
    assert calls(node, "usermod") == ["usermod -d /fsx/home/ubuntu ubuntu"]
    assert "chown -R 1000:1000 " + str(root / "fsx/home/ubuntu") in calls(node, "chown")
    creds = (root / "fsx/home/ubuntu/.config/enroot/.credentials").read_text()
    assert creds == (f"machine {REGISTRY} login AWS password "
                     "$(aws ecr get-login-password --region us-west-2)\n")
    # stack outputs for job scripts, Neuron/EFA environment, compile cache on FSx
    env = (root / "fsx/.trn-ultracluster/env").read_text()
    assert f"export TRN_CONTAINER_IMAGE='{REGISTRY}#repo:abc'" in env
    profile = (root / "etc/profile.d/trn-ultracluster.sh").read_text()
    assert ("if [ -r /fsx/.trn-ultracluster/env ]; then . /fsx/.trn-ultracluster/env; fi"
            in profile.splitlines())
    assert (root / "fsx/neuron-compile-cache").is_dir()
    # containers: Pyxis in plugstack.conf, Enroot on the EBS volume
    assert "required /usr/local/lib/slurm/spank_pyxis.so" in (
        root / "opt/slurm/etc/plugstack.conf").read_text().splitlines()
    assert "ENROOT_CACHE_PATH /opt/sagemaker/enroot/cache" in (
        root / "etc/enroot/enroot.conf").read_text()
    assert not calls(node, "curl") and not calls(node, "git")  # already installed
    # Slurm: slurmd from the controller's configuration
    assert (root / "etc/systemd/system/slurmd.service.d/trn-ultracluster.conf").read_text() == (
        f'[Service]\nEnvironment="SLURMD_OPTIONS=--conf-server {CONTROLLER_IP}"\n')
    assert calls(node, "systemctl") == ["systemctl daemon-reload",
                                        "systemctl enable --now slurmd"]
    log = (root / "var/log/trn-ultracluster/lifecycle.log").read_text()
    assert f"node {WORKER_IPS[0]} is a Slurm compute node" in log
    assert log.rstrip().endswith("on_create done")


def test_rerun_is_idempotent(node):
    assert node(WORKER_IPS[0]).returncode == 0
    root = node.root
    (root / "proc").mkdir()
    (root / "proc/mounts").write_text(f"{FSX_DNS}@tcp:/{FSX_MOUNT} {root}/fsx lustre rw 0 0\n")
    (root / "etc/passwd").write_text((root / "etc/passwd").read_text().replace(
        "/home/ubuntu", "/fsx/home/ubuntu"))  # what usermod did
    node.log.write_text("")
    result = node(WORKER_IPS[0])
    assert result.returncode == 0, result.stdout + result.stderr
    assert calls(node, "mount") == [] and calls(node, "usermod") == []
    assert len((root / "etc/fstab").read_text().splitlines()) == 1
    assert len((root / "fsx/home/ubuntu/.config/enroot/.credentials").read_text().splitlines()) == 1
    assert (root / "opt/slurm/etc/plugstack.conf").read_text().count("spank_pyxis") == 1
    assert "already mounted" in result.stdout


def test_controller_checks_partitions_and_starts_slurmctld(node):
    result = node(CONTROLLER_IP)
    assert result.returncode == 0, result.stdout + result.stderr
    assert calls(node, "systemctl") == ["systemctl enable --now slurmctld"]
    assert "Slurm partition trainium is configured" in result.stdout


def test_controller_fails_when_a_partition_is_missing(node):
    (node.root / "opt/slurm/etc/slurm.conf").write_text(f"SlurmctldHost=x({CONTROLLER_IP})\n")
    result = node(CONTROLLER_IP)
    assert result.returncode != 0
    assert "Slurm partition trainium is missing" in result.stdout
    assert calls(node, "systemctl") == []


def test_controller_checks_every_partition_of_the_stack(node):
    set_env(node, TRN_PARTITIONS="trainium,dev")
    result = node(CONTROLLER_IP)
    assert result.returncode != 0
    assert "Slurm partition trainium is configured" in result.stdout
    assert "Slurm partition dev is missing" in result.stdout
    assert calls(node, "systemctl") == []


def test_controller_fails_without_partitions(node):
    set_env(node, TRN_PARTITIONS=None)
    result = node(CONTROLLER_IP)
    assert result.returncode != 0
    assert "ERROR: TRN_PARTITIONS missing" in result.stdout
    assert calls(node, "systemctl") == []


def test_failed_mount_exits_non_zero_with_a_clear_message(node):
    result = node(WORKER_IPS[0], STUB_MOUNT_FAIL="1", TRN_MOUNT_ATTEMPTS="3")
    assert result.returncode == 1
    assert len(calls(node, "mount")) == 3
    assert (f"ERROR: could not mount FSx for Lustre {FSX_DNS}@tcp:/{FSX_MOUNT} at /fsx "
            "after 3 attempts") in result.stdout
    assert "ERROR: could not mount" in (
        node.root / "var/log/trn-ultracluster/lifecycle.log").read_text()
    assert calls(node, "systemctl") == []  # stopped before Slurm


def test_missing_storage_layout_stops_before_mounting(node):
    set_env(node, TRN_NEURON_CACHE_DIR=None)
    result = node(WORKER_IPS[0])
    assert result.returncode == 1
    assert "ERROR: TRN_FSX_MOUNT_POINT and TRN_NEURON_CACHE_DIR missing" in result.stdout
    assert calls(node, "mount") == []


def set_env(node, **values: str | None) -> None:
    """Change the stack environment of ``trn_ultracluster.json`` (``None`` removes a name)."""
    path = node.lcs_dir / "trn_ultracluster.json"
    cluster = json.loads(path.read_text())
    for name, value in values.items():
        if value is None:
            cluster["env"].pop(name, None)
        else:
            cluster["env"][name] = value
    path.write_text(json.dumps(cluster))


def test_missing_tools_are_installed_at_pinned_versions(node):
    (node.bin / "enroot").unlink()
    (node.root / "usr/local/lib/slurm/spank_pyxis.so").unlink()
    result = node(LOGIN_IP)
    assert result.returncode == 0, result.stdout + result.stderr
    urls = [c.split()[-1] for c in calls(node, "curl")]
    assert urls == [
        "https://github.com/NVIDIA/enroot/releases/download/v3.4.1/enroot_3.4.1-1_amd64.deb",
        "https://github.com/NVIDIA/enroot/releases/download/v3.4.1/enroot+caps_3.4.1-1_amd64.deb"]
    assert any("--branch v0.19.0 https://github.com/NVIDIA/pyxis.git" in c
               for c in calls(node, "git"))
    assert calls(node, "systemctl")[-1] == "systemctl enable --now slurmd"
