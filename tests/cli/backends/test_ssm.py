"""Reaching the HyperPod controller: its SSM target from ListClusterNodes (moto), SendCommand
and the non-interactive session transport."""

from __future__ import annotations

import base64
import json
import subprocess
from typing import Any

import boto3
import moto
import pytest

from tests.cli.helpers import CLUSTER_ARN, REGION
from trn_ultracluster.cli.backends.slurm import SlurmJobs
from trn_ultracluster.cli.backends.ssm import (
    SendCommandTransport,
    SessionTransport,
    controller_target,
)
from trn_ultracluster.cli.errors import CliError, ExitCode


def _moto_cluster(group: str) -> tuple[Any, str]:
    """A moto HyperPod cluster ``trn-ultracluster`` with one node in ``group``."""
    sm = boto3.client("sagemaker", region_name=REGION)
    arn = sm.create_cluster(ClusterName="trn-ultracluster", InstanceGroups=[{
        "InstanceCount": 1, "InstanceGroupName": group, "InstanceType": "ml.c5.xlarge",
        "LifeCycleConfig": {"SourceS3Uri": "s3://sagemaker-lifecycle/lifecycle", "OnCreate": "on_create.sh"},
        "ExecutionRole": "arn:aws:iam::123456789012:role/r", "ThreadsPerCore": 1}])["ClusterArn"]
    return sm, arn


@moto.mock_aws
def test_controller_target_and_send_command():
    sm, arn = _moto_cluster("controller")
    session = boto3.Session(region_name=REGION)
    target = controller_target(session, "trn-ultracluster", arn, "controller")
    node = sm.list_cluster_nodes(ClusterName="trn-ultracluster")["ClusterNodeSummaries"][0]
    assert target == f"sagemaker-cluster:{arn.rsplit('/', 1)[1]}_controller-{node['InstanceId']}"
    transport = SendCommandTransport(session, target, poll_s=0)
    assert transport.run("squeue\n") == ""  # moto's invocations succeed with empty output
    sent = boto3.client("ssm", region_name=REGION).list_commands()["Commands"][0]
    assert sent["InstanceIds"] == [target]
    assert sent["DocumentName"] == "AWS-RunShellScript"
    encoded = sent["Parameters"]["commands"][0].split()[1]
    assert base64.b64decode(encoded).decode() == "squeue\n"


@moto.mock_aws
def test_controller_of_a_missing_cluster():
    with pytest.raises(CliError) as err:
        controller_target(boto3.Session(region_name=REGION), "missing", CLUSTER_ARN, "controller")
    assert err.value.exit_code == ExitCode.CLUSTER
    assert err.value.message.startswith("HyperPod cluster missing not found (")


@moto.mock_aws
def test_controller_group_without_nodes():
    _, arn = _moto_cluster("workers")
    with pytest.raises(CliError) as err:
        controller_target(boto3.Session(region_name=REGION), "trn-ultracluster", arn, "controller")
    assert err.value.exit_code == ExitCode.CLUSTER
    assert err.value.message == "HyperPod cluster trn-ultracluster has no node in group controller"


def test_session_transport_argv_and_output():
    calls = []

    def runner(argv, **_):
        calls.append(argv)
        return subprocess.CompletedProcess(argv, 0, stdout=(
            "\r\nStarting session with SessionId: s-1\r\n1234\r\n\r\n"
            "Exiting session with sessionId: s-1.\r\n"), stderr="")

    transport = SessionTransport(REGION, "sagemaker-cluster:abc_controller-i-1", runner)
    assert SlurmJobs(transport).submit("job-a", "#!/bin/bash\n") == 1234
    argv = calls[0]
    assert argv[:4] == ["aws", "ssm", "start-session", "--region"]
    assert argv[argv.index("--document-name") + 1] == "AWS-StartNonInteractiveCommand"
    command = json.loads(argv[argv.index("--parameters") + 1])["command"][0]
    remote = base64.b64decode(command.split()[1]).decode()
    assert "sudo -u ubuntu -i bash" in command
    assert 'sbatch --parsable --partition="${TRN_DEFAULT_PARTITION}"' in remote
    assert subprocess.run(["bash", "-n", "-c", remote]).returncode == 0
