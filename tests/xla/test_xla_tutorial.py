"""The ultracluster tutorial's XLA path (what runs on Trn1) on XLA:CPU: its run with the
README's program arguments and ``--device xla``, one process (see test_xla_examples.py). A file
of its own, so that training/test-xla.sh's two workers end close together (tests/xla/conftest.py,
``LONGEST_FIRST``).

Its precompile trial is not run here: what the trial does differently (no ``checkpoint.pt``,
``precompile-trial.json`` in place of ``result.json``) does not depend on the device, and
tests/examples and tests/slurm run it; the end both runs share (``xm.rendezvous``, then
``destroy_process_group``) is this run's end too. Each XLA:CPU run of it takes about 45 s on
2 cores, nearly all of it process start and graph compiles (measured: 30 steps and 8 steps both
35 s alone)."""

from __future__ import annotations

import pytest
import torch

from xla_runs import example_on_xla

pytestmark = pytest.mark.xla  # make test-xla (.venv-xla with torch-xla); make test leaves it out


def test_ultracluster_tutorial_on_xla(tmp_path):
    result = example_on_xla("ultracluster-tutorial", tmp_path)
    assert (result["device"], result["world_size"]) == ("xla", 1)
    assert result["steps"] == result["max_steps"]
    assert result["final_loss"] < result["first_loss"]
    state = torch.load(tmp_path / "checkpoint.pt", weights_only=True)  # xm.save wrote CPU tensors
    assert all(t.device.type == "cpu" for t in state.values())
