"""Helpers shared by the CPU training tests (tests/training) and the XLA:CPU tests
(tests/xla). Importable in any pytest import mode: both folders' conftest.py put this folder
on sys.path."""

from __future__ import annotations

import json
import os
import socket
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


def train_losses(events: list[dict]) -> dict[int, float]:
    """Step -> logged loss of the ``train`` events."""
    return {e["step"]: e["loss"] for e in events if e["event"] == "train"}


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now (for torchrun's --master_port)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def subprocess_env(**extra: str) -> dict[str, str]:
    """This process's environment with ``trn_train`` importable, plus ``extra``."""
    return {**os.environ, "PYTHONPATH": f"{REPO}:{REPO / 'training'}", **extra}


def read_dcp(checkpoint_dir: Path) -> dict:
    """The whole state a native-backend checkpoint holds, unsharded on CPU:
    ``{"model": {name: tensor}, "optim": {"state": ..., "param_groups": ...}}`` (DCP's
    ``dcp_to_torch_save`` of its ``dcp/`` directory, read back)."""
    import tempfile

    import torch
    from torch.distributed.checkpoint.format_utils import dcp_to_torch_save

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "state.pt"
        dcp_to_torch_save(checkpoint_dir / "dcp", out)
        return torch.load(out, weights_only=False)
