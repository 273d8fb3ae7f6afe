"""``scale`` on EKS: the Trainium node group's desired size within the stack's NodeCountMax,
and a Capacity Block node group only once the block is active (moto EKS, botocore Stubber
for the reservation)."""

from __future__ import annotations

import datetime as dt

import boto3
import moto
import pytest

from tests.cli.helpers import (
    ACCOUNT,
    REGION,
    StubSession,
    outputs_values,
    run,
    stubbed,
    write_outputs,
)
from trn_ultracluster.cli.commands import common
from trn_ultracluster.cli.errors import ExitCode


def _eks_outputs(capacity_type="capacity-block", rid="cr-0123456789abcdef0"):
    values = outputs_values("eks")
    values.update({"CapacityType": capacity_type, "CapacityReservationId": rid,
                   "EksClusterName": "trn", "EksTrainiumNodegroupName": "trainium",
                   "NodeCountMax": "4"})
    return values


def _reservation(state: str, count: int = 4) -> dict:
    return {"CapacityReservations": [{
        "CapacityReservationId": "cr-0123456789abcdef0", "InstanceType": "trn1.32xlarge",
        "State": state, "TotalInstanceCount": count, "ReservationType": "capacity-block",
        "StartDate": dt.datetime(2026, 12, 1, 9, 0, tzinfo=dt.timezone.utc)}]}


@moto.mock_aws
@pytest.mark.parametrize("state, code", [("active", 0), ("scheduled", ExitCode.CHECK_FAILED)])
def test_scale_waits_for_an_active_block(capsys, tmp_path, monkeypatch, state, code):
    eks = boto3.client("eks", region_name=REGION)
    eks.create_cluster(name="trn", roleArn=f"arn:aws:iam::{ACCOUNT}:role/r",
                       resourcesVpcConfig={"subnetIds": ["subnet-1"]})
    eks.create_nodegroup(clusterName="trn", nodegroupName="trainium",
                         nodeRole=f"arn:aws:iam::{ACCOUNT}:role/n", subnets=["subnet-1"],
                         scalingConfig={"minSize": 0, "maxSize": 4, "desiredSize": 0})
    ec2, stub = stubbed("ec2")
    stub.add_response("describe_capacity_reservations", _reservation(state),
                      {"CapacityReservationIds": ["cr-0123456789abcdef0"]})
    session = StubSession(ec2=ec2, eks=eks)
    monkeypatch.setattr(common, "stack_session", lambda args, outputs: session)
    path = write_outputs(tmp_path, _eks_outputs())
    with stub:
        got, out, err = run(capsys, "scale", "--outputs-file", str(path), "--nodes", "4")
    assert got == code, err
    size = eks.describe_nodegroup(clusterName="trn", nodegroupName="trainium")["nodegroup"][
        "scalingConfig"]["desiredSize"]
    if state == "active":
        assert out.startswith("trainium: 0 -> 4 nodes") and size == 4
    else:
        assert "is scheduled, not active (it starts 2026-12-01 09:00 UTC)" in err and size == 0


@pytest.mark.parametrize("nodes", ["-1", "5"])
def test_scale_stays_within_the_stack_max(capsys, tmp_path, nodes):
    path = write_outputs(tmp_path, _eks_outputs())
    code, _, err = run(capsys, "scale", "--outputs-file", str(path), "--nodes", nodes)
    assert code == ExitCode.USAGE and "between 0 and the stack's NodeCountMax (4)" in err
