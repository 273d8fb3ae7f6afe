"""Shared fixtures for the CPU training tests: a tokenizer trained on real text on this
machine and prepared data, built once per session."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent  # training_helpers; the root conftest adds the repo and training/
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from training_helpers import corpus_paths  # noqa: E402


@pytest.fixture
def one_thread():
    """Same thread count in-process and in subprocesses: CPU matmuls reduce in the same order."""
    import torch

    old = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(old)


@pytest.fixture(scope="session")
def corpus() -> list[str]:
    return corpus_paths()


@pytest.fixture(scope="session")
def bpe_tokenizer(tmp_path_factory, corpus) -> Path:
    from trn_train.tokenizer import train_tokenizer

    return train_tokenizer(corpus, tmp_path_factory.mktemp("tok_bpe"), "bpe", 2000)


@pytest.fixture(scope="session")
def wordpiece_tokenizer(tmp_path_factory, corpus) -> Path:
    from trn_train.tokenizer import train_tokenizer

    return train_tokenizer(corpus, tmp_path_factory.mktemp("tok_wp"), "wordpiece", 2000)


@pytest.fixture(scope="session")
def clm_data(built_once, corpus, bpe_tokenizer) -> Path:
    """Causal-LM data (BPE, 64-token sequences, shards of 300), one copy for all pytest-xdist
    workers (``built_once``): runs that a test of one worker trains, another worker's test can
    resume."""
    from trn_train.prepare import prepare_data

    return built_once("data_clm", lambda out: prepare_data(
        out, str(bpe_tokenizer), 64, inputs=corpus, shard_sequences=300, progress=False))


@pytest.fixture(scope="session")
def mlm_data(tmp_path_factory, corpus, wordpiece_tokenizer) -> Path:
    from trn_train.prepare import prepare_data

    out = tmp_path_factory.mktemp("data_mlm")
    prepare_data(out, str(wordpiece_tokenizer), 64, inputs=corpus, task_format="mlm", progress=False)
    return out
