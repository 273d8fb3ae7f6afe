"""Network: a VPC whose subnets are placed by AZ ID, with NAT, an S3 endpoint and flow logs,
and the compute subnets of the address plan (:mod:`trn_ultracluster.network_plan`)."""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import RemovalPolicy, Stack, Tags
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_logs as logs
from constructs import Construct, DependencyGroup

from trn_ultracluster.network_plan import PUBLIC_SUBNET_MASK, AddressPlan

__all__ = ["Network", "NetworkProps"]

FLOW_LOG_RETENTION = logs.RetentionDays.ONE_MONTH


@dataclass(frozen=True)
class NetworkProps:
    """Props of :class:`Network`.

    Attributes:
        az_ids: AZ IDs, first = compute AZ. One public and one private subnet per AZ ID.
        plan: the address plan (the VPC block, the private subnets' size, the compute
            subnets and the secondary blocks that hold them).
        nat_gateways: 1 (in the compute AZ) or one per AZ.
    """

    az_ids: tuple[str, ...]
    plan: AddressPlan
    nat_gateways: int = 1


class Network(Construct):
    """VPC with one public and one private subnet in each configured AZ ID.

    Subnets are placed with ``AvailabilityZoneId`` rather than an AZ name: AZ names map to
    different physical zones in each account, AZ IDs do not, and the Trainium offerings
    are published per AZ ID. The stack's account stays unresolved, so this needs no
    context lookup at synth.

    Default: one NAT gateway (in the compute AZ), an S3 gateway endpoint, and VPC flow logs
    of all traffic to a CloudWatch log group kept one month.

    The compute subnets after the first (``AWS::EC2::Subnet`` in the compute AZ ID) come from
    the rest of the primary block and from secondary blocks (``AWS::EC2::VPCCidrBlock``, one
    subnet each), as the plan says; each is associated with the compute subnet's route table
    (its NAT route). A subnet in a secondary block depends on the block's association: "The
    CIDR ... is invalid" otherwise (``InvalidSubnet.Range``, hashicorp/terraform-provider-aws
    #9592), and on delete CloudFormation removes the subnet before the block, which the VPC
    requires ("You must remove an entire CIDR block", VPC user guide). Their construct ids
    come from their blocks, so a larger cluster adds subnets without renaming any.

    Attributes:
        vpc: the VPC.
        compute_subnet: the private subnet of the first AZ ID (Trainium nodes, FSx).
        compute_subnets: the compute subnets of the plan, ``compute_subnet`` first.
        compute_routes: what a node in any compute subnet needs before it boots: the NAT
            route of ``compute_subnet`` and the route table associations of the others.
        cidr_blocks: the secondary blocks' associations (``AWS::EC2::VPCCidrBlock``), in plan
            order; empty when the plan needs none. The EKS control plane waits for them
            (:func:`trn_ultracluster.network_plan.new_block_warning` says why).
        private_subnets: private subnets, in ``az_ids`` order.
        public_subnets: public subnets, in ``az_ids`` order.
    """

    def __init__(self, scope: Construct, construct_id: str, props: NetworkProps) -> None:
        super().__init__(scope, construct_id)
        self.props = props
        self.vpc = ec2.Vpc(
            self,
            "Vpc",
            ip_addresses=ec2.IpAddresses.cidr(props.plan.vpc_cidr),
            # One subnet per AZ ID; the placeholder AZ names CDK would use are replaced by
            # AvailabilityZoneId below.
            availability_zones=[f"placeholder-{az_id}" for az_id in props.az_ids],
            nat_gateways=props.nat_gateways,
            # Private subnets first: the larger blocks are allocated first, so no
            # address space is lost to alignment (see network_plan.fits).
            subnet_configuration=[
                ec2.SubnetConfiguration(
                    name="Private",
                    subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS,
                    cidr_mask=props.plan.private_mask,
                ),
                ec2.SubnetConfiguration(
                    name="Public",
                    subnet_type=ec2.SubnetType.PUBLIC,
                    cidr_mask=PUBLIC_SUBNET_MASK,
                    map_public_ip_on_launch=False,
                ),
            ],
            gateway_endpoints={
                "S3": ec2.GatewayVpcEndpointOptions(service=ec2.GatewayVpcEndpointAwsService.S3)
            },
            restrict_default_security_group=True,
        )
        self.private_subnets = list(self.vpc.private_subnets)
        self.public_subnets = list(self.vpc.public_subnets)
        for subnets in (self.private_subnets, self.public_subnets):
            for az_id, subnet in zip(props.az_ids, subnets, strict=True):
                cfn = subnet.node.default_child
                assert isinstance(cfn, ec2.CfnSubnet)
                cfn.add_property_deletion_override("AvailabilityZone")
                cfn.availability_zone_id = az_id
        self.compute_subnet = self.private_subnets[0]
        self.compute_routes = DependencyGroup(self.compute_subnet.internet_connectivity_established)
        self.compute_subnets: list[ec2.ISubnet] = [self.compute_subnet]
        self._more_compute_subnets(props)

        flow_log_group = logs.LogGroup(
            self, "FlowLogs", retention=FLOW_LOG_RETENTION, removal_policy=RemovalPolicy.DESTROY
        )
        self.vpc.add_flow_log(
            "FlowLog",
            destination=ec2.FlowLogDestination.to_cloud_watch_logs(flow_log_group),
            traffic_type=ec2.FlowLogTrafficType.ALL,
        )

    def _more_compute_subnets(self, props: NetworkProps) -> None:
        blocks = {}
        for block in props.plan.secondary_blocks:
            blocks[block] = ec2.CfnVPCCidrBlock(self, f"Block{_slug(block)}",
                                                vpc_id=self.vpc.vpc_id, cidr_block=block)
        self.cidr_blocks: list[ec2.CfnVPCCidrBlock] = list(blocks.values())
        route_table_id = self.compute_subnet.route_table.route_table_id
        for planned in props.plan.compute_subnets[1:]:
            name = f"Compute{_slug(planned.cidr)}"
            subnet = ec2.CfnSubnet(self, name, vpc_id=self.vpc.vpc_id, cidr_block=planned.cidr,
                                   availability_zone_id=props.az_ids[0],
                                   map_public_ip_on_launch=False)
            Tags.of(subnet).add("Name", f"{Stack.of(self).stack_name}/compute-{planned.cidr}")
            if planned.block in blocks:
                subnet.add_dependency(blocks[planned.block])
            association = ec2.CfnSubnetRouteTableAssociation(
                self, f"{name}Routes", subnet_id=subnet.ref, route_table_id=route_table_id)
            self.compute_routes.add(association)
            self.compute_subnets.append(ec2.Subnet.from_subnet_attributes(
                self, f"{name}Ref", subnet_id=subnet.ref, route_table_id=route_table_id,
                availability_zone=self.compute_subnet.availability_zone))

    @property
    def compute_subnet_az_name(self) -> str:
        """The compute subnet's AZ name as a deploy-time token (``Fn::GetAtt``)."""
        cfn = self.compute_subnet.node.default_child
        assert isinstance(cfn, ec2.CfnSubnet)
        return cfn.attr_availability_zone


def _slug(cidr: str) -> str:
    """A construct id part of a block: ``10.0.128.0/17`` -> ``10-0-128-0-17``."""
    return cidr.replace(".", "-").replace("/", "-")
