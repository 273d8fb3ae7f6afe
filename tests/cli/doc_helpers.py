"""The job CLI examples of a docs page: its bad-input blocks of ``$ trn-ultracluster ...``
lines, each followed by what the CLI prints, run against a stack's outputs file."""

from __future__ import annotations

import shlex
from pathlib import Path

from tests.cli.helpers import run
from tests.cli.program_helpers import make_workdir


def cli_examples(doc: str) -> list[tuple[str, list[str]]]:
    """Each ``$ trn-ultracluster ...`` line of ``doc``'s first ```` ```text ```` block that
    starts with one, and the lines after it (what the page says the CLI prints)."""
    block = doc[doc.index("```text\n$ trn-ultracluster"):]
    block = block[len("```text\n"):block.index("\n```", 1)]
    examples: list[tuple[str, list[str]]] = []
    for line in block.splitlines():
        if line.startswith("$ "):
            examples.append((line[2:], []))
        else:
            examples[-1][1].append(line)
    return examples


def run_example(capsys, monkeypatch, tmp_path: Path, command: str,
                outputs_file: str) -> tuple[int, list[str]]:
    """Run ``command`` (a ``trn-ultracluster ...`` line) on ``outputs_file`` from a working
    directory of ``train.py``: its exit status and stderr lines."""
    monkeypatch.chdir(make_workdir(tmp_path / "work"))
    words = shlex.split(command)
    assert words[0] == "trn-ultracluster"
    code, _, err = run(capsys, words[1], "--outputs-file", outputs_file, *words[2:])
    return code, err.splitlines()
