"""Helpers shared by the XLA:CPU tests (conftest.py puts this folder on sys.path)."""

from __future__ import annotations

import json
import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PJRT_DEVICE": "CPU", "PYTHONPATH": f"{REPO}:{REPO / 'training'}",
       "TF_CPP_MIN_LOG_LEVEL": "2"}


def read_events(text: str) -> list[dict]:
    """JSON-line events from a captured stdout."""
    out = []
    for line in text.splitlines():
        if line.startswith("{"):
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                pass
    return out
