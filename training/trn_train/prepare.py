"""``python -m trn_train prepare-data``: tokenize a corpus, pack it into fixed-length
sequences and write the shards and their manifest (the format is :mod:`trn_train.data`'s)."""

from __future__ import annotations

import hashlib
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from trn_train.atomic import atomic_write, atomic_write_json
from trn_train.corpus import expand_inputs, iter_hf_dataset, iter_local_texts
from trn_train.data import FORMAT, MANIFEST
from trn_train.errors import InputError, DataError
from trn_train.tokenizer import load_tokenizer


@dataclass(frozen=True)
class PrepareResult:
    """What :func:`prepare_data` wrote: ``num_sequences`` of ``seq_len`` tokens in ``num_shards``."""

    out_dir: Path
    num_sequences: int
    num_shards: int
    seq_len: int
    num_tokens: int
    dropped_tokens: int


def _special_ids(tok: Any, task_format: str) -> dict[str, int]:
    ids: dict[str, int] = {}
    for key in ("eos", "bos", "pad", "cls", "sep", "mask", "unk"):
        v = getattr(tok, f"{key}_token_id", None)
        if v is not None:
            ids[key] = int(v)
    if task_format == "clm" and "eos" not in ids:
        raise InputError("--tokenizer", getattr(tok, "name_or_path", "?"),
                          "a tokenizer with an EOS token for --format clm")
    if task_format == "mlm":
        missing = [k for k in ("cls", "sep", "mask", "pad") if k not in ids]
        if missing:
            raise InputError("--tokenizer", getattr(tok, "name_or_path", "?"),
                              "a tokenizer with [CLS] [SEP] [MASK] [PAD] tokens for --format mlm",
                              hint="missing: " + ", ".join(missing))
    return ids


def prepare_data(
    out_dir: str | os.PathLike[str],
    tokenizer: str,
    seq_len: int,
    inputs: Sequence[str] = (),
    hf_dataset: str | None = None,
    hf_split: str = "train",
    hf_text_column: str = "text",
    hf_config: str | None = None,
    task_format: str = "clm",
    shard_sequences: int = 4096,
    overwrite: bool = False,
    progress: bool = True,
) -> PrepareResult:
    """Tokenize a corpus, pack it into ``seq_len``-token sequences and write verified shards.

    Args:
        out_dir: output directory (created). Must be empty or hold an older prepared set
            (then ``overwrite=True`` is required).
        tokenizer: Hugging Face tokenizer directory or name.
        seq_len: tokens per packed sequence (8 .. 1,048,576).
        inputs: local text files/directories/globs (each file = one document).
        hf_dataset: a Hugging Face dataset name instead of ``inputs`` (needs internet).
        task_format: ``"clm"`` (docs joined with EOS, chunked) or ``"mlm"`` (each sequence is
            ``[CLS] + seq_len-2 tokens + [SEP]``, docs joined with ``[SEP]``).
        shard_sequences: sequences per shard file (>= 1).
        overwrite: replace an existing prepared set in ``out_dir``.
        progress: show a tqdm progress bar (stderr).

    Returns:
        :class:`PrepareResult`. Tokens after the last full sequence are dropped (counted).

    Raises:
        InputError: bad argument (named); DataError: unreadable input or fewer tokens than
        one sequence.
    """
    from tqdm import tqdm

    if task_format not in ("clm", "mlm"):
        raise InputError("--format", task_format, "'clm' or 'mlm'")
    if not isinstance(seq_len, int) or not 8 <= seq_len <= (1 << 20):
        raise InputError("--seq-len", seq_len, "an integer in 8..1048576")
    if shard_sequences < 1:
        raise InputError("--shard-sequences", shard_sequences, "an integer >= 1")
    if bool(inputs) == bool(hf_dataset):
        raise InputError("--input/--hf-dataset", (list(inputs), hf_dataset), "exactly one of the two")
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise InputError("--out", str(out), "a directory (it is a file)")
    if out.is_dir() and any(out.iterdir()):
        if not overwrite:
            raise InputError("--out", str(out), "an empty or new directory",
                              hint="pass --overwrite to replace the prepared data in it")
        if not (out / MANIFEST).exists() and any(not p.name.startswith(("shard_", ".")) for p in out.iterdir()):
            raise InputError("--out", str(out), "a directory holding only prepared data to overwrite",
                              hint="it has other files; refusing to delete them")
    if inputs:
        files = expand_inputs(inputs)  # fail on bad paths before loading the tokenizer
        source = iter_local_texts(files)
        sources = [str(f) for f in files]
        total = sum(f.stat().st_size for f in files)
        unit = "B"
    else:
        source = iter_hf_dataset(hf_dataset, hf_split, hf_text_column, hf_config)  # type: ignore[arg-type]
        sources = [f"hf:{hf_dataset}:{hf_split}:{hf_text_column}"]
        total, unit = None, "doc"

    tok = load_tokenizer(tokenizer)
    ids = _special_ids(tok, task_format)
    vocab_size = int(len(tok))
    dtype = np.uint16 if vocab_size <= np.iinfo(np.uint16).max + 1 else np.uint32

    out.mkdir(parents=True, exist_ok=True)
    (out / MANIFEST).unlink(missing_ok=True)  # invalid while we rewrite
    for old in out.glob("shard_*.bin"):
        old.unlink()

    body = seq_len if task_format == "clm" else seq_len - 2
    sep_id = ids["eos"] if task_format == "clm" else ids["sep"]
    pending: list[np.ndarray] = []
    pending_len = 0
    shard_rows: list[np.ndarray] = []
    shard_rows_n = 0
    shards: list[dict[str, Any]] = []
    n_seq = 0

    def flush_shard() -> None:
        nonlocal shard_rows, shard_rows_n
        if not shard_rows_n:
            return
        arr = np.ascontiguousarray(np.concatenate(shard_rows).astype(dtype).reshape(-1, seq_len))
        data = arr.astype(arr.dtype.newbyteorder("<"), copy=False).tobytes()
        name = f"shard_{len(shards):05d}.bin"
        atomic_write(out / name, lambda f: f.write(data))
        shards.append({"name": name, "num_sequences": int(arr.shape[0]), "bytes": len(data),
                       "sha256": hashlib.sha256(data).hexdigest()})
        shard_rows, shard_rows_n = [], 0

    def emit(tokens: np.ndarray) -> None:
        nonlocal pending_len, shard_rows_n, n_seq
        pending.append(tokens)
        pending_len += tokens.size
        if pending_len < body:
            return
        flat = np.concatenate(pending)
        n = flat.size // body
        rows = flat[: n * body].reshape(n, body)
        if task_format == "mlm":
            rows = np.concatenate(
                [np.full((n, 1), ids["cls"], flat.dtype), rows, np.full((n, 1), ids["sep"], flat.dtype)], axis=1)
        rest = flat[n * body:]
        pending.clear()
        pending.append(rest)
        pending_len = rest.size
        start = 0
        while start < n:
            take = min(n - start, shard_sequences - shard_rows_n)
            shard_rows.append(rows[start:start + take])
            shard_rows_n += take
            n_seq += take
            start += take
            if shard_rows_n >= shard_sequences:
                flush_shard()

    bar = tqdm(total=total, unit=unit, unit_scale=True, desc="prepare-data", disable=not progress,
               file=sys.stderr)
    batch: list[tuple[str, bool]] = []

    def run_batch() -> None:
        enc = tok([t for t, _ in batch], add_special_tokens=False)["input_ids"]
        for (text, end), ids_ in zip(batch, enc):
            arr = np.asarray(ids_, dtype=np.int64)
            if end:
                arr = np.append(arr, sep_id)
            if arr.size:
                emit(arr)
            bar.update(len(text.encode("utf-8")) if unit == "B" else int(end))
        batch.clear()

    for piece in source:
        batch.append(piece)
        if len(batch) >= 64:
            run_batch()
    if batch:
        run_batch()
    bar.close()
    flush_shard()
    if n_seq == 0:
        raise DataError(
            f"the corpus has {pending_len} tokens, fewer than one sequence of --seq-len {seq_len}; "
            "give more text or a smaller --seq-len")
    manifest = {
        "format": FORMAT,
        "task_format": task_format,
        "seq_len": seq_len,
        "dtype": np.dtype(dtype).name,
        "vocab_size": vocab_size,
        "special_tokens": ids,
        "tokenizer": str(tokenizer),
        "sources": sources[:1000],
        "num_sources": len(sources),
        "num_sequences": n_seq,
        "num_tokens": n_seq * seq_len,
        "dropped_tokens": int(pending_len),
        "shards": shards,
    }
    atomic_write_json(out / MANIFEST, manifest)
    return PrepareResult(out, n_seq, len(shards), seq_len, n_seq * seq_len, int(pending_len))
