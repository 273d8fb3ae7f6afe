"""Efa: interfaces per network card for every instance type, placement group, launch
template settings (IMDSv2, root volume, capacity), security group."""

from __future__ import annotations

import json

import aws_cdk as cdk
import pytest
from aws_cdk import assertions
from aws_cdk import aws_ec2 as ec2

from tests.conftest import profile_path
from trn_ultracluster.contracts.catalog import CATALOG
from trn_ultracluster.constructs.efa import Efa, EfaProps

EFA_TYPES = sorted(name for name, spec in CATALOG.items() if spec.supports_efa)


def _template(instance_type: str, **props) -> dict:
    """Template of an Efa construct alone in a small stack."""
    stack = cdk.Stack(cdk.App(), "T", env=cdk.Environment(region="us-west-2"))
    vpc = ec2.Vpc(stack, "Vpc", max_azs=1, nat_gateways=0)
    Efa(stack, "Efa", EfaProps(vpc=vpc, instance=CATALOG[instance_type], **props))
    return assertions.Template.from_stack(stack).to_json()


def _launch_template(instance_type: str, **props) -> dict:
    """Launch template data of an Efa construct alone in a small stack."""
    resources = _template(instance_type, **props)["Resources"].values()
    lts = [r for r in resources if r["Type"] == "AWS::EC2::LaunchTemplate"]
    return lts[0]["Properties"]["LaunchTemplateData"]


@pytest.mark.parametrize("instance_type", EFA_TYPES)
def test_efa_layout_one_efa_interface_per_network_card(instance_type):
    spec = CATALOG[instance_type]
    interfaces = _launch_template(instance_type)["NetworkInterfaces"]
    assert len(interfaces) == spec.network_cards == spec.efa_interfaces
    assert [i["NetworkCardIndex"] for i in interfaces] == list(range(spec.network_cards))
    assert [i["DeviceIndex"] for i in interfaces] == [0] + [1] * (spec.network_cards - 1)
    assert {i["InterfaceType"] for i in interfaces} == {"efa"}


@pytest.mark.parametrize("instance_type", EFA_TYPES)
def test_efa_only_layout_ena_primary_and_efa_only_on_every_card(instance_type):
    spec = CATALOG[instance_type]
    interfaces = _launch_template(instance_type, efa_layout="efa-only")["NetworkInterfaces"]
    primary, *efa = interfaces
    assert (primary["NetworkCardIndex"], primary["DeviceIndex"]) == (0, 0)
    assert "InterfaceType" not in primary  # ENA
    assert len(efa) == spec.efa_interfaces
    assert {i["InterfaceType"] for i in efa} == {"efa-only"}
    assert [(i["NetworkCardIndex"], i["DeviceIndex"]) for i in efa] == [(0, 1)] + [
        (card, 0) for card in range(1, spec.network_cards)]


def test_instance_without_efa_gets_one_plain_interface():
    (interface,) = _launch_template("trn1.2xlarge", placement_group=False)["NetworkInterfaces"]
    assert "InterfaceType" not in interface and interface["DeviceIndex"] == 0


def test_no_public_ip_no_subnet_no_instance_profile(default):
    data = default.logical("EfaLaunchTemplate")["Properties"]["LaunchTemplateData"]
    assert "IamInstanceProfile" not in data
    for interface in data["NetworkInterfaces"]:
        assert "SubnetId" not in interface
        assert interface.get("AssociatePublicIpAddress", False) is False
        assert interface["Groups"] == [{"Fn::GetAtt": [default.ref_id("EfaSecurityGroup"), "GroupId"]}]
    assert data["NetworkInterfaces"][0]["AssociatePublicIpAddress"] is False


def test_imdsv2_required_with_hop_limit_1_and_encrypted_gp3_root(default, synth):
    data = default.logical("EfaLaunchTemplate")["Properties"]["LaunchTemplateData"]
    # hop limit 1: containers on the pod network cannot take the node role's credentials;
    # Container Insights' agent and Fluent Bit run on the host network and still reach IMDS
    # (efa.IMDS_HOP_LIMIT cites the chart), so the dashboard's Neuron/EFA metrics arrive
    assert data["MetadataOptions"] == {
        "HttpEndpoint": "enabled", "HttpTokens": "required", "HttpPutResponseHopLimit": 1}
    (root,) = data["BlockDeviceMappings"]
    assert root["DeviceName"] == "/dev/xvda"
    assert root["Ebs"] == {"VolumeSize": 512, "VolumeType": "gp3", "Encrypted": True,
                           "DeleteOnTermination": True}
    # root_volume_gib sizes it (profiles/trn1-2xl.yaml: 256; the HyperPod profiles no longer
    # set it, HyperPod's nodes do not use this template)
    small = synth(profile_path("trn1-2xl"))
    small_data = small.logical("EfaLaunchTemplate")["Properties"]["LaunchTemplateData"]
    assert small.config.root_volume_gib == 256
    assert small_data["BlockDeviceMappings"][0]["Ebs"]["VolumeSize"] == 256


def test_cluster_placement_group_is_named_in_the_launch_template(default):
    pg = default.logical("EfaPlacementGroup")
    assert pg["Properties"]["Strategy"] == "cluster"
    data = default.logical("EfaLaunchTemplate")["Properties"]["LaunchTemplateData"]
    assert data["Placement"] == {"GroupName": {"Ref": default.ref_id("EfaPlacementGroup")}}
    assert default.output("PlacementGroupName") == {"Ref": default.ref_id("EfaPlacementGroup")}
    assert "InstanceMarketOptions" not in data and "CapacityReservationSpecification" not in data


def test_capacity_block_has_market_type_and_target_and_no_placement_group(synth):
    s = synth(profile_path("trn2"))
    assert s.resources("AWS::EC2::PlacementGroup") == {}
    data = s.logical("EfaLaunchTemplate")["Properties"]["LaunchTemplateData"]
    assert data["InstanceMarketOptions"] == {"MarketType": "capacity-block"}
    assert data["CapacityReservationSpecification"] == {
        "CapacityReservationTarget": {"CapacityReservationId": "cr-0123456789abcdef0"}}
    assert "Placement" not in data
    assert data["InstanceType"] == "trn2.48xlarge"
    assert s.output("PlacementGroupName") == "none"


def test_capacity_reservation_targets_it_without_market_type():
    data = _launch_template("trn1.32xlarge", capacity_type="capacity-reservation",
                            capacity_reservation_id="cr-0123456789abcdef0")
    assert data["CapacityReservationSpecification"]["CapacityReservationTarget"] == {
        "CapacityReservationId": "cr-0123456789abcdef0"}
    assert "InstanceMarketOptions" not in data


RESERVATION = {"capacity_type": "capacity-reservation",
               "capacity_reservation_id": "cr-0123456789abcdef0"}


def test_reservation_in_an_existing_group_names_it_and_creates_none():
    template = _template("trn1.32xlarge", placement_group_name="my-odcr-pg", **RESERVATION)
    types = {r["Type"] for r in template["Resources"].values()}
    assert "AWS::EC2::PlacementGroup" not in types
    (lt,) = [r for r in template["Resources"].values() if r["Type"] == "AWS::EC2::LaunchTemplate"]
    data = lt["Properties"]["LaunchTemplateData"]
    assert data["Placement"] == {"GroupName": "my-odcr-pg"}
    assert data["CapacityReservationSpecification"]["CapacityReservationTarget"] == {
        "CapacityReservationId": "cr-0123456789abcdef0"}


def test_existing_group_without_a_placement_group_is_refused():
    with pytest.raises(ValueError, match="placement_group_name needs placement_group=True"):
        _template("trn1.32xlarge", placement_group=False, placement_group_name="my-odcr-pg",
                  **RESERVATION)


def test_stack_with_an_existing_group_outputs_it_and_owns_no_group(synth):
    """The stack names the reservation's group and owns no placement group, so a destroy
    cannot delete it: the name appears only in the launch template and the output."""
    s = synth(profile_path("single-node"), **{
        "capacity.type": "capacity-reservation", "capacity.reservation_id": "cr-0123456789abcdef0",
        "capacity.placement_group_name": "my-odcr-pg"})
    assert s.resources("AWS::EC2::PlacementGroup") == {}
    assert s.output("PlacementGroupName") == "my-odcr-pg"
    naming = sorted(k for k, r in s.template["Resources"].items() if "my-odcr-pg" in json.dumps(r))
    assert naming == [s.ref_id("EfaLaunchTemplate")]
    data = s.logical("EfaLaunchTemplate")["Properties"]["LaunchTemplateData"]
    assert data["Placement"] == {"GroupName": "my-odcr-pg"}


def test_security_group_all_traffic_within_itself_nothing_from_outside(default):
    sg_id = default.ref_id("EfaSecurityGroup")
    group = {"Fn::GetAtt": [sg_id, "GroupId"]}
    self_rules = [r["Properties"] for r in default.resources("AWS::EC2::SecurityGroupIngress").values()
                  if r["Properties"]["GroupId"] == group
                  and r["Properties"].get("SourceSecurityGroupId") == group]
    assert self_rules == [{"Description": "EFA: all traffic between members", "IpProtocol": "-1",
                           "GroupId": group, "SourceSecurityGroupId": group}]
    # All IPv4 outbound inline, and the rule to itself as a resource of its own (EFA's SRD
    # traffic is matched only by it: tests/stacks/test_efa_security.py).
    egress = default.logical("EfaSecurityGroup")["Properties"]["SecurityGroupEgress"]
    assert egress == [{"CidrIp": "0.0.0.0/0", "Description": "Allow all outbound traffic by default",
                       "IpProtocol": "-1"}]
    (to_self,) = default.resources("AWS::EC2::SecurityGroupEgress").values()
    assert to_self["Properties"]["GroupId"] == to_self["Properties"]["DestinationSecurityGroupId"] == group


def test_no_security_group_admits_the_internet(default):
    for resource in default.template["Resources"].values():
        rules = []
        if resource["Type"] == "AWS::EC2::SecurityGroup":
            rules = resource["Properties"].get("SecurityGroupIngress", [])
        elif resource["Type"] == "AWS::EC2::SecurityGroupIngress":
            rules = [resource["Properties"]]
        for rule in rules:
            assert rule.get("CidrIp") != "0.0.0.0/0" and rule.get("CidrIpv6") != "::/0"


def test_only_the_stack_id_tag_reaches_instances_volumes_and_interfaces(default):
    """The launch template tags what it launches with the stack's id only (fixed for the
    stack's life); the configuration's tags stay out of its data, where a change would make
    a new version that EKS node groups roll every node to."""
    data = default.logical("EfaLaunchTemplate")["Properties"]["LaunchTemplateData"]
    assert {t["ResourceType"] for t in data["TagSpecifications"]} == {
        "instance", "volume", "network-interface"}
    for spec in data["TagSpecifications"]:
        assert spec["Tags"] == [{"Key": "trn-ultracluster:stack-id",
                                 "Value": {"Ref": "AWS::StackId"}}]
    assert default.config.tags  # cdk.json's project tag exists, and is not there
