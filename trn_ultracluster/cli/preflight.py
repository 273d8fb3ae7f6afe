"""``preflight``: can this configuration deploy and run in this account, before ``cdk deploy``?

Checks (each a :class:`Check` with the fix for a failure):

1. the instance type is offered in the compute AZ ID (EC2 ``DescribeInstanceTypeOfferings``
   with ``LocationType=availability-zone-id``);
2. each account quota the configuration needs at ``nodes.max``
   (:func:`~trn_ultracluster.config.quota_needs.quota_needs`: NAU, CIDR blocks, network
   interfaces; EKS nodes per node group and node groups; On-Demand Trn vCPUs; HyperPod
   "ml.<type> for cluster usage"; FSx Persistent_2 GiB) is at least that: the applied value
   by quota code (Service Quotas ``GetServiceQuota``, AWS's default with
   ``GetAWSDefaultServiceQuota`` where no value is applied), by name (``ListServiceQuotas``)
   where :data:`~trn_ultracluster.contracts.quotas.QUOTAS` has no code; a failure names the
   code and its console page, and a ``quotas.*`` value other than the account's is warned;
3. the CDK bootstrap stack ``CDKToolkit`` exists and is complete (CDK guide,
   "Bootstrapping", https://docs.aws.amazon.com/cdk/v2/guide/bootstrapping.html);
4. with ``training_image.build: local``, Docker answers (``docker info``): the CDK CLI builds
   the training image locally (the default builds it in CodeBuild and needs no Docker);
5. with ``capacity.type`` ``capacity-reservation`` / ``capacity-block``: the reservation is
   ``active`` and not past its end date, in the compute AZ ID, of the instance type, holds
   at least ``nodes.max`` instances (EC2 ``DescribeCapacityReservations``; a Capacity
   Block has ``ReservationType capacity-block``), and a Capacity Reservation is in the
   nodes' placement group (``PlacementGroupArn`` names ``capacity.placement_group_name``);
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
from datetime import datetime, timezone
from typing import Any

from trn_ultracluster.cli.aws import aws_errors, error_code
from trn_ultracluster.cli.errors import CliError
from trn_ultracluster.cli.stack_outputs import USABLE_STATES
from trn_ultracluster.config import ClusterConfig
from trn_ultracluster.config.quota_needs import quota_needs
from trn_ultracluster.config.fsx_efa import plan_fsx_efa
from trn_ultracluster.contracts.outputs import FSX_EFA_OFF, STACK_NAME, OutputKey
from trn_ultracluster.contracts.quotas import QuotaNeed, console_url

__all__ = ["CHECKS", "Check", "format_table", "run_preflight"]

BOOTSTRAP_STACK = "CDKToolkit"
FSX_EFA_CHECK = "FSx over EFA"


@dataclass(frozen=True)
class Check:
    """One preflight result: name, pass/fail, what was found, the fix when failed, and a
    warning that does not fail it."""

    name: str
    ok: bool
    detail: str
    fix: str = ""
    warning: str = ""


def _offering(session: Any, config: ClusterConfig) -> Check:
    az, itype = config.compute_az_id, config.instance_type
    with aws_errors("DescribeInstanceTypeOfferings"):
        ec2 = session.client("ec2")
        found = ec2.describe_instance_type_offerings(
            LocationType="availability-zone-id",
            Filters=[{"Name": "location", "Values": [az]},
                     {"Name": "instance-type", "Values": [itype]}],
        )["InstanceTypeOfferings"]
        if found:
            return Check("instance type offered", True, f"{itype} is offered in {az}")
        elsewhere = ec2.describe_instance_type_offerings(
            LocationType="availability-zone-id",
            Filters=[{"Name": "instance-type", "Values": [itype]}],
        )["InstanceTypeOfferings"]
    others = sorted({o["Location"] for o in elsewhere})
    fix = (f"set az_ids to start with one of {', '.join(others)}" if others else
           f"{itype} is not offered in {config.region}: pick another Region's AZ IDs "
           f"(catalog hint: {', '.join(config.instance.az_ids_seen) or 'none recorded'})")
    return Check("instance type offered", False, f"{itype} is not offered in {az}", fix)


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


def _quota_check(client: Any, config: ClusterConfig, need: QuotaNeed) -> Check:
    """``need`` against the account's value: passed when the value is at least ``need.need``;
    failed with the quota code and its Service Quotas console page otherwise, or when the
    quota is not found. Warns when ``quotas.<key>`` differs from the account's value."""
    q, region = need.quota, config.region
    name = f"quota {q.key}"
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
    when AWS cannot answer it."""
    client = session.client("service-quotas")
    return [_guarded(f"quota {need.quota.key}", _quota_check, client, config, need)
            for need in quota_needs(config)]


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


RESERVATION_STATES: dict[str, str] = {
    "active": "the capacity is available for use",
    "expired": "it reached its end date; the capacity is released",
    "cancelled": "it was cancelled; the capacity is released",
    "pending": "the request succeeded, the capacity is still being provisioned",
    "failed": "the request failed (invalid parameters, capacity or instance limits)",
    "scheduled": "a future-dated reservation, delivered on its start date",
    "payment-pending": "a Capacity Block whose upfront payment is not processed yet",
    "payment-failed": "a Capacity Block whose payment was not processed in 12 hours; released",
    "assessing": "EC2 is assessing the future-dated request",
    "delayed": "EC2 cannot deliver the future-dated capacity by its start date",
    "unsupported": "EC2 cannot support the future-dated request; it will not be delivered",
    "cancelling": "it is being cancelled; the capacity is released",
    "unavailable": "not described in the EC2 API reference",
}
"""``State`` of a Capacity Reservation -> what it means: botocore's EC2 model (1.44.8),
``CapacityReservation.State`` (shape ``CapacityReservationState``) and its documentation;
only ``active`` can take instances (EC2 user guide, "Launch instances into an existing
Capacity Reservation", https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/capacity-reservations-launch.html)."""
_WAIT_STATES = frozenset({"pending", "scheduled", "assessing", "delayed", "payment-pending"})
"""States that may still become ``active`` (the rest are released, failed or refused)."""
_PLACEMENT_GROUP_ARN = ":placement-group/"
"""A placement group's ARN ends in ``:placement-group/<name>`` (Service Authorization
Reference, Amazon EC2 resource types: ``arn:${Partition}:ec2:${Region}:${Account}:
placement-group/${PlacementGroupName}``)."""

Problem = tuple[str, str]
"""What is wrong with a reservation, and the fix."""


def _read_reservation(session: Any, config: ClusterConfig) -> dict[str, Any] | None:
    """The ``CapacityReservation`` of ``capacity.reservation_id`` (EC2
    ``DescribeCapacityReservations``), or None when the Region has none of that ID."""
    from botocore.exceptions import ClientError

    rid = config.capacity.reservation_id or ""
    with aws_errors("DescribeCapacityReservations"):
        try:
            found = session.client("ec2").describe_capacity_reservations(
                CapacityReservationIds=[rid])["CapacityReservations"]
        except ClientError as err:
            if not error_code(err).startswith("InvalidCapacityReservationId"):
                raise
            found = []
    return found[0] if found else None


def _state_problems(r: dict[str, Any], now: datetime) -> list[Problem]:
    """The reservation is ``active`` (:data:`RESERVATION_STATES`) and its ``EndDate`` (absent
    when unlimited) has not passed; EC2 sets ``expired`` at the end date (botocore's EC2
    model, ``CapacityReservation.EndDate``), so an active reservation past it is ending."""
    state, rid = r["State"], r["CapacityReservationId"]
    again = "reserve the capacity again and set capacity.reservation_id to the new reservation"
    if state != "active":
        meaning = RESERVATION_STATES.get(state, "a state this tool does not know")
        fix = (f"wait until it is active (aws ec2 describe-capacity-reservations "
               f"--capacity-reservation-ids {rid}), then run preflight again"
               if state in _WAIT_STATES else again)
        return [(f"state is {state}: {meaning} (must be active)", fix)]
    end = r.get("EndDate")
    if end is not None and (end if end.tzinfo else end.replace(tzinfo=timezone.utc)) <= now:
        return [(f"its end date {end:%Y-%m-%d %H:%M} UTC has passed", again)]
    return []


def _fit_problems(r: dict[str, Any], config: ClusterConfig) -> list[Problem]:
    """The reservation matches the nodes: AZ ID, instance type, kind (a Capacity Block has
    ``ReservationType capacity-block``), and ``TotalInstanceCount`` >= ``nodes.max``. An
    instance launches into a reservation only with matching attributes (EC2 user guide,
    "Launch instances into an existing Capacity Reservation")."""
    problems = []
    az, itype, total = r.get("AvailabilityZoneId"), r["InstanceType"], r["TotalInstanceCount"]
    if az != config.compute_az_id:
        problems.append((f"it is in {az}, compute AZ is {config.compute_az_id}",
                         f"set az_ids to start with {az}"))
    if itype != config.instance_type:
        problems.append((f"it holds {itype}, config uses {config.instance_type}",
                         f"set instance_type: {itype}"))
    kind = r.get("ReservationType", "default")
    if kind != ("capacity-block" if config.capacity.type == "capacity-block" else "default"):
        want = "capacity-block" if kind == "capacity-block" else "capacity-reservation"
        problems.append((f"it is a {kind} reservation, capacity.type is {config.capacity.type}",
                         f"set capacity.type: {want}"))
    if total < config.nodes.max:
        problems.append((f"it holds {total} instances, nodes.max is {config.nodes.max}",
                         f"lower nodes.max to {total}, or use a reservation of at least "
                         f"{config.nodes.max} instances"))
    return problems


def _reservation_group(r: dict[str, Any]) -> str | None:
    """Name of the cluster placement group the reservation was created in
    (``PlacementGroupArn``), or None."""
    arn = r.get("PlacementGroupArn")
    return arn.split(_PLACEMENT_GROUP_ARN, 1)[-1] if arn else None


def _placement_problems(r: dict[str, Any], config: ClusterConfig) -> list[Problem]:
    """An On-Demand Capacity Reservation created in a cluster placement group takes only
    launches into that group ("you must also specify the ARN of the cluster placement group
    in which to launch the instance"; placement group ARN is one of the matching attributes),
    and a reservation cannot be moved into or out of a group (EC2 user guide, "Capacity
    Reservations in cluster placement groups",
    https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/cr-cpg.html). So the nodes'
    group must be the reservation's: ``capacity.placement_group_name``. A reservation in
    no group with the stack's own group is allowed (the configuration warns about it)."""
    group, named = _reservation_group(r), config.capacity.placement_group_name
    if group == named:
        return []
    if group is None:
        return [(f"it is in no placement group, capacity.placement_group_name is {named}",
                 f"remove capacity.placement_group_name, or create a reservation in {named} "
                 "(an existing reservation cannot be moved into a placement group)")]
    fix = f"set capacity.placement_group_name: {group}"
    if named is not None:
        return [(f"it was created in placement group {group}, "
                 f"capacity.placement_group_name is {named}", fix)]
    if config.uses_placement_group:
        return [(f"it was created in placement group {group}, the stack would launch the "
                 "nodes into a new group of its own", fix)]
    if not config.instance.supports_efa:  # a single node without EFA gets no placement group
        return [(f"it was created in placement group {group}, and {config.instance_type} nodes "
                 "(no EFA) launch into no placement group",
                 "use a reservation created in no placement group")]
    return [(f"it was created in placement group {group}, the nodes launch into no "
             "placement group", f"set placement_group: true and capacity.placement_group_name: "
             f"{group}")]


def _capacity(session: Any, config: ClusterConfig) -> Check:
    """The configured reservation can serve the nodes: found, ``active``, not past its end
    date, in the compute AZ ID, of the instance type, of the configured kind, at least
    ``nodes.max`` instances, and (``capacity-reservation``) in the nodes' placement group.

    ``InstanceMatchCriteria`` is not checked: the launch template targets the reservation
    by ID, which an ``open`` reservation accepts and a ``targeted`` one requires ("only
    accepts instances that have matching attributes ... and explicitly target the Capacity
    Reservation", botocore's EC2 model, ``CapacityReservation.InstanceMatchCriteria``).

    Returns:
        A passed check, or a failed one listing every problem (``; ``) and their fixes.
    """
    cap = config.capacity
    if cap.type == "on-demand":
        return Check("capacity", True, "on-demand (no reservation configured)")
    r = _read_reservation(session, config)
    if r is None:
        return Check("capacity", False, f"{cap.reservation_id} not found in {config.region}",
                     "check capacity.reservation_id and the Region (az_ids)")
    problems = _state_problems(r, datetime.now(timezone.utc)) + _fit_problems(r, config)
    if cap.type == "capacity-reservation":
        problems += _placement_problems(r, config)
    if problems:
        return Check("capacity", False,
                     f"{cap.reservation_id}: " + "; ".join(p for p, _ in problems),
                     "; ".join(dict.fromkeys(fix for _, fix in problems)))
    group = _reservation_group(r)
    return Check("capacity", True, f"{cap.reservation_id} active in {config.compute_az_id}: "
                 f"{r['TotalInstanceCount']} x {r['InstanceType']}"
                 + (f" in placement group {group}" if group else ""))


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
        "it, first copy what is outside the data repository's path, then deploy (README "
        "\"FSx for Lustre over EFA\")")


def _guarded(name: str, check: Callable[..., Check], *args: Any) -> Check:
    """``check(*args)``, or a failed :class:`Check` with the error when AWS could not answer
    (denied, throttled, a service error), so the other checks still run."""
    try:
        return check(*args)
    except CliError as err:
        return Check(name, False, err.message, err.fix)


CHECKS = ("instance type offered", "quotas", "CDK bootstrap", "Docker", "capacity", "stack",
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
        "instance type offered": lambda: [
            _guarded("instance type offered", _offering, session, config)],
        "quotas": lambda: _quotas(session, config),
        "CDK bootstrap": lambda: [_guarded("CDK bootstrap", _bootstrap, session, config)],
        "Docker": lambda: [_docker(runner, config)],
        "capacity": lambda: [_guarded("capacity", _capacity, session, config)],
        "stack": lambda: [_guarded("stack", _stack, session, config, stack_name)],
        FSX_EFA_CHECK: lambda: [
            _guarded(FSX_EFA_CHECK, _file_system_efa, session, config, stack_name)],
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
