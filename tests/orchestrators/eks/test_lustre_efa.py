"""FSx for Lustre over EFA on EKS managed Trainium nodes: the launch template's user data
(MIME multi-part, one shell part carrying lustre_efa.sh and fetching its helper lustre_efa.py,
an S3 asset the node role may read) only with fsx.efa on, and the shell part run against a
fake Amazon Linux 2023 node (client, LNet over EFA, boot unit, watcher; the failure paths,
a helper that cannot be fetched or does not match among them, report 0; in mode required the
node powers off before it joins, in mode preferred it joins over TCP)."""

from __future__ import annotations

import base64
import email
import fnmatch
import gzip
import hashlib
import json
import shutil
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
from tests.orchestrators.standalone.template_values import resolve
from trn_ultracluster.config.fsx_efa import plan_fsx_efa
from trn_ultracluster.orchestrators.eks.lustre_efa import (
    BOUNDARY,
    HELPER_OBJECTS,
    USER_DATA_BUDGET_BYTES,
    HelperSource,
    boot_script,
    helper_sha256,
    inline_script,
    lustre_efa_user_data,
    packed_script,
    user_data_scripts,
)
from trn_ultracluster.orchestrators.nodes import LUSTRE_EFA_HELPER, LUSTRE_EFA_SCRIPT, NODE_SCRIPTS

EFA_EKS = {"orchestrator": "eks", "fsx.efa": "true", "fsx.storage_capacity_gib": "19200"}
"""The default EKS cluster (trn1.32xlarge) with an EFA-enabled file system: 19,200 GiB, the
EFA step at 250 MB/s/TiB; mode required, 2 interfaces per node."""
CLUSTER = "TrnUltraCluster-1a2b3c4d"
BUCKET = "cdk-hnb659fds-assets-123456789012-us-west-2"
HELPER = HelperSource(url=f"s3://{BUCKET}/{'0' * 64}.py", sha256=helper_sha256())
"""The helper's S3 asset as the unit tests give it (the synthesized stack's: below)."""


@pytest.fixture(scope="module")
def efa_eks(synth):
    return synth(**EFA_EKS)


def launch_template_data(s) -> dict:
    (lt,) = [r for r in s.template["Resources"].values() if r["Type"] == "AWS::EC2::LaunchTemplate"]
    return lt["Properties"]["LaunchTemplateData"]


def shell_part(user_data: str) -> str:
    message = email.message_from_string(user_data)
    assert message.is_multipart() and message.get_content_type() == "multipart/mixed"
    (part,) = message.get_payload()
    assert part.get_content_type() == "text/x-shellscript"
    return part.get_payload()


def test_mode_off_leaves_the_launch_template_without_user_data(default):
    assert default.config.orchestrator == "eks" and plan_fsx_efa(default.config).mode == "off"
    assert "UserData" not in launch_template_data(default)


def test_efa_cluster_nodes_get_the_mime_user_data(efa_eks):
    assert plan_fsx_efa(efa_eks.config).mode == "required"
    encoded = launch_template_data(efa_eks)["UserData"]
    assert "Fn::Base64" in encoded
    text = base64.b64decode(resolve(encoded, efa_eks.template)).decode()
    assert text.startswith(f'MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary="{BOUNDARY}"')
    part = shell_part(text)
    cluster_ref = efa_eks.ref_id("EksCluster")
    assert "MODE='required'\n" in part
    assert ('csi-node --mode "${MODE}" --interfaces \'2\' \\\n  --mib \'256\' '
            "--region 'us-west-2'") in part
    assert f"--cluster 'ref-{cluster_ref}'" in part  # the EKS cluster's name (Container Insights')
    assert f"HELPER_URL='s3://{BUCKET}/{helper_asset(efa_eks)['objectKey']}'\n" in part
    assert f"HELPER_SHA256='{helper_sha256()}'\n" in part
    assert len(text.encode()) < USER_DATA_BUDGET_BYTES
    # the Trainium node groups take the template's latest version, which carries it
    for group in efa_eks.resources("AWS::EKS::Nodegroup").values():
        spec = group["Properties"].get("LaunchTemplate")
        if spec is not None:
            assert "LatestVersionNumber" in str(spec["Version"])


def helper_asset(s) -> dict:
    """The destination of the stack's one asset of ``lustre_efa.py`` (cloud assembly manifest),
    with its staged ``path``."""
    assets = json.loads((s.outdir / f"{s.config.stack_name}.assets.json").read_text())["files"]
    (asset,) = [a for a in assets.values() if a["source"]["path"].endswith(".py")
                and (s.outdir / a["source"]["path"]).read_bytes()
                == (NODE_SCRIPTS / LUSTRE_EFA_HELPER).read_bytes()]
    (destination,) = asset["destinations"].values()
    return {**destination, "path": s.outdir / asset["source"]["path"]}


def test_the_helper_asset_is_lustre_efa_py_as_it_is_and_its_sha256(efa_eks):
    """The node checks the object against helper_sha256: the staged file is the repository's,
    byte for byte (a single-file asset is uploaded as it is), so the two agree."""
    asset = helper_asset(efa_eks)
    assert hashlib.sha256(asset["path"].read_bytes()).hexdigest() == helper_sha256()
    assert asset["objectKey"].endswith(".py")


def test_the_node_role_reads_every_helper_version_and_the_node_groups_wait_for_it(efa_eks):
    """s3:GetObject on the bootstrap bucket's ``*.py`` objects, this helper's among them (not
    its key alone: nodes of the previous launch template version fetch the previous object
    during an update or a rollback; no bucket-wide grant), in a policy of its own on the node
    role, which every Trainium node group depends on: a node must not boot before it may fetch
    the helper."""
    (name, policy), = [(k, r) for k, r in efa_eks.resources("AWS::IAM::Policy").items()
                       if "LustreEfaHelper" in k]
    (statement,) = policy["Properties"]["PolicyDocument"]["Statement"]
    assert statement["Action"] == "s3:GetObject" and statement["Effect"] == "Allow"
    key = helper_asset(efa_eks)["objectKey"]
    assert resolve(statement["Resource"], efa_eks.template) == f"arn:aws:s3:::{BUCKET}/*.py"
    assert fnmatch.fnmatchcase(key, HELPER_OBJECTS)
    assert policy["Properties"]["Roles"] == [{"Ref": efa_eks.ref_id("EksNodeRole")}]
    trainium = {k: r for k, r in efa_eks.resources("AWS::EKS::Nodegroup").items()
                if "LaunchTemplate" in r["Properties"]}
    assert trainium and all(name in r["DependsOn"] for r in trainium.values())


def test_without_fsx_efa_there_is_no_helper_asset_nor_its_policy(default):
    assert not [k for k in default.resources("AWS::IAM::Policy") if "LustreEfaHelper" in k]


def test_the_packed_script_is_lustre_efa_sh_without_its_comments():
    text = gzip.decompress(base64.b64decode(packed_script())).decode()
    assert text == inline_script((NODE_SCRIPTS / LUSTRE_EFA_SCRIPT).read_text())
    assert text.startswith("#!/bin/bash\n") and "\n# " not in text
    assert packed_script() == packed_script()  # the same bytes at every synth


def test_user_data_scripts_unpacks_what_the_node_runs(efa_eks):
    """What a permissions test reads: the shell part and lustre_efa.sh as text, from the
    synthesized template; the node's AWS calls are in there."""
    encoded = launch_template_data(efa_eks)["UserData"]
    scripts = user_data_scripts(base64.b64decode(resolve(encoded, efa_eks.template)).decode())
    assert set(scripts) == {"lustre_efa_boot.sh", "lustre_efa.sh"}
    assert scripts["lustre_efa.sh"] == inline_script((NODE_SCRIPTS / LUSTRE_EFA_SCRIPT).read_text())
    assert "aws cloudwatch put-metric-data" in scripts["lustre_efa.sh"]
    assert "csi-node" in scripts["lustre_efa_boot.sh"]


def test_user_data_fits_ec2s_limit_beside_eks_own_part():
    """The longest values: 16 interfaces, a 100-character cluster name, a 63-character bucket
    name (S3's longest) and an asset key of 64 hex digits."""
    longest = HelperSource(url=f"s3://{'b' * 63}/{'0' * 64}.py", sha256=helper_sha256())
    text = lustre_efa_user_data("required", 16, cluster_name="x" * 100, region="ap-southeast-4",
                                helper=longest)
    assert len(text.encode()) < USER_DATA_BUDGET_BYTES <= 16 * 1024 - 4 * 1024


def test_mode_off_has_no_boot_script():
    with pytest.raises(ValueError, match="mode off"):
        boot_script("off", 0, cluster_name=CLUSTER, region="us-west-2", helper=HELPER)


def test_shell_part_is_shellcheck_clean(tmp_path):
    path = tmp_path / "part.sh"
    path.write_text(shell_part(lustre_efa_user_data("preferred", 2, cluster_name=CLUSTER,
                                                    region="us-west-2", helper=HELPER)))
    done = subprocess.run([shellcheck(), str(path)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout


class Node:
    """An EKS AL2023 Neuron node (kernel 6.18, no Lustre client) in a fake root, with the
    helper's S3 object (:data:`HELPER`) in a fake S3 (``self.s3``)."""

    def __init__(self, tmp_path: Path, mode: str, **fake: object):
        self.root, self.bin, self.lnet = tmp_path / "root", tmp_path / "bin", tmp_path / "lnet"
        self.log, self.s3 = tmp_path / "calls.log", tmp_path / "s3"
        fake_node(self.root, os_release=AL2023, **fake)  # type: ignore[arg-type]
        install_stubs(self.bin)
        self.helper = self.s3 / HELPER.url.removeprefix("s3://")
        self.helper.parent.mkdir(parents=True)
        shutil.copy(NODE_SCRIPTS / LUSTRE_EFA_HELPER, self.helper)
        self.console, self.poweroff = tmp_path / "console", tmp_path / "poweroff"
        self.console.touch()
        self.env = stub_env(self.bin, self.lnet, self.log, TRN_ROOT=str(self.root),
                            STUB_KERNEL="6.18.36-69.138.amzn2023.x86_64", STUB_NO_KEFALND="1",
                            STUB_S3=str(self.s3), TRN_CONSOLE=str(self.console),
                            TRN_POWEROFF=str(self.poweroff))
        self.part = tmp_path / "part.sh"
        self.part.write_text(shell_part(lustre_efa_user_data(
            mode, 2, cluster_name=CLUSTER, region="us-west-2",  # type: ignore[arg-type]
            helper=HELPER)))

    def run(self, **env: str) -> subprocess.CompletedProcess:
        return subprocess.run(["bash", str(self.part)], env={**self.env, **env},
                              capture_output=True, text=True, timeout=60)

    def calls(self, name: str) -> list[str]:
        return calls(self.log, name)

    def path(self, absolute: str) -> Path:
        return self.root / absolute.lstrip("/")


@pytest.mark.parametrize("mode", ["required", "preferred"])
def test_boot_installs_the_client_configures_lnet_and_the_watcher(tmp_path, mode):
    node = Node(tmp_path, mode)
    result = node.run()
    assert result.returncode == 0, result.stdout + result.stderr
    assert "FSx for Lustre over EFA set up (/var/log/trn-ultracluster/lustre-efa-boot.log)" in result.stdout
    script = node.path("/opt/trn-ultracluster/lustre_efa.sh")
    assert script.read_text() == inline_script((NODE_SCRIPTS / LUSTRE_EFA_SCRIPT).read_text())
    helper = node.path("/opt/trn-ultracluster/lustre_efa.py")
    assert helper.read_bytes() == (NODE_SCRIPTS / LUSTRE_EFA_HELPER).read_bytes()
    assert node.path("/usr/local/sbin/trn-lustre-efa.py").read_bytes() == helper.read_bytes()
    assert node.calls("dnf") == ["dnf install -y lustre-client"]  # the AMI has no client
    efa = lnet_state(node.lnet)["nets"]["efa"]
    assert [ni["if"] for ni in efa] == [EFA_DEVICES[0], EFA_DEVICES[-1]]
    assert node.path("/etc/systemd/system/trn-lustre-efa.service").is_file()
    watcher = node.path("/etc/systemd/system/trn-lustre-efa-check.service").read_text()
    assert f"watch --mode {mode} --mib 256 --region us-west-2" in watcher
    assert f"--cluster {CLUSTER}" in watcher
    assert node.calls("aws") == [  # the helper, with the node role; no metric yet
        f"aws s3 cp --region us-west-2 --only-show-errors {HELPER.url} "
        f"{node.path('/opt/trn-ultracluster/lustre_efa.py')}"]
    assert not node.poweroff.exists()


@pytest.mark.parametrize("mode, status", [("required", 1), ("preferred", 0)])
def test_boot_on_a_node_without_efa_reports_0_and_powers_off_only_in_mode_required(
        tmp_path, mode, status):
    """Mode required: the cause on stderr (cloud-init's output), in the log and on the console,
    then the node powers off before kubelet starts, so that its node group replaces it. Mode
    preferred: a WARNING, and the node joins over TCP."""
    node = Node(tmp_path, mode, devices=())
    result = node.run()
    assert result.returncode == status, result.stdout + result.stderr
    (put,) = [c for c in node.calls("aws") if "put-metric-data" in c]
    assert f"--value 0 --dimensions ClusterName={CLUSTER}," in put
    log = node.path("/var/log/trn-ultracluster/lustre-efa-boot.log").read_text()
    assert "(no-efa-device): no EFA device" in log
    assert "set up" not in result.stdout  # only when LNet was configured
    if status:
        said = ("ERROR: FSx for Lustre over EFA is required (fsx.efa: true) and this node cannot "
                "have it: ")
        for where in (result.stderr, log, node.console.read_text()):
            line = next(ln for ln in where.splitlines() if said in ln)
            assert "(no-efa-device): no EFA device" in line  # the cause
            assert "the node powers off before it joins the cluster" in line
        assert node.poweroff.read_text() == "poweroff\n"
        assert "joins the cluster anyway" not in result.stderr
    else:
        assert "WARNING: LNet could not be configured for EFA" in result.stderr
        assert "joins the cluster over TCP (fsx.efa: auto)" in result.stderr
        assert not node.poweroff.exists() and node.console.read_text() == ""


@pytest.mark.parametrize("mode, poweroff", [("required", True), ("preferred", False)])
def test_a_part_that_cannot_unpack_the_script_powers_off_only_in_mode_required(
        tmp_path, mode, poweroff):
    node = Node(tmp_path, mode)
    (node.bin / "gunzip").write_text("#!/bin/bash\ncat > /dev/null\nexit 1\n")
    (node.bin / "gunzip").chmod(0o755)
    result = node.run()
    assert result.returncode == 1
    assert "cannot unpack lustre_efa.sh" in result.stderr
    assert node.poweroff.exists() == poweroff
    assert ("cannot unpack" in node.console.read_text()) == poweroff


@pytest.mark.parametrize("mode, poweroff", [("required", True), ("preferred", False)])
def test_a_helper_that_cannot_be_fetched_reports_0_and_powers_off_only_in_mode_required(
        tmp_path, mode, poweroff):
    """The object is missing (or the role may not read it): every attempt fails, then the part
    reports 0 (lustre_efa.sh report needs no helper), names the URL in an ERROR and, in mode
    required, powers off; nothing runs csi-node."""
    node = Node(tmp_path, mode)
    node.helper.unlink()
    result = node.run(TRN_FETCH_ATTEMPTS="3")
    assert result.returncode == 1
    fetches = [c for c in node.calls("aws") if c.startswith("aws s3 cp")]
    assert len(fetches) == 3 and node.calls("sleep") == ["sleep 10", "sleep 10"]
    (put,) = [c for c in node.calls("aws") if "put-metric-data" in c]
    assert f"--value 0 --dimensions ClusterName={CLUSTER}," in put
    cause = (f"cannot fetch lustre_efa.py from {HELPER.url} (aws s3 cp, 3 attempts; the node "
             "role needs s3:GetObject on it)")
    (line,) = [ln for ln in result.stderr.splitlines() if "ERROR" in ln]
    assert cause in line
    assert node.poweroff.exists() == poweroff and (cause in node.console.read_text()) == poweroff
    if not poweroff:
        assert line.endswith("which joins the cluster over TCP (fsx.efa: auto)")
    assert node.calls("modprobe") == [] and node.calls("dnf") == []  # csi-node never ran
    assert not node.path("/opt/trn-ultracluster/lustre_efa.py").exists()


@pytest.mark.parametrize("mode, poweroff", [("required", True), ("preferred", False)])
def test_a_helper_that_does_not_match_its_sha256_is_removed_and_never_run(
        tmp_path, mode, poweroff):
    """The object is there but not the deploy's lustre_efa.py: no retry, the file is removed,
    0 reported, an ERROR naming both hashes; in mode required the node powers off."""
    node = Node(tmp_path, mode)
    node.helper.write_text("#!/usr/bin/env python3\nraise SystemExit('not the helper')\n")
    result = node.run()
    assert result.returncode == 1
    assert len([c for c in node.calls("aws") if c.startswith("aws s3 cp")]) == 1
    assert [c for c in node.calls("aws") if "put-metric-data" in c]
    got = hashlib.sha256(node.helper.read_bytes()).hexdigest()
    said = (f"lustre_efa.py from {HELPER.url} has SHA-256 {got}, not the deploy's "
            f"{helper_sha256()}")
    (line,) = [ln for ln in result.stderr.splitlines() if "ERROR" in ln]
    assert said in line
    assert node.poweroff.exists() == poweroff
    assert not node.path("/opt/trn-ultracluster/lustre_efa.py").exists()
    assert node.calls("modprobe") == []


def test_an_unexpected_failure_in_mode_preferred_does_not_claim_required(tmp_path):
    """csi-node exits 1 without its own verdict (here a usage error: a cluster name with a
    space, which the watcher's command line cannot carry): in mode preferred the part warns
    and the node joins over TCP; nothing says EFA is required."""
    node = Node(tmp_path, "preferred")
    node.part.write_text(shell_part(lustre_efa_user_data(
        "preferred", 2, cluster_name="not one word", region="us-west-2", helper=HELPER)))
    result = node.run()
    assert result.returncode == 1
    assert "required" not in result.stdout + result.stderr
    assert ("WARNING: lustre_efa.sh csi-node failed (exit 1; "
            "/var/log/trn-ultracluster/lustre-efa-boot.log)") in result.stderr
    assert "joins the cluster over TCP (fsx.efa: auto)" in result.stderr
    assert not node.poweroff.exists()


def test_boot_on_a_node_whose_client_has_no_efa_support_fails_naming_kefalnd(tmp_path):
    node = Node(tmp_path, "required")
    (node.bin / "dnf").write_text('#!/bin/bash\necho "dnf $*" >> "$STUB_LOG"\n')  # no kefalnd
    result = node.run()
    assert result.returncode == 1
    log = node.path("/var/log/trn-ultracluster/lustre-efa-boot.log").read_text()
    assert "(no-kefalnd): no kefalnd kernel module" in log
    assert "(no-kefalnd)" in node.console.read_text() and node.poweroff.exists()


@pytest.mark.parametrize("route, status, value", [("efa", 0, "1"), ("tcp", 1, "0")])
def test_the_watcher_checks_the_csi_mount(tmp_path, route, status, value):
    node = Node(tmp_path, "required")
    assert node.run().returncode == 0
    mount = node.path("/var/lib/kubelet/plugins/kubernetes.io/csi/fsx.csi.aws.com/v/globalmount")
    mount.mkdir(parents=True)
    node.path("/proc").mkdir()
    node.path("/proc/mounts").write_text(f"fs.fsx@tcp:/abc {mount} lustre rw 0 0\n")
    unit = node.path("/etc/systemd/system/trn-lustre-efa-check.service").read_text()
    installed, *args = next(ln for ln in unit.splitlines()
                            if ln.startswith("ExecStart=")).removeprefix("ExecStart=").split()
    done = subprocess.run(["bash", str(node.path(installed)), *args],
                          env={**node.env, "STUB_ROUTE": route}, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == status, done.stdout + done.stderr
    (put,) = [c for c in node.calls("aws") if "put-metric-data" in c]
    assert f"--value {value} " in put
    assert not node.poweroff.exists()  # after the node joined: an ERROR and 0, never off
