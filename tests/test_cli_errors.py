"""Every failure of the job CLI is an ``error:``/``fix:`` pair with a documented exit code,
never a traceback (issue 10): file arguments, AWS errors of any kind, a closed output pipe;
the Region from ``--region``/``AWS_REGION``/``AWS_DEFAULT_REGION``; ``preflight``'s stack
options; ``status`` with no jobs; ``--help``. No AWS account: moto and botocore's Stubber."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import boto3
import moto
import pytest
from botocore.exceptions import ClientError
from botocore.stub import Stubber

from tests.conftest import REPO_ROOT
from tests.test_cli import (  # noqa: F401
    REGION,
    Session,
    bootstrap,
    create_stack,
    fake_aws_env,
    outputs_values,
    quota_client,
    run,
    write_outputs,
)
from trn_ultracluster.cli import main as cli
from trn_ultracluster.cli.aws import aws_errors, make_session
from trn_ultracluster.cli.errors import CliError, ExitCode

CLI_DIR = REPO_ROOT / "trn_ultracluster" / "cli"


def no_traceback(err: str) -> None:
    assert "Traceback" not in err and "Exception ignored" not in err, err


# --- file arguments --------------------------------------------------------------------------


def _bad_file(kind: str, tmp_path: Path) -> Path:
    if kind == "missing":
        return tmp_path / "missing.json"
    if kind == "directory":
        path = tmp_path / "a-directory"
        path.mkdir()
        return path
    path = tmp_path / "latin1.json"
    path.write_bytes(b'{"TrnUltraCluster": {"K": "caf\xe9"}}')
    return path


@pytest.mark.parametrize("kind, says", [("missing", "does not exist"),
                                        ("directory", "is a directory"),
                                        ("not-utf8", "is not UTF-8 text")])
def test_outputs_file_that_cannot_be_read(capsys, tmp_path, kind, says):
    path = _bad_file(kind, tmp_path)
    code, _, err = run(capsys, "outputs", "--outputs-file", str(path))
    assert code == ExitCode.USAGE
    assert f"error: outputs file {path} {says}" in err and "\nfix: " in err


@pytest.mark.parametrize("kind, says", [("missing", "does not exist"),
                                        ("directory", "is a directory")])
def test_smoke_test_from_a_log_that_cannot_be_read(capsys, tmp_path, kind, says):
    outputs = write_outputs(tmp_path, outputs_values("eks"))
    path = _bad_file(kind, tmp_path)
    code, _, err = run(capsys, "smoke-test", "--outputs-file", str(outputs), "--from-log", str(path))
    assert code == ExitCode.USAGE
    assert f"error: log file {path} {says}" in err
    assert "fix: pass a job log saved with `trn-ultracluster logs <job> > FILE`" in err


def test_smoke_test_from_a_log_with_stray_bytes_is_judged(capsys, tmp_path):
    """A log is judged on its JSON lines; undecodable bytes elsewhere do not stop it."""
    outputs = write_outputs(tmp_path, outputs_values("eks"))
    log = tmp_path / "smoke.log"
    record = {"event": "allreduce", "bytes": 512 << 20, "ranks": 64,
              "time_s": (512 << 20) * 2 * 63 / 64 / 80e9, "correct": True}
    log.write_bytes(b"progress \xe2\x96\n" + json.dumps(record).encode() + b"\n")
    code, out, err = run(capsys, "smoke-test", "--outputs-file", str(outputs), "--from-log", str(log))
    assert code == 0, err
    assert "PASS" in out


def test_preflight_with_a_broken_cdk_json(capsys, tmp_path, monkeypatch):
    (tmp_path / "cdk.json").write_text('{"app": "python app.py", ')
    monkeypatch.chdir(tmp_path)
    code, _, err = run(capsys, "preflight")
    assert code == ExitCode.USAGE
    assert f"error: {tmp_path / 'cdk.json'} is not JSON" in err


def test_data_source_that_is_not_a_file_or_directory(capsys, tmp_path):
    outputs = write_outputs(tmp_path, outputs_values("eks"))
    code, _, err = run(capsys, "data", "--outputs-file", str(outputs), "/dev/null")
    assert code == ExitCode.USAGE
    assert "error: /dev/null is not a regular file or directory" in err


# --- AWS errors ------------------------------------------------------------------------------


@moto.mock_aws
def test_data_to_a_missing_bucket(capsys, tmp_path):
    """boto3 raises S3UploadFailedError (not a ClientError) from upload_file."""
    src = tmp_path / "wiki"
    src.mkdir()
    (src / "manifest.json").write_text("{}")
    outputs = write_outputs(tmp_path, outputs_values("eks"))
    code, _, err = run(capsys, "data", "--outputs-file", str(outputs), str(src), "--no-progress")
    assert code == ExitCode.STACK
    assert "error: upload to s3://trn-data-bucket/datasets/wiki: bucket trn-data-bucket does not exist" in err
    assert "fix: the outputs are of a deleted stack" in err


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
def test_preflight_reports_an_unexpected_aws_error_as_a_failed_check(capsys, monkeypatch):
    """A throttled / failing call fails its check with AWS's code; the other checks run."""
    from trn_ultracluster.cli import aws

    bootstrap()
    quotas = boto3.client("service-quotas", region_name=REGION)
    stub = Stubber(quotas)
    stub.add_client_error("list_service_quotas", "ThrottlingException", "Rate exceeded", 400)
    stub.activate()
    monkeypatch.setattr(aws, "make_session", lambda region: Session(**{"service-quotas": quotas}))
    monkeypatch.chdir(REPO_ROOT)
    code, out, err = run(capsys, "preflight")
    assert code == ExitCode.CHECK_FAILED
    assert re.search(r"FAIL  service quota\s+ListServiceQuotas ec2: ThrottlingException: "
                     r"Rate exceeded", out), out
    assert "fix: AWS is throttling" in out
    assert re.search(r"PASS  CDK bootstrap", out)
    assert "preflight failed: service quota" in err
    no_traceback(err)


@moto.mock_aws
def test_preflight_with_an_unexpected_error_before_the_checks(capsys, monkeypatch):
    from trn_ultracluster.cli import aws

    sts = boto3.client("sts", region_name=REGION)
    stub = Stubber(sts)
    stub.add_client_error("get_caller_identity", "InternalFailure", "try later", 500)
    stub.activate()
    monkeypatch.setattr(aws, "make_session", lambda region: Session(sts=sts))
    monkeypatch.chdir(REPO_ROOT)
    code, _, err = run(capsys, "preflight")
    assert code == ExitCode.AWS
    assert "error: GetCallerIdentity: InternalFailure: try later" in err


# --- a closed output pipe --------------------------------------------------------------------


def test_outputs_json_into_a_pipe_closed_early(tmp_path):
    """`outputs --json | head -n 1`: no BrokenPipeError traceback, exit 141 like a process
    stopped by SIGPIPE (what `seq 1 1000000 | head -n 1` gives under pipefail)."""
    values = outputs_values("eks")
    values.update({f"Extra{i:05d}": "x" * 60 for i in range(3000)})  # far more than a pipe holds
    path = write_outputs(tmp_path, values)
    script = (f"set -o pipefail; {sys.executable} -m trn_ultracluster outputs --json "
              f"--outputs-file {path} 2>{tmp_path / 'err'} | head -n 1")
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, cwd=REPO_ROOT,
                          timeout=120)
    assert done.stdout == "{\n"
    assert done.returncode == ExitCode.PIPE_CLOSED == 141
    assert (tmp_path / "err").read_text() == ""


# --- the Region ------------------------------------------------------------------------------


@moto.mock_aws
def test_aws_region_is_honoured(capsys, monkeypatch):
    """--region, else AWS_REGION, else AWS_DEFAULT_REGION / the AWS config."""
    template = {"Resources": {"Topic": {"Type": "AWS::SNS::Topic"}},
                "Outputs": {k: {"Value": v} for k, v in outputs_values("eks").items()}}
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


def test_region_that_contradicts_the_outputs_file(capsys, tmp_path):
    path = write_outputs(tmp_path, outputs_values("eks"))
    code, _, err = run(capsys, "data", "--outputs-file", str(path), "--region", "eu-west-1",
                       str(path))
    assert code == ExitCode.USAGE
    assert "error: --region eu-west-1 does not match the stack's Region us-west-2" in err


# --- preflight's stack options ---------------------------------------------------------------


def test_preflight_refuses_an_outputs_file(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(REPO_ROOT)
    code, _, err = run(capsys, "preflight", "--outputs-file", str(tmp_path / "o.json"))
    assert code == ExitCode.USAGE
    assert "error: preflight checks the account before a deploy and reads no outputs" in err


def test_preflight_region_must_be_the_configurations(capsys, monkeypatch):
    monkeypatch.chdir(REPO_ROOT)
    code, _, err = run(capsys, "preflight", "--region", "us-east-1")
    assert code == ExitCode.USAGE
    assert ("error: --region us-east-1 is not the configuration's Region us-west-2 "
            "(derived from az_ids usw2-az4, usw2-az1)") in err


@moto.mock_aws
@pytest.mark.parametrize("stack, ok, detail", [
    (None, True, "stack TrnUltraCluster does not exist in us-west-2: the deploy creates it"),
    ("TrnUltraCluster", True, "stack TrnUltraCluster is CREATE_COMPLETE: the deploy updates it"),
])
def test_preflight_reports_the_stack(stack, ok, detail):
    from trn_ultracluster.cli.preflight import run_preflight
    from tests.test_cli import docker_ok, preflight_config

    bootstrap()
    if stack:
        create_stack({"Orchestrator": "eks"}, name=stack)
    _, checks = run_preflight(Session(**{"service-quotas": quota_client(256)}), preflight_config(),
                              docker_ok, stack_name="TrnUltraCluster")
    check = {c.name: c for c in checks}["stack"]
    assert (check.ok, check.detail) == (ok, detail)


@pytest.mark.parametrize("status, fix", [
    ("ROLLBACK_COMPLETE", "delete it (npx cdk destroy) before deploying again"),
    ("UPDATE_IN_PROGRESS", "wait for the operation to finish"),
])
def test_preflight_stack_that_cannot_be_deployed(status, fix):
    from trn_ultracluster.cli.preflight import _stack
    from tests.test_cli import preflight_config

    cfn = boto3.client("cloudformation", region_name=REGION)
    with Stubber(cfn) as stub:
        stub.add_response("describe_stacks", {"Stacks": [{
            "StackName": "Other", "CreationTime": "2026-11-21T00:00:00Z", "StackStatus": status}]},
            {"StackName": "Other"})
        check = _stack(Session(cloudformation=cfn), preflight_config(), "Other")
    assert not check.ok
    assert check.detail == f"stack Other is {status}"
    assert fix in check.fix


# --- status with no jobs, --help, hints ------------------------------------------------------


def test_slurm_status_without_jobs_says_so(capsys, tmp_path, monkeypatch):
    from trn_ultracluster.cli.slurm import SlurmJobs

    class Empty:
        def run(self, script):
            return ""

    monkeypatch.setattr(cli, "_slurm_jobs", lambda args, outputs: SlurmJobs(Empty()))
    path = write_outputs(tmp_path, outputs_values("hyperpod-slurm"))
    code, out, _ = run(capsys, "status", "--outputs-file", str(path))
    assert code == 0
    assert out == "no Slurm jobs of user ubuntu in the queue (`status <job id>` shows ended jobs)\n"


def _help(capsys, *argv: str) -> str:
    with pytest.raises(SystemExit) as done:
        cli.main([*argv, "--help"])
    assert done.value.code == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("command", [[], ["submit"], ["preflight"], ["logs"]])
def test_help_lists_the_exit_codes_in_plain_text(capsys, command):
    text = _help(capsys, *command)
    assert "exit codes:" in text
    for code in ExitCode:
        assert re.search(rf"^\s+{int(code)}\s+\S", text, re.M), (code, text)
    assert not re.search(r":(class|func|data|mod):|``", text), text


def test_no_hint_points_at_a_message_above():
    for path in sorted(CLI_DIR.glob("*.py")):
        text = path.read_text()
        assert not re.search(r"message above|see the message|read the message", text), path


# --- numeric options with a range ------------------------------------------------------------


@pytest.mark.parametrize("argv, says", [
    (["logs", "job-a", "--tail", "0"], "argument --tail: must be at least 1, got 0"),
    (["smoke-test", "--timeout", "-5"], "argument --timeout: must be more than 0 seconds"),
    (["smoke-test", "--min-ratio", "0"], "argument --min-ratio: must be more than 0 and at most 1"),
    (["smoke-test", "--min-ratio", "1.5"], "argument --min-ratio: must be more than 0 and at most 1"),
])
def test_out_of_range_numbers_are_usage_errors(capsys, argv, says):
    """`logs --tail 0` printed the whole Slurm log; `--min-ratio 0` passed any bandwidth."""
    with pytest.raises(SystemExit) as done:
        cli.main([*argv, "--outputs-file", "/nonexistent/outputs.json"])  # never read
    assert done.value.code == ExitCode.USAGE
    assert says in capsys.readouterr().err


def test_smoke_report_names_the_threshold_it_used(capsys, tmp_path):
    outputs = write_outputs(tmp_path, outputs_values("eks"))
    log = tmp_path / "smoke.log"
    log.write_text(json.dumps({"event": "allreduce", "bytes": 512 << 20, "ranks": 64,
                               "time_s": (512 << 20) * 2 * 63 / 64 / 80e9, "correct": True}))
    code, out, _ = run(capsys, "smoke-test", "--outputs-file", str(outputs), "--from-log", str(log),
                       "--min-ratio", "0.9")
    assert code == ExitCode.CHECK_FAILED
    assert "(pass at >= 90%)" in out
