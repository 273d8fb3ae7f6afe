"""Atomic file writes: write to a temporary name in the same directory, fsync, rename.

A reader never sees a half-written file under the final name: POSIX ``rename`` within one
file system is atomic (also on FSx for Lustre, a POSIX file system).

Permissions: files are created like ``open(path, "w")`` creates them, mode ``0666`` minus the
process umask (``0644`` under the usual umask ``022``), so the cluster's other users and jobs
can read shards, manifests, checkpoints and configs on the shared file system. (The
``tempfile.mkstemp`` used before created ``0600`` files, and the rename kept that mode.) A
stricter umask (e.g. ``027``: ``0640``) is honoured on purpose. Directories the package
creates use ``Path.mkdir``'s ``0777`` minus the umask (``0755``).
"""

from __future__ import annotations

import json
import os
import secrets
from pathlib import Path
from typing import Any, Callable, IO

FILE_MODE = 0o666
"""Mode passed to ``open(2)`` for new files; the kernel removes the umask's bits."""


def fsync_dir(path: str | os.PathLike[str]) -> None:
    """fsync a directory so a rename inside it is durable (no-op where unsupported)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _create_temp(path: Path) -> tuple[int, Path]:
    """Create a new, empty, uniquely named hidden file next to ``path`` (``O_EXCL``)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    for _ in range(100):
        tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
        try:
            return os.open(tmp, flags, FILE_MODE), tmp
        except FileExistsError:
            continue
    raise FileExistsError(f"could not create a unique temporary file next to {path}")


def atomic_write(path: str | os.PathLike[str], write: Callable[[IO[bytes]], None]) -> None:
    """Create or replace ``path`` atomically; ``write`` gets a binary file object.

    The new file's mode is :data:`FILE_MODE` minus the umask (see the module docstring).

    Raises whatever ``write`` raises; the temporary file is removed in that case.
    """
    path = Path(path)
    fd, tmp = _create_temp(path)
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    fsync_dir(path.parent)


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    """Atomically write ``data`` to ``path``."""
    atomic_write(path, lambda f: f.write(data))


def json_bytes(obj: Any) -> bytes:
    """``obj`` as indented, key-sorted JSON (UTF-8, trailing newline): what
    :func:`atomic_write_json` writes."""
    return (json.dumps(obj, indent=2, sort_keys=True) + "\n").encode()


def atomic_write_json(path: str | os.PathLike[str], obj: Any) -> None:
    """Atomically write ``obj`` as indented JSON (UTF-8, trailing newline)."""
    atomic_write_bytes(path, json_bytes(obj))
