"""Network: subnets placed by AZ ID, sizes, NAT, S3 endpoint, flow logs, no lookups."""

from __future__ import annotations

from tests.conftest import profile_path


def _subnets(s, kind):
    return {k: r["Properties"] for k, r in s.resources("AWS::EC2::Subnet").items()
            if f"{kind}Subnet" in k}


def test_subnets_are_placed_by_az_id_not_name(default):
    for kind in ("Private", "Public"):
        subnets = _subnets(default, kind)
        assert len(subnets) == 2
        assert sorted(p["AvailabilityZoneId"] for p in subnets.values()) == ["usw2-az1", "usw2-az4"]
        assert all("AvailabilityZone" not in p for p in subnets.values())


def test_compute_subnet_is_the_private_subnet_of_the_first_az_id(default):
    ref = default.output("ComputeSubnetId")["Ref"]
    props = default.template["Resources"][ref]["Properties"]
    assert "PrivateSubnet" in ref and props["AvailabilityZoneId"] == "usw2-az4"
    assert default.output("ComputeAzId") == "usw2-az4"
    assert default.output("ComputeAzName") == {"Fn::GetAtt": [ref, "AvailabilityZone"]}


def test_private_subnets_are_sized_for_nodes_and_public_ones_are_small(default, synth):
    assert {p["CidrBlock"] for p in _subnets(default, "Private").values()} == {
        "10.0.0.0/20", "10.0.16.0/20"}
    assert {p["CidrBlock"] for p in _subnets(default, "Public").values()} == {
        "10.0.32.0/24", "10.0.33.0/24"}
    tight = synth(vpc_cidr="10.1.0.0/19", **{"nodes.max": "16", "nodes.desired": "16"})
    # a /19 cannot hold two /20s and two /24s, so the private subnets are the largest that
    # fit: /21
    assert {p["CidrBlock"] for p in _subnets(tight, "Private").values()} == {
        "10.1.0.0/21", "10.1.8.0/21"}


def test_public_subnets_do_not_give_public_ips(default):
    for props in _subnets(default, "Public").values():
        assert props["MapPublicIpOnLaunch"] is False


def test_one_nat_gateway_by_default_and_one_per_az_when_asked(default, synth):
    assert len(default.resources("AWS::EC2::NatGateway")) == 1
    assert len(synth(profile_path("ultracluster-16")).resources("AWS::EC2::NatGateway")) == 2


def test_s3_gateway_endpoint_and_flow_logs(default):
    endpoint = default.only("AWS::EC2::VPCEndpoint")
    assert endpoint["VpcEndpointType"] == "Gateway"
    assert "s3" in str(endpoint["ServiceName"])
    flow = default.only("AWS::EC2::FlowLog")
    assert flow["TrafficType"] == "ALL" and flow["LogDestinationType"] == "cloud-watch-logs"


def test_synth_needs_no_account_and_no_context_lookup(default):
    assert default.stack.region == "us-west-2"
    assert default.stack.resolve(default.stack.account) == {"Ref": "AWS::AccountId"}
    manifest = (default.outdir / "manifest.json").read_text()
    assert '"missing"' not in manifest
    assert "aws://unknown-account/us-west-2" in manifest


def test_a_large_cluster_gets_compute_subnets_in_the_compute_az_and_secondary_blocks(synth):
    big = synth(orchestrator="hyperpod-eks", **{"nodes.max": "2000"})
    plan = big.config.address_plan
    blocks = big.resources("AWS::EC2::VPCCidrBlock")
    assert [b["Properties"]["CidrBlock"] for b in blocks.values()] == ["10.1.0.0/16"]
    compute = {p["Properties"]["CidrBlock"]: (k, p["Properties"]) for k, p in
               big.resources("AWS::EC2::Subnet").items() if "Compute" in k}
    assert sorted(compute) == sorted(s.cidr for s in plan.compute_subnets[1:])
    associations = big.resources("AWS::EC2::SubnetRouteTableAssociation")
    for cidr, (logical, props) in compute.items():
        assert props["AvailabilityZoneId"] == "usw2-az4"  # the compute AZ, by ID
        assert props["MapPublicIpOnLaunch"] is False
        (assoc,) = [a["Properties"] for a in associations.values()
                    if a["Properties"]["SubnetId"] == {"Ref": logical}]
        (subnet0,) = [a["Properties"] for a in associations.values()
                      if a["Properties"]["SubnetId"] == big.output("ComputeSubnetId")]
        assert assoc["RouteTableId"] == subnet0["RouteTableId"]  # its NAT route
        in_block = [k for k, b in blocks.items() if b["Properties"]["CidrBlock"] == cidr]
        # a subnet in a secondary block waits for the block (and is deleted before it)
        assert in_block == [] or in_block[0] in _depends_on(big, logical)
    ids = big.output("ComputeSubnetIds")["Fn::Join"][1]
    assert len(ids) == len(plan.compute_subnets)


def _depends_on(s, logical):
    depends = s.template["Resources"][logical].get("DependsOn", [])
    return [depends] if isinstance(depends, str) else depends
