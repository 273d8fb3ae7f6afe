"""The IAM principal behind the current AWS credentials, as an EKS access entry needs it.

``python -m trn_ultracluster.cli.principal`` prints it; ``make deploy`` passes it as
``-c eks.deployer_principal_arn=...`` so that whoever deploys is cluster admin at once.

STS ``GetCallerIdentity`` answers ``arn:aws:sts::<account>:assumed-role/<role>/<session>``
for assumed roles (SSO, ``aws sts assume-role``, instance profiles) and
``arn:aws:iam::<account>:user/<name>`` for IAM users (IAM user guide, "IAM identifiers",
STS ARNs). An access entry takes the role's IAM ARN, *with* its path (EKS user guide,
"Create access entries": "If the ARN is for an IAM role, it can include a path"), and the
session ARN carries no path (SSO roles live under ``/aws-reserved/sso.amazonaws.com/``), so
the role is looked up with IAM ``GetRole``; without ``iam:GetRole`` the path-less ARN is
used and a warning says so.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from typing import Any

from trn_ultracluster.cli.aws import aws_errors, error_code, make_session
from trn_ultracluster.cli.errors import CliError, ExitCode

__all__ = ["Principal", "caller_principal", "main"]

_ASSUMED_ROLE = re.compile(
    r"^arn:(?P<partition>aws[a-z-]*):sts::(?P<account>[0-9]{12}):assumed-role/(?P<role>[^/]+)/.+$")
_IAM_PRINCIPAL = re.compile(r"^arn:aws[a-z-]*:iam::[0-9]{12}:(role|user)/.+$")


@dataclass(frozen=True)
class Principal:
    """An IAM principal for an access entry.

    Attributes:
        arn: IAM role or user ARN.
        caller_arn: what ``GetCallerIdentity`` returned.
        warning: set when the role's path could not be read (``iam:GetRole`` denied).
    """

    arn: str
    caller_arn: str
    warning: str = ""


def caller_principal(session: Any) -> Principal:
    """Resolve the caller of ``session`` to an IAM role or user ARN.

    Raises:
        CliError: no usable credentials (CREDENTIALS); the caller is the root user or a
            federated user, which EKS access entries cannot name (USAGE).
    """
    from botocore.exceptions import ClientError

    with aws_errors("GetCallerIdentity"):
        caller = session.client("sts").get_caller_identity()["Arn"]
    if _IAM_PRINCIPAL.match(caller):
        return Principal(caller, caller)
    match = _ASSUMED_ROLE.match(caller)
    if match is None:
        raise CliError(
            f"the credentials belong to {caller}, which an EKS access entry cannot name "
            "(only IAM roles and users can be given cluster access)",
            "deploy with an IAM role or user, or set eks.admin_role_arn and deploy with "
            "`npx cdk deploy` directly", ExitCode.USAGE)
    role = match.group("role")
    plain = f"arn:{match.group('partition')}:iam::{match.group('account')}:role/{role}"
    with aws_errors("GetRole"):
        try:
            arn = session.client("iam").get_role(RoleName=role)["Role"]["Arn"]
        except ClientError as err:
            if error_code(err) not in ("AccessDenied", "AccessDeniedException"):
                raise
            return Principal(plain, caller, warning=(
                f"iam:GetRole on {role} was denied, so the role's path is unknown; using "
                f"{plain}. If the role has a path (SSO roles do), set eks.admin_role_arn to "
                "its full ARN instead"))
    return Principal(arn, caller)


def main(argv: list[str] | None = None) -> int:
    """Print the caller's IAM principal ARN on stdout (warnings and errors on stderr)."""
    region = argv[0] if argv else None
    try:
        principal = caller_principal(make_session(region))
    except CliError as err:
        print(f"error: {err.message}", file=sys.stderr)
        if err.fix:
            print(f"fix: {err.fix}", file=sys.stderr)
        return int(err.exit_code)
    if principal.warning:
        print(f"warning: {principal.warning}", file=sys.stderr)
    print(principal.arn)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
