"""XLA:CPU tests (run by training/test-xla.sh with .venv-xla), marked ``xla``: `make test`
deselects them, `make test-xla` runs ``-m xla``."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

TRAINING_TESTS = Path(__file__).resolve().parents[1] / "training"
if str(TRAINING_TESTS) not in sys.path:
    sys.path.insert(0, str(TRAINING_TESTS))

from training_helpers import corpus_paths  # noqa: E402


@pytest.fixture(scope="session")
def xla_data(tmp_path_factory) -> Path:
    """Real text (see :func:`training_helpers.corpus_paths`) tokenized and packed."""
    from trn_train.prepare import prepare_data
    from trn_train.tokenizer import train_tokenizer

    corpus = corpus_paths()
    tok = train_tokenizer(corpus, tmp_path_factory.mktemp("tok"), "bpe", 2000)
    out = tmp_path_factory.mktemp("data")
    prepare_data(out, str(tok), 64, inputs=corpus, progress=False)
    return out
