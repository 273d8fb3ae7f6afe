"""Checkpoints that are either complete or ignored.

Layout under ``<output-dir>/checkpoints``::

    step_00000050/            a complete checkpoint
        model.pt              model state dict (rank 0)
        optim_rank00000.pt    optimizer state: one file per rank with ZeRO-1 shards,
                              rank 0 only when the state is replicated (DDP)
        rng_rank00000.pt      RNG state of each rank
        trainer.json          step, scheduler state, world size, run fingerprint
        COMPLETE              marker, written last
    step_00000060.tmp/        being written (or left by a crash): ignored

Protocol: rank 0 creates ``step_N.tmp``; every rank writes its files there (each file
atomically); barrier; rank 0 renames the directory to ``step_N``, writes ``COMPLETE``
atomically, deletes all but the newest ``keep_last`` complete checkpoints and stale ``.tmp``
directories; barrier. A directory without ``COMPLETE`` is never loaded.
"""

from __future__ import annotations

import io
import json
import re
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import torch

from trn_train.atomic import atomic_write_bytes, atomic_write_json, fsync_dir

MARKER = "COMPLETE"
_NAME = re.compile(r"^step_(\d{8})$")


@dataclass(frozen=True)
class CheckpointInfo:
    """A complete checkpoint directory and the step it was taken after."""

    path: Path
    step: int


def _torch_save_atomic(obj: Any, path: Path) -> None:
    buf = io.BytesIO()
    torch.save(obj, buf)
    atomic_write_bytes(path, buf.getvalue())


def scan(ckpt_root: Path, warn: Callable[[str], None] | None = None) -> list[CheckpointInfo]:
    """Complete checkpoints under ``ckpt_root``, oldest first.

    Directories that are half-written (``.tmp`` suffix, or no ``COMPLETE`` marker) are
    skipped, and ``warn`` (default: print to stderr) is told about each one.
    """
    warn = warn or (lambda m: print(m, file=sys.stderr, flush=True))
    if not ckpt_root.is_dir():
        return []
    found: list[CheckpointInfo] = []
    for p in sorted(ckpt_root.iterdir()):
        if not p.is_dir():
            continue
        m = _NAME.match(p.name)
        if m and (p / MARKER).is_file():
            found.append(CheckpointInfo(p, int(m.group(1))))
        elif p.name.startswith("step_"):
            warn(f"ignoring incomplete checkpoint {p} (no {MARKER} marker: interrupted while writing)")
    return sorted(found, key=lambda c: c.step)


def save(
    ckpt_root: Path, step: int, rank: int, world_size: int, barrier: Callable[[], None],
    model_state: dict[str, Any] | None, optim_state: dict[str, Any] | None,
    rng_state: dict[str, Any], trainer_state: dict[str, Any], keep_last: int,
) -> Path:
    """Write the checkpoint of ``step`` collectively (every rank calls this).

    Args:
        model_state: rank 0's CPU model state dict (``None`` on other ranks).
        optim_state: this rank's CPU optimizer state, or ``None`` when this rank does not
            write one (replicated state: only rank 0 writes).
        rng_state: this rank's RNG state.
        trainer_state: JSON-serialisable step/scheduler/fingerprint data (rank 0 writes it).
        keep_last: complete checkpoints to keep (>= 1).

    Returns:
        The final directory ``step_NNNNNNNN``.
    """
    final = ckpt_root / f"step_{step:08d}"
    tmp = ckpt_root / f"step_{step:08d}.tmp"
    if rank == 0:
        ckpt_root.mkdir(parents=True, exist_ok=True)
        if tmp.exists():
            shutil.rmtree(tmp)
        if final.exists():  # an older, possibly incomplete, copy of the same step
            shutil.rmtree(final)
        tmp.mkdir()
    barrier()
    if optim_state is not None:
        _torch_save_atomic(optim_state, tmp / f"optim_rank{rank:05d}.pt")
    _torch_save_atomic(rng_state, tmp / f"rng_rank{rank:05d}.pt")
    if rank == 0:
        assert model_state is not None
        _torch_save_atomic(model_state, tmp / "model.pt")
        atomic_write_json(tmp / "trainer.json", {**trainer_state, "step": step, "world_size": world_size})
    barrier()
    if rank == 0:
        tmp.rename(final)
        fsync_dir(ckpt_root)
        atomic_write_bytes(final / MARKER, b"ok\n")
        complete = scan(ckpt_root, warn=lambda m: None)
        for old in complete[:-keep_last] if keep_last > 0 else []:
            shutil.rmtree(old.path, ignore_errors=True)
        for stale in ckpt_root.glob("step_*.tmp"):
            shutil.rmtree(stale, ignore_errors=True)
    barrier()
    return final


def load_trainer_state(path: Path) -> dict[str, Any]:
    """The ``trainer.json`` of the complete checkpoint directory ``path`` (its ``step``,
    scheduler state, world size and run fingerprint)."""
    return json.loads((path / "trainer.json").read_text())


def load_file(ckpt: CheckpointInfo, name: str) -> Any:
    """``torch.load`` one file of a checkpoint onto CPU (our own files: ``weights_only=False``
    is needed for the RNG/optimizer state, which holds NumPy and Python objects)."""
    return torch.load(ckpt.path / name, map_location="cpu", weights_only=False)
