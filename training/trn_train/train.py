"""The data-parallel training loop (Llama causal LM and BERT masked LM).

One process per NeuronCore (torchrun). Each optimizer step consumes one global batch of
``global_batch_size`` packed sequences: every rank takes a contiguous slice of
``global_batch_size / world_size`` sequences and runs it as ``grad_accum`` micro-batches of
``micro_batch_size``. Gradients are averaged over all ranks (DDP on CPU, ZeRO-1 or
``xm.reduce_gradients`` on XLA), so the update equals the one-process update on the same
global batch.

Scaling (``--scaling``): ``strong`` keeps ``--global-batch-size`` fixed when the node count
changes (each core gets fewer sequences); ``weak`` keeps ``--per-core-batch-size`` fixed (the
global batch grows with the cores).
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from trn_train import checkpoint as ckpt
from trn_train.config import TrainConfig, recipe_for
from trn_train.data import GlobalBatchSampler, PackedDataset
from trn_train.errors import ConfigError
from trn_train.flops import flops_per_token, instance_spec, mfu
from trn_train.metrics import MetricsLogger
from trn_train.model import build_model, mlm_mask, model_config
from trn_train.runtime import Runtime, extracting_graphs_only
from trn_ultracluster.recipes import Recipe


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
        ConfigError: the global batch is not divisible by the world size, the per-core batch
            not by the micro batch, a size is not positive, or the flag that the chosen
            ``--scaling`` needs is contradicted.
    """
    if cfg.scaling not in ("strong", "weak"):
        raise ConfigError("--scaling", cfg.scaling, "'strong' (fixed global batch) or 'weak' (fixed per-core batch)")
    for name, v in (("--global-batch-size", cfg.global_batch_size), ("--per-core-batch-size", cfg.per_core_batch_size),
                    ("--micro-batch-size", cfg.micro_batch_size)):
        if v is not None and v < 1:
            raise ConfigError(name, v, "a positive integer")
    if cfg.scaling == "strong":
        if cfg.per_core_batch_size is not None:
            raise ConfigError("--per-core-batch-size", cfg.per_core_batch_size,
                              "unset with --scaling strong", hint="use --global-batch-size, or --scaling weak")
        gbs = cfg.global_batch_size or recipe.global_batch_size
        if gbs % world_size:
            raise ConfigError("--global-batch-size", gbs, f"divisible by the world size {world_size}",
                              hint=f"e.g. {max(world_size, gbs // world_size * world_size)}")
        per_core = gbs // world_size
    else:
        if cfg.global_batch_size is not None:
            raise ConfigError("--global-batch-size", cfg.global_batch_size, "unset with --scaling weak",
                              hint="use --per-core-batch-size, or --scaling strong")
        per_core = cfg.per_core_batch_size or recipe.micro_batch_size
        gbs = per_core * world_size
    if cfg.micro_batch_size is not None:
        micro = cfg.micro_batch_size
        if per_core % micro:
            raise ConfigError("--micro-batch-size", micro,
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


def _validate(cfg: TrainConfig, recipe: Recipe) -> None:
    if cfg.steps < 1:
        raise ConfigError("--steps", cfg.steps, "a positive integer")
    if cfg.log_every < 1:
        raise ConfigError("--log-every", cfg.log_every, "a positive integer")
    if cfg.ckpt_every < 0:
        raise ConfigError("--ckpt-every", cfg.ckpt_every, "0 (only at the end) or a positive integer")
    if cfg.keep_last < 1:
        raise ConfigError("--keep-last", cfg.keep_last, "a positive integer")
    if cfg.precision not in ("auto", "bf16", "fp32"):
        raise ConfigError("--precision", cfg.precision, "'auto', 'bf16' or 'fp32'")
    if cfg.zero1 not in ("auto", "on", "off"):
        raise ConfigError("--zero1", cfg.zero1, "'auto', 'on' or 'off'")
    if cfg.max_steps_this_run is not None and cfg.max_steps_this_run < 1:
        raise ConfigError("--max-steps-this-run", cfg.max_steps_this_run, "a positive integer")
    if not 0 <= cfg.min_lr_ratio <= 1:
        raise ConfigError("--min-lr-ratio", cfg.min_lr_ratio, "a number in [0, 1]")
    if cfg.lr is not None and not cfg.lr > 0:
        raise ConfigError("--lr", cfg.lr, "a positive number")
    if recipe.needs_model_parallel:
        raise ConfigError(
            "--recipe", recipe.name, "a data-parallel recipe for `train`",
            hint=f"{recipe.name} needs TP={recipe.tensor_parallel} PP={recipe.pipeline_parallel}: "
                 "run it through NxD Training with `python -m trn_train nxd-config`")


def run(cfg: TrainConfig) -> dict[str, Any]:
    """Train (or resume) as configured; returns a summary dict (rank 0's view).

    Every check on flags and data happens before the model is built. Raises
    :class:`~trn_train.errors.ConfigError` / :class:`~trn_train.errors.DataError` for bad input.
    """
    recipe = recipe_for(cfg.recipe)
    _validate(cfg, recipe)
    peak = instance_spec(cfg.instance_type).peak_bf16_tflops_per_logical_core
    ds = PackedDataset(cfg.data_dir, verify=cfg.verify_data)
    if ds.task_format != recipe.task:
        raise ConfigError("--data-dir", str(cfg.data_dir),
                          f"data prepared with --format {recipe.task} for recipe {recipe.name}",
                          hint=f"it was prepared with --format {ds.task_format}")
    seq_len = cfg.seq_len or min(recipe.seq_len, ds.seq_len)
    if not 1 <= seq_len <= ds.seq_len:
        raise ConfigError("--seq-len", seq_len, f"between 1 and the prepared sequence length {ds.seq_len}",
                          hint="re-run prepare-data with a larger --seq-len")
    mcfg = model_config(recipe, ds.vocab_size, ds.special_tokens)
    if seq_len > mcfg.max_position_embeddings:
        raise ConfigError("--seq-len", seq_len, f"at most {recipe.name}'s max_position_embeddings "
                          f"{mcfg.max_position_embeddings}")

    rt = Runtime.init(cfg.device)
    plan = plan_batches(cfg, recipe, rt.world_size)
    sampler = GlobalBatchSampler(len(ds), plan.global_batch_size, cfg.seed)
    precision = cfg.precision if cfg.precision != "auto" else ("bf16" if rt.kind == "xla" else "fp32")
    zero1 = rt.kind == "xla" and cfg.zero1 != "off"
    lr = cfg.lr if cfg.lr is not None else recipe.lr
    warmup = cfg.warmup_steps if cfg.warmup_steps is not None else min(recipe.warmup_steps, max(1, cfg.steps // 10))
    fpt = flops_per_token(recipe.model_type, mcfg, seq_len)
    compile_only = extracting_graphs_only()
    fingerprint = {"recipe": recipe.name, "seq_len": seq_len, "global_batch_size": plan.global_batch_size,
                   "seed": cfg.seed, "data_sequences": len(ds), "steps": cfg.steps}
    ckpt_root = cfg.output_dir / "checkpoints"
    log = MetricsLogger(rt.is_main, (cfg.output_dir / "tensorboard") if cfg.tensorboard else None,
                        total_steps=cfg.steps, progress=cfg.progress)

    # ---------------------------------------------------------------- resume point
    resume_from: ckpt.CheckpointInfo | None = None
    trainer_state: dict[str, Any] = {}
    if cfg.resume == "auto":
        found = ckpt.scan(ckpt_root, warn=lambda m: log.event("checkpoint_ignored", message=m))
        if found:
            resume_from = found[-1]
            trainer_state = ckpt.load_trainer_state(resume_from.path)
    elif cfg.resume != "none":
        p = Path(cfg.resume)
        if not (p / ckpt.MARKER).is_file():
            raise ConfigError("--resume", cfg.resume, "'auto', 'none' or a complete checkpoint directory",
                              hint=f"no {ckpt.MARKER} marker in it")
        trainer_state = ckpt.load_trainer_state(p)
        resume_from = ckpt.CheckpointInfo(p, int(trainer_state["step"]))
    if resume_from is not None:
        old = trainer_state.get("fingerprint", {})
        diff = {k: (old.get(k), v) for k, v in fingerprint.items() if k != "steps" and old.get(k) != v}
        if diff:
            raise ConfigError("--resume", str(resume_from.path), "a checkpoint of the same run",
                              hint="differs in " + ", ".join(f"{k}: {a!r} -> {b!r}" for k, (a, b) in diff.items())
                              + "; use a new --output-dir or --resume none")
        if zero1 and trainer_state.get("zero1") and trainer_state["world_size"] != rt.world_size:
            raise ConfigError("world size", rt.world_size,
                              f"{trainer_state['world_size']} to resume ZeRO-1 optimizer shards from {resume_from.path}")

    # ---------------------------------------------------------------- model + optimizer
    model = build_model(recipe, mcfg, cfg.seed)
    if resume_from is not None:
        model.load_state_dict(ckpt.load_file(resume_from, "model.pt"))
    model.to(rt.device)
    model.train()
    n_params = sum(p.numel() for p in model.parameters())
    optimizer = rt.make_optimizer(list(model.parameters()), lr=lr, weight_decay=cfg.weight_decay,
                                  betas=(0.9, 0.95) if recipe.model_type == "llama" else (0.9, 0.999),
                                  max_grad_norm=cfg.max_grad_norm, zero1=zero1)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lr_lambda(warmup, cfg.steps, cfg.min_lr_ratio))
    start_step = 0
    if resume_from is not None:
        optim_file = f"optim_rank{rt.rank if zero1 else 0:05d}.pt"
        optimizer.load_state_dict(ckpt.load_file(resume_from, optim_file))
        scheduler.load_state_dict(trainer_state["scheduler"])
        rng_file = f"rng_rank{rt.rank:05d}.pt"
        if not (resume_from.path / rng_file).exists():
            rng_file = "rng_rank00000.pt"
        rt.set_rng_state(ckpt.load_file(resume_from, rng_file))
        start_step = int(trainer_state["step"])
    train_model = rt.wrap_model(model)

    log.event("start", recipe=recipe.name, device=rt.kind, world_size=rt.world_size, precision=precision,
              zero1=zero1, params=n_params, seq_len=seq_len, global_batch_size=plan.global_batch_size,
              micro_batch_size=plan.micro_batch_size, grad_accum=plan.grad_accum, scaling=cfg.scaling,
              steps=cfg.steps, start_step=start_step, flops_per_token=fpt, instance_type=cfg.instance_type,
              peak_tflops_per_core=peak, compile_only=compile_only, data_sequences=len(ds))
    if resume_from is not None:
        log.event("resume", step=start_step, path=str(resume_from.path))
    log.start_at(start_step)

    # ---------------------------------------------------------------- loop
    special = ds.special_tokens
    last_log_t = time.perf_counter()
    last_log_step = start_step
    last: dict[str, Any] = {}
    end_step = cfg.steps if cfg.max_steps_this_run is None else min(cfg.steps, start_step + cfg.max_steps_this_run)
    step = start_step
    saved_at = start_step if resume_from is not None else -1
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
        scheduler.step()
        optimizer.zero_grad(set_to_none=True)
        rt.sync()
        step += 1
        postfix: dict[str, str] = {}
        if step % cfg.log_every == 0 or step == end_step:
            loss_v = float(rt.mean_across_ranks(loss_sum).item())
            gn = float(grad_norm.item()) if isinstance(grad_norm, torch.Tensor) else float(grad_norm)
            now = time.perf_counter()
            dt = max(now - last_log_t, 1e-9)
            tokens_s = (step - last_log_step) * plan.global_batch_size * seq_len / dt
            last = {"step": step, "loss": loss_v, "lr": scheduler.get_last_lr()[0], "grad_norm": gn,
                    "tokens_per_s": tokens_s, "mfu": mfu(tokens_s, fpt, rt.world_size, peak),
                    "step_time_s": dt / (step - last_log_step)}
            log.event("train", **last)
            log.scalars(step, {k: v for k, v in last.items() if k != "step"})
            postfix["loss"] = f"{loss_v:.3f}"
            last_log_t, last_log_step = time.perf_counter(), step
        log.advance(**postfix)
        want_ckpt = (cfg.ckpt_every and step % cfg.ckpt_every == 0) or step == end_step
        if want_ckpt and step != saved_at and not compile_only:
            path = _save(rt, ckpt_root, step, model, optimizer, scheduler, zero1, fingerprint, cfg.keep_last)
            saved_at = step
            log.event("checkpoint", step=step, path=str(path))
            last_log_t = time.perf_counter()  # do not charge checkpoint time to throughput
    summary = {**last, "final_step": step, "world_size": rt.world_size, "plan": asdict(plan),
               "compile_only": compile_only}
    log.event("end", **{k: v for k, v in summary.items() if k != "plan"})
    log.close()
    rt.barrier()
    rt.shutdown()
    return summary


def _save(rt: Runtime, root: Path, step: int, model: torch.nn.Module, optimizer: Any, scheduler: Any,
          zero1: bool, fingerprint: dict[str, Any], keep_last: int) -> Path:
    rng = rt.rng_state()
    model_state = rt.to_cpu(model.state_dict()) if rt.is_main else None
    optim_state = rt.to_cpu(optimizer.state_dict()) if (zero1 or rt.is_main) else None
    trainer = {"scheduler": scheduler.state_dict(), "fingerprint": fingerprint, "zero1": zero1,
               "saved_at": time.time(), "pid": os.getpid()}
    return ckpt.save(root, step, rt.rank, rt.world_size, rt.barrier, model_state, optim_state, rng, trainer, keep_last)
