"""What the stack gives the nodes that run our metrics scripts: the PutMetricData policy of
the HyperPod execution role, the scripts in the lifecycle bucket, and the lifecycle script's
call of neuron_metrics.sh on a fake root."""

from __future__ import annotations

import json
import shutil

from tests.orchestrators.hyperpod_slurm.test_lifecycle_scripts import (
    CLUSTER,
    CONTROLLER_IP,
    STUBS,
    WORKER_IPS,
    calls,
    make_node,
)
from trn_ultracluster.contracts.hyperpod import JobEnv
from trn_ultracluster.node_metrics import SCRIPTS, SETUP_SCRIPT


def test_execution_role_may_put_metrics_only_in_our_namespaces(synth):
    s = synth(orchestrator="hyperpod-slurm")
    (policy,) = [p["Properties"] for k, p in s.resources("AWS::IAM::Policy").items()
                 if k.startswith("HyperPodNodeMetricsPolicy")]
    assert policy["Roles"] == [{"Ref": s.ref_id("HyperPodExecutionRole")}]
    (statement,) = policy["PolicyDocument"]["Statement"]
    assert (statement["Action"], statement["Resource"], statement["Effect"]) == (
        "cloudwatch:PutMetricData", "*", "Allow")
    assert statement["Condition"] == {"StringEquals": {"cloudwatch:namespace": [
        "TrnUltraCluster/Neuron", "TrnUltraCluster/Training/trn-ultracluster"]}}


def test_scripts_ship_with_the_lifecycle_files():
    assert sorted(p.name for p in SCRIPTS.iterdir() if p.suffix in (".sh", ".py")) == [
        "neuron_metrics.py", SETUP_SCRIPT]


def _node(tmp_path):
    cluster = json.loads(json.dumps(CLUSTER))
    cluster["env"][JobEnv.CLUSTER_NAME.value] = "trn-ultracluster"
    node = make_node(tmp_path, stubs=(*STUBS, "systemctl"), cluster=cluster)
    for name in (SETUP_SCRIPT, "neuron_metrics.py"):
        shutil.copy(SCRIPTS / name, node.lcs_dir / name)
    monitor = node.root / "opt/aws/neuron/bin/neuron-monitor"
    monitor.parent.mkdir(parents=True)
    monitor.write_text("#!/bin/sh\n")
    monitor.chmod(0o755)
    return node


def test_lifecycle_script_sets_up_node_metrics_on_workers_and_the_controller(tmp_path):
    node = _node(tmp_path / "worker")
    result = node(WORKER_IPS[0])
    assert result.returncode == 0, result.stdout + result.stderr
    unit = node.root / "etc/systemd/system/trn-neuron-metrics.service"
    assert "--region us-west-2 --namespace TrnUltraCluster/Neuron --cluster trn-ultracluster" \
        in unit.read_text()
    assert "systemctl enable --now trn-neuron-metrics.service" in calls(node, "systemctl")
    controller = _node(tmp_path / "controller")
    result = controller(CONTROLLER_IP)
    assert result.returncode == 0, result.stdout + result.stderr
    unit = controller.root / "etc/systemd/system/trn-training-metrics.service"
    assert "--jobs-dir /fsx/.trn-ultracluster/jobs" in unit.read_text()


def test_a_metrics_failure_does_not_fail_the_node(tmp_path):
    node = _node(tmp_path)
    (node.lcs_dir / SETUP_SCRIPT).write_text("#!/bin/bash\nexit 3\n")
    result = node(WORKER_IPS[0])
    assert result.returncode == 0, result.stdout + result.stderr
    assert "WARNING: node metrics are not set up" in result.stdout
    assert result.stdout.rstrip().endswith("on_init_complete done")
