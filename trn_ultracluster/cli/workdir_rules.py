"""What ``submit --workdir`` leaves out: :data:`ALWAYS_EXCLUDED`, virtual environments, and the
patterns of :data:`IGNORE_FILE`, matched with gitignore's rules by ``pathspec``
(``GitIgnoreSpec``, which replicates git's own matching, edge cases included).

Paths are POSIX paths relative to the working directory; a directory is matched as
``"<path>/"``, so patterns that end in ``/`` match directories only, as in git.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from pathspec import GitIgnoreSpec

from trn_ultracluster.cli.errors import CliError
from trn_ultracluster.cli.files import read_text

__all__ = ["ALWAYS_EXCLUDED", "IGNORE_FILE", "VENV_MARKERS", "Rules", "is_venv"]

IGNORE_FILE = ".trnignore"
"""The ignore file in the working directory's root, in gitignore format (git documentation,
"gitignore": https://git-scm.com/docs/gitignore), the format users already write for
``.gitignore``, ``.dockerignore`` and SkyPilot's ``.skyignore``. It is shipped itself: it is
small, and it records in the snapshot what was left out."""

ALWAYS_EXCLUDED: tuple[str, ...] = (
    # Version control: history and objects, often larger than the code, never run by a job.
    # ".git" without "/": in a worktree or submodule it is a file ("gitdir: ...").
    ".git", ".hg/", ".svn/",
    # The conventional name of a project's virtual environment (Poetry, uv, PDM, VS Code).
    # Others are found by their marker (VENV_MARKERS), whatever their name; `venv/` and `env/`
    # are not excluded by name, since `env/` is also a common package name (RL environments).
    ".venv/",
    # Bytecode: rebuilt on the node, and stale when it comes from another Python version.
    "__pycache__/", "*.py[cod]",
    # Caches of tools that run on the workstation, never in the job.
    ".ipynb_checkpoints/", ".mypy_cache/", ".pytest_cache/", ".ruff_cache/", ".tox/", ".nox/",
    ".DS_Store",
)
"""gitignore patterns never shipped; :data:`IGNORE_FILE` cannot re-include them."""

VENV_MARKERS = ("pyvenv.cfg", "conda-meta")
"""A directory holding one of these is a Python environment, never shipped (the image has
the job's Python; ``--requirements`` adds packages). ``pyvenv.cfg``: every ``venv`` (and
virtualenv 20+, uv) environment has one in its root (Python docs, "venv — Creation of
virtual environments": creating one "places a pyvenv.cfg file in it"). ``conda-meta``: every
conda environment has it (microsoft/python-environment-tools, which VS Code uses, finds
conda environments by ``conda-meta/history``; not checked in conda's own docs)."""


def is_venv(directory: str) -> bool:
    """Whether ``directory`` is a Python environment (holds one of :data:`VENV_MARKERS`)."""
    return any(os.path.lexists(os.path.join(directory, m)) for m in VENV_MARKERS)


@dataclass(frozen=True)
class Rules:
    """The exclusion rules of one working directory.

    Attributes:
        always: :data:`ALWAYS_EXCLUDED`, compiled.
        user: the patterns of :data:`IGNORE_FILE`, or ``None`` when there is none.
    """

    always: GitIgnoreSpec
    user: GitIgnoreSpec | None

    @classmethod
    def load(cls, root: Path) -> Rules:
        """The rules of the working directory ``root``.

        Raises:
            CliError: (USAGE) :data:`IGNORE_FILE` cannot be read, is not UTF-8, or holds a
                pattern that is not valid gitignore syntax.
        """
        path = root / IGNORE_FILE
        user = None
        if os.path.lexists(path):
            text = read_text(path, f"--workdir {root}: {IGNORE_FILE}",
                             f"make {path} a readable UTF-8 text file of gitignore patterns",
                             regular_only=True)
            try:
                user = GitIgnoreSpec.from_lines(text.splitlines())
            except ValueError as err:  # pathspec's GitWildMatchPatternError
                raise CliError(f"--workdir {root}: {path} has a pattern that is not gitignore "
                               f"syntax: {err}",
                               "fix or remove that line (git documentation, gitignore, "
                               "'PATTERN FORMAT')") from None
        return cls(GitIgnoreSpec.from_lines(ALWAYS_EXCLUDED), user)

    def reason(self, rel: str) -> str | None:
        """Why ``rel`` is excluded (``'the built-in pattern ".git"'``, ``'.trnignore pattern
        "*.ckpt"'``), or ``None`` when no rule excludes it. ``rel`` ends in ``/`` for a
        directory."""
        for spec, what in ((self.always, "the built-in pattern"),
                           (self.user, f"{IGNORE_FILE} pattern")):
            if spec is None:
                continue
            result = spec.check_file(rel)
            if result.include:
                return f'{what} "{spec.patterns[result.index].pattern}"'
        return None

    def why_excluded(self, root: Path, rel: str) -> tuple[str, str | None]:
        """Why the existing file ``rel`` is not in the snapshot (a phrase for "excluded by
        ..."), and the directory the rule is on (``None`` when it is on the file itself)."""
        parts = rel.split("/")
        for depth in range(1, len(parts)):
            directory = "/".join(parts[:depth])
            reason = self.reason(directory + "/")
            if reason is not None:
                return f"{reason} on its directory {directory}/", directory
            if is_venv(str(root / directory)):
                return (f"the virtual environment {directory}/ around it (it holds "
                        f"{' or '.join(VENV_MARKERS)})", directory)
        return self.reason(rel) or "its file type (not a regular file or link)", None
