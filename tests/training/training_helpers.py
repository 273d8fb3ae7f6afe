"""Helpers shared by the CPU training tests (importable in any pytest import mode:
conftest.py puts this folder on sys.path)."""

from __future__ import annotations

import json
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def corpus_paths() -> list[str]:
    """Real text available offline: Debian's license texts, else the stdlib's email package."""
    licenses = Path("/usr/share/common-licenses")
    if licenses.is_dir() and sum(f.stat().st_size for f in licenses.iterdir() if f.is_file()) > 100_000:
        return [str(licenses)]
    import email

    return [str(Path(email.__file__).parent)]


def read_events(text: str) -> list[dict]:
    """JSON-line events from a captured stdout."""
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("{"):
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                pass
    return out
