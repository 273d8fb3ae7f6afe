"""The ``trn-ultracluster submit`` commands the examples' READMEs tell a user to run, and a
torchrun of an example's program on this machine.

Each README under ``examples/`` shows, in a fenced code block, the command a user runs from that
example's directory. :func:`examples_commands` reads them so that tests submit each example
exactly as its README says: the CPU and XLA:CPU tests run the program part with torchrun
(:func:`run_example`), the Slurm tests can pass the whole argument list to the job CLI.

``examples/custom-image`` is not listed in :data:`EXAMPLES`: it needs an image build.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

EXAMPLES_DIR = Path(__file__).resolve().parents[2] / "examples"
EXAMPLES = ("pytorch-distributed", "huggingface", "ultracluster-tutorial")
"""The examples a CPU can run (directories under ``examples/``)."""
COMMAND = "trn-ultracluster"
FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.MULTILINE | re.DOTALL)


def submit_commands(readme: str) -> list[list[str]]:
    """The ``trn-ultracluster submit`` commands in the fenced code blocks of ``readme`` (the
    text of a README), as argument lists without the leading ``trn-ultracluster``.

    Lines continued with a backslash are joined; words are split as a POSIX shell splits them
    (:func:`shlex.split`), so quoted ``--precompile-args "..."`` stay one argument.

    Raises:
        ValueError: a command the shell could not split (e.g. an unclosed quote).
    """
    commands = []
    for block in FENCE.findall(readme):
        for line in block.replace("\\\n", " ").splitlines():
            words = shlex.split(line, comments=True)
            if words[:2] == [COMMAND, "submit"]:
                commands.append(words[1:])
    return commands


def examples_commands() -> list[tuple[Path, list[str]]]:
    """``(example directory, argv)`` for every ``submit`` command in the README of every
    example of :data:`EXAMPLES`, in that order.

    ``argv`` is what follows ``trn-ultracluster``, e.g. ``["submit", "--nodes", "2", "--",
    "train.py", "--epochs", "3"]``: the argument list of the job CLI's ``main(argv)``, to be run
    with the example directory as the current directory (the default ``--workdir``).
    """
    return [(EXAMPLES_DIR / name, argv) for name in EXAMPLES
            for argv in submit_commands((EXAMPLES_DIR / name / "README.md").read_text("utf-8"))]


def program_argv(argv: list[str]) -> list[str]:
    """What follows the first ``--`` of a submit ``argv``: the program and its arguments.

    Raises:
        ValueError: ``argv`` has no ``--``.
    """
    return argv[argv.index("--") + 1:]


def option_value(argv: list[str], option: str) -> str | None:
    """The value of ``option`` (``--name value`` or ``--name=value``) before the ``--`` of a
    submit ``argv``; ``None`` when it is not given."""
    options = argv[:argv.index("--")] if "--" in argv else argv
    for i, word in enumerate(options):
        if word == option and i + 1 < len(options):
            return options[i + 1]
        if word.startswith(option + "="):
            return word.split("=", 1)[1]
    return None


def run_example(name: str, args: list[str], out: Path, processes: int = 2,
                python: str = sys.executable, **env: str) -> subprocess.CompletedProcess:
    """Run ``args`` (program and arguments) under ``torchrun --standalone`` with ``processes``
    workers, from the example's directory, with ``TRN_OUTPUT_DIR=out`` as a job sets it and
    ``env`` added.

    Raises:
        AssertionError: a non-zero exit; the message holds the command and its output.
        subprocess.TimeoutExpired: after 300 s.
    """
    cmd = [python, "-m", "torch.distributed.run", "--standalone", "--nnodes", "1",
           "--nproc-per-node", str(processes), *args]
    run_env = {**os.environ, "TRN_OUTPUT_DIR": str(out), "OMP_NUM_THREADS": "1", **env}
    proc = subprocess.run(cmd, cwd=EXAMPLES_DIR / name, env=run_env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, (f"{shlex.join(cmd)} exited {proc.returncode}:\n"
                                  f"{proc.stdout}\n{proc.stderr}")
    return proc


def read_json(path: Path) -> dict:
    """The JSON object in ``path``; an assertion error when the file is missing."""
    assert path.is_file(), f"{path} was not written"
    return json.loads(path.read_text(encoding="utf-8"))


# ---------------------------------------------------------------------------- what a run wrote


def no_temporary_files(out: Path) -> list[str]:
    """Names of the ``*.tmp`` files left under ``out`` (an example writes its results
    atomically: none should be left)."""
    return [p.name for p in out.rglob("*") if p.name.endswith(".tmp")]


def argument(args: list[str], option: str) -> int:
    """The integer value of ``option`` in a program's ``args`` (``--steps 40``)."""
    return int(args[args.index(option) + 1])


def check_pytorch_distributed(out: Path, args: list[str], world_size: int, log: str) -> dict:
    """What the pytorch-distributed example run with ``args`` on ``world_size`` CPU processes
    wrote to ``out``: a ``result.json`` with one loss per epoch, falling, and replicas DDP kept
    identical; and its output ``log`` names the file. Returns the result.

    Raises:
        AssertionError: naming what differs.
    """
    result = read_json(out / "result.json")
    assert (result["device"], result["world_size"]) == ("cpu", world_size), result
    assert len(result["epoch_losses"]) == result["epochs"] == argument(args, "--epochs")
    assert result["final_loss"] < result["epoch_losses"][0]
    assert result["replica_spread"] == 0.0  # DDP kept the replicas identical
    assert f"wrote {out / 'result.json'}" in log
    assert no_temporary_files(out) == []
    return result


def check_huggingface(out: Path, args: list[str], world_size: int, log: str) -> dict:
    """What the huggingface example wrote to ``out``: ``--steps`` steps, the loss under half
    its first value, and the model saved with ``save_pretrained`` (a Llama ``config.json`` and
    ``model.safetensors``). Returns the result (its ``humanize`` is the version the
    requirements installed, ``None`` where they were not installed). (The example prints no
    line of its own to check in ``log``.)

    Raises:
        AssertionError: naming what differs.
    """
    result = read_json(out / "result.json")
    assert (result["device"], result["world_size"]) == ("cpu", world_size), result
    assert result["steps"] == argument(args, "--steps")
    assert result["final_loss"] < result["first_loss"] / 2
    assert read_json(out / "model" / "config.json")["model_type"] == "llama"
    assert (out / "model" / "model.safetensors").is_file()
    assert no_temporary_files(out) == []
    return result


def check_tutorial_trial(out: Path, args: list[str], world_size: int, log: str) -> dict:
    """The ultracluster tutorial's precompile trial (``--steps-this-run 2``): its
    ``precompile-trial.json`` names the run's ``--max-steps`` and holds no loss, and ``log``
    names it. Returns it. (That the trial writes no ``checkpoint.pt`` is for a caller whose
    ``out`` holds the trial alone: tests/examples.)

    Raises:
        AssertionError: naming what differs.
    """
    trial = read_json(out / "precompile-trial.json")
    assert (trial["steps"], trial["world_size"]) == (2, world_size), trial
    assert trial["max_steps"] == argument(args, "--max-steps")
    assert "final_loss" not in trial  # a graph-extraction run's losses are not real
    assert f"wrote {out / 'precompile-trial.json'}" in log
    return trial


def check_tutorial_run(out: Path, args: list[str], world_size: int, log: str) -> dict:
    """The ultracluster tutorial's real run: every step of ``--max-steps``, the global batch
    of 8 sequences (its ``--batch-size`` default) x ``--grad-accum-usteps`` x ``world_size``,
    the loss down by more than 0.3, a ``checkpoint.pt`` of the BERT model, and ``log`` naming
    ``result.json``. Returns the result.

    Raises:
        AssertionError: naming what differs.
    """
    import torch

    result = read_json(out / "result.json")
    assert result["steps"] == result["max_steps"] == argument(args, "--max-steps")
    assert result["global_batch_size"] == 8 * argument(args, "--grad-accum-usteps") * world_size
    assert result["final_loss"] < result["first_loss"] - 0.3
    state = torch.load(out / "checkpoint.pt", weights_only=True)
    assert any(key.startswith("bert.encoder.layer.1.") for key in state)
    assert f"wrote {out / 'result.json'}" in log
    assert no_temporary_files(out) == []
    return result
