"""The ``trn-ultracluster submit`` commands the examples' READMEs tell a user to run.

Each README under ``examples/`` shows, in a fenced code block, the command a user runs from that
example's directory. :func:`examples_commands` reads them so that tests submit each example
exactly as its README says: the CPU tests here run the program part with torchrun, the Slurm
tests can pass the whole argument list to the job CLI.

``examples/custom-image`` is not listed in :data:`EXAMPLES`: it needs an image build.
"""

from __future__ import annotations

import re
import shlex
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
            for argv in submit_commands((EXAMPLES_DIR / name / "README.md").read_text(encoding="utf-8"))]


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
