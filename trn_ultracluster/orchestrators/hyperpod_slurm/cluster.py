"""HyperPod Slurm orchestrator: a SageMaker HyperPod cluster with Slurm.

What it creates:

- ``AWS::SageMaker::Cluster`` with a Slurm controller group, an optional login group and one
  or more worker groups (one Slurm partition each), in the compute subnets with the EFA
  security group: a worker group is one instance group per compute subnet it fills
  (:func:`~trn_ultracluster.orchestrators.hyperpod.instance_groups.worker_parts`), and all
  of them join its partition. Without ``pools``, the worker groups are
  ``hyperpod.worker_groups``, of the one Trainium type; with ``pools``, each pool is one
  worker group of its own type (Trainium or CPU), named after it, in the partition of its
  name;
- a stack-owned, encrypted lifecycle bucket holding our lifecycle scripts (``scripts/``
  beside this module) plus ``trn_ultracluster.json``, generated from the config: the
  instance groups, the tag that finds the stack's FSx file system, and the environment that
  job scripts read, the cluster's and each other pool's (:mod:`.lifecycle`);
- the instance groups' execution role;
- with ``teams``: ``slurm_teams.json`` in the lifecycle bucket, from which the controller's
  lifecycle script makes Slurm enforce the teams (an account per team, associations with
  ``GrpTRES`` node limits per partition, a QOS per priority class, fair share; :mod:`.teams`
  and ``scripts/slurm_teams.py``). Without ``teams`` the template is what it was.

The bucket, the upload, the execution role and the worker instance groups are shared with
HyperPod on EKS (:mod:`trn_ultracluster.orchestrators.hyperpod`).

Slurm is configured through the API: each instance group has a ``SlurmConfig``
(``NodeType`` Controller / Login / Compute, the worker group's partition in
``PartitionNames``) and the cluster ``Orchestrator.Slurm.SlurmConfigStrategy``; there is no
``provisioning_parameters.json`` (SageMaker developer guide, "SageMaker HyperPod
references", section "SageMaker HyperPod Slurm configuration",
https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-ref.html: the
``provisioning_parameters.json`` route is "the legacy method"; "Migrating to API-driven
Slurm configuration", https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-slurm-api-config-migration.html:
HyperPod refuses a cluster with both). Every group uses ``OnInitComplete``: HyperPod runs
its AMI-based configuration first (Slurm configured and started, Docker, Enroot, Pyxis) and
then our lifecycle script (``scripts/on_init_complete.sh``; "Getting started with
SageMaker HyperPod using the AWS CLI", "Node lifecycle configuration options",
https://docs.aws.amazon.com/sagemaker/latest/dg/smcluster-getting-started-slurm-cli.html).
API-driven configuration needs a HyperPod AMI of January 2026 or later (migration page);
new clusters get the current AMI.

FSx for Lustre is not an ``InstanceStorageConfigs`` entry (``FsxLustreConfig`` needs the
file system's DNS and mount names, which would make the cluster wait for the file system):
the script finds the file system by the stack's tag, waits until it is ``AVAILABLE`` and
mounts it, so CloudFormation creates the file system and the cluster in parallel.

Sources of the property names and limits (checked against both):

- CloudFormation schema of ``AWS::SageMaker::Cluster`` as bundled with cfn-lint 1.58.0
  (template reference
  https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/aws-resource-sagemaker-cluster.html);
- botocore 1.44.5 ``data/sagemaker/2017-07-24/service-2.json``, operation ``CreateCluster``
  (shapes ``ClusterInstanceGroupSpecification``, ``ClusterSlurmConfig``,
  ``ClusterOrchestratorSlurmConfig``, ``ClusterLifeCycleConfig``, ``ClusterEbsVolumeConfig``,
  ``OnStartDeepHealthChecks``, ``VpcConfig``). The tests validate the synthesized request
  against it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from aws_cdk import Aws, Fn, Stack
from aws_cdk import aws_sagemaker as sagemaker
from constructs import Construct

from trn_ultracluster import network_plan
from trn_ultracluster.config import ClusterConfig, HyperPodConfig
from trn_ultracluster.config.model import HyperPodWorkerGroupConfig, Pool, SchedulingConfig, Team
from trn_ultracluster.contracts.hyperpod import (
    CONTROLLER_GROUP,
    LIFECYCLE_FILE,
    LOGIN_GROUP,
    ON_INIT_COMPLETE,
    SLURM_TEAMS_FILE,
)
from trn_ultracluster.contracts.outputs import OutputKey
from trn_ultracluster.node_metrics import SCRIPTS as NODE_METRICS_SCRIPTS
from trn_ultracluster.node_metrics import node_metrics
from trn_ultracluster.orchestrators.base import Foundation, NodeShape
from trn_ultracluster.orchestrators.hyperpod.execution_role import execution_role
from trn_ultracluster.orchestrators.hyperpod.instance_groups import (
    Group,
    compute_group,
    group_networks,
    hyperpod_cluster,
    pool_instance_counts,
    pool_instance_groups,
    worker_parts,
)
from trn_ultracluster.orchestrators.hyperpod.lifecycle import (
    lifecycle_bucket,
    lifecycle_config,
    upload_lifecycle_files,
)
from trn_ultracluster.orchestrators.hyperpod_slurm.lifecycle import (
    LIFECYCLE_ASSETS,
    job_environment,
    lifecycle_file,
    pool_environments,
)
from trn_ultracluster.orchestrators.hyperpod_slurm.teams import (
    TEAMS_SCRIPTS,
    class_qos_names,
    slurm_teams_file,
    team_accounts,
)
from trn_ultracluster.orchestrators.nodes import NODE_SCRIPTS, efa_node_settings

__all__ = ["HyperPodProps", "HyperPodSlurmOrchestrator"]

JOB_BACKEND = "hyperpod-slurm"
"""The job CLI backend of this orchestrator: sbatch on the controller through SSM."""
SLURM_CONFIG_STRATEGY = "Managed"
"""``Orchestrator.Slurm.SlurmConfigStrategy``: HyperPod owns the partitions of
``slurm.conf`` and an ``UpdateCluster`` fails rather than overwrite manual partition edits
(SageMaker developer guide, "SageMaker HyperPod references", Slurm configuration). Set
explicitly because the guide's pages disagree on the default (reference page: Managed;
migration page: Merge)."""

@dataclass(frozen=True)
class HyperPodProps:
    """What the HyperPod orchestrator builds on.

    Attributes:
        foundation: the foundation's handles (network, node security group, file system,
            buckets, training images, pools).
        shape: the main pool's nodes (type, counts, capacity).
        settings: the ``hyperpod`` configuration section.
        worker_parts: each worker group's parts in the address plan, in order
            (``ClusterConfig.hyperpod_worker_parts``).
        worker_groups: each worker group with its pool, in order
            (``ClusterConfig.hyperpod_worker_groups``: with ``pools``, one per pool, named
            after it, in the partition of its name).
        teams: ``ClusterConfig.team_list``; default: none, and nothing of teams is built.
        scheduling: ``ClusterConfig.scheduling`` (read only with ``teams``).
    """

    foundation: Foundation
    shape: NodeShape
    settings: HyperPodConfig
    worker_parts: dict[str, tuple[network_plan.Group, ...]]
    worker_groups: tuple[tuple[HyperPodWorkerGroupConfig, Pool], ...]
    teams: tuple[Team, ...] = ()
    scheduling: SchedulingConfig = SchedulingConfig()

    @property
    def worker_counts(self) -> dict[str, int]:
        """Instances per worker group, in order."""
        return {name: sum(g.nodes for g in parts) for name, parts in self.worker_parts.items()}

    @property
    def partitions(self) -> dict[str, str]:
        """Worker group name -> its Slurm partition, in order."""
        return {group.name: group.partition for group, _ in self.worker_groups}

    @property
    def pools(self) -> Mapping[str, Pool]:
        """Worker group name -> its pool."""
        return {group.name: pool for group, pool in self.worker_groups}


class HyperPodSlurmOrchestrator(Construct):
    """SageMaker HyperPod cluster with Slurm on the worker nodes of every pool.

    Attributes:
        bucket: the lifecycle bucket (:func:`trn_ultracluster.orchestrators.hyperpod.lifecycle.lifecycle_bucket`).
        deployment: uploads the lifecycle scripts and ``trn_ultracluster.json`` under
            ``lifecycle/``; the cluster waits for it.
        networks: the instance groups' networks (``VpcConfig``, ``OverrideVpcConfig``),
            which the execution role is scoped to.
        role: execution role of every instance group.
        cluster: the ``AWS::SageMaker::Cluster``.
        cluster_name, controller_group: names used in the outputs.
        worker_groups: the worker instance groups (every part of every worker group, of
            every pool).
    """

    job_backend = JOB_BACKEND

    @classmethod
    def from_config(cls, scope: Construct, construct_id: str, config: ClusterConfig,
                    foundation: Foundation) -> HyperPodSlurmOrchestrator:
        """The orchestrator of ``config`` (what :func:`trn_ultracluster.orchestrators.build`
        calls)."""
        return cls(scope, construct_id, HyperPodProps(
            foundation=foundation,
            shape=NodeShape.of(config),
            settings=config.hyperpod_settings,
            worker_parts=config.hyperpod_worker_parts,
            worker_groups=config.hyperpod_worker_groups,
            teams=config.team_list if config.teams else (),
            scheduling=config.scheduling))

    def __init__(self, scope: Construct, construct_id: str, props: HyperPodProps) -> None:
        super().__init__(scope, construct_id)
        self.props = props
        settings, base = props.settings, props.foundation
        self.cluster_name = settings.cluster_name
        self.controller_group = CONTROLLER_GROUP
        self.worker_groups = worker_parts(props.worker_parts, props.pools)

        self.bucket = lifecycle_bucket(self, base)
        partitions = list(props.partitions.values())
        env = job_environment(self, settings, props.shape.instance, props.worker_counts,
                              partitions, base)
        pools = pool_environments(self, settings, self.worker_groups, props.worker_counts,
                                  partitions, base)
        files = {LIFECYCLE_FILE: lifecycle_file(
            settings, [p.name for p in self.worker_groups], env, Aws.STACK_ID,
            data_repository=base.data_repository_path is not None,
            efa=efa_node_settings(base.fsx_efa_mode, base.fsx_efa_interfaces), pools=pools)}
        if props.teams:  # the controller sets up Slurm's accounts, limits and QOS from it
            files[SLURM_TEAMS_FILE] = slurm_teams_file(
                props.teams, props.scheduling, props.worker_groups, props.worker_counts)
        self.deployment = upload_lifecycle_files(
            self, self.bucket, [LIFECYCLE_ASSETS, NODE_SCRIPTS, NODE_METRICS_SCRIPTS], files,
            exclude=() if props.teams else list(TEAMS_SCRIPTS))
        self.networks = group_networks(self.worker_groups, base)
        self.role = execution_role(self, base, self.bucket, self.networks, describe_fsx=True)
        self.metric_source, metrics_policy = node_metrics(self, self.role, self.cluster_name)
        self.cluster = hyperpod_cluster(
            self, "Cluster", settings, base, self.networks, self._instance_groups(),
            sagemaker.CfnCluster.OrchestratorProperty(
                slurm=sagemaker.CfnCluster.ClusterOrchestratorSlurmConfigProperty(
                    slurm_config_strategy=SLURM_CONFIG_STRATEGY)))
        # Nodes run the lifecycle script at creation: the files, the role's policies and
        # the routes to the NAT gateway (the script calls the FSx and ECR APIs; see
        # hyperpod_cluster) must exist first. The file system is not among them (see
        # lifecycle_file).
        self.cluster.node.add_dependency(self.deployment)
        self.cluster.node.add_dependency(self.role, metrics_policy)

    def outputs(self) -> dict[OutputKey, str]:
        """The HyperPod stack outputs (see :data:`trn_ultracluster.contracts.outputs.HYPERPOD_KEYS`)."""
        return {
            OutputKey.HYPERPOD_CLUSTER_NAME: self.cluster_name,
            OutputKey.HYPERPOD_CLUSTER_ARN: self.cluster.attr_cluster_arn,
            OutputKey.HYPERPOD_CONTROLLER_GROUP: self.controller_group,
            OutputKey.HYPERPOD_WORKER_GROUPS: ",".join(p.name for p in self.worker_groups),
            OutputKey.HYPERPOD_CONTROLLER_SHELL: self.controller_shell_command(),
            OutputKey.HYPERPOD_LIFECYCLE_BUCKET: self.bucket.bucket_name,
        }

    def pool_details(self) -> dict[str, dict[str, object]]:
        """Pool name -> ``{"partition": its worker groups' first partition, "instance_groups":
        its instance groups, comma-joined, "instances": their instances}`` (merged into the stack output ``Pools``). With
        ``pools`` a pool's partition is its name; without, the one pool's partition is the
        first worker group's, the default partition of jobs."""
        partitions = self.props.partitions
        first: dict[str, str] = {}
        for part in self.worker_groups:
            first.setdefault(part.pool.name, partitions[part.worker_group])
        counts = pool_instance_counts(self.worker_groups)
        return {pool: {"partition": first[pool], "instance_groups": groups,
                       "instances": counts[pool]}
                for pool, groups in pool_instance_groups(self.worker_groups).items()}

    def team_details(self) -> dict[str, dict[str, str]]:
        """With ``teams``: team -> ``{"account": its Slurm account}`` (the team's name;
        :mod:`.teams`), merged into the ``Teams`` output."""
        return team_accounts(self.props.teams)

    def priority_class_names(self) -> dict[str, str]:
        """With ``teams``: priority class -> its Slurm QOS (the class's name; :mod:`.teams`)."""
        return class_qos_names(self.props.scheduling) if self.props.teams else {}

    def controller_shell_command(self) -> str:
        """``aws ssm start-session`` command for a root shell on the controller (token).

        The SSM target of a HyperPod node is ``sagemaker-cluster:<cluster-id>_<group>-<instance-id>``
        (SageMaker developer guide, "Access your SageMaker HyperPod cluster nodes"); the
        cluster id is the last part of the cluster ARN and the instance id comes from
        ``ListClusterNodes`` (botocore: ``InstanceGroupNameContains``,
        ``ClusterNodeSummaries[].InstanceId``).
        """
        region = Stack.of(self).region
        cluster_id = Fn.select(1, Fn.split("/", self.cluster.attr_cluster_arn))
        instance = (
            f"$(aws sagemaker list-cluster-nodes --region {region} --cluster-name "
            f"{self.cluster_name} --instance-group-name-contains {self.controller_group} "
            "--query 'ClusterNodeSummaries[0].InstanceId' --output text)"
        )
        return (f"aws ssm start-session --region {region} --target "
                f"sagemaker-cluster:{cluster_id}_{self.controller_group}-{instance}")

    # --- pieces ------------------------------------------------------------------------

    def _instance_groups(self) -> list[sagemaker.CfnCluster.ClusterInstanceGroupProperty]:
        """Controller, optional login and worker groups, each with its ``SlurmConfig``.

        ``NodeType``: exactly one Controller group, at most one Login group, Compute groups
        with one partition each (``PartitionNames`` required for Compute, not allowed for
        the others, at most one); every node is also in HyperPod's ``dev`` partition
        (SageMaker developer guide, "SageMaker HyperPod references", Slurm configuration).
        Every part of a worker group names the worker group's partition, so Slurm sees one
        partition of all its nodes; with ``pools``, one partition per pool, of its name. Each
        part has its pool's type (:func:`~trn_ultracluster.orchestrators.hyperpod.
        instance_groups.compute_group`).
        """
        settings = self.props.settings
        Slurm = sagemaker.CfnCluster.ClusterSlurmConfigProperty
        common = dict(execution_role=self.role.role_arn,
                      life_cycle_config=lifecycle_config(self.bucket,
                                                         on_init_complete=ON_INIT_COMPLETE))
        groups = [Group(instance_group_name=CONTROLLER_GROUP,
                        instance_type=settings.controller_instance_type, instance_count=1,
                        slurm_config=Slurm(node_type="Controller"), **common)]
        if settings.login_instance_type is not None:
            groups.append(Group(instance_group_name=LOGIN_GROUP,
                                instance_type=settings.login_instance_type, instance_count=1,
                                slurm_config=Slurm(node_type="Login"), **common))
        partitions = self.props.partitions
        for part in self.worker_groups:
            groups.append(compute_group(
                part, settings,
                vpc_config=self.networks.override_vpc_config(part.name),
                slurm_config=Slurm(node_type="Compute",
                                   partition_names=[partitions[part.worker_group]]),
                **common))
        return groups
