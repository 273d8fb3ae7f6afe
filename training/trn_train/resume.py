"""The training run's checkpoints: what a step's checkpoint holds (:func:`save_checkpoint`),
which checkpoint a run resumes from (:func:`find_resume`) and how the flags win over the
settings it restores (:func:`apply_hparams`). The protocol (atomic directory, SHA-256
manifest, keep last K) is :mod:`trn_train.checkpoint`'s; the native backend's sharded model
and optimizer state go through :mod:`trn_train.dcp_checkpoint`.
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from trn_train import checkpoint as ckpt
from trn_train.config import TrainConfig
from trn_train.errors import CheckpointError, InputError
from trn_train.metrics import MetricsLogger
from trn_train.runtime import Runtime


@dataclass
class Resume:
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


def _read_resume(info: ckpt.CheckpointInfo, rt: Runtime, fingerprint: dict[str, Any], zero1: bool) -> Resume:
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
        return Resume(c, trainer, c.load(rng_file))
    return Resume(c, trainer, c.load(rng_file), c.load("model.pt"),
                   c.load(f"optim_rank{rt.rank if zero1 else 0:05d}.pt"))


def find_resume(cfg: TrainConfig, rt: Runtime, ckpt_root: Path, fingerprint: dict[str, Any], zero1: bool,
                log: MetricsLogger) -> Resume | None:
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


def run_hparams(lr: float, cfg: TrainConfig, warmup: int) -> dict[str, float]:
    """The optimizer and schedule settings a checkpoint records (``trainer.json`` ``hparams``)."""
    return {"lr": lr, "weight_decay": cfg.weight_decay, "warmup_steps": warmup, "min_lr_ratio": cfg.min_lr_ratio,
            "max_grad_norm": cfg.max_grad_norm}


def apply_hparams(optimizer: Any, scheduler: Any, lr: float, weight_decay: float, lam: Any) -> None:
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


def save_checkpoint(rt: Runtime, root: Path, step: int, model: torch.nn.Module, optimizer: Any, scheduler: Any,
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
