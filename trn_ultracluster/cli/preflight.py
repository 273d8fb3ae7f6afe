"""``preflight``: can this configuration deploy and run in this account, before ``cdk deploy``?

Checks (each a :class:`Check` with the fix for a failure):

1. every pool's instance type is offered in the compute AZ ID (EC2
   ``DescribeInstanceTypeOfferings`` with ``LocationType=availability-zone-id``), one check
   per type;
2. each account quota the configuration needs with every pool at its ``nodes.max``
   (:func:`~trn_ultracluster.config.quota_needs.quota_needs`: NAU, CIDR blocks, network
   interfaces; EKS nodes per node group and node groups; On-Demand vCPUs of each instance
   family's quota, Trn and Standard; HyperPod "ml.<type> for cluster usage" per pool type;
   FSx Persistent_2 GiB) is at least that: the applied value
   by quota code (Service Quotas ``GetServiceQuota``, AWS's default with
   ``GetAWSDefaultServiceQuota`` where no value is applied), by name (``ListServiceQuotas``)
   where :data:`~trn_ultracluster.contracts.quotas.QUOTAS` has no code; a failure names the
   code and its console page, and a ``quotas.*`` value other than the account's is warned;
3. the CDK bootstrap stack ``CDKToolkit`` exists and is complete (CDK guide,
   "Bootstrapping", https://docs.aws.amazon.com/cdk/v2/guide/bootstrapping.html);
4. with ``training_image.build: local``, Docker answers (``docker info``): the CDK CLI builds
   the training image locally (the default builds it in CodeBuild and needs no Docker);
5. for each reservation the pools launch into (``capacity.type`` ``capacity-reservation`` /
   ``capacity-block``, top-level or a pool's own): it is ``active`` and not past its end
   date, in the compute AZ ID, of the pools' instance type, holds at least their
   ``nodes.max`` together (EC2 ``DescribeCapacityReservations``; a Capacity Block has
   ``ReservationType capacity-block``), and a Capacity Reservation is in each pool's
   placement group (``PlacementGroupArn`` names ``capacity.placement_group_name``):
   :mod:`trn_ultracluster.cli.preflight_capacity`;
6. the stack (``--stack-name``): absent (the deploy creates it), or in a state a deploy can
   update; a stack whose creation failed (``ROLLBACK_COMPLETE``) can only be deleted, one in
   progress must finish first, ``UPDATE_ROLLBACK_FAILED`` needs its rollback continued
   (CloudFormation user guide, "Stack status codes",
   https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/view-stack-events.html);
7. FSx over EFA: a deployed stack whose file system is EFA-enabled (its ``FsxEfa`` output) and a
   configuration that turns EFA off, or the other way round, fails: the deploy would replace the
   file system, because EFA is set when a file system is created ("you cannot enable or disable
   EFA on an existing file system", FSx for Lustre user guide, "Working with EFA-enabled file
   systems"). A stack without the output has a file system without EFA.

A check that AWS cannot answer (denied, throttled, a service error) fails with AWS's error
code and message and the others still run; only missing credentials stop everything.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Collection
from dataclasses import dataclass, replace
from typing import Any

from trn_ultracluster.cli.aws import aws_errors, error_code
from trn_ultracluster.cli.check import Check, guarded
from trn_ultracluster.cli.preflight_capacity import RESERVATION_STATES, capacity_checks
from trn_ultracluster.cli.stack_outputs import USABLE_STATES
from trn_ultracluster.config import ClusterConfig
from trn_ultracluster.config.fsx_efa import plan_fsx_efa
from trn_ultracluster.config.quota_needs import quota_needs
from trn_ultracluster.contracts.catalog import get_any_instance
from trn_ultracluster.contracts.outputs import FSX_EFA_OFF, STACK_NAME, OutputKey
from trn_ultracluster.contracts.quotas import QuotaNeed, console_url

__all__ = ["CHECKS", "RESERVATION_STATES", "Check", "format_table", "run_preflight"]

BOOTSTRAP_STACK = "CDKToolkit"
FSX_EFA_CHECK = "FSx over EFA"
OFFERING_CHECK = "instance type offered"


def _offering(session: Any, config: ClusterConfig, itype: str, name: str) -> Check:
    """Whether ``itype`` is offered in the compute AZ ID; if not, where in the Region it is."""
    az = config.compute_az_id
    with aws_errors("DescribeInstanceTypeOfferings"):
        ec2 = session.client("ec2")
        found = ec2.describe_instance_type_offerings(
            LocationType="availability-zone-id",
            Filters=[{"Name": "location", "Values": [az]},
                     {"Name": "instance-type", "Values": [itype]}],
        )["InstanceTypeOfferings"]
        if found:
            return Check(name, True, f"{itype} is offered in {az}")
        elsewhere = ec2.describe_instance_type_offerings(
            LocationType="availability-zone-id",
            Filters=[{"Name": "instance-type", "Values": [itype]}],
        )["InstanceTypeOfferings"]
    others = sorted({o["Location"] for o in elsewhere})
    seen = get_any_instance(itype).az_ids_seen
    fix = (f"set az_ids to start with one of {', '.join(others)}" if others else
           f"{itype} is not offered in {config.region}: pick another Region's AZ IDs "
           f"(catalog hint: {', '.join(seen) or 'none recorded'})")
    return Check(name, False, f"{itype} is not offered in {az}", fix)


def _offerings(session: Any, config: ClusterConfig) -> list[Check]:
    """One check per instance type of the pools (each pool's type, once), each failing alone
    when AWS cannot answer: ``instance type offered``, with several types
    ``instance type offered <type>``. Every pool's nodes live in the compute AZ ID."""
    types = list(dict.fromkeys(p.instance_type for p in config.node_pools))
    names = {t: OFFERING_CHECK if len(types) == 1 else f"{OFFERING_CHECK} {t}" for t in types}
    return [guarded(names[t], _offering, session, config, t, names[t]) for t in types]


_NO_SUCH_QUOTA = "NoSuchResourceException"
"""Service Quotas' error for a quota the Region or account has no value of (botocore's
service-quotas model, 2019-06-24: an error of ``GetServiceQuota``, ``GetAWSDefaultServiceQuota``
and ``ListServiceQuotas``)."""


@dataclass(frozen=True)
class _Applied:
    """A quota's value in the account: ``value``, ``source`` (``applied`` or ``AWS default``)
    and the ``code`` it was found under."""

    value: float
    source: str
    code: str


def _by_name(client: Any, need: QuotaNeed) -> _Applied | None:
    """The applied value of the quota called ``need.name`` (case-insensitive), found with
    the ``ListServiceQuotas`` paginator of its service, or ``None`` when it has none."""
    service = need.quota.service
    with aws_errors(f"ListServiceQuotas {service}"):
        for page in client.get_paginator("list_service_quotas").paginate(ServiceCode=service):
            for quota in page["Quotas"]:
                if quota["QuotaName"].lower() == need.name.lower():
                    return _Applied(float(quota["Value"]), "applied", quota["QuotaCode"])
    return None


def _by_code(client: Any, service: str, code: str) -> _Applied | None:
    """The applied value of quota ``code`` (``GetServiceQuota``); where Service Quotas has
    none ("For some quotas, only the default values are available", botocore's
    service-quotas model), AWS's default (``GetAWSDefaultServiceQuota``, which "does not
    reflect any quota increases"); ``None`` when neither knows the code."""
    from botocore.exceptions import ClientError

    for method, operation, source in (
            ("get_service_quota", "GetServiceQuota", "applied"),
            ("get_aws_default_service_quota", "GetAWSDefaultServiceQuota", "AWS default")):
        with aws_errors(f"{operation} {service} {code}"):
            try:
                quota = getattr(client, method)(ServiceCode=service, QuotaCode=code)["Quota"]
            except ClientError as err:
                if error_code(err) != _NO_SUCH_QUOTA:
                    raise
                continue
        return _Applied(float(quota["Value"]), source, code)
    return None


def _configured(config: ClusterConfig, key: str) -> int | None:
    """``quotas.<key>`` of the configuration, or ``None`` where it has no such key."""
    return getattr(config.quotas, key, None)


def _quota_check(client: Any, config: ClusterConfig, need: QuotaNeed,
                 name: str | None = None) -> Check:
    """``need`` against the account's value: passed when the value is at least ``need.need``;
    failed with the quota code and its Service Quotas console page otherwise, or when the
    quota is not found. Warns when ``quotas.<key>`` differs from the account's value. The
    check is named ``name`` (default ``quota <key>``)."""
    q, region = need.quota, config.region
    name = name or f"quota {q.key}"
    found = _by_code(client, q.service, q.code) if q.code else _by_name(client, need)
    label = f"{q.service} {need.name!r}"
    if found is None:
        where = f"{q.service} {q.code}" if q.code else f"{q.service}, search {need.name!r}"
        return Check(name, False, f"{label} not found in {region}, need {need.need:,}",
                     f"look it up in Service Quotas ({where}): {console_url(region, q)}")
    ok = found.value >= need.need
    detail = (f"{label} ({found.code}): need {need.need:,} ({need.why}), have "
              f"{found.value:,.0f} ({found.source})")
    fix = "" if ok else (f"request at least {need.need:,} for {q.service} {found.code}: "
                         f"{console_url(region, replace(q, code=found.code))}")
    configured = _configured(config, q.key)
    warning = ("" if configured is None or configured == found.value else
               f"quotas.{q.key} is {configured:,}, the account's value is {found.value:,.0f}: "
               f"the configuration rules plan with {configured:,}; set quotas.{q.key}: "
               f"{found.value:.0f}")
    return Check(name, ok, detail, fix, warning)


def _quotas(session: Any, config: ClusterConfig) -> list[Check]:
    """One check per quota the configuration needs (:func:`quota_needs`), each failing alone
    when AWS cannot answer it; named ``quota <key>``, and ``quota <key> <name>`` where one key
    is needed for several names (HyperPod's "ml.<type> for cluster usage" per pool type)."""
    client = session.client("service-quotas")
    needs = quota_needs(config)
    keys = [n.quota.key for n in needs]
    checks = []
    for need in needs:
        name = f"quota {need.quota.key}"
        if keys.count(need.quota.key) > 1:
            name += f" {need.name}"
        checks.append(guarded(name, _quota_check, client, config, need, name))
    return checks


def _bootstrap(session: Any, config: ClusterConfig) -> Check:
    from botocore.exceptions import ClientError

    fix = f"run: npx cdk bootstrap aws://<account>/{config.region}"
    with aws_errors("DescribeStacks CDKToolkit"):
        try:
            stack = session.client("cloudformation").describe_stacks(
                StackName=BOOTSTRAP_STACK)["Stacks"][0]
        except ClientError as err:
            if error_code(err) == "ValidationError":
                return Check("CDK bootstrap", False, f"no {BOOTSTRAP_STACK} stack in {config.region}",
                             fix)
            raise
    status = stack["StackStatus"]
    ok = status in USABLE_STATES
    return Check("CDK bootstrap", ok, f"{BOOTSTRAP_STACK} is {status}", "" if ok else fix)


def _docker(runner: Callable[..., Any], config: ClusterConfig) -> Check:
    if config.training_image.build != "local":
        return Check("Docker", True, "not needed: the image is built in AWS CodeBuild during "
                                     "the deploy (training_image.build: codebuild)")
    fix = ("start Docker (training_image.build: local builds the image here), or use "
           "training_image.build: codebuild")
    try:
        done = runner(["docker", "info", "--format", "{{.ServerVersion}}"], capture_output=True,
                      text=True, check=False, timeout=30)
    except FileNotFoundError:
        return Check("Docker", False, "docker is not installed", fix)
    except subprocess.TimeoutExpired:
        return Check("Docker", False, "docker info did not answer in 30 s", fix)
    if done.returncode != 0:
        return Check("Docker", False, f"docker info failed: {done.stderr.strip()[:200]}", fix)
    return Check("Docker", True, f"Docker server {done.stdout.strip()}")


def _describe_stack(session: Any, stack_name: str) -> dict[str, Any] | None:
    """The stack (CloudFormation ``DescribeStacks``), ``None`` when it does not exist.

    Raises:
        CliError: AWS did not answer (:func:`aws_errors`).
    """
    from botocore.exceptions import ClientError

    with aws_errors(f"DescribeStacks {stack_name}"):
        try:
            return session.client("cloudformation").describe_stacks(
                StackName=stack_name)["Stacks"][0]
        except ClientError as err:
            if error_code(err) == "ValidationError" and "does not exist" in str(err):
                return None
            raise


def _stack(session: Any, config: ClusterConfig, stack_name: str) -> Check:
    stack = _describe_stack(session, stack_name)
    if stack is None:
        return Check("stack", True, f"stack {stack_name} does not exist in "
                     f"{config.region}: the deploy creates it")
    status = stack["StackStatus"]
    detail = f"stack {stack_name} is {status}"
    if status in USABLE_STATES:
        return Check("stack", True, f"{detail}: the deploy updates it")
    events = f"aws cloudformation describe-stack-events --stack-name {stack_name}"
    if status.endswith("_IN_PROGRESS"):
        fix = "wait for the operation to finish (aws cloudformation wait / the console), then deploy"
    elif status in ("ROLLBACK_COMPLETE", "ROLLBACK_FAILED", "CREATE_FAILED", "DELETE_FAILED"):
        fix = (f"its creation or deletion failed: read the first FAILED event ({events}), "
               "then delete it (npx cdk destroy) before deploying again")
    elif status == "UPDATE_ROLLBACK_FAILED":
        fix = (f"continue the rollback (aws cloudformation continue-update-rollback "
               f"--stack-name {stack_name}), then deploy")
    else:
        fix = f"read the stack events ({events}) and fix the stack before deploying"
    return Check("stack", False, detail, fix)


def _file_system_efa(session: Any, config: ClusterConfig, stack_name: str) -> Check:
    """Check 7: whether this configuration keeps the deployed file system's EFA setting."""
    plan = plan_fsx_efa(config)
    wanted = "EFA-enabled" if plan.enabled else "without EFA"
    stack = _describe_stack(session, stack_name)
    if stack is None:
        return Check(FSX_EFA_CHECK, True, f"the deploy creates a file system {wanted} "
                     f"(fsx.efa {plan.reason})")
    outputs = {o["OutputKey"]: o.get("OutputValue", "") for o in stack.get("Outputs", [])}
    deployed = outputs.get(OutputKey.FSX_EFA.value, FSX_EFA_OFF) != FSX_EFA_OFF
    have = "EFA-enabled" if deployed else "without EFA"
    if deployed == plan.enabled:
        return Check(FSX_EFA_CHECK, True, f"the file system stays {have} (fsx.efa {plan.reason})")
    return Check(
        FSX_EFA_CHECK, False,
        f"stack {stack_name}'s file system is {have}; this configuration wants one {wanted} "
        f"(fsx.efa {plan.reason}): EFA is set when a file system is created, so the deploy "
        "would replace it and delete what it holds beyond its S3 export",
        f"to keep the file system, set fsx.efa: {'true' if deployed else 'false'}; to replace "
        "it, first copy what is outside the data repository's path, then deploy "
        "(docs/lustre-over-efa.md)")


CHECKS = (OFFERING_CHECK, "quotas", "CDK bootstrap", "Docker", "capacity", "stack",
          FSX_EFA_CHECK)
"""The checks by name, in order (``quotas``: one check per quota; ``--only`` takes these)."""


def run_preflight(session: Any, config: ClusterConfig,
                  runner: Callable[..., Any] = subprocess.run,
                  stack_name: str = STACK_NAME,
                  only: Collection[str] | None = None) -> tuple[str, list[Check]]:
    """Run every check in the configuration's Region, or those named in ``only``.

    Args:
        session: boto3 session in the config's Region (anything with ``client(name)``).
        config: validated configuration.
        runner: ``subprocess.run`` (tests pass a fake for ``docker info``).
        stack_name: the stack whose state is reported (``--stack-name``).
        only: names of :data:`CHECKS` to run (e.g. only ``FSx over EFA``);
            ``None``: all.

    Returns:
        The account id and the checks, in order; a check AWS could not answer is failed
        with AWS's error.

    Raises:
        CliError: no usable credentials, or ``GetCallerIdentity`` failed: nothing can be
            checked (CREDENTIALS or AWS, as :func:`aws_errors`).
    """
    with aws_errors("GetCallerIdentity"):
        account = session.client("sts").get_caller_identity()["Account"]
    runs: dict[str, Callable[[], list[Check]]] = {
        OFFERING_CHECK: lambda: _offerings(session, config),
        "quotas": lambda: _quotas(session, config),
        "CDK bootstrap": lambda: [guarded("CDK bootstrap", _bootstrap, session, config)],
        "Docker": lambda: [_docker(runner, config)],
        "capacity": lambda: capacity_checks(session, config),
        "stack": lambda: [guarded("stack", _stack, session, config, stack_name)],
        FSX_EFA_CHECK: lambda: [
            guarded(FSX_EFA_CHECK, _file_system_efa, session, config, stack_name)],
    }
    return account, [c for name in CHECKS if only is None or name in only
                     for c in runs[name]()]


def format_table(checks: list[Check]) -> str:
    """A pass/fail table with the fix under each failure and any warning under its check."""
    width = max(len(c.name) for c in checks)
    lines = []
    for c in checks:
        lines.append(f"{'PASS' if c.ok else 'FAIL'}  {c.name:<{width}}  {c.detail}")
        if not c.ok and c.fix:
            lines.append(f"      {'':<{width}}  fix: {c.fix}")
        if c.warning:
            lines.append(f"      {'':<{width}}  warning: {c.warning}")
    return "\n".join(lines)
