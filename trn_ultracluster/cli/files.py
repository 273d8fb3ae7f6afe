"""Reading the files users name on the command line, with one clear error per failure."""

from __future__ import annotations

from pathlib import Path

from trn_ultracluster.cli.errors import CliError, ExitCode

__all__ = ["read_text"]


def read_text(path: Path, what: str, fix: str, *, strict: bool = True) -> str:
    """The text of ``path`` (UTF-8).

    Args:
        path: the file the user named.
        what: how messages call it, e.g. ``"outputs file"``.
        fix: the fix for a file that is missing or cannot be read.
        strict: reject bytes that are not UTF-8; with ``False`` they become U+FFFD (logs,
            where a stray byte must not hide the rest).

    Raises:
        CliError: (USAGE) missing, a directory, unreadable, or not UTF-8 text.
    """
    try:
        return Path(path).read_text(encoding="utf-8", errors="strict" if strict else "replace")
    except FileNotFoundError:
        problem = "does not exist"
    except IsADirectoryError:
        problem = "is a directory"
    except PermissionError:
        problem = "cannot be read (permission denied)"
    except UnicodeDecodeError as err:
        problem = f"is not UTF-8 text (byte {err.start})"
    except OSError as err:
        problem = f"cannot be read ({err.strerror or err})"
    raise CliError(f"{what} {path} {problem}", fix, ExitCode.USAGE)
