"""Errors of the job CLI and their exit codes.

Every failure the CLI knows about becomes a :class:`CliError` with one line saying what is
wrong, one saying how to fix it, and an exit code from :class:`ExitCode`; ``main`` prints
``error: <message>`` and ``fix: <fix>`` to stderr and exits with the code.
"""

from __future__ import annotations

from enum import IntEnum

__all__ = ["CliError", "ExitCode", "exit_codes_help"]


class ExitCode(IntEnum):
    """Exit codes of ``trn-ultracluster`` (documented in docs/walkthrough.md)."""

    OK = 0
    CHECK_FAILED = 1
    """A preflight check or the smoke test failed (the table says which), or ``plan`` found
    a replacement or node roll it was not allowed (``--allow-replace``)."""
    USAGE = 2
    """Bad arguments, configuration or input file (argparse also exits 2)."""
    STACK = 3
    """The stack is missing, not in a usable state, or lacks an output key (or a resource
    it names, such as the data bucket, is gone)."""
    CREDENTIALS = 4
    """No AWS credentials (or an unknown profile), or they are not allowed to make a call."""
    CLUSTER = 5
    """The cluster refused or failed a job operation, or cannot be reached (Kubernetes,
    Slurm, SSM)."""
    AWS = 6
    """AWS failed a call for another reason (throttling, a service error, a Region not
    enabled) or cannot be reached; the message carries AWS's error code."""
    INTERRUPTED = 130
    """Stopped with Ctrl-C (128 + SIGINT)."""
    PIPE_CLOSED = 141
    """The reader of the output went away (``| head``): 128 + SIGPIPE, what a shell reports
    for a process stopped by SIGPIPE; nothing is printed."""


_SUMMARY = {
    ExitCode.OK: "ok",
    ExitCode.CHECK_FAILED: "a preflight check or the smoke test failed; plan stopped a deploy",
    ExitCode.USAGE: "bad arguments, configuration or input file",
    ExitCode.STACK: "stack missing, not usable, or lacking an output (older stack)",
    ExitCode.CREDENTIALS: "no AWS credentials, or not allowed to make a call",
    ExitCode.CLUSTER: "the cluster refused a job operation or cannot be reached",
    ExitCode.AWS: "another AWS error (throttling, service error, Region not enabled)",
    ExitCode.INTERRUPTED: "stopped with Ctrl-C",
    ExitCode.PIPE_CLOSED: "the output pipe was closed early (e.g. `| head`)",
}


def exit_codes_help() -> str:
    """The exit codes as plain text for ``--help`` (one ``  <code>  <meaning>`` per line)."""
    lines = ["exit codes:"]
    lines += [f"  {int(code):<4}{_SUMMARY[code]}" for code in ExitCode]
    lines.append("errors print an `error:` and a `fix:` line on stderr")
    return "\n".join(lines)


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
