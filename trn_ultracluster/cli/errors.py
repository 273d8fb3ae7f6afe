"""Errors of the job CLI and their exit codes.

Every failure the CLI knows about becomes a :class:`CliError` with one line saying what is
wrong, one saying how to fix it, and an exit code from :class:`ExitCode`; ``main`` prints
``error: <message>`` and ``fix: <fix>`` to stderr and exits with the code.
"""

from __future__ import annotations

from enum import IntEnum

__all__ = ["CliError", "ExitCode"]


class ExitCode(IntEnum):
    """Exit codes of ``trn-ultracluster`` (documented in docs/walkthrough.md)."""

    OK = 0
    CHECK_FAILED = 1
    """A preflight check or the smoke test failed (the table says which)."""
    USAGE = 2
    """Bad arguments or configuration (argparse also exits 2)."""
    STACK = 3
    """The stack is missing, not in a usable state, or lacks an output key."""
    CREDENTIALS = 4
    """No AWS credentials, or they are not allowed to make a call."""
    CLUSTER = 5
    """The cluster refused or failed a job operation (Kubernetes, Slurm, SSM)."""


class CliError(Exception):
    """A failure with a message for the user, a fix and an exit code.

    Attributes:
        message: what went wrong, one line.
        fix: what to do about it, one line (may be empty).
        exit_code: process exit status.
    """

    def __init__(self, message: str, fix: str = "", exit_code: ExitCode = ExitCode.USAGE):
        super().__init__(message)
        self.message = message
        self.fix = fix
        self.exit_code = exit_code

    def __str__(self) -> str:
        return self.message if not self.fix else f"{self.message}\nfix: {self.fix}"
