"""Prepared data: its on-disk format, verified loading and the order of global batches.

On-disk format (a directory, on FSx in the cluster)::

    manifest.json           written last, atomically: its presence means "complete"
    shard_00000.bin         raw little-endian token ids, shape (num_sequences, seq_len)
    shard_00001.bin         dtype uint16 when the vocabulary fits, else uint32
    ...

``manifest.json`` holds ``seq_len``, ``dtype``, ``vocab_size``, ``task_format`` (``clm``:
documents joined with EOS; ``mlm``: ``[CLS] tokens [SEP]`` per sequence), the special token
ids, and per shard ``name``, ``num_sequences``, ``bytes`` and ``sha256``. Loading checks every
shard's size (truncation) and SHA-256 (corruption) and names the bad shard.

Writing it is :mod:`trn_train.prepare` (``python -m trn_train prepare-data``).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any, Iterable

import numpy as np

from trn_train.errors import InputError, DataError

MANIFEST = "manifest.json"
FORMAT = "trn_train.packed/1"
_READ_BLOCK = 8 << 20


def sha256_file(path: Path) -> str:
    """Hex SHA-256 of a file, read in 8 MiB blocks."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(_READ_BLOCK):
            h.update(block)
    return h.hexdigest()


def _is_int(v: object, minimum: int) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= minimum


def check_manifest(m: Any, mpath: Path) -> None:
    """Check a prepared-data ``manifest.json`` (already parsed) has every key with a usable value.

    Keys: ``format`` (:data:`FORMAT`), ``task_format`` (``clm``/``mlm``), ``seq_len`` (>= 1),
    ``dtype`` (``uint16``/``uint32``), ``vocab_size`` (>= 1), ``num_sequences`` (>= 0),
    ``special_tokens`` (optional object of ids; ``mlm`` needs ``cls``, ``sep``, ``mask``, ``pad``)
    and ``shards``: a list of ``{name, num_sequences, bytes, sha256}`` where ``name`` is a plain
    file name in the data directory (never a path out of it).

    Raises:
        DataError: ``<manifest>: missing key 'k'`` or ``<manifest>: k must be <allowed>, got: <value>``.
    """
    def bad(key: str, allowed: str, value: object) -> DataError:
        return DataError(f"{mpath}: {key} must be {allowed}, got: {value!r}; re-run prepare-data")

    if not isinstance(m, dict):
        raise bad("the manifest", "a JSON object", type(m).__name__)
    for key in ("format", "task_format", "seq_len", "dtype", "vocab_size", "num_sequences", "shards"):
        if key not in m:
            raise DataError(f"{mpath}: missing key {key!r}; re-run prepare-data")
    if m["format"] != FORMAT:
        raise bad("format", repr(FORMAT), m["format"])
    if m["task_format"] not in ("clm", "mlm"):
        raise bad("task_format", "'clm' or 'mlm'", m["task_format"])
    for key, minimum in (("seq_len", 1), ("vocab_size", 1), ("num_sequences", 0)):
        if not _is_int(m[key], minimum):
            raise bad(key, "a positive integer" if minimum else "an integer >= 0", m[key])
    if m["dtype"] not in ("uint16", "uint32"):
        raise bad("dtype", "'uint16' or 'uint32'", m["dtype"])
    special = m.get("special_tokens", {})
    if not isinstance(special, dict) or not all(_is_int(v, 0) for v in special.values()):
        raise bad("special_tokens", "an object of token ids", special)
    if m["task_format"] == "mlm" and not {"cls", "sep", "mask", "pad"} <= special.keys():
        raise bad("special_tokens", "ids of 'cls', 'sep', 'mask' and 'pad' for task_format mlm", special)
    if not isinstance(m["shards"], list):
        raise bad("shards", "a list", m["shards"])
    for i, sh in enumerate(m["shards"]):
        if not isinstance(sh, dict):
            raise bad(f"shards[{i}]", "an object", sh)
        for key in ("name", "num_sequences", "bytes", "sha256"):
            if key not in sh:
                raise DataError(f"{mpath}: shards[{i}] is missing key {key!r}; re-run prepare-data")
        name = sh["name"]
        if not isinstance(name, str) or name in ("", ".", "..") or Path(name).name != name:
            raise bad(f"shards[{i}].name", "a file name in the data directory", name)
        for key in ("num_sequences", "bytes"):
            if not _is_int(sh[key], 0):
                raise bad(f"shards[{i}].{key}", "an integer >= 0", sh[key])
        if not (isinstance(sh["sha256"], str) and len(sh["sha256"]) == 64):
            raise bad(f"shards[{i}].sha256", "64 hex digits", sh["sha256"])


class PackedDataset:
    """Read-only view of a prepared data directory: ``num_sequences`` rows of ``seq_len`` ids.

    Opening checks the manifest and every shard's size and (``verify=True``) SHA-256, so a
    truncated or corrupt shard is reported by name before training starts. Shards are
    memory-mapped; :meth:`get` gathers rows by global index.

    Raises (from ``__init__``):
        DataError: directory or manifest missing/unreadable, a manifest key missing or bad
            (:func:`check_manifest`), shard missing, truncated (size differs from the manifest)
            or corrupt (SHA-256 differs).
    """

    def __init__(self, data_dir: str | os.PathLike[str], verify: bool = True) -> None:
        self.data_dir = Path(data_dir)
        if not self.data_dir.is_dir():
            raise DataError(
                f"--data-dir {str(self.data_dir)!r} does not exist or is not a directory; "
                "create it with `python -m trn_train prepare-data --out DIR ...`")
        mpath = self.data_dir / MANIFEST
        if not mpath.is_file():
            raise DataError(
                f"--data-dir {str(self.data_dir)!r} has no {MANIFEST}: not prepared data, or "
                "prepare-data did not finish")
        try:
            self.manifest: dict[str, Any] = json.loads(mpath.read_text())
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise DataError(f"{mpath} is not valid JSON: {e}") from e
        check_manifest(self.manifest, mpath)
        self.seq_len = self.manifest["seq_len"]
        self.dtype = np.dtype(self.manifest["dtype"]).newbyteorder("<")
        self.vocab_size = self.manifest["vocab_size"]
        self.task_format = self.manifest["task_format"]
        self.special_tokens: dict[str, int] = dict(self.manifest.get("special_tokens", {}))
        row_bytes = self.seq_len * self.dtype.itemsize
        self._maps: list[np.ndarray] = []
        counts = []
        for sh in self.manifest["shards"]:
            p = self.data_dir / sh["name"]
            if not p.is_file():
                raise DataError(f"shard {sh['name']} is missing from {self.data_dir}", shard=sh["name"])
            size = p.stat().st_size
            if size != sh["bytes"] or sh["bytes"] != sh["num_sequences"] * row_bytes:
                raise DataError(
                    f"shard {sh['name']} is truncated or has the wrong size: {size} bytes on disk, "
                    f"manifest says {sh['bytes']}", shard=sh["name"])
            if verify:
                digest = sha256_file(p)
                if digest != sh["sha256"]:
                    raise DataError(
                        f"shard {sh['name']} is corrupt: SHA-256 {digest[:16]}… differs from the "
                        f"manifest's {sh['sha256'][:16]}…; re-run prepare-data", shard=sh["name"])
            self._maps.append(np.memmap(p, dtype=self.dtype, mode="r", shape=(sh["num_sequences"], self.seq_len)))
            counts.append(sh["num_sequences"])
        self._starts = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        self.num_sequences = int(self._starts[-1])
        if self.num_sequences != self.manifest["num_sequences"]:
            raise DataError(f"{mpath}: shards hold {self.num_sequences} sequences, manifest says "
                            f"{self.manifest['num_sequences']}")

    def __len__(self) -> int:
        return self.num_sequences

    def get(self, indices: Iterable[int] | np.ndarray, seq_len: int | None = None) -> np.ndarray:
        """Rows at global ``indices`` as an ``int64`` array of shape ``(len(indices), seq_len)``.

        ``seq_len`` (default: the data's) takes the first ``seq_len`` tokens of each row.
        """
        idx = np.asarray(indices, dtype=np.int64)
        t = self.seq_len if seq_len is None else seq_len
        out = np.empty((idx.size, t), dtype=np.int64)
        shard = np.searchsorted(self._starts, idx, side="right") - 1
        for k, (s, i) in enumerate(zip(shard, idx)):
            out[k] = self._maps[s][i - self._starts[s], :t]
        return out


class GlobalBatchSampler:
    """Deterministic global-batch order: a seeded permutation per epoch, consumed in order.

    Step ``s`` uses global sequences ``perm_e[w*G:(w+1)*G]`` where ``e = s // steps_per_epoch``
    and ``w = s % steps_per_epoch``. Because the order depends only on (seed, step), the data
    position of a resumed run is just its step, and any world size sees the same global batch.

    Raises (from ``__init__``):
        InputError: the data holds fewer sequences than one global batch.
    """

    def __init__(self, num_sequences: int, global_batch_size: int, seed: int) -> None:
        if num_sequences < global_batch_size:
            raise InputError("--global-batch-size", global_batch_size,
                              f"at most the number of prepared sequences ({num_sequences})",
                              hint="prepare more data or lower the batch")
        self.n = num_sequences
        self.g = global_batch_size
        self.seed = seed
        self.steps_per_epoch = num_sequences // global_batch_size
        self._cache: tuple[int, np.ndarray] | None = None

    def global_indices(self, step: int) -> np.ndarray:
        """Global sequence indices of ``step`` (shape ``(global_batch_size,)``)."""
        epoch, within = divmod(step, self.steps_per_epoch)
        if self._cache is None or self._cache[0] != epoch:
            self._cache = (epoch, np.random.default_rng([self.seed, epoch]).permutation(self.n))
        return self._cache[1][within * self.g:(within + 1) * self.g]

    def rank_indices(self, step: int, rank: int, world: int) -> np.ndarray:
        """This rank's contiguous slice of the global batch of ``step``."""
        per = self.g // world
        return self.global_indices(step)[rank * per:(rank + 1) * per]
