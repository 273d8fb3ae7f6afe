"""Reaching the HyperPod Slurm controller: its SSM target and two transports that run a bash
script there as the cluster's user.

A HyperPod node's SSM target is
``sagemaker-cluster:<cluster-id>_<instance-group>-<instance-id>``, the cluster id being the
last part of the cluster ARN and the instance id from ``ListClusterNodes`` (SageMaker
developer guide, "Access your SageMaker HyperPod cluster nodes",
https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-run-jobs-slurm-access-nodes.html;
same format in aws-samples/awsome-distributed-training ``easy-ssh.sh``). AWS documents
``aws ssm start-session`` on that target; whether ``SendCommand`` accepts it is not
documented (a public HyperPod tooling note says it does not), so the default transport is a
non-interactive session (``AWS-StartNonInteractiveCommand`` through the AWS CLI and its
Session Manager plugin) and ``SendCommand`` is an option.
"""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from trn_ultracluster.cli.aws import aws_errors, error_code
from trn_ultracluster.cli.errors import CliError, ExitCode

__all__ = ["SLURM_USER", "SendCommandTransport", "SessionTransport", "Transport",
           "controller_target", "transport_for"]

SLURM_USER = "ubuntu"
"""The HyperPod Slurm clusters' default user; jobs run as this user, not as the SSM
session's user. Source: aws-samples/awsome-distributed-training
``1.architectures/5.sagemaker-hyperpod/easy-ssh.sh``
(https://github.com/aws-samples/awsome-distributed-training/blob/main/1.architectures/5.sagemaker-hyperpod/easy-ssh.sh),
which logs in to the controller as ``User ubuntu``, opens sessions with the
``SSM-SessionManagerRunShellAsUbuntu`` document and keeps keys in ``/fsx/ubuntu/.ssh``."""


def controller_target(session: Any, cluster_name: str, cluster_arn: str,
                      controller_group: str) -> str:
    """SSM target of the Slurm controller: ``sagemaker-cluster:<id>_<group>-<instance-id>``.

    Raises:
        CliError: (CLUSTER) the controller group has no node.
    """
    from botocore.exceptions import ClientError

    cluster_id = cluster_arn.rsplit("/", 1)[-1]
    with aws_errors(f"ListClusterNodes {cluster_name}"):
        try:
            nodes = session.client("sagemaker").list_cluster_nodes(
                ClusterName=cluster_name, InstanceGroupNameContains=controller_group,
            )["ClusterNodeSummaries"]
        except ClientError as err:
            if error_code(err) not in ("ValidationException", "ResourceNotFound"):
                raise
            raise CliError(f"HyperPod cluster {cluster_name} not found ({err})",
                           "check the stack outputs' Region and that the cluster exists",
                           ExitCode.CLUSTER) from None
    nodes = [n for n in nodes if n.get("InstanceGroupName") == controller_group]
    if not nodes:
        raise CliError(f"HyperPod cluster {cluster_name} has no node in group {controller_group}",
                       "check the cluster in the SageMaker console (it may still be creating)",
                       ExitCode.CLUSTER)
    return f"sagemaker-cluster:{cluster_id}_{controller_group}-{nodes[0]['InstanceId']}"


class Transport(Protocol):
    """Runs a bash script on the controller and returns its standard output."""

    def run(self, script: str) -> str: ...


def _remote_command(script: str, user: str = SLURM_USER) -> str:
    """One shell line that runs ``script`` as ``user`` (base64: no quoting problems)."""
    encoded = base64.b64encode(script.encode()).decode()
    return f"echo {encoded} | base64 -d | sudo -u {user} -i bash"


@dataclass
class SendCommandTransport:
    """SSM ``SendCommand`` (``AWS-RunShellScript``) and ``GetCommandInvocation`` polling."""

    session: Any
    target: str
    poll_s: float = 2.0
    timeout_s: float = 300.0
    sleep: Callable[[float], None] = time.sleep

    def run(self, script: str) -> str:
        with aws_errors(f"SendCommand to {self.target}"):
            ssm = self.session.client("ssm")
            command = ssm.send_command(
                InstanceIds=[self.target], DocumentName="AWS-RunShellScript",
                Parameters={"commands": [_remote_command(script)]},
                Comment="trn-ultracluster job CLI",
            )["Command"]
            waited = 0.0
            while True:
                try:
                    result = ssm.get_command_invocation(CommandId=command["CommandId"],
                                                        InstanceId=self.target)
                except ssm.exceptions.InvocationDoesNotExist:
                    result = {"Status": "Pending"}
                if result["Status"] not in ("Pending", "InProgress", "Delayed"):
                    break
                if waited >= self.timeout_s:
                    raise CliError(f"SSM command on {self.target} still {result['Status']} after "
                                   f"{self.timeout_s:.0f} s", "check the controller's SSM agent",
                                   ExitCode.CLUSTER)
                self.sleep(self.poll_s)
                waited += self.poll_s
        if result["Status"] != "Success":
            raise CliError(f"command on the controller {result['Status']}: "
                           f"{result.get('StandardErrorContent', '').strip()[-500:]}",
                           "the controller's stderr is in this error; if SendCommand is not "
                           "accepted for HyperPod targets, use `--ssm-transport session`",
                           ExitCode.CLUSTER)
        return str(result.get("StandardOutputContent", ""))


@dataclass
class SessionTransport:
    """``aws ssm start-session --document-name AWS-StartNonInteractiveCommand`` (AWS CLI v2
    and the Session Manager plugin on PATH; Systems Manager user guide, "Start a session",
    https://docs.aws.amazon.com/systems-manager/latest/userguide/session-manager-working-with-sessions-start.html)."""

    region: str
    target: str
    runner: Callable[..., Any] = subprocess.run

    def argv(self, script: str) -> list[str]:
        """The AWS CLI command line for ``script``."""
        return ["aws", "ssm", "start-session", "--region", self.region, "--target", self.target,
                "--document-name", "AWS-StartNonInteractiveCommand",
                "--parameters", json.dumps({"command": [_remote_command(script)]})]

    def run(self, script: str) -> str:
        if self.runner is subprocess.run and (shutil.which("aws") is None
                                              or shutil.which("session-manager-plugin") is None):
            raise CliError("the session transport needs the AWS CLI v2 and the Session Manager "
                           "plugin on PATH",
                           "install them (https://docs.aws.amazon.com/systems-manager/latest/"
                           "userguide/session-manager-working-with-install-plugin.html) or use "
                           "--ssm-transport send-command", ExitCode.USAGE)
        done = self.runner(self.argv(script), capture_output=True, text=True, check=False)
        lines = [ln for ln in done.stdout.replace("\r", "").splitlines()
                 if not ln.startswith(("Starting session with SessionId",
                                       "Exiting session with sessionId"))]
        if done.returncode != 0:
            raise CliError(f"aws ssm start-session failed ({done.returncode}): "
                           f"{done.stderr.strip()[-500:]}", "check ssm:StartSession permissions "
                           "and the controller's state", ExitCode.CLUSTER)
        return "\n".join(lines).strip() + "\n"


def transport_for(kind: str, session: Any, target: str) -> Transport:
    """``session`` (default) or ``send-command`` transport to ``target``."""
    if kind == "send-command":
        return SendCommandTransport(session, target)
    return SessionTransport(session.region_name, target)
