"""The training program through the XLA path on PJRT_DEVICE=CPU (torch-xla 2.9), one
process under torchrun with the ``xla`` process group. Cross-process collectives on XLA:CPU
deadlock in torch-xla 2.9 (DESIGN.md §7), so multi-process parity is tested with gloo in
tests/training."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch_xla", reason="XLA:CPU tests run with `make test-xla`")

import torch  # noqa: E402

from training_helpers import free_port, read_events, subprocess_env, train_losses  # noqa: E402

STEPS = 16
ENV = subprocess_env(PJRT_DEVICE="CPU", TF_CPP_MIN_LOG_LEVEL="2")


def torchrun(data: Path, out: Path, *extra: str, env: dict | None = None) -> list[dict]:
    args = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "1", "--nnodes", "1",
            "--master_addr", "127.0.0.1", "--master_port", str(free_port()),
            "-m", "trn_train", "train", "--recipe", "llama-tiny", "--data-dir", str(data),
            "--output-dir", str(out), "--steps", str(STEPS), "--global-batch-size", "8",
            "--micro-batch-size", "4", "--log-every", "1", "--ckpt-every", "8", "--lr", "3e-3",
            "--no-progress", "--device", "xla", *extra]
    p = subprocess.run(args, capture_output=True, text=True, env=env or ENV, timeout=600)
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
