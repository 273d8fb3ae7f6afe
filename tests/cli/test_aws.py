"""AWS sessions and errors: every botocore failure is a CliError with a documented exit code;
the Region comes from ``--region``, ``AWS_REGION`` or ``AWS_DEFAULT_REGION``."""

from __future__ import annotations

import json

import boto3
import moto
import pytest
from botocore.exceptions import ClientError

from tests.cli.helpers import REGION, outputs_values, run, with_pools
from trn_ultracluster.cli.aws import aws_errors, make_session
from trn_ultracluster.cli.errors import CliError, ExitCode


def _client_error(code: str, message: str = "m", op: str = "DescribeStacks") -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": message}}, op)


@pytest.mark.parametrize("code, exit_code, fix", [
    ("AccessDenied", ExitCode.CREDENTIALS, "use credentials allowed"),
    ("ThrottlingException", ExitCode.AWS, "AWS is throttling"),
    ("OptInRequired", ExitCode.AWS, "enable the Region"),
    ("InternalFailure", ExitCode.AWS, "retry; if it persists"),
])
def test_every_client_error_becomes_a_cli_error(code, exit_code, fix):
    with pytest.raises(CliError) as err, aws_errors("DescribeStacks TrnUltraCluster"):
        raise _client_error(code, "the AWS message")
    assert err.value.exit_code == exit_code
    assert err.value.message == f"DescribeStacks TrnUltraCluster: {code}: the AWS message"
    assert fix in err.value.fix


def test_other_botocore_errors_become_cli_errors():
    from botocore.exceptions import ParamValidationError, ReadTimeoutError

    with pytest.raises(CliError) as err, aws_errors("ListServiceQuotas ec2"):
        raise ReadTimeoutError(endpoint_url="https://servicequotas.us-west-2.amazonaws.com")
    assert err.value.exit_code == ExitCode.AWS and "cannot reach AWS" in err.value.message
    with pytest.raises(CliError) as err, aws_errors("DescribeStacks x"):
        raise ParamValidationError(report="Invalid length for parameter StackName")
    assert err.value.exit_code == ExitCode.AWS
    assert "Invalid length for parameter StackName" in err.value.message


def test_unknown_aws_profile(capsys, monkeypatch):
    monkeypatch.setenv("AWS_PROFILE", "no-such-profile")
    code, _, err = run(capsys, "outputs", "--region", REGION)
    assert code == ExitCode.CREDENTIALS
    assert "error: AWS profile 'no-such-profile' not found" in err
    assert "aws configure list-profiles" in err


@moto.mock_aws
def test_aws_region_is_honoured(capsys, monkeypatch):
    """--region, else AWS_REGION, else AWS_DEFAULT_REGION / the AWS config."""
    template = {"Resources": {"Topic": {"Type": "AWS::SNS::Topic"}},
                "Outputs": {k: {"Value": v} for k, v in with_pools(outputs_values("eks")).items()}}
    boto3.client("cloudformation", region_name="eu-west-1").create_stack(
        StackName="TrnUltraCluster", TemplateBody=json.dumps(template))
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-west-2")
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    assert make_session(None).region_name == "eu-west-1"
    assert make_session("ap-south-1").region_name == "ap-south-1"
    code, out, err = run(capsys, "outputs")
    assert code == 0, err
    code, _, err = run(capsys, "outputs", "--region", "us-west-2")
    assert code == ExitCode.STACK and "does not exist in us-west-2" in err
    monkeypatch.delenv("AWS_REGION")
    assert make_session(None).region_name == "us-west-2"
