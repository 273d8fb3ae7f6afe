"""After `make deploy`, whoever deployed can use the EKS cluster with no manual step: the
caller's principal is resolved (STS, IAM) into `eks.deployer_principal_arn`, the stack gives
it an access entry, and the job CLI reaches the cluster with AWS credentials alone (EKS
DescribeCluster + a signed token). Also `scale` for Capacity Block node groups. No AWS:
botocore Stubber and moto."""

from __future__ import annotations

import base64
import json
import datetime as dt
import subprocess
import sys
from urllib.parse import parse_qs, urlparse

import boto3
import moto
import pytest
from botocore.stub import Stubber

from tests.conftest import REPO_ROOT
from tests.test_cli import REGION, fake_aws_env, outputs_values, run, write_outputs  # noqa: F401
from trn_ultracluster.cli.eks_auth import K8S_AWS_ID_HEADER, TOKEN_PREFIX, eks_api_client, eks_token
from trn_ultracluster.cli.errors import CliError, ExitCode
from trn_ultracluster.cli.principal import caller_principal

ACCOUNT = "123456789012"
SSO_ROLE = (f"arn:aws:iam::{ACCOUNT}:role/aws-reserved/sso.amazonaws.com/us-west-2/"
            "AWSReservedSSO_Admin_0123456789abcdef")


class StubSession:
    """A boto3-like session whose named clients are stubbed (the others are real)."""

    def __init__(self, **clients):
        self.clients = clients
        self.region_name = REGION

    def client(self, name, region_name=None):
        return self.clients[name]


def _stubbed(service: str):
    client = boto3.client(service, region_name=REGION, aws_access_key_id="x",
                          aws_secret_access_key="y")
    return client, Stubber(client)


def _identity(arn: str) -> dict:
    return {"UserId": "AIDAEXAMPLE", "Account": ACCOUNT, "Arn": arn}


# --- who deploys ---------------------------------------------------------------------------


def test_assumed_role_resolves_to_its_role_with_path():
    sts, sts_stub = _stubbed("sts")
    iam, iam_stub = _stubbed("iam")
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
    sts, sts_stub = _stubbed("sts")
    iam, iam_stub = _stubbed("iam")
    sts_stub.add_response("get_caller_identity", _identity(
        f"arn:aws:sts::{ACCOUNT}:assumed-role/Deployer/ci-run"))
    iam_stub.add_client_error("get_role", "AccessDenied", "not allowed", 403)
    with sts_stub, iam_stub:
        principal = caller_principal(StubSession(sts=sts, iam=iam))
    assert principal.arn == f"arn:aws:iam::{ACCOUNT}:role/Deployer"
    assert "iam:GetRole" in principal.warning and "eks.admin_role_arn" in principal.warning


def test_iam_user_is_used_as_is():
    sts, stub = _stubbed("sts")
    stub.add_response("get_caller_identity", _identity(f"arn:aws:iam::{ACCOUNT}:user/bob"))
    with stub:
        assert caller_principal(StubSession(sts=sts)).arn == f"arn:aws:iam::{ACCOUNT}:user/bob"


@pytest.mark.parametrize("arn", [f"arn:aws:iam::{ACCOUNT}:root",
                                 f"arn:aws:sts::{ACCOUNT}:federated-user/carol"])
def test_root_and_federated_users_get_a_clear_error(arn):
    sts, stub = _stubbed("sts")
    stub.add_response("get_caller_identity", _identity(arn))
    with stub, pytest.raises(CliError) as err:
        caller_principal(StubSession(sts=sts))
    assert err.value.exit_code == ExitCode.USAGE and "access entry cannot name" in err.value.message


def test_principal_module_prints_the_arn_for_make_deploy(tmp_path, monkeypatch):
    from trn_ultracluster.cli import principal

    monkeypatch.setattr(principal, "make_session", lambda region: "session")
    monkeypatch.setattr(principal, "caller_principal",
                        lambda session: principal.Principal(SSO_ROLE, "caller"))
    import io
    import contextlib

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


# --- the job CLI reaches the cluster with AWS credentials ----------------------------------


CA = b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"


def test_token_is_a_presigned_get_caller_identity_with_the_cluster_header_signed():
    session = boto3.Session(aws_access_key_id="AKIDEXAMPLE", aws_secret_access_key="secret",
                            region_name=REGION)
    token = eks_token(session, REGION, "my-cluster")
    assert token.startswith(TOKEN_PREFIX) and "=" not in token
    payload = token[len(TOKEN_PREFIX):]
    url = base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)).decode()
    parsed = urlparse(url)
    query = parse_qs(parsed.query)
    assert parsed.netloc == f"sts.{REGION}.amazonaws.com"
    assert query["Action"] == ["GetCallerIdentity"] and query["X-Amz-Expires"] == ["60"]
    assert query["X-Amz-SignedHeaders"] == [f"host;{K8S_AWS_ID_HEADER}"]
    assert query["X-Amz-Credential"][0].startswith("AKIDEXAMPLE/")


def test_api_client_from_the_stack_outputs_needs_no_kubeconfig(tmp_path, monkeypatch):
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "missing"))
    eks, stub = _stubbed("eks")
    stub.add_response("describe_cluster", {"cluster": {
        "name": "trn", "endpoint": "https://ABC.gr7.us-west-2.eks.amazonaws.com",
        "certificateAuthority": {"data": base64.b64encode(CA).decode()}}}, {"name": "trn"})
    session = StubSession(eks=eks, sts=boto3.client(
        "sts", region_name=REGION, aws_access_key_id="AKIDEXAMPLE", aws_secret_access_key="s"))
    with stub:
        api = eks_api_client(session, REGION, "trn")
    config = api.configuration
    assert config.host == "https://ABC.gr7.us-west-2.eks.amazonaws.com"
    with open(config.ssl_ca_cert, "rb") as ca:
        assert ca.read() == CA
    # what the client really sends (auth_settings, not a helper with another lookup)
    header = config.auth_settings()["BearerToken"]["value"]
    assert header.startswith("Bearer " + TOKEN_PREFIX)
    # every request signs afresh, so long waits never carry an expired token
    assert config.refresh_api_key_hook is not None


def test_missing_cluster_is_a_stack_error():
    eks, stub = _stubbed("eks")
    stub.add_client_error("describe_cluster", "ResourceNotFoundException", "no cluster", 404)
    with stub, pytest.raises(CliError) as err:
        eks_api_client(StubSession(eks=eks), REGION, "gone")
    assert err.value.exit_code == ExitCode.STACK


# --- scale (Capacity Block node groups start at 0) ------------------------------------------


def _eks_outputs(capacity_type="capacity-block", rid="cr-0123456789abcdef0"):
    values = outputs_values("eks")
    values.update({"CapacityType": capacity_type, "CapacityReservationId": rid,
                   "EksClusterName": "trn", "EksTrainiumNodegroupName": "trainium",
                   "NodeCountMax": "4"})
    return values


def _reservation(state: str, count: int = 4) -> dict:
    return {"CapacityReservations": [{
        "CapacityReservationId": "cr-0123456789abcdef0", "InstanceType": "trn1.32xlarge",
        "State": state, "TotalInstanceCount": count, "ReservationType": "capacity-block",
        "StartDate": dt.datetime(2026, 12, 1, 9, 0, tzinfo=dt.timezone.utc)}]}


@moto.mock_aws
@pytest.mark.parametrize("state, code", [("active", 0), ("scheduled", ExitCode.CHECK_FAILED)])
def test_scale_waits_for_an_active_block(capsys, tmp_path, monkeypatch, state, code):
    eks = boto3.client("eks", region_name=REGION)
    eks.create_cluster(name="trn", roleArn=f"arn:aws:iam::{ACCOUNT}:role/r",
                       resourcesVpcConfig={"subnetIds": ["subnet-1"]})
    eks.create_nodegroup(clusterName="trn", nodegroupName="trainium",
                         nodeRole=f"arn:aws:iam::{ACCOUNT}:role/n", subnets=["subnet-1"],
                         scalingConfig={"minSize": 0, "maxSize": 4, "desiredSize": 0})
    ec2, stub = _stubbed("ec2")
    stub.add_response("describe_capacity_reservations", _reservation(state),
                      {"CapacityReservationIds": ["cr-0123456789abcdef0"]})
    session = StubSession(ec2=ec2, eks=eks)
    from trn_ultracluster.cli import main as cli_main

    monkeypatch.setattr(cli_main, "_session", lambda args, outputs: session)
    path = write_outputs(tmp_path, _eks_outputs())
    with stub:
        got, out, err = run(capsys, "scale", "--outputs-file", str(path), "--nodes", "4")
    assert got == code, err
    size = eks.describe_nodegroup(clusterName="trn", nodegroupName="trainium")["nodegroup"][
        "scalingConfig"]["desiredSize"]
    if state == "active":
        assert out.startswith("trainium: 0 -> 4 nodes") and size == 4
    else:
        assert "is scheduled, not active (it starts 2026-12-01 09:00 UTC)" in err and size == 0


@pytest.mark.parametrize("nodes", ["-1", "5"])
def test_scale_stays_within_the_stack_max(capsys, tmp_path, nodes):
    path = write_outputs(tmp_path, _eks_outputs())
    code, _, err = run(capsys, "scale", "--outputs-file", str(path), "--nodes", nodes)
    assert code == ExitCode.USAGE and "between 0 and the stack's NodeCountMax (4)" in err


def test_scale_is_for_eks(capsys, tmp_path):
    path = write_outputs(tmp_path, outputs_values("hyperpod-slurm"))
    code, _, err = run(capsys, "scale", "--outputs-file", str(path), "--nodes", "1")
    assert code == ExitCode.USAGE and "HyperPod instance groups are sized by the stack" in err
