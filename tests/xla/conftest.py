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


LONGEST_FIRST = ("test_xla_train.py", "test_xla_stops.py", "test_xla_examples.py",
                 "test_xla_tutorial.py")
"""The files by their time on 2 cores, longest first (measured 2026-11-28 with two workers:
118 s, 100 s, 54 s, 50 s). training/test-xla.sh gives each file to one worker in collection
order (``--dist loadfile --no-loadscope-reorder``), so the longest start first and the two
workers end close together; a file not named here comes last."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Order the tests of tests/xla by file, :data:`LONGEST_FIRST` first (a stable sort: the
    order within a file stays)."""
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))
