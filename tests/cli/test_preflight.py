"""``preflight``: the checks (moto for EC2/CloudFormation/STS, botocore Stubber for Service
Quotas and reservations) and the command (the configuration as the CDK app loads it, its
Region, the stack options); a check AWS cannot answer fails alone."""

from __future__ import annotations

import re
from datetime import datetime, timezone
from types import SimpleNamespace

import boto3
import moto
import pytest
import yaml
from botocore.stub import Stubber

from tests.cli.helpers import (
    REGION,
    Session,
    bootstrap,
    create_stack,
    docker_ok,
    preflight_config,
    quota_client,
    quota_stub,
    run,
    stubbed,
)
from tests.conftest import REPO_ROOT
from trn_ultracluster.cli.errors import CliError, ExitCode


def no_traceback(err: str) -> None:
    assert "Traceback" not in err and "Exception ignored" not in err, err


@moto.mock_aws
def test_preflight_all_pass():
    from trn_ultracluster.cli.preflight import format_table, run_preflight

    bootstrap()
    config = preflight_config()
    account, checks = run_preflight(Session(**{"service-quotas": quota_client(config)}),
                                    config, docker_ok)
    assert account == "123456789012"
    assert [c.name for c in checks] == [
        "instance type offered", "quota vpc_network_address_usage", "quota vpc_cidr_blocks",
        "quota network_interfaces", "quota eks_nodes_per_nodegroup",
        "quota eks_nodegroups_per_cluster", "quota trn_vcpus",
        "quota fsx_lustre_persistent_2_gib", "CDK bootstrap", "Docker", "capacity", "stack",
        "FSx over EFA"]
    assert all(c.ok for c in checks), format_table(checks)


@moto.mock_aws
def test_preflight_az_without_instance_type():
    from trn_ultracluster.cli.preflight import run_preflight

    bootstrap()
    # usw2-az1 offers trn1.32xlarge but not trn1n.32xlarge (moto's offerings snapshot).
    config = preflight_config(instance_type="trn1n.32xlarge", az_ids=["usw2-az1", "usw2-az4"])
    _, checks = run_preflight(Session(**{"service-quotas": quota_client(config)}), config,
                              docker_ok)
    offered = checks[0]
    assert not offered.ok
    assert offered.detail == "trn1n.32xlarge is not offered in usw2-az1"
    assert offered.fix == "set az_ids to start with one of usw2-az4"


def quota_checks(config, values=None):
    """The quota checks of ``config`` against a stubbed Service Quotas, by quota key; every
    stubbed answer was asked for."""
    from trn_ultracluster.cli.preflight import _quotas

    client, stub = quota_stub(config, values)
    checks = _quotas(Session(**{"service-quotas": client}), config)
    stub.assert_no_pending_responses()
    return {c.name.removeprefix("quota "): c for c in checks}


@moto.mock_aws
def test_preflight_quota_too_low_exits_1(capsys, monkeypatch):
    from trn_ultracluster.cli import preflight

    bootstrap()
    real = preflight.run_preflight
    monkeypatch.setattr(preflight, "run_preflight", lambda s, c, r, **kw: real(
        Session(**{"service-quotas": quota_client(c, {"trn_vcpus": 128})}), c, docker_ok,
        **kw))
    monkeypatch.chdir(REPO_ROOT)
    code, out, err = run(capsys, "preflight", "-c", "nodes.max=2", "-c", "nodes.desired=2")
    assert code == ExitCode.CHECK_FAILED == 1
    assert re.search(r"FAIL  quota trn_vcpus\s+ec2 'Running On-Demand Trn instances' "
                     r"\(L-2C3B7624\): need 256 \(2 nodes x trn1.32xlarge x 128 vCPUs\), "
                     r"have 128 \(applied\)", out), out
    assert ("fix: request at least 256 for ec2 L-2C3B7624: https://us-west-2.console.aws."
            "amazon.com/servicequotas/home/services/ec2/quotas/L-2C3B7624") in out
    assert "preflight failed: quota trn_vcpus" in err


def test_quota_checks_count_the_address_plan_and_pass_at_the_need():
    config = preflight_config()
    plan = config.address_plan
    checks = quota_checks(config)
    assert all(c.ok for c in checks.values())
    nau = checks["vpc_network_address_usage"]
    assert nau.detail.startswith(f"vpc 'Network Address Usage' (L-BB24F6E5): need "
                                 f"{plan.nau:,} (2 nodes x ")
    assert f"have {plan.nau:,} (applied)" in nau.detail
    assert f"need {plan.interfaces:,}" in checks["network_interfaces"].detail
    assert "need 2 (1 Trainium node groups + the system node group)" in \
        checks["eks_nodegroups_per_cluster"].detail
    assert "need 1,200 (fsx.storage_capacity_gib)" in \
        checks["fsx_lustre_persistent_2_gib"].detail


def test_quota_below_the_need_fails_with_its_code_and_console_page():
    config = preflight_config()
    need = config.address_plan.cidr_blocks
    check = quota_checks(config, {"vpc_cidr_blocks": need - 1 or 0})["vpc_cidr_blocks"]
    assert not check.ok
    assert check.fix == (f"request at least {need} for vpc L-83CA0A9D: https://us-west-2.console."
                         "aws.amazon.com/servicequotas/home/services/vpc/quotas/L-83CA0A9D")


def test_quota_without_an_applied_value_falls_back_to_the_aws_default():
    """GetServiceQuota: NoSuchResourceException -> GetAWSDefaultServiceQuota."""
    from trn_ultracluster.cli.preflight import _quota_check

    config = preflight_config()
    client, stub = stubbed("service-quotas")
    params = {"ServiceCode": "eks", "QuotaCode": "L-BD136A63"}
    stub.add_client_error("get_service_quota", "NoSuchResourceException", "none applied", 400,
                          expected_params=params)
    stub.add_response("get_aws_default_service_quota", {"Quota": {
        "QuotaCode": "L-BD136A63", "QuotaName": "Nodes per managed node group", "Value": 450.0}},
        params)
    from trn_ultracluster.config.quota_needs import quota_needs

    need = next(n for n in quota_needs(config) if n.quota.key == "eks_nodes_per_nodegroup")
    with stub:
        check = _quota_check(client, config, need)
    stub.assert_no_pending_responses()
    assert check.ok and check.detail.endswith("have 450 (AWS default)")
    assert check.warning == ""


def test_quota_unknown_to_service_quotas_fails_with_where_to_look():
    config = preflight_config()
    check = quota_checks(config, {"trn_vcpus": None})["trn_vcpus"]
    assert not check.ok
    assert check.detail == "ec2 'Running On-Demand Trn instances' not found in us-west-2, need 256"
    assert check.fix == ("look it up in Service Quotas (ec2 L-2C3B7624): https://us-west-2."
                         "console.aws.amazon.com/servicequotas/home/services/ec2/quotas/L-2C3B7624")


@pytest.mark.parametrize("orchestrator", ["hyperpod-slurm", "hyperpod-eks"])
def test_hyperpod_instance_quota_is_found_by_name(orchestrator):
    """HyperPod runs the nodes on both HyperPod orchestrators: the SageMaker quota counts,
    found by its name with the ListServiceQuotas paginator (two pages); no EKS node group
    or EC2 vCPU quota is asked for."""
    config = preflight_config(orchestrator=orchestrator)
    name = f"{config.instance.hyperpod_instance_type} for cluster usage"
    workers = sum(config.hyperpod_worker_counts.values())
    checks = quota_checks(config)
    assert "trn_vcpus" not in checks and "eks_nodes_per_nodegroup" not in checks
    check = checks["hyperpod_instances"]
    assert check.ok, check.detail
    assert check.detail.startswith(f"sagemaker {name!r} (L-BYNAME): need {workers}")
    low = quota_checks(config, {"hyperpod_instances": workers - 1})["hyperpod_instances"]
    assert not low.ok
    assert low.fix.endswith("/servicequotas/home/services/sagemaker/quotas/L-BYNAME")
    missing = quota_checks(config, {"hyperpod_instances": None})["hyperpod_instances"]
    assert not missing.ok and f"search {name!r}" in missing.fix


def test_standalone_counts_ec2_vcpus():
    config = preflight_config(orchestrator="standalone", instance_type="trn1.2xlarge",
                              nodes={"min": 0, "desired": 1, "max": 1})
    check = quota_checks(config)["trn_vcpus"]
    assert check.ok and "need 8 (1 nodes x trn1.2xlarge x 8 vCPUs)" in check.detail


def test_a_configured_quota_other_than_the_accounts_is_warned():
    config = preflight_config(quotas={"vpc_cidr_blocks": 10})
    check = quota_checks(config, {"vpc_cidr_blocks": 5})["vpc_cidr_blocks"]
    assert check.ok
    assert check.warning == ("quotas.vpc_cidr_blocks is 10, the account's value is 5: the "
                             "configuration rules plan with 10; set quotas.vpc_cidr_blocks: 5")
    from trn_ultracluster.cli.preflight import format_table

    assert "warning: quotas.vpc_cidr_blocks is 10" in format_table([check])


def test_the_stubber_validates_request_shapes_against_the_service_model():
    """The stubbed client is botocore's own: a request the service-quotas model refuses
    (no QuotaCode) fails before any stubbed answer, and unexpected parameters are caught."""
    from botocore.exceptions import ParamValidationError
    from botocore.stub import StubAssertionError

    client, stub = stubbed("service-quotas")
    stub.add_response("get_service_quota", {"Quota": {"Value": 1.0}})
    with stub:
        with pytest.raises(ParamValidationError, match="QuotaCode"):
            client.get_service_quota(ServiceCode="vpc")
    client, stub = stubbed("service-quotas")
    stub.add_response("get_service_quota", {"Quota": {"Value": 1.0}},
                      {"ServiceCode": "vpc", "QuotaCode": "L-BB24F6E5"})
    with stub:
        with pytest.raises(StubAssertionError):
            client.get_service_quota(ServiceCode="vpc", QuotaCode="L-83CA0A9D")


@moto.mock_aws
def test_preflight_without_bootstrap_or_docker():
    from trn_ultracluster.cli.preflight import run_preflight

    def no_docker(*_, **__):
        raise FileNotFoundError("docker")

    local = preflight_config(training_image={"build": "local"})
    _, checks = run_preflight(Session(**{"service-quotas": quota_client(local)}), local,
                              no_docker)
    by_name = {c.name: c for c in checks}
    assert not by_name["CDK bootstrap"].ok
    assert by_name["CDK bootstrap"].fix == "run: npx cdk bootstrap aws://<account>/us-west-2"
    assert (by_name["Docker"].ok, by_name["Docker"].detail) == (False, "docker is not installed")
    # the default builds the image in CodeBuild: no Docker needed where cdk deploy runs
    config = preflight_config()
    _, checks = run_preflight(Session(**{"service-quotas": quota_client(config)}), config,
                              no_docker)
    docker = {c.name: c for c in checks}["Docker"]
    assert docker.ok and "CodeBuild" in docker.detail


@pytest.mark.parametrize("state, az, ok", [("active", "use2-az3", True),
                                           ("scheduled", "use2-az3", False),
                                           ("active", "use2-az1", False)])
def test_preflight_capacity_block(state, az, ok):
    from trn_ultracluster.cli.preflight_capacity import capacity_checks

    ec2 = boto3.client("ec2", region_name="us-east-2")
    rid = "cr-0123456789abcdef0"
    with Stubber(ec2) as stub:
        stub.add_response("describe_capacity_reservations", {"CapacityReservations": [{
            "CapacityReservationId": rid, "InstanceType": "trn2.48xlarge",
            "AvailabilityZoneId": az, "State": state, "TotalInstanceCount": 4,
            "ReservationType": "capacity-block"}]}, {"CapacityReservationIds": [rid]})
        config = preflight_config(**yaml.safe_load((REPO_ROOT / "profiles" / "trn2.yaml").read_text()))
        (check,) = capacity_checks(SimpleNamespace(client=lambda _: ec2), config)
    assert check.ok is ok, check.detail
    if state != "active":
        assert check.detail == (f"{rid}: state is scheduled: a future-dated reservation, "
                                "delivered on its start date (must be active)")
    elif not ok:
        assert check.detail == f"{rid}: it is in use2-az1, compute AZ is use2-az3"


RID = "cr-0123456789abcdef0"
PG_ARN = "arn:aws:ec2:us-west-2:123456789012:placement-group/"
ODCR = {"capacity": {"type": "capacity-reservation", "reservation_id": RID,
                     "placement_group_name": "odcr-pg"}}


def _odcr_check(config, **fields):
    """The capacity check of ``config`` against an On-Demand Capacity Reservation that fits the
    default preflight configuration (2 x trn1.32xlarge in usw2-az4, in placement group
    odcr-pg), with ``fields`` changed (None: left out)."""
    from trn_ultracluster.cli.preflight_capacity import capacity_checks

    reservation = {"CapacityReservationId": RID, "InstanceType": "trn1.32xlarge",
                   "AvailabilityZoneId": "usw2-az4", "AvailabilityZone": "us-west-2d",
                   "State": "active", "TotalInstanceCount": 2, "AvailableInstanceCount": 2,
                   "ReservationType": "default", "InstanceMatchCriteria": "targeted",
                   "EndDateType": "unlimited", "PlacementGroupArn": PG_ARN + "odcr-pg"}
    reservation.update(fields)
    reservation = {k: v for k, v in reservation.items() if v is not None}
    ec2 = boto3.client("ec2", region_name=REGION)
    with Stubber(ec2) as stub:
        stub.add_response("describe_capacity_reservations",
                          {"CapacityReservations": [reservation]},
                          {"CapacityReservationIds": [RID]})
        (check,) = capacity_checks(SimpleNamespace(client=lambda _: ec2), config)
        return check


@pytest.mark.parametrize("config, fields, detail", [
    (ODCR, {}, f"{RID} active in usw2-az4: 2 x trn1.32xlarge in placement group odcr-pg"),
    ({"capacity": {"type": "capacity-reservation", "reservation_id": RID}},
     {"PlacementGroupArn": None, "InstanceMatchCriteria": "open"},
     f"{RID} active in usw2-az4: 2 x trn1.32xlarge"),
    (ODCR, {"EndDateType": "limited", "EndDate": datetime(2100, 1, 1, tzinfo=timezone.utc)},
     f"{RID} active in usw2-az4: 2 x trn1.32xlarge in placement group odcr-pg"),
], ids=["in the named group", "no group, the stack's own", "ends in the future"])
def test_preflight_reservation_that_serves_the_nodes(config, fields, detail):
    check = _odcr_check(preflight_config(**config), **fields)
    assert (check.ok, check.detail) == (True, detail)


# (case, configuration overrides, reservation fields, the check's exact detail and fix)
ODCR_REFUSED = [
    ("other AZ ID", ODCR, {"AvailabilityZoneId": "usw2-az1"},
     f"{RID}: it is in usw2-az1, compute AZ is usw2-az4", "set az_ids to start with usw2-az1"),
    ("other instance type", ODCR, {"InstanceType": "trn1n.32xlarge"},
     f"{RID}: it holds trn1n.32xlarge, config uses trn1.32xlarge",
     "set instance_type: trn1n.32xlarge"),
    ("fewer instances than nodes.max", ODCR, {"TotalInstanceCount": 1},
     f"{RID}: it holds 1 instances, nodes.max is 2",
     "lower nodes.max to 1, or use a reservation of at least 2 instances"),
    ("a Capacity Block as capacity-reservation", ODCR, {"ReservationType": "capacity-block"},
     f"{RID}: it is a capacity-block reservation, capacity.type is capacity-reservation",
     "set capacity.type: capacity-block"),
    ("expired", ODCR, {"State": "expired"},
     f"{RID}: state is expired: it reached its end date; the capacity is released (must be active)",
     "reserve the capacity again and set capacity.reservation_id to the new reservation"),
    ("pending", ODCR, {"State": "pending"},
     f"{RID}: state is pending: the request succeeded, the capacity is still being provisioned "
     "(must be active)",
     f"wait until it is active (aws ec2 describe-capacity-reservations "
     f"--capacity-reservation-ids {RID}), then run preflight again"),
    ("end date passed", ODCR, {"EndDateType": "limited",
                               "EndDate": datetime(2020, 1, 1, 12, 30, tzinfo=timezone.utc)},
     f"{RID}: its end date 2020-01-01 12:30 UTC has passed",
     "reserve the capacity again and set capacity.reservation_id to the new reservation"),
    ("in another group", ODCR, {"PlacementGroupArn": PG_ARN + "other-pg"},
     f"{RID}: it was created in placement group other-pg, capacity.placement_group_name is odcr-pg",
     "set capacity.placement_group_name: other-pg"),
    ("in a group, the stack creates its own",
     {"capacity": {"type": "capacity-reservation", "reservation_id": RID}}, {},
     f"{RID}: it was created in placement group odcr-pg, the stack would launch the nodes into "
     "a new group of its own", "set capacity.placement_group_name: odcr-pg"),
    ("in a group, no placement group",
     {"capacity": {"type": "capacity-reservation", "reservation_id": RID},
      "placement_group": False}, {},
     f"{RID}: it was created in placement group odcr-pg, the nodes launch into no placement group",
     "set placement_group: true and capacity.placement_group_name: odcr-pg"),
    ("in a group, a single node without EFA",
     {"capacity": {"type": "capacity-reservation", "reservation_id": RID},
      "instance_type": "trn1.2xlarge", "nodes": {"max": 1, "desired": 1}},
     {"InstanceType": "trn1.2xlarge"},
     f"{RID}: it was created in placement group odcr-pg, and trn1.2xlarge nodes (no EFA) "
     "launch into no placement group", "use a reservation created in no placement group"),
    ("in no group, one named", ODCR, {"PlacementGroupArn": None},
     f"{RID}: it is in no placement group, capacity.placement_group_name is odcr-pg",
     "remove capacity.placement_group_name, or create a reservation in odcr-pg (an existing "
     "reservation cannot be moved into a placement group)"),
]


@pytest.mark.parametrize("case, config, fields, detail, fix", ODCR_REFUSED,
                         ids=[c[0] for c in ODCR_REFUSED])
def test_preflight_refuses_a_reservation_that_cannot_serve_the_nodes(case, config, fields,
                                                                     detail, fix):
    check = _odcr_check(preflight_config(**config), **fields)
    assert (check.ok, check.detail, check.fix) == (False, detail, fix)


def test_preflight_lists_every_problem_of_a_reservation():
    check = _odcr_check(preflight_config(**ODCR), AvailabilityZoneId="usw2-az1",
                        TotalInstanceCount=1)
    assert check.detail == (f"{RID}: it is in usw2-az1, compute AZ is usw2-az4; "
                            "it holds 1 instances, nodes.max is 2")
    assert check.fix == ("set az_ids to start with usw2-az1; lower nodes.max to 1, or use a "
                         "reservation of at least 2 instances")


def test_reservation_states_are_botocores():
    """Every state of botocore's EC2 model has a meaning, and no other state is listed."""
    from trn_ultracluster.cli.preflight import RESERVATION_STATES

    model = boto3.client("ec2", region_name=REGION).meta.service_model
    assert sorted(RESERVATION_STATES) == sorted(model.shape_for("CapacityReservationState").enum)


def test_preflight_no_credentials(monkeypatch):
    from trn_ultracluster.cli.preflight import run_preflight

    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    with pytest.raises(CliError) as err:
        run_preflight(boto3.Session(region_name=REGION), preflight_config(), docker_ok)
    assert err.value.exit_code == ExitCode.CREDENTIALS
    assert err.value.message.startswith("GetCallerIdentity: no AWS credentials found")


# --- the command ----------------------------------------------------------------------------


def test_preflight_with_a_broken_cdk_json(capsys, tmp_path, monkeypatch):
    (tmp_path / "cdk.json").write_text('{"app": "python app.py", ')
    monkeypatch.chdir(tmp_path)
    code, _, err = run(capsys, "preflight")
    assert code == ExitCode.USAGE
    assert f"error: {tmp_path / 'cdk.json'} is not JSON" in err


@moto.mock_aws
def test_preflight_reports_an_unexpected_aws_error_as_a_failed_check(capsys, monkeypatch):
    """A throttled / failing call fails its check with AWS's code; the other checks run."""
    from trn_ultracluster.cli import aws

    bootstrap()
    quotas = boto3.client("service-quotas", region_name=REGION)
    stub = Stubber(quotas)
    for _ in range(7):  # the default (eks) configuration's seven quotas, each by its code
        stub.add_client_error("get_service_quota", "ThrottlingException", "Rate exceeded", 400)
    stub.activate()
    monkeypatch.setattr(aws, "make_session", lambda region: Session(**{"service-quotas": quotas}))
    monkeypatch.chdir(REPO_ROOT)
    code, out, err = run(capsys, "preflight")
    assert code == ExitCode.CHECK_FAILED
    assert re.search(r"FAIL  quota trn_vcpus\s+GetServiceQuota ec2 L-2C3B7624: "
                     r"ThrottlingException: Rate exceeded", out), out
    assert "fix: AWS is throttling" in out
    assert re.search(r"PASS  CDK bootstrap", out)
    assert "preflight failed: quota vpc_network_address_usage" in err
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

    bootstrap()
    if stack:
        create_stack({"Orchestrator": "eks"}, name=stack)
    config = preflight_config()
    _, checks = run_preflight(Session(**{"service-quotas": quota_client(config)}), config,
                              docker_ok, stack_name="TrnUltraCluster")
    check = {c.name: c for c in checks}["stack"]
    assert (check.ok, check.detail) == (ok, detail)


@pytest.mark.parametrize("status, fix", [
    ("ROLLBACK_COMPLETE", "delete it (npx cdk destroy) before deploying again"),
    ("UPDATE_IN_PROGRESS", "wait for the operation to finish"),
])
def test_preflight_stack_that_cannot_be_deployed(status, fix):
    from trn_ultracluster.cli.preflight import _stack

    cfn = boto3.client("cloudformation", region_name=REGION)
    with Stubber(cfn) as stub:
        stub.add_response("describe_stacks", {"Stacks": [{
            "StackName": "Other", "CreationTime": "2026-11-21T00:00:00Z", "StackStatus": status}]},
            {"StackName": "Other"})
        check = _stack(Session(cloudformation=cfn), preflight_config(), "Other")
    assert not check.ok
    assert check.detail == f"stack Other is {status}"
    assert fix in check.fix


EFA_FSX = {"storage_capacity_gib": 4800, "per_unit_storage_throughput": 1000, "efa": True}
"""The smallest EFA-enabled file system at 1000 MB/s/TiB, required on the nodes."""


@moto.mock_aws
@pytest.mark.parametrize("outputs, fsx, ok, detail", [
    (None, {}, True, "the deploy creates a file system without EFA (fsx.efa off (auto): "),
    ({"FsxEfa": "off"}, {}, True, "the file system stays without EFA"),
    ({"Orchestrator": "eks"}, {}, True, "the file system stays without EFA"),  # older stack
    ({"FsxEfa": "preferred"}, EFA_FSX, True, "the file system stays EFA-enabled"),
    ({"FsxEfa": "required"}, {}, False,
     "stack TrnUltraCluster's file system is EFA-enabled; this configuration wants one "
     "without EFA"),
    ({"Orchestrator": "eks"}, EFA_FSX, False,
     "stack TrnUltraCluster's file system is without EFA; this configuration wants one "
     "EFA-enabled (fsx.efa on: fsx.efa is true): EFA is set when a file system is created, so "
     "the deploy would replace it"),
], ids=["new stack", "off", "older stack", "EFA kept", "EFA turned off", "EFA turned on"])
def test_preflight_fails_a_configuration_that_would_replace_the_file_system(outputs, fsx, ok,
                                                                           detail):
    """FSx for Lustre user guide, "Working with EFA-enabled file systems": "you cannot enable
    or disable EFA on an existing file system"; the stack replaces it instead."""
    from trn_ultracluster.cli.preflight import FSX_EFA_CHECK, run_preflight

    bootstrap()
    if outputs is not None:
        create_stack(outputs)
    config = preflight_config(fsx=fsx)
    _, checks = run_preflight(Session(**{"service-quotas": quota_client(config)}), config,
                              docker_ok, stack_name="TrnUltraCluster")
    check = {c.name: c for c in checks}[FSX_EFA_CHECK]
    assert check.ok is ok and check.detail.startswith(detail), check.detail
    if not ok:
        kept = "true" if outputs.get("FsxEfa", "off") != "off" else "false"
        assert check.fix.startswith(f"to keep the file system, set fsx.efa: {kept}")


@moto.mock_aws
def test_preflight_only_runs_the_named_checks():
    """``--only``: the named checks alone (one DescribeStacks for the file system's EFA, not
    the whole preflight; ``make deploy`` runs ``plan`` instead: tests/cli/test_plan.py)."""
    from trn_ultracluster.cli.preflight import CHECKS, FSX_EFA_CHECK, run_preflight

    create_stack({"FsxEfa": "required"})
    _, checks = run_preflight(Session(), preflight_config(), docker_ok,
                              stack_name="TrnUltraCluster", only=[FSX_EFA_CHECK])
    assert [(c.name, c.ok) for c in checks] == [(FSX_EFA_CHECK, False)]
    assert CHECKS[-1] == FSX_EFA_CHECK


# --- pools ----------------------------------------------------------------------------------

POOLS = [{"name": "trn1", "instance_type": "trn1.32xlarge",
          "nodes": {"min": 0, "desired": 2, "max": 2}},
         {"name": "big", "instance_type": "trn1n.32xlarge",
          "nodes": {"min": 0, "desired": 0, "max": 1}},
         {"name": "cpu", "instance_type": "m7i.8xlarge",
          "nodes": {"min": 0, "desired": 1, "max": 3}}]
"""Three pools in usw2-az4, which offers all three types (moto's offerings snapshot)."""


def pools_config(*pools, **overrides):
    """A valid configuration of ``pools`` (default :data:`POOLS`) in usw2-az4, with
    ``overrides``."""
    from trn_ultracluster.config import parse_config

    raw = {"az_ids": ["usw2-az4", "usw2-az1"], "pools": list(pools or POOLS), **overrides}
    return parse_config(raw).config


@moto.mock_aws
def test_preflight_checks_every_pools_type_and_each_vcpu_quota():
    """Trainium pools share the Trn vCPU quota; a CPU pool counts against the Standard one."""
    from trn_ultracluster.cli.preflight import format_table, run_preflight

    bootstrap()
    config = pools_config()
    _, checks = run_preflight(Session(**{"service-quotas": quota_client(config)}), config,
                              docker_ok)
    by_name = {c.name: c for c in checks}
    assert [c.name for c in checks][:3] == ["instance type offered trn1.32xlarge",
                                           "instance type offered trn1n.32xlarge",
                                           "instance type offered m7i.8xlarge"]
    assert all(c.ok for c in checks), format_table(checks)
    assert by_name["quota trn_vcpus"].detail.startswith(
        "ec2 'Running On-Demand Trn instances' (L-2C3B7624): need 384 (trn1: 2 x trn1.32xlarge "
        "x 128 + big: 1 x trn1n.32xlarge x 128 vCPUs)")
    assert by_name["quota standard_vcpus"].detail.startswith(
        "ec2 'Running On-Demand Standard (A, C, D, H, I, M, R, T, Z) instances' (L-1216C47A): "
        "need 96 (cpu: 3 x m7i.8xlarge x 32 vCPUs)")
    assert "trn1: 1 + big: 1 + cpu: 1 node groups + the system node group" in \
        by_name["quota eks_nodegroups_per_cluster"].detail
    assert by_name["capacity"].detail == "on-demand (no reservation configured)"


@moto.mock_aws
def test_preflight_fails_a_pool_whose_type_the_compute_az_does_not_offer():
    from trn_ultracluster.cli.preflight import run_preflight

    config = pools_config(*POOLS, {"name": "trn2", "instance_type": "trn2.48xlarge",
                                   "nodes": {"min": 0, "desired": 0, "max": 1}})
    _, checks = run_preflight(Session(), config, docker_ok, only=["instance type offered"])
    assert [(c.name, c.ok) for c in checks] == [
        ("instance type offered trn1.32xlarge", True), ("instance type offered trn1n.32xlarge", True),
        ("instance type offered m7i.8xlarge", True), ("instance type offered trn2.48xlarge", False)]
    assert checks[-1].detail == "trn2.48xlarge is not offered in usw2-az4"
    assert checks[-1].fix == ("trn2.48xlarge is not offered in us-west-2: pick another Region's "
                              "AZ IDs (catalog hint: use2-az1, use2-az2, use2-az3)")


def test_hyperpod_quotas_of_each_pool_type_are_found_by_name():
    config = pools_config(orchestrator="hyperpod-slurm")
    checks = quota_checks(config)
    names = [n for n in checks if n.startswith("hyperpod_instances")]
    assert names == ["hyperpod_instances ml.trn1.32xlarge for cluster usage",
                     "hyperpod_instances ml.trn1n.32xlarge for cluster usage",
                     "hyperpod_instances ml.m7i.8xlarge for cluster usage"]
    cpu = checks["hyperpod_instances ml.m7i.8xlarge for cluster usage"]
    assert cpu.ok and cpu.detail.startswith("sagemaker 'ml.m7i.8xlarge for cluster usage' "
                                            "(L-BYNAME): need 1 (the worker group of pool cpu)")
    assert "trn_vcpus" not in checks and "standard_vcpus" not in checks


def _pool_capacity(config, reservation):
    """The capacity checks of ``config`` against one stubbed reservation ``RID``."""
    from trn_ultracluster.cli.preflight_capacity import capacity_checks

    ec2 = boto3.client("ec2", region_name=REGION)
    with Stubber(ec2) as stub:
        stub.add_response("describe_capacity_reservations",
                          {"CapacityReservations": [{
                              "CapacityReservationId": RID, "AvailabilityZoneId": "usw2-az4",
                              "State": "active", "ReservationType": "default",
                              **reservation}]},
                          {"CapacityReservationIds": [RID]})
        checks = capacity_checks(SimpleNamespace(client=lambda _: ec2), config)
        stub.assert_no_pending_responses()
    return checks


def test_pools_on_one_reservation_are_checked_together():
    """Two trn1 pools on the top-level reservation: one DescribeCapacityReservations, which
    must hold both pools' nodes.max; the on-demand CPU pool takes no reservation."""
    trn1b = {"name": "trn1b", "instance_type": "trn1.32xlarge",
             "nodes": {"min": 0, "desired": 0, "max": 2}}
    pools = [POOLS[0], trn1b, {**POOLS[2], "capacity": {"type": "on-demand"}}]
    config = pools_config(*pools, capacity={"type": "capacity-reservation",
                                            "reservation_id": RID}, placement_group=False)
    (check,) = _pool_capacity(config, {"InstanceType": "trn1.32xlarge",
                                       "TotalInstanceCount": 3})
    assert (check.name, check.ok) == ("capacity trn1, trn1b", False)
    assert check.detail == f"{RID}: it holds 3 instances, the pools trn1, trn1b take up to 4 (nodes.max)"
    assert check.fix == ("lower their nodes.max to 3 in all, or use a reservation of at least 4 "
                         "instances")
    (ok,) = _pool_capacity(config, {"InstanceType": "trn1.32xlarge", "TotalInstanceCount": 4})
    assert ok.ok and ok.detail == f"{RID} active in usw2-az4: 4 x trn1.32xlarge"


def test_a_pools_own_reservation_is_named_by_its_own_keys():
    own = {"name": "big", "instance_type": "trn1n.32xlarge",
           "nodes": {"min": 0, "desired": 0, "max": 2},
           "capacity": {"type": "capacity-reservation", "reservation_id": RID,
                        "placement_group_name": "odcr-pg"}}
    config = pools_config(POOLS[0], own, POOLS[2])
    (check,) = _pool_capacity(config, {"InstanceType": "trn1.32xlarge", "TotalInstanceCount": 1,
                                       "PlacementGroupArn": PG_ARN + "other-pg"})
    assert check.name == "capacity big" and not check.ok
    assert check.detail == (f"{RID}: it holds trn1.32xlarge, pool big uses trn1n.32xlarge; it "
                            "holds 1 instances, pools[1].nodes.max is 2; it was created in "
                            "placement group other-pg, pools[1].capacity.placement_group_name "
                            "is odcr-pg")
    assert check.fix == ("set pools[1].instance_type: trn1.32xlarge; lower pools[1].nodes.max "
                         "to 1, or use a reservation of at least 2 instances; set "
                         "pools[1].capacity.placement_group_name: other-pg")


def test_two_neuron_stacks_need_no_codebuild_concurrency_check():
    """trn1 (xla) and trn2 (native) pools: two training images, built one after the other
    (stacks/cluster.py), so no concurrent-build quota is needed beyond one build."""
    config = pools_config(POOLS[0], {"name": "trn2", "instance_type": "trn2.48xlarge",
                                     "nodes": {"min": 0, "desired": 0, "max": 1}},
                          az_ids=["use2-az3", "use2-az1"])
    assert config.neuron_stacks == ("xla", "native")
    assert not [k for k in quota_checks(config) if "codebuild" in k]
