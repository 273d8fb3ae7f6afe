"""``submit --requirements FILE``: read the pip requirements file and refuse what would replace
the training image's Neuron stack.

The job installs the file once per job and file content on top of the image's Python
environment (the job script carries the text inline, hence :data:`REQUIREMENTS_CAP_BYTES`).
The names are read the way pip reads a requirements file (pip documentation, "Requirements
File Format", https://pip.pypa.io/en/stable/reference/requirements-file-format/): one
requirement per line, ``\\`` continues a line, ``#`` at the start or after whitespace starts
a comment, lines starting with ``-`` are options, and a requirement may be followed by
per-requirement options (``--hash=...``). A requirement is a PEP 508 string, which pip parses
with ``packaging.requirements.Requirement`` (the same library, vendored in pip), or a path
or URL of an archive or a VCS checkout, whose name is known only from an ``#egg=`` fragment
or the archive's file name.
"""

from __future__ import annotations

import hashlib
import posixpath
import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from trn_ultracluster.cli.errors import CliError, ExitCode
from trn_ultracluster.cli.files import read_text

__all__ = [
    "PROTECTED_PACKAGES",
    "REQUIREMENTS_CAP_BYTES",
    "Requirements",
    "check_requirements",
    "read_requirements",
    "requirement_names",
]

REQUIREMENTS_CAP_BYTES = 16 * 1024
"""Largest ``--requirements`` file, in bytes. The job script carries the file inline, base64
(4/3 of it), and every node runs that script as one ``bash -c`` argument (Slurm's srun, the
TrainJob's command), which Linux caps at 131,072 bytes per argument (``MAX_ARG_STRLEN`` =
32 pages, ``include/uapi/linux/binfmts.h``); the standalone nodes receive it through an SSM
command parameter, whose size limit was not verified. 16 KiB leaves room for the rest of
the script (a few KiB) under both. A list of the
packages a program needs beyond the image is a few hundred bytes; a file this large is
usually ``pip freeze`` of a whole environment, which would also try to reinstall the image's
own packages."""

_ABI_MATCHED = ("torchvision", "torchaudio")
PROTECTED_PACKAGES: frozenset[str] = frozenset(canonicalize_name(name) for name in (
    # Both stacks (training/Dockerfile): PyTorch and the Neuron framework, compiler and NKI.
    "torch", "torch-neuronx", "neuronx-cc", "nki",
    # xla stack: the pytorch-training-neuronx base image installs torch-neuronx (which
    # brings torch-xla and libneuronxla, the PyTorch/XLA bridge and Neuron's PJRT plugin),
    # neuronx_distributed and neuronx_distributed_training at exact versions of one Neuron
    # release, then torch==2.9.0 and torchvision (aws-neuron/deep-learning-containers
    # pytorch/training/2.9.0/Dockerfile.neuronx).
    "torch-xla", "libneuronxla", "neuronx-distributed", "neuronx-distributed-training",
    # Built for exactly one torch release each (pytorch/vision README, the torch ->
    # torchvision table; torchaudio likewise), so pip replaces torch to satisfy them.
    *_ABI_MATCHED,
))
"""Canonical names (``packaging.utils.canonicalize_name``) of the training image's Neuron
stack, which ``--requirements`` must not name. Neuron releases these packages as one set:
each Neuron SDK release lists one version of each (Neuron docs, "Neuron Component Release
Notes", e.g. at v2.33.0:
https://awsdocs-neuron.readthedocs-hosted.com/en/v2.33.0/release-notes/components/index.html),
torch-neuronx's version names the torch it is built for (``2.9.0.2.x`` for PyTorch 2.9,
``2.14.3.0`` for PyTorch 2.14), and libraries that depend on Neuron pin them together
(huggingface/optimum-neuron ``setup.py``, extra ``neuronx``: neuronx-cc, torch-neuronx,
torch, torchvision and libneuronxla at exact versions). A different version of one of them
next to the others, the compiler in the compile cache and the runtime and driver on the
node is a combination nobody built or tested."""


@dataclass(frozen=True)
class Requirements:
    """A ``--requirements`` file as the job carries it.

    Attributes:
        path: the file the user named.
        text: its content (UTF-8).
        sha256: hex SHA-256 of the file's bytes: the key of the job's shared install (one
            install per job and file content).
    """

    path: Path
    text: str
    sha256: str


def read_requirements(path: Path) -> Requirements:
    """Read ``path`` as a pip requirements file.

    Raises:
        CliError: (USAGE) naming ``--requirements``: the file is missing, a directory,
            unreadable, over :data:`REQUIREMENTS_CAP_BYTES`, not UTF-8, or binary (NUL bytes).
    """
    path = Path(path)
    fix = "pass a pip requirements file: one requirement per line, e.g. `transformers==5.23.0`"
    too_long = (f"list only the packages your program needs beyond the image's, at most "
                f"{REQUIREMENTS_CAP_BYTES // 1024} KiB (the job carries the file in its script; "
                "not the output of `pip freeze`: the image already has PyTorch and the Neuron "
                "packages)")
    try:
        size = path.stat().st_size if path.is_file() else 0
    except OSError:
        size = 0  # read_text names the problem
    if size > REQUIREMENTS_CAP_BYTES:
        raise CliError(f"--requirements {path} is {size} bytes; at most "
                       f"{REQUIREMENTS_CAP_BYTES} are allowed", too_long)
    text = read_text(path, "--requirements", fix, regular_only=True,
                     max_bytes=REQUIREMENTS_CAP_BYTES)
    if "\x00" in text:
        raise CliError(f"--requirements {path} is not a text file (it holds NUL bytes)", fix)
    return Requirements(path, text, hashlib.sha256(text.encode("utf-8")).hexdigest())


_COMMENT = re.compile(r"(^|\s+)#.*$")
"""pip's ``req/req_file.py`` ``COMMENT_RE``: ``#`` at the start of a line or after whitespace
(pip's ``join_lines`` joins a line ending in ``\\`` unless the line starts a comment, then
``ignore_comments`` removes them; ``break_args_options`` ends the requirement at the first
word starting with ``-``)."""
_INCLUDES = ("-r", "--requirement", "-c", "--constraint")
_EDITABLE = ("-e", "--editable")
_ARCHIVES = (".zip", ".whl", ".tar.bz2", ".tbz", ".tar.gz", ".tgz", ".tar", ".tar.xz", ".txz",
             ".tlz", ".tar.lz", ".tar.lzma")
"""pip's ``utils/filetypes.py`` ``ARCHIVE_EXTENSIONS``."""
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def _logical_lines(text: str) -> list[tuple[int, str]]:
    """(first line number, line) with continuations joined, comments and blanks removed."""
    out: list[tuple[int, str]] = []
    pending, start = "", 0
    for number, raw in enumerate(text.removeprefix("\ufeff").splitlines(), start=1):
        if not pending:
            start = number
        if raw.endswith("\\") and not _COMMENT.match(raw):
            pending += raw[:-1]
            continue
        line = _COMMENT.sub("", pending + raw).strip()
        pending = ""
        if line:
            out.append((start, line))
    if pending.strip():
        out.append((start, _COMMENT.sub("", pending).strip()))
    return out


def _option(line: str) -> tuple[str, str]:
    """The option and its value: ``("-r", "other.txt")`` of ``-r other.txt``,
    ``-rother.txt`` or ``--requirement=other.txt``."""
    if line.startswith("--"):
        name, _, value = line.partition("=") if "=" in line.split()[0] else line.partition(" ")
        return name.strip(), value.strip()
    return line[:2], line[2:].lstrip("= ").strip()


def _name_of_location(location: str) -> str | None:
    """The project name of a path or URL requirement: the ``#egg=`` fragment, else the
    archive file name (wheel: ``{name}-{version}-...whl``, PEP 427; sdist:
    ``{name}-{version}.tar.gz``), else ``None`` (a directory or a VCS URL without ``egg``)."""
    parts = urlsplit(location)
    egg = parse_qs(parts.fragment).get("egg")
    if egg and (match := _NAME.match(egg[0])):
        return match.group(0)
    filename = posixpath.basename(parts.path if parts.scheme else location)
    if filename.endswith(".whl"):
        return filename.split("-")[0]
    for suffix in _ARCHIVES:
        if filename.endswith(suffix) and "-" in filename:
            return filename[: -len(suffix)].rsplit("-", 1)[0]
    return None


def _looks_like_location(text: str) -> bool:
    """pip treats a line as a path or URL when it has a separator or a URL scheme, starts
    with ``.``, or names an archive (pip ``req/constructors.py`` ``_looks_like_path``,
    ``utils/filetypes.py`` ``is_archive_file``)."""
    return ("/" in text or "\\" in text or text.startswith(".") or "://" in text
            or text.lower().endswith(_ARCHIVES))


def requirement_names(req: Requirements) -> list[tuple[int, str, str | None]]:
    """Each requirement of ``req``: (line number, line, canonical name or ``None`` when pip
    would learn it only by building the path or URL).

    Raises:
        CliError: (USAGE) a ``-r``/``-c`` line (the job carries one file), or a line that is
            neither an option, a PEP 508 requirement nor a path or URL.
    """
    out: list[tuple[int, str, str | None]] = []
    for number, line in _logical_lines(req.text):
        where = f"--requirements {req.path} line {number}"
        if line.startswith("-"):
            option, value = _option(line)
            if option in _INCLUDES:
                raise CliError(
                    f"{where}: {line!r} refers to another file; the job carries only this one "
                    "(it is installed once for all nodes, keyed by its content)",
                    f"copy the lines of {value or 'that file'} into {req.path.name} instead "
                    "(constraints as pinned requirements)")
            if option in _EDITABLE:
                raise CliError(
                    f"{where}: {line!r} is an editable install: pip makes it a .pth file in "
                    "the shared install, and Python reads .pth files only in its own site "
                    "directories, not in PYTHONPATH, where the job puts the install (Python "
                    "docs, module site), so the package would not import",
                    f"install it as a copy: {value or './pkg'} without -e (it is in your "
                    "working directory snapshot anyway)")
            continue  # index, find-links, --pre, ...: pip's business on the node
        spec = line.split(" -", 1)[0].strip()  # drop per-requirement options (--hash=...)
        try:
            parsed = Requirement(spec)
        except InvalidRequirement as err:
            if not _looks_like_location(spec):
                raise CliError(f"{where}: {line!r} is not a requirement pip can read ({err})",
                               "write name, name==version or name @ URL (PEP 508), e.g. "
                               "numpy==2.4.6", ExitCode.USAGE) from None
            parsed = None
        if parsed is None or (not parsed.url and _looks_like_location(spec)):
            name = _name_of_location(spec)  # e.g. pkg-1.0.tar.gz, also a valid PEP 508 name
        else:
            name = parsed.name
        out.append((number, line, canonicalize_name(name) if name else None))
    return out


def check_requirements(req: Requirements) -> None:
    """Refuse requirements that name a package of :data:`PROTECTED_PACKAGES`.

    Installing any of them, even unpinned, lets pip replace the image's build (an upgrade,
    or the build of PyPI instead of Neuron's index) and break the match with the Neuron
    compiler, runtime and driver; a requirement the image already satisfies adds nothing.
    Requirements whose name pip learns only by building them (a directory, a VCS URL
    without ``#egg=``) pass; what they depend on is pip's resolver's business on the node.

    Raises:
        CliError: (USAGE) every refused line in one message, with the fix; and as
            :func:`requirement_names`.
    """
    refused = [(number, line, name) for number, line, name in requirement_names(req)
               if name in PROTECTED_PACKAGES]
    if not refused:
        return
    lines = "; ".join(f"line {number} {line!r}" for number, line, _ in refused)
    names = sorted({name for _, _, name in refused})
    abi = [n for n in names if n in _ABI_MATCHED]
    why = ("the training image's PyTorch and Neuron packages are built and tested together "
           "with the Neuron compiler, runtime and driver")
    if abi:
        why += f" ({', '.join(abi)}: built for exactly one torch release)"
    raise CliError(
        f"--requirements {req.path}: {lines} would replace {', '.join(names)} of the image: "
        f"{why}",
        "drop the line (the image's version is used), or for another Neuron or PyTorch "
        "version build your own image FROM the stack's image (configuration "
        "training_image.user_dockerfile)")
