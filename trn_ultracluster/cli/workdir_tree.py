"""The files of a ``--workdir`` that a snapshot ships: found without following links, with
one clear error per path that cannot be shipped."""

from __future__ import annotations

import os
import posixpath
import stat
from dataclasses import dataclass
from pathlib import Path

from trn_ultracluster.cli.errors import CliError
from trn_ultracluster.cli.workdir_rules import IGNORE_FILE, Rules, is_venv

__all__ = ["Entry", "directory", "size_text", "unreadable", "walk"]


@dataclass(frozen=True)
class Entry:
    """A path to pack: ``rel`` (POSIX, relative to the working directory) at ``path``, of
    ``kind`` ``"dir"``, ``"file"`` (``size`` bytes, ``executable``) or ``"link"``
    (``target``)."""

    rel: str
    path: str
    kind: str  # "dir", "file" or "link"
    size: int = 0
    executable: bool = False
    target: str = ""


def size_text(n: int) -> str:
    """``n`` bytes for people: ``"1.5 GiB"``, ``"12.0 KiB"``, ``"100 B"``."""
    value, unit = float(n), "B"
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            break
        value /= 1024
    return f"{n} B" if unit == "B" else f"{value:.1f} {unit}"


def unreadable(source: Path, path: str, err: OSError) -> CliError:
    """The error (USAGE) for a file or directory of ``--workdir source`` that cannot be read."""
    kind = "directory" if os.path.isdir(path) else "file"
    problem = "permission denied" if isinstance(err, PermissionError) else (err.strerror or err)
    return CliError(
        f"--workdir {source}: cannot read the {kind} {path} ({problem}); every file the job "
        "ships must be readable",
        f"make it readable (chmod -R u+rX {path}) or list it in {source}/{IGNORE_FILE} "
        "(gitignore format)")


def directory(source: Path) -> Path:
    """``source`` (``--workdir``) resolved.

    Raises:
        CliError: (USAGE) it does not exist, is a file or something else, or cannot be read.
    """
    fix = "pass the directory that holds your program, e.g. --workdir ."
    try:
        exists, is_dir = source.exists(), source.is_dir()
    except OSError as err:
        raise unreadable(source, str(source), err) from None
    if not exists:
        raise CliError(f"--workdir {source} does not exist; it must be the directory of your "
                       "code", fix)
    if not is_dir:
        what = "a file" if source.is_file() else "not a directory"
        raise CliError(f"--workdir {source} is {what}; it must be the directory of your code",
                       f"pass the directory that holds it: --workdir {source.parent}"
                       if source.is_file() else fix)
    return source.resolve()


def _link_target(source: Path, root: str, path: str, rel: str) -> str:
    """The target of the link ``rel``, when it stays inside ``root``, else the error."""
    target = os.readlink(path)
    lexical = posixpath.normpath(posixpath.join(posixpath.dirname(rel), target))
    real = os.path.realpath(path)
    if (posixpath.isabs(target) or lexical == ".." or lexical.startswith("../")
            or not (real == root or real.startswith(root + os.sep))):
        raise CliError(
            f"--workdir {source}: the symbolic link {rel} -> {target} points outside the "
            "directory; only links to files inside it are shipped (the nodes get nothing else)",
            f"list {rel} in {source}/{IGNORE_FILE}, or replace the link with a copy of what it "
            "points to")
    return target


def walk(source: Path, root: Path, rules: Rules) -> list[Entry]:
    """The entries to pack, depth first, each directory's children sorted by name. Excluded
    directories are not entered (as in git, a file under one cannot be re-included);
    symbolic links are never followed; sockets, FIFOs and devices are left out."""
    entries: list[Entry] = []
    top = str(root)

    def visit(directory: str, prefix: str) -> None:
        try:
            with os.scandir(directory) as it:
                children = sorted(it, key=lambda e: e.name)
        except OSError as err:
            raise unreadable(source, directory, err) from None
        for child in children:
            rel = prefix + child.name
            try:
                st = child.stat(follow_symlinks=False)
            except OSError as err:
                raise unreadable(source, child.path, err) from None
            if stat.S_ISDIR(st.st_mode):
                if rules.reason(rel + "/") is None and not is_venv(child.path):
                    entries.append(Entry(rel, child.path, "dir"))
                    visit(child.path, rel + "/")
            elif stat.S_ISLNK(st.st_mode):
                if rules.reason(rel) is None and not (
                        os.path.isdir(child.path) and rules.reason(rel + "/")):
                    entries.append(Entry(rel, child.path, "link",
                                          target=_link_target(source, top, child.path, rel)))
            elif stat.S_ISREG(st.st_mode) and rules.reason(rel) is None:
                entries.append(Entry(rel, child.path, "file", st.st_size,
                                      bool(st.st_mode & 0o111)))

    visit(top, "")
    return entries
