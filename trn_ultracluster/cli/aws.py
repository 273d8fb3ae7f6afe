"""AWS sessions and the translation of botocore errors into :class:`CliError`.

boto3 is imported lazily, so ``--help`` and ``--dry-run`` with ``--outputs-file`` never
load it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from trn_ultracluster.cli.errors import CliError, ExitCode

__all__ = ["aws_errors", "make_session"]

DOC_CREDENTIALS = "https://docs.aws.amazon.com/cli/latest/userguide/cli-configure-files.html"
_DENIED = {
    "AccessDenied", "AccessDeniedException", "UnauthorizedOperation", "ExpiredToken",
    "ExpiredTokenException", "InvalidClientTokenId", "UnrecognizedClientException",
    "AuthFailure", "SignatureDoesNotMatch",
}
"""Error codes that mean "these credentials cannot make this call" (botocore service
models of CloudFormation, EC2, STS, Service Quotas, SSM, S3)."""


def make_session(region: str | None) -> Any:
    """A ``boto3.Session`` for ``region`` (``None``: the AWS config/environment default)."""
    import boto3

    return boto3.Session(region_name=region)


def error_code(err: Exception) -> str:
    """The ``Error.Code`` of a botocore ``ClientError`` (empty for other exceptions)."""
    response = getattr(err, "response", None) or {}
    return str(response.get("Error", {}).get("Code", ""))


@contextmanager
def aws_errors(action: str) -> Iterator[None]:
    """Turn credential, permission and connection errors raised inside into :class:`CliError`.

    Args:
        action: what was being done, e.g. ``"DescribeStacks TrnUltraCluster"``.

    Raises:
        CliError: exit code CREDENTIALS for missing/invalid/denied credentials or an
            unreachable endpoint, USAGE when no Region is configured. Other ``ClientError``s
            pass through for the caller to explain.
    """
    from botocore.exceptions import (
        ClientError,
        EndpointConnectionError,
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
    except EndpointConnectionError as err:
        raise CliError(f"{action}: cannot reach AWS ({err})",
                       "check the network, proxy and --region", ExitCode.CREDENTIALS) from None
    except ClientError as err:
        if error_code(err) in _DENIED:
            raise CliError(
                f"{action}: {error_code(err)}: {err.response['Error'].get('Message', '')}",
                "use credentials allowed to make this call (see docs/walkthrough.md, "
                "'Permissions')",
                ExitCode.CREDENTIALS,
            ) from None
        raise
