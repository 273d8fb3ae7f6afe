"""The training program through the XLA path on PJRT_DEVICE=CPU (torch-xla 2.9), one
process under torchrun with the ``xla`` process group. Cross-process collectives on XLA:CPU
deadlock in torch-xla 2.9 (measured on 2 cores: ``rendezvous ... Expected 2
threads``), so multi-process parity is tested with gloo in tests/training. One test also runs
the native backend (``--device cpu``) with this venv's torch 2.9, to check that each back end
refuses the other's checkpoints."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.xla  # make test-xla (.venv-xla with torch-xla); make test leaves it out

import torch  # noqa: E402

from training_helpers import free_port, read_events, subprocess_env, train_losses  # noqa: E402

STEPS = 16
ENV = subprocess_env(PJRT_DEVICE="CPU", TF_CPP_MIN_LOG_LEVEL="2")


def torchrun_process(data: Path, out: Path, *extra: str, env: dict | None = None, nproc: int = 1,
                     steps: int = STEPS, timeout: int = 600) -> subprocess.CompletedProcess:
    args = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", str(nproc), "--nnodes", "1",
            "--master_addr", "127.0.0.1", "--master_port", str(free_port()),
            "-m", "trn_train", "train", "--recipe", "llama-tiny", "--data-dir", str(data),
            "--output-dir", str(out), "--steps", str(steps), "--global-batch-size", "8",
            "--micro-batch-size", "4", "--log-every", "1", "--ckpt-every", "8", "--lr", "3e-3",
            "--no-progress", "--device", "xla", *extra]
    return subprocess.run(args, capture_output=True, text=True, env=env or ENV, timeout=timeout)


def torchrun(data: Path, out: Path, *extra: str, env: dict | None = None) -> list[dict]:
    p = torchrun_process(data, out, *extra, env=env)
    assert p.returncode == 0, p.stderr[-4000:]
    return read_events(p.stdout)


@pytest.fixture(scope="module")
def reference(xla_data, tmp_path_factory):
    out = tmp_path_factory.mktemp("ref")
    return out, torchrun(xla_data, out)


def test_xla_path_learns_with_zero1_bf16_and_xla_process_group(reference):
    out, events = reference
    start = next(e for e in events if e["event"] == "start")
    assert (start["device"], start["zero1"], start["precision"], start["world_size"]) == ("xla", True, "bf16", 1)
    got = train_losses(events)
    assert sorted(got) == list(range(1, STEPS + 1))
    assert got[STEPS] < got[1] - 0.5, got
    last = [e for e in events if e["event"] == "train"][-1]
    assert last["grad_norm"] > 0 and last["mfu"] > 0
    optim = torch.load(out / "checkpoints" / f"step_{STEPS:08d}" / "optim_rank00000.pt", weights_only=False)
    assert "base_state" in optim and "sharded_master_weights" in optim  # ZeRO-1 shard state


def test_xla_resume_continues_exactly(reference, xla_data, tmp_path):
    _, ref_events = reference
    ref = train_losses(ref_events)
    first = torchrun(xla_data, tmp_path, "--max-steps-this-run", "8")
    assert max(train_losses(first)) == 8
    second = torchrun(xla_data, tmp_path)
    assert next(e for e in second if e["event"] == "resume")["step"] == 8
    got = train_losses(second)
    assert min(got) == 9
    for s in range(9, STEPS + 1):
        assert got[s] == pytest.approx(ref[s], rel=1e-5, abs=1e-5), (s, got[s], ref[s])


def test_neuron_parallel_compile_trial_run_writes_no_checkpoint(xla_data, tmp_path):
    env = {**ENV, "NEURON_EXTRACT_GRAPHS_ONLY": "1"}
    events = torchrun(xla_data, tmp_path, "--max-steps-this-run", "10", env=env)
    assert next(e for e in events if e["event"] == "start")["compile_only"] is True
    assert not any(e["event"] == "checkpoint" for e in events)
    assert not (tmp_path / "checkpoints").exists()


def test_xla_world_size_that_differs_from_torchrun_stops_every_process(xla_data, tmp_path):
    """The real failure: torch-xla 2.9 on XLA:CPU reports world size 1 in each of 2 torchrun
    processes (measured on XLA:CPU, torch-xla 2.9.0). Each process must stop with the clear error (exit 2) instead of
    training as a duplicate and writing the same checkpoint."""
    p = torchrun_process(xla_data, tmp_path, nproc=2, steps=4, timeout=300)
    assert p.returncode != 0
    # each process says it once (counted in the text: two processes share stderr)
    message = ("error: the XLA runtime reports world size 1, but torchrun started "
               "WORLD_SIZE=2 processes")
    assert p.stderr.count(message) == 2, p.stderr[-4000:]
    assert "exitcode  : 2" in p.stderr  # torchrun's summary of the failed workers
    assert not (tmp_path / "checkpoints").exists()


def test_xla_non_finite_loss_exits_3_without_a_nan_checkpoint(xla_data, tmp_path):
    """lr 1e30 with ZeRO-1 and bf16 autocast: the run stops at the first non-finite gradient
    norm or loss; every checkpoint left is finite and older than that step."""
    p = torchrun_process(xla_data, tmp_path, "--lr", "1e30", "--ckpt-every", "1", steps=6)
    assert "error: training diverged" in p.stderr, p.stderr[-4000:]
    assert "exitcode  : 3" in p.stderr
    events = read_events(p.stdout)
    stop = next(e for e in events if e["event"] == "nonfinite")
    kept = sorted((tmp_path / "checkpoints").glob("step_*"))
    assert kept and all(int(d.name[5:]) < stop["step"] for d in kept)
    assert stop["last_checkpoint"] == str(kept[-1])
    for d in kept:
        state = torch.load(d / "model.pt", weights_only=True)
        assert all(torch.isfinite(t.float()).all() for t in state.values()), d


def test_checkpoints_of_one_backend_are_refused_by_the_other(reference, xla_data, tmp_path):
    """The xla backend's checkpoint (``torch.save`` files) resumed on the native backend, and a
    native one (DCP, written here by FSDP2 on the CPU with this venv's torch 2.9) resumed on
    xla: each stops with exit 2 and an error naming both layouts, before training a step."""
    xla_out, _ = reference
    p = torchrun_process(xla_data, tmp_path / "native", "--device", "cpu", "--resume",
                         str(xla_out / "checkpoints" / f"step_{STEPS:08d}"))
    assert "exitcode  : 2" in p.stderr, p.stderr[-4000:]
    assert ("error: --resume must be a checkpoint of the native backend (layout 'dcp')" in p.stderr
            and "written by the xla backend (layout 'torch'): resume it in the xla stack's image with --backend xla" in p.stderr), p.stderr[-4000:]

    native = torchrun(xla_data, tmp_path / "dcp", "--device", "cpu", "--max-steps-this-run", "2", "--ckpt-every", "2")
    assert next(e for e in native if e["event"] == "start")["backend"] == "native"
    p = torchrun_process(xla_data, tmp_path / "back", "--resume", str(tmp_path / "dcp" / "checkpoints" / "step_00000002"))
    assert "exitcode  : 2" in p.stderr, p.stderr[-4000:]
    assert ("error: --resume must be a checkpoint of the xla backend (layout 'torch')" in p.stderr
            and "written by the native backend (layout 'dcp'): resume it in the native stack's image with --backend native" in p.stderr), p.stderr[-4000:]
    assert not (tmp_path / "back" / "checkpoints").exists() and not (tmp_path / "native" / "checkpoints").exists()
