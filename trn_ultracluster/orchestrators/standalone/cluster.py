"""Standalone orchestrator: Trainium (and CPU) instances without a scheduler, per node pool.

What it creates, for each pool of ``Foundation.pools`` (the main pool first):

- one Auto Scaling group (``AWS::AutoScaling::AutoScalingGroup``) per compute subnet the
  address plan gives the pool (:func:`node_groups`), the pool's ``nodes`` min / desired / max
  instances in all, launched from the pool's launch template (instance type, one EFA
  interface per network card of a Trainium type or one ordinary interface of a CPU type, in
  the nodes' security group, the pool's cluster placement group, IMDSv2, the encrypted root
  volume, capacity options). ``nodes.desired: 0`` (or ``trn-ultracluster scale --nodes 0``)
  leaves no instance running. With more than one pool, every group carries the tag
  ``trn-ultracluster/pool`` = the pool's name
  (:data:`~trn_ultracluster.contracts.pools.POOL_LABEL`), passed on to its instances;
- on that launch template (:func:`trn_ultracluster.constructs.efa.boot_from`): the pool's AMI
  (:class:`.ami.PoolAmis`: a Trainium pool's ``standalone.ami_id``, or
  ``standalone.ami_ssm_parameter`` resolved by CloudFormation at each deploy, or by default
  the AMI of its Neuron stack: on ``xla`` the Neuron DLAMI of the training image's SDK
  release, :data:`trn_ultracluster.config.facts.XLA_STACK`, found at deploy time by
  :class:`.dlami.DlamiLookup`; on ``native`` the newest Neuron Base DLAMI by its public SSM
  parameter, :data:`trn_ultracluster.config.facts.NATIVE_STACK`; a CPU pool's: Amazon Linux
  2023), the nodes' instance profile and the pool's user data (:mod:`.node`);
- once for all pools: the nodes' IAM role, instance profile, setup log group and script
  assets (:mod:`.node`), and ``PutMetricData`` for the nodes' Neuron and EFA metrics
  (:mod:`trn_ultracluster.node_metrics`), which the stack's dashboard and alarms read
  (``metric_source``).

The main pool keeps every construct id a one-pool stack had (groups ``Nodes``, ``Nodes2``,
...); another pool's groups are ``<suffix>Nodes``, ``<suffix>Nodes2``, ... with its
:attr:`~trn_ultracluster.config.model.Pool.id_suffix` in front, so no two pools' ids meet.

Access is Session Manager only: no key pair, and the nodes' security group admits nothing
from outside (the EFA group: all traffic from itself; Lustre from the file system's group).

Deploy order: each group waits for its role's policies, the route to the NAT gateway (the
user data calls S3, FSx, ECR and CloudWatch Logs) and, when its nodes run jobs in a container,
its training image's build; not for the file system, which the nodes find by its tag and
wait for (as HyperPod's do), so CloudFormation creates both in parallel.

A changed launch template (a new AMI, new scripts) reaches new instances only; the groups
have no rolling update, so a deploy never replaces a node that runs a job. To move every node
to it, ``trn-ultracluster scale --nodes 0`` and back.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from aws_cdk import Aws, Fn, Stack, Tags
from aws_cdk import aws_autoscaling as autoscaling
from constructs import Construct

from trn_ultracluster import network_plan
from trn_ultracluster.config import ClusterConfig, NodeCounts, StandaloneConfig
from trn_ultracluster.constructs.efa import boot_from
from trn_ultracluster.contracts.outputs import NONE, OutputKey
from trn_ultracluster.contracts.pools import POOL_LABEL
from trn_ultracluster.nag import acknowledge
from trn_ultracluster.node_metrics import node_metrics
from trn_ultracluster.orchestrators.base import Foundation, PoolFoundation
from trn_ultracluster.orchestrators.standalone.ami import PoolAmis, pool_settings
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
        foundation: the foundation's handles; its ``launch_template`` and ``pools`` (each
            pool's launch template, part of the address plan and training image) must be set.
        settings: the ``standalone`` configuration section, resolved for the main pool
            (``ClusterConfig.standalone_settings``: ``dlami_venv`` set): the outputs, the AMI
            settings, whether the training program is uploaded.
        pool_settings: pool name -> the section as that pool's nodes use it
            (:func:`~.ami.pool_settings`: a Trainium pool's venv for its Neuron stack, a CPU
            pool's container runtime); a pool left out uses ``settings``.
    """

    foundation: Foundation
    settings: StandaloneConfig
    pool_settings: Mapping[str, StandaloneConfig] = field(default_factory=dict)


class StandaloneOrchestrator(Construct):
    """Auto Scaling groups of each pool's nodes, from each pool's launch template.

    Attributes:
        boot: the nodes' role, instance profile, log group, assets and each pool's user data.
        metric_source: the nodes publish their Neuron and EFA metrics with the node metrics
            exporter of :mod:`trn_ultracluster.node_metrics` (``ClusterName`` = the stack's
            name), and the training program's tokens/s and MFU from the jobs' first-node logs
            (docs/standalone.md).
        metrics_policy: the nodes' ``cloudwatch:PutMetricData`` policy (each group waits
            for it).
        image_id: the main pool's AMI id (:class:`.ami.PoolAmis`).
        pool_groups: pool name -> the ``AWS::AutoScaling::AutoScalingGroup`` of each
            :func:`node_groups` entry of the pool, in order (the main pool first).
        groups: the main pool's groups.

    Raises:
        ValueError: the foundation gives no launch template resource, or no pool.
    """

    job_backend = JOB_BACKEND

    @classmethod
    def from_config(cls, scope: Construct, construct_id: str, config: ClusterConfig,
                    foundation: Foundation) -> StandaloneOrchestrator:
        """The orchestrator of ``config`` (what :func:`trn_ultracluster.orchestrators.build`
        calls)."""
        return cls(scope, construct_id, StandaloneProps(
            foundation=foundation, settings=config.standalone_settings,
            pool_settings={p.name: pool_settings(config.standalone, p)
                           for p in config.node_pools}))

    def __init__(self, scope: Construct, construct_id: str, props: StandaloneProps) -> None:
        super().__init__(scope, construct_id)
        self.props = props
        base, settings = props.foundation, props.settings
        if base.launch_template is None or not base.pools:
            raise ValueError("the standalone orchestrator boots each pool's nodes from its "
                             "launch template, and the foundation gives no launch template or "
                             "no pool")
        metrics_cluster = Stack.of(self).stack_name
        self.boot = NodeBoot(self, "Node", foundation=base, settings=settings,
                             fsx_tag_value=Aws.STACK_ID, metrics_cluster=metrics_cluster)
        self.metric_source, self.metrics_policy = node_metrics(self, self.boot.role,
                                                               metrics_cluster)
        amis = PoolAmis(self, settings, base.training_image.props.neuron_stack)
        self.pool_groups: dict[str, list[autoscaling.CfnAutoScalingGroup]] = {}
        for pool in base.pools:
            ami = amis.of(pool.pool)
            own = props.pool_settings.get(pool.pool.name, settings)
            boot_from(pool.launch.launch_template, image_id=ami.image_id,
                      instance_profile_arn=self.boot.instance_profile.instance_profile_arn,
                      user_data=self.boot.user_data(pool, own, ami.source),
                      root_device_name=ami.root_device_name)
            self.pool_groups[pool.pool.name] = [
                self._group(pool, planned, own, tagged=len(base.pools) > 1)
                for planned in node_groups(pool.plan.groups, pool.pool.nodes, pool.id_suffix)]
        self.image_id = amis.of(base.pools[0].pool).image_id
        self.groups = self.pool_groups[base.pools[0].pool.name]

    def _group(self, pool: PoolFoundation, planned: NodeGroup, settings: StandaloneConfig, *,
               tagged: bool) -> autoscaling.CfnAutoScalingGroup:
        base = self.props.foundation
        group = autoscaling.CfnAutoScalingGroup(
            self,
            planned.construct_id,
            min_size=str(planned.min),
            max_size=str(planned.max),
            desired_capacity=str(planned.desired),
            launch_template=autoscaling.CfnAutoScalingGroup.LaunchTemplateSpecificationProperty(
                launch_template_id=pool.launch.launch_template_id,
                version=pool.launch.launch_template_version),
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
        # the volumes carry the launch template's stack-id tag only. The pool tag only with
        # several pools: a one-pool stack's groups stay as they were.
        Tags.of(group).add("Name", NODE_NAME_TAG)
        if tagged:
            Tags.of(group).add(POOL_LABEL, pool.pool.name)
        # At boot the user data needs the role's policies and the NAT route (and its subnet's
        # route table association), and pulls the image the deploy builds (a
        # DockerImageAsset with training_image.build: local has no resource to wait for).
        group.node.add_dependency(self.boot.role, self.metrics_policy)
        group.node.add_dependency(base.compute_routes)
        if settings.runtime == "container":
            group.node.add_dependency(pool.training_image.build)
        acknowledge(group, "AwsSolutions-AS3",
                    "Scaling is manual (nodes.desired, trn-ultracluster scale); the group has no "
                    "scaling policy, so there are no scaling events worth a notification topic.")
        return group

    def outputs(self) -> dict[OutputKey, str]:
        """The standalone outputs (:data:`trn_ultracluster.contracts.outputs.STANDALONE_KEYS`),
        of the main pool (the other pools' groups are in the ``Pools`` output:
        :meth:`pool_details`)."""
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

    def pool_details(self) -> dict[str, dict[str, object]]:
        """Pool name -> ``{"auto_scaling_groups": "<name>,<name>,..."}`` (an ``Fn::Join`` of
        the pool's group names, in fill order), what the job backend finds a pool's nodes by
        (:attr:`~trn_ultracluster.contracts.pools.PoolInfo.auto_scaling_groups`)."""
        return {name: {"auto_scaling_groups": Fn.join(",", [g.ref for g in groups])}
                for name, groups in self.pool_groups.items()}

    def shell_command(self) -> str:
        """``aws ssm start-session`` on the main pool's first group's first instance (token):
        Session Manager's target of an EC2 instance is its id (Systems Manager user guide,
        "Start a session",
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
    """One Auto Scaling group of a pool's nodes: ``min`` / ``desired`` / ``max`` instances in
    compute subnet ``subnet``, construct id ``construct_id``."""

    construct_id: str
    subnet: int
    min: int
    desired: int
    max: int


def node_groups(groups: Sequence[network_plan.Group], nodes: NodeCounts,
                suffix: str = "") -> list[NodeGroup]:
    """One Auto Scaling group per group of a pool's part of the address plan (standalone
    plans one per compute subnet it fills), ``max`` = the plan's group, ``min`` and
    ``desired`` of ``nodes`` spread over them in order
    (:func:`~trn_ultracluster.network_plan.spread`). The main pool's (``suffix`` ``""``)
    first keeps the construct id ``Nodes`` an earlier single group had, so a deployed stack
    keeps its group; the next are ``Nodes2``, ``Nodes3``, ... Another pool's are
    ``<suffix>Nodes``, ``<suffix>Nodes2``, ...: the suffix in front, so that the ids of two
    pools never meet (with it behind, pool ``trn2``'s second group and pool ``trn22``'s first
    would both be ``NodesTrn22``).

    Why not one group over every subnet: an Auto Scaling group given several subnets of one
    AZ "selects a subnet from the Availability Zone at random" (Amazon EC2 Auto Scaling user
    guide, "Amazon EC2 Auto Scaling benefits for application architecture", as quoted in
    :mod:`trn_ultracluster.network_plan`), and when a launch fails "attempts to launch in
    other Availability Zones until it succeeds" ("Add an Availability Zone",
    https://docs.aws.amazon.com/autoscaling/ec2/userguide/as-add-availability-zone.html), not
    in another subnet of the same one: a group spanning subnets could fill one past what the
    plan gives it while the others stay empty.

    Raises:
        ValueError: ``nodes.min`` or ``nodes.desired`` do not fit the groups.
    """
    sizes = [g.nodes for g in groups]
    mins, desired = network_plan.spread(nodes.min, sizes), network_plan.spread(nodes.desired, sizes)
    return [NodeGroup(f"{suffix}Nodes" if i == 0 else f"{suffix}Nodes{i + 1}", g.subnet, mins[i],
                      desired[i], g.nodes) for i, g in enumerate(groups)]
