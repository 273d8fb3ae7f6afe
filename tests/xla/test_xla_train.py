"""The training program through the XLA path on PJRT_DEVICE=CPU (torch-xla 2.9), one
process under torchrun with the ``xla`` process group. Cross-process collectives on XLA:CPU
deadlock in torch-xla 2.9 (measured on 2 cores: ``rendezvous ... Expected 2
threads``), so multi-process parity is tested with gloo in tests/training. One test also runs
the native backend (``--device cpu``) with this venv's torch 2.9, to check that each back end
refuses the other's checkpoints. The runs that stop early are test_xla_stops.py's."""

from __future__ import annotations

import shutil

import pytest

pytestmark = pytest.mark.xla  # make test-xla (.venv-xla with torch-xla); make test leaves it out

import torch  # noqa: E402

from training_helpers import train_losses  # noqa: E402
from xla_runs import STEPS, torchrun, torchrun_process  # noqa: E402


@pytest.fixture(scope="module")
def reference(xla_data, tmp_path_factory):
    """One uninterrupted run of :data:`STEPS` steps (checkpoints at 8 and 16): its output
    directory and events, shared by the tests of this file."""
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
    """A run that finds the reference's step-8 checkpoint (model, ZeRO-1 optimizer shards, RNG,
    scheduler and data position: what a run stopped after step 8 leaves) continues with the
    uninterrupted run's losses. (Stopping after a number of steps is
    test_xla_stops.py's compile trial; a run killed mid-step is tests/training's.)"""
    ref_out, ref_events = reference
    ref = train_losses(ref_events)
    step = STEPS // 2
    name = f"step_{step:08d}"
    shutil.copytree(ref_out / "checkpoints" / name, tmp_path / "checkpoints" / name)
    second = torchrun(xla_data, tmp_path)
    assert next(e for e in second if e["event"] == "resume")["step"] == step
    got = train_losses(second)
    assert sorted(got) == list(range(step + 1, STEPS + 1))
    for s in range(step + 1, STEPS + 1):
        assert got[s] == pytest.approx(ref[s], rel=1e-5, abs=1e-5), (s, got[s], ref[s])


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
