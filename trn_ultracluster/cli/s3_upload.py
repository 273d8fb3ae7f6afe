"""Uploading local files to S3 with boto3's transfer manager: the progress bar and the errors.

Shared by ``data`` (:func:`trn_ultracluster.cli.data.stage_dataset`) and the working-directory
snapshot of ``submit`` (:func:`trn_ultracluster.cli.workdir.upload_snapshot`). Callers wrap
the calls in :func:`trn_ultracluster.cli.aws.aws_errors`, which explains the botocore errors
that are not about the upload itself (credentials, Region, endpoint).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from trn_ultracluster.cli.aws import client_error, error_code
from trn_ultracluster.cli.errors import CliError, ExitCode

__all__ = ["bucket_missing", "progress_bar", "upload_failed", "upload_file"]


def bucket_missing(bucket: str, action: str) -> CliError:
    """The error (STACK) for a data bucket that does not exist."""
    return CliError(f"{action}: bucket {bucket} does not exist",
                    "the outputs are of a deleted stack or another account: read them "
                    "again (leave --outputs-file out) or deploy the stack", ExitCode.STACK)


def upload_failed(err: Exception, bucket: str, action: str) -> CliError:
    """The error for boto3's ``S3UploadFailedError``, which wraps the ``ClientError`` of the
    failed request (boto3 ``s3/transfer.py`` ``upload_file``: raised while handling it, so
    it is the exception's ``__context__``).

    Returns:
        STACK when the bucket does not exist; what :func:`client_error` makes of another
        AWS error code; AWS otherwise.
    """
    cause = err.__context__
    if error_code(cause) == "NoSuchBucket":
        return bucket_missing(bucket, action)
    if cause is not None and error_code(cause):
        return client_error(action, cause)
    return CliError(f"{action}: {err}", "retry; check the network and the bucket", ExitCode.AWS)


@contextmanager
def progress_bar(total: int, desc: str, enabled: bool,
                 delay_s: float = 0.0) -> Iterator[Callable[[int], Any] | None]:
    """A tqdm byte progress bar on stderr, as the ``Callback`` of ``upload_file``.

    Args:
        total: bytes to transfer.
        desc: the bar's label (the destination).
        enabled: ``False`` gives ``None`` (no bar, no callback).
        delay_s: show the bar only once the transfer has taken this long (tqdm ``delay``),
            so small uploads print nothing.

    Yields:
        The bar's ``update`` (takes a byte count), or ``None``.
    """
    if not enabled:
        yield None
        return
    from tqdm import tqdm

    bar = tqdm(total=total, unit="B", unit_scale=True, desc=desc, delay=delay_s)
    try:
        yield bar.update
    finally:
        bar.close()


def upload_file(s3: Any, path: Path, bucket: str, key: str, *, action: str,
                callback: Callable[[int], Any] | None = None,
                extra_args: dict[str, str] | None = None, config: Any = None) -> None:
    """``s3.upload_file(path, bucket, key)`` with its failures as :class:`CliError`.

    Args:
        s3: boto3 S3 client.
        path: the local file.
        bucket, key: the destination.
        action: what the messages call the upload, e.g. ``"upload to s3://b/p"``.
        callback: called with byte counts as they are sent (a progress bar).
        extra_args: ``ExtraArgs`` of ``upload_file`` (s3transfer's ``ALLOWED_UPLOAD_ARGS``).
        config: a ``boto3.s3.transfer.TransferConfig``, or ``None`` for boto3's defaults.

    Raises:
        CliError: as :func:`upload_failed` for a refused request; USAGE when the file
            cannot be read mid-upload. botocore's own errors (credentials, endpoint) pass
            through to the caller's :func:`~trn_ultracluster.cli.aws.aws_errors`.
    """
    from boto3.exceptions import S3UploadFailedError
    from botocore.exceptions import BotoCoreError

    try:
        s3.upload_file(str(path), bucket, key, ExtraArgs=extra_args, Callback=callback,
                       Config=config)
    except S3UploadFailedError as err:
        raise upload_failed(err, bucket, action) from None
    except BotoCoreError:  # some are OSErrors too: aws_errors explains them
        raise
    except OSError as err:  # a file vanished or cannot be read mid-upload
        raise CliError(f"{action}: cannot read {path}: {err.strerror or err}",
                       "check the file and run the command again", ExitCode.USAGE) from None
