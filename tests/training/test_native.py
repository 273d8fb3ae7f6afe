"""The native backend (plain PyTorch: FSDP2 or DDP, DCP checkpoints) on CPU with gloo, in real
torchrun processes: a killed run resumes bit-exactly, checkpoints reshard to another world
size, a damaged DCP file is caught by whichever rank verifies it, divergence stops every
rank, and contradictory flags stop before anything runs."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from trn_train import checkpoint as ckpt
from trn_train.atomic import json_bytes
from trn_train.cli import main
from trn_train.errors import InputError, TrainingDiverged
from trn_train.model import build_model
from trn_train.plan import check_recipe_fits, resolve_activation_checkpointing
from trn_train.runtime_spec import RuntimeSpec, resolve_runtime
from trn_train.train import TrainConfig, run
from trn_ultracluster.contracts.recipes import get_recipe

from training_helpers import free_port, read_dcp, read_events, subprocess_env, train_losses

ENV = subprocess_env(OMP_NUM_THREADS="1")
STEPS = 12
CKPT_EVERY = 4
SHARD = "dcp/__0_0.distcp"

pytestmark = pytest.mark.usefixtures("one_thread")


def train_args(data: Path, out: Path, *extra: str) -> list[str]:
    return ["-m", "trn_train", "train", "--recipe", "llama-tiny", "--data-dir", str(data), "--output-dir", str(out),
            "--steps", str(STEPS), "--global-batch-size", "8", "--micro-batch-size", "2", "--log-every", "1",
            "--ckpt-every", str(CKPT_EVERY), "--no-progress", "--no-tensorboard", "--device", "cpu", *extra]


def torchrun(data: Path, out: Path, *extra: str, nproc: int = 2) -> list[str]:
    return [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", str(nproc), "--nnodes", "1",
            "--master_addr", "127.0.0.1", "--master_port", str(free_port()), *train_args(data, out, *extra)]


def run_torchrun(data: Path, out: Path, *extra: str) -> tuple[list[dict], str]:
    p = subprocess.run(torchrun(data, out, *extra), capture_output=True, text=True, env=ENV, timeout=300)
    assert p.returncode == 0, p.stderr[-4000:]
    return read_events(p.stdout), p.stderr


def cfg(data: Path, out: Path, **kw) -> TrainConfig:
    base = dict(recipe="llama-tiny", data_dir=data, output_dir=out, steps=STEPS, log_every=1, ckpt_every=CKPT_EVERY,
                progress=False, tensorboard=False, global_batch_size=8, micro_batch_size=2, device="cpu")
    base.update(kw)
    return TrainConfig(**base)


def assert_same_state(a: object, b: object, where: str = "") -> None:
    """``a`` and ``b`` (nested dicts/lists of tensors and values) are bit-for-bit equal."""
    if isinstance(a, torch.Tensor):
        assert isinstance(b, torch.Tensor) and a.dtype == b.dtype and torch.equal(a, b), where
    elif isinstance(a, dict):
        assert isinstance(b, dict) and set(a) == set(b), (where, set(a) ^ set(b))
        for k in a:
            assert_same_state(a[k], b[k], f"{where}/{k}")
    elif isinstance(a, (list, tuple)):
        assert type(a) is type(b) and len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            assert_same_state(x, y, f"{where}[{i}]")
    else:
        assert a == b, (where, a, b)


def kill_job(torchrun_proc: subprocess.Popen) -> None:
    """SIGKILL torchrun and its workers at once, like a node losing power, and wait until the
    workers are gone. torch 2.13's torchrun starts each worker in a session of its own
    (``torch.distributed.elastic``'s ``SubprocessHandler``: ``start_new_session=True``), so
    killing torchrun's process group alone would leave them training: each worker's group is
    killed too."""
    workers = [int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit() and _parent(int(p.name)) ==
               torchrun_proc.pid]
    assert workers, "torchrun has no workers: nothing to kill"
    groups = {torchrun_proc.pid} | {os.getpgid(w) for w in workers}
    for group in groups:
        os.killpg(group, signal.SIGKILL)
    torchrun_proc.wait(timeout=30)
    deadline = time.monotonic() + 30
    while any(_alive(w) for w in workers):
        assert time.monotonic() < deadline, f"workers {workers} still alive after SIGKILL"
        time.sleep(0.05)


def _parent(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[1])  # fields after "(comm)": state, ppid, ...


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


@pytest.fixture(scope="module")
def reference(clm_data, built_once) -> tuple[Path, list[dict]]:
    """An uninterrupted 2-process FSDP2 run of 12 steps with checkpoints at 4, 8 and 12, run
    once for all pytest-xdist workers (``built_once``; its events in ``events.json``)."""
    def train(path: Path) -> None:
        events, _ = run_torchrun(clm_data, path / "run")
        (path / "events.json").write_text(json.dumps(events))

    built = built_once("fsdp_reference", train)
    out, events = built / "run", json.loads((built / "events.json").read_text())
    start = next(e for e in events if e["event"] == "start")
    assert (start["backend"], start["device"], start["data_parallel"], start["compile"], start["world_size"],
            start["precision"]) == ("native", "cpu", "fsdp", False, 2, "fp32")
    assert [c.step for c in ckpt.scan(out / "checkpoints")] == [4, 8, 12]
    return out, events


def _final(out: Path) -> Path:
    return out / "checkpoints" / f"step_{STEPS:08d}"


@pytest.mark.jobs
def test_fsdp_run_killed_mid_run_resumes_bit_exactly(reference, clm_data, tmp_path):
    """Every loss after the resume and the whole final model and AdamW state (read back from
    both final DCP checkpoints) equal the uninterrupted run's bit for bit."""
    ref_out, ref_events = reference
    out = tmp_path / "killed"
    proc = subprocess.Popen(torchrun(clm_data, out), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                            env=ENV, start_new_session=True)
    killed = False
    for line in proc.stdout:
        if line.startswith('{"event": "train", "step": 6,'):  # past the checkpoint of step 4
            kill_job(proc)
            killed = True
            break
    proc.stdout.close()
    assert killed, "the run ended before step 6"
    complete = ckpt.scan(out / "checkpoints", warn=lambda m: None)
    assert complete and complete[-1].step < STEPS, "the run finished before the kill: the test proves nothing"

    events, _ = run_torchrun(clm_data, out)
    resumed = next(e for e in events if e["event"] == "resume")["step"]
    assert resumed == complete[-1].step
    ref, got = train_losses(ref_events), train_losses(events)
    assert sorted(got) == list(range(resumed + 1, STEPS + 1))
    assert {s: got[s] for s in got} == {s: ref[s] for s in got}
    assert_same_state(read_dcp(_final(ref_out)), read_dcp(_final(out)))


@pytest.mark.jobs
def test_two_process_checkpoint_resumes_in_one_process(reference, clm_data, tmp_path, capsys):
    """DCP reshards the 2-process FSDP2 shards for one process, which continues from step 8.
    Tolerance 1e-5 per loss (measured: at most 4.8e-7): one process averages the same global
    batch's gradients in another order."""
    ref_out, ref_events = reference
    out = tmp_path / "one"
    shutil.copytree(ref_out / "checkpoints" / "step_00000008", out / "checkpoints" / "step_00000008")
    run(cfg(clm_data, out))
    events = read_events(capsys.readouterr().out)
    assert next(e for e in events if e["event"] == "start")["world_size"] == 1
    assert next(e for e in events if e["event"] == "resume")["step"] == 8
    ref, got = train_losses(ref_events), train_losses(events)
    assert sorted(got) == list(range(9, STEPS + 1))
    diffs = {s: abs(got[s] - ref[s]) for s in got}
    print("max 2-process checkpoint resumed by 1 process vs 2-process run, loss diff:", max(diffs.values()))
    assert max(diffs.values()) < 1e-5, diffs
    trainer = ckpt.open_checkpoint(ckpt.scan(out / "checkpoints")[-1]).trainer_state()
    assert (trainer["layout"], trainer["world_size"]) == ("dcp", 1)


@pytest.mark.jobs
def test_one_process_checkpoint_resumes_in_two_processes(reference, clm_data, tmp_path, capsys):
    """The other way: a one-process checkpoint (one DCP file, one RNG file: rank 1 takes rank
    0's) continues in 2 processes. Tolerance 1e-5 per loss against the 2-process run (measured:
    at most 4.8e-7)."""
    _, ref_events = reference
    out = tmp_path / "grow"
    run(cfg(clm_data, out, max_steps_this_run=CKPT_EVERY))
    capsys.readouterr()
    events, _ = run_torchrun(clm_data, out)
    assert next(e for e in events if e["event"] == "resume")["step"] == CKPT_EVERY
    ref, got = train_losses(ref_events), train_losses(events)
    assert sorted(got) == list(range(CKPT_EVERY + 1, STEPS + 1))
    diffs = {s: abs(got[s] - ref[s]) for s in got}
    print("max 1-process checkpoint resumed by 2 processes vs 2-process run, loss diff:", max(diffs.values()))
    assert max(diffs.values()) < 1e-5, diffs


@pytest.mark.jobs
def test_corrupt_dcp_file_found_by_the_rank_that_verifies_it_falls_back(reference, clm_data, tmp_path, capsys):
    """The ranks verify the manifest's files split between them: ``dcp/__0_0.distcp`` (file 1
    of the sorted list) is rank 1's to check, so rank 0 learns of it only through the ranks'
    agreement. Both fall back to step 8 and continue exactly as the uninterrupted run did. An
    explicit ``--resume`` of the damaged checkpoint is an error (exit 2) naming the file."""
    ref_out, ref_events = reference
    out = tmp_path / "run"
    shutil.copytree(ref_out, out)
    bad = _final(out)
    raw = bytearray((bad / SHARD).read_bytes())
    raw[len(raw) // 2] ^= 0x01
    (bad / SHARD).write_bytes(bytes(raw))

    events, stderr = run_torchrun(clm_data, out)
    (corrupt,) = [e for e in events if e["event"] == "checkpoint_corrupt"]
    assert (corrupt["path"], corrupt["failed_ranks"], corrupt["fallback"]) == (
        str(bad), 1, str(out / "checkpoints" / "step_00000008"))
    assert "failed verification on 1 other rank(s)" in corrupt["reason"]
    assert f"rank 1: {bad}: {SHARD} is corrupt" in stderr
    assert next(e for e in events if e["event"] == "resume")["step"] == 8
    ref, got = train_losses(ref_events), train_losses(events)
    assert {s: got[s] for s in got} == {s: ref[s] for s in range(9, STEPS + 1)}

    shutil.copytree(ref_out / "checkpoints" / f"step_{STEPS:08d}", tmp_path / "explicit")
    (tmp_path / "explicit" / SHARD).write_bytes(bytes(raw))
    code = main(["train", *train_args(clm_data, tmp_path / "other")[3:], "--resume", str(tmp_path / "explicit")])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith(f"error: {tmp_path / 'explicit'}: {SHARD} is corrupt") and err.count("\n") == 1, err


@pytest.mark.jobs
def test_checkpoint_of_the_xla_layout_is_refused_not_misread(reference, clm_data, tmp_path):
    """A checkpoint whose trainer.json names no DCP layout (the xla backend's ``torch.save``
    files, and every checkpoint of a trn_train before the native backend) stops the native
    backend with an InputError naming both layouts, instead of a DCP traceback. (The xla side:
    tests/xla.)"""
    ref_out, _ = reference
    step_dir = tmp_path / "run" / "checkpoints" / "step_00000008"
    shutil.copytree(ref_out / "checkpoints" / "step_00000008", step_dir)
    trainer = json.loads((step_dir / "trainer.json").read_text())
    del trainer["layout"]
    data = json_bytes(trainer)
    (step_dir / "trainer.json").write_bytes(data)
    manifest = json.loads((step_dir / ckpt.MANIFEST).read_text())
    manifest["files"]["trainer.json"] = {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    (step_dir / ckpt.MANIFEST).write_text(json.dumps(manifest))
    with pytest.raises(InputError, match=r"--resume must be a checkpoint of the native backend \(layout 'dcp'\), got: "
                                         r".*written by the xla backend \(layout 'torch'\): resume it in the xla stack's image with --backend xla"):
        run(cfg(clm_data, tmp_path / "run"))
    assert [c.step for c in ckpt.scan(tmp_path / "run" / "checkpoints")] == [8]


@pytest.mark.jobs
def test_non_finite_loss_stops_both_processes_with_exit_3_and_no_diverged_checkpoint(clm_data, tmp_path):
    """lr 1e30: the first update leaves huge finite weights, the next gradient norm is inf. Both
    workers exit 3 and every checkpoint left holds finite weights (read back from DCP)."""
    p = subprocess.run(torchrun(clm_data, tmp_path, "--lr", "1e30", "--ckpt-every", "1"), capture_output=True,
                       text=True, env=ENV, timeout=300)
    assert p.stderr.count("error: training diverged") == 2, p.stderr[-4000:]
    assert "exitcode  : 3" in p.stderr and "SIGABRT" not in p.stderr  # torchrun's summary of the workers
    stop = next(e for e in read_events(p.stdout) if e["event"] == "nonfinite")
    kept = ckpt.scan(tmp_path / "checkpoints")
    assert kept and all(c.step < stop["step"] for c in kept)
    assert stop["last_checkpoint"] == str(kept[-1].path)
    for c in kept:
        model = read_dcp(c.path)["model"]
        assert model and all(torch.isfinite(t).all() for t in model.values()), c.path


@pytest.mark.jobs
def test_compiled_blocks_train_like_eager_and_share_its_checkpoints(clm_data, tmp_path, capsys, monkeypatch):
    """``--compile on`` compiles each transformer block in place: the losses are the eager
    ones (tolerance 1e-5; measured: equal) and the checkpoint's keys too, so a compiled run's
    checkpoint resumes without compiling. (aot_eager instead of inductor on CPU: the same
    tracing without minutes of C++ compilation.)"""
    import torch._dynamo

    monkeypatch.setattr("trn_train.runtime.CPU_COMPILE_BACKEND", "aot_eager")
    run(cfg(clm_data, tmp_path / "eager", steps=6, max_steps_this_run=4))
    eager = train_losses(read_events(capsys.readouterr().out))
    try:
        run(cfg(clm_data, tmp_path / "compiled", steps=6, max_steps_this_run=4, compile="on"))
    finally:
        torch._dynamo.reset()
    events = read_events(capsys.readouterr().out)
    assert next(e for e in events if e["event"] == "start")["compile"] is True
    compiled = train_losses(events)
    print("max compiled vs eager loss diff:", max(abs(compiled[s] - eager[s]) for s in eager))
    assert max(abs(compiled[s] - eager[s]) for s in eager) < 1e-5
    run(cfg(clm_data, tmp_path / "compiled", steps=6, compile="off"))
    events = read_events(capsys.readouterr().out)
    assert next(e for e in events if e["event"] == "resume")["step"] == 4 and max(train_losses(events)) == 6


def test_one_fsdp_process_leaves_no_process_group_behind_also_after_an_error(clm_data, tmp_path):
    """Without torchrun, FSDP2 runs in a private one-rank gloo group: it is gone after the run,
    also when the run diverged, so the process (this test process, the benchmark) can train
    again."""
    import torch.distributed as dist

    with pytest.raises(TrainingDiverged):
        run(cfg(clm_data, tmp_path / "a", steps=3, lr=1e30, ckpt_every=0))
    assert not dist.is_initialized()
    assert run(cfg(clm_data, tmp_path / "b", steps=1))["final_step"] == 1
    assert not dist.is_initialized()


# ----------------------------------------------------------------------- flags


@pytest.mark.parametrize("flags, message", [
    (["--backend", "xla", "--device", "neuron"], "--device must be 'auto' or 'xla' with --backend xla, got: 'neuron'"),
    (["--backend", "xla", "--device", "cpu"], "--device must be 'auto' or 'xla' with --backend xla, got: 'cpu'"),
    (["--backend", "native", "--device", "xla"],
     "--device must be 'auto', 'neuron' or 'cpu' with --backend native, got: 'xla'"),
    (["--backend", "xla", "--device", "auto"], "--backend must be 'native' or 'auto' here, got: 'xla' (torch_xla is not installed)"),
    (["--device", "neuron"], "--device must be 'cpu' or 'auto' here, got: 'neuron' (TorchNeuron"),
    (["--zero1", "on"], "--zero1 must be 'auto' or 'off' with the native backend, got: 'on'"),
    (["--recipe", "llama-8b", "--data-parallel", "ddp"],
     "--data-parallel must be 'fsdp' or 'auto' for llama-8b, got: 'ddp' (DDP keeps the whole model"),
])
def test_contradictory_flags_exit_2_with_one_error_line(clm_data, tmp_path, capsys, flags, message):
    code = main(["train", *train_args(clm_data, tmp_path / "run")[3:], *flags])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith(f"error: {message}") and err.count("\n") == 1, err
    assert not (tmp_path / "run").exists()


def _resolve(*args: str, xla: bool = False, neuron: bool = False, stack: str = "") -> RuntimeSpec:
    return resolve_runtime(*args, xla_importable=lambda: xla, neuron_present=lambda: neuron,
                           cluster_stack=stack or None)


@pytest.mark.parametrize("args, xla, neuron, want", [
    ((), True, False, RuntimeSpec("xla", "xla", None, False, True)),          # Trn1 image: torch-xla
    ((), False, True, RuntimeSpec("native", "neuron", "fsdp", True, False)),  # Trn2/Trn3: TorchNeuron
    ((), False, False, RuntimeSpec("native", "cpu", "fsdp", False, False)),
    (("auto", "cpu"), True, True, RuntimeSpec("native", "cpu", "fsdp", False, False)),
    (("auto", "neuron", "ddp", "off"), True, True, RuntimeSpec("native", "neuron", "ddp", False, False)),
    (("native", "auto", "auto", "on"), False, False, RuntimeSpec("native", "cpu", "fsdp", True, False)),
    (("auto", "xla", "auto", "auto", "off"), True, True, RuntimeSpec("xla", "xla", None, False, False)),
])
def test_auto_resolution(args, xla, neuron, want):
    assert _resolve(*args, xla=xla, neuron=neuron) == want


def test_auto_follows_the_clusters_stack(monkeypatch):
    """TRN_NEURON_STACK (the stack's job environment and image) decides `--backend auto`
    before any probe: an XLA image that also imports TorchNeuron's package stays on xla, and
    a native cluster is native even where torch_xla happens to import."""
    assert _resolve(xla=True, neuron=True, stack="native") == RuntimeSpec("native", "neuron", "fsdp", True, False)
    assert _resolve(xla=True, neuron=True, stack="xla") == RuntimeSpec("xla", "xla", None, False, True)
    assert _resolve("auto", "cpu", xla=True, stack="xla").backend == "native"  # an explicit device wins
    monkeypatch.setenv("TRN_NEURON_STACK", "native")
    assert resolve_runtime(xla_importable=lambda: True, neuron_present=lambda: False).backend == "native"
    monkeypatch.setenv("TRN_NEURON_STACK", "jax")
    with pytest.raises(InputError, match=r"\$TRN_NEURON_STACK must be 'xla' or 'native', got: 'jax'"):
        resolve_runtime(xla_importable=lambda: True, neuron_present=lambda: False)


@pytest.mark.parametrize("args, message", [
    (("xla", "auto", "fsdp"), "--data-parallel must be 'auto' with the xla backend, got: 'fsdp'"),
    (("xla", "auto", "auto", "on"), "--compile must be 'auto' with the xla backend, got: 'on'"),
    (("native", "gpu"), "--device must be 'auto', 'xla', 'neuron' or 'cpu', got: 'gpu'"),
])
def test_native_only_flags_are_refused_on_xla(args, message):
    with pytest.raises(InputError, match=message):
        _resolve(*args, xla=True, neuron=True)


def test_model_parallel_recipe_only_with_fsdp_on_native():
    """llama-8b (TP=32 on Trn1) runs through NxD Training on xla; on native FSDP2 shards it."""
    recipe = get_recipe("llama-8b")
    with pytest.raises(InputError, match="--recipe must be a data-parallel recipe for `train` on the xla backend.*"
                                         "nxd-config.*--backend native --data-parallel fsdp"):
        check_recipe_fits(recipe, RuntimeSpec("xla", "xla", None, False, True))
    check_recipe_fits(recipe, RuntimeSpec("native", "neuron", "fsdp", True, False))


# ----------------------------------------------------------------------- activation checkpointing


def test_activation_checkpointing_trains_like_keeping_the_activations(clm_data, tmp_path, capsys, monkeypatch):
    """Recomputing each block in the backward pass (FSDP2, one process) gives the losses of a
    run that keeps the activations (tolerance 1e-6; measured: equal): it trades memory for
    compute only. The first block really runs twice per micro-batch when it is on."""
    import trn_train.train as train_module

    calls: dict[str, int] = {}

    def counting_build(*args, **kwargs):
        model = build_model(*args, **kwargs)
        key = "on" if kwargs.get("activation_checkpointing") else "off"
        # the block's MLP: the recompute re-runs the block's forward, not its own __call__ hooks
        model.model.layers[0].mlp.register_forward_pre_hook(lambda *_: calls.__setitem__(key, calls.get(key, 0) + 1))
        return model

    monkeypatch.setattr(train_module, "build_model", counting_build)
    run(cfg(clm_data, tmp_path / "kept", steps=4, data_parallel="fsdp", activation_checkpointing="off"))
    kept = train_losses(read_events(capsys.readouterr().out))
    run(cfg(clm_data, tmp_path / "recomputed", steps=4, data_parallel="fsdp", activation_checkpointing="on"))
    micro_batches = 4 * 4  # 4 steps x (8 sequences / micro-batch 2)
    assert (calls["off"], calls["on"]) == (micro_batches, 2 * micro_batches)
    events = read_events(capsys.readouterr().out)
    assert next(e for e in events if e["event"] == "start")["activation_checkpointing"] is True
    recomputed = train_losses(events)
    assert sorted(recomputed) == sorted(kept) == [1, 2, 3, 4]
    assert max(abs(recomputed[s] - kept[s]) for s in kept) <= 1e-6


@pytest.mark.parametrize("recipe, spec, flag, want", [
    ("llama-8b", RuntimeSpec("native", "neuron", "fsdp", True, False), "auto", True),
    ("llama-1b", RuntimeSpec("native", "neuron", "fsdp", True, False), "auto", False),
    ("llama-1b", RuntimeSpec("native", "cpu", "ddp", False, False), "on", True),
    ("llama-8b", RuntimeSpec("native", "neuron", "fsdp", True, False), "off", False),
    ("bert-large", RuntimeSpec("xla", "xla", None, False, True), "auto", False),
])
def test_activation_checkpointing_auto_is_on_for_the_recipes_that_need_model_parallelism(recipe, spec, flag,
                                                                                         want):
    assert resolve_activation_checkpointing(flag, get_recipe(recipe), spec) is want


def test_activation_checkpointing_is_refused_on_xla():
    with pytest.raises(InputError, match="--activation-checkpointing must be 'auto' or 'off' with the xla backend"):
        resolve_activation_checkpointing("on", get_recipe("llama-1b"), RuntimeSpec("xla", "xla", None, False, True))


def test_the_neuron_device_gets_scaled_dot_product_attention():
    """sdpa need not keep the sequence x sequence scores (docs/llama-8b.md); eager elsewhere."""
    from trn_train.model import attention_for, model_config

    assert [attention_for(d) for d in ("neuron", "cpu", "xla")] == ["sdpa", "eager", "eager"]

    recipe = get_recipe("llama-tiny")
    mcfg = model_config(recipe, 300, {})
    assert build_model(recipe, mcfg, 1, device="meta", attention="sdpa").config._attn_implementation == "sdpa"
    model = build_model(recipe, mcfg, 1, device="meta", activation_checkpointing=True)
    assert model.config._attn_implementation == "eager" and model.is_activation_checkpointing
    with pytest.raises(ValueError, match="attention must be one of"):
        build_model(recipe, mcfg, 1, device="meta", attention="flash")


def test_a_worker_that_stops_with_a_process_group_up_exits_without_destructors(monkeypatch):
    """``python -m trn_train``: a divergence (exit 3) with the group still up skips the
    destructors (``os._exit``, the group's could abort the worker); success, other errors
    (before the ranks meet) and runs without a group exit normally."""
    import types

    import trn_train.__main__ as entry

    exits: list[tuple[str, int]] = []
    monkeypatch.setattr(entry.os, "_exit", lambda code: exits.append(("_exit", code)))
    monkeypatch.setattr(entry.sys, "exit", lambda code: exits.append(("exit", code)))
    group = types.SimpleNamespace(is_available=lambda: True, is_initialized=lambda: True)
    monkeypatch.setitem(sys.modules, "torch.distributed", group)
    entry._exit(3)
    entry._exit(0)
    entry._exit(2)
    group.is_initialized = lambda: False
    entry._exit(3)
    assert exits == [("_exit", 3), ("exit", 0), ("exit", 2), ("exit", 3)]
