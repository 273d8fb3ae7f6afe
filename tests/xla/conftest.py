"""XLA:CPU tests: collected only where torch_xla is importable (.venv-xla via
training/test-xla.sh); with the main venv the folder is skipped, so `make test` passes."""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
for p in (REPO, REPO / "training"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

if importlib.util.find_spec("torch_xla") is None:
    collect_ignore_glob = ["test_*.py"]

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


@pytest.fixture(scope="session")
def xla_data(tmp_path_factory) -> Path:
    """Real text (Debian license texts, else the stdlib email package) tokenized and packed."""
    from trn_train.data import prepare_data, train_tokenizer

    licenses = Path("/usr/share/common-licenses")
    if licenses.is_dir():
        corpus = [str(licenses)]
    else:
        import email

        corpus = [str(Path(email.__file__).parent)]
    tok = train_tokenizer(corpus, tmp_path_factory.mktemp("tok"), "bpe", 2000)
    out = tmp_path_factory.mktemp("data")
    prepare_data(out, str(tok), 64, inputs=corpus, progress=False)
    return out
