"""The HyperPod EKS lifecycle script (``scripts/on_create.sh``) against a fake root: with
``fsx.efa`` off it loads the Lustre modules as before; preferred or required, it sets LNet up
for EFA through ``lustre_efa.sh csi-node`` (client, LNet, boot unit, the watcher of the
first Lustre mount) and fails the node only when EFA is required and cannot be had."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.cli.helpers import shellcheck
from tests.orchestrators.lustre_efa_stubs import (
    AL2023,
    EFA_DEVICES,
    calls,
    fake_node,
    install_stubs,
    lnet_state,
    stub_env,
)
from trn_ultracluster.contracts.hyperpod import LIFECYCLE_FILE
from trn_ultracluster.orchestrators.hyperpod_eks.cluster import lifecycle_node_file
from trn_ultracluster.orchestrators.hyperpod_eks.versions import (
    LIFECYCLE_SCRIPTS,
    ON_CREATE,
    ON_CREATE_NO_EFA,
)
from trn_ultracluster.orchestrators.nodes import (
    LCS_SCRIPT,
    LUSTRE_EFA_HELPER,
    LUSTRE_EFA_SCRIPT,
    NODE_SCRIPTS,
)

CLUSTER = "TrnUltraCluster-1a2b3c4d"


class Node:
    """A HyperPod EKS node: the lifecycle directory as HyperPod downloads it, a fake root
    (Amazon Linux 2023, a trn1.32xlarge's EFA devices) and the stubs."""

    def __init__(self, tmp_path: Path, mode: str, **fake: object):
        self.root, self.bin, self.lnet = tmp_path / "root", tmp_path / "bin", tmp_path / "lnet"
        self.lcs, self.log, self.log_dir = tmp_path / "lcs", tmp_path / "calls.log", tmp_path / "log"
        self.lcs.mkdir()
        for script in (ON_CREATE, ON_CREATE_NO_EFA):
            (self.lcs / script).write_text((LIFECYCLE_SCRIPTS / script).read_text())
        for name in (LCS_SCRIPT, LUSTRE_EFA_SCRIPT, LUSTRE_EFA_HELPER):
            (self.lcs / name).write_text((NODE_SCRIPTS / name).read_text())
        (self.lcs / LIFECYCLE_FILE).write_text(json.dumps(
            lifecycle_node_file(mode, 2 if mode != "off" else 0, CLUSTER, "us-west-2")))  # type: ignore[arg-type]
        fake_node(self.root, os_release=AL2023, **fake)  # type: ignore[arg-type]
        install_stubs(self.bin)
        self.env = stub_env(self.bin, self.lnet, self.log, TRN_ROOT=str(self.root),
                            TRN_LCS_DIR=str(self.lcs), TRN_LOG_DIR=str(self.log_dir),
                            TRN_FAIL_WAIT_S="0", STUB_KERNEL="6.1.155-176.282.amzn2023.x86_64")

    def run(self, script: str = ON_CREATE, **env: str) -> subprocess.CompletedProcess:
        return subprocess.run(["bash", str(self.lcs / script)], env={**self.env, **env},
                              capture_output=True, text=True, timeout=60)

    def calls(self, name: str) -> list[str]:
        return calls(self.log, name)

    def lifecycle_log(self) -> str:
        return (self.log_dir / "lifecycle.log").read_text()


def test_script_is_shellcheck_clean():
    done = subprocess.run([shellcheck(), "-x", str(LIFECYCLE_SCRIPTS / ON_CREATE),
                           str(LIFECYCLE_SCRIPTS / ON_CREATE_NO_EFA)], capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stdout


@pytest.mark.parametrize("mode", ["required", "preferred"])
def test_a_cpu_pools_node_mounts_over_tcp_whatever_fsx_efa_says(tmp_path, mode):
    """The CPU groups' OnCreate (on_create_no_efa.sh) runs on_create.sh as mode off: a node
    without EFA devices would fail in mode required otherwise."""
    node = Node(tmp_path, mode, devices=())
    result = node.run(ON_CREATE_NO_EFA)
    assert result.returncode == 0, result.stdout + result.stderr
    log = node.lifecycle_log()
    assert f"(fsx.efa: {mode}) is for the Trainium nodes: this node of a CPU pool" in log
    assert "kernel module lnet loaded" in log and log.rstrip().endswith("done")
    assert node.calls("lnetctl") == [] and node.calls("dnf") == [] and node.calls("aws") == []
    # the same node through the Trainium groups' OnCreate: mode required fails it
    if mode == "required":
        (tmp_path / "trn").mkdir()
        assert Node(tmp_path / "trn", mode, devices=()).run().returncode != 0


def test_mode_off_loads_lustre_and_warns_without_failing(tmp_path):
    node = Node(tmp_path, "off")
    result = node.run(STUB_MODPROBE_FAIL="lustre")
    assert result.returncode == 0, result.stdout + result.stderr
    log = node.lifecycle_log()
    assert "kernel module lnet loaded" in log
    assert "WARNING: modprobe lustre failed" in log and log.rstrip().endswith("done")
    assert node.calls("lnetctl") == [] and node.calls("aws") == [] and node.calls("dnf") == []


def test_mode_off_needs_nothing_new_to_go_on(tmp_path):
    """python3 (lcs.py) failing must not fail a mode-off node: before fsx.efa it needed neither."""
    node = Node(tmp_path, "off")
    (node.bin / "python3").write_text("#!/bin/bash\necho 'python3: broken' >&2\nexit 1\n")
    (node.bin / "python3").chmod(0o755)
    result = node.run()
    assert result.returncode == 0, result.stdout + result.stderr
    log = node.lifecycle_log()
    assert "its fsx.efa mode is off" in log and "kernel module lustre loaded" in log
    assert "required" not in log
    assert node.calls("lnetctl") == [] and node.calls("aws") == []


def test_an_unreadable_fsx_efa_section_fails_naming_the_file(tmp_path):
    node = Node(tmp_path, "required")
    cluster = json.loads((node.lcs / LIFECYCLE_FILE).read_text())
    cluster["fsx"]["efa"]["mode"] = "maybe"
    (node.lcs / LIFECYCLE_FILE).write_text(json.dumps(cluster))
    result = node.run()
    assert result.returncode == 1
    log = node.lifecycle_log()
    assert f"ERROR: cannot read fsx.efa of {node.lcs / LIFECYCLE_FILE}" in log
    assert "is required (fsx.efa: true)" not in log
    assert node.calls("lnetctl") == []


@pytest.mark.parametrize("mode", ["required", "preferred"])
def test_efa_node_sets_up_lnet_and_the_watcher_before_it_joins(tmp_path, mode):
    node = Node(tmp_path, mode)
    result = node.run(STUB_NO_KEFALND="1")  # the HyperPod AMI's client: installed with dnf
    assert result.returncode == 0, result.stdout + result.stderr
    assert node.calls("dnf") == ["dnf install -y lustre-client"]
    efa = lnet_state(node.lnet)["nets"]["efa"]
    assert [ni["if"] for ni in efa] == [EFA_DEVICES[0], EFA_DEVICES[-1]]
    units = node.root / "etc/systemd/system"
    assert (units / "trn-lustre-efa.service").is_file()
    watcher = (units / "trn-lustre-efa-check.service").read_text()
    assert (f"watch --mode {mode} --mib 256 --region us-west-2 --namespace "
            f"TrnUltraCluster/Neuron --metric node_fsx_lustre_over_efa --cluster {CLUSTER}"
            in watcher)
    assert "systemctl enable --now trn-lustre-efa-check.service" in node.calls("systemctl")
    assert "LNet configured: tcp on ens5" in node.lifecycle_log()
    assert node.lifecycle_log().rstrip().endswith("done")


@pytest.mark.parametrize("fake, env, cause", [
    ({}, {"STUB_KERNEL": "5.10.0", "STUB_NO_KEFALND": "1"}, "(install):"),  # no AL2023 client
    ({"devices": ()}, {}, "(no-efa-device): no EFA device"),
    ({}, {"STUB_LNET_DOWN": "1"}, "(ni-not-up): 0 of 2 EFA NIs"),
])
def test_required_node_that_cannot_have_efa_fails_and_reports_0(tmp_path, fake, env, cause):
    node = Node(tmp_path, "required", **fake)
    if cause == "(install):":
        (node.root / "etc/os-release").write_text('ID="amzn"\nVERSION_ID="2"\n')
    result = node.run(**env)
    assert result.returncode == 1
    log = node.lifecycle_log()
    assert cause in log
    assert ("ERROR: FSx for Lustre over EFA is required (fsx.efa: true) and this node cannot "
            "have it") in log
    assert "HyperPod replaces" not in log and "not verified here" in log
    (put,) = [c for c in node.calls("aws") if "put-metric-data" in c]
    assert f"--value 0 --dimensions ClusterName={CLUSTER}," in put
    assert not (node.root / "etc/systemd/system/trn-lustre-efa-check.service").exists()


def test_preferred_node_that_cannot_have_efa_joins_on_tcp_and_reports_0(tmp_path):
    node = Node(tmp_path, "preferred", devices=())
    result = node.run()
    assert result.returncode == 0, result.stdout + result.stderr
    assert "WARNING: LNet could not be configured for EFA" in node.lifecycle_log()
    assert "the node joins over TCP or unchecked" in node.lifecycle_log()
    assert "over EFA set up" not in node.lifecycle_log()
    assert "--value 0 " in [c for c in node.calls("aws") if "put-metric-data" in c][0]


def test_preferred_node_whose_lnet_unit_cannot_be_installed_joins_and_reports_0(tmp_path):
    node = Node(tmp_path, "preferred")
    result = node.run(STUB_SYSTEMCTL_FAIL="enable")
    assert result.returncode == 0, result.stdout + result.stderr
    log = node.lifecycle_log()
    assert "(install): systemctl enable trn-lustre-efa.service failed" in log
    assert "WARNING: FSx for Lustre over EFA is not set up on this node" in log
    assert "required" not in log and log.rstrip().endswith("done")
    (put,) = [c for c in node.calls("aws") if "put-metric-data" in c]
    assert "--value 0 " in put


@pytest.mark.parametrize("mode, status", [("preferred", 0), ("required", 1)])
def test_an_unexpected_csi_node_failure_claims_required_only_in_mode_required(tmp_path, mode,
                                                                            status):
    """lustre_efa.sh csi-node fails without its own verdict (exit 1 in mode preferred: here a
    broken script): the catch-all message must follow the mode."""
    node = Node(tmp_path, mode)
    (node.lcs / LUSTRE_EFA_SCRIPT).write_text(
        '#!/bin/bash\necho "lustre_efa.sh $*" >> "$STUB_LOG"\n[[ "$1" == report ]] || exit 1\n')
    result = node.run()
    assert result.returncode == status, result.stdout + result.stderr
    log = node.lifecycle_log()
    if mode == "required":
        assert "ERROR: FSx for Lustre over EFA is required (fsx.efa: true)" in log
    else:
        assert "required" not in log
        assert "WARNING: lustre_efa.sh csi-node failed (exit 1, above)" in log
        assert [c for c in node.calls("lustre_efa.sh") if c.startswith("lustre_efa.sh report")] == [
            "lustre_efa.sh report --value 0 --region us-west-2 --namespace TrnUltraCluster/Neuron "
            f"--metric node_fsx_lustre_over_efa --cluster {CLUSTER}"]


@pytest.mark.parametrize("route, mode, status, value", [
    ("efa", "required", 0, "1"), ("tcp", "preferred", 0, "0"), ("tcp", "required", 1, "0")])
def test_the_watcher_checks_the_csi_mount_after_the_node_joined(tmp_path, route, mode, status,
                                                                value):
    """What the installed watcher runs once the FSx CSI driver mounted the volume for a pod:
    the check and the metric; required + TCP is an ERROR in its log and a failed unit (the
    node has joined: nothing here can fail it)."""
    node = Node(tmp_path, mode)
    assert node.run().returncode == 0
    unit = (node.root / "etc/systemd/system/trn-lustre-efa-check.service").read_text()
    command = next(ln for ln in unit.splitlines() if ln.startswith("ExecStart="))
    installed, *args = command.removeprefix("ExecStart=").split()
    mount = node.root / "var/lib/kubelet/plugins/kubernetes.io/csi/fsx.csi.aws.com/x/globalmount"
    mount.mkdir(parents=True)
    (node.root / "proc").mkdir()
    (node.root / "proc/mounts").write_text(f"fs.fsx@tcp:/abc {mount} lustre rw 0 0\n")
    done = subprocess.run(["bash", str(node.root / installed.lstrip("/")), *args],
                          env={**node.env, "STUB_ROUTE": route}, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == status, done.stdout + done.stderr
    (put,) = [c for c in node.calls("aws") if "put-metric-data" in c]
    assert f"--value {value} " in put
    if status:
        assert "ERROR: FSx for Lustre over EFA is required" in done.stdout
