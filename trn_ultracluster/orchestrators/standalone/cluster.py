"""Standalone orchestrator: one (or a few) Trainium instances without a scheduler.

What it creates:

- one Auto Scaling group (``AWS::AutoScaling::AutoScalingGroup``) per compute subnet the
  address plan fills (:func:`node_groups`), ``nodes`` min / desired / max instances in all,
  launched from the stack's EFA launch template (instance
  type, one EFA interface per network card in the nodes' security group, the cluster
  placement group, IMDSv2, the encrypted root volume, capacity options). ``nodes.desired: 0``
  (or ``trn-ultracluster scale --nodes 0``) leaves no instance running;
- on that launch template (:func:`trn_ultracluster.constructs.efa.boot_from`): the AMI
  (:func:`image_id`: ``standalone.ami_id``; or ``standalone.ami_ssm_parameter``, resolved by
  CloudFormation at each deploy; by default the AMI of the cluster's Neuron stack: on ``xla``
  the Neuron DLAMI of the training image's SDK release,
  :data:`trn_ultracluster.config.facts.XLA_STACK`, found at deploy time by
  :class:`.dlami.DlamiLookup`; on ``native`` the newest Neuron Base DLAMI by its public SSM
  parameter, :data:`trn_ultracluster.config.facts.NATIVE_STACK`), the nodes' instance
  profile and the user data (:mod:`.node`);
- the nodes' IAM role, instance profile, setup log group and script assets (:mod:`.node`);
- ``PutMetricData`` for the nodes' Neuron and EFA metrics (:mod:`trn_ultracluster.node_metrics`),
  which the stack's dashboard and alarms read (``metric_source``).

Access is Session Manager only: no key pair, and the nodes' security group admits nothing
from outside (the EFA group: all traffic from itself; Lustre from the file system's group).

Deploy order: the group waits for its role's policies, the route to the NAT gateway (the
user data calls S3, FSx, ECR and CloudWatch Logs) and, with ``runtime: container``, the
training image build; not for the file system, which the nodes find by its tag and wait for
(as HyperPod's do), so CloudFormation creates both in parallel.

A changed launch template (a new AMI, new scripts) reaches new instances only; the group has
no rolling update, so a deploy never replaces a node that runs a job. To move every node to
it, ``trn-ultracluster scale --nodes 0`` and back.
"""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import Aws, Fn, Stack, Tags
from aws_cdk import aws_autoscaling as autoscaling
from aws_cdk import aws_ssm as ssm
from constructs import Construct

from trn_ultracluster import network_plan
from trn_ultracluster.config import ClusterConfig, NodeCounts, StandaloneConfig
from trn_ultracluster.config.facts import NeuronStack
from trn_ultracluster.config.facts import STACK_RELEASES
from trn_ultracluster.constructs.efa import boot_from
from trn_ultracluster.contracts.neuron_stack import NeuronStackName
from trn_ultracluster.contracts.outputs import NONE, OutputKey
from trn_ultracluster.nag import acknowledge
from trn_ultracluster.node_metrics import node_metrics
from trn_ultracluster.orchestrators.base import Foundation, NodeShape
from trn_ultracluster.orchestrators.standalone.dlami import DlamiLookup
from trn_ultracluster.orchestrators.standalone.node import NodeBoot

__all__ = ["JOB_BACKEND", "NodeGroup", "StandaloneOrchestrator", "StandaloneProps", "node_groups"]

JOB_BACKEND = "standalone"
"""The job CLI backend of this orchestrator: torchrun on every node through SSM Run Command."""
NODE_NAME_TAG = "trn-ultracluster-node"
"""``Name`` tag of the instances (the EC2 console's name column)."""


@dataclass(frozen=True)
class StandaloneProps:
    """What the standalone orchestrator builds on.

    Attributes:
        foundation: the foundation's handles; its ``launch_template`` must be set.
        shape: the Trainium nodes (type, counts, capacity).
        settings: the ``standalone`` configuration section, resolved
            (``ClusterConfig.standalone_settings``: ``dlami_venv`` set).
        neuron_stack: the cluster's Neuron training stack (``ClusterConfig.neuron_stack``):
            the default AMI, the venv's imports.
    """

    foundation: Foundation
    shape: NodeShape
    settings: StandaloneConfig
    neuron_stack: NeuronStackName


class StandaloneOrchestrator(Construct):
    """An Auto Scaling group of Trainium nodes from the stack's EFA launch template.

    Attributes:
        boot: the nodes' role, instance profile, log group, assets and user data.
        metric_source: the nodes publish their Neuron and EFA metrics with the node metrics
            exporter of :mod:`trn_ultracluster.node_metrics` (``ClusterName`` = the stack's
            name), and the training program's tokens/s and MFU from the jobs' first-node logs
            (docs/standalone.md).
        metrics_policy: the nodes' ``cloudwatch:PutMetricData`` policy (each group waits
            for it).
        image_id: the AMI id (:func:`image_id`).
        groups: the ``AWS::AutoScaling::AutoScalingGroup`` of each :func:`node_groups`
            entry, in order.

    Raises:
        ValueError: the foundation gives no launch template resource.
    """

    job_backend = JOB_BACKEND

    @classmethod
    def from_config(cls, scope: Construct, construct_id: str, config: ClusterConfig,
                    foundation: Foundation) -> StandaloneOrchestrator:
        """The orchestrator of ``config`` (what :func:`trn_ultracluster.orchestrators.build`
        calls)."""
        return cls(scope, construct_id, StandaloneProps(
            foundation=foundation,
            shape=NodeShape.of(config),
            settings=config.standalone_settings, neuron_stack=config.neuron_stack))

    def __init__(self, scope: Construct, construct_id: str, props: StandaloneProps) -> None:
        super().__init__(scope, construct_id)
        self.props = props
        base, shape, settings = props.foundation, props.shape, props.settings
        if base.launch_template is None:
            raise ValueError("the standalone orchestrator boots its nodes from the foundation's "
                             "launch template, and the foundation gives none")
        metrics_cluster = Stack.of(self).stack_name
        self.boot = NodeBoot(self, "Node", foundation=base, instance=shape.instance,
                             settings=settings, stack=props.neuron_stack,
                             fsx_tag_value=Aws.STACK_ID, metrics_cluster=metrics_cluster)
        self.metric_source, self.metrics_policy = node_metrics(self, self.boot.role,
                                                               metrics_cluster)
        self.image_id = image_id(self, settings, STACK_RELEASES[props.neuron_stack])
        boot_from(base.launch_template, image_id=self.image_id,
                  instance_profile_arn=self.boot.instance_profile.instance_profile_arn,
                  user_data=self.boot.user_data,
                  root_device_name=settings.root_device_name)
        self.groups = [self._group(g) for g in node_groups(base.address_plan, shape.nodes)]

    def _group(self, planned: NodeGroup) -> autoscaling.CfnAutoScalingGroup:
        base, settings = self.props.foundation, self.props.settings
        group = autoscaling.CfnAutoScalingGroup(
            self,
            planned.construct_id,
            min_size=str(planned.min),
            max_size=str(planned.max),
            desired_capacity=str(planned.desired),
            launch_template=autoscaling.CfnAutoScalingGroup.LaunchTemplateSpecificationProperty(
                launch_template_id=base.launch_template_id,
                version=base.launch_template_version),
            vpc_zone_identifier=[base.compute_subnets[planned.subnet].subnet_id],
        )
        # The group passes its Name and the stack's tags (Tags.of(stack), propagate at launch
        # by default) on to the instances it launches. The launch template carries none of
        # the configuration's tags (constructs/efa.py): a tag change updates the group in
        # place ("Tags": "Update requires: No interruption", CloudFormation template
        # reference, AWS::AutoScaling::AutoScalingGroup) and reaches the instances launched
        # after it, not the running ones ("when you modify a tag, the updated version will be
        # applied to new instances launched by the Auto Scaling group after the change",
        # Auto Scaling Developer Guide, "Tagging Auto Scaling Groups and Amazon EC2
        # Instances"). Group tags never reach EBS volumes ("Tags are not propagated to Amazon
        # EBS volumes", EC2 Auto Scaling user guide, "Tag Auto Scaling groups and instances"):
        # the volumes carry the launch template's stack-id tag only.
        Tags.of(group).add("Name", NODE_NAME_TAG)
        # At boot the user data needs the role's policies and the NAT route (and its subnet's
        # route table association), and pulls the image the deploy builds (a
        # DockerImageAsset with training_image.build: local has no resource to wait for).
        group.node.add_dependency(self.boot.role, self.metrics_policy)
        group.node.add_dependency(base.compute_routes)
        if settings.runtime == "container":
            group.node.add_dependency(base.training_image.build)
        acknowledge(group, "AwsSolutions-AS3",
                    "Scaling is manual (nodes.desired, trn-ultracluster scale); the group has no "
                    "scaling policy, so there are no scaling events worth a notification topic.")
        return group

    def outputs(self) -> dict[OutputKey, str]:
        """The standalone outputs (:data:`trn_ultracluster.contracts.outputs.STANDALONE_KEYS`)."""
        settings = self.props.settings
        return {
            OutputKey.STANDALONE_NODE_GROUP: Fn.join(",", [g.ref for g in self.groups]),
            OutputKey.STANDALONE_RUNTIME: settings.runtime,
            OutputKey.STANDALONE_DLAMI_VENV: (settings.dlami_venv
                                              if settings.runtime == "dlami-venv" else NONE),
            OutputKey.STANDALONE_AMI: self.image_id,
            OutputKey.STANDALONE_LOG_GROUP: self.boot.log_group.log_group_name,
            OutputKey.STANDALONE_SHELL: self.shell_command(),
        }

    def shell_command(self) -> str:
        """``aws ssm start-session`` on the first group's first instance (token): Session Manager's
        target of an EC2 instance is its id (Systems Manager user guide, "Start a session",
        https://docs.aws.amazon.com/systems-manager/latest/userguide/session-manager-working-with-sessions-start.html);
        the instance comes from ``DescribeAutoScalingGroups``
        (``AutoScalingGroups[].Instances[].InstanceId``, botocore's Auto Scaling model)."""
        region = Stack.of(self).region
        instance = (f"$(aws autoscaling describe-auto-scaling-groups --region {region} "
                    f"--auto-scaling-group-names {self.groups[0].ref} "
                    "--query 'AutoScalingGroups[0].Instances[0].InstanceId' --output text)")
        return f"aws ssm start-session --region {region} --target {instance}"


@dataclass(frozen=True)
class NodeGroup:
    """One Auto Scaling group of the nodes: ``min`` / ``desired`` / ``max`` instances in
    compute subnet ``subnet``, construct id ``construct_id``."""

    construct_id: str
    subnet: int
    min: int
    desired: int
    max: int


def node_groups(plan: network_plan.AddressPlan, nodes: NodeCounts) -> list[NodeGroup]:
    """One Auto Scaling group per group of the address plan (standalone plans one per compute
    subnet it fills), ``max`` = the plan's group, ``min`` and ``desired`` spread over them in
    order (:func:`~trn_ultracluster.network_plan.spread`). The first keeps the construct id
    ``Nodes`` an earlier single group had, so a deployed stack keeps its group; the next are
    ``Nodes2``, ``Nodes3``, ...

    Why not one group over every subnet: an Auto Scaling group given several subnets of one
    AZ "selects a subnet from the Availability Zone at random" (Amazon EC2 Auto Scaling user
    guide, "Amazon EC2 Auto Scaling benefits for application architecture", as quoted in
    :mod:`trn_ultracluster.network_plan`), and when a launch fails "attempts to launch in
    other Availability Zones until it succeeds" ("Add an Availability Zone",
    https://docs.aws.amazon.com/autoscaling/ec2/userguide/as-add-availability-zone.html), not
    in another subnet of the same one: a group spanning subnets could fill one past what the
    plan gives it while the others stay empty."""
    sizes = [g.nodes for g in plan.groups]
    mins, desired = network_plan.spread(nodes.min, sizes), network_plan.spread(nodes.desired, sizes)
    return [NodeGroup("Nodes" if i == 0 else f"Nodes{i + 1}", g.subnet, mins[i], desired[i],
                      g.nodes) for i, g in enumerate(plan.groups)]


def image_id(scope: Construct, settings: StandaloneConfig, release: NeuronStack) -> str:
    """The nodes' AMI id: ``standalone.ami_id`` as given; or a CloudFormation parameter of
    type ``AWS::SSM::Parameter::Value<AWS::EC2::Image::Id>`` whose default is
    ``standalone.ami_ssm_parameter``, resolved at each deploy; or (neither set) the default
    AMI of the Neuron stack's ``release``: its ``base_dlami_parameter`` in such a parameter
    when it has one (the native stack: the torch-neuronx DLAMI's name and SSM parameter are
    not verified, :data:`~trn_ultracluster.config.facts.NATIVE_STACK`), else its SDK
    release's DLAMI (:data:`~trn_ultracluster.config.facts.XLA_STACK`; a
    :class:`~.dlami.DlamiLookup` named ``Dlami``)."""
    if settings.ami_id is not None:
        return settings.ami_id
    parameter = settings.ami_ssm_parameter or release.base_dlami_parameter
    if parameter is not None:
        return ssm.StringParameter.value_for_typed_string_parameter_v2(
            scope, parameter, ssm.ParameterValueType.AWS_EC2_IMAGE_ID)
    return DlamiLookup(scope, "Dlami", stack=release).image_id
