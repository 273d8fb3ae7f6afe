"""``submit --workdir DIR``: the working directory as a content-addressed snapshot in S3.

:func:`pack_workdir` packs the directory into a deterministic ``.tar.gz`` (the same files give
the same bytes, so the SHA-256 of the archive names the code a job runs), without what users
never ship (:data:`ALWAYS_EXCLUDED`, virtual environments, and the patterns of
:data:`IGNORE_FILE` in the directory, in gitignore format); :func:`check_program` checks that
the program is one of the packed files; :func:`upload_snapshot` puts the archive in the
stack's data bucket under :attr:`Snapshot.key`, once: a later submit of the same files
uploads nothing, a submit of edited files is a new key, so a job's code never changes under
it. ``--requirements`` is read by :mod:`trn_ultracluster.cli.requirements_file` (re-exported
here).

Unpacking (the job side) must keep links inside the directory: ``tarfile``'s ``filter="data"``
(PEP 706) or GNU tar refuse members that escape it.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import os
import posixpath
import shutil
import tarfile
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trn_ultracluster.cli.aws import aws_errors, error_code
from trn_ultracluster.cli.errors import CliError, ExitCode
from trn_ultracluster.cli.requirements_file import (
    PROTECTED_PACKAGES,
    Requirements,
    check_requirements,
    read_requirements,
)
from trn_ultracluster.cli.s3_upload import bucket_missing, progress_bar, upload_file
from trn_ultracluster.cli.workdir_rules import ALWAYS_EXCLUDED, IGNORE_FILE, Rules
from trn_ultracluster.cli.workdir_tree import Entry, directory, size_text, unreadable, walk

__all__ = [
    "ALWAYS_EXCLUDED", "IGNORE_FILE", "PROTECTED_PACKAGES", "PUT_OBJECT_MAX_BYTES",
    "Requirements", "SNAPSHOT_PREFIX", "Snapshot", "WORKDIR_CAP_BYTES", "check_program",
    "check_requirements", "pack_workdir", "program_path", "read_requirements",
    "upload_snapshot",
]

WORKDIR_CAP_BYTES = 1024**3
"""Largest working directory, in uncompressed bytes after exclusions: 1 GiB. A working
directory is code and small configuration; tools that ship one set similar bounds: Ray's
``working_dir`` is capped by its GCS package limit (100 MiB in
``ray/_private/runtime_env/packaging.py`` ``GCS_STORAGE_MAX_SIZE``, later tied to the 500 MiB
``max_grpc_message_size``), and SkyPilot's docs warn that multi-GB workdirs upload slowly
("Syncing Code and Artifacts"). Ours goes through S3, so it can be larger than Ray's, but
every node of a job reads it (2,000 nodes x 1 GiB is 2 TB of S3 reads): datasets and
checkpoints belong in the data bucket (``trn-ultracluster data``) or on FSx."""
SNAPSHOT_PREFIX = "trn-ultracluster/code"
"""S3 key prefix of the snapshots in the data bucket."""
PUT_OBJECT_MAX_BYTES = 5 * 1024**3
"""Largest object one PutObject writes: 5 GB (S3 API Reference, PutObject; s3transfer
``utils.MAX_SINGLE_UPLOAD_SIZE`` = 5 GiB). Archives up to this size go in one request (see
:func:`upload_snapshot`); only a raised ``cap_bytes`` can make a larger one."""
PROGRESS_DELAY_S = 1.0
"""The upload's progress bar appears once the upload has taken this long (small snapshots
print no bar)."""
_GZIP_LEVEL = 6  # zlib's default trade-off; fixed, since it changes the archive's bytes


@dataclass(frozen=True)
class Snapshot:
    """A packed working directory (from :func:`pack_workdir`).

    Attributes:
        source: the directory packed (resolved).
        archive: the local ``.tar.gz``, alone in a temporary directory that
            :meth:`cleanup` (or leaving ``with snapshot:``) removes.
        sha256: hex SHA-256 of the archive's bytes; the same files give the same hash.
        files: regular files packed.
        bytes: their total size, uncompressed.
        members: archive paths (POSIX, relative) of the packed files and symbolic links.
    """

    source: Path
    archive: Path
    sha256: str
    files: int
    bytes: int
    members: frozenset[str] = field(default=frozenset(), repr=False, compare=False)

    @property
    def key(self) -> str:
        """The S3 key: ``trn-ultracluster/code/<sha256>.tar.gz``."""
        return f"{SNAPSHOT_PREFIX}/{self.sha256}.tar.gz"

    @property
    def short(self) -> str:
        """The first 12 hex digits of :attr:`sha256`, for output."""
        return self.sha256[:12]

    def cleanup(self) -> None:
        """Remove the archive and its temporary directory."""
        shutil.rmtree(self.archive.parent, ignore_errors=True)

    def __enter__(self) -> Snapshot:
        return self

    def __exit__(self, *exc: object) -> None:
        self.cleanup()


def _info(entry: Entry) -> tarfile.TarInfo:
    """The tar header of ``entry``: no time, owner or group, and git's modes (0755 for
    directories and executable files, 0644 for other files), so the archive depends only
    on the paths, contents and executable bits."""
    info = tarfile.TarInfo(entry.rel)
    info.mtime, info.uid, info.gid, info.uname, info.gname = 0, 0, 0, "", ""
    if entry.kind == "dir":
        info.type, info.mode = tarfile.DIRTYPE, 0o755
    elif entry.kind == "link":
        info.type, info.mode, info.linkname = tarfile.SYMTYPE, 0o777, entry.target
    else:
        info.mode = 0o755 if entry.executable else 0o644
    return info


def _write(source: Path, entries: list[Entry], archive: Path) -> int:
    """Write the deterministic ``.tar.gz``: PAX tar (long and non-ASCII names), gzip with
    header time 0 and no file name (RFC 1952 MTIME 0 = "no time stamp"). Returns the bytes
    of file content packed."""
    total = 0
    with open(archive, "wb") as raw, \
            gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=_GZIP_LEVEL,
                          mtime=0) as gz, \
            tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for entry in entries:
            info = _info(entry)
            if entry.kind != "file":
                tar.addfile(info)
                continue
            try:
                with open(entry.path, "rb") as f:
                    info.size = os.fstat(f.fileno()).st_size
                    tar.addfile(info, f)
            except OSError as err:  # unreadable, or changed while it was read
                raise unreadable(source, entry.path, err) from None
            total += info.size
    return total


def _digest(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1024 * 1024):
            h.update(chunk)
    return h.hexdigest()


def pack_workdir(source: Path, *, cap_bytes: int = WORKDIR_CAP_BYTES) -> Snapshot:
    """Pack ``source`` into a deterministic ``.tar.gz`` in a new temporary directory.

    Args:
        source: the working directory (``--workdir``).
        cap_bytes: the largest total of file sizes after exclusions, in bytes.

    Returns:
        The :class:`Snapshot`; the caller removes its archive (:meth:`Snapshot.cleanup`).

    Raises:
        CliError: (USAGE) naming ``--workdir``: the directory is missing, a file, unreadable
            (or a file or directory in it is), holds a link that points outside it, has no
            file left after exclusions, or is over ``cap_bytes`` (the error lists the five
            largest files); a bad :data:`IGNORE_FILE`.
    """
    source = Path(source)
    root = directory(source)
    rules = Rules.load(root)
    entries = walk(source, root, rules)
    files = [e for e in entries if e.kind == "file"]
    if not files:
        raise CliError(
            f"--workdir {source} has no file to ship after exclusions (the built-in ones, "
            f"virtual environments and {IGNORE_FILE})",
            f"pass the directory that holds your program; check that {root}/{IGNORE_FILE} "
            "does not exclude it")
    total = sum(e.size for e in files)
    if total > cap_bytes:
        largest = sorted(files, key=lambda e: (-e.size, e.rel))[:5]
        raise CliError(
            f"--workdir {source} holds {size_text(total)} in {len(files)} files after exclusions, "
            f"over the {size_text(cap_bytes)} cap; largest: "
            + ", ".join(f"{e.rel} ({size_text(e.size)})" for e in largest),
            f"list what the job does not need in {root}/{IGNORE_FILE} (gitignore format, e.g. "
            "`checkpoints/` or `*.safetensors`); put datasets and weights in the data bucket "
            "(`trn-ultracluster data`)")
    tmp = Path(tempfile.mkdtemp(prefix="trn-ultracluster-workdir-"))
    try:
        archive = tmp / "workdir.tar.gz"
        written = _write(source, entries, archive)
        digest = _digest(archive)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    members = frozenset(e.rel for e in entries if e.kind != "dir")
    return Snapshot(root, archive, digest, len(files), written, members)


def program_path(source: Path, program: str) -> str | None:
    """``program`` as a path inside the snapshot of ``source`` (POSIX, relative), or
    ``None`` when it is outside. A relative ``program`` is relative to ``source`` (the job's
    current directory); an absolute one must be inside ``source``."""
    path = Path(program)
    if path.is_absolute():
        for candidate in (path, path.parent.resolve() / path.name):
            try:
                return candidate.relative_to(source).as_posix()
            except ValueError:
                continue
        return None
    rel = posixpath.normpath(path.as_posix())
    return None if rel == ".." or rel.startswith("../") else rel


def check_program(snapshot: Snapshot, program: str) -> None:
    """Check that the script ``program`` (PROGRAM of ``submit``) is one of the packed files.

    Args:
        snapshot: from :func:`pack_workdir`.
        program: the script as the user gave it: relative to the working directory, or
            absolute inside it.

    Raises:
        CliError: (USAGE) naming PROGRAM: outside the working directory, not in it, a
            directory, or excluded (the error names the rule).
    """
    root, members = snapshot.source, snapshot.members
    where = f"--workdir {root}"
    rel = program_path(root, program)
    if rel is None:
        raise CliError(
            f"PROGRAM {program} is outside {where}; the job runs the snapshot of that "
            "directory, so the program must be a file in it",
            "pass --workdir with a directory that contains the program, and give the program's "
            "path relative to it")
    if rel in members:
        return
    if (root / rel).is_dir():
        raise CliError(f"PROGRAM {program} is a directory in {where}, not a script",
                       "give the script's path, e.g. train.py, or use -m MODULE")
    if (root / rel).exists():
        reason, directory = Rules.load(root).why_excluded(root, rel)
        if not reason.startswith(IGNORE_FILE):
            fix = "built-in exclusions cannot be undone: move or rename the program"
        elif directory:
            fix = (f"remove that pattern from {root}/{IGNORE_FILE}: a file in an excluded "
                   f"directory cannot be re-included (git's rule); exclude the directory's "
                   f"files instead (`{directory}/*`) and add `!{rel}` after it")
        else:
            fix = f"remove that pattern from {root}/{IGNORE_FILE}, or add `!{rel}` after it"
        raise CliError(f"PROGRAM {program} is in {where} but not shipped: excluded by "
                       f"{reason}", fix)
    fix = "give the path relative to --workdir (the job's current directory), e.g. train.py"
    cwd_path = Path(program).absolute()
    if not Path(program).is_absolute():
        inside = program_path(root, str(cwd_path))
        if inside is not None and inside in members:
            fix = f"PROGRAM paths are relative to --workdir: give {inside}"
    raise CliError(f"PROGRAM {program} is not a file in {where}", fix)


def upload_snapshot(session: Any, bucket: str, snapshot: Snapshot, *,
                    progress: bool = True) -> bool:
    """Put the archive in ``s3://<bucket>/<snapshot.key>`` unless it is there already.

    The key is the archive's SHA-256, so an object found there (HeadObject) is this
    archive, and nothing is uploaded. Otherwise one PutObject writes it (the transfer
    manager's ``multipart_threshold`` set above the archive's size, the classic transfer
    client rather than CRT) with ``ChecksumSHA256`` = the archive's SHA-256: S3 computes the
    checksum of the bytes it receives and refuses the request when they differ (S3 User
    Guide, "Checking object integrity for data uploads"). s3transfer passes
    ``ChecksumSHA256`` through (``manager.py`` ``ALLOWED_UPLOAD_ARGS`` includes
    ``FULL_OBJECT_CHECKSUM_ARGS``); with a multipart upload it would send it as a
    FULL_OBJECT checksum (``upload.py`` ``_submit_multipart_request``), which S3 supports
    for CRC algorithms only, not SHA-256 (same guide, checksum types table) — hence one
    PutObject. "Amazon S3 never adds partial objects" (S3 API Reference, PutObject): an
    upload that fails or is interrupted leaves no object under the key. On Ctrl-C,
    s3transfer's ``TransferFuture.result`` cancels the transfer (``futures.py``) and the
    ``InterruptReader`` around the file (``upload.py``) raises in the request's body read, so
    the request ends unfinished; the interrupt then propagates. (A multipart upload would
    also abort itself: ``tasks.py`` ``CreateMultipartUploadTask`` registers
    ``abort_multipart_upload`` as the transfer's failure cleanup.)

    Args:
        session: boto3 session in the stack's Region.
        bucket: the stack's data bucket.
        snapshot: from :func:`pack_workdir`.
        progress: a byte progress bar on stderr for uploads that take over
            :data:`PROGRESS_DELAY_S`.

    Returns:
        ``True`` when uploaded, ``False`` when the object was there already.

    Raises:
        CliError: USAGE when the archive is over :data:`PUT_OBJECT_MAX_BYTES`; STACK when the
            bucket does not exist; as :func:`~trn_ultracluster.cli.aws.aws_errors` (CREDENTIALS
            when PutObject is refused, AWS). A HeadObject refused with 403 (no
            ``s3:ListBucket``) is taken as "not there": the object is put.
    """
    from boto3.s3.transfer import TransferConfig
    from botocore.exceptions import ClientError

    size = snapshot.archive.stat().st_size
    if size > PUT_OBJECT_MAX_BYTES:
        raise CliError(f"--workdir {snapshot.source}: the archive is {size_text(size)}, over the "
                       f"{size_text(PUT_OBJECT_MAX_BYTES)} of one S3 PutObject",
                       f"list large files in {snapshot.source}/{IGNORE_FILE}")
    url = f"s3://{bucket}/{snapshot.key}"
    action = f"upload of the working directory to {url}"
    with aws_errors(action):
        s3 = session.client("s3")
        try:
            s3.head_object(Bucket=bucket, Key=snapshot.key)
            return False
        except ClientError as err:
            code = error_code(err)
            if code == "NoSuchBucket":
                raise bucket_missing(bucket, action) from None
            # 403: S3 answers it instead of 404 for a missing object when the caller lacks
            # s3:ListBucket (S3 API Reference, HeadObject); the key is content-addressed,
            # so putting it again is safe, and a PutObject refused too says so itself
            if code not in ("403", "404", "NoSuchKey", "NotFound"):
                raise
    checksum = base64.b64encode(bytes.fromhex(snapshot.sha256)).decode("ascii")
    config = TransferConfig(multipart_threshold=PUT_OBJECT_MAX_BYTES + 1,
                            preferred_transfer_client="classic")
    with progress_bar(size, url, progress, PROGRESS_DELAY_S) as callback, aws_errors(action):
        upload_file(s3, snapshot.archive, bucket, snapshot.key, action=action,
                    callback=callback, extra_args={"ChecksumSHA256": checksum}, config=config)
    return True
