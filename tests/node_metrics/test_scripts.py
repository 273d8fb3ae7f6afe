"""Node metrics scripts: lint, the exporter (neuron_metrics.py) on neuron-monitor reports in
the documented format, and neuron_metrics.sh against a fake root with a stub systemctl."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from trn_ultracluster.contracts import metrics as contract
from trn_ultracluster.node_metrics import SCRIPTS, SETUP_SCRIPT

sys.path.insert(0, str(SCRIPTS))
import neuron_metrics as nm  # noqa: E402

SHELLCHECK = Path(sys.executable).parent / "shellcheck"


def report(utilization: dict[str, float] | None = None, *, device_bytes: int = 2**30,
           errors: int = 0, ecc: int = 0, devices: int = 16, per_device: int = 2) -> dict:
    """A neuron-monitor report as the Neuron Monitor User Guide documents it."""
    runtimes = []
    if utilization is not None:
        runtimes.append({"pid": 42, "neuron_runtime_tag": "42", "error": "", "report": {
            "neuroncore_counters": {"period": 10.0, "error": "", "neuroncores_in_use": {
                core: {"neuroncore_utilization": u, "flops": 1} for core, u in utilization.items()}},
            "memory_used": {"period": 10.0, "error": "", "neuron_runtime_used_bytes": {
                "host": 1, "neuron_device": device_bytes}},
            "execution_stats": {"period": 10.0, "error": "", "error_summary": {
                "generic": errors, "numerical": 0, "transient": 0, "model": 0, "runtime": 0,
                "hardware": 0}},
        }})
    return {
        "neuron_runtime_data": runtimes,
        "system_data": {"neuron_hw_counters": {"period": 10.0, "error": "", "neuron_devices": [
            {"neuron_device_index": 0, "mem_ecc_corrected": ecc, "mem_ecc_uncorrected": 0,
             "sram_ecc_uncorrected": 0, "sram_ecc_corrected": 0}]}},
        "instance_info": {"instance_id": "i-0123456789abcdef0", "instance_type": "trn1.32xlarge"},
        "neuron_hardware_info": {"neuron_device_count": devices,
                                 "neuroncore_per_device_count": per_device},
    }


def values(datums: list[dict], per_node: bool = True) -> dict[str, float]:
    width = 3 if per_node else 1
    return {d["MetricName"]: d["Value"] for d in datums if len(d["Dimensions"]) == width}


# --- lint and contract -------------------------------------------------------------------

def test_scripts_parse_and_are_shellcheck_clean():
    script = SCRIPTS / SETUP_SCRIPT
    subprocess.run(["bash", "-n", str(script)], check=True)
    result = subprocess.run([str(SHELLCHECK), str(script)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout


def test_names_agree_with_the_contract():
    """The node script cannot import the package: its copies of the names must match."""
    m = contract.NodeMetric
    assert (nm.NEURONCORE_UTILIZATION, nm.DEVICE_MEMORY_USED, nm.EXECUTION_ERRORS,
            nm.ECC_EVENTS, nm.EFA_RX_BYTES, nm.EFA_TX_BYTES) == (
        m.NEURONCORE_UTILIZATION, m.DEVICE_MEMORY_USED, m.EXECUTION_ERRORS, m.ECC_EVENTS,
        m.EFA_RX_BYTES, m.EFA_TX_BYTES)
    assert nm.TRAIN_FIELDS == contract.TrainingMetric.FIELDS
    assert nm.TRAIN_EVENT == contract.TrainingMetric.EVENT
    assert nm.CLUSTER_DIMENSION == contract.CLUSTER_DIMENSION
    text = (SCRIPTS / SETUP_SCRIPT).read_text()
    assert f'NODE_NAMESPACE="{contract.NODE_METRICS_NAMESPACE}"' in text
    assert (f'"${{TRAINING_NAMESPACE_PREFIX}}/${{CLUSTER}}"'.replace('"', "") in text
            or "TRAINING_NAMESPACE_PREFIX}/${CLUSTER}" in text)
    assert contract.training_namespace("c") == "TrnUltraCluster/Training/c"
    assert 'TRAINING_NAMESPACE_PREFIX="TrnUltraCluster/Training"' in text


# --- the exporter ------------------------------------------------------------------------

def test_node_values_over_an_interval():
    agg = nm.NodeAggregate()
    agg.add(report({"0": 80.0, "1": 40.0}, errors=1, ecc=2))  # 120 over 32 cores
    agg.add(report({"0": 100.0, "1": 100.0}, device_bytes=3 * 2**30))  # 200 over 32 cores
    datums = agg.datums("trn", "node-a", {"rx_bytes": 10.0, "tx_bytes": 20.0})
    node = values(datums)
    assert node == {
        nm.NEURONCORE_UTILIZATION: pytest.approx((120 / 32 + 200 / 32) / 2),
        nm.DEVICE_MEMORY_USED: 2 * 2**30,
        nm.EXECUTION_ERRORS: 1, nm.ECC_EVENTS: 2,
        nm.EFA_RX_BYTES: 10.0, nm.EFA_TX_BYTES: 20.0}
    assert values(datums, per_node=False) == node  # the same values for the cluster
    dims = {(d["Name"], d["Value"]) for d in datums[0]["Dimensions"]}
    assert dims == {("ClusterName", "trn"), ("InstanceId", "i-0123456789abcdef0"),
                    ("NodeName", "node-a")}
    units = {d["MetricName"]: d["Unit"] for d in datums}
    assert units[nm.NEURONCORE_UTILIZATION] == "Percent"
    assert units[nm.EFA_RX_BYTES] == "Bytes/Second"


def test_an_idle_node_reports_zero_utilization_and_its_ecc_counter():
    agg = nm.NodeAggregate()
    agg.add(report(None))
    node = values(agg.datums("trn", "node-a"))
    assert node[nm.NEURONCORE_UTILIZATION] == 0 and node[nm.ECC_EVENTS] == 0
    assert nm.EFA_RX_BYTES not in node  # no EFA rates without two readings


def test_no_report_publishes_nothing_and_bad_values_are_skipped():
    assert nm.NodeAggregate().datums("trn", "n") == []
    bad = report({"0": float("nan"), "1": "x"})  # type: ignore[dict-item]
    bad["neuron_hardware_info"] = {"error": "driver not loaded"}
    agg = nm.NodeAggregate()
    agg.add(bad)
    assert values(agg.datums("trn", "n"))[nm.ECC_EVENTS] == 0


def test_efa_counters_and_rates(tmp_path):
    for dev, rx, tx in (("rdmap16s27", 1000, 10), ("rdmap32s27", 3000, 30)):
        hw = tmp_path / "class/infiniband" / dev / "ports/1/hw_counters"
        hw.mkdir(parents=True)
        (hw / "rx_bytes").write_text(f"{rx}\n")
        (hw / "tx_bytes").write_text(f"{tx}\n")
    before = nm.efa_counters(tmp_path)
    assert before == {"rx_bytes": 4000.0, "tx_bytes": 40.0}
    after = {"rx_bytes": 10000.0, "tx_bytes": 100.0}
    assert nm.efa_rates(before, after, 60) == {"rx_bytes": 100.0, "tx_bytes": 1.0}
    assert nm.efa_rates(after, before, 60) is None  # counters reset
    assert nm.efa_counters(tmp_path / "nothing") == {}


@pytest.mark.parametrize("line, expected", [
    ('{"event": "train", "step": 10, "tokens_per_s": 12345.5, "mfu": 0.21}',
     {"TokensPerSecond": 12345.5, "MFU": 0.21}),
    ('{"event": "train", "tokens_per_s": 100, "mfu": null}', {"TokensPerSecond": 100.0}),
    ('{"event": "checkpoint", "step": 10}', {}),
    ("restart 1", {}),
    ('{"event": "train", "tokens_per_s"', {}),
])
def test_train_values(line, expected):
    assert nm.train_values(line) == expected


def test_job_logs_are_followed_from_their_end_then_new_files_from_their_start(tmp_path):
    old = tmp_path / "old-1.out"
    old.write_text('{"event": "train", "tokens_per_s": 1}\n')
    follower = nm.JobLogFollower(tmp_path)
    assert list(follower.poll()) == []  # history is not republished
    with old.open("a") as f:
        f.write('{"event": "train", "tokens_per_s": 2}\n{"event": "tr')  # half a line
    (tmp_path / "new-2.out").write_text("a\nb\n")
    assert list(follower.poll()) == ["a", "b", '{"event": "train", "tokens_per_s": 2}']
    with old.open("a") as f:
        f.write('ain", "tokens_per_s": 3}\n')
    assert list(follower.poll()) == ['{"event": "train", "tokens_per_s": 3}']


def test_job_logs_by_glob_follow_only_the_first_nodes_logs(tmp_path):
    """Standalone jobs: <job>/node-RANK.log; only node 0's lines are followed."""
    for job in ("a", "b"):
        (tmp_path / job).mkdir()
    follower = nm.JobLogFollower(tmp_path, "*/node-0.log")
    assert list(follower.poll()) == []
    (tmp_path / "a" / "node-0.log").write_text("a0\n")
    (tmp_path / "a" / "node-1.log").write_text("a1\n")
    (tmp_path / "b" / "node-0.log").write_text("b0\n")
    assert list(follower.poll()) == ["a0", "b0"]


def test_training_datums_are_statistic_sets():
    datums = nm.training_datums([{"TokensPerSecond": 10.0, "MFU": 0.2}, {"TokensPerSecond": 30.0}])
    assert datums == [
        {"MetricName": "MFU", "Unit": "None", "StatisticValues": {
            "SampleCount": 1.0, "Sum": 0.2, "Minimum": 0.2, "Maximum": 0.2}},
        {"MetricName": "TokensPerSecond", "Unit": "Count/Second", "StatisticValues": {
            "SampleCount": 2.0, "Sum": 40.0, "Minimum": 10.0, "Maximum": 30.0}}]


class Recorder:
    """Stands in for subprocess.run: records the aws calls and the metric data files."""

    def __init__(self, returncode: int = 0) -> None:
        self.calls: list[list[str]] = []
        self.data: list[list[dict]] = []
        self.returncode = returncode

    def __call__(self, cmd, **_kwargs):
        self.calls.append(cmd)
        self.data.append(json.loads(Path(cmd[-1].removeprefix("file://")).read_text()))
        return subprocess.CompletedProcess(cmd, self.returncode, "", "AccessDenied")


def test_publish_batches_and_survives_failures(capsys):
    run = Recorder(returncode=255)
    datums = [{"MetricName": "m", "Value": float(i)} for i in range(45)]
    assert nm.publish("TrnUltraCluster/Neuron", "us-west-2", datums, run) is False
    assert [len(d) for d in run.data] == [20, 20, 5]
    assert run.calls[0][:8] == ["aws", "cloudwatch", "put-metric-data", "--namespace",
                                "TrnUltraCluster/Neuron", "--region", "us-west-2",
                                "--metric-data"]
    assert "put-metric-data failed: AccessDenied" in capsys.readouterr().err


def test_nodes_loop_publishes_every_interval(tmp_path):
    args = nm.parse_args(["nodes", "--region", "us-west-2", "--namespace", "N", "--cluster",
                          "trn", "--node-name", "node-a", "--sys-root", str(tmp_path),
                          "--interval", "60"])
    times = iter([0, 30, 61, 125])
    lines = [json.dumps(report({"0": 50.0})), "not json", json.dumps(report(None)),
             json.dumps(report({"0": 10.0}))]
    run = Recorder()
    nm.run_nodes(args, lines, clock=lambda: next(times), run=run)
    assert len(run.calls) == 2  # at t=61 and t=125; nothing new came in after
    assert values(run.data[0])[nm.NEURONCORE_UTILIZATION] == pytest.approx(50 / 32 / 2)


def test_training_loop_publishes_new_train_lines(tmp_path):
    args = nm.parse_args(["training", "--region", "r", "--namespace", "T", "--jobs-dir",
                          str(tmp_path), "--interval", "30"])
    log = tmp_path / "job-7.out"
    log.write_text("")
    run, sleeps = Recorder(), []

    def sleep(seconds):
        sleeps.append(seconds)
        with log.open("a") as f:
            f.write('{"event": "train", "tokens_per_s": 5, "mfu": 0.1}\n')

    nm.run_training(args, rounds=2, sleep=sleep, run=run)
    assert sleeps == [30] and len(run.calls) == 1
    assert {d["MetricName"] for d in run.data[0]} == {"TokensPerSecond", "MFU"}


def test_bad_arguments_exit_2():
    with pytest.raises(SystemExit) as exit_:
        nm.parse_args(["nodes", "--region", "r", "--namespace", "n", "--cluster", "c",
                       "--interval", "0"])
    assert exit_.value.code == 2


# --- neuron_metrics.sh against a fake root -----------------------------------------------

STUB = """#!/bin/bash
echo "${0##*/} $*" >> "$STUB_LOG"
"""


@pytest.fixture
def node(tmp_path):
    root, bin_dir = tmp_path / "root", tmp_path / "bin"
    bin_dir.mkdir()
    root.mkdir()
    stub = bin_dir / "systemctl"
    stub.write_text(STUB)
    stub.chmod(stub.stat().st_mode | stat.S_IEXEC)
    log = tmp_path / "calls.log"
    log.touch()

    def run(role: str, *extra: str, neuron_monitor: bool = True) -> subprocess.CompletedProcess:
        monitor = root / "opt/aws/neuron/bin/neuron-monitor"
        if neuron_monitor and not monitor.exists():
            monitor.parent.mkdir(parents=True)
            monitor.write_text("#!/bin/sh\n")
            monitor.chmod(0o755)
        env = {"PATH": f"{bin_dir}:{os.environ['PATH']}", "STUB_LOG": str(log),
               "TRN_ROOT": str(root)}
        return subprocess.run(
            ["bash", str(SCRIPTS / SETUP_SCRIPT), "--region", "us-west-2", "--cluster",
             "trn-ultracluster", "--role", role, *extra],
            env=env, capture_output=True, text=True, timeout=60)

    run.root, run.log = root, log  # type: ignore[attr-defined]
    return run


def systemctl(node) -> list[str]:
    return node.log.read_text().splitlines()


def test_compute_node_gets_the_neuron_metrics_service(node):
    result = node("compute")
    assert result.returncode == 0, result.stdout + result.stderr
    root = node.root
    unit = (root / "etc/systemd/system/trn-neuron-metrics.service").read_text()
    assert ("ExecStart=/bin/bash -c 'set -o pipefail; /opt/aws/neuron/bin/neuron-monitor -c "
            "/etc/trn-ultracluster/neuron-monitor.json | /usr/bin/env python3 "
            "/opt/trn-ultracluster/metrics/neuron_metrics.py nodes --region us-west-2 "
            "--namespace TrnUltraCluster/Neuron --cluster trn-ultracluster'") in unit
    assert "Restart=always" in unit and "WantedBy=multi-user.target" in unit
    config = json.loads((root / "etc/trn-ultracluster/neuron-monitor.json").read_text())
    assert {m["type"] for m in config["neuron_runtimes"][0]["metrics"]} == {
        "neuroncore_counters", "memory_used", "execution_stats"}
    assert config["system_metrics"] == [{"type": "neuron_hw_counters"}]
    installed = root / "opt/trn-ultracluster/metrics/neuron_metrics.py"
    assert installed.read_text() == (SCRIPTS / "neuron_metrics.py").read_text()
    assert stat.S_IMODE(installed.stat().st_mode) == 0o755
    assert systemctl(node) == ["systemctl daemon-reload",
                               "systemctl enable --now trn-neuron-metrics.service",
                               "systemctl restart trn-neuron-metrics.service"]
    assert not (root / "etc/systemd/system/trn-training-metrics.service").exists()


def test_rerun_changes_nothing_and_restarts_nothing(node):
    assert node("compute").returncode == 0
    node.log.write_text("")
    result = node("compute")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "wrote" not in result.stdout
    assert "systemctl restart trn-neuron-metrics.service" not in systemctl(node)
    assert sorted(p.name for p in (node.root / "etc/systemd/system").iterdir()) == [
        "trn-neuron-metrics.service"]  # no temporary files left


def test_controller_gets_the_training_metrics_service(node):
    result = node("controller", "--jobs-dir", "/fsx/.trn-ultracluster/jobs")
    assert result.returncode == 0, result.stdout + result.stderr
    unit = (node.root / "etc/systemd/system/trn-training-metrics.service").read_text()
    assert ("ExecStart=/usr/bin/env python3 /opt/trn-ultracluster/metrics/neuron_metrics.py "
            "training --region us-west-2 --namespace TrnUltraCluster/Training/trn-ultracluster "
            "--jobs-dir /fsx/.trn-ultracluster/jobs --log-glob *.out") in unit
    assert not (node.root / "etc/systemd/system/trn-neuron-metrics.service").exists()


def test_without_neuron_monitor_a_warning_and_no_service(node):
    result = node("compute", neuron_monitor=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "WARNING: /opt/aws/neuron/bin/neuron-monitor not found" in result.stdout
    assert systemctl(node) == []


def test_login_node_gets_nothing_and_bad_usage_exits_2(node):
    result = node("login")
    assert result.returncode == 0 and "no metrics services on a login node" in result.stdout
    assert systemctl(node) == []
    bad = subprocess.run(["bash", str(SCRIPTS / SETUP_SCRIPT), "--role", "compute"],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and "usage:" in bad.stderr


def test_exporter_runs_as_the_unit_starts_it(tmp_path):
    """The installed script, run with its unit's arguments on a report, calls the AWS CLI."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    aws = bin_dir / "aws"
    aws.write_text('#!/bin/bash\necho "$*" >> "$STUB_LOG"\n')
    aws.chmod(0o755)
    log = tmp_path / "aws.log"
    env = {"PATH": f"{bin_dir}:{os.environ['PATH']}", "STUB_LOG": str(log)}
    result = subprocess.run(
        [sys.executable, str(SCRIPTS / "neuron_metrics.py"), "nodes", "--region", "us-west-2",
         "--namespace", "TrnUltraCluster/Neuron", "--cluster", "c",
         "--sys-root", str(tmp_path)],
        input=json.dumps(report({"0": 1.0})) + "\n" + json.dumps(report({"0": 2.0})) + "\n",
        env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 1, result.stderr  # neuron-monitor ended: systemd restarts it
    assert log.exists(), result.stderr
    assert "cloudwatch put-metric-data --namespace TrnUltraCluster/Neuron --region us-west-2" \
        in log.read_text()


def test_default_interval_is_a_minute():
    args = nm.parse_args(["training", "--region", "r", "--namespace", "n", "--jobs-dir", "/j"])
    assert (args.mode, args.interval, args.jobs_dir) == ("training", 60.0, "/j")
