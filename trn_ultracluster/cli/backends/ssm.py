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

:func:`run_command` is the Run Command client of every backend that uses it: the HyperPod
controller (:class:`SendCommandTransport`, as the cluster's user) and the standalone nodes (as
root, on several instances at once).
"""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from trn_ultracluster.cli.aws import aws_errors, error_code
from trn_ultracluster.cli.errors import CliError, ExitCode
from trn_ultracluster.contracts.hyperpod import SLURM_USER

__all__ = ["MAX_TARGETS", "OUTPUT_LIMIT", "RUN_SHELL_SCRIPT", "SLURM_USER",
           "SendCommandTransport", "SessionTransport", "Transport", "controller_target",
           "run_command", "send_command_request", "transport_for"]


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


def _remote_command(script: str, user: str | None = SLURM_USER) -> str:
    """One shell line that runs ``script`` with bash, as ``user`` (``None``: as the SSM agent's
    user, root), base64-encoded: no quoting problems."""
    encoded = base64.b64encode(script.encode()).decode()
    runner = f"sudo -u {user} -i bash" if user else "bash"
    return f"echo {encoded} | base64 -d | {runner}"


RUN_SHELL_SCRIPT = "AWS-RunShellScript"
"""The SSM document that runs shell commands on Linux (its parameter ``commands`` and optional
``executionTimeout`` in seconds, default 3600: Systems Manager user guide, "Running commands
using Systems Manager Run Command"; ``SendCommand``: botocore's SSM model). The agent runs
them as root."""
OUTPUT_LIMIT = 24000
"""``GetCommandInvocation`` returns the first 24,000 characters of a command's stdout
(botocore 1.44 SSM model, ``StandardOutputContent``: "The first 24,000 characters written by
the plugin to stdout", max 24000)."""
MAX_TARGETS = 50
"""``SendCommand`` takes at most 50 instance ids (botocore 1.44 SSM model, ``InstanceIds``)."""


def send_command_request(instance_ids: list[str], script: str, *, user: str | None,
                         timeout_s: int, comment: str = "trn-ultracluster job CLI") -> dict[str, Any]:
    """The ``SendCommand`` parameters that run ``script`` with :data:`RUN_SHELL_SCRIPT` on
    ``instance_ids`` as ``user`` (``None``: root), stopped after ``timeout_s`` seconds.

    Raises:
        ValueError: no instance, or more than :data:`MAX_TARGETS`.
    """
    if not 1 <= len(instance_ids) <= MAX_TARGETS:
        raise ValueError(f"SendCommand takes 1 to {MAX_TARGETS} instances, got {len(instance_ids)}")
    return {"InstanceIds": list(instance_ids), "DocumentName": RUN_SHELL_SCRIPT,
            "Parameters": {"commands": [_remote_command(script, user)],
                           "executionTimeout": [str(timeout_s)]},
            "Comment": comment}


def run_command(session: Any, instance_ids: list[str], script: str, *,
                user: str | None = SLURM_USER, poll_s: int = 2, timeout_s: int = 300,
                what: str = "the node") -> dict[str, str]:
    """Run ``script`` on ``instance_ids`` with SSM Run Command and wait for every invocation
    (botocore's ``command_executed`` waiter on ``GetCommandInvocation``).

    Args:
        user: run as this user (``None``: root).
        poll_s, timeout_s: the waiter's delay and how long to wait in all, seconds.
        what: how errors name the targets (e.g. ``the controller``).

    Returns:
        instance id -> the command's standard output (its first :data:`OUTPUT_LIMIT`
        characters).

    Raises:
        CliError: (CLUSTER) an invocation failed, timed out or was cancelled (its stderr is in
            the message), or a target is not a managed node; CREDENTIALS / AWS as
            :func:`~trn_ultracluster.cli.aws.aws_errors`.
    """
    from botocore.exceptions import ClientError, WaiterError

    with aws_errors(f"SendCommand to {', '.join(instance_ids)}"):
        ssm = session.client("ssm")
        try:
            command = ssm.send_command(**send_command_request(
                instance_ids, script, user=user, timeout_s=timeout_s))["Command"]
        except ClientError as err:
            if error_code(err) != "InvalidInstanceId":
                raise
            raise CliError(f"{what} ({', '.join(instance_ids)}) cannot take SSM commands ({err})",
                           "wait until the node has started and registered with Systems "
                           "Manager (a few minutes after launch), then retry", ExitCode.CLUSTER
                           ) from None
        waiter = ssm.get_waiter("command_executed")
        out: dict[str, str] = {}
        for instance in instance_ids:
            try:
                waiter.wait(CommandId=command["CommandId"], InstanceId=instance,
                            WaiterConfig={"Delay": poll_s,
                                          "MaxAttempts": max(1, timeout_s // max(poll_s, 1))})
            except WaiterError:
                pass  # the invocation below says why
            result = ssm.get_command_invocation(CommandId=command["CommandId"],
                                                InstanceId=instance)
            status = result["Status"]
            if status in ("Pending", "InProgress", "Delayed"):
                raise CliError(f"SSM command on {instance} still {status} after {timeout_s} s",
                               f"check the SSM agent on {what}", ExitCode.CLUSTER)
            if status != "Success":
                raise CliError(f"command on {what} ({instance}) {status}: "
                               f"{result.get('StandardErrorContent', '').strip()[-500:]}",
                               f"the stderr of {what} is in this error", ExitCode.CLUSTER)
            out[instance] = str(result.get("StandardOutputContent", ""))
    return out


@dataclass
class SendCommandTransport:
    """SSM ``SendCommand`` (``AWS-RunShellScript``) on one target, as :data:`SLURM_USER`."""

    session: Any
    target: str
    poll_s: int = 2
    timeout_s: int = 300

    def run(self, script: str) -> str:
        try:
            return run_command(self.session, [self.target], script, poll_s=self.poll_s,
                               timeout_s=self.timeout_s, what="the controller")[self.target]
        except CliError as err:
            if err.exit_code != ExitCode.CLUSTER or "still" in err.message:
                raise
            raise CliError(err.message, "the controller's stderr is in this error; if "
                           "SendCommand is not accepted for HyperPod targets, use "
                           "`--ssm-transport session`", ExitCode.CLUSTER) from None


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
