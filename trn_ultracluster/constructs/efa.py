"""Efa: the EFA security group, the cluster placement group and the EFA launch template."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Literal

from aws_cdk import CfnTag, Fn
from aws_cdk import aws_ec2 as ec2
from constructs import Construct

from trn_ultracluster.contracts.catalog import InstanceSpec
from trn_ultracluster.contracts.shared_storage import FSX_STACK_TAG

__all__ = ["LAUNCH_TAG", "UNTAGGED_RESOURCE_TYPES", "Efa", "EfaProps", "PoolLaunch", "boot_from",
           "efa_network_interfaces"]

ROOT_DEVICE_NAME = "/dev/xvda"
"""Root device of the Amazon Linux 2023 EKS AMIs. Not verified against a primary source
(awslabs/amazon-eks-ami build files were not found in the search index); it is the device
that public EKS launch templates resize (e.g. terraform-aws-eks ``block_device_mappings``).
A wrong name adds a second volume instead of resizing the root one."""
IMDS_HOP_LIMIT = 1
"""IMDSv2 response hop limit 1: the node itself and host-network pods (VPC CNI, FSx CSI
node plugin) reach the instance metadata service, containers on the pod network do not,
so a training container cannot take the node role's credentials. EKS best practices,
security, "Restrict access to the instance profile assigned to the worker node": require
IMDSv2 with hop limit 1 and give pods their own identity (we use EKS Pod Identity for the
add-ons); a limit of 2 is only needed "if any containers ... use IMDSv2" (EKS user guide,
https://docs.aws.amazon.com/eks/latest/userguide/launch-templates.html). None of the
stack's pods needs the metadata service: the Neuron chart's node recovery, which would, is
off by default (aws-neuron/neuron-helm-charts ``values.yaml``,
``npd.nodeRecovery.enabled: false``).

Container Insights still reads the metadata service (instance id and type for the
``InstanceId`` dimension of the Neuron and EFA metrics; the hop-limit trouble of
aws/amazon-cloudwatch-agent #249 and amazon-cloudwatch-agent-operator #119): the
``amazon-cloudwatch-observability`` chart runs the CloudWatch agent and Fluent Bit on the
host network, where one hop reaches it (aws-observability/helm-charts,
``charts/amazon-cloudwatch-observability/templates/linux/cloudwatch-agent-custom-resource.yaml``:
``hostNetwork`` in the ``AmazonCloudWatchAgent`` spec, added by helm-charts PR #82 "so the
agent pod can hit IMDS for clusters with a restricted hop limit", a value
``agent.hostNetwork`` defaulting to ``true`` since chart 6.2.0, which the stack leaves as it
is; ``fluent-bit-daemonset.yaml``: ``hostNetwork: true``). Its credentials come from EKS Pod
Identity, not from IMDS. So limit 1 keeps the dashboard's Neuron and EFA metrics; a limit of
2 would hand the node role to every training container for nothing. On HyperPod on EKS the
nodes are HyperPod's and this launch template is not used."""


LAUNCH_TAG = FSX_STACK_TAG
"""The one tag the stack puts in the launch template (``TagSpecifications`` of instances,
volumes and interfaces), with the stack's id (``AWS::StackId``) as value: the same key and
value as the file system's, fixed for the stack's life, so it never makes a new launch
template version, and activated as a cost allocation tag it sums the nodes, their volumes
and the file system of one stack. The configuration's ``tags`` do not go there (see
:class:`Efa`)."""
UNTAGGED_RESOURCE_TYPES = ("AWS::EC2::PlacementGroup",)
"""Resource types the stack's ``tags`` leave out (``Tags.of(stack).add(...,
exclude_resource_types=...)``). ``Tags`` is create-only on ``AWS::EC2::PlacementGroup``
(``createOnlyProperties`` of its CloudFormation resource schema, as cfn-lint ships it;
``tagging.tagUpdatable: false``): a tag change would replace the placement group and, with
it, the launch template that names it. A placement group costs nothing ("There is no charge
for creating a placement group", EC2 user guide, "Placement groups", as quoted by public
copies of the page; not read on the page itself), so no cost allocation is lost; what is
lost is finding it by tag (its name is the stack output ``PlacementGroupName``)."""

EfaLayout = Literal["efa", "efa-only"]


def efa_network_interfaces(
    spec: InstanceSpec,
    security_group_id: str,
    layout: EfaLayout = "efa",
) -> list[ec2.CfnLaunchTemplate.NetworkInterfaceProperty]:
    """Network interfaces for a launch template: one EFA interface on every network card.

    Two layouts:

    - ``efa`` (default): card 0 holds the primary interface at device index 0, type
      ``efa``; every other card holds one ``efa`` interface at device index 1. This is the
      layout of the aws-neuron-eks-samples and eksctl launch templates for Trn1, and every
      interface takes a VPC address.
    - ``efa-only``: the layout the EC2 user guide recommends today ("Maximize network
      bandwidth on accelerated instance types",
      https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa-acc-inst-types.html):
      an ENA primary interface at card 0 / device 0, an ``efa-only`` interface at card 0 /
      device 1, and an ``efa-only`` interface at device 0 of every other card. EFA-only
      interfaces take no IP address.

    Every interface is in ``security_group_id``, has no subnet (EKS managed node groups
    reject one in the launch template) and no public IP (instances with several
    interfaces get no auto-assigned public address). An instance type without EFA
    (trn1.2xlarge, single-node only) gets one ordinary interface.

    Returns:
        The interfaces, card order; exactly ``spec.efa_interfaces`` of them are EFA.
    """
    NI = ec2.CfnLaunchTemplate.NetworkInterfaceProperty

    def interface(card: int, device: int, kind: str | None) -> NI:
        primary = card == 0 and device == 0
        return NI(
            network_card_index=card,
            device_index=device,
            interface_type=kind,
            groups=[security_group_id],
            delete_on_termination=True,
            associate_public_ip_address=False if primary else None,
        )

    if not spec.supports_efa:
        return [interface(0, 0, None)]
    if layout == "efa":
        return [interface(card, 0 if card == 0 else 1, "efa") for card in range(spec.network_cards)]
    return [interface(0, 0, None), interface(0, 1, "efa-only")] + [
        interface(card, 0, "efa-only") for card in range(1, spec.network_cards)
    ]


@dataclass(frozen=True)
class PoolLaunch:
    """What one node pool launches from (:meth:`Efa.add_pool`).

    Attributes:
        placement_group: the cluster placement group created for it, or ``None`` (none, a
            Capacity Block, a CPU pool, or an existing group named in
            ``placement_group_name``).
        placement_group_name: the group its launch template names (a token for a created
            one), or ``None``.
        launch_template: its launch template (one interface per network card, EFA on a
            Trainium type with EFA, one ordinary interface otherwise).
    """

    placement_group: ec2.CfnPlacementGroup | None
    placement_group_name: str | None
    launch_template: ec2.CfnLaunchTemplate

    @property
    def launch_template_id(self) -> str:
        """Launch template id (token)."""
        return self.launch_template.ref

    @property
    def launch_template_version(self) -> str:
        """Latest version number of the launch template (token)."""
        return self.launch_template.attr_latest_version_number


@dataclass(frozen=True)
class EfaProps:
    """Props of :class:`Efa`.

    Attributes:
        vpc: the VPC of the compute nodes.
        instance: catalog entry of the Trainium instance type.
        root_volume_gib: encrypted gp3 root volume per node, GiB.
        placement_group: launch the nodes into a cluster placement group (created here
            unless ``placement_group_name`` is given). Must be False with a Capacity Block.
        placement_group_name: name of an existing cluster placement group, the one an
            On-Demand Capacity Reservation was created in: the launch template names it
            and no group is created (so the stack never deletes it). Default: None, a
            cluster placement group is created when ``placement_group`` is True.
        capacity_type: ``on-demand``, ``capacity-reservation`` or ``capacity-block``.
        capacity_reservation_id: the ``cr-`` id for the two reserved types.
        efa_layout: ``efa`` or ``efa-only``; see :func:`efa_network_interfaces`.
        launch_tags: tags on the instances, volumes and interfaces launched from the
            template (``TagSpecifications``). They are part of the template's data, so
            changing one makes a new launch template version, which an EKS managed node group
            rolls every node to: give only tags that never change for a deployed stack
            (:data:`LAUNCH_TAG`), never the configuration's ``tags`` (see :class:`Efa`).
    """

    vpc: ec2.IVpc
    instance: InstanceSpec
    root_volume_gib: int = 512
    placement_group: bool = True
    placement_group_name: str | None = None
    capacity_type: Literal["on-demand", "capacity-reservation", "capacity-block"] = "on-demand"
    capacity_reservation_id: str | None = None
    efa_layout: EfaLayout = "efa"
    launch_tags: dict[str, str] = field(default_factory=dict)


class Efa(Construct):
    """EFA networking for Trainium nodes.

    - ``security_group``: all traffic from itself and to itself (the EFA requirement:
      "allows all inbound and outbound traffic to and from the security group itself", EC2
      user guide, EFA "Prepare an EFA-enabled security group",
      https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa-start.html; the outbound rule
      to itself is needed besides all outbound IPv4, which EFA's SRD traffic does not
      match), all outbound IPv4; nothing inbound from outside.
    - ``placement_group``: a ``cluster`` placement group (None when disabled, with a
      Capacity Block, or when ``props.placement_group_name`` names an existing group: a
      reservation holds capacity in a cluster placement group only if it was created in
      it, EC2 user guide, "Capacity Reservations in cluster placement groups",
      https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/cr-cpg.html).
    - ``launch_template``: one EFA interface per network card, IMDSv2 required with hop
      limit 1, encrypted gp3 root volume, placement group, capacity options, the stack-id
      tag. It has
      no IamInstanceProfile and no subnet, so EKS managed node groups can use it (EKS user
      guide, "Customize managed nodes with launch templates").

    An instance type without EFA gets one ordinary interface (the config allows it for a
    single node only, and ``ClusterConfig.uses_placement_group`` turns the placement
    group off for it).

    Tags: ``props.launch_tags`` (the stack gives :data:`LAUNCH_TAG` only) go on the instances,
    volumes and interfaces launched from the template. The configuration's ``tags`` stay out
    of the template: a tag change would make a new launch template version, and an EKS
    managed node group with ``LatestVersionNumber`` replaces every node for it (EKS user
    guide, "Understand each phase of node updates"). The stack tags the construct's own
    resources, except the placement group (:data:`UNTAGGED_RESOURCE_TYPES`). What reaches
    the nodes instead: docs/configuration-guide.md "Tags".
    """

    def __init__(self, scope: Construct, construct_id: str, props: EfaProps) -> None:
        super().__init__(scope, construct_id)
        self.props = props
        self.security_group = ec2.SecurityGroup(
            self,
            "SecurityGroup",
            vpc=props.vpc,
            description="EFA: all traffic to and from members of this group",
            allow_all_outbound=True,
        )
        # EFA needs an inbound AND an outbound rule for all traffic referencing the group
        # itself (EC2 user guide, EFA, "Prepare an EFA-enabled security group",
        # https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa-start.html#efa-start-security).
        # The all-outbound IPv4 rule does not cover it: EFA's SRD traffic is neither IPv4 nor
        # IPv6 and only security-group-referencing rules match it; without the egress rule,
        # collectives fail with "Unresponsive receiver (reachable by EFA device but
        # handshake failed)" (awslabs/awsome-distributed-ai #546; gardener/
        # gardener-extension-provider-aws #1832, fixed by #1833).
        self.security_group.add_ingress_rule(
            self.security_group, ec2.Port.all_traffic(), "EFA: all traffic between members")
        # The egress half as an L1 rule: while allow_all_outbound is true, CDK drops every
        # egress rule added with add_egress_rule (aws/aws-cdk #5458, #38558), and with it
        # false CDK refuses an all-traffic IPv4 rule (CannotAddTrafficEgressRule), which the
        # nodes need for ECR, S3, SSM and the EKS API.
        self.self_egress = ec2.CfnSecurityGroupEgress(
            self, "SecurityGroupEgressToSelf",
            group_id=self.security_group.security_group_id,
            ip_protocol="-1",
            destination_security_group_id=self.security_group.security_group_id,
            description="EFA: all traffic between members (SRD is matched only by this rule)",
        )

        self.pools: dict[str, PoolLaunch] = {}
        main = self.add_pool("", props)
        self.placement_group = main.placement_group
        self.launch_template = main.launch_template

    def add_pool(self, suffix: str, props: EfaProps) -> PoolLaunch:
        """The placement group and launch template of one node pool: ``props``' instance
        type, root volume, placement group, capacity and EFA layout (its ``vpc`` and
        ``launch_tags`` are the construct's own), in the construct's security group. The
        main pool's (``suffix`` ``""``, made by the constructor) keep the ids
        ``PlacementGroup`` and ``LaunchTemplate``; another pool's carry its
        :func:`~trn_ultracluster.config.model.pools.id_suffix`.

        Raises:
            ValueError: ``props.placement_group_name`` without ``props.placement_group``, or
                ``suffix`` already used.
        """
        if suffix in self.pools:
            raise ValueError(f"Efa.add_pool: a pool with id suffix {suffix!r} exists")
        props = replace(props, vpc=self.props.vpc, launch_tags=dict(self.props.launch_tags))
        launch = self._launch(suffix, props)
        self.pools[suffix] = launch
        return launch

    def _launch(self, suffix: str, props: EfaProps) -> PoolLaunch:
        if props.placement_group_name is not None and not props.placement_group:
            raise ValueError("EfaProps.placement_group_name needs placement_group=True, got "
                             f"placement_group=False with {props.placement_group_name!r}")
        placement_group: ec2.CfnPlacementGroup | None = None
        if props.placement_group and props.placement_group_name is None:
            placement_group = ec2.CfnPlacementGroup(self, f"PlacementGroup{suffix}",
                                                    strategy="cluster")
        placement_group_name = (placement_group.ref if placement_group is not None
                                else props.placement_group_name if props.placement_group
                                else None)

        LT = ec2.CfnLaunchTemplate
        capacity_target = None
        market_options = None
        if props.capacity_type != "on-demand":
            # Source: EC2 user guide, "Launch instances into a Capacity Block"
            # (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/capacity-blocks-launch.html):
            # MarketType capacity-block plus the reservation as target; an On-Demand Capacity
            # Reservation takes the target alone (.../capacity-reservations-launch.html).
            capacity_target = LT.CapacityReservationSpecificationProperty(
                capacity_reservation_target=LT.CapacityReservationTargetProperty(
                    capacity_reservation_id=props.capacity_reservation_id
                )
            )
            if props.capacity_type == "capacity-block":
                market_options = LT.InstanceMarketOptionsProperty(market_type="capacity-block")
        tag_specifications = [
            LT.TagSpecificationProperty(
                resource_type=resource_type,
                tags=[CfnTag(key=k, value=v) for k, v in sorted(props.launch_tags.items())],
            )
            for resource_type in ("instance", "volume", "network-interface")
        ]
        launch_template = LT(
            self,
            f"LaunchTemplate{suffix}",
            launch_template_data=LT.LaunchTemplateDataProperty(
                instance_type=props.instance.name,
                network_interfaces=efa_network_interfaces(
                    props.instance,
                    self.security_group.security_group_id,
                    props.efa_layout,
                ),
                metadata_options=LT.MetadataOptionsProperty(
                    http_endpoint="enabled",
                    http_tokens="required",
                    http_put_response_hop_limit=IMDS_HOP_LIMIT,
                ),
                block_device_mappings=[
                    LT.BlockDeviceMappingProperty(
                        device_name=ROOT_DEVICE_NAME,
                        ebs=LT.EbsProperty(
                            volume_size=props.root_volume_gib,
                            volume_type="gp3",
                            encrypted=True,
                            delete_on_termination=True,
                        ),
                    )
                ],
                placement=LT.PlacementProperty(group_name=placement_group_name)
                if placement_group_name is not None
                else None,
                capacity_reservation_specification=capacity_target,
                instance_market_options=market_options,
                tag_specifications=tag_specifications if props.launch_tags else None,
            ),
        )
        return PoolLaunch(placement_group, placement_group_name, launch_template)

    @property
    def launch_template_id(self) -> str:
        """The main pool's launch template id (token)."""
        return self.pools[""].launch_template_id

    @property
    def launch_template_version(self) -> str:
        """Latest version number of the main pool's launch template (token)."""
        return self.pools[""].launch_template_version

    @property
    def placement_group_name(self) -> str | None:
        """Name of the main pool's placement group: the created group's (token) or
        ``props.placement_group_name``; None without a placement group."""
        return self.pools[""].placement_group_name


def boot_from(launch_template: ec2.CfnLaunchTemplate, *, image_id: str,
              instance_profile_arn: str, user_data: str, root_device_name: str) -> None:
    """Make ``launch_template`` boot a node by itself: the AMI, its root device, the instance
    profile and the user data, for an orchestrator that launches instances straight from it
    (standalone's Auto Scaling group). The EKS orchestrator must not call it: a managed node group refuses a
    launch template with ``IamInstanceProfile`` and supplies its AMI itself (EKS user guide,
    "Customize managed nodes with launch templates").

    Args:
        image_id: AMI id (a token: CloudFormation resolves the SSM parameter at deploy time).
        instance_profile_arn: ARN of the nodes' instance profile.
        user_data: the user data script, plain text (encoded here: ``LaunchTemplateData``
            takes it base64-encoded, CloudFormation template reference,
            ``AWS::EC2::LaunchTemplate LaunchTemplateData``, ``UserData``).
        root_device_name: the AMI's root device (e.g. ``/dev/sda1``): the template's one block
            device mapping, the encrypted gp3 root volume, is moved to it so that it resizes
            the AMI's root volume (:data:`ROOT_DEVICE_NAME` is the EKS AMIs').
    """
    launch_template.add_property_override(
        "LaunchTemplateData.BlockDeviceMappings.0.DeviceName", root_device_name)
    launch_template.add_property_override("LaunchTemplateData.ImageId", image_id)
    launch_template.add_property_override("LaunchTemplateData.IamInstanceProfile.Arn",
                                          instance_profile_arn)
    launch_template.add_property_override("LaunchTemplateData.UserData", Fn.base64(user_data))
