"""HyperPod lifecycle script: lint, the Python helper, and on_init_complete.sh against a fake
root.

``on_init_complete.sh`` runs with ``TRN_ROOT`` pointing at a temporary directory and a PATH
whose ``aws``, ``mount``, ``usermod``, ``chown``, ``scontrol``, ``enroot`` and ``sleep`` are
stubs that record their arguments; the ``aws`` stub answers ``describe-file-systems`` with
the next of a list of prepared answers (the last one repeats).
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
from trn_ultracluster.contracts.hyperpod import ON_INIT_COMPLETE, SLURM_TEAMS_STEPS, JobEnv
from trn_ultracluster.orchestrators.hyperpod_slurm.lifecycle import LIFECYCLE_ASSETS, lifecycle_file
from trn_ultracluster.orchestrators.nodes import (
    FSX_SCRIPT,
    LCS_SCRIPT,
    LUSTRE_EFA_HELPER,
    LUSTRE_EFA_SCRIPT,
    NODE_SCRIPTS,
    efa_node_settings,
)
from tests.orchestrators.lustre_efa_stubs import (EFA_DEVICES, fake_node, install_stubs, lnet_state,
                                                  write_python3)
from trn_ultracluster.contracts.shared_storage import FSX_MOUNT_PATH, NEURON_COMPILE_CACHE_DIR

sys.path.insert(0, str(NODE_SCRIPTS))
import lcs  # noqa: E402

SHELLCHECK = Path(sys.executable).parent / "shellcheck"
CONTROLLER_IP, LOGIN_IP, WORKER_IPS = "10.0.0.10", "10.0.0.11", ("10.0.0.20", "10.0.0.21")
FS_ID = "fs-0123456789abcdef0"
FSX_DNS, FSX_MOUNT = f"{FS_ID}.fsx.us-west-2.amazonaws.com", "abcdefgh"
REGISTRY = "123456789012.dkr.ecr.us-west-2.amazonaws.com"
STACK_ID = "arn:aws:cloudformation:us-west-2:123456789012:stack/TrnUltraCluster/1111"
TAG = {"Key": "trn-ultracluster:stack-id", "Value": STACK_ID}

RESOURCES = {"InstanceGroups": [
    {"Name": "controller", "Instances": [{"CustomerIpAddress": CONTROLLER_IP}]},
    {"Name": "login", "Instances": [{"CustomerIpAddress": LOGIN_IP}]},
    {"Name": "workers", "Instances": [{"CustomerIpAddress": ip} for ip in WORKER_IPS]},
]}
# What the stack writes for the default HyperPod config (controller, login, "workers" in
# partition "trainium"), with the environment the script reads.
CLUSTER = lifecycle_file(
    parse_config({"orchestrator": "hyperpod-slurm"}).config.hyperpod, ["workers"],
    {JobEnv.REGION.value: "us-west-2", JobEnv.ECR_REGISTRY.value: REGISTRY,
     JobEnv.CONTAINER_IMAGE.value: f"{REGISTRY}#repo:abc", JobEnv.PARTITIONS.value: "trainium",
     JobEnv.FSX_MOUNT_POINT.value: FSX_MOUNT_PATH,
     JobEnv.NEURON_CACHE_DIR.value: NEURON_COMPILE_CACHE_DIR},
    STACK_ID, data_repository=True)
GROUPS = CLUSTER["groups"]


def file_system(state: str, *, tags: list[dict[str, str]] | None = None,
                fs_id: str = FS_ID, efa: bool | None = None) -> dict:
    """One ``FileSystems`` entry of a DescribeFileSystems answer (botocore fsx model);
    ``efa``: its ``LustreConfiguration.EfaEnabled`` (None: no such field, as a file system
    created without EFA is described)."""
    lustre: dict = {"MountName": FSX_MOUNT}
    if efa is not None:
        lustre["EfaEnabled"] = efa
    return {"FileSystemId": fs_id, "Lifecycle": state, "DNSName": FSX_DNS,
            "FileSystemType": "LUSTRE", "Tags": [TAG] if tags is None else tags,
            "LustreConfiguration": lustre}


OTHER = file_system("AVAILABLE", tags=[{"Key": "Name", "Value": "someone else's"}],
                    fs_id="fs-0fffffffffffffff0")
AVAILABLE = {"FileSystems": [OTHER, file_system("AVAILABLE")]}
EFA_AVAILABLE = {"FileSystems": [OTHER, file_system("AVAILABLE", efa=True)]}
"""The stack's file system as ``fsx.efa`` on creates it: EFA-enabled."""


def association(state: str) -> dict:
    """A DescribeDataRepositoryAssociations answer with one association (botocore fsx model)."""
    return {"Associations": [{"AssociationId": "dra-0123456789abcdef0", "FileSystemId": FS_ID,
                              "Lifecycle": state, "FileSystemPath": "/",
                              "DataRepositoryPath": "s3://bucket/"}]}


def import_task(state: str) -> dict:
    """A DescribeDataRepositoryTasks answer with the association's metadata import."""
    return {"DataRepositoryTasks": [
        {"TaskId": "task-0123456789abcdef0", "Type": "EXPORT_TO_REPOSITORY",
         "Lifecycle": "EXECUTING", "CreationTime": "2026-11-22T10:00:00Z"},
        {"TaskId": "task-0123456789abcdef1", "Type": "IMPORT_METADATA_FROM_REPOSITORY",
         "Lifecycle": state, "CreationTime": "2026-11-22T10:01:00Z"}]}


LINKED = association("AVAILABLE")
IMPORTED = import_task("SUCCEEDED")

STUB = """#!/bin/bash
name="${0##*/}"  # not $(basename): a fork and an exec per call
echo "$name $*" >> "$STUB_LOG"
if [[ "$name" == mount && "${STUB_MOUNT_FAIL:-}" == 1 ]]; then
  echo "mount.lustre: mount failed: Connection timed out" >&2; exit 32
fi
if [[ "$name" == mount && -n "${STUB_PROC_MOUNTS:-}" ]]; then  # mount -t lustre -o OPTS SRC DIR
  echo "$5 $6 lustre rw 0 0" >> "$STUB_PROC_MOUNTS"
fi
if [[ "$name" == usermod && "${STUB_USERMOD_FAIL:-}" == 1 ]]; then
  echo "usermod: user ubuntu is currently used by process 4242" >&2; exit 8
fi
if [[ "$name" == scontrol && "${STUB_SCONTROL_FAIL:-}" == 1 ]]; then
  echo "Partition $4 not found" >&2; exit 1
fi
if [[ "$name" == aws ]]; then
  [[ -n "${STUB_AWS_WARN:-}" ]] && echo "$STUB_AWS_WARN" >&2
  dir="$STUB_AWS_DIR/$2"
  n=$(cat "$dir/next" 2>/dev/null || echo 0)
  if [[ -f "$dir/$((n + 1)).json" || -f "$dir/$((n + 1)).err" ]]; then
    echo $((n + 1)) > "$dir/next"
  fi
  if [[ -f "$dir/$n.err" ]]; then cat "$dir/$n.err" >&2; exit 254; fi
  cat "$dir/$n.json"
fi
exit 0
"""
STUBS = ("aws", "mount", "usermod", "chown", "scontrol", "sleep", "enroot")


# --- lint ------------------------------------------------------------------------------

def test_scripts_parse_and_are_shellcheck_clean():
    """The lifecycle script, the shared library and the teams' steps it sources (shellcheck
    -x follows them) and lustre_efa.sh, which the library runs."""
    scripts = sorted(LIFECYCLE_ASSETS.glob("*.sh"))
    assert [s.name for s in scripts] == [ON_INIT_COMPLETE, SLURM_TEAMS_STEPS]
    scripts += [NODE_SCRIPTS / FSX_SCRIPT, NODE_SCRIPTS / LUSTRE_EFA_SCRIPT]
    for script in scripts:
        subprocess.run(["bash", "-n", str(script)], check=True)
    result = subprocess.run([str(SHELLCHECK), "-x", *map(str, scripts)], capture_output=True,
                            text=True)
    assert result.returncode == 0, result.stdout


# --- the Python helper -------------------------------------------------------------------

@pytest.mark.parametrize("ip, role", [(CONTROLLER_IP, "controller"), (LOGIN_IP, "login"),
                                      (WORKER_IPS[1], "compute")])
def test_node_role_from_resource_config(ip, role):
    assert lcs.node_role(RESOURCES, GROUPS, ip) == role


def test_unknown_address_is_an_error():
    with pytest.raises(lcs.LifecycleError, match="10.9.9.9"):
        lcs.node_role(RESOURCES, GROUPS, "10.9.9.9")


def test_node_ip_is_the_source_address_towards_the_vpc():
    address = lcs.node_ip()  # a real UDP "connect": no packet is sent
    assert address.count(".") == 3


def test_node_ip_retries_with_doubling_delays_then_fails():
    delays: list[float] = []
    answers = iter([OSError("Network is unreachable"), OSError("still"), "10.1.2.3"])

    def probe() -> str:
        answer = next(answers)
        if isinstance(answer, Exception):
            raise answer
        return answer

    assert lcs.node_ip(probe, delays.append) == "10.1.2.3"
    assert delays == [5, 10]

    def never() -> str:
        raise OSError("Network is unreachable")

    with pytest.raises(lcs.LifecycleError, match="after 7 attempts"):
        lcs.node_ip(never, delays.append)


@pytest.mark.parametrize("answer, status", [
    ({"FileSystems": []}, "wait - NOT_CREATED - - -"),
    ({"FileSystems": [OTHER]}, "wait - NOT_CREATED - - -"),
    ({"FileSystems": [file_system("CREATING")]},
     f"wait {FS_ID} CREATING {FSX_DNS} {FSX_MOUNT} false"),
    ({"FileSystems": [file_system("UPDATING")]},
     f"wait {FS_ID} UPDATING {FSX_DNS} {FSX_MOUNT} false"),
    (AVAILABLE, f"ready {FS_ID} AVAILABLE {FSX_DNS} {FSX_MOUNT} false"),
    ({"FileSystems": [file_system("AVAILABLE", efa=True)]},
     f"ready {FS_ID} AVAILABLE {FSX_DNS} {FSX_MOUNT} true"),
    ({"FileSystems": [file_system("AVAILABLE", efa=False)]},
     f"ready {FS_ID} AVAILABLE {FSX_DNS} {FSX_MOUNT} false"),
    ({"FileSystems": [file_system("FAILED")]},
     f"failed {FS_ID} FAILED {FSX_DNS} {FSX_MOUNT} false"),
    ({"FileSystems": [file_system("MISCONFIGURED")]},
     f"failed {FS_ID} MISCONFIGURED {FSX_DNS} {FSX_MOUNT} false"),
])
def test_file_system_status_by_tag(answer, status):
    assert lcs.file_system_status(answer, TAG["Key"], TAG["Value"]) == status


def test_two_file_systems_with_the_tag_are_an_error():
    answer = {"FileSystems": [file_system("AVAILABLE"), file_system("AVAILABLE", fs_id="fs-2")]}
    with pytest.raises(lcs.LifecycleError, match="2 file systems are tagged"):
        lcs.file_system_status(answer, TAG["Key"], TAG["Value"])


def test_env_file_quotes_values_lets_extra_win_and_rejects_bad_names():
    cluster = {"names": {"A": "TRN_A"}, "env": {"TRN_B": "it's", "TRN_A": "x y"}}
    text = lcs.env_file(cluster, {"A": "z"})  # extra values by contract member
    assert text.splitlines()[1:] == ["export TRN_A=z", "export TRN_B='it'\"'\"'s'"]
    with pytest.raises(lcs.LifecycleError, match="lower"):
        lcs.env_file({"env": {"lower": "1"}})
    with pytest.raises(lcs.LifecycleError, match="no job environment member 'B'"):
        lcs.env_file(cluster, {"B": "1"})


def test_scripts_name_variables_by_contract_member_only():
    """The shell script and lcs.py read the variable names from the lifecycle file (the
    JobEnv contract), never copies of them."""
    for path in (LIFECYCLE_ASSETS / ON_INIT_COMPLETE, NODE_SCRIPTS / LCS_SCRIPT,
                 NODE_SCRIPTS / FSX_SCRIPT, NODE_SCRIPTS / LUSTRE_EFA_SCRIPT):
        text = path.read_text()
        copies = [m.value for m in JobEnv if m.value in text]
        assert not copies, f"{path.name} names {copies}"


@pytest.mark.parametrize("conf, expected", [
    (None, "/fsx/home/ubuntu/.config/enroot"),  # Enroot's default, no enroot.conf
    ("#ENROOT_CONFIG_PATH /nope\n", "/fsx/home/ubuntu/.config/enroot"),  # commented out
    ("ENROOT_CONFIG_PATH         ${HOME}/enroot\n", "/fsx/home/ubuntu/enroot"),  # base-config
    ("ENROOT_CONFIG_PATH /var/enroot/config/user-$(id -u)\n", "/var/enroot/config/user-1000"),
])
def test_enroot_config_dir_follows_enroot_conf(tmp_path, conf, expected):
    path = tmp_path / "enroot.conf"
    if conf is not None:
        path.write_text(conf)
    assert lcs.enroot_config_dir("/fsx/home/ubuntu", 1000, 1000, path) == expected


def test_enroot_config_dir_that_cannot_be_expanded_is_an_error(tmp_path):
    path = tmp_path / "enroot.conf"
    path.write_text("ENROOT_CONFIG_PATH ${SOMETHING}/enroot\n")
    with pytest.raises(lcs.LifecycleError, match="cannot expand"):
        lcs.enroot_config_dir("/home/u", 1000, 1000, path)


def test_env_get_prints_one_line_per_member_in_their_order(tmp_path, capsys):
    """One call for several values (fsx.sh's ``env_get`` reads them with ``mapfile``): empty lines
    for variables the file does not set, an unknown member or a value with a line break
    an error (status 2) rather than lines that shift."""
    cluster = tmp_path / "trn_ultracluster.json"
    names = {"REGION": "AWS_REGION", "FSX_MOUNT_POINT": "FSX_MOUNT", "CLUSTER_NAME": "CLUSTER"}
    cluster.write_text(json.dumps({"names": names, "env": {"AWS_REGION": "us-west-2",
                                                          "FSX_MOUNT": "/fsx dir"}}))
    argv = ["--cluster", str(cluster), "env-get"]
    assert lcs.main([*argv, "FSX_MOUNT_POINT", "CLUSTER_NAME", "REGION"]) == 0
    assert capsys.readouterr().out == "/fsx dir\n\nus-west-2\n"
    assert lcs.main([*argv, "REGION", "NOPE"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and "no job environment member 'NOPE'" in captured.err
    cluster.write_text(json.dumps({"names": names, "env": {"AWS_REGION": "us-west-2\nx"}}))
    assert lcs.main([*argv, "FSX_MOUNT_POINT", "REGION"]) == 2
    assert "REGION: its value 'us-west-2\\nx' has a line break" in capsys.readouterr().err


def test_cli_reports_a_missing_file_with_status_2(tmp_path, capsys):
    assert lcs.main(["--cluster", str(tmp_path / "nope.json"), "env-get", "X"]) == 2
    assert "nope.json: file not found" in capsys.readouterr().err


# --- on_init_complete.sh against a fake root -----------------------------------------------

@pytest.fixture
def node(tmp_path):
    """A fake root, lifecycle dir and stub PATH; returns a runner of on_init_complete.sh."""
    return make_node(tmp_path)


def make_node(tmp_path: Path, stubs: tuple[str, ...] = STUBS, cluster: dict | None = None):
    """A fake root in ``tmp_path`` with ``cluster`` (default :data:`CLUSTER`) as the stack's
    ``trn_ultracluster.json`` and ``stubs`` first on PATH; returns a runner of the script
    (``run(ip, answers=None, **env)``) with attributes ``root``, ``log``, ``bin``, ``lcs_dir``."""
    root, lcs_dir, bin_dir, aws_dir = (tmp_path / "root", tmp_path / "lcs", tmp_path / "bin",
                                       tmp_path / "aws")
    for d in (root / "etc", root / "home/ubuntu", root / "opt/ml/config", lcs_dir, bin_dir,
              aws_dir):
        d.mkdir(parents=True)
    (root / "etc/passwd").write_text(
        "root:x:0:0:root:/root:/bin/bash\n"
        "ubuntu:x:1000:1000:Ubuntu:/home/ubuntu:/bin/bash\n"
        "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n")
    (root / "home/ubuntu/.bashrc").write_text("# rc\n")
    (root / "opt/ml/config/resource_config.json").write_text(json.dumps(RESOURCES))
    for script in LIFECYCLE_ASSETS.iterdir():  # on_init_complete.sh, pool_env.py
        if script.is_file():
            (lcs_dir / script.name).write_text(script.read_text())
    for name in (LCS_SCRIPT, FSX_SCRIPT, LUSTRE_EFA_SCRIPT, LUSTRE_EFA_HELPER):  # uploaded beside it (lifecycle.upload_lifecycle_files)
        (lcs_dir / name).write_text((NODE_SCRIPTS / name).read_text())
    (lcs_dir / "trn_ultracluster.json").write_text(json.dumps(cluster or CLUSTER))
    for name in stubs:
        path = bin_dir / name
        path.write_text(STUB)
        path.chmod(path.stat().st_mode | stat.S_IEXEC)
    write_python3(bin_dir)
    log = tmp_path / "calls.log"
    log.touch()

    def run(ip: str, answers: list[dict | str | bytes] | None = None, *,
            associations: list[dict | str] | None = None, tasks: list[dict | str] | None = None,
            **env: str) -> subprocess.CompletedProcess:
        """Run the script as node ``ip``; ``answers``, ``associations`` and ``tasks`` are the
        aws stub's answers to describe-file-systems, describe-data-repository-associations
        and describe-data-repository-tasks, in order, the last repeating (a ``str`` is an
        error message on stderr with exit status 254, ``bytes`` a raw answer)."""
        for command, given, default in (
                ("describe-file-systems", answers, [AVAILABLE]),
                ("describe-data-repository-associations", associations, [LINKED]),
                ("describe-data-repository-tasks", tasks, [IMPORTED])):
            folder = aws_dir / command
            if folder.exists():
                for old in folder.iterdir():
                    old.unlink()
            folder.mkdir(exist_ok=True)
            for n, answer in enumerate(given or default):
                if isinstance(answer, str):
                    (folder / f"{n}.err").write_text(answer)
                elif isinstance(answer, bytes):  # a raw, possibly unreadable, answer
                    (folder / f"{n}.json").write_bytes(answer)
                else:
                    (folder / f"{n}.json").write_text(json.dumps(answer))
        full_env = {
            "PATH": f"{bin_dir}:{os.environ['PATH']}", "STUB_LOG": str(log),
            "STUB_AWS_DIR": str(aws_dir), "TRN_ROOT": str(root), "TRN_LCS_DIR": str(lcs_dir),
            "TRN_NODE_IP": ip, "TRN_RETRY_DELAY_S": "0", "TRN_FSX_POLL_S": "0",
            "TRN_SLURM_CHECK_S": "0", "TRN_FAIL_LOG_WAIT_S": "0", **env,
        }
        return subprocess.run(["bash", str(lcs_dir / ON_INIT_COMPLETE)], env=full_env,
                              capture_output=True, text=True, timeout=60)

    run.root, run.log, run.bin, run.lcs_dir = root, log, bin_dir, lcs_dir  # type: ignore[attr-defined]
    return run


def calls(node, name: str) -> list[str]:
    return [line for line in node.log.read_text().splitlines() if line.split(" ", 1)[0] == name]


DESCRIBE = "aws fsx describe-file-systems --region us-west-2 --output json"
LINK_CALLS = [
    f"aws fsx describe-data-repository-associations --filters Name=file-system-id,Values={FS_ID} "
    "--region us-west-2 --output json",
    f"aws fsx describe-data-repository-tasks --filters Name=file-system-id,Values={FS_ID} "
    "--region us-west-2 --output json"]


def test_compute_node_waits_for_the_file_system_mounts_it_and_configures_everything(node):
    answers = [{"FileSystems": [OTHER]}, {"FileSystems": [OTHER, file_system("CREATING")]},
               AVAILABLE]
    result = node(WORKER_IPS[0], answers)
    assert result.returncode == 0, result.stdout + result.stderr
    root = node.root
    assert calls(node, "aws") == [DESCRIBE] * 3 + LINK_CALLS
    assert "waiting for FSx for Lustre: file system - is NOT_CREATED" in result.stdout
    assert f"waiting for FSx for Lustre: file system {FS_ID} is CREATING" in result.stdout
    assert calls(node, "mount") == [
        f"mount -t lustre -o relatime,flock {FSX_DNS}@tcp:/{FSX_MOUNT} {root}/fsx"]
    assert (root / "etc/fstab").read_text().splitlines() == [
        f"{FSX_DNS}@tcp:/{FSX_MOUNT} /fsx lustre defaults,relatime,flock,_netdev,"
        "x-systemd.automount,x-systemd.requires=network-online.target 0 0"]
    # home on FSx, with the old home's files, and Enroot credentials for ECR
    assert (root / "fsx/home/ubuntu/.bashrc").read_text() == "# rc\n"
    assert calls(node, "usermod") == ["usermod -d /fsx/home/ubuntu ubuntu"]
    assert "chown -R 1000:1000 " + str(root / "fsx/home/ubuntu") in calls(node, "chown")
    creds = root / "fsx/home/ubuntu/.config/enroot/.credentials"
    assert creds.read_text() == (f"machine {REGISTRY} login AWS password "
                                 "$(aws ecr get-login-password --region us-west-2)\n")
    assert stat.S_IMODE(creds.stat().st_mode) == 0o600
    # stack outputs for job scripts with the file system found, compile cache on FSx
    env = (root / "fsx/.trn-ultracluster/env").read_text()
    assert f"export TRN_CONTAINER_IMAGE='{REGISTRY}#repo:abc'" in env
    assert f"export TRN_FSX_FILE_SYSTEM_ID={FS_ID}" in env.splitlines()
    profile = (root / "etc/profile.d/trn-ultracluster.sh").read_text()
    assert ("if [ -r /fsx/.trn-ultracluster/env ]; then . /fsx/.trn-ultracluster/env; fi"
            in profile.splitlines())
    assert (root / "fsx/neuron-compile-cache").is_dir()
    # HyperPod runs Slurm: nothing here starts or checks it on a compute node
    assert calls(node, "scontrol") == []
    assert calls(node, "enroot") == ["enroot version"]
    log = (root / "var/log/trn-ultracluster/lifecycle.log").read_text()
    assert f"node {WORKER_IPS[0]} is a Slurm compute node" in log
    assert log.rstrip().endswith("on_init_complete done")


@pytest.mark.nodes
def test_enroot_credentials_go_where_the_amis_enroot_conf_says(node):
    (node.root / "etc/enroot").mkdir(parents=True)
    (node.root / "etc/enroot/enroot.conf").write_text("ENROOT_CONFIG_PATH ${HOME}/enroot\n")
    result = node(WORKER_IPS[0])
    assert result.returncode == 0, result.stdout + result.stderr
    assert (node.root / "fsx/home/ubuntu/enroot/.credentials").is_file()
    assert not (node.root / "fsx/home/ubuntu/.config/enroot").exists()


@pytest.mark.nodes
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
    assert "already mounted" in result.stdout


DENIED = ("An error occurred (AccessDeniedException) when calling the DescribeFileSystems "
          "operation: not authorized")


@pytest.mark.nodes
def test_describe_errors_and_unreadable_answers_are_retried(node):
    throttled = ("An error occurred (ThrottlingException) when calling the DescribeFileSystems "
                 "operation: Rate exceeded")
    result = node(WORKER_IPS[0], [DENIED, throttled, b'{"FileSystems": [', AVAILABLE])
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"waiting for FSx for Lustre: aws fsx describe-file-systems failed: {DENIED}" \
        in result.stdout
    assert "ThrottlingException" in result.stdout
    assert "file system - is UNREADABLE_ANSWER" in result.stdout
    assert len(calls(node, "mount")) == 1


@pytest.mark.nodes
def test_warnings_on_stderr_do_not_spoil_the_answer(node):
    result = node(WORKER_IPS[0], STUB_AWS_WARN="urllib3 warning: something is deprecated")
    assert result.returncode == 0, result.stdout + result.stderr
    assert len(calls(node, "aws")) == 3  # one answer each, read at once
    assert "urllib3 warning" in result.stdout  # in the log, not in the JSON


def test_a_lasting_permission_error_fails_the_node(node):
    result = node(WORKER_IPS[0], [DENIED], TRN_DENIED_WAIT_S="0", TRN_FSX_WAIT_S="3600")
    assert result.returncode == 1
    assert ("needs fsx:DescribeFileSystems" in result.stdout
            and "not authorized (for 0s)" in result.stdout), result.stdout


def test_a_failed_file_system_stops_at_once(node):
    result = node(WORKER_IPS[0], [{"FileSystems": [file_system("FAILED")]}],
                  TRN_FSX_WAIT_S="3600")
    assert result.returncode == 1
    assert f"ERROR: FSx for Lustre {FS_ID} is FAILED; it will not become AVAILABLE" in result.stdout
    assert len(calls(node, "aws")) == 1 and calls(node, "mount") == []


def test_a_file_system_that_stays_creating_fails_at_the_deadline(node):
    result = node(WORKER_IPS[0], [{"FileSystems": [file_system("CREATING")]}], TRN_FSX_WAIT_S="0")
    assert result.returncode == 1
    assert ("ERROR: the stack's FSx for Lustre file system was not AVAILABLE within 0s "
            f"(file system {FS_ID} is CREATING)") in result.stdout
    assert calls(node, "mount") == []
    assert "ERROR" in (node.root / "var/log/trn-ultracluster/lifecycle.log").read_text()


@pytest.mark.nodes
def test_failed_mount_exits_non_zero_with_a_clear_message(node):
    result = node(WORKER_IPS[0], STUB_MOUNT_FAIL="1", TRN_MOUNT_ATTEMPTS="3")
    assert result.returncode == 1
    assert len(calls(node, "mount")) == 3
    assert (f"ERROR: could not mount FSx for Lustre {FSX_DNS}@tcp:/{FSX_MOUNT} at /fsx "
            "after 3 attempts") in result.stdout
    assert not (node.root / "fsx/.trn-ultracluster/env").exists()


def test_errors_wait_before_exiting_so_the_log_reaches_cloudwatch(node):
    result = node(WORKER_IPS[0], [{"FileSystems": [file_system("FAILED")]}],
                  TRN_FAIL_LOG_WAIT_S="60")
    assert result.returncode == 1
    assert calls(node, "sleep")[-1] == "sleep 60"


@pytest.mark.nodes
def test_controller_reports_that_slurmctld_serves_the_partitions(node):
    result = node(CONTROLLER_IP)
    assert result.returncode == 0, result.stdout + result.stderr
    assert calls(node, "scontrol") == ["scontrol show partition trainium"]
    assert "slurmctld serves the partitions trainium" in result.stdout


@pytest.mark.nodes
def test_controller_without_its_partitions_warns_but_does_not_fail(node):
    result = node(CONTROLLER_IP, STUB_SCONTROL_FAIL="1")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "WARNING: slurmctld does not serve partition(s) trainium after 0s" in result.stdout
    assert result.stdout.rstrip().endswith("on_init_complete done")


@pytest.mark.nodes
def test_an_address_in_no_group_warns_and_carries_on(node):
    result = node("10.9.9.9")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "WARNING: 10.9.9.9 is in no instance group" in result.stdout
    assert calls(node, "scontrol") == [] and len(calls(node, "mount")) == 1


@pytest.mark.parametrize("member", [JobEnv.FSX_MOUNT_POINT, JobEnv.NEURON_CACHE_DIR,
                                    JobEnv.REGION])
def test_missing_storage_layout_stops_before_anything(node, member):
    """Each of the values read in one ``lcs env-get`` call, the last one too (an empty last
    line is dropped by the command substitution), stops the node with the message."""
    cluster = json.loads(json.dumps(CLUSTER))
    del cluster["env"][member.value]
    (node.lcs_dir / "trn_ultracluster.json").write_text(json.dumps(cluster))
    result = node(WORKER_IPS[0])
    assert result.returncode == 1
    assert "lacks FSX_MOUNT_POINT, NEURON_CACHE_DIR or REGION" in result.stdout
    assert calls(node, "aws") == [] and calls(node, "mount") == []


def test_a_job_environment_lcs_cannot_read_stops_with_its_error(node):
    """fsx.sh's env_get fails the node when lcs.py does (here: the file names no REGION
    member), with lcs.py's error and the script's own message, before anything else."""
    cluster = json.loads(json.dumps(CLUSTER))
    del cluster["names"][JobEnv.REGION.name]
    (node.lcs_dir / "trn_ultracluster.json").write_text(json.dumps(cluster))
    result = node(WORKER_IPS[0])
    assert result.returncode == 1
    assert "no job environment member 'REGION'" in result.stdout + result.stderr
    assert "cannot read the job environment of the stack's trn_ultracluster.json" in result.stdout
    assert calls(node, "aws") == [] and calls(node, "mount") == []


@pytest.mark.nodes
def test_without_enroot_the_log_says_so(node):
    (node.bin / "enroot").unlink()
    result = node(LOGIN_IP)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "WARNING: enroot is not installed" in result.stdout


@pytest.mark.nodes
def test_nothing_is_written_before_the_link_and_its_import_are_done(node):
    result = node(WORKER_IPS[0], associations=[{"Associations": []}, association("CREATING"), LINKED],
                  tasks=[import_task("EXECUTING")] * 3 + [IMPORTED])  # read with each association
    assert result.returncode == 0, result.stdout + result.stderr
    for waited in ("association-not-created", "association-CREATING", "import-EXECUTING"):
        assert f"waiting for the data repository association: {waited}" in result.stdout
    assert "data repository association ready (import-SUCCEEDED)" in result.stdout
    order = [line.split()[0] + (" " + line.split()[2] if line.startswith("aws") else "")
             for line in node.log.read_text().splitlines()]
    last_tasks = max(i for i, c in enumerate(order) if c == "aws describe-data-repository-tasks")
    assert order.index("mount") > last_tasks
    assert len([c for c in order if c == "aws describe-data-repository-tasks"]) == 4


@pytest.mark.nodes
def test_a_failed_link_fails_the_node_before_mounting(node):
    result = node(WORKER_IPS[0], associations=[association("FAILED")])
    assert result.returncode == 1
    assert f"ERROR: the data repository association of {FS_ID} is FAILED" in result.stdout
    assert calls(node, "mount") == []


@pytest.mark.nodes
def test_a_link_without_an_import_task_goes_on_after_the_grace_time(node):
    result = node(WORKER_IPS[0], tasks=[{"DataRepositoryTasks": []}], TRN_IMPORT_GRACE_S="0")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no metadata import listed after 0s; going on" in result.stdout


@pytest.mark.nodes
def test_without_a_link_there_is_nothing_to_wait_for(tmp_path):
    cluster = json.loads(json.dumps(CLUSTER))
    cluster["fsx"]["data_repository"] = False
    node = make_node(tmp_path, cluster=cluster)
    result = node(WORKER_IPS[0])
    assert result.returncode == 0, result.stdout + result.stderr
    assert calls(node, "aws") == [DESCRIBE]


@pytest.mark.nodes
def test_a_user_that_cannot_be_moved_keeps_a_local_home(node):
    result = node(WORKER_IPS[0], STUB_USERMOD_FAIL="1")
    assert result.returncode == 0, result.stdout + result.stderr
    assert len(calls(node, "usermod")) == 3
    assert "WARNING: could not move the home of ubuntu to /fsx/home/ubuntu" in result.stdout
    assert (node.root / "home/ubuntu/.config/enroot/.credentials").is_file()


@pytest.mark.nodes
def test_the_environment_is_written_through_a_unique_temporary_file(node):
    assert node(WORKER_IPS[0]).returncode == 0
    state = node.root / "fsx/.trn-ultracluster"
    assert sorted(p.name for p in state.iterdir()) == ["env"]
    assert stat.S_IMODE((state / "env").stat().st_mode) == 0o644


@pytest.mark.parametrize("associations, tasks, status", [
    ({"Associations": []}, {}, "wait association-not-created"),
    (association("CREATING"), {}, "wait association-CREATING"),
    (association("FAILED"), {}, "failed association-FAILED"),
    (LINKED, {"DataRepositoryTasks": []}, "no-import association-AVAILABLE"),
    (LINKED, import_task("PENDING"), "wait import-PENDING"),
    (LINKED, import_task("FAILED"), "ready import-FAILED"),  # its report names the files
    (LINKED, IMPORTED, "ready import-SUCCEEDED"),
])
def test_link_status(associations, tasks, status):
    assert lcs.link_status(associations, tasks) == status


# --- FSx for Lustre over EFA (fsx.efa) ------------------------------------------------------

EFA_UNIT_OPTIONS = {
    "required": ",x-systemd.requires=trn-lustre-efa.service,x-systemd.after=trn-lustre-efa.service",
    "preferred": ",x-systemd.after=trn-lustre-efa.service",
}
PUT_METRIC = ("aws cloudwatch put-metric-data --region us-west-2 --namespace TrnUltraCluster/Neuron "
              "--metric-name node_fsx_lustre_over_efa --unit Count --value {} --dimensions "
              "ClusterName=trn-hyperpod,InstanceId=i-0123456789abcdef0,NodeName=node-1")


def efa_node(tmp_path: Path, mode: str, **fake: object):
    """A node of a stack with ``fsx.efa`` in ``mode`` (2 interfaces, as on trn1.32xlarge),
    with the LNet stubs and EFA devices; returns ``(node, env)``."""
    cluster = json.loads(json.dumps(CLUSTER))
    cluster["fsx"]["efa"] = efa_node_settings(mode, 2)
    cluster["env"][JobEnv.CLUSTER_NAME.value] = "trn-hyperpod"
    node = make_node(tmp_path, cluster=cluster)
    install_stubs(node.bin, aws=False)
    fake_node(node.root, **fake)  # type: ignore[arg-type]
    (node.root / "proc").mkdir()
    (tmp_path / "aws/put-metric-data").mkdir(parents=True)
    (tmp_path / "aws/put-metric-data/0.json").write_text("{}")
    env = {"STUB_LNET": str(tmp_path / "lnet"), "STUB_PROC_MOUNTS": str(node.root / "proc/mounts"),
           "TRN_NI_WAIT_S": "0", "TRN_INSTANCE_ID": "i-0123456789abcdef0",
           "TRN_NODE_NAME": "node-1"}
    (tmp_path / "lnet").mkdir()

    def run(ip: str, answers: list | None = None, **kw: str) -> subprocess.CompletedProcess:
        """The node's run, its file system EFA-enabled unless ``answers`` say otherwise."""
        return node(ip, answers or [EFA_AVAILABLE], **kw)

    run.root, run.log, run.bin, run.lcs_dir = node.root, node.log, node.bin, node.lcs_dir  # type: ignore[attr-defined]
    return run, env


def fstab(node) -> str:
    return (node.root / "etc/fstab").read_text()


def test_mode_off_runs_nothing_of_efa_and_keeps_the_fstab_entry(tmp_path):
    node = make_node(tmp_path)
    install_stubs(node.bin, aws=False)
    result = node(WORKER_IPS[0], STUB_LNET=str(tmp_path))
    assert result.returncode == 0, result.stdout + result.stderr
    assert calls(node, "lnetctl") == [] and calls(node, "modprobe") == []
    assert calls(node, "dd") == [] and not any("cloudwatch" in c for c in calls(node, "aws"))
    assert fstab(node) == (f"{FSX_DNS}@tcp:/{FSX_MOUNT} /fsx lustre defaults,relatime,flock,"
                           "_netdev,x-systemd.automount,x-systemd.requires=network-online.target 0 0\n")
    assert not (node.root / "etc/systemd/system/trn-lustre-efa.service").exists()


@pytest.mark.nodes
@pytest.mark.parametrize("mode", ["required", "preferred"])
@pytest.mark.parametrize("ip, role", [(CONTROLLER_IP, "controller"), (LOGIN_IP, "login")])
def test_controller_and_login_nodes_mount_over_tcp_whatever_fsx_efa_says(tmp_path, mode, ip,
                                                                         role):
    """They have no EFA device (ml.c5/ml.m5): only the workers do Lustre over EFA."""
    node, env = efa_node(tmp_path, mode, devices=())
    result = node(ip, **env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"this {role} node mounts over TCP" in result.stdout
    assert calls(node, "lnetctl") == [] and calls(node, "dd") == []
    assert not any("node_fsx_lustre_over_efa" in c for c in calls(node, "aws"))
    assert fstab(node) == (f"{FSX_DNS}@tcp:/{FSX_MOUNT} /fsx lustre defaults,relatime,flock,"
                           "_netdev,x-systemd.automount,x-systemd.requires=network-online.target 0 0\n")
    assert not (node.root / "etc/systemd/system/trn-lustre-efa.service").exists()
    assert result.stdout.rstrip().endswith("on_init_complete done")


def test_an_unreadable_fsx_efa_section_fails_the_node_before_anything(tmp_path):
    """lcs.py's own validation (here: an unknown mode) must stop the node, not leave an empty
    mode that falls through to a silent TCP mount."""
    node, env = efa_node(tmp_path, "required")
    cluster = json.loads((node.lcs_dir / "trn_ultracluster.json").read_text())
    cluster["fsx"]["efa"]["mode"] = "maybe"
    (node.lcs_dir / "trn_ultracluster.json").write_text(json.dumps(cluster))
    result = node(WORKER_IPS[0], **env)
    assert result.returncode == 1
    assert ("ERROR: cannot read fsx.efa of the stack's trn_ultracluster.json (lcs.py's error is "
            "above)") in result.stdout
    assert "'maybe' is not one of off, preferred, required" in result.stdout + result.stderr
    assert calls(node, "lnetctl") == [] and calls(node, "mount") == []


@pytest.mark.parametrize("mode", ["required", "preferred"])
def test_efa_node_configures_lnet_mounts_checks_and_reports_1(tmp_path, mode):
    node, env = efa_node(tmp_path, mode)
    result = node(WORKER_IPS[0], **env)
    assert result.returncode == 0, result.stdout + result.stderr
    efa = lnet_state(tmp_path / "lnet")["nets"]["efa"]
    assert [ni["if"] for ni in efa] == [EFA_DEVICES[0], EFA_DEVICES[-1]]
    unit = node.root / "etc/systemd/system/trn-lustre-efa.service"
    assert "ExecStart=/usr/local/sbin/trn-lustre-efa configure --interfaces 2" in unit.read_text()
    assert "systemctl enable trn-lustre-efa.service" in calls(node, "systemctl")
    # after a later reboot the watcher checks the mount again (not started at this boot)
    watcher = node.root / "etc/systemd/system/trn-lustre-efa-check.service"
    assert (f"watch --mode {mode} --mib 256 --region us-west-2 --namespace TrnUltraCluster/Neuron "
            "--metric node_fsx_lustre_over_efa --cluster trn-hyperpod") in watcher.read_text()
    assert "systemctl enable trn-lustre-efa-check.service" in calls(node, "systemctl")
    assert not any("--now" in c for c in calls(node, "systemctl"))
    # LNet before the file system is even looked for, the check (dd) after the mount
    lines = node.log.read_text().splitlines()

    def first(prefix: str) -> int:
        return next(i for i, line in enumerate(lines) if line.startswith(prefix))

    assert (first("lnetctl set discovery") < first("aws fsx describe-file-systems")
            < first("mount -t lustre") < first("dd if=/dev/urandom"))
    assert fstab(node) == (f"{FSX_DNS}@tcp:/{FSX_MOUNT} /fsx lustre defaults,relatime,flock,"
                           "_netdev,x-systemd.automount,x-systemd.requires=network-online.target"
                           f"{EFA_UNIT_OPTIONS[mode]} 0 0\n")
    assert ("lustre-efa check: efa (efa +256, tcp +1 LNet messages received while reading "
            "256 MiB") in result.stdout
    assert PUT_METRIC.format(1) in calls(node, "aws")
    assert (node.root / "fsx/.trn-ultracluster/lustre-efa-probe-256MiB").is_file()
    assert result.stdout.rstrip().endswith("on_init_complete done")


@pytest.mark.nodes
def test_efa_node_rerun_changes_nothing(tmp_path):
    node, env = efa_node(tmp_path, "required")
    assert node(WORKER_IPS[0], **env).returncode == 0
    node.log.write_text("")
    result = node(WORKER_IPS[0], **env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert [c for c in calls(node, "lnetctl") if " add" in c or " del" in c] == []
    assert calls(node, "mount") == [] and len(fstab(node).splitlines()) == 1
    assert len(calls(node, "dd")) == 1  # the probe is there: read only


@pytest.mark.nodes
def test_preferred_fall_back_to_tcp_warns_reports_0_and_goes_on(tmp_path):
    node, env = efa_node(tmp_path, "preferred")
    result = node(WORKER_IPS[0], **env, STUB_ROUTE="tcp")
    assert result.returncode == 0, result.stdout + result.stderr
    assert ("WARNING: this node's FSx for Lustre traffic goes over TCP, not EFA: (efa +0, "
            "tcp +257 LNet messages") in result.stdout
    assert "security group id (0.0.0.0/0 rules do not count for EFA)" in result.stdout
    assert PUT_METRIC.format(0) in calls(node, "aws")
    assert result.stdout.rstrip().endswith("on_init_complete done")


@pytest.mark.nodes
def test_required_fall_back_to_tcp_fails_the_node_naming_the_cause(tmp_path):
    node, env = efa_node(tmp_path, "required")
    result = node(WORKER_IPS[0], **env, STUB_ROUTE="tcp")
    assert result.returncode == 1
    (error,) = [ln for ln in result.stdout.splitlines() if "ERROR:" in ln]
    assert ("ERROR: FSx for Lustre over EFA is required (fsx.efa: true) and this node's FSx "
            "for Lustre traffic goes over TCP, not EFA") in error
    for cause in ("not EFA-enabled", "security group id", "Availability Zones", "kefalnd"):
        assert cause in error
    assert PUT_METRIC.format(0) in calls(node, "aws")
    assert calls(node, "usermod") == []  # nothing after the check
    assert not (node.root / "fsx/.trn-ultracluster/env").exists()


@pytest.mark.nodes
@pytest.mark.parametrize("fake, env, cause", [
    ({}, {"STUB_NO_KEFALND": "1"}, "ERROR (no-kefalnd): no kefalnd kernel module"),
    ({"devices": ()}, {}, "ERROR (no-efa-device): no EFA device"),
    ({}, {"STUB_KERNEL": "5.15.0-1051-aws"}, "ERROR (os): Ubuntu 22.04 with kernel 5.15.0-1051-aws"),
    ({}, {"STUB_LNET_DOWN": "1"}, "ERROR (ni-not-up): 0 of 2 EFA NIs"),
])
def test_required_node_that_cannot_configure_lnet_fails_before_waiting(tmp_path, fake, env,
                                                                       cause):
    node, base = efa_node(tmp_path, "required", **fake)
    result = node(WORKER_IPS[0], **base, **env)
    assert result.returncode == 1
    (error,) = [ln for ln in result.stdout.splitlines() if "ERROR: FSx" in ln]
    assert ("ERROR: FSx for Lustre over EFA is required (fsx.efa: true) and LNet could not be "
            f"configured for EFA: {cause.removeprefix('ERROR ')}") in error
    assert [c for c in calls(node, "aws") if "describe" in c] == []
    assert calls(node, "mount") == []
    assert PUT_METRIC.format(0) in calls(node, "aws")


@pytest.mark.nodes
def test_preferred_node_without_efa_devices_mounts_over_tcp_with_a_warning(tmp_path):
    node, env = efa_node(tmp_path, "preferred", devices=())
    result = node(WORKER_IPS[0], **env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "WARNING: LNet could not be configured for EFA: (no-efa-device)" in result.stdout
    assert "x-systemd.after=trn-lustre-efa" not in fstab(node)  # no unit to wait for
    assert not (node.root / "etc/systemd/system/trn-lustre-efa.service").exists()
    assert calls(node, "dd") == [] and len(calls(node, "mount")) == 1
    assert [c for c in calls(node, "aws") if "cloudwatch" in c] == [PUT_METRIC.format(0)]


@pytest.mark.nodes
def test_a_rerun_that_configures_efa_rewrites_the_fstab_entry(tmp_path):
    """The first run falls back to TCP (preferred, no kefalnd): the plain entry. A later run
    that configures LNet for EFA (here also in mode required) must replace that entry, or
    the automount is not ordered after the LNet unit at the next boot (ADT PR #1208's race);
    the other lines of fstab stay as they are."""
    node, env = efa_node(tmp_path, "preferred")
    other = ["LABEL=cloudimg-rootfs / ext4 discard,errors=remount-ro 0 1",
             "/dev/nvme1n1 /scratch xfs defaults,nofail 0 2"]
    (node.root / "etc/fstab").write_text("\n".join(other) + "\n")
    first = node(WORKER_IPS[0], **env, STUB_NO_KEFALND="1")
    assert first.returncode == 0, first.stdout + first.stderr
    plain = (f"{FSX_DNS}@tcp:/{FSX_MOUNT} /fsx lustre defaults,relatime,flock,_netdev,"
             "x-systemd.automount,x-systemd.requires=network-online.target")
    assert fstab(node).splitlines() == [*other, f"{plain} 0 0"]
    cluster = json.loads((node.lcs_dir / "trn_ultracluster.json").read_text())
    cluster["fsx"]["efa"] = efa_node_settings("required", 2)
    (node.lcs_dir / "trn_ultracluster.json").write_text(json.dumps(cluster))
    second = node(WORKER_IPS[0], **env)
    assert second.returncode == 0, second.stdout + second.stderr
    assert fstab(node).splitlines() == [*other, f"{plain}{EFA_UNIT_OPTIONS['required']} 0 0"]
    assert not list((node.root / "etc").glob("fstab.*"))  # no temporary file left
    node.log.write_text("")
    assert node(WORKER_IPS[0], **env).returncode == 0  # a third run changes nothing
    assert fstab(node).splitlines() == [*other, f"{plain}{EFA_UNIT_OPTIONS['required']} 0 0"]


@pytest.mark.nodes
@pytest.mark.parametrize("efa", [False, None])  # EfaEnabled false, or no such field
def test_required_node_of_a_file_system_not_efa_enabled_fails_naming_it(tmp_path, efa):
    node, env = efa_node(tmp_path, "required")
    answer = {"FileSystems": [file_system("AVAILABLE", efa=efa)]}
    result = node(WORKER_IPS[0], [answer], **env)
    assert result.returncode == 1
    (error,) = [ln for ln in result.stdout.splitlines() if "ERROR:" in ln]
    assert ("ERROR: FSx for Lustre over EFA is required (fsx.efa: true) and FSx for Lustre "
            f"{FS_ID} is not EFA-enabled") in error
    assert "the file system not EFA-enabled is the cause" in error
    assert calls(node, "mount") == [] and calls(node, "dd") == []
    assert PUT_METRIC.format(0) in calls(node, "aws")


@pytest.mark.nodes
def test_preferred_node_of_a_file_system_not_efa_enabled_warns_and_mounts(tmp_path):
    node, env = efa_node(tmp_path, "preferred")
    answer = {"FileSystems": [file_system("AVAILABLE", efa=False)]}
    result = node(WORKER_IPS[0], [answer], **env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert (f"WARNING: FSx for Lustre {FS_ID} is not EFA-enabled" in result.stdout
            and "the file system not EFA-enabled is the cause" in result.stdout)
    assert len(calls(node, "mount")) == 1 and calls(node, "dd") == []  # no check: known
    assert [c for c in calls(node, "aws") if "cloudwatch" in c] == [PUT_METRIC.format(0)]
    assert result.stdout.rstrip().endswith("on_init_complete done")
