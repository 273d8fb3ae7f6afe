"""The raw text that ``train-tokenizer`` learns from and ``prepare-data`` tokenizes: local
files, directories and globs, or a streamed Hugging Face dataset, as ``(text, is_document_end)``
pieces."""

from __future__ import annotations

import glob
from pathlib import Path
from typing import Iterator, Sequence

from trn_train.errors import InputError, DataError

_TEXT_PIECE_CHARS = 1 << 20


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
