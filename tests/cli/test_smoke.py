"""The smoke test: the bandwidth formula, the log parser, the verdict against the catalog's
network bandwidth, the benchmark script, and ``smoke-test`` judging a log, waiting for the job
and reading its log through the job backend."""

from __future__ import annotations

import json
import subprocess

import pytest

from tests.cli.helpers import outputs_values, run, write_outputs
from trn_ultracluster.cli.errors import ExitCode
from trn_ultracluster.cli.smoke import (
    MIN_EFA_RATIO,
    AllReduceResult,
    bus_bandwidth_gbps,
    parse_results,
    smoke_launch,
    smoke_report,
)
from trn_ultracluster.contracts.catalog import CATALOG, get_instance

EFA_TYPES = sorted(n for n, s in CATALOG.items() if s.supports_efa)


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


@pytest.mark.parametrize("stack", ["xla", "native"])
def test_smoke_script_is_valid_python_and_heredoc(stack):
    launch = smoke_launch(stack)
    compile(launch.setup.split("\n", 1)[1].rsplit("TRN_ALLREDUCE_EOF", 1)[0], "allreduce.py", "exec")
    assert subprocess.run(["bash", "-n", "-c", launch.setup]).returncode == 0


@pytest.mark.parametrize("stack, imports, lacks", [("xla", "import torch_xla", "torch_neuronx"),
                                                   ("native", "import torch_neuronx", "torch_xla")])
def test_the_smoke_job_uses_the_stacks_own_libraries(capsys, tmp_path, stack, imports, lacks):
    """The native image has no torch-xla and the XLA image's torch-neuronx is the XLA one: the
    smoke job writes the benchmark of the stack the outputs name."""
    path = write_outputs(tmp_path, outputs_values("eks", "trn2.48xlarge", neuron_stack=stack))
    code, out, err = run(capsys, "smoke-test", "--outputs-file", str(path), "--dry-run", "--name", "smoke-a")
    assert code == 0, err
    assert imports in out and lacks not in out


@pytest.mark.parametrize("kind, says", [("missing", "does not exist"),
                                        ("directory", "is a directory")])
def test_smoke_test_from_a_log_that_cannot_be_read(capsys, tmp_path, kind, says):
    outputs = write_outputs(tmp_path, outputs_values("eks"))
    path = tmp_path / "missing.log"
    if kind == "directory":
        path = tmp_path / "a-directory"
        path.mkdir()
    code, _, err = run(capsys, "smoke-test", "--outputs-file", str(outputs), "--from-log", str(path))
    assert code == ExitCode.USAGE
    assert f"error: log file {path} {says}" in err
    assert "fix: pass a job log saved with `trn-ultracluster logs <job> > FILE`" in err


def test_smoke_test_from_a_log_with_stray_bytes_is_judged(capsys, tmp_path):
    """A log is judged on its JSON lines; undecodable bytes elsewhere do not stop it."""
    outputs = write_outputs(tmp_path, outputs_values("eks"))
    log = tmp_path / "smoke.log"
    record = {"event": "allreduce", "bytes": 512 << 20, "ranks": 64,
              "time_s": (512 << 20) * 2 * 63 / 64 / 80e9, "correct": True}
    log.write_bytes(b"progress \xe2\x96\n" + json.dumps(record).encode() + b"\n")
    code, out, err = run(capsys, "smoke-test", "--outputs-file", str(outputs), "--from-log", str(log))
    assert code == 0, err
    assert "PASS" in out


def test_smoke_report_names_the_threshold_it_used(capsys, tmp_path):
    outputs = write_outputs(tmp_path, outputs_values("eks"))
    log = tmp_path / "smoke.log"
    log.write_text(json.dumps({"event": "allreduce", "bytes": 512 << 20, "ranks": 64,
                               "time_s": (512 << 20) * 2 * 63 / 64 / 80e9, "correct": True}))
    code, out, _ = run(capsys, "smoke-test", "--outputs-file", str(outputs), "--from-log", str(log),
                       "--min-ratio", "0.9")
    assert code == ExitCode.CHECK_FAILED
    assert "(pass at >= 90%)" in out


@pytest.mark.parametrize("orchestrator", ["eks", "hyperpod-slurm"])
def test_smoke_test_builds_the_job_client_once(capsys, tmp_path, monkeypatch, orchestrator):
    """Submit, every poll and the log read share one client (no kubeconfig reload, no
    ListClusterNodes per poll)."""
    from trn_ultracluster.cli.backends import BACKENDS
    from trn_ultracluster.cli.commands import smoke_test

    log = log_line(512 << 20, 64, (512 << 20) * 2 * 63 / 64 / 80e9) + "\n"
    built = []

    class Client:
        polls = 0

        def create(self, job):
            return job

        def submit(self, name, script, *partition):
            return 42

        def get(self, name, namespace=None):  # TrainJobClient.get: the training namespace
            assert namespace in (None, "training")
            Client.polls += 1
            done = Client.polls >= 3
            return {"status": {"conditions": [{"type": "Complete", "status": "True"}] if done else []}}

        def status(self, job_id):
            Client.polls += 1
            return [{"state": "COMPLETED" if Client.polls >= 3 else "RUNNING"}]

        def logs(self, handle, tail_lines=None, namespace=None):
            assert namespace in (None, "training")
            return log

    def make(backend):
        built.append(backend.name)
        return Client()

    monkeypatch.setattr(BACKENDS[orchestrator], "connect", make)
    monkeypatch.setattr(smoke_test.time, "sleep", lambda _: None)
    path = write_outputs(tmp_path, outputs_values(orchestrator))
    code, out, err = run(capsys, "smoke-test", "--outputs-file", str(path), "--name", "smoke-a")
    assert code == 0, err
    assert built == [orchestrator] and Client.polls == 3
    assert "PASS" in out
