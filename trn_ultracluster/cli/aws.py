"""AWS sessions and the translation of botocore errors into :class:`CliError`.

boto3 is imported lazily, so ``--help`` and ``--dry-run`` with ``--outputs-file`` never
load it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from trn_ultracluster.cli.errors import CliError, ExitCode

__all__ = ["aws_errors", "error_code", "make_session", "resolve_region"]

DOC_CREDENTIALS = "https://docs.aws.amazon.com/cli/latest/userguide/cli-configure-files.html"
_DENIED = {
    "AccessDenied", "AccessDeniedException", "UnauthorizedOperation", "ExpiredToken",
    "ExpiredTokenException", "InvalidClientTokenId", "UnrecognizedClientException",
    "AuthFailure", "SignatureDoesNotMatch",
}
"""Error codes that mean "these credentials cannot make this call" (botocore service
models of CloudFormation, EC2, STS, Service Quotas, SSM, S3)."""
_THROTTLED = {
    "Throttling", "ThrottlingException", "ThrottledException", "RequestThrottledException",
    "TooManyRequestsException", "ProvisionedThroughputExceededException",
    "RequestLimitExceeded", "BandwidthLimitExceeded", "RequestThrottled", "SlowDown",
    "PriorRequestNotComplete", "EC2ThrottledException",
}
"""Throttling error codes: botocore ``retries/standard.py`` ``_THROTTLED_ERROR_CODES``
(botocore 1.44), without ``LimitExceededException`` (a resource limit in some services)."""
_REGION_OFF = {"OptInRequired", "InvalidClientTokenId.RegionDisabled"}
"""The account has not enabled the Region (opt-in Regions)."""


def resolve_region(region: str | None) -> str | None:
    """The Region to use: ``region`` (``--region``), else ``AWS_REGION``, else ``None``
    (botocore then reads ``AWS_DEFAULT_REGION`` and the AWS config file).

    botocore itself ignores ``AWS_REGION`` (its config provider maps ``region`` to
    ``AWS_DEFAULT_REGION`` only); the AWS SDKs and the AWS CLI v2 honour it ahead of
    ``AWS_DEFAULT_REGION`` (AWS SDKs and Tools Reference Guide, "AWS Region",
    https://docs.aws.amazon.com/sdkref/latest/guide/feature-region.html).
    """
    return region or os.environ.get("AWS_REGION") or None


def make_session(region: str | None) -> Any:
    """A ``boto3.Session`` for :func:`resolve_region` of ``region``.

    Raises:
        CliError: (CREDENTIALS) ``AWS_PROFILE`` names a profile the AWS config lacks.
    """
    import boto3
    from botocore.exceptions import ProfileNotFound

    try:
        return boto3.Session(region_name=resolve_region(region))
    except ProfileNotFound as err:
        raise CliError(f"AWS profile {err.kwargs.get('profile')!r} not found (AWS_PROFILE)",
                       "set AWS_PROFILE to one of `aws configure list-profiles`, or unset it",
                       ExitCode.CREDENTIALS) from None


def error_code(err: Exception) -> str:
    """The ``Error.Code`` of a botocore ``ClientError`` (empty for other exceptions)."""
    response = getattr(err, "response", None) or {}
    return str(response.get("Error", {}).get("Code", ""))


def client_error(action: str, err: Exception) -> CliError:
    """A :class:`CliError` for a botocore ``ClientError`` nobody expected.

    Credentials/permission codes give CREDENTIALS; everything else AWS (throttling, a
    Region not enabled, service errors), with AWS's code and message.
    """
    code = error_code(err)
    message = (getattr(err, "response", None) or {}).get("Error", {}).get("Message", "") or str(err)
    text = f"{action}: {code}: {message}"
    if code in _DENIED:
        return CliError(text, "use credentials allowed to make this call (see "
                        "docs/walkthrough.md, 'Permissions')", ExitCode.CREDENTIALS)
    if code in _THROTTLED:
        fix = "AWS is throttling this account's calls: retry in a minute"
    elif code in _REGION_OFF:
        fix = "enable the Region for the account (Account settings > AWS Regions) or use another"
    else:
        fix = "retry; if it persists, the AWS error code and message in this error name the cause"
    return CliError(text, fix, ExitCode.AWS)


@contextmanager
def aws_errors(action: str) -> Iterator[None]:
    """Turn every botocore error raised inside into :class:`CliError`.

    Callers that expect a particular ``ClientError`` (a missing stack, say) catch it inside
    the block and re-raise the others, which end here.

    Args:
        action: what was being done, e.g. ``"DescribeStacks TrnUltraCluster"``.

    Raises:
        CliError: CREDENTIALS for missing/invalid/denied credentials; USAGE when no Region
            is configured; AWS for an unreachable endpoint, throttling, a Region not enabled
            or any other AWS error.
    """
    from botocore.exceptions import (
        BotoCoreError,
        ClientError,
        ConnectionError as AwsConnectionError,
        HTTPClientError,
        NoCredentialsError,
        NoRegionError,
        PartialCredentialsError,
    )

    try:
        yield
    except (NoCredentialsError, PartialCredentialsError) as err:
        raise CliError(
            f"{action}: no AWS credentials found ({err})",
            "configure credentials (aws configure / AWS_PROFILE / SSO login, see "
            f"{DOC_CREDENTIALS}), or use --outputs-file for commands that only read outputs",
            ExitCode.CREDENTIALS,
        ) from None
    except NoRegionError:
        raise CliError(f"{action}: no AWS Region configured",
                       "pass --region (e.g. --region us-west-2) or set AWS_REGION",
                       ExitCode.USAGE) from None
    except (AwsConnectionError, HTTPClientError) as err:
        raise CliError(f"{action}: cannot reach AWS ({err})",
                       "check the network, proxy and --region", ExitCode.AWS) from None
    except ClientError as err:
        raise client_error(action, err) from None
    except BotoCoreError as err:
        raise CliError(f"{action}: {err}", "check --region and the arguments; retry",
                       ExitCode.AWS) from None
