"""The training program on CPU: learns, checkpoints atomically, resumes exactly, scales."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from trn_train import checkpoint as ckpt
from trn_train.errors import InputError, DataError
from trn_ultracluster.contracts.recipes import get_recipe
from trn_train.plan import plan_batches
from trn_train.train import TrainConfig, run

from training_helpers import free_port, read_dcp, read_events, subprocess_env, train_losses

ENV = subprocess_env(OMP_NUM_THREADS="1")


def cfg(data: Path, out: Path, **kw) -> TrainConfig:
    base = dict(recipe="llama-tiny", data_dir=data, output_dir=out, steps=20, log_every=1,
                progress=False, global_batch_size=8, micro_batch_size=4, device="cpu")
    base.update(kw)
    return TrainConfig(**base)


def cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "trn_train", "train", *args, "--no-progress", "--device", "cpu"]


pytestmark = pytest.mark.usefixtures("one_thread")


# ----------------------------------------------------------------------- learning + metrics


def test_tiny_llama_learns_real_text_and_reports_metrics(tmp_path, clm_data, capsys):
    run(cfg(clm_data, tmp_path / "run", steps=50, lr=3e-3))
    events = read_events(capsys.readouterr().out)
    losses = train_losses(events)
    assert sorted(losses) == list(range(1, 51))
    assert losses[1] > 7.0  # ~ln(2000): an untrained model over a 2000-token vocabulary
    assert losses[50] < losses[1] - 1.0, losses
    last = [e for e in events if e["event"] == "train"][-1]
    assert last["tokens_per_s"] > 0 and 0 < last["mfu"] < 1e-2 and last["grad_norm"] > 0
    assert last["lr"] == pytest.approx(3e-4)  # cosine decayed to min_lr_ratio 0.1
    start = next(e for e in events if e["event"] == "start")
    assert start["flops_per_token"] > 6 * start["params"] * 0.5
    assert list((tmp_path / "run" / "tensorboard").glob("events.out.tfevents.*"))


def test_precompile_trial_run_writes_no_checkpoint_and_no_tensorboard(tmp_path, clm_data, capsys, monkeypatch):
    """Under neuron_parallel_compile (NEURON_EXTRACT_GRAPHS_ONLY) the values are not real: they
    must not land beside the real run's in TensorBoard, nor become a checkpoint."""
    monkeypatch.setenv("NEURON_EXTRACT_GRAPHS_ONLY", "1")
    out = tmp_path / "run"
    run(cfg(clm_data, out, steps=10, max_steps_this_run=3, ckpt_every=1))
    assert not (out / "tensorboard").exists()
    assert not list(out.glob("checkpoints/step_*"))
    assert next(e for e in read_events(capsys.readouterr().out) if e["event"] == "start")["compile_only"]


def test_tiny_bert_mlm_learns(tmp_path, mlm_data, capsys):
    run(cfg(mlm_data, tmp_path / "run", recipe="bert-tiny", steps=30, lr=2e-3))
    losses = train_losses(read_events(capsys.readouterr().out))
    assert losses[30] < losses[1] - 0.5, losses


# ----------------------------------------------------------------------- batches / bad input


def test_strong_and_weak_scaling_plans():
    r = get_recipe("llama-tiny")
    strong = [plan_batches(cfg(Path("."), Path("."), global_batch_size=64, micro_batch_size=2), r, w) for w in (1, 2, 8)]
    assert [p.global_batch_size for p in strong] == [64, 64, 64]
    assert [p.grad_accum for p in strong] == [32, 16, 4]
    weak = [plan_batches(cfg(Path("."), Path("."), scaling="weak", global_batch_size=None, per_core_batch_size=8,
                             micro_batch_size=4), r, w) for w in (1, 32)]
    assert [(p.global_batch_size, p.grad_accum) for p in weak] == [(8, 2), (256, 2)]


@pytest.mark.parametrize("kw, world, match", [
    (dict(global_batch_size=10), 4, "--global-batch-size must be divisible by the world size 4, got: 10"),
    (dict(global_batch_size=8, micro_batch_size=3), 1, "--micro-batch-size must be a divisor of the per-core batch 8"),
    (dict(scaling="weak"), 1, "--global-batch-size must be unset with --scaling weak"),
    (dict(scaling="sideways"), 1, "--scaling"),
    (dict(global_batch_size=0), 1, "--global-batch-size must be a positive integer"),
])
def test_bad_batch_geometry(kw, world, match):
    with pytest.raises(InputError, match=match):
        plan_batches(cfg(Path("."), Path("."), **kw), get_recipe("llama-tiny"), world)


@pytest.mark.parametrize("kw, exc, match", [
    (dict(data_dir=Path("/no/such/data")), DataError, "--data-dir '/no/such/data' does not exist"),
    (dict(seq_len=65), InputError, "--seq-len must be between 1 and the prepared sequence length 64"),
    (dict(recipe="llama-8b", data_parallel="ddp"), InputError,
     "--data-parallel must be 'fsdp' or 'auto' for llama-8b, got: 'ddp'"),
    (dict(recipe="bert-tiny"), InputError, "--format mlm"),
    (dict(instance_type="p5.48xlarge"), InputError, "--instance-type"),
    (dict(steps=0), InputError, "--steps"),
    (dict(global_batch_size=100_000), InputError, "at most the number of prepared sequences"),
    # 0, negative, NaN and infinity never fall back to a default or pass silently
    (dict(seq_len=0), InputError, "--seq-len must be between 1 and the prepared sequence length 64, got: 0"),
    (dict(seq_len=-3), InputError, "--seq-len must be between 1"),
    (dict(warmup_steps=-1), InputError, r"--warmup-steps must be an integer in 0\.\.--steps \(20\), got: -1"),
    (dict(warmup_steps=21), InputError, "--warmup-steps must be an integer in 0"),
    (dict(max_grad_norm=-1.0), InputError,
     r"--max-grad-norm must be a finite number >= 0 \(0 disables clipping\), got: -1\.0"),
    (dict(max_grad_norm=float("nan")), InputError, "--max-grad-norm must be a finite number >= 0"),
    (dict(weight_decay=-1.0), InputError, "--weight-decay must be a finite number >= 0, got: -1.0"),
    (dict(weight_decay=float("inf")), InputError, "--weight-decay must be a finite number >= 0"),
    (dict(lr=float("inf")), InputError, "--lr must be a positive finite number, got: inf"),
    (dict(lr=float("nan")), InputError, "--lr must be a positive finite number"),
    (dict(min_lr_ratio=float("nan")), InputError, "--min-lr-ratio"),
    (dict(seed=-1), InputError, r"--seed must be an integer in 0\.\.2\*\*64-1, got: -1"),
    (dict(zero1="on"), InputError, "--zero1 must be 'auto' or 'off' with the native backend, got: 'on'"),
])
def test_bad_input_fails_before_training(tmp_path, clm_data, kw, exc, match):
    with pytest.raises(exc, match=match):
        run(cfg(clm_data, tmp_path / "run", **kw))
    assert not (tmp_path / "run" / "checkpoints").exists()


def test_every_train_flag_error_exits_2_without_traceback(tmp_path, clm_data, capsys):
    from trn_train.cli import main

    base = ["train", "--recipe", "llama-tiny", "--data-dir", str(clm_data), "--output-dir", str(tmp_path / "r"),
            "--steps", "5", "--device", "cpu", "--no-progress", "--no-tensorboard"]
    for extra in (["--seq-len", "0"], ["--weight-decay", "-1"], ["--max-grad-norm", "-0.5"],
                  ["--warmup-steps", "-2"], ["--zero1", "on"], ["--lr", "inf"], ["--seed", "-1"]):
        assert main(base + extra) == 2, extra
        err = capsys.readouterr().err
        assert err.startswith(f"error: {extra[0]} must be ") and "Traceback" not in err, err


# ----------------------------------------------------------------------- non-finite loss


def _poison_weights_after(monkeypatch, call: int) -> None:
    """Make the weights NaN right after optimizer step number ``call`` (a diverging run)."""
    import torch

    from trn_train.runtime import Runtime

    original = Runtime.optimizer_step
    calls = {"n": 0}

    def step(self, optimizer, model, max_grad_norm):
        norm = original(self, optimizer, model, max_grad_norm)
        calls["n"] += 1
        if calls["n"] == call:
            with torch.no_grad():
                next(model.parameters()).fill_(float("nan"))
        return norm

    monkeypatch.setattr(Runtime, "optimizer_step", step)


@pytest.mark.parametrize("poison_after, log_every, stop_at", [
    (6, 1, 7),     # the next loss is NaN: seen at once when every step is logged
    (6, 100, 8),   # with sparse logging: seen before the checkpoint of step 8 is written
    (8, 100, 8),   # the loss of step 8 was still finite, its weights are not: no checkpoint
])
def test_non_finite_loss_stops_and_keeps_the_last_good_checkpoint(tmp_path, clm_data, capsys, monkeypatch,
                                                                  poison_after, log_every, stop_at):
    from trn_train.errors import TrainingDiverged

    _poison_weights_after(monkeypatch, poison_after)
    out = tmp_path / "run"
    with pytest.raises(TrainingDiverged, match=f"non-finite .* step {stop_at}") as e:
        run(cfg(clm_data, out, steps=12, ckpt_every=4, log_every=log_every, tensorboard=False))
    assert e.value.exit_code == 3
    assert "step_00000004" in str(e.value)
    events = read_events(capsys.readouterr().out)
    stop = [ev for ev in events if ev["event"] == "nonfinite"]
    assert len(stop) == 1 and stop[0]["step"] == stop_at
    assert stop[0]["last_checkpoint"] == str(out / "checkpoints" / "step_00000004")
    assert not any(ev["event"] == "end" for ev in events)
    assert sorted(p.name for p in (out / "checkpoints").iterdir()) == ["step_00000004"]


def test_cli_huge_lr_diverges_exits_3_and_writes_no_nan_checkpoint(tmp_path, clm_data, capsys):
    """lr 1e30: the first update leaves finite (huge) weights, the second gradient norm is inf."""
    import torch

    from trn_train.cli import main

    out = tmp_path / "run"
    code = main(["train", "--recipe", "llama-tiny", "--data-dir", str(clm_data), "--output-dir", str(out),
                 "--steps", "6", "--global-batch-size", "8", "--micro-batch-size", "4", "--lr", "1e30",
                 "--ckpt-every", "1", "--log-every", "1", "--device", "cpu", "--no-progress", "--no-tensorboard"])
    captured = capsys.readouterr()
    assert code == 3
    assert captured.err.startswith("error: training diverged") and "Traceback" not in captured.err
    events = read_events(captured.out)
    assert next(e for e in events if e["event"] == "nonfinite")["step"] == 2
    kept = sorted(p.name for p in (out / "checkpoints").iterdir())
    assert kept == ["step_00000001"]
    state = read_dcp(out / "checkpoints" / kept[0])["model"]
    assert state and all(torch.isfinite(t).all() for t in state.values())


# ----------------------------------------------------------------------- checkpoints


def test_keep_last_and_completion_markers(tmp_path, clm_data, capsys):
    run(cfg(clm_data, tmp_path / "run", steps=25, ckpt_every=5, keep_last=2, log_every=5))
    root = tmp_path / "run" / "checkpoints"
    assert sorted(p.name for p in root.iterdir()) == ["step_00000020", "step_00000025"]
    for p in root.iterdir():
        assert (p / ckpt.MARKER).is_file() and (p / "dcp" / ".metadata").is_file() and (p / "rng_rank00000.pt").is_file()


def test_resume_refuses_a_different_run(tmp_path, clm_data, capsys):
    run(cfg(clm_data, tmp_path / "run", steps=5))
    with pytest.raises(InputError, match="global_batch_size: 8 -> 16"):
        run(cfg(clm_data, tmp_path / "run", steps=10, global_batch_size=16))


def test_resume_from_an_explicit_checkpoint_directory(tmp_path, clm_data, capsys):
    run(cfg(clm_data, tmp_path / "a", steps=10, max_steps_this_run=5))
    src = tmp_path / "a" / "checkpoints" / "step_00000005"
    capsys.readouterr()
    run(cfg(clm_data, tmp_path / "b", steps=10, resume=str(src)))
    events = read_events(capsys.readouterr().out)
    assert next(e for e in events if e["event"] == "resume") == {"event": "resume", "step": 5, "path": str(src)}
    assert min(train_losses(events)) == 6
    with pytest.raises(InputError, match="--resume must be 'auto', 'none' or a complete checkpoint directory"):
        run(cfg(clm_data, tmp_path / "c", steps=10, resume=str(tmp_path / "b")))


@pytest.mark.jobs
def test_sigkilled_run_resumes_to_the_same_loss_and_skips_half_written_checkpoints(tmp_path, clm_data, capsys):
    steps = 40
    run(cfg(clm_data, tmp_path / "ref", steps=steps, ckpt_every=10))
    ref = train_losses(read_events(capsys.readouterr().out))

    out = tmp_path / "killed"
    args = cli("--recipe", "llama-tiny", "--data-dir", str(clm_data), "--output-dir", str(out), "--steps", str(steps),
               "--global-batch-size", "8", "--micro-batch-size", "4", "--log-every", "1", "--ckpt-every", "10")
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=ENV)
    killed_after = None
    for line in proc.stdout:
        if line.startswith('{"event": "train", "step": 25,'):
            proc.send_signal(signal.SIGKILL)
            killed_after = 25
            break
    proc.wait(timeout=60)
    assert killed_after == 25 and proc.returncode == -signal.SIGKILL
    root = out / "checkpoints"
    complete = ckpt.scan(root, warn=lambda m: None)
    assert complete and complete[-1].step < steps, "the run finished before the kill: test proves nothing"
    # a crash while writing: a .tmp directory and a directory without its COMPLETE marker
    half = root / "step_00000030.tmp"
    half.mkdir(exist_ok=True)
    (half / "model.pt").write_bytes(b"half-written")
    unmarked = root / "step_00000035"
    unmarked.mkdir()
    (unmarked / "model.pt").write_bytes(b"garbage")

    run(cfg(clm_data, out, steps=steps, ckpt_every=10))
    events = read_events(capsys.readouterr().out)
    ignored = [e["message"] for e in events if e["event"] == "checkpoint_ignored"]
    assert any("step_00000030.tmp" in m for m in ignored) and any("step_00000035" in m for m in ignored)
    resumed = next(e for e in events if e["event"] == "resume")
    assert resumed["step"] == complete[-1].step == 20
    got = train_losses(events)
    assert min(got) == 21
    for s in range(21, steps + 1):
        assert got[s] == pytest.approx(ref[s], rel=1e-6, abs=1e-6), s
    assert (root / f"step_{steps:08d}" / ckpt.MARKER).is_file()


# ----------------------------------------------------------------------- two processes (gloo)


@pytest.mark.jobs
def test_two_gloo_processes_match_one_process_with_the_same_global_batch(tmp_path, clm_data, capsys):
    """DDP on the native backend. Tolerance: 1e-5 absolute per logged loss (measured: about
    1.4e-6). The 2-process gradient is the mean of two per-rank means instead of one mean over
    8 sequences, so only float rounding differs. The checkpoint's manifest lists both ranks'
    files."""
    steps = 15
    run(cfg(clm_data, tmp_path / "one", steps=steps, data_parallel="ddp"))
    one = train_losses(read_events(capsys.readouterr().out))
    args = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--nnodes", "1",
            "--master_addr", "127.0.0.1", "--master_port", str(free_port()), "-m", "trn_train", "train",
            "--recipe", "llama-tiny", "--data-dir", str(clm_data), "--output-dir", str(tmp_path / "two"),
            "--steps", str(steps), "--global-batch-size", "8", "--micro-batch-size", "2", "--log-every", "1",
            "--no-progress", "--device", "cpu", "--data-parallel", "ddp"]
    p = subprocess.run(args, capture_output=True, text=True, env=ENV, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    events = read_events(p.stdout)
    start = next(e for e in events if e["event"] == "start")
    assert start["world_size"] == 2 and start["grad_accum"] == 2 and start["data_parallel"] == "ddp"
    two = train_losses(events)
    assert sorted(two) == sorted(one)
    diffs = {s: abs(one[s] - two[s]) for s in one}
    print("max 1-vs-2 process loss diff", max(diffs.values()))
    assert max(diffs.values()) < 1e-5, diffs
    assert one[steps] < one[1] - 0.5
    final = tmp_path / "two" / "checkpoints" / f"step_{steps:08d}"
    files = json.loads((final / ckpt.MANIFEST).read_text())["files"]
    # DCP spreads the replicated DDP state over both ranks' files (each tensor written once)
    assert set(files) == {"dcp/.metadata", "dcp/__0_0.distcp", "dcp/__1_0.distcp", "rng_rank00000.pt",
                          "rng_rank00001.pt", "trainer.json"}
    on_disk = {str(p.relative_to(final)) for p in final.rglob("*") if p.is_file()}
    assert on_disk == {*files, ckpt.MANIFEST, ckpt.MARKER}
