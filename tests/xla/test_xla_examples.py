"""The examples' XLA path (what runs on Trn1) on XLA:CPU: each example's README program arguments
with ``--device xla``, one process under torchrun with the ``xla`` process group
(``PJRT_DEVICE=CPU``, torch-xla 2.9 in .venv-xla). One process only: collectives across
XLA:CPU processes deadlock in torch-xla 2.9 (see test_xla_train.py); tests/examples runs two
processes with gloo."""

from __future__ import annotations

import sys

import pytest
import torch

from tests.examples.helpers import examples_commands, program_argv, read_json, run_example

pytestmark = pytest.mark.xla  # make test-xla (.venv-xla with torch-xla); make test leaves it out

ARGS = {path.name: program_argv(argv) for path, argv in examples_commands()}
ENV = {"PJRT_DEVICE": "CPU", "TF_CPP_MIN_LOG_LEVEL": "2"}


def xla_run(name: str, out, *extra: str, **env: str) -> dict:
    run_example(name, [*ARGS[name], "--device", "xla", *extra], out, 1, sys.executable,
                **ENV, **env)
    return read_json(out / ("precompile-trial.json" if env else "result.json"))


def test_pytorch_distributed_on_xla(tmp_path):
    result = xla_run("pytorch-distributed", tmp_path)
    assert (result["device"], result["world_size"]) == ("xla", 1)
    assert result["final_loss"] < result["epoch_losses"][0]


def test_huggingface_on_xla(tmp_path):
    result = xla_run("huggingface", tmp_path)
    assert (result["device"], result["world_size"]) == ("xla", 1)
    assert result["final_loss"] < result["first_loss"]
    assert (tmp_path / "model" / "model.safetensors").is_file()


def test_ultracluster_tutorial_on_xla(tmp_path):
    trial = xla_run("ultracluster-tutorial", tmp_path, "--steps-this-run", "2",
                    NEURON_EXTRACT_GRAPHS_ONLY="1")
    assert (trial["device"], trial["steps"]) == ("xla", 2)
    assert not (tmp_path / "checkpoint.pt").exists()
    result = xla_run("ultracluster-tutorial", tmp_path)
    assert result["steps"] == result["max_steps"]
    assert result["final_loss"] < result["first_loss"]
    state = torch.load(tmp_path / "checkpoint.pt", weights_only=True)  # xm.save wrote CPU tensors
    assert all(t.device.type == "cpu" for t in state.values())
