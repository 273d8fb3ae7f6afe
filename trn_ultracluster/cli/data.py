"""``data``: stage a dataset into the stack's S3 data bucket, where FSx sees it.

The stack links the data bucket to FSx for Lustre with a data repository association
(output ``FsxDataRepositoryPath``: ``/``, the whole file system, by default) with automatic
import: objects written to the bucket appear under ``<FSx mount><path>/<key>`` on every node (FSx for Lustre user
guide, "Automatically import updates from your S3 bucket",
https://docs.aws.amazon.com/fsx/latest/LustreGuide/autoimport-data-repo-dra.html). With
``fsx.data_repository: null`` (output ``none``) the bucket is not linked and jobs must copy
from S3 themselves. A DRA linked to another bucket (``fsx.data_repository.s3_path``) is not
visible in the outputs; this command always writes to the stack's data bucket.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trn_ultracluster.cli.aws import aws_errors
from trn_ultracluster.cli.errors import CliError, ExitCode
from trn_ultracluster.cli.s3_upload import progress_bar, upload_file
from trn_ultracluster.cli.stack_outputs import StackOutputs
from trn_ultracluster.contracts.outputs import NONE, OutputKey
from trn_ultracluster.contracts.shared_storage import fsx_path

__all__ = ["StagedData", "stage_dataset"]


@dataclass(frozen=True)
class StagedData:
    """Result of :func:`stage_dataset`: where the files went and where jobs see them."""

    bucket: str
    prefix: str
    files: int
    bytes: int
    cluster_path: str | None
    """Path on the cluster's FSx, or ``None`` when the bucket is not linked."""


def _files(source: Path) -> list[tuple[Path, str]]:
    if source.is_file():
        return [(source, source.name)]
    return [(p, p.relative_to(source).as_posix()) for p in sorted(source.rglob("*")) if p.is_file()]


def stage_dataset(session: Any, outputs: StackOutputs, source: Path, prefix: str,
                  progress: bool = True) -> StagedData:
    """Upload ``source`` (a file or a directory tree) to ``s3://<data bucket>/<prefix>/``.

    Args:
        session: boto3 session in the stack's Region.
        outputs: the stack outputs (data bucket, DRA path).
        source: local file or directory.
        prefix: key prefix, e.g. ``datasets/wikitext``.
        progress: show a byte progress bar (tqdm) on stderr.

    Raises:
        CliError: USAGE when the source is missing, empty, not a regular file or directory,
            or a file cannot be read; STACK when the data bucket does not exist;
            CREDENTIALS and AWS as :func:`aws_errors`.
    """
    if not source.exists():
        raise CliError(f"{source} does not exist", "pass a local file or directory")
    if not (source.is_file() or source.is_dir()):
        raise CliError(f"{source} is not a regular file or directory",
                       "pass a local file or directory")
    try:
        files = _files(source)
        total = sum(p.stat().st_size for p, _ in files)
    except OSError as err:
        raise CliError(f"cannot read {source}: {err}", "check the permissions of the files",
                       ExitCode.USAGE) from None
    if not files:
        raise CliError(f"{source} holds no files", "pass a directory with the dataset files")
    bucket = outputs.get(OutputKey.DATA_BUCKET_NAME)
    prefix = prefix.strip("/")
    action = f"upload to s3://{bucket}/{prefix}"
    with progress_bar(total, f"s3://{bucket}/{prefix}", progress) as callback, \
            aws_errors(action):
        s3 = session.client("s3")
        for path, rel in files:
            upload_file(s3, path, bucket, f"{prefix}/{rel}" if prefix else rel, action=action,
                        callback=callback)
    dra = outputs.data_bucket_on_fsx()
    cluster_path = None if dra == NONE else fsx_path(dra, prefix)
    return StagedData(bucket, prefix, len(files), total, cluster_path)
