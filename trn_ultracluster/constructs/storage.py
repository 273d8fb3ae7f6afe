"""Storage: FSx for Lustre for the nodes, an S3 bucket for datasets and checkpoints."""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_fsx as fsx
from aws_cdk import aws_s3 as s3
from constructs import Construct

from trn_ultracluster.config import DataRepositoryConfig, FsxConfig

__all__ = ["LUSTRE_PORTS", "Storage", "StorageProps", "private_bucket"]

LUSTRE_PORTS = (ec2.Port.tcp(988), ec2.Port.tcp_range(1018, 1023))
"""Lustre traffic: TCP 988 and 1018-1023, from clients and between the file servers
(FSx for Lustre user guide, "File system access control with Amazon VPC",
https://docs.aws.amazon.com/fsx/latest/LustreGuide/limit-access-security-groups.html)."""

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
        retain_data: keep the bucket and the file system on ``cdk destroy``.
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
      from the nodes and from itself; PERSISTENT_2 on Lustre 2.15 gets an AUTOMATIC
      metadata configuration.
    - ``data_repository_association``: when configured, links a path of the file system
      to S3 (default: the data bucket) with auto import and export.

    Default: both bucket and file system are retained on ``cdk destroy``; with
    ``retain_data=False`` they are deleted (the bucket is emptied first).
    """

    def __init__(self, scope: Construct, construct_id: str, props: StorageProps) -> None:
        super().__init__(scope, construct_id)
        self.props = props
        removal = RemovalPolicy.RETAIN if props.retain_data else RemovalPolicy.DESTROY

        self.log_bucket = private_bucket(
            self,
            "AccessLogs",
            retain=props.retain_data,
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_PREFERRED,
        )
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
        for port in LUSTRE_PORTS:
            self.security_group.add_ingress_rule(props.client_security_group, port,
                                                 "Lustre from the nodes")

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
            removal_policy=removal,
        )
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
        if cfg.data_repository is not None:
            self.data_repository_association = self._link_s3(cfg.data_repository)

    def _link_s3(self, dra: DataRepositoryConfig) -> fsx.CfnDataRepositoryAssociation:
        s3_path = dra.s3_path or f"s3://{self.bucket.bucket_name}/"
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

    @property
    def mount_name(self) -> str:
        """Lustre mount name (token), used as ``<dns>@tcp:/<mount_name>``."""
        return self.file_system.mount_name

    @property
    def dns_name(self) -> str:
        """File system DNS name (token)."""
        return self.file_system.dns_name
