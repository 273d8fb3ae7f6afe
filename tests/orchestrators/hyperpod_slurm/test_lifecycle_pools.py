"""HyperPod Slurm lifecycle with node pools: ``scripts/pool_env.py`` and
``on_init_complete.sh`` against a fake root (the runner of ``test_lifecycle_scripts``).

The stack's ``trn_ultracluster.json`` here is the mixed profile's shape: the main pool
``trn1`` (its values are the shared ``env``), ``trn2`` and a CPU pool ``cpu`` of two instance
groups; HyperPod's ``resource_config.json`` holds every group. A node finds its instance
group by its address, writes its pool's job environment to its own file
(``contracts.hyperpod.NODE_ENV_FILE``) and, on a pool without EFA, mounts FSx over TCP
whatever ``fsx.efa`` says."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from tests.orchestrators.hyperpod_slurm.test_lifecycle_scripts import (
    CLUSTER,
    CONTROLLER_IP,
    EFA_AVAILABLE,
    LOGIN_IP,
    calls,
    make_node,
)
from tests.orchestrators.lustre_efa_stubs import fake_node, install_stubs
from trn_ultracluster.contracts.hyperpod import NODE_ENV_FILE, ON_INIT_COMPLETE, JobEnv
from trn_ultracluster.orchestrators.hyperpod_slurm.lifecycle import LIFECYCLE_ASSETS
from trn_ultracluster.orchestrators.nodes import efa_node_settings

sys.path.insert(0, str(LIFECYCLE_ASSETS))
import pool_env  # noqa: E402

TRN1_IP, TRN2_IP, CPU_IPS = "10.0.0.30", "10.0.0.31", ("10.0.0.40", "10.0.0.41")
RESOURCES = {"InstanceGroups": [
    {"Name": "controller", "Instances": [{"CustomerIpAddress": CONTROLLER_IP}]},
    {"Name": "login", "Instances": [{"CustomerIpAddress": LOGIN_IP}]},
    {"Name": "trn1", "Instances": [{"CustomerIpAddress": TRN1_IP}]},
    {"Name": "trn2", "Instances": [{"CustomerIpAddress": TRN2_IP}]},
    {"Name": "cpu", "Instances": [{"CustomerIpAddress": CPU_IPS[0]}]},
    {"Name": "cpu-2", "Instances": [{"CustomerIpAddress": CPU_IPS[1]}]},
]}
SHARED = {**CLUSTER["env"], JobEnv.INSTANCE_TYPE.value: "trn1.32xlarge",
          JobEnv.NEURON_CORES_PER_NODE.value: "32", "FI_PROVIDER": "efa",
          "FI_EFA_USE_DEVICE_RDMA": "1"}
CPU_ENV = {**CLUSTER["env"], JobEnv.INSTANCE_TYPE.value: "m7i.8xlarge",
           JobEnv.NEURON_CORES_PER_NODE.value: "0"}
TRN2_ENV = {**SHARED, JobEnv.INSTANCE_TYPE.value: "trn2.48xlarge",
            JobEnv.NEURON_CORES_PER_NODE.value: "64", JobEnv.NEURON_STACK.value: "native",
            JobEnv.CONTAINER_IMAGE.value: "reg#native:it's"}
POOLED = {**CLUSTER, "env": SHARED, "pools": {
    "trn2": {"groups": ["trn2"], "efa": True, "env": TRN2_ENV},
    "cpu": {"groups": ["cpu", "cpu-2"], "efa": False, "env": CPU_ENV},
}}


def pooled_node(tmp_path, mode: str = "off"):
    """A node of the pooled cluster with ``fsx.efa`` in ``mode`` (EFA stubs and devices)."""
    cluster = json.loads(json.dumps(POOLED))
    cluster["fsx"]["efa"] = efa_node_settings(mode, 2)  # type: ignore[arg-type]
    cluster["env"][JobEnv.CLUSTER_NAME.value] = "trn-hyperpod"
    node = make_node(tmp_path, cluster=cluster)
    (node.root / "opt/ml/config/resource_config.json").write_text(json.dumps(RESOURCES))
    install_stubs(node.bin, aws=False)
    fake_node(node.root)
    (node.root / "proc").mkdir()
    (tmp_path / "aws/put-metric-data").mkdir(parents=True)
    (tmp_path / "aws/put-metric-data/0.json").write_text("{}")
    (tmp_path / "lnet").mkdir()
    node.efa_env = {"STUB_LNET": str(tmp_path / "lnet"),  # type: ignore[attr-defined]
                    "STUB_PROC_MOUNTS": str(node.root / "proc/mounts"), "TRN_NI_WAIT_S": "0",
                    "TRN_INSTANCE_ID": "i-0123456789abcdef0", "TRN_NODE_NAME": "node-1"}
    return node


def sourced(text: str, *names: str) -> list[str]:
    """The values of ``names`` after bash sources the shared env and then ``text``."""
    shared = "".join(f"export {k}={json.dumps(v)}\n" for k, v in SHARED.items()
                     if re.fullmatch(r"[A-Z_][A-Z0-9_]*", k))
    script = shared + text + "".join(f'echo "${{{n}-<unset>}}"\n' for n in names)
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=True)
    return done.stdout.splitlines()


# --- pool_env.py ---------------------------------------------------------------------------

@pytest.mark.parametrize("group, line", [("cpu", "cpu false"), ("cpu-2", "cpu false"),
                                         ("trn2", "trn2 true"), ("trn1", "- true"),
                                         ("", "- true")])
def test_pool_of_each_instance_group(group, line):
    assert pool_env.pool_line(POOLED, group) == line


def test_a_cpu_nodes_file_unsets_what_its_pool_lacks_and_sets_its_values():
    text = pool_env.node_env_file(POOLED, "cpu-2")
    assert "unset FI_EFA_USE_DEVICE_RDMA FI_PROVIDER\n" in text
    assert sourced(text, "FI_PROVIDER", "TRN_INSTANCE_TYPE", "TRN_NEURON_CORES_PER_NODE",
                   "TRN_FSX_MOUNT_POINT") == ["<unset>", "m7i.8xlarge", "0", "/fsx"]


def test_a_trn2_nodes_file_quotes_its_values():
    text = pool_env.node_env_file(POOLED, "trn2")
    assert "unset" not in text
    assert sourced(text, "TRN_NEURON_CORES_PER_NODE", "TRN_CONTAINER_IMAGE", "FI_PROVIDER") == [
        "64", "reg#native:it's", "efa"]


def test_a_main_pool_nodes_file_changes_nothing():
    text = pool_env.node_env_file(POOLED, "trn1")
    assert all(line.startswith("#") for line in text.splitlines())
    assert pool_env.node_env_file(CLUSTER, "workers") == text  # a cluster without pools


@pytest.mark.parametrize("pools, words", [
    ([], "pools is not a mapping"),
    ({"cpu": {"groups": "cpu", "efa": False, "env": {}}}, "pools.cpu needs groups"),
    ({"cpu": {"groups": ["cpu"], "env": {}}}, "efa (true or false)"),
    ({"cpu": {"groups": ["cpu"], "efa": False, "env": {"bad-name": "1"}}}, "'bad-name' is not"),
])
def test_a_malformed_pools_section_exits_2_naming_the_file(tmp_path, capsys, pools, words):
    path = tmp_path / "trn_ultracluster.json"
    path.write_text(json.dumps({**CLUSTER, "pools": pools}))
    assert pool_env.main(["--cluster", str(path), "env", "cpu"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"pool_env.py: {path}: ") and words in err, err


def test_the_node_env_path_is_the_contracts():
    script = (LIFECYCLE_ASSETS / ON_INIT_COMPLETE).read_text()
    assert f'NODE_ENV_FILE="{NODE_ENV_FILE}"' in script.splitlines()


# --- on_init_complete.sh ------------------------------------------------------------------

def test_a_cpu_node_writes_its_pool_environment_and_mounts_over_tcp(tmp_path):
    node = pooled_node(tmp_path, "required")
    result = node(CPU_IPS[1], [EFA_AVAILABLE], **node.efa_env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"node {CPU_IPS[1]} is in instance group cpu-2 of pool cpu" in result.stdout
    assert ("FSx for Lustre over EFA (fsx.efa: required) needs an EFA device: this node of "
            "pool cpu has none and mounts over TCP") in result.stdout
    assert calls(node, "lnetctl") == [] and calls(node, "dd") == []
    assert "@tcp:/" in (node.root / "etc/fstab").read_text()
    own = (node.root / NODE_ENV_FILE.lstrip("/")).read_text()
    assert own == pool_env.node_env_file(json.loads((node.lcs_dir / "trn_ultracluster.json")
                                                    .read_text()), "cpu-2")
    shared = (node.root / "fsx/.trn-ultracluster/env").read_text()
    assert "export TRN_INSTANCE_TYPE=trn1.32xlarge" in shared  # the main pool's, for every node
    profile = (node.root / "etc/profile.d/trn-ultracluster.sh").read_text().splitlines()
    assert profile[-2:] == [
        "if [ -r /fsx/.trn-ultracluster/env ]; then . /fsx/.trn-ultracluster/env; fi",
        f"if [ -r {NODE_ENV_FILE} ]; then . {NODE_ENV_FILE}; fi"]
    assert result.stdout.rstrip().endswith("on_init_complete done")


def test_a_trn2_node_keeps_lustre_over_efa_and_gets_its_values(tmp_path):
    node = pooled_node(tmp_path, "required")
    result = node(TRN2_IP, [EFA_AVAILABLE], **node.efa_env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "mounts over TCP" not in result.stdout
    assert calls(node, "lnetctl")  # LNet over EFA set up
    own = (node.root / NODE_ENV_FILE.lstrip("/")).read_text()
    assert "export TRN_NEURON_CORES_PER_NODE=64" in own.splitlines()


@pytest.mark.parametrize("ip", [TRN1_IP, CONTROLLER_IP])
def test_main_pool_and_controller_nodes_write_a_file_that_changes_nothing(tmp_path, ip):
    node = pooled_node(tmp_path)
    result = node(ip)
    assert result.returncode == 0, result.stdout + result.stderr
    own = (node.root / NODE_ENV_FILE.lstrip("/")).read_text()
    assert all(line.startswith("#") for line in own.splitlines())
    assert "of pool" not in result.stdout


def test_a_broken_pools_section_fails_a_worker_naming_it(tmp_path):
    node = pooled_node(tmp_path)
    cluster = json.loads((node.lcs_dir / "trn_ultracluster.json").read_text())
    cluster["pools"]["cpu"]["efa"] = "no"
    (node.lcs_dir / "trn_ultracluster.json").write_text(json.dumps(cluster))
    result = node(CPU_IPS[0])
    assert result.returncode == 1
    assert "cannot read the pools of the stack's trn_ultracluster.json" in result.stdout
    assert calls(node, "mount") == []
