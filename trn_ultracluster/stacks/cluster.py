"""TrnUltraClusterStack: composes the constructs and declares the outputs. Nothing else."""

from __future__ import annotations

from aws_cdk import Aws, CfnOutput, Environment, Fn, RemovalPolicy, Stack, Tags
from constructs import Construct

from trn_ultracluster.config import ClusterConfig
from trn_ultracluster.config.fsx_efa import plan_fsx_efa
from trn_ultracluster.constructs.efa import LAUNCH_TAG, UNTAGGED_RESOURCE_TYPES, Efa, EfaProps
from trn_ultracluster.constructs.logs import StackLogs
from trn_ultracluster.constructs.network import Network, NetworkProps
from trn_ultracluster.constructs.observability import Observability, ObservabilityProps
from trn_ultracluster.constructs.pool_widgets import PoolView
from trn_ultracluster.constructs.team_widgets import TeamsView
from trn_ultracluster.constructs.storage import Storage, StorageProps
from trn_ultracluster.constructs.training_image import TrainingImage, TrainingImageProps
from trn_ultracluster.contracts.outputs import (
    DESCRIPTIONS,
    NONE,
    OutputKey,
    fsx_efa_description,
)
from trn_ultracluster.contracts.teams import teams_info
from trn_ultracluster.nag import skip_library_singleton_functions
from trn_ultracluster.orchestrators import build as build_orchestrator
from trn_ultracluster.config.model import Pool
from trn_ultracluster.config.model.pools import id_suffix
from trn_ultracluster.orchestrators.base import Foundation, Orchestrator, PoolFoundation

__all__ = ["TrnUltraClusterStack"]


DESCRIPTION_MAX_BYTES = 1024
"""A template's description is at most 1,024 bytes (AWS CloudFormation user guide, "AWS
CloudFormation quotas": "Template description ... 1,024 bytes")."""


def _description(config: ClusterConfig) -> str:
    """``TrnUltraCluster: 2x trn1.32xlarge + 4x trn2.48xlarge in use2-az3, eks``; with so many
    pools that it would pass :data:`DESCRIPTION_MAX_BYTES`, their count and total nodes."""
    where = f" in {config.compute_az_id}, {config.orchestrator}"
    pools = " + ".join(f"{p.nodes.max}x {p.instance_type}" for p in config.node_pools)
    text = f"TrnUltraCluster: {pools}{where}"
    if len(text.encode()) <= DESCRIPTION_MAX_BYTES:
        return text
    return f"TrnUltraCluster: {len(config.node_pools)} pools, {config.nodes_max} nodes{where}"


class TrnUltraClusterStack(Stack):
    """The Trainium cluster: network, EFA, storage, training image and the orchestrator.

    The stack's environment has the Region derived from the first AZ ID and an unresolved
    account, so ``cdk synth`` makes no AWS calls and needs no credentials.

    Attributes:
        config: the validated configuration.
        network, efa, storage, training_image: the foundation constructs.
        observability: dashboard, alarms and alarm topic (the orchestrator's
            ``metric_source`` says where its metrics are).
        orchestrator: the orchestrator ``config.orchestrator`` names
            (:mod:`trn_ultracluster.orchestrators`).
    """

    def __init__(self, scope: Construct, construct_id: str, *, config: ClusterConfig) -> None:
        super().__init__(
            scope,
            construct_id,
            env=Environment(region=config.region),
            description=_description(config),
        )
        self.config = config
        self.fsx_efa = plan_fsx_efa(config)
        self.data_removal = (RemovalPolicy.RETAIN if config.data_removal_policy == "retain"
                             else RemovalPolicy.DESTROY)
        self.logs = StackLogs(self, "Logs", removal_policy=self.data_removal)
        self.network = Network(
            self,
            "Network",
            NetworkProps(
                az_ids=config.az_ids,
                plan=config.address_plan,
                nat_gateways=config.nat_gateways,
            ),
        )
        self.efa = Efa(self, "Efa", self._launch_props(config.main_pool))
        launches = [self.efa.pools[""]] + [
            self.efa.add_pool(p.id_suffix, self._launch_props(p)) for p in config.node_pools[1:]]
        self.storage = Storage(
            self,
            "Storage",
            StorageProps(
                vpc=self.network.vpc,
                subnet=self.network.compute_subnet,
                client_security_group=self.efa.security_group,
                fsx=config.fsx,
                retain_data=config.data_removal_policy == "retain",
                efa_enabled=self.fsx_efa.enabled,
            ),
        )
        # One image per Neuron stack of the Trainium pools; the main pool's keeps the id
        # TrainingImage (and the user's Dockerfile, built FROM it).
        self.training_images = {
            stack: TrainingImage(
                self, "TrainingImage" + ("" if i == 0 else id_suffix(stack)),
                TrainingImageProps(build=config.training_image.build,
                                   removal_policy=self.data_removal, log_key=self.logs.key,
                                   neuron_stack=stack,
                                   user_build=config.training_image.user_build if i == 0
                                   else None))
            for i, stack in enumerate(config.neuron_stacks)}
        # One image build at a time: both builds run on the CodeBuild project's Linux/Large
        # compute, and a build queued longer than BUILD_QUEUED_TIMEOUT fails the deploy
        # (constructs/training_image.py), which an account whose concurrent-build quota is 1
        # would hit with two builds at once; in turn, the second build takes its full time.
        images = list(self.training_images.values())
        for before, after in zip(images, images[1:]):
            after.base_build.node.add_dependency(before.build)
        self.training_image = self.training_images[config.neuron_stack]
        plan = config.address_plan
        self.pools = tuple(
            PoolFoundation(pool, launch, plan.pool(pool.name),
                           self.training_images.get(pool.neuron_stack or "",
                                                    self.training_image),
                           self.fsx_efa.pool_mode(pool.name))
            for pool, launch in zip(config.node_pools, launches, strict=True))
        self.orchestrator = self._orchestrator()
        self.observability = Observability(self, "Observability", ObservabilityProps(
            metric_source=getattr(self.orchestrator, "metric_source", None),
            file_system_id=self.storage.file_system.file_system_id,
            fsx_capacity_gib=config.fsx.storage_capacity_gib,
            settings=config.observability,
            fsx_efa_mode=self.fsx_efa.mode,
            pools=tuple(PoolView(p.name, p.instance_type, p.accelerated)
                        for p in config.node_pools),
            teams=TeamsView(config.orchestrator, config.team_list) if config.teams else None))
        # Every taggable resource but the placement group (Tags create-only there:
        # constructs/efa.py UNTAGGED_RESOURCE_TYPES); updating a tag elsewhere is in place.
        # The launch template's data carries none of them (a new version rolls EKS nodes):
        # docs/configuration-guide.md "Tags" says what reaches the nodes.
        for key, value in config.tags.items():
            Tags.of(self).add(key, value, exclude_resource_types=list(UNTAGGED_RESOURCE_TYPES))
        self._outputs()
        skip_library_singleton_functions(self)

    def _launch_props(self, pool: Pool) -> EfaProps:
        """The launch template and placement group settings of ``pool``, in the stack's VPC,
        with the stack-id tag (:data:`~trn_ultracluster.constructs.efa.LAUNCH_TAG`)."""
        return EfaProps(
            vpc=self.network.vpc,
            launch_tags={LAUNCH_TAG: Aws.STACK_ID},
            instance=pool.instance,
            root_volume_gib=pool.root_volume_gib,
            placement_group=pool.uses_placement_group,
            placement_group_name=pool.capacity.placement_group_name,
            capacity_type=pool.capacity.type,
            capacity_reservation_id=pool.capacity.reservation_id,
            efa_layout=pool.efa_interface_layout,
        )

    def _orchestrator(self) -> Orchestrator:
        dra = self.config.fsx.data_repository
        foundation = Foundation(
            vpc=self.network.vpc,
            private_subnets=self.network.private_subnets,
            compute_subnet=self.network.compute_subnet,
            compute_subnets=tuple(self.network.compute_subnets),
            compute_routes=self.network.compute_routes,
            address_plan=self.config.address_plan,
            node_security_group=self.efa.security_group,
            launch_template_id=self.efa.launch_template_id,
            launch_template_version=self.efa.launch_template_version,
            file_system=self.storage.file_system,
            data_bucket=self.storage.bucket,
            log_bucket=self.storage.log_bucket,
            data_repository_path=dra.file_system_path if dra else None,
            training_image=self.training_image,
            data_removal=self.data_removal,
            launch_template=self.efa.launch_template,
            fsx_efa_mode=self.fsx_efa.mode,
            fsx_efa_interfaces=self.fsx_efa.interfaces_per_client,
            cidr_blocks=tuple(self.network.cidr_blocks),
            pools=self.pools,
        )
        return build_orchestrator(self, self.config, foundation)

    def _pools_output(self) -> str:
        """The ``Pools`` output: a JSON list of the pools
        (:func:`trn_ultracluster.contracts.pools.parse_pools` shape), with what the
        orchestrator adds per pool (``pool_details``)."""
        details = getattr(self.orchestrator, "pool_details", dict)()
        return self.to_json_string([
            {"name": f.pool.name, "instance_type": f.pool.instance_type,
             "accelerated": f.pool.accelerated,
             "nodes": {"min": f.pool.nodes.min, "desired": f.pool.nodes.desired,
                       "max": f.pool.nodes.max},
             "neuron_stack": f.pool.neuron_stack or "",
             "image_uri": f.training_image.image_uri,
             **details.get(f.pool.name, {})}
            for f in self.pools])

    def _teams_output(self) -> str:
        """The ``Teams`` output (with ``teams`` only): a JSON object
        (:func:`trn_ultracluster.contracts.teams.parse_teams` shape), with where the
        orchestrator puts each team's jobs (``team_details``) and its scheduler's name of each
        priority class (``priority_class_names``)."""
        c = self.config
        info = teams_info(c.team_list, c.scheduling.priority_classes, c.scheduling.preemption,
                          getattr(self.orchestrator, "team_details", dict)(),
                          getattr(self.orchestrator, "priority_class_names", dict)())
        return self.to_json_string(info.to_json())

    def _output(self, key: OutputKey, value: str) -> None:
        description = (fsx_efa_description(self.fsx_efa.reason) if key is OutputKey.FSX_EFA
                       else DESCRIPTIONS[key])
        CfnOutput(self, key.value, value=value, description=description)

    def _outputs(self) -> None:
        c, net, efa, storage = self.config, self.network, self.efa, self.storage
        dra = c.fsx.data_repository
        values: dict[OutputKey, str] = {
            OutputKey.REGION: self.region,
            OutputKey.COMPUTE_AZ_ID: c.compute_az_id,
            OutputKey.COMPUTE_AZ_NAME: net.compute_subnet_az_name,
            OutputKey.VPC_ID: net.vpc.vpc_id,
            OutputKey.COMPUTE_SUBNET_ID: net.compute_subnet.subnet_id,
            OutputKey.COMPUTE_SUBNET_IDS: Fn.join(",", [s.subnet_id for s in net.compute_subnets]),
            OutputKey.PRIVATE_SUBNET_IDS: Fn.join(",", [s.subnet_id for s in net.private_subnets]),
            OutputKey.EFA_SECURITY_GROUP_ID: efa.security_group.security_group_id,
            OutputKey.PLACEMENT_GROUP_NAME: efa.placement_group_name or NONE,
            OutputKey.LAUNCH_TEMPLATE_ID: efa.launch_template_id,
            OutputKey.LAUNCH_TEMPLATE_VERSION: efa.launch_template_version,
            OutputKey.FSX_FILE_SYSTEM_ID: storage.file_system.file_system_id,
            OutputKey.FSX_DNS_NAME: storage.dns_name,
            OutputKey.FSX_MOUNT_NAME: storage.mount_name,
            OutputKey.FSX_DATA_REPOSITORY_PATH: dra.file_system_path if dra else NONE,
            # where `data` uploads and `submit`'s code snapshots appear: only a link of the
            # stack's own bucket, with automatic import, shows new objects on FSx
            OutputKey.DATA_BUCKET_ON_FSX: (dra.file_system_path if dra and dra.s3_path is None
                                           and dra.auto_import else NONE),
            OutputKey.FSX_EFA: self.fsx_efa.mode,
            OutputKey.DATA_BUCKET_NAME: storage.bucket.bucket_name,
            OutputKey.TRAINING_IMAGE_URI: self.training_image.image_uri,
            OutputKey.TRAINING_IMAGE_REPOSITORY: self.training_image.repository.repository_name,
            OutputKey.NEURON_STACK: c.neuron_stack,
            OutputKey.INSTANCE_TYPE: c.instance_type,
            OutputKey.NODE_COUNT_MIN: str(c.nodes.min),
            OutputKey.NODE_COUNT_DESIRED: str(c.nodes.desired),
            OutputKey.NODE_COUNT_MAX: str(c.nodes.max),
            OutputKey.ORCHESTRATOR: c.orchestrator,
            OutputKey.CAPACITY_TYPE: c.capacity.type,
            OutputKey.CAPACITY_RESERVATION_ID: c.capacity.reservation_id or NONE,
            OutputKey.JOB_BACKEND: self.orchestrator.job_backend,
            OutputKey.DASHBOARD_URL: self.observability.url,
            OutputKey.ALARM_TOPIC_ARN: self.observability.topic.topic_arn,
        }
        values.update(self.orchestrator.outputs())
        values[OutputKey.POOLS] = self._pools_output()
        if c.teams:
            values[OutputKey.TEAMS] = self._teams_output()
        for key, value in values.items():
            self._output(key, value)
