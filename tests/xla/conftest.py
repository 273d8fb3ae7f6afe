"""XLA:CPU tests: collected only where torch_xla is importable (.venv-xla via
training/test-xla.sh); with the main venv the folder is skipped, so `make test` passes."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
for p in (REPO, REPO / "training", HERE):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

if importlib.util.find_spec("torch_xla") is None:
    collect_ignore_glob = ["test_*.py"]


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
