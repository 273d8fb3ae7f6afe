"""Storage: FSx for Lustre for the nodes, an S3 bucket for datasets and checkpoints.

What ``cdk destroy`` does here (see README "Deploy and destroy"): the file system is always
deleted; with ``retain_data`` its contents are exported to the data repository (the data
bucket by default) first and the buckets are kept; without it the buckets are emptied and
deleted too. No retained resource depends on a deleted one (the file system, which sits in
the VPC's subnet and security group, is never retained), so the stack ends DELETE_COMPLETE.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from aws_cdk import Aws, CustomResource, Duration, RemovalPolicy, Stack, Tags
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_fsx as fsx
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_s3 as s3
from aws_cdk import custom_resources as cr
from constructs import Construct

from trn_ultracluster.config import DataRepositoryConfig, FsxConfig
from trn_ultracluster.constructs.handler_function import handler_function
from trn_ultracluster.nag import (
    acknowledge,
    acknowledge_provider_framework,
    checkov_skip,
    nag_partition,
)
from trn_ultracluster.contracts.shared_storage import FSX_STACK_TAG

__all__ = ["EXPORT_DEADLINE", "EXPORT_WAIT", "LUSTRE_PORTS", "Storage", "StorageProps", "private_bucket"]

LUSTRE_PORTS = (ec2.Port.tcp(988), ec2.Port.tcp_range(1018, 1023))
"""Lustre traffic: TCP 988 and 1018-1023 between the file servers and the clients, in both
directions, and between the file servers (FSx for Lustre user guide, "File system access
control with Amazon VPC", file system and Lustre client security group rules,
https://docs.aws.amazon.com/fsx/latest/LustreGuide/limit-access-security-groups.html; the
troubleshooting page "Creating an FSx for Lustre file system fails" repeats the ports)."""
EXPORT_HANDLER = Path(__file__).resolve().parent / "fsx_export"
EXPORT_WAIT = Duration.minutes(20)
"""How long the export on delete waits for the nodes to go before exporting anyway."""
EXPORT_SERVICE_TIMEOUT = Duration.hours(1)
"""CloudFormation waits for a custom resource at most 3600 s (``ServiceTimeout``, 1-3600,
default 3600: CloudFormation template reference, ``AWS::CloudFormation::CustomResource``)."""
EXPORT_TIMEOUT = Duration.minutes(55)
"""The provider framework's own limit, inside CloudFormation's (:data:`EXPORT_SERVICE_TIMEOUT`):
on timeout it reports a clean failure (the file system is kept; ``cdk destroy`` can be run
again, and a still-running export is waited for then)."""
EXPORT_DEADLINE = Duration.minutes(52)
"""The export's own budget from the start of the delete (node wait included): the handler
fails with a message naming the task and how to finish before :data:`EXPORT_TIMEOUT` ends the
wait with the framework's generic one (two polls and a Lambda timeout of margin)."""
EXPORT_REPORT_PREFIX = ".trn-ultracluster/export-reports"
"""Where in the linked bucket the export's report of failed files goes (FSx API reference,
``CompletionReport``: the path must be in the linked S3 data repository; the report lands
in ``<path>/task-<id>/failures.csv``)."""
EXPORT_POLL = Duration.seconds(30)

DRA_EVENTS = ["NEW", "CHANGED", "DELETED"]
"""Auto import / export events of a data repository association
(CloudFormation AWS::FSx::DataRepositoryAssociation AutoImportPolicy / AutoExportPolicy)."""

NONCURRENT_VERSION_EXPIRATION = Duration.days(30)


def private_bucket(scope: Construct, construct_id: str, *, retain: bool, **props) -> s3.Bucket:
    """An S3 bucket with SSE-S3 encryption, SSL enforced and all public access blocked.

    Args:
        retain: keep the bucket and its objects on ``cdk destroy``; otherwise CDK's
            auto-delete custom resource empties it and it is deleted.
        props: further ``s3.Bucket`` props (versioning, access logs, name, ...).
    """
    return s3.Bucket(
        scope,
        construct_id,
        encryption=s3.BucketEncryption.S3_MANAGED,
        enforce_ssl=True,
        block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
        removal_policy=RemovalPolicy.RETAIN if retain else RemovalPolicy.DESTROY,
        auto_delete_objects=not retain,
        **props,
    )


@dataclass(frozen=True)
class StorageProps:
    """Props of :class:`Storage`.

    Attributes:
        vpc: the VPC.
        subnet: the compute subnet; FSx for Lustre lives in one subnet, next to the nodes.
        client_security_group: the nodes' security group, allowed to the Lustre ports.
        fsx: FSx settings from the validated config.
        retain_data: keep the buckets on ``cdk destroy`` and export the file system to its
            data repository before it is deleted. Default True.
    """

    vpc: ec2.IVpc
    subnet: ec2.ISubnet
    client_security_group: ec2.ISecurityGroup
    fsx: FsxConfig
    retain_data: bool = True


class Storage(Construct):
    """FSx for Lustre in the compute subnet, plus an encrypted, versioned S3 data bucket.

    - ``bucket``: SSE-S3 encryption, SSL enforced, public access blocked, versioned
      (noncurrent versions expire after 30 days), access logs to ``log_bucket``.
    - ``file_system``: Lustre with its own security group that admits the Lustre ports
      from the nodes and from itself (the nodes' group admits them back from it);
      PERSISTENT_2 on Lustre 2.15 gets an AUTOMATIC metadata configuration. Always deleted
      on ``cdk destroy``.
    - ``data_repository_association``: when configured, links a path of the file system
      (default: the whole file system, ``/``) to S3 (default: the data bucket) with auto
      import and export.
    - ``export_on_delete``: with ``retain_data`` and a data repository association, a
      custom resource that exports the file system to S3 and waits for it before the file
      system is deleted (:mod:`trn_ultracluster.constructs.fsx_export.handler`).

    Default: the buckets are retained on ``cdk destroy`` and the file system is exported
    first; with ``retain_data=False`` everything is deleted (the buckets are emptied first).
    """

    def __init__(self, scope: Construct, construct_id: str, props: StorageProps) -> None:
        super().__init__(scope, construct_id)
        self.props = props
        self.log_bucket = private_bucket(
            self,
            "AccessLogs",
            retain=props.retain_data,
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_PREFERRED,
            versioned=True,
            lifecycle_rules=[
                s3.LifecycleRule(noncurrent_version_expiration=NONCURRENT_VERSION_EXPIRATION)
            ],
        )
        checkov_skip(self.log_bucket, "CKV_AWS_18",
                     "This is the access-log bucket of the stack's other buckets; S3 advises "
                     "against a bucket logging to itself (S3 user guide, server access logging).")
        self.bucket = private_bucket(
            self,
            "DataBucket",
            retain=props.retain_data,
            versioned=True,
            lifecycle_rules=[
                s3.LifecycleRule(noncurrent_version_expiration=NONCURRENT_VERSION_EXPIRATION)
            ],
            server_access_logs_bucket=self.log_bucket,
            server_access_logs_prefix="data-bucket/",
        )

        self.security_group = ec2.SecurityGroup(
            self,
            "FsxSecurityGroup",
            vpc=props.vpc,
            description="FSx for Lustre: Lustre ports from the nodes and between file servers",
            allow_all_outbound=True,
        )
        # Between file servers: LustreFileSystem adds TCP 988-1023 from the group itself.
        # Clients and servers both open Lustre connections, so each side admits the other.
        for port in LUSTRE_PORTS:
            self.security_group.add_ingress_rule(props.client_security_group, port,
                                                 "Lustre from the nodes")
            props.client_security_group.add_ingress_rule(self.security_group, port,
                                                          "Lustre from the file servers")

        cfg = props.fsx
        self.file_system = fsx.LustreFileSystem(
            self,
            "FileSystem",
            vpc=props.vpc,
            vpc_subnet=props.subnet,
            security_group=self.security_group,
            storage_capacity_gib=cfg.storage_capacity_gib,
            file_system_type_version=fsx.FileSystemTypeVersion(f"V_{cfg.lustre_version.replace('.', '_')}"),
            lustre_configuration=fsx.LustreConfiguration(
                deployment_type=fsx.LustreDeploymentType[cfg.deployment_type],
                per_unit_storage_throughput=cfg.per_unit_storage_throughput,
                data_compression_type=fsx.LustreDataCompressionType[cfg.data_compression],
            ),
            # Always deleted: it lives in the stack's subnet and security group, which are
            # deleted too; its contents are exported first (see export_on_delete).
            removal_policy=RemovalPolicy.DESTROY,
        )
        # Found by this tag, not by a reference, where a reference would make a resource
        # wait for the file system (the HyperPod lifecycle script; FSX_STACK_TAG).
        Tags.of(self.file_system).add(FSX_STACK_TAG, Aws.STACK_ID)
        if cfg.deployment_type == "PERSISTENT_2" and cfg.lustre_version == "2.15":
            # A PERSISTENT_2 file system without a metadata configuration is created with
            # Lustre 2.12 whatever version is asked for; AUTOMATIC mode sizes metadata IOPS
            # with the storage (FSx API reference, FileSystemTypeVersion and
            # CreateFileSystemLustreMetadataConfiguration,
            # https://docs.aws.amazon.com/fsx/latest/APIReference/API_CreateFileSystemLustreMetadataConfiguration.html).
            # The L2 has no prop for it in aws-cdk-lib 2.275.0.
            cfn = self.file_system.node.default_child
            assert isinstance(cfn, fsx.CfnFileSystem)
            cfn.add_property_override("LustreConfiguration.MetadataConfiguration.Mode",
                                      "AUTOMATIC")

        self.data_repository_association: fsx.CfnDataRepositoryAssociation | None = None
        self.export_on_delete: CustomResource | None = None
        if cfg.data_repository is not None:
            self.data_repository_association = self._link_s3(cfg.data_repository)
            if props.retain_data:
                self.export_on_delete = self._export_on_delete()

    def _link_s3(self, dra: DataRepositoryConfig) -> fsx.CfnDataRepositoryAssociation:
        s3_path = dra.s3_path or f"s3://{self.bucket.bucket_name}/"
        self._repository_path = s3_path  # the export report goes below it
        return fsx.CfnDataRepositoryAssociation(
            self,
            "DataRepositoryAssociation",
            file_system_id=self.file_system.file_system_id,
            file_system_path=dra.file_system_path,
            data_repository_path=s3_path,
            batch_import_meta_data_on_create=True,
            s3=fsx.CfnDataRepositoryAssociation.S3Property(
                auto_import_policy=fsx.CfnDataRepositoryAssociation.AutoImportPolicyProperty(
                    events=DRA_EVENTS
                )
                if dra.auto_import
                else None,
                auto_export_policy=fsx.CfnDataRepositoryAssociation.AutoExportPolicyProperty(
                    events=DRA_EVENTS
                )
                if dra.auto_export
                else None,
            ),
        )

    def _export_on_delete(self) -> CustomResource:
        """Export the file system to S3 before it is deleted, after the nodes are gone.

        The custom resource depends on the file system and the data repository
        association, so CloudFormation deletes it, and so runs the export, before either.
        """
        stack = Stack.of(self)
        role = iam.Role(self, "ExportRole", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
                        description="Export the FSx file system to S3 before cdk destroy deletes it")
        role.add_to_policy(iam.PolicyStatement(
            actions=["fsx:CreateDataRepositoryTask"],
            resources=[
                stack.format_arn(service="fsx", resource="file-system",
                                 resource_name=self.file_system.file_system_id),
                stack.format_arn(service="fsx", resource="task", resource_name="*"),
            ]))
        # Describe* actions have no resource-level permissions (Service Authorization
        # Reference, Amazon FSx and Amazon EC2: no resource type listed for them).
        role.add_to_policy(iam.PolicyStatement(
            actions=["fsx:DescribeDataRepositoryTasks", "fsx:DescribeDataRepositoryAssociations",
                     "ec2:DescribeNetworkInterfaces"],
            resources=["*"]))
        role.add_to_policy(iam.PolicyStatement(actions=["cloudformation:DescribeStacks"],
                                               resources=[Aws.STACK_ID]))
        functions = {
            entry: handler_function(
                self, f"Export-{entry}", code=EXPORT_HANDLER, handler=f"handler.{entry}",
                role=role, timeout=Duration.minutes(1),
                description="TrnUltraCluster: export FSx to S3 before deletion")
            for entry in ("on_event", "is_complete")}
        provider = cr.Provider(
            self, "ExportProvider",
            on_event_handler=functions["on_event"],
            is_complete_handler=functions["is_complete"],
            query_interval=EXPORT_POLL,
            total_timeout=EXPORT_TIMEOUT,
        )
        export = CustomResource(
            self, "ExportOnDelete",
            service_token=provider.service_token,
            resource_type="Custom::FsxExportOnDelete",
            service_timeout=EXPORT_SERVICE_TIMEOUT,
            properties={
                "FileSystemId": self.file_system.file_system_id,
                "NodeSecurityGroupId": self.props.client_security_group.security_group_id,
                "WaitSeconds": str(int(EXPORT_WAIT.to_seconds())),
                "DeadlineSeconds": str(int(EXPORT_DEADLINE.to_seconds())),
                "ReportPath": f"{self._repository_path.rstrip('/')}/{EXPORT_REPORT_PREFIX}",
            },
        )
        assert self.data_repository_association is not None
        export.node.add_dependency(self.data_repository_association)
        self._acknowledge_export(role, provider, list(functions.values()))
        return export

    def _acknowledge_export(self, role: iam.Role, provider: cr.Provider,
                            handlers: list[lambda_.Function]) -> None:
        acknowledge(role.node.find_child("DefaultPolicy"), "AwsSolutions-IAM5[Resource::*]",
                    "fsx:DescribeDataRepositoryTasks and ec2:DescribeNetworkInterfaces have no "
                    "resource-level permissions (Service Authorization Reference).")
        acknowledge(role.node.find_child("DefaultPolicy"),
                    f"AwsSolutions-IAM5[Resource::arn:{nag_partition(Stack.of(self))}:fsx:"
                    f"{Stack.of(self).region}:<AWS::AccountId>:task/*]",
                    "The export task's id is not known before CreateDataRepositoryTask.")
        acknowledge_provider_framework(provider, handlers)

    @property
    def mount_name(self) -> str:
        """Lustre mount name (token), used as ``<dns>@tcp:/<mount_name>``."""
        return self.file_system.mount_name

    @property
    def dns_name(self) -> str:
        """File system DNS name (token)."""
        return self.file_system.dns_name
