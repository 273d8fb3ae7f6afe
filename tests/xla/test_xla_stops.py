"""Runs of the training program on XLA:CPU that stop early: the precompile trial (stops after
``--max-steps-this-run``, writes nothing), a world size the XLA runtime contradicts, and a
diverged run. Each is its own run, so this file is apart from test_xla_train.py, whose tests
share one reference run: ``--dist loadfile`` gives each file to one worker (training/test-xla.sh)."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.xla  # make test-xla (.venv-xla with torch-xla); make test leaves it out

import torch  # noqa: E402

from training_helpers import read_events, train_losses  # noqa: E402
from xla_runs import ENV, torchrun, torchrun_process  # noqa: E402


def test_neuron_parallel_compile_trial_run_writes_no_checkpoint(xla_data, tmp_path):
    env = {**ENV, "NEURON_EXTRACT_GRAPHS_ONLY": "1"}
    events = torchrun(xla_data, tmp_path, "--max-steps-this-run", "10", env=env)
    assert next(e for e in events if e["event"] == "start")["compile_only"] is True
    assert max(train_losses(events)) == 10  # --max-steps-this-run stopped it, past step 8
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
