"""Runs under torchrun on XLA:CPU shared by the tests of tests/xla: the training program's
(``--device xla``, ``PJRT_DEVICE=CPU``, llama-tiny, a checkpoint every 8 steps) and the
examples' (their README's program arguments)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.examples.helpers import examples_commands, program_argv, read_json, run_example
from training_helpers import free_port, read_events, subprocess_env

STEPS = 16
ENV = subprocess_env(PJRT_DEVICE="CPU", TF_CPP_MIN_LOG_LEVEL="2")


def torchrun_process(data: Path, out: Path, *extra: str, env: dict | None = None, nproc: int = 1,
                     steps: int = STEPS, timeout: int = 600) -> subprocess.CompletedProcess:
    """``torchrun --nproc_per_node nproc -m trn_train train ... --device xla *extra`` on
    ``data``, writing to ``out``; its exit status and output, whatever they are.

    Raises:
        subprocess.TimeoutExpired: after ``timeout`` seconds.
    """
    args = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", str(nproc), "--nnodes", "1",
            "--master_addr", "127.0.0.1", "--master_port", str(free_port()),
            "-m", "trn_train", "train", "--recipe", "llama-tiny", "--data-dir", str(data),
            "--output-dir", str(out), "--steps", str(steps), "--global-batch-size", "8",
            "--micro-batch-size", "4", "--log-every", "1", "--ckpt-every", "8", "--lr", "3e-3",
            "--no-progress", "--device", "xla", *extra]
    return subprocess.run(args, capture_output=True, text=True, env=env or ENV, timeout=timeout)


def torchrun(data: Path, out: Path, *extra: str, env: dict | None = None) -> list[dict]:
    """One process's run (:func:`torchrun_process`) that must succeed: its JSON-line events.

    Raises:
        AssertionError: a non-zero exit (the message ends with its stderr).
    """
    p = torchrun_process(data, out, *extra, env=env)
    assert p.returncode == 0, p.stderr[-4000:]
    return read_events(p.stdout)


EXAMPLE_ARGS = {path.name: program_argv(argv) for path, argv in examples_commands()}
"""Example name -> the program and arguments of its README's ``submit`` command."""
EXAMPLE_ENV = {"PJRT_DEVICE": "CPU", "TF_CPP_MIN_LOG_LEVEL": "2"}


def example_on_xla(name: str, out: Path, *extra: str) -> dict:
    """Example ``name`` with its README's arguments, ``--device xla`` and ``extra``, in one
    process under torchrun, writing to ``out``: the ``result.json`` it wrote.

    Raises:
        AssertionError: a non-zero exit, or no ``result.json``.
    """
    run_example(name, [*EXAMPLE_ARGS[name], "--device", "xla", *extra], out, 1, sys.executable,
                **EXAMPLE_ENV)
    return read_json(out / "result.json")
