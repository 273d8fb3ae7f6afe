"""The examples' XLA path (what runs on Trn1) on XLA:CPU: each example's README program arguments
with ``--device xla``, one process under torchrun with the ``xla`` process group
(``PJRT_DEVICE=CPU``, torch-xla 2.9 in .venv-xla). One process only: collectives across
XLA:CPU processes deadlock in torch-xla 2.9 (see test_xla_train.py); tests/examples runs two
processes with gloo. The tutorial, the longest, is test_xla_tutorial.py (a file of its own: a
worker each, training/test-xla.sh)."""

from __future__ import annotations

import pytest

from xla_runs import example_on_xla

pytestmark = pytest.mark.xla  # make test-xla (.venv-xla with torch-xla); make test leaves it out


def test_pytorch_distributed_on_xla(tmp_path):
    result = example_on_xla("pytorch-distributed", tmp_path)
    assert (result["device"], result["world_size"]) == ("xla", 1)
    assert result["final_loss"] < result["epoch_losses"][0]


def test_huggingface_on_xla(tmp_path):
    result = example_on_xla("huggingface", tmp_path)
    assert (result["device"], result["world_size"]) == ("xla", 1)
    assert result["final_loss"] < result["first_loss"]
    assert (tmp_path / "model" / "model.safetensors").is_file()
