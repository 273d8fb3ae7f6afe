"""Stack outputs: from CloudFormation (moto, botocore Stubber) or an outputs file; unusable
stacks, missing keys and unreadable files are clean errors."""

from __future__ import annotations

import json
import re
from pathlib import Path
from types import SimpleNamespace

import boto3
import moto
import pytest
from botocore.stub import Stubber

from tests.cli.helpers import CLUSTER_ARN, REGION, create_stack, outputs_values, run, write_outputs
from trn_ultracluster.cli.errors import CliError, ExitCode
from trn_ultracluster.cli.stack_outputs import outputs_from_aws, outputs_from_file


@moto.mock_aws
def test_outputs_from_cloudformation_table(capsys):
    create_stack(outputs_values())
    code, out, _ = run(capsys, "outputs", "--region", REGION)
    assert code == ExitCode.OK
    assert re.search(r"EksTrainingRuntimeName\s+neuron-torch-distributed", out)
    assert "CREATE_COMPLETE" in out


@moto.mock_aws
def test_outputs_json(capsys):
    create_stack(outputs_values("hyperpod-slurm"))
    code, out, _ = run(capsys, "outputs", "--region", REGION, "--json")
    assert code == ExitCode.OK
    assert json.loads(out)["HyperPodClusterArn"] == CLUSTER_ARN


@moto.mock_aws
def test_stack_missing(capsys):
    code, _, err = run(capsys, "outputs", "--region", REGION)
    assert code == ExitCode.STACK == 3
    assert "error: stack TrnUltraCluster does not exist in us-west-2" in err
    assert "fix: deploy it" in err


def test_stack_in_rollback_is_refused():
    session = boto3.Session(region_name=REGION)
    client = session.client("cloudformation")
    stubber = Stubber(client)
    stubber.add_response("describe_stacks", {"Stacks": [{
        "StackName": "TrnUltraCluster", "CreationTime": "2026-11-21T00:00:00Z",
        "StackStatus": "ROLLBACK_COMPLETE", "StackStatusReason": "FSx failed"}]})
    with stubber, pytest.raises(CliError) as err:
        outputs_from_aws(SimpleNamespace(region_name=REGION, client=lambda _: client),
                         "TrnUltraCluster")
    assert err.value.exit_code == ExitCode.STACK
    assert err.value.message == ("stack TrnUltraCluster in us-west-2 is ROLLBACK_COMPLETE "
                                 "(FSx failed); its outputs cannot be used")
    assert "cdk destroy" in err.value.fix


@moto.mock_aws
def test_older_stack_missing_output_key(capsys):
    values = outputs_values()
    del values["EksTrainingRuntimeName"]
    create_stack(values)
    code, out, err = run(capsys, "outputs", "--region", REGION)
    assert code == ExitCode.STACK
    assert "lacks outputs: EksTrainingRuntimeName (Kubeflow Trainer ClusterTrainingRuntime" in err
    code, _, err = run(capsys, "submit", "--region", REGION, "--recipe", "llama-1b", "--steps",
                       "10", "--data-dir", "/fsx/s3/d", "--dry-run")
    assert code == ExitCode.STACK
    assert "has no output 'EksTrainingRuntimeName'" in err and "older version" in err


def test_no_credentials(capsys, monkeypatch):
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.delenv(key)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    code, _, err = run(capsys, "outputs", "--region", REGION)
    assert code == ExitCode.CREDENTIALS == 4
    assert "error: DescribeStacks TrnUltraCluster: no AWS credentials found" in err


def test_outputs_file_wrong_stack(capsys, tmp_path):
    path = write_outputs(tmp_path, outputs_values(), stack="Other")
    code, _, err = run(capsys, "outputs", "--outputs-file", str(path),
                       "--stack-name", "TrnUltraCluster")
    assert code == ExitCode.STACK
    assert "has no stack 'TrnUltraCluster' (stacks: Other)" in err


def test_the_one_stack_of_an_outputs_file_is_the_default(capsys, tmp_path):
    path = write_outputs(tmp_path, outputs_values(), stack="TrnTwo")
    code, out, _ = run(capsys, "outputs", "--outputs-file", str(path))
    assert code == 0 and "stack TrnTwo (" in out


def test_the_configured_stack_name_is_the_default(tmp_path, monkeypatch):
    import json

    from trn_ultracluster.cli.project_config import default_stack_name

    assert default_stack_name(tmp_path) == "TrnUltraCluster"  # no cdk.json here
    (tmp_path / "cdk.json").write_text(json.dumps(
        {"context": {"trn-ultracluster": {"stack_name": "TrnTwo"}}}))
    assert default_stack_name(tmp_path) == "TrnTwo"
    profile = tmp_path / "prod.yaml"
    profile.write_text("stack_name: TrnProd\n")
    assert default_stack_name(tmp_path, profile=str(profile)) == "TrnProd"
    for broken in ("{not json", json.dumps({"context": {"trn-ultracluster": {"stack_name": "2"}}})):
        (tmp_path / "cdk.json").write_text(broken)  # no guess at another stack
        with pytest.raises(CliError):
            default_stack_name(tmp_path)


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


def test_instance_type_the_catalog_lacks_is_a_stack_error(tmp_path):
    path = write_outputs(tmp_path, outputs_values(instance_type="trn9.metal"))
    with pytest.raises(CliError) as err:
        outputs_from_file(path, "TrnUltraCluster").instance_spec()
    assert err.value.exit_code == ExitCode.STACK
    assert "upgrade the CLI" in err.value.fix


@pytest.mark.parametrize("mode", ["off", "preferred", "required"])
def test_fsx_efa_is_read_from_the_output(tmp_path, mode):
    path = write_outputs(tmp_path, {**outputs_values("hyperpod-slurm"), "FsxEfa": mode})
    assert outputs_from_file(path, "TrnUltraCluster").fsx_efa == mode


def test_an_older_stack_without_the_fsx_efa_output_has_no_efa(tmp_path):
    """Stacks deployed before the FsxEfa output never made an EFA-enabled file system."""
    values = outputs_values("hyperpod-slurm")
    del values["FsxEfa"]
    assert outputs_from_file(write_outputs(tmp_path, values), "TrnUltraCluster").fsx_efa == "off"


def test_an_unknown_fsx_efa_output_is_a_stack_error(tmp_path):
    path = write_outputs(tmp_path, {**outputs_values(), "FsxEfa": "auto"})
    with pytest.raises(CliError) as err:
        outputs_from_file(path, "TrnUltraCluster").fsx_efa
    assert err.value.exit_code == ExitCode.STACK
    assert err.value.message == "output FsxEfa = 'auto' is not one of off, preferred, required"
    assert "upgrade the CLI" in err.value.fix


def test_the_fsx_efa_output_values_are_the_node_modes():
    """The output carries FsxEfaPlan.mode: the contract lists the same values."""
    from typing import get_args

    from trn_ultracluster.config.fsx_efa import EfaMode
    from trn_ultracluster.contracts.outputs import FSX_EFA_MODES

    assert FSX_EFA_MODES == get_args(EfaMode)
