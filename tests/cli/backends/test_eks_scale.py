"""``scale`` on EKS: the Trainium node groups' desired sizes, filled in order, within the
stack's NodeCountMax, and a Capacity Block node group only once the block is active (moto
EKS, botocore Stubber for the reservation and the update calls)."""

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
    assert code == ExitCode.USAGE
    assert ("--nodes must be at least 0, got -1" if nodes == "-1" else
            "--nodes 5 is more than pool trainium (trn1.32xlarge) holds: its nodes.max is 4") in err


def _cluster_of(groups: dict[str, dict[str, int]]):
    eks = boto3.client("eks", region_name=REGION)
    eks.create_cluster(name="trn", roleArn=f"arn:aws:iam::{ACCOUNT}:role/r",
                       resourcesVpcConfig={"subnetIds": ["subnet-1"]})
    for name, scaling in groups.items():
        eks.create_nodegroup(clusterName="trn", nodegroupName=name,
                             nodeRole=f"arn:aws:iam::{ACCOUNT}:role/n", subnets=["subnet-1"],
                             scalingConfig=scaling)
    return eks


def _desired(eks, names):
    return [eks.describe_nodegroup(clusterName="trn", nodegroupName=n)["nodegroup"][
        "scalingConfig"]["desiredSize"] for n in names]


@moto.mock_aws
def test_scale_fills_the_node_groups_in_order(capsys, tmp_path, monkeypatch):
    """Three groups of 450, 450 and 100 (an UltraCluster stack's output lists them, in fill
    order, as cluster/name or name): 500 fills the first and puts 50 in the second; 20 then
    empties the second and lowers the first, and its minSize with it."""
    names = ["trainium-a", "trainium-b", "trainium-c"]
    eks = _cluster_of({"trainium-a": {"minSize": 100, "maxSize": 450, "desiredSize": 100},
                       "trainium-b": {"minSize": 0, "maxSize": 450, "desiredSize": 0},
                       "trainium-c": {"minSize": 0, "maxSize": 100, "desiredSize": 0}})
    monkeypatch.setattr(common, "stack_session", lambda args, outputs: StubSession(eks=eks))
    values = _eks_outputs(capacity_type="on-demand", rid="none")
    values.update({"NodeCountMax": "1000",
                   "EksTrainiumNodegroupName": "trn/trainium-a,trainium-b,trn/trainium-c"})
    path = write_outputs(tmp_path, values)
    code, out, err = run(capsys, "scale", "--outputs-file", str(path), "--nodes", "500")
    assert code == 0, err
    assert out.startswith("3 node groups (trainium-a: 450, trainium-b: 50, trainium-c: 0): "
                          "100 -> 500 nodes")
    assert _desired(eks, names) == [450, 50, 0]
    code, out, err = run(capsys, "scale", "--outputs-file", str(path), "--nodes", "20")
    assert code == 0, err
    assert "500 -> 20 nodes" in out and _desired(eks, names) == [20, 0, 0]
    first = eks.describe_nodegroup(clusterName="trn", nodegroupName="trainium-a")["nodegroup"]
    assert first["scalingConfig"]["minSize"] == 20


def test_scale_updates_only_the_groups_that_change():
    """A group already at its new size gets no update call (the Stubber fails on any call
    it was not given)."""
    from trn_ultracluster.cli.backends.eks_scale import scale_eks_nodes
    from trn_ultracluster.cli.stack_outputs import StackOutputs

    eks, stub = stubbed("eks")
    for name, desired in (("a", 450), ("b", 0)):
        stub.add_response("describe_nodegroup", {"nodegroup": {"scalingConfig": {
            "minSize": 0, "maxSize": 450, "desiredSize": desired}}},
            {"clusterName": "trn", "nodegroupName": name})
    stub.add_response("update_nodegroup_config", {}, {
        "clusterName": "trn", "nodegroupName": "b", "scalingConfig": {"desiredSize": 10}})
    values = _eks_outputs(capacity_type="on-demand", rid="none")
    values.update({"NodeCountMax": "900", "EksTrainiumNodegroupName": "a,b"})
    with stub:
        result = scale_eks_nodes(StubSession(eks=eks), StackOutputs("trn", values, "test"), 460)
    stub.assert_no_pending_responses()
    assert (result.nodegroups, result.before, result.after, result.sizes) == (
        ("a", "b"), 450, 460, (450, 10))


def test_scale_stays_within_the_node_groups():
    """A node group's maxSize changed outside the stack: the CLI says so instead of asking
    EKS for more than the groups hold."""
    from trn_ultracluster.cli.backends.eks_scale import scale_eks_nodes
    from trn_ultracluster.cli.errors import CliError
    from trn_ultracluster.cli.stack_outputs import StackOutputs

    eks, stub = stubbed("eks")
    stub.add_response("describe_nodegroup", {"nodegroup": {"scalingConfig": {
        "minSize": 0, "maxSize": 2, "desiredSize": 0}}},
        {"clusterName": "trn", "nodegroupName": "trainium"})
    values = _eks_outputs(capacity_type="on-demand", rid="none")
    with stub, pytest.raises(CliError, match=r"more than the node groups hold \(2") as err:
        scale_eks_nodes(StubSession(eks=eks), StackOutputs("trn", values, "test"), 3)
    assert err.value.exit_code == ExitCode.USAGE
