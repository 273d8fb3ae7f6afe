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

from trn_ultracluster.cli.aws import aws_errors, error_code
from trn_ultracluster.cli.errors import CliError, ExitCode
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


def _upload_failed(err: Exception, bucket: str, action: str) -> CliError:
    """The error for boto3's ``S3UploadFailedError``, which wraps the ``ClientError`` of the
    failed request (boto3 ``s3/transfer.py`` ``upload_file``: raised while handling it, so
    it is the exception's ``__context__``)."""
    from trn_ultracluster.cli.aws import client_error

    cause = err.__context__
    if error_code(cause) == "NoSuchBucket":
        return CliError(f"{action}: bucket {bucket} does not exist",
                        "the outputs are of a deleted stack or another account: read them "
                        "again (leave --outputs-file out) or deploy the stack",
                        ExitCode.STACK)
    if cause is not None and error_code(cause):
        return client_error(action, cause)
    return CliError(f"{action}: {err}", "retry; check the network and the bucket", ExitCode.AWS)


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
    from boto3.exceptions import S3UploadFailedError
    from botocore.exceptions import BotoCoreError

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
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=total, unit="B", unit_scale=True, desc=f"s3://{bucket}/{prefix}")
    try:
        with aws_errors(action):
            s3 = session.client("s3")
            for path, rel in files:
                try:
                    s3.upload_file(str(path), bucket, f"{prefix}/{rel}" if prefix else rel,
                                   Callback=bar.update if bar else None)
                except S3UploadFailedError as err:
                    raise _upload_failed(err, bucket, action) from None
                except BotoCoreError:  # some are OSErrors too: aws_errors explains them
                    raise
                except OSError as err:  # a file vanished or cannot be read mid-upload
                    raise CliError(f"{action}: cannot read {path}: {err.strerror or err}",
                                   "check the file and run `data` again", ExitCode.USAGE) from None
    finally:
        if bar is not None:
            bar.close()
    dra = outputs.values.get(OutputKey.FSX_DATA_REPOSITORY_PATH.value, NONE)
    cluster_path = None if dra == NONE else fsx_path(dra, prefix)
    return StagedData(bucket, prefix, len(files), total, cluster_path)
