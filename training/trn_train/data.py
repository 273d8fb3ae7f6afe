"""Data preparation and loading: tokenize, pack into fixed-length sequences, shard, verify.

On-disk format (a directory, on FSx in the cluster)::

    manifest.json           written last, atomically: its presence means "complete"
    shard_00000.bin         raw little-endian token ids, shape (num_sequences, seq_len)
    shard_00001.bin         dtype uint16 when the vocabulary fits, else uint32
    ...

``manifest.json`` holds ``seq_len``, ``dtype``, ``vocab_size``, ``task_format`` (``clm``:
documents joined with EOS; ``mlm``: ``[CLS] tokens [SEP]`` per sequence), the special token
ids, and per shard ``name``, ``num_sequences``, ``bytes`` and ``sha256``. Loading checks every
shard's size (truncation) and SHA-256 (corruption) and names the bad shard.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

import numpy as np

from trn_train.atomic import atomic_write, atomic_write_json
from trn_train.errors import InputError, DataError

MANIFEST = "manifest.json"
FORMAT = "trn_train.packed/1"
_READ_BLOCK = 8 << 20
_TEXT_PIECE_CHARS = 1 << 20


# --------------------------------------------------------------------------- tokenizers


def train_tokenizer(
    inputs: Sequence[str],
    out_dir: str | os.PathLike[str],
    kind: str = "bpe",
    vocab_size: int = 2000,
) -> Path:
    """Train a small tokenizer on local text with the ``tokenizers`` library and save it.

    The result loads with ``transformers.AutoTokenizer.from_pretrained(out_dir)`` like any
    Hugging Face tokenizer (offline stand-in for e.g. the Llama 3 or BERT tokenizers).

    Args:
        inputs: text files, directories (searched recursively) or glob patterns.
        out_dir: directory to write ``tokenizer.json`` and ``tokenizer_config.json`` into.
        kind: ``"bpe"`` (byte-level BPE with ``<|endoftext|>``, Llama/GPT style) or
            ``"wordpiece"`` (BERT style, with ``[CLS] [SEP] [MASK] [PAD] [UNK]``).
        vocab_size: target vocabulary size (>= 300).

    Raises:
        InputError: bad ``kind`` or ``vocab_size``; DataError: no input files.
    """
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    if kind not in ("bpe", "wordpiece"):
        raise InputError("--kind", kind, "'bpe' or 'wordpiece'")
    if vocab_size < 300:
        raise InputError("--vocab-size", vocab_size, "an integer >= 300")
    files = [str(p) for p in expand_inputs(inputs)]
    if kind == "bpe":
        tok = Tokenizer(models.BPE())
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tok.decoder = decoders.ByteLevel()
        trainer = trainers.BpeTrainer(
            vocab_size=vocab_size,
            special_tokens=["<|endoftext|>", "<pad>"],
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
            show_progress=False,
        )
        tok.train(files, trainer)
        fast = PreTrainedTokenizerFast(
            tokenizer_object=tok, eos_token="<|endoftext|>", bos_token="<|endoftext|>",
            pad_token="<pad>",
        )
    else:
        tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
        tok.normalizer = normalizers.BertNormalizer(lowercase=True)
        tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        tok.decoder = decoders.WordPiece()
        trainer = trainers.WordPieceTrainer(
            vocab_size=vocab_size,
            special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"],
            show_progress=False,
        )
        tok.train(files, trainer)
        fast = PreTrainedTokenizerFast(
            tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]",
            sep_token="[SEP]", mask_token="[MASK]",
        )
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    fast.save_pretrained(str(out))
    return out


def load_tokenizer(name_or_path: str) -> Any:
    """Load a Hugging Face tokenizer (local directory, or hub name when online).

    Raises:
        InputError: it cannot be loaded; the message keeps the library's reason.
    """
    from transformers import AutoTokenizer

    try:
        return AutoTokenizer.from_pretrained(name_or_path)
    except Exception as e:  # noqa: BLE001 - many exception types; all mean "cannot load"
        raise InputError(
            "--tokenizer", name_or_path,
            "a local tokenizer directory or a Hugging Face tokenizer name reachable from here",
            hint=f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}",
        ) from e


# --------------------------------------------------------------------------- inputs


def expand_inputs(inputs: Sequence[str]) -> list[Path]:
    """Expand files, directories (recursive, sorted) and glob patterns to a file list.

    Raises:
        DataError: an input names nothing, or the result is empty.
    """
    if not inputs:
        raise DataError("--input: give at least one text file, directory or glob pattern")
    files: list[Path] = []
    for item in inputs:
        p = Path(item)
        if p.is_file():
            files.append(p)
        elif p.is_dir():
            found = sorted(q for q in p.rglob("*") if q.is_file())
            if not found:
                raise DataError(f"--input directory {item!r} contains no files")
            files.extend(found)
        else:
            matched = sorted(Path(m) for m in glob.glob(item, recursive=True) if Path(m).is_file())
            if not matched:
                raise DataError(f"--input {item!r} does not exist (no file, directory or glob match)")
            files.extend(matched)
    return files


def iter_local_texts(files: Sequence[Path]) -> Iterator[tuple[str, bool]]:
    """Yield ``(text_piece, is_document_end)``: each file is one document, read in ~1 MiB
    pieces at line boundaries so a large file never sits in memory whole.

    Raises:
        DataError: a file is not UTF-8 text (the file is named).
    """
    for path in files:
        try:
            with open(path, encoding="utf-8") as f:
                buf: list[str] = []
                size = 0
                for line in f:
                    buf.append(line)
                    size += len(line)
                    if size >= _TEXT_PIECE_CHARS:
                        yield "".join(buf), False
                        buf, size = [], 0
                yield "".join(buf), True
        except UnicodeDecodeError as e:
            raise DataError(f"input file {str(path)!r} is not UTF-8 text ({e.reason} at byte {e.start})") from e


def iter_hf_dataset(name: str, split: str, column: str, config: str | None = None) -> Iterator[tuple[str, bool]]:
    """Yield ``(text, True)`` per record of a Hugging Face dataset (streamed; needs internet
    and the ``datasets`` package, which the Neuron training image ships).

    Raises:
        InputError: ``datasets`` missing, dataset cannot be opened, or no ``column``.
    """
    try:
        import datasets  # type: ignore[import-not-found]
    except ImportError as e:
        raise InputError("--hf-dataset", name, "usable only with the 'datasets' package installed") from e
    try:
        ds = datasets.load_dataset(name, config, split=split, streaming=True)
    except Exception as e:  # noqa: BLE001
        raise InputError("--hf-dataset", name, "a dataset reachable from here", hint=str(e)[:200]) from e
    for rec in ds:
        if column not in rec:
            raise InputError("--hf-text-column", column, "one of " + ", ".join(map(str, rec)))
        yield str(rec[column]), True


# --------------------------------------------------------------------------- prepare


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


# --------------------------------------------------------------------------- load


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
