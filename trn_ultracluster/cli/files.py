"""Reading the files users name on the command line, with one clear error per failure."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from trn_ultracluster.cli.errors import CliError, ExitCode

__all__ = ["read_text"]


def read_text(path: Path, what: str, fix: str, *, strict: bool = True,
              regular_only: bool = False, max_bytes: int | None = None) -> str:
    """The text of ``path`` (UTF-8; line endings kept as they are).

    Args:
        path: the file the user named.
        what: how messages call it, e.g. ``"outputs file"``.
        fix: the fix for a file that is missing or cannot be read.
        strict: reject bytes that are not UTF-8; with ``False`` they become U+FFFD (logs,
            where a stray byte must not hide the rest).
        regular_only: refuse what is not a regular file (a FIFO would block the read, a
            device such as ``/dev/zero`` never end it).
        max_bytes: refuse a file longer than this (read at most one byte more).

    Raises:
        CliError: (USAGE) missing, a directory, not a regular file (``regular_only``), over
            ``max_bytes``, unreadable, or not UTF-8 text.
    """
    try:
        flags = os.O_RDONLY | (os.O_NONBLOCK if regular_only else 0)  # a FIFO opens at once
        with os.fdopen(os.open(path, flags), "rb") as f:
            if regular_only and not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                if stat.S_ISDIR(os.fstat(f.fileno()).st_mode):
                    raise IsADirectoryError
                raise CliError(f"{what} {path} is not a regular file (a FIFO, socket or "
                               "device)", fix, ExitCode.USAGE)
            data = f.read() if max_bytes is None else f.read(max_bytes + 1)
        if max_bytes is not None and len(data) > max_bytes:
            raise CliError(f"{what} {path} is over {max_bytes} bytes", fix, ExitCode.USAGE)
        return data.decode("utf-8", errors="strict" if strict else "replace")
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
