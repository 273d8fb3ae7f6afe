"""The data-parallel training loop (Llama causal LM and BERT masked LM).

One process per NeuronCore (torchrun). Each optimizer step consumes one global batch of
``global_batch_size`` packed sequences: every rank takes a contiguous slice of
``global_batch_size / world_size`` sequences and runs it as ``grad_accum`` micro-batches of
``micro_batch_size``. Gradients are averaged over all ranks (native backend: FSDP2 or DDP;
xla backend: ZeRO-1 or ``xm.reduce_gradients``), so the update equals the one-process update
on the same global batch. The two back ends (:mod:`trn_train.runtime`) share this loop, the
batch plan, the events and the checkpoint protocol; their checkpoints differ in layout
(:mod:`trn_train.checkpoint`).

Scaling (``--scaling``): ``strong`` keeps ``--global-batch-size`` fixed when the node count
changes (each core gets fewer sequences); ``weak`` keeps ``--per-core-batch-size`` fixed (the
global batch grows with the cores).
"""

from __future__ import annotations

import math
import os
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from trn_train import checkpoint as ckpt
from trn_train.config import TrainConfig, recipe_for
from trn_train.data import GlobalBatchSampler, PackedDataset
from trn_train.errors import CheckpointError, InputError, TrainingDiverged
from trn_train.flops import flops_per_token, instance_spec, mfu
from trn_train.metrics import MetricsLogger
from trn_train.model import attention_for, build_model, mlm_mask, model_config, transformer_blocks
from trn_train.runtime import Runtime, local_tensor
from trn_train.runtime_spec import RuntimeSpec, extracting_graphs_only, resolve_runtime
from trn_ultracluster.contracts.recipes import Recipe


@dataclass(frozen=True)
class BatchPlan:
    """Resolved batch geometry: ``global_batch_size = world_size * micro_batch_size * grad_accum``."""

    global_batch_size: int
    per_core_batch_size: int
    micro_batch_size: int
    grad_accum: int
    world_size: int


def plan_batches(cfg: TrainConfig, recipe: Recipe, world_size: int) -> BatchPlan:
    """Resolve global / per-core / micro batch and accumulation for ``world_size`` ranks.

    Raises:
        InputError: the global batch is not divisible by the world size, the per-core batch
            not by the micro batch, a size is not positive, or the flag that the chosen
            ``--scaling`` needs is contradicted.
    """
    if cfg.scaling not in ("strong", "weak"):
        raise InputError("--scaling", cfg.scaling, "'strong' (fixed global batch) or 'weak' (fixed per-core batch)")
    for name, v in (("--global-batch-size", cfg.global_batch_size), ("--per-core-batch-size", cfg.per_core_batch_size),
                    ("--micro-batch-size", cfg.micro_batch_size)):
        if v is not None and v < 1:
            raise InputError(name, v, "a positive integer")
    if cfg.scaling == "strong":
        if cfg.per_core_batch_size is not None:
            raise InputError("--per-core-batch-size", cfg.per_core_batch_size,
                              "unset with --scaling strong", hint="use --global-batch-size, or --scaling weak")
        gbs = cfg.global_batch_size or recipe.global_batch_size
        if gbs % world_size:
            raise InputError("--global-batch-size", gbs, f"divisible by the world size {world_size}",
                              hint=f"e.g. {max(world_size, gbs // world_size * world_size)}")
        per_core = gbs // world_size
    else:
        if cfg.global_batch_size is not None:
            raise InputError("--global-batch-size", cfg.global_batch_size, "unset with --scaling weak",
                              hint="use --per-core-batch-size, or --scaling strong")
        per_core = cfg.per_core_batch_size or recipe.micro_batch_size
        gbs = per_core * world_size
    if cfg.micro_batch_size is not None:
        micro = cfg.micro_batch_size
        if per_core % micro:
            raise InputError("--micro-batch-size", micro,
                              f"a divisor of the per-core batch {per_core} (= global batch {gbs} / world size {world_size})")
    else:
        micro = max(d for d in range(1, min(recipe.micro_batch_size, per_core) + 1) if per_core % d == 0)
    return BatchPlan(gbs, per_core, micro, per_core // micro, world_size)


def lr_lambda(warmup: int, total: int, min_ratio: float):
    """Linear warm-up to 1 over ``warmup`` steps, then cosine decay to ``min_ratio`` at ``total``."""

    def f(step: int) -> float:
        if warmup > 0 and step < warmup:
            return (step + 1) / warmup
        span = max(1, total - warmup)
        progress = min(1.0, (step - warmup) / span)
        return min_ratio + (1 - min_ratio) * 0.5 * (1 + math.cos(math.pi * progress))

    return f


def _finite(x: object) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _validate(cfg: TrainConfig, recipe: Recipe) -> None:
    """Check the flags that need neither the data nor the device.

    Raises:
        InputError: the first bad flag; 0, negative, NaN and infinite values are named, never
            replaced by a default.
    """
    if cfg.steps < 1:
        raise InputError("--steps", cfg.steps, "a positive integer")
    if cfg.log_every < 1:
        raise InputError("--log-every", cfg.log_every, "a positive integer")
    if cfg.ckpt_every < 0:
        raise InputError("--ckpt-every", cfg.ckpt_every, "0 (only at the end) or a positive integer")
    if cfg.keep_last < 1:
        raise InputError("--keep-last", cfg.keep_last, "a positive integer")
    if cfg.precision not in ("auto", "bf16", "fp32"):
        raise InputError("--precision", cfg.precision, "'auto', 'bf16' or 'fp32'")
    if cfg.max_steps_this_run is not None and cfg.max_steps_this_run < 1:
        raise InputError("--max-steps-this-run", cfg.max_steps_this_run, "a positive integer")
    if not 0 <= cfg.min_lr_ratio <= 1:
        raise InputError("--min-lr-ratio", cfg.min_lr_ratio, "a number in [0, 1]")
    if cfg.lr is not None and not (_finite(cfg.lr) and cfg.lr > 0):
        raise InputError("--lr", cfg.lr, "a positive finite number")
    if cfg.warmup_steps is not None and not 0 <= cfg.warmup_steps <= cfg.steps:
        raise InputError("--warmup-steps", cfg.warmup_steps, f"an integer in 0..--steps ({cfg.steps})")
    if not (_finite(cfg.weight_decay) and cfg.weight_decay >= 0):
        raise InputError("--weight-decay", cfg.weight_decay, "a finite number >= 0")
    if not (_finite(cfg.max_grad_norm) and cfg.max_grad_norm >= 0):
        raise InputError("--max-grad-norm", cfg.max_grad_norm, "a finite number >= 0 (0 disables clipping)")
    if not 0 <= cfg.seed < 2**64:  # numpy's default_rng takes no negative seed, torch.manual_seed < 2**64
        raise InputError("--seed", cfg.seed, "an integer in 0..2**64-1")


def resolve_activation_checkpointing(flag: str, recipe: Recipe, spec: RuntimeSpec) -> bool:
    """``--activation-checkpointing``: ``auto`` is on for a recipe that needs model
    parallelism on Trn1 (llama-8b: its per-layer activations at sequence length 8192 do not
    fit a NeuronCore next to its FSDP2 shards, docs/llama-8b.md) on the native backend.

    Raises:
        InputError: an unknown value, or ``on`` with the xla backend (its model-parallel
            recipes run through NxD Training, which has its own setting).
    """
    if flag not in ("auto", "on", "off"):
        raise InputError("--activation-checkpointing", flag, "'auto', 'on' or 'off'")
    if spec.backend != "native":
        if flag == "on":
            raise InputError("--activation-checkpointing", flag, "'auto' or 'off' with the xla backend",
                              hint="NxD Training recipes set it in their own configuration")
        return False
    return flag == "on" or (flag == "auto" and recipe.needs_model_parallel)


def check_recipe_fits(recipe: Recipe, spec: RuntimeSpec) -> None:
    """Refuse a model-parallel recipe (``recipe.needs_model_parallel``, e.g. llama-8b) where
    every core would hold the whole model: on the xla backend (it runs through NxD Training)
    and with DDP. FSDP2 on the native backend shards weights, gradients and AdamW state over
    all cores, which is what lets such a model fit.

    Raises:
        InputError: naming ``--recipe`` (xla) or ``--data-parallel`` (native DDP).
    """
    if not recipe.needs_model_parallel:
        return
    if spec.backend == "xla":
        raise InputError(
            "--recipe", recipe.name, "a data-parallel recipe for `train` on the xla backend",
            hint=f"{recipe.name} needs TP={recipe.tensor_parallel} PP={recipe.pipeline_parallel}: run it through "
                 "NxD Training with `python -m trn_train nxd-config`, or on Trn2/Trn3 with --backend native "
                 "--data-parallel fsdp")
    if spec.data_parallel == "ddp":
        raise InputError(
            "--data-parallel", "ddp", f"'fsdp' or 'auto' for {recipe.name}",
            hint="DDP keeps the whole model, its gradients and its AdamW state on every core (16 bytes per "
                 "parameter, 128 GB for 8B parameters); FSDP2 shards them over all cores")


@dataclass
class _Resume:
    """What a verified checkpoint gives this rank: its trainer state and RNG state, and for the
    torch layout the CPU state dicts (the DCP layout is loaded into the wrapped model later,
    :func:`trn_train.dcp_checkpoint.load`)."""

    checkpoint: ckpt.Checkpoint
    trainer: dict[str, Any]
    rng: dict[str, Any]
    model: dict[str, Any] | None = None
    optim: dict[str, Any] | None = None

    @property
    def step(self) -> int:
        return int(self.trainer["step"])


def _read_resume(info: ckpt.CheckpointInfo, rt: Runtime, fingerprint: dict[str, Any], zero1: bool) -> _Resume:
    """Open ``info`` and verify (and, for the torch layout, load) what this rank must.

    DCP layout: the manifest's files are verified split across ranks (file ``i`` of the sorted
    list by rank ``i % world_size``, so each is read once); the caller's ``count_true`` makes
    the ranks agree before ``dcp.load`` reads them. Torch layout: each rank verifies the files
    it loads.

    Raises:
        CheckpointError: a file is missing, truncated, corrupt or unreadable.
        InputError: the checkpoint is of a different run (fingerprint), of the other back
            end's layout, or holds ZeRO-1 optimizer shards of another world size.
    """
    c = ckpt.open_checkpoint(info)
    trainer = c.trainer_state()
    old = trainer.get("fingerprint", {})
    diff = {k: (old.get(k), v) for k, v in fingerprint.items() if k != "steps" and old.get(k) != v}
    if diff:
        raise InputError("--resume", str(c.path), "a checkpoint of the same run",
                          hint="differs in " + ", ".join(f"{k}: {a!r} -> {b!r}" for k, (a, b) in diff.items())
                          + "; use a new --output-dir or --resume none")
    layout = ckpt.LAYOUT_DCP if rt.backend == "native" else ckpt.LAYOUT_TORCH
    found = trainer.get("layout", ckpt.LAYOUT_TORCH)
    if found != layout:
        other = "native" if found == ckpt.LAYOUT_DCP else "xla"
        raise InputError("--resume", str(c.path), f"a checkpoint of the {rt.backend} backend (layout {layout!r})",
                          hint=f"it was written by the {other} backend (layout {found!r}): resume it in the "
                               f"{other} stack's image with --backend {other} (on a cluster, set "
                               f"training_image.neuron_stack: {other} and redeploy), or start this run in a "
                               "new --output-dir")
    if zero1 and trainer.get("zero1") and trainer.get("world_size") != rt.world_size:
        raise InputError("world size", rt.world_size,
                          f"{trainer.get('world_size')} to resume ZeRO-1 optimizer shards from {c.path}")
    rng_file = f"rng_rank{rt.rank:05d}.pt"
    if not c.has(rng_file):  # resumed with more ranks than wrote the checkpoint (no ZeRO-1)
        rng_file = "rng_rank00000.pt"
    if layout == ckpt.LAYOUT_DCP:
        for i, name in enumerate(sorted(c.files or {})):
            if i % rt.world_size == rt.rank:
                c.verify(name)
        return _Resume(c, trainer, c.load(rng_file))
    return _Resume(c, trainer, c.load(rng_file), c.load("model.pt"),
                   c.load(f"optim_rank{rt.rank if zero1 else 0:05d}.pt"))


def _find_resume(cfg: TrainConfig, rt: Runtime, ckpt_root: Path, fingerprint: dict[str, Any], zero1: bool,
                 log: MetricsLogger) -> _Resume | None:
    """The checkpoint to resume from: ``--resume auto`` tries the complete checkpoints newest
    first and falls back past damaged ones (event ``checkpoint_corrupt`` for each); an explicit
    directory is used or refused, never replaced by another.

    Every rank verifies its share of the files (:func:`_read_resume`); the ranks then agree
    (:meth:`Runtime.count_true`) so that all of them resume from the same checkpoint.

    Returns:
        ``None`` to start at step 0 (``--resume none``, or no complete checkpoint yet).

    Raises:
        InputError: ``--resume`` is not a complete checkpoint directory, or of another run.
        CheckpointError: the explicit checkpoint is damaged, or every complete checkpoint of
            ``--resume auto`` is. Starting from step 0 instead would silently throw the run's
            compute away and rotate the damaged checkpoints (the evidence) out; the message says
            how to start over on purpose.
    """
    if cfg.resume == "none":
        return None
    if cfg.resume == "auto":
        candidates = list(reversed(ckpt.scan(ckpt_root, warn=lambda m: log.event("checkpoint_ignored", message=m))))
    else:
        p = Path(cfg.resume)
        if not (p / ckpt.MARKER).is_file():
            raise InputError("--resume", cfg.resume, "'auto', 'none' or a complete checkpoint directory",
                              hint=f"no {ckpt.MARKER} marker in it")
        candidates = [ckpt.CheckpointInfo(p, -1)]  # its step comes from its trainer.json
    reasons = []
    for i, info in enumerate(candidates):
        err: CheckpointError | None = None
        try:
            state = _read_resume(info, rt, fingerprint, zero1)
        except CheckpointError as e:
            err = e
        failed = rt.count_true(err is not None)
        if not failed:
            if not state.checkpoint.verified:
                log.event("checkpoint_unverified", step=state.step, path=str(info.path),
                          reason=f"no {ckpt.MANIFEST}: written before checkpoints had checksums")
            return state
        if err is not None and not rt.is_main:
            print(f"rank {rt.rank}: {err}", file=sys.stderr, flush=True)
        reason = str(err) if err is not None else (
            f"{info.path}: a file failed verification on {failed} other rank(s) (each printed it on stderr)")
        if cfg.resume != "auto":
            raise CheckpointError(reason, path=info.path, file=err.file if err else None)
        fallback = candidates[i + 1].path if i + 1 < len(candidates) else None
        log.event("checkpoint_corrupt", step=info.step, path=str(info.path), reason=reason, failed_ranks=failed,
                  fallback=None if fallback is None else str(fallback))
        reasons.append(reason)
    if not reasons:
        return None
    raise CheckpointError(
        f"no usable checkpoint in {ckpt_root}: " + "; ".join(reasons) + ". Nothing was written. To start over on "
        "purpose, use a new --output-dir (or delete the damaged checkpoints after inspecting them); to resume "
        "from a copy you trust, pass --resume DIR", path=ckpt_root)


def _hparams(lr: float, cfg: TrainConfig, warmup: int) -> dict[str, float]:
    """The optimizer and schedule settings a checkpoint records (``trainer.json`` ``hparams``)."""
    return {"lr": lr, "weight_decay": cfg.weight_decay, "warmup_steps": warmup, "min_lr_ratio": cfg.min_lr_ratio,
            "max_grad_norm": cfg.max_grad_norm}


def _apply_hparams(optimizer: Any, scheduler: Any, lr: float, weight_decay: float, lam: Any) -> None:
    """Make the flags win over the optimizer/scheduler state loaded from a checkpoint.

    ``optimizer.load_state_dict`` restores the checkpoint's peak lr (``initial_lr``) and weight
    decay, and ``LambdaLR.load_state_dict`` its ``base_lrs``: without this a new ``--lr`` or
    ``--weight-decay`` on resume would be ignored. The lr of the next step is set as the
    scheduler would set it (``base_lr * lam(last_epoch)``), so new ``--warmup-steps`` /
    ``--min-lr-ratio`` also apply from the first resumed step. Groups: ``[decay, no_decay]``
    (:meth:`Runtime.make_optimizer`).
    """
    scheduler.base_lrs = [lr] * len(optimizer.param_groups)
    for group, wd in zip(optimizer.param_groups, (weight_decay, 0.0)):
        group["initial_lr"] = lr
        group["weight_decay"] = wd
        group["lr"] = lr * lam(scheduler.last_epoch)


def _all_finite(params: list[torch.nn.Parameter]) -> torch.Tensor:
    """0-d bool tensor on the parameters' device: every element of this rank's part of every
    parameter (its FSDP2 shard) is finite; the caller agrees over the ranks."""
    return torch.stack([torch.isfinite(local_tensor(p).detach()).all() for p in params]).all()


def run(cfg: TrainConfig) -> dict[str, Any]:
    """Train (or resume) as configured; returns a summary dict (rank 0's view).

    Every check on flags and data happens before the model is built. Raises
    :class:`~trn_train.errors.InputError` / :class:`~trn_train.errors.DataError` for bad input,
    :class:`~trn_train.errors.CheckpointError` when no checkpoint can be resumed from,
    :class:`~trn_train.errors.LaunchError` when the XLA runtime disagrees with torchrun, and
    :class:`~trn_train.errors.TrainingDiverged` (exit 3) when the loss, gradient norm or weights
    become non-finite: then no checkpoint of them is written (event ``nonfinite``).

    Non-finite values are collected on the device every step (no host sync) and checked at
    every ``--log-every`` step and before every checkpoint, where the weights are checked too.
    """
    recipe = recipe_for(cfg.recipe)
    _validate(cfg, recipe)
    spec = resolve_runtime(cfg.backend, cfg.device, cfg.data_parallel, cfg.compile, cfg.zero1)
    check_recipe_fits(recipe, spec)
    recompute = resolve_activation_checkpointing(cfg.activation_checkpointing, recipe, spec)
    peak = instance_spec(cfg.instance_type).peak_bf16_tflops_per_logical_core
    ds = PackedDataset(cfg.data_dir, verify=cfg.verify_data)
    if ds.task_format != recipe.task:
        raise InputError("--data-dir", str(cfg.data_dir),
                          f"data prepared with --format {recipe.task} for recipe {recipe.name}",
                          hint=f"it was prepared with --format {ds.task_format}")
    seq_len = cfg.seq_len if cfg.seq_len is not None else min(recipe.seq_len, ds.seq_len)
    if not 1 <= seq_len <= ds.seq_len:
        raise InputError("--seq-len", seq_len, f"between 1 and the prepared sequence length {ds.seq_len}",
                          hint="re-run prepare-data with a larger --seq-len")
    mcfg = model_config(recipe, ds.vocab_size, ds.special_tokens)
    if seq_len > mcfg.max_position_embeddings:
        raise InputError("--seq-len", seq_len, f"at most {recipe.name}'s max_position_embeddings "
                          f"{mcfg.max_position_embeddings}")

    rt = Runtime.init(spec)
    try:
        summary = _train(cfg, recipe, spec, rt, ds, mcfg, seq_len, peak, recompute)
    except BaseException:
        rt.shutdown(after_error=True)
        raise
    rt.shutdown()
    return summary


def _train(cfg: TrainConfig, recipe: Recipe, spec: RuntimeSpec, rt: Runtime, ds: PackedDataset, mcfg: Any,
           seq_len: int, peak: float, recompute: bool) -> dict[str, Any]:
    """:func:`run` from the initialised runtime on: batch plan, resume, model, loop."""
    zero1 = spec.zero1
    plan = plan_batches(cfg, recipe, rt.world_size)
    sampler = GlobalBatchSampler(len(ds), plan.global_batch_size, cfg.seed)
    precision = cfg.precision if cfg.precision != "auto" else ("fp32" if rt.device_type == "cpu" else "bf16")
    lr = cfg.lr if cfg.lr is not None else recipe.lr
    warmup = cfg.warmup_steps if cfg.warmup_steps is not None else min(recipe.warmup_steps, max(1, cfg.steps // 10))
    hparams = _hparams(lr, cfg, warmup)
    fpt = flops_per_token(recipe.model_type, mcfg, seq_len)
    compile_only = extracting_graphs_only()
    fingerprint = {"recipe": recipe.name, "seq_len": seq_len, "global_batch_size": plan.global_batch_size,
                   "seed": cfg.seed, "data_sequences": len(ds), "steps": cfg.steps}
    ckpt_root = cfg.output_dir / "checkpoints"
    # neuron_parallel_compile's trial run computes no real values: none go to TensorBoard,
    # where they would sit beside the real run's steps.
    log = MetricsLogger(rt.is_main, (cfg.output_dir / "tensorboard") if cfg.tensorboard and not compile_only else None,
                        total_steps=cfg.steps, progress=cfg.progress)
    try:  # closes the progress bar and flushes TensorBoard also when the run stops with an error
        resume = _find_resume(cfg, rt, ckpt_root, fingerprint, zero1, log)

        # ---------------------------------------------------------------- model + optimizer
        model = build_model(recipe, mcfg, cfg.seed, device=rt.init_device,
                            attention=attention_for(rt.device_type),
                            activation_checkpointing=recompute)
        if resume is not None and resume.model is not None:
            model.load_state_dict(resume.model)
        train_model = rt.wrap_model(model, transformer_blocks(model))
        model.train()
        params = list(model.parameters())  # after wrapping: FSDP2's sharded DTensors
        n_params = sum(p.numel() for p in params)
        optimizer = rt.make_optimizer(params, lr=lr, weight_decay=cfg.weight_decay,
                                      betas=(0.9, 0.95) if recipe.model_type == "llama" else (0.9, 0.999),
                                      max_grad_norm=cfg.max_grad_norm, zero1=zero1)
        lam = lr_lambda(warmup, cfg.steps, cfg.min_lr_ratio)
        scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lam)
        start_step = 0
        changed: dict[str, list[float]] = {}
        if resume is not None:
            if resume.optim is not None:
                optimizer.load_state_dict(resume.optim)
            else:
                from trn_train import dcp_checkpoint

                dcp_checkpoint.load(resume.checkpoint, model, optimizer)
            scheduler.load_state_dict(resume.trainer["scheduler"])
            _apply_hparams(optimizer, scheduler, lr, cfg.weight_decay, lam)
            rt.set_rng_state(resume.rng)
            start_step = resume.step
            old = resume.trainer.get("hparams", {})
            changed = {k: [old[k], v] for k, v in hparams.items() if k in old and old[k] != v}

        native = rt.backend == "native"
        log.event("start", recipe=recipe.name, backend=rt.backend, device=rt.device_type,
                  data_parallel=rt.data_parallel, compile=rt.compile if native else None,
                  activation_checkpointing=recompute, world_size=rt.world_size,
                  precision=precision, zero1=zero1, params=n_params, seq_len=seq_len, global_batch_size=plan.global_batch_size,
                  micro_batch_size=plan.micro_batch_size, grad_accum=plan.grad_accum, scaling=cfg.scaling,
                  steps=cfg.steps, start_step=start_step, flops_per_token=fpt, instance_type=cfg.instance_type,
                  peak_tflops_per_core=peak, compile_only=compile_only, data_sequences=len(ds))
        last_ckpt: Path | None = None
        if resume is not None:
            last_ckpt = resume.checkpoint.path
            log.event("resume", step=start_step, path=str(last_ckpt), **({"changed": changed} if changed else {}))
            del resume  # free the loaded state dicts
        log.start_at(start_step)

        # ---------------------------------------------------------------- loop
        special = ds.special_tokens
        last_log_t = time.perf_counter()
        last_log_step = start_step
        last: dict[str, Any] = {}
        end_step = cfg.steps if cfg.max_steps_this_run is None else min(cfg.steps, start_step + cfg.max_steps_this_run)
        step = start_step
        saved_at = start_step if last_ckpt is not None else -1
        checked_at = start_step
        # set on the device when a loss or gradient norm is not finite; read only at checks, so the
        # loop keeps its single host sync per log step. Materialised before the first step so every
        # step traces the same XLA graph.
        nonfinite = torch.zeros((), dtype=torch.bool, device=rt.device)
        rt.sync()

        def stop_if_diverged(bad: bool) -> None:
            if not bad:
                return
            log.event("nonfinite", step=step, since_step=checked_at,
                      last_checkpoint=None if last_ckpt is None else str(last_ckpt))
            # every rank stops at this step (``bad`` is all-reduced): leave together. A rank that
            # exited while its peer was still in the last collective made gloo abort the peer
            # (SIGABRT instead of exit 3: 1 of 6 runs before, 0 of 24 with this barrier)
            rt.barrier()
            kept = f"the last good checkpoint is {last_ckpt}" if last_ckpt else "no checkpoint was written"
            raise TrainingDiverged(
                f"training diverged: non-finite loss, gradient norm or weights at step {step} (last seen "
                f"finite at step {checked_at}); no checkpoint of them was written, {kept}. Lower --lr (or "
                "raise --warmup-steps, or clip with a smaller --max-grad-norm) and run again: it resumes "
                "from that checkpoint with the new flags")

        while step < end_step:
            idx = sampler.rank_indices(step, rt.rank, rt.world_size)
            loss_sum = torch.zeros((), device=rt.device)
            for m in range(plan.grad_accum):
                sl = slice(m * plan.micro_batch_size, (m + 1) * plan.micro_batch_size)
                tokens = ds.get(idx[sl], seq_len)
                if recipe.task == "mlm":
                    pos = rt.rank * plan.per_core_batch_size + np.arange(sl.start, sl.stop)
                    inp, labels = mlm_mask(tokens, pos, step, cfg.seed, special, mcfg.vocab_size)
                else:
                    inp, labels = tokens, tokens
                input_ids = torch.from_numpy(inp).to(rt.device)
                label_t = torch.from_numpy(labels).to(rt.device)
                with rt.no_grad_sync(train_model, active=m < plan.grad_accum - 1), rt.autocast(precision):
                    out = train_model(input_ids=input_ids, labels=label_t)
                    loss = out.loss / plan.grad_accum
                loss.backward()
                loss_sum = loss_sum + loss.detach().float()
            grad_norm = rt.optimizer_step(optimizer, train_model, cfg.max_grad_norm)
            nonfinite = nonfinite | ~torch.isfinite(loss_sum)
            if isinstance(grad_norm, torch.Tensor):
                nonfinite = nonfinite | ~torch.isfinite(grad_norm.detach().float())
            scheduler.step()
            optimizer.zero_grad(set_to_none=True)
            rt.sync()
            step += 1
            postfix: dict[str, str] = {}
            if step % cfg.log_every == 0 or step == end_step:
                stats = rt.mean_across_ranks(torch.stack([loss_sum, nonfinite.float()]))
                loss_v, bad = (float(v) for v in stats.tolist())
                gn = float(grad_norm.item()) if isinstance(grad_norm, torch.Tensor) else float(grad_norm)
                now = time.perf_counter()
                dt = max(now - last_log_t, 1e-9)
                tokens_s = (step - last_log_step) * plan.global_batch_size * seq_len / dt
                last = {"step": step, "loss": loss_v, "lr": scheduler.get_last_lr()[0], "grad_norm": gn,
                        "tokens_per_s": tokens_s, "mfu": mfu(tokens_s, fpt, rt.world_size, peak),
                        "step_time_s": dt / (step - last_log_step)}
                log.event("train", **last)
                log.scalars(step, {k: v for k, v in last.items() if k != "step"})
                stop_if_diverged(bad > 0)
                checked_at = step
                postfix["loss"] = f"{loss_v:.3f}"
                last_log_t, last_log_step = time.perf_counter(), step
            log.advance(**postfix)
            want_ckpt = (cfg.ckpt_every and step % cfg.ckpt_every == 0) or step == end_step
            if want_ckpt and step != saved_at:
                # also in neuron_parallel_compile's trial run, so the real run finds this graph compiled
                flags = torch.stack([nonfinite, ~_all_finite(params)]).any().float()
                stop_if_diverged(float(rt.mean_across_ranks(flags).item()) > 0)
                checked_at = step
                if not compile_only:
                    last_ckpt = _save(rt, ckpt_root, step, model, optimizer, scheduler, zero1, fingerprint, hparams,
                                      cfg.keep_last)
                    saved_at = step
                    log.event("checkpoint", step=step, path=str(last_ckpt))
                    last_log_t = time.perf_counter()  # do not charge checkpoint time to throughput
        summary = {**last, "final_step": step, "world_size": rt.world_size, "plan": asdict(plan),
                   "compile_only": compile_only}
        log.event("end", **{k: v for k, v in summary.items() if k != "plan"})
        rt.barrier()
        return summary
    finally:
        log.close()


def _save(rt: Runtime, root: Path, step: int, model: torch.nn.Module, optimizer: Any, scheduler: Any,
          zero1: bool, fingerprint: dict[str, Any], hparams: dict[str, float], keep_last: int) -> Path:
    """Write the checkpoint of ``step`` (collective) in the back end's layout: DCP on native
    (:mod:`trn_train.dcp_checkpoint`), ``torch.save`` files on xla; RNG files either way."""
    rng = rt.rng_state()
    rng_file = f"rng_rank{rt.rank:05d}.pt"
    layout = ckpt.LAYOUT_DCP if rt.backend == "native" else ckpt.LAYOUT_TORCH
    trainer = {"scheduler": scheduler.state_dict(), "fingerprint": fingerprint, "hparams": hparams, "zero1": zero1,
               "layout": layout, "backend": rt.backend, "data_parallel": rt.data_parallel,
               "saved_at": time.time(), "pid": os.getpid()}
    if layout == ckpt.LAYOUT_DCP:
        from trn_train import dcp_checkpoint

        def write(tmp: Path) -> ckpt.FileEntries:
            return {**dcp_checkpoint.write(tmp, rt.rank, model, optimizer), **ckpt.write_torch_file(tmp, rng_file, rng)}
    else:
        model_state = rt.to_cpu(model.state_dict()) if rt.is_main else None
        optim_state = rt.to_cpu(optimizer.state_dict()) if (zero1 or rt.is_main) else None

        def write(tmp: Path) -> ckpt.FileEntries:
            files = ckpt.write_torch_file(tmp, rng_file, rng)
            if optim_state is not None:
                files.update(ckpt.write_torch_file(tmp, f"optim_rank{rt.rank:05d}.pt", optim_state))
            if model_state is not None:
                files.update(ckpt.write_torch_file(tmp, "model.pt", model_state))
            return files

    return ckpt.save(root, step, rt.rank, rt.world_size, rt.barrier, write, trainer, keep_last)
