"""The data-parallel training loop (Llama causal LM and BERT masked LM): ``python -m trn_train
train`` runs :func:`run`.

One process per NeuronCore (torchrun). Each optimizer step consumes one global batch of
``global_batch_size`` packed sequences: every rank takes a contiguous slice of
``global_batch_size / world_size`` sequences and runs it as ``grad_accum`` micro-batches of
``micro_batch_size`` (the batch plan, :mod:`trn_train.plan`). Gradients are averaged over all
ranks (native backend: FSDP2 or DDP; xla backend: ZeRO-1 or ``xm.reduce_gradients``), so the
update equals the one-process update on the same global batch. The two back ends
(:mod:`trn_train.runtime`) share this loop, the batch plan, the events and the checkpoint
protocol; their checkpoints differ in layout (:mod:`trn_train.checkpoint`; what a run saves
and resumes from is :mod:`trn_train.resume`).

``TrainConfig`` is imported here from :mod:`trn_train.config` and stays importable as
``from trn_train.train import TrainConfig, run``, the program's public API.
"""

from __future__ import annotations

import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np
import torch

from trn_train.config import TrainConfig, recipe_for
from trn_train.data import GlobalBatchSampler, PackedDataset
from trn_train.errors import InputError, TrainingDiverged
from trn_train.flops import flops_per_token, instance_spec, mfu
from trn_train.metrics import MetricsLogger
from trn_train.model import attention_for, build_model, mlm_mask, model_config, transformer_blocks
from trn_train.plan import (check_recipe_fits, lr_lambda, plan_batches, resolve_activation_checkpointing,
                            validate_flags)
from trn_train.resume import apply_hparams, find_resume, run_hparams, save_checkpoint
from trn_train.runtime import Runtime, local_tensor
from trn_train.runtime_spec import RuntimeSpec, extracting_graphs_only, resolve_runtime
from trn_ultracluster.contracts.recipes import Recipe


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
    validate_flags(cfg, recipe)
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
    hparams = run_hparams(lr, cfg, warmup)
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
        resume = find_resume(cfg, rt, ckpt_root, fingerprint, zero1, log)

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
            apply_hparams(optimizer, scheduler, lr, cfg.weight_decay, lam)
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
                    last_ckpt = save_checkpoint(rt, ckpt_root, step, model, optimizer, scheduler, zero1, fingerprint,
                                                hparams, cfg.keep_last)
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


