"""Job CLI: outputs, preflight (moto + botocore Stubber), data, submit manifests/scripts,
job operations with fake transports, smoke-test parsing. No AWS account, no cluster."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from types import SimpleNamespace

import boto3
import moto
import pytest
import yaml
from botocore.stub import Stubber

from tests.conftest import REPO_ROOT
from trn_ultracluster.cli import main as cli
from trn_ultracluster.cli.errors import CliError, ExitCode
from trn_ultracluster.cli.stack_outputs import outputs_from_aws
from trn_ultracluster.contracts.outputs import EKS_KEYS, FOUNDATION_KEYS, HYPERPOD_KEYS

REGION = "us-west-2"
CLUSTER_ARN = "arn:aws:sagemaker:us-west-2:123456789012:cluster/abcdef123456"


@pytest.fixture(autouse=True)
def fake_aws_env(monkeypatch, tmp_path):
    """Fake credentials for moto; no real AWS config is read."""
    for key in ("AWS_PROFILE", "AWS_DEFAULT_PROFILE"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))


def outputs_values(orchestrator: str = "eks", instance_type: str = "trn1.32xlarge") -> dict[str, str]:
    """Every output key a stack of ``orchestrator`` has, with plausible values."""
    values = {k.value: f"value-of-{k.value}" for k in FOUNDATION_KEYS}
    values.update({
        "Region": REGION, "ComputeAzId": "usw2-az4", "InstanceType": instance_type,
        "NodeCountMin": "0", "NodeCountDesired": "2", "NodeCountMax": "16",
        "Orchestrator": orchestrator, "DataBucketName": "trn-data-bucket",
        "FsxDataRepositoryPath": "/", "CapacityType": "on-demand", "CapacityReservationId": "none",
        "TrainingImageUri": "123456789012.dkr.ecr.us-west-2.amazonaws.com/trn:abc",
    })
    if orchestrator == "eks":
        values.update({k.value: f"value-of-{k.value}" for k in EKS_KEYS})
        values.update({"EksTrainingNamespace": "training",
                       "EksTrainingRuntimeName": "neuron-torch-distributed"})
    else:
        values.update({k.value: f"value-of-{k.value}" for k in HYPERPOD_KEYS})
        values.update({"HyperPodClusterName": "trn-ultracluster", "HyperPodClusterArn": CLUSTER_ARN,
                       "HyperPodControllerGroupName": "controller"})
    return values


def write_outputs(tmp_path: Path, values: dict[str, str], stack: str = "TrnUltraCluster") -> Path:
    path = tmp_path / "outputs.json"
    path.write_text(json.dumps({stack: values}))
    return path


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


# --- outputs: file and CloudFormation (moto) -------------------------------------------------


def create_stack(values: dict[str, str], name: str = "TrnUltraCluster") -> None:
    template = {
        "Resources": {"Topic": {"Type": "AWS::SNS::Topic"}},
        "Outputs": {k: {"Value": v} for k, v in values.items()},
    }
    boto3.client("cloudformation", region_name=REGION).create_stack(
        StackName=name, TemplateBody=json.dumps(template))


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
    code, _, err = run(capsys, "outputs", "--outputs-file", str(path))
    assert code == ExitCode.STACK
    assert "has no stack 'TrnUltraCluster' (stacks: Other)" in err


# --- preflight (moto for EC2/CloudFormation/STS, Stubber for Service Quotas / reservations) ---


def preflight_config(**overrides):
    from trn_ultracluster.config import parse_config

    raw = {"instance_type": "trn1.32xlarge", "nodes": {"min": 0, "desired": 2, "max": 2},
           "az_ids": ["usw2-az4", "usw2-az1"]}
    raw.update(overrides)
    return parse_config(raw).config


class Session:
    """A session whose clients are moto-backed, except those replaced by stubbed ones."""

    region_name = REGION

    def __init__(self, **stubbed):
        self.stubbed = stubbed

    def client(self, name):
        return self.stubbed.get(name) or boto3.client(name, region_name=REGION)


def docker_ok(*_, **__):
    return subprocess.CompletedProcess([], 0, stdout="27.3.1\n", stderr="")


def quota_client(value: float | None, service: str = "ec2",
                 name: str = "Running On-Demand Trn instances"):
    """Service Quotas answering ``ListServiceQuotas(service)`` in two pages; the quota
    ``name`` is on the second (``None``: not in the Region)."""
    client = boto3.client("service-quotas", region_name=REGION)
    stubber = Stubber(client)
    other = {"QuotaName": "Running On-Demand P instances", "QuotaCode": "L-P", "Value": 8.0}
    stubber.add_response("list_service_quotas", {"Quotas": [other], "NextToken": "t"},
                         {"ServiceCode": service})
    page = [{"QuotaName": name, "QuotaCode": "L-ANY", "Value": value}] if value is not None else []
    stubber.add_response("list_service_quotas", {"Quotas": page},
                         {"ServiceCode": service, "NextToken": "t"})
    stubber.activate()
    return client


def bootstrap():
    create_stack({"BootstrapVersion": "28"}, name="CDKToolkit")


@moto.mock_aws
def test_preflight_all_pass():
    from trn_ultracluster.cli.preflight import format_table, run_preflight

    bootstrap()
    account, checks = run_preflight(Session(**{"service-quotas": quota_client(256)}),
                                    preflight_config(), docker_ok)
    assert account == "123456789012"
    assert [c.ok for c in checks] == [True] * 6, format_table(checks)


@moto.mock_aws
def test_preflight_az_without_instance_type():
    from trn_ultracluster.cli.preflight import run_preflight

    bootstrap()
    # usw2-az1 offers trn1.32xlarge but not trn1n.32xlarge (moto's offerings snapshot).
    config = preflight_config(instance_type="trn1n.32xlarge", az_ids=["usw2-az1", "usw2-az4"])
    _, checks = run_preflight(Session(**{"service-quotas": quota_client(256)}), config, docker_ok)
    offered = checks[0]
    assert not offered.ok
    assert offered.detail == "trn1n.32xlarge is not offered in usw2-az1"
    assert offered.fix == "set az_ids to start with one of usw2-az4"


@moto.mock_aws
def test_preflight_quota_too_low_exits_1(capsys, monkeypatch):
    from trn_ultracluster.cli import preflight

    bootstrap()
    real = preflight.run_preflight
    monkeypatch.setattr(preflight, "run_preflight", lambda s, c, r, **kw: real(
        Session(**{"service-quotas": quota_client(128)}), c, docker_ok, **kw))
    monkeypatch.chdir(REPO_ROOT)
    code, out, err = run(capsys, "preflight", "-c", "nodes.max=2", "-c", "nodes.desired=2")
    assert code == ExitCode.CHECK_FAILED == 1
    assert ("FAIL  service quota          EC2 Running On-Demand Trn instances = 128 vCPUs, "
            "need 256 (2 x trn1.32xlarge x 128 vCPUs)") in out
    assert "fix: request at least 256 vCPUs for 'Running On-Demand Trn instances' in us-west-2" in out
    assert "preflight failed: service quota" in err


@moto.mock_aws
def test_preflight_ec2_quota_missing_in_region():
    from trn_ultracluster.cli.preflight import _quota

    check = _quota(Session(**{"service-quotas": quota_client(None)}), preflight_config())
    assert not check.ok
    assert check.detail == "EC2 quota 'Running On-Demand Trn instances' not found"
    assert "Service Quotas > Amazon EC2 in us-west-2" in check.fix


@moto.mock_aws
def test_preflight_hyperpod_quota_by_name():
    from trn_ultracluster.cli.preflight import _quota

    config = preflight_config(orchestrator="hyperpod-slurm")
    name = f"{config.instance.hyperpod_instance_type} for cluster usage"
    workers = sum(config.hyperpod_worker_counts.values())
    check = _quota(Session(**{"service-quotas": quota_client(workers, "sagemaker", name)}), config)
    assert check.ok, check.detail
    assert check.detail == f"SageMaker {name!r} = {workers:g} instances, need {workers}"


@moto.mock_aws
def test_preflight_without_bootstrap_or_docker():
    from trn_ultracluster.cli.preflight import run_preflight

    def no_docker(*_, **__):
        raise FileNotFoundError("docker")

    local = preflight_config(training_image={"build": "local"})
    _, checks = run_preflight(Session(**{"service-quotas": quota_client(512)}), local, no_docker)
    by_name = {c.name: c for c in checks}
    assert not by_name["CDK bootstrap"].ok
    assert by_name["CDK bootstrap"].fix == "run: npx cdk bootstrap aws://<account>/us-west-2"
    assert (by_name["Docker"].ok, by_name["Docker"].detail) == (False, "docker is not installed")
    # the default builds the image in CodeBuild: no Docker needed where cdk deploy runs
    _, checks = run_preflight(Session(**{"service-quotas": quota_client(512)}), preflight_config(),
                              no_docker)
    docker = {c.name: c for c in checks}["Docker"]
    assert docker.ok and "CodeBuild" in docker.detail


@pytest.mark.parametrize("state, az, ok", [("active", "use2-az3", True),
                                           ("scheduled", "use2-az3", False),
                                           ("active", "use2-az1", False)])
def test_preflight_capacity_block(state, az, ok):
    from trn_ultracluster.cli.preflight import _capacity

    ec2 = boto3.client("ec2", region_name="us-east-2")
    rid = "cr-0123456789abcdef0"
    with Stubber(ec2) as stub:
        stub.add_response("describe_capacity_reservations", {"CapacityReservations": [{
            "CapacityReservationId": rid, "InstanceType": "trn2.48xlarge",
            "AvailabilityZoneId": az, "State": state, "TotalInstanceCount": 4,
            "ReservationType": "capacity-block"}]}, {"CapacityReservationIds": [rid]})
        config = preflight_config(**yaml.safe_load((REPO_ROOT / "profiles" / "trn2.yaml").read_text()))
        check = _capacity(SimpleNamespace(client=lambda _: ec2), config)
    assert check.ok is ok, check.detail
    if state != "active":
        assert check.detail == f"{rid}: state is scheduled (must be active)"
    elif not ok:
        assert check.detail == f"{rid}: it is in use2-az1, compute AZ is use2-az3"


def test_preflight_no_credentials(monkeypatch):
    from trn_ultracluster.cli.preflight import run_preflight

    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    with pytest.raises(CliError) as err:
        run_preflight(boto3.Session(region_name=REGION), preflight_config(), docker_ok)
    assert err.value.exit_code == ExitCode.CREDENTIALS
    assert err.value.message.startswith("GetCallerIdentity: no AWS credentials found")
