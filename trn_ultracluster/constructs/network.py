"""Network: a VPC whose subnets are placed by AZ ID, with NAT, an S3 endpoint and flow logs."""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import RemovalPolicy
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_logs as logs
from constructs import Construct

from trn_ultracluster.network_plan import PUBLIC_SUBNET_MASK

__all__ = ["Network", "NetworkProps"]

FLOW_LOG_RETENTION = logs.RetentionDays.ONE_MONTH


@dataclass(frozen=True)
class NetworkProps:
    """Props of :class:`Network`.

    Attributes:
        az_ids: AZ IDs, first = compute AZ. One public and one private subnet per AZ ID.
        vpc_cidr: VPC IPv4 block, e.g. ``"10.0.0.0/16"``.
        private_subnet_mask: prefix length of each private subnet (sized by the config
            for the node count and pod IPs).
        nat_gateways: 1 (in the compute AZ) or one per AZ.
    """

    az_ids: tuple[str, ...]
    vpc_cidr: str
    private_subnet_mask: int
    nat_gateways: int = 1


class Network(Construct):
    """VPC with one public and one private subnet in each configured AZ ID.

    Subnets are placed with ``AvailabilityZoneId`` rather than an AZ name: AZ names map to
    different physical zones in each account, AZ IDs do not, and the Trainium offerings
    are published per AZ ID. The stack's account stays unresolved, so this needs no
    context lookup at synth.

    Default: one NAT gateway (in the compute AZ), an S3 gateway endpoint, and VPC flow logs
    of all traffic to a CloudWatch log group kept one month.

    Attributes:
        vpc: the VPC.
        compute_subnet: the private subnet of the first AZ ID (Trainium nodes, FSx).
        private_subnets: private subnets, in ``az_ids`` order.
        public_subnets: public subnets, in ``az_ids`` order.
    """

    def __init__(self, scope: Construct, construct_id: str, props: NetworkProps) -> None:
        super().__init__(scope, construct_id)
        self.props = props
        self.vpc = ec2.Vpc(
            self,
            "Vpc",
            ip_addresses=ec2.IpAddresses.cidr(props.vpc_cidr),
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
                    cidr_mask=props.private_subnet_mask,
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

        flow_log_group = logs.LogGroup(
            self, "FlowLogs", retention=FLOW_LOG_RETENTION, removal_policy=RemovalPolicy.DESTROY
        )
        self.vpc.add_flow_log(
            "FlowLog",
            destination=ec2.FlowLogDestination.to_cloud_watch_logs(flow_log_group),
            traffic_type=ec2.FlowLogTrafficType.ALL,
        )

    @property
    def compute_subnet_az_name(self) -> str:
        """The compute subnet's AZ name as a deploy-time token (``Fn::GetAtt``)."""
        cfn = self.compute_subnet.node.default_child
        assert isinstance(cfn, ec2.CfnSubnet)
        return cfn.attr_availability_zone
