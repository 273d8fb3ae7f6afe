"""Helpers of the tests of ``submit -- PROGRAM`` (user programs): a working directory, the
dry run of each backend, the node script as a node receives it, and stand-ins for programs
that record how they were started."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import yaml

from tests.cli.helpers import outputs_values, run, write_outputs

BACKENDS = ("hyperpod-slurm", "eks", "hyperpod-eks", "standalone")
"""Every job backend (output ``JobBackend``)."""
TRAIN = "import helper\nprint(helper.X)\n"
AWKWARD_ARGS = ["a b", "it's", 'say "hi"', "$HOME", "${HOME}", "`date`", "$(id)", "*", "?",
                "~", "!x", "x\ny", "tab\there", "naïve", "日本", "", "--", "--nodes", "9", "\\",
                "end\\", "a'\\'b", "#", ";", "|", "&", "{a,b}", "\x7f"]
"""Program arguments a shell would change, split or drop, and words ``submit`` itself would
read: they must reach the program as they are."""


def make_workdir(root: Path, files: dict[str, str] | None = None,
                 executable: tuple[str, ...] = ()) -> Path:
    """A working directory with ``files`` (default: ``train.py`` importing ``helper.py``);
    the paths in ``executable`` get mode 0755."""
    for rel, text in (files or {"train.py": TRAIN, "helper.py": "X = 1\n"}).items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        path.chmod(0o755 if rel in executable else 0o644)
    return root


def outputs_file(tmp_path: Path, orchestrator: str, **values: str) -> Path:
    """Stack outputs of ``orchestrator`` (:func:`outputs_values`) with ``values`` changed."""
    found = outputs_values(orchestrator)
    found.update(values)
    return write_outputs(tmp_path, found)


def submit(capsys, tmp_path: Path, orchestrator: str, *argv: str,
           **values: str) -> tuple[int, str, str]:
    """``submit --outputs-file ... ARGV`` on a stack of ``orchestrator``: exit status, stdout,
    stderr."""
    path = outputs_file(tmp_path, orchestrator, **values)
    return run(capsys, "submit", "--outputs-file", str(path), *argv)


def dry_run(capsys, tmp_path: Path, orchestrator: str, *argv: str,
            **values: str) -> tuple[str, str]:
    """What ``submit --dry-run ARGV`` prints (stdout, stderr); the command must succeed."""
    code, out, err = submit(capsys, tmp_path, orchestrator, "--dry-run", *argv, **values)
    assert code == 0, err
    return out, err


SLURM_NODE_SCRIPT = """\
set -euo pipefail
{assignment}
printf '%s' "${{TRN_NODE_SCRIPT}}"
"""


def node_script(orchestrator: str, printed: str) -> str:
    """The bash a node of ``orchestrator`` runs, from what ``--dry-run`` printed: Slurm's
    here-document evaluated by bash (as sbatch would, then ``bash -c`` on the node), the
    TrainJob's ``bash -c`` argument as the API server gets it, the standalone job script
    itself."""
    if orchestrator == "hyperpod-slurm":
        lines = printed.splitlines()
        first = next(i for i, ln in enumerate(lines) if ln.startswith('TRN_NODE_SCRIPT="$(cat'))
        last = next(i for i in range(first, len(lines)) if lines[i] == ')"')
        done = subprocess.run(["bash", "-c", SLURM_NODE_SCRIPT.format(
            assignment="\n".join(lines[first:last + 1]))], capture_output=True, text=True,
            check=True)
        return done.stdout
    if orchestrator in ("eks", "hyperpod-eks"):
        command = yaml.safe_load(printed)["spec"]["trainer"]["command"]
        assert command[:2] == ["bash", "-c"], command
        return command[2]
    return printed


def run_line(script: str) -> str:
    """The node script's last line: what runs the program."""
    return script.rstrip("\n").splitlines()[-1]


RECORDER = """#!{python}
# Stand-in for {name}: appends its arguments, working directory and environment as one JSON
# line to $RECORDER_OUT.
import json, os, sys
with open(os.environ["RECORDER_OUT"], "a", encoding="utf-8") as out:
    out.write(json.dumps({{"name": {name!r}, "argv": sys.argv[1:], "cwd": os.getcwd(),
                          "env": dict(os.environ)}}) + "\\n")
"""


def recorder(directory: Path, name: str) -> Path:
    """An executable ``directory/name`` that records each start (:data:`RECORDER`)."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text(RECORDER.format(python=sys.executable, name=name))
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return path


def recorded(out: Path) -> list[dict]:
    """The starts a :func:`recorder` wrote to ``out``."""
    if not out.exists():
        return []
    return [json.loads(ln) for ln in out.read_text(encoding="utf-8").splitlines()]


def run_with_stubs(lines: list[str], tmp_path: Path, env: dict[str, str] | None = None,
                   cwd: Path | None = None) -> list[dict]:
    """Run ``lines`` with bash, ``torchrun``, ``neuron_parallel_compile`` and ``python3``
    being :func:`recorder` stand-ins first on ``PATH``; returns what they recorded."""
    stubs = tmp_path / "stubs"
    for name in ("torchrun", "neuron_parallel_compile", "python3"):
        recorder(stubs, name)
    out = tmp_path / "recorded.jsonl"
    out.unlink(missing_ok=True)
    script = tmp_path / "lines.sh"
    script.write_text("set -euo pipefail\n" + "\n".join(lines) + "\n", encoding="utf-8")
    done = subprocess.run(["bash", str(script)], capture_output=True, text=True, cwd=cwd,
                          env={**os.environ, **(env or {}), "RECORDER_OUT": str(out),
                               "PATH": f"{stubs}:{os.environ['PATH']}"})
    assert done.returncode == 0, done.stderr
    return recorded(out)
