"""Whoever runs ``make deploy`` can use the EKS cluster with no manual step: the caller's
principal is resolved (STS, IAM) into ``eks.deployer_principal_arn`` and the stack gives it an
access entry. No AWS: botocore Stubber."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys

import pytest

from tests.cli.helpers import ACCOUNT, StubSession, stubbed
from tests.conftest import REPO_ROOT
from trn_ultracluster.cli.errors import CliError, ExitCode
from trn_ultracluster.cli.principal import caller_principal

SSO_ROLE = (f"arn:aws:iam::{ACCOUNT}:role/aws-reserved/sso.amazonaws.com/us-west-2/"
            "AWSReservedSSO_Admin_0123456789abcdef")


def _identity(arn: str) -> dict:
    return {"UserId": "AIDAEXAMPLE", "Account": ACCOUNT, "Arn": arn}


# --- who deploys ---------------------------------------------------------------------------


def test_assumed_role_resolves_to_its_role_with_path():
    sts, sts_stub = stubbed("sts")
    iam, iam_stub = stubbed("iam")
    sts_stub.add_response("get_caller_identity", _identity(
        f"arn:aws:sts::{ACCOUNT}:assumed-role/AWSReservedSSO_Admin_0123456789abcdef/alice"))
    iam_stub.add_response("get_role", {"Role": {
        "Path": "/aws-reserved/sso.amazonaws.com/us-west-2/",
        "RoleName": "AWSReservedSSO_Admin_0123456789abcdef", "RoleId": "AROAEXAMPLEEXAMPLEXX",
        "Arn": SSO_ROLE, "CreateDate": dt.datetime(2026, 1, 1),
        "AssumeRolePolicyDocument": "{}"}},
        {"RoleName": "AWSReservedSSO_Admin_0123456789abcdef"})
    with sts_stub, iam_stub:
        principal = caller_principal(StubSession(sts=sts, iam=iam))
    assert principal.arn == SSO_ROLE and not principal.warning


def test_without_iam_get_role_the_role_arn_has_no_path_and_a_warning():
    sts, sts_stub = stubbed("sts")
    iam, iam_stub = stubbed("iam")
    sts_stub.add_response("get_caller_identity", _identity(
        f"arn:aws:sts::{ACCOUNT}:assumed-role/Deployer/ci-run"))
    iam_stub.add_client_error("get_role", "AccessDenied", "not allowed", 403)
    with sts_stub, iam_stub:
        principal = caller_principal(StubSession(sts=sts, iam=iam))
    assert principal.arn == f"arn:aws:iam::{ACCOUNT}:role/Deployer"
    assert "iam:GetRole" in principal.warning and "eks.admin_role_arn" in principal.warning


def test_iam_user_is_used_as_is():
    sts, stub = stubbed("sts")
    stub.add_response("get_caller_identity", _identity(f"arn:aws:iam::{ACCOUNT}:user/bob"))
    with stub:
        assert caller_principal(StubSession(sts=sts)).arn == f"arn:aws:iam::{ACCOUNT}:user/bob"


@pytest.mark.parametrize("arn", [f"arn:aws:iam::{ACCOUNT}:root",
                                 f"arn:aws:sts::{ACCOUNT}:federated-user/carol"])
def test_root_and_federated_users_get_a_clear_error(arn):
    sts, stub = stubbed("sts")
    stub.add_response("get_caller_identity", _identity(arn))
    with stub, pytest.raises(CliError) as err:
        caller_principal(StubSession(sts=sts))
    assert err.value.exit_code == ExitCode.USAGE and "access entry cannot name" in err.value.message


def test_principal_module_prints_the_arn_for_make_deploy(tmp_path, monkeypatch):
    from trn_ultracluster.cli import principal

    monkeypatch.setattr(principal, "make_session", lambda region: "session")
    monkeypatch.setattr(principal, "caller_principal",
                        lambda session: principal.Principal(SSO_ROLE, "caller"))
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert principal.main([]) == 0
    assert out.getvalue() == SSO_ROLE + "\n"


def test_principal_module_without_credentials_fails_with_a_message(tmp_path):
    env = {"PATH": "/usr/bin:/bin", "AWS_CONFIG_FILE": str(tmp_path / "none"),
           "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "none"), "AWS_EC2_METADATA_DISABLED": "true",
           "PYTHONPATH": str(REPO_ROOT)}
    done = subprocess.run([sys.executable, "-m", "trn_ultracluster.cli.principal", "us-west-2"],
                          capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == ExitCode.CREDENTIALS
    assert done.stdout == "" and "error: GetCallerIdentity: no AWS credentials found" in done.stderr
    assert "Traceback" not in done.stderr


# --- the stack: access entries -------------------------------------------------------------


def _access_entries(s) -> dict[str, dict]:
    return {r["Properties"]["PrincipalArn"]: r["Properties"]
            for r in s.resources("AWS::EKS::AccessEntry").values()
            if isinstance(r["Properties"]["PrincipalArn"], str)}  # not the kubectl role


def test_deployer_gets_a_cluster_admin_access_entry(synth):
    s = synth(**{"eks.deployer_principal_arn": SSO_ROLE})
    entry = _access_entries(s)[SSO_ROLE]
    (policy,) = entry["AccessPolicies"]
    assert json.dumps(policy["PolicyArn"]).endswith(
        ':cluster-access-policy/AmazonEKSClusterAdminPolicy"]]}')
    assert policy["AccessScope"] == {"Type": "cluster"}
    assert not [w for w in s.warnings if w.field == "eks.admin_role_arn"]


def test_admin_and_deployer_each_get_one_entry_and_a_principal_only_one(synth):
    admin = f"arn:aws:iam::{ACCOUNT}:role/TrainingAdmin"
    both = synth(**{"eks.deployer_principal_arn": SSO_ROLE, "eks.admin_role_arn": admin})
    assert {SSO_ROLE, admin} <= set(_access_entries(both))
    same = synth(**{"eks.deployer_principal_arn": admin, "eks.admin_role_arn": admin})
    principals = [r["Properties"]["PrincipalArn"]
                  for r in same.resources("AWS::EKS::AccessEntry").values()]
    assert principals.count(admin) == 1  # EKS: a principal can be in only one access entry
    # adding the deployer keeps the admin entry's logical id (no replacement)
    alone = synth(**{"eks.admin_role_arn": admin})
    ids = {k for k, r in alone.resources("AWS::EKS::AccessEntry").items()
           if r["Properties"]["PrincipalArn"] == admin}
    assert ids <= set(both.resources("AWS::EKS::AccessEntry"))


def test_make_deploy_passes_the_deployer(tmp_path):
    makefile = (REPO_ROOT / "Makefile").read_text()
    assert "-m trn_ultracluster.cli.principal" in makefile
    recipe = makefile.split("\ndeploy:", 1)[1].split("\n\n", 1)[0]
    assert "-c eks.deployer_principal_arn=$$deployer" in recipe
    assert "&&" in recipe  # a failed lookup stops the deploy
