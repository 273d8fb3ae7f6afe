"""Checkpoints that are either complete and verified, or not loaded.

Layout under ``<output-dir>/checkpoints``::

    step_00000050/            a complete checkpoint
        dcp/                  native backend (layout "dcp"): model and optimizer state written by
            .metadata         torch.distributed.checkpoint (DCP), one file per rank
            __0_0.distcp      (``__<rank>_<n>.distcp``; sharded DTensors under FSDP2), its
            __1_0.distcp      .metadata by rank 0
        model.pt              xla backend (layout "torch"): model state dict (rank 0)
        optim_rank00000.pt    optimizer state: one file per rank with ZeRO-1 shards,
                              rank 0 only when the state is replicated
        rng_rank00000.pt      RNG state of each rank (both layouts)
        trainer.json          step, layout, scheduler state, hyperparameters, world size,
                              run fingerprint
        manifest.json         size (bytes) and SHA-256 of every file above
        COMPLETE              marker, written last
    step_00000060.tmp/        being written (or left by a crash): ignored

Protocol (:func:`save`): rank 0 creates ``step_N.tmp``; every rank writes its files there
(the torch layout's each atomically, hashed from the bytes in memory; DCP's by ``dcp.save``,
then hashed by the rank that wrote them) and a ``files_rankNNNNN.json`` with their sizes and
SHA-256; barrier; rank 0 merges those into ``manifest.json`` (and deletes them), renames the
directory to ``step_N``, writes ``COMPLETE`` atomically, deletes stale ``.tmp`` directories and
all but the newest ``keep_last`` complete checkpoints up to step N; barrier. A directory
without ``COMPLETE`` is never loaded.

Loading (:func:`open_checkpoint`, :meth:`Checkpoint.verify`, :meth:`Checkpoint.load`) checks
each file's size and SHA-256 against the manifest before it is read, so a truncated or corrupt
file raises :class:`~trn_train.errors.CheckpointError` naming it instead of a traceback from
``torch.load`` or DCP.
"""

from __future__ import annotations

import hashlib
import io
import json
import re
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import torch

from trn_train.atomic import atomic_write_bytes, fsync_dir, json_bytes
from trn_train.errors import CheckpointError

MARKER = "COMPLETE"
MANIFEST = "manifest.json"
FORMAT = "trn_train.checkpoint/1"
_NAME = re.compile(r"^step_(\d{8})$")
_RANK_FILES = "files_rank{:05d}.json"
_READ_BLOCK = 8 << 20
LAYOUT_TORCH = "torch"
"""``trainer.json`` ``layout`` of the xla backend: ``torch.save`` files (``model.pt``,
``optim_rankNNNNN.pt``); also what a checkpoint without ``layout`` (older trn_train) holds."""
LAYOUT_DCP = "dcp"
"""``trainer.json`` ``layout`` of the native backend: a DCP directory :data:`DCP_DIR`."""
DCP_DIR = "dcp"


@dataclass(frozen=True)
class CheckpointInfo:
    """A complete checkpoint directory and the step it was taken after."""

    path: Path
    step: int


def scan(ckpt_root: Path, warn: Callable[[str], None] | None = None) -> list[CheckpointInfo]:
    """Complete checkpoints under ``ckpt_root``, oldest first.

    Directories that are half-written (``.tmp`` suffix, or no ``COMPLETE`` marker) are
    skipped, and ``warn`` (default: print to stderr) is told about each one. Complete ones
    are listed unverified: :func:`open_checkpoint` checks them.
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


FileEntries = dict[str, dict[str, Any]]
"""Manifest entries: file name relative to the checkpoint directory -> ``{"bytes", "sha256"}``."""


def write_torch_file(directory: Path, name: str, obj: Any) -> FileEntries:
    """``torch.save`` ``obj`` to ``directory/name`` atomically; return its manifest entry
    (hashed from the bytes in memory: no second read)."""
    buf = io.BytesIO()
    torch.save(obj, buf)
    data = buf.getvalue()
    atomic_write_bytes(directory / name, data)
    return {name: {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}}


def hash_files(directory: Path, names: list[str]) -> FileEntries:
    """Manifest entries of files another writer (DCP) made, read back in 8 MiB blocks.

    Args:
        names: paths relative to ``directory`` (the checkpoint directory).
    """
    entries: FileEntries = {}
    for name in names:
        h = hashlib.sha256()
        size = 0
        with open(directory / name, "rb") as f:
            while block := f.read(_READ_BLOCK):
                h.update(block)
                size += len(block)
        entries[name] = {"bytes": size, "sha256": h.hexdigest()}
    return entries


def save(
    ckpt_root: Path, step: int, rank: int, world_size: int, barrier: Callable[[], None],
    write: Callable[[Path], FileEntries], trainer_state: dict[str, Any], keep_last: int,
) -> Path:
    """Write the checkpoint of ``step`` collectively (every rank calls this).

    Args:
        write: called on every rank with the ``.tmp`` directory; writes this rank's files
            (collectively, e.g. ``dcp.save``) and returns their manifest entries.
        trainer_state: JSON-serialisable step/scheduler/fingerprint data (rank 0 writes it).
        keep_last: complete checkpoints to keep (>= 1) among those up to ``step``; newer ones
            (left by a run that fell back past them) stay until this run reaches their step
            and replaces them.

    Returns:
        The final directory ``step_NNNNNNNN``.
    """
    final = ckpt_root / f"step_{step:08d}"
    tmp = ckpt_root / f"step_{step:08d}.tmp"
    if rank == 0:
        ckpt_root.mkdir(parents=True, exist_ok=True)
        if tmp.exists():
            shutil.rmtree(tmp)
        if final.exists():  # an older, possibly incomplete or damaged, copy of the same step
            shutil.rmtree(final)
        tmp.mkdir()
    barrier()
    files = write(tmp)
    if rank == 0:
        trainer = json_bytes({**trainer_state, "step": step, "world_size": world_size})
        atomic_write_bytes(tmp / "trainer.json", trainer)
        files["trainer.json"] = {"bytes": len(trainer), "sha256": hashlib.sha256(trainer).hexdigest()}
    else:
        atomic_write_bytes(tmp / _RANK_FILES.format(rank), json_bytes(files))
    barrier()
    if rank == 0:
        for r in range(1, world_size):
            part = tmp / _RANK_FILES.format(r)
            files.update(json.loads(part.read_text()))
            part.unlink()
        atomic_write_bytes(tmp / MANIFEST, json_bytes({"format": FORMAT, "step": step, "world_size": world_size,
                                                       "files": files}))
        tmp.rename(final)
        fsync_dir(ckpt_root)
        atomic_write_bytes(final / MARKER, b"ok\n")
        upto = [c for c in scan(ckpt_root, warn=lambda m: None) if c.step <= step]
        for old in upto[:-keep_last] if keep_last > 0 else []:
            shutil.rmtree(old.path, ignore_errors=True)
        for stale in ckpt_root.glob("step_*.tmp"):
            shutil.rmtree(stale, ignore_errors=True)
    barrier()
    return final


class Checkpoint:
    """A complete checkpoint opened for reading; every file read is verified.

    Attributes:
        info: its directory and step.
        files: manifest entries, file name -> ``{"bytes": int, "sha256": str}``; ``None`` for a
            checkpoint written before checksums (no ``manifest.json``), whose files are read
            unverified (a damaged one still fails to load).
    """

    def __init__(self, info: CheckpointInfo, files: dict[str, dict[str, Any]] | None) -> None:
        self.info = info
        self.files = files

    @property
    def verified(self) -> bool:
        """True when the files are checked against a manifest."""
        return self.files is not None

    @property
    def path(self) -> Path:
        return self.info.path

    def has(self, name: str) -> bool:
        """True when the manifest lists ``name`` (without a manifest: when the file exists)."""
        return (self.path / name).is_file() if self.files is None else name in self.files

    def _error(self, name: str, problem: str) -> CheckpointError:
        return CheckpointError(f"{self.path}: {name} {problem}", path=self.path, file=name)

    def verify(self, name: str) -> Path:
        """Check ``name`` against the manifest (size first, then SHA-256 in 8 MiB blocks, so a
        large file is never held in memory twice); return its path.

        Raises:
            CheckpointError: not in the manifest, missing, unreadable, truncated (size differs)
                or corrupt (SHA-256 differs).
        """
        if self.files is None:
            if not (self.path / name).is_file():
                raise self._error(name, "is missing")
            return self.path / name
        entry = self.files.get(name)
        if entry is None:
            raise self._error(name, f"is not listed in its {MANIFEST}")
        path = self.path / name
        h = hashlib.sha256()
        try:
            size = path.stat().st_size
            if size != entry["bytes"]:
                raise self._error(name, f"is truncated or has the wrong size: {size} bytes on disk, "
                                        f"{MANIFEST} says {entry['bytes']}")
            with open(path, "rb") as f:
                while block := f.read(_READ_BLOCK):
                    h.update(block)
        except FileNotFoundError:
            raise self._error(name, "is missing") from None
        except OSError as e:
            raise self._error(name, f"cannot be read: {e.strerror or e}") from None
        digest = h.hexdigest()
        if digest != entry["sha256"]:
            raise self._error(name, f"is corrupt: SHA-256 {digest[:16]}… differs from the "
                                    f"{MANIFEST}'s {entry['sha256'][:16]}…")
        return path

    def load(self, name: str) -> Any:
        """``torch.load`` the verified file ``name`` onto CPU (our own files: ``weights_only=False``
        is needed for the RNG/optimizer state, which holds NumPy and Python objects). The read
        after :meth:`verify` is served mostly from the page cache, which the node's ranks share.

        Raises:
            CheckpointError: see :meth:`verify`, or the verified file does not unpickle (e.g. a
                checkpoint written by an incompatible torch version).
        """
        path = self.verify(name)
        try:
            return torch.load(path, map_location="cpu", weights_only=False)
        except Exception as e:  # noqa: BLE001 - any unpickling failure means "cannot resume from it"
            raise self._error(name, f"cannot be loaded: {type(e).__name__}: {e}") from None

    def trainer_state(self) -> dict[str, Any]:
        """The verified ``trainer.json``: ``step``, scheduler state, hyperparameters, world size
        and run fingerprint.

        Raises:
            CheckpointError: see :meth:`verify`, or it is not a JSON object.
        """
        try:
            state = json.loads(self.verify("trainer.json").read_bytes())
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise self._error("trainer.json", f"is not valid JSON: {e}") from None
        if not isinstance(state, dict) or not isinstance(state.get("step"), int):
            raise self._error("trainer.json", "has no integer 'step'")
        return state


def open_checkpoint(info: CheckpointInfo) -> Checkpoint:
    """Open the complete checkpoint ``info`` and read its manifest.

    A checkpoint without ``manifest.json`` was written by a trn_train from before checksums
    (``COMPLETE`` is written after the manifest, so a checkpoint of this version always has
    one): it opens unverified (:attr:`Checkpoint.verified` is false) rather than failing a
    resume the user expects to work.

    Raises:
        CheckpointError: ``manifest.json`` unreadable, not valid JSON, or without a ``files``
            table of ``{bytes, sha256}`` entries.
    """
    mpath = info.path / MANIFEST
    try:
        manifest = json.loads(mpath.read_bytes())
    except FileNotFoundError:
        return Checkpoint(info, None)
    except OSError as e:
        raise CheckpointError(f"{info.path}: {MANIFEST} cannot be read: {e.strerror or e}",
                              path=info.path, file=MANIFEST) from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise CheckpointError(f"{info.path}: {MANIFEST} is truncated or corrupt (not valid JSON: {e})",
                              path=info.path, file=MANIFEST) from None
    files = manifest.get("files") if isinstance(manifest, dict) else None
    ok = (isinstance(files, dict) and manifest.get("format") == FORMAT and all(
        isinstance(e, dict) and isinstance(e.get("bytes"), int) and isinstance(e.get("sha256"), str)
        for e in files.values()))
    if not ok:
        raise CheckpointError(f"{info.path}: {MANIFEST} is not a {FORMAT} manifest of files with bytes and sha256",
                              path=info.path, file=MANIFEST)
    return Checkpoint(info, files)
