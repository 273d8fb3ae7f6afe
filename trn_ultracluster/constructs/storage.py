"""Storage: FSx for Lustre for the nodes, an S3 bucket for datasets and checkpoints.

What ``cdk destroy`` does here (see docs/deploy.md, "What `cdk destroy` does"): the file system
is always deleted; with ``retain_data`` its contents are exported to the data repository (the
data bucket by default) first and the buckets are kept; without it the buckets are emptied and
deleted too. No retained resource depends on a deleted one (the file system, which sits in the
VPC's subnet and security group, is never retained), so the stack ends DELETE_COMPLETE.

FSx for Lustre over EFA (``StorageProps.efa_enabled``, from ``fsx.efa``): the file system is
created EFA-enabled and its security group and the nodes' admit all traffic to and from each
other and the file system's group to and from itself, by group id. Turning it on or off
replaces the file system: see :class:`Storage`, "Flipping EFA".
"""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import Aws, CustomResource, RemovalPolicy, Tags
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_fsx as fsx
from aws_cdk import aws_s3 as s3
from constructs import Construct

from trn_ultracluster.config import DataRepositoryConfig, FsxConfig
from trn_ultracluster.config.facts import DOC_FSX_EFA
from trn_ultracluster.constructs.buckets import NONCURRENT_VERSION_EXPIRATION, private_bucket
from trn_ultracluster.constructs.export_on_delete import export_on_delete
from trn_ultracluster.nag import checkov_skip
from trn_ultracluster.contracts.shared_storage import FSX_STACK_TAG

__all__ = ["EFA_ID_SUFFIX", "LUSTRE_PORTS", "Storage", "StorageProps"]

LUSTRE_PORTS = (ec2.Port.tcp(988), ec2.Port.tcp_range(1018, 1023))
"""Lustre traffic: TCP 988 and 1018-1023 between the file servers and the clients, in both
directions, and between the file servers (FSx for Lustre user guide, "File system access
control with Amazon VPC", file system and Lustre client security group rules,
https://docs.aws.amazon.com/fsx/latest/LustreGuide/limit-access-security-groups.html; the
troubleshooting page "Creating an FSx for Lustre file system fails" repeats the ports)."""
EFA_ID_SUFFIX = "Efa"
"""Appended to the construct ids of the file system, its data repository association and
the export on delete (role, functions, provider, custom resource) of an EFA-enabled file
system, so that turning EFA on or off replaces them (see :class:`Storage`, "Flipping EFA")."""
EFA_SECURITY_GROUPS_DOC = (
    "https://docs.aws.amazon.com/fsx/latest/LustreGuide/limit-access-security-groups.html")
"""FSx for Lustre user guide, "File system access control with Amazon VPC", "EFA-enabled
security groups": "An EFA requires a security group that allows all inbound and outbound
traffic to and from the security group itself and the security group of the clients if
clients reside in a different security group". Without them the file system is not created:
"Insufficient security group permissions to create an EFA-enabled file system. Update
security group to allow all internal inbound and outbound traffic" (troubleshooting page
"Creating an FSx for Lustre file system fails",
https://docs.aws.amazon.com/fsx/latest/LustreGuide/cannot-create-fs.html). CIDR rules,
0.0.0.0/0 included, do not count; only rules that name a security group by id do (the current
wording of that page as quoted by three secondary sources and by
aws/aws-parallelcluster-cookbook PR #3251, "EFA's SRD-over-MAC is not authorized by a
0.0.0.0/0 rule"; the copy of the page read here predates that sentence: not verified against
a primary copy)."""
DRA_EVENTS = ["NEW", "CHANGED", "DELETED"]
"""Auto import / export events of a data repository association
(CloudFormation AWS::FSx::DataRepositoryAssociation AutoImportPolicy / AutoExportPolicy)."""


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
        efa_enabled: an EFA-enabled file system (``LustreConfiguration.EfaEnabled``) with the
            security group rules EFA needs (``plan_fsx_efa(config).enabled``; the rules of
            :mod:`trn_ultracluster.config.fsx_efa` hold). Default False: a file system
            reached over TCP only.
    """

    vpc: ec2.IVpc
    subnet: ec2.ISubnet
    client_security_group: ec2.ISecurityGroup
    fsx: FsxConfig
    retain_data: bool = True
    efa_enabled: bool = False


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
      system is deleted (:func:`~trn_ultracluster.constructs.export_on_delete.export_on_delete`).
    - ``efa_rules``: with ``efa_enabled``, all traffic (IP protocol -1) by security group id
      (:data:`EFA_SECURITY_GROUPS_DOC`), each direction an L1 rule of its own: the file
      system's group from and to itself, from and to the nodes' group, and the nodes' group
      from and to the file system's. Egress too as L1 rules: while ``allow_all_outbound`` is
      true, CDK drops rules added with ``add_egress_rule`` (aws/aws-cdk #5458, #38558; as for
      the EFA group's own rule, :class:`~trn_ultracluster.constructs.efa.Efa`), and the
      all-outbound IPv4 rule does not count for EFA. The file system depends on each rule:
      FSx checks them when it creates an EFA-enabled file system. The Lustre port rules stay.

    Default: the buckets are retained on ``cdk destroy`` and the file system is exported
    first; with ``retain_data=False`` everything is deleted (the buckets are emptied first).

    Flipping EFA. "You can choose to enable EFA when you create a new file system but you
    cannot enable or disable EFA on an existing file system" (FSx for Lustre user guide,
    "Working with EFA-enabled file systems", Considerations), while the CloudFormation
    reference says ``EfaEnabled`` needs "Update requires: No interruption" (``AWS::FSx::
    FileSystem`` ``LustreConfiguration``): an update that changed only the property would
    fail, or be ignored (which one is not verified). So the replacement is explicit: with EFA
    the file system, its association and the export on delete have construct ids ending in
    :data:`EFA_ID_SUFFIX` (``FileSystemEfa``, ``DataRepositoryAssociationEfa``,
    ``ExportRoleEfa``, ``Export-on_eventEfa``, ``Export-is_completeEfa``,
    ``ExportProviderEfa``, ``ExportOnDeleteEfa``) and new logical ids; without EFA they keep
    the ids they always had, so a deployed stack is unchanged. A deploy that turns EFA on
    (or off):

    1. creates the EFA security group rules when turning EFA on (turning it off, they go in
       the cleanup phase, after the EFA file system that depends on them), then the new file
       system in the same subnet and security group, its association (which
       imports the bucket's metadata as it is then: ``BatchImportMetaDataOnCreate``; that
       FSx accepts the same S3 path on a second file system while the first is still
       linked is not verified: "Each data repository association must have a unique ...
       S3 bucket or prefix", FSx API reference, CreateDataRepositoryAssociation), a new
       export role, functions and provider, and the new export resource (its Create does
       nothing but name the new file system, handler module doc); everything that names the
       file system (outputs, dashboard, FSx alarm, the EKS volume and claim under another
       name: ``eks/manifests.py`` ``FSX_EFA_VOLUME_NAME``) now names the new one;
    2. in the cleanup phase deletes the removed resources, dependents first: the old export
       resource first, whose Delete exports the OLD file system to S3 over the old
       association and waits for it (at most ``DeadlineSeconds``); it does not wait for the
       nodes, because the stack is UPDATE_COMPLETE_CLEANUP_IN_PROGRESS, not
       DELETE_IN_PROGRESS (``on_event``: ``WaitUntil`` = ``StartedAt``). The old role and
       functions are deleted only after it, so the export still runs with a role that names
       the old file system (hence the whole export machinery is renamed: with only the custom
       resource renamed, the shared role's policy would already name only the new file
       system and the export would be denied). Then the old association and file system.

    Without the export on delete (``data_removal_policy: destroy``, or no data repository
    association) the old file system is deleted with what it holds. What nodes see: running
    nodes keep the old file system mounted until it is deleted (nothing replaces them), and
    what they write after its export has started may be lost; a node that boots while both
    file systems exist fails its set-up (two file systems carry the stack's tag, ``lcs.py``
    ``fsx-status``); files the old file system exports after the new association was created
    reach the new one only through its auto import (``fsx.data_repository.auto_import``). So:
    stop the jobs, deploy, then replace the nodes. A failed export fails the old export
    resource's delete: what CloudFormation then does with the old association and file system
    in the cleanup phase is not verified here.
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
        self.efa_rules = self._efa_rules() if props.efa_enabled else []

        cfg = props.fsx
        self._suffix = EFA_ID_SUFFIX if props.efa_enabled else ""
        self.file_system = fsx.LustreFileSystem(
            self,
            f"FileSystem{self._suffix}",
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
        cfn = self.file_system.node.default_child
        assert isinstance(cfn, fsx.CfnFileSystem)
        metadata = cfg.deployment_type == "PERSISTENT_2" and cfg.lustre_version == "2.15"
        if metadata:
            # PERSISTENT_2 on Lustre 2.15 gets a metadata configuration: the API's version
            # default for PERSISTENT_2 without one is 2.12 ("Default value is 2.12 when
            # DeploymentType is set to PERSISTENT_2 without a metadata configuration mode",
            # botocore's FSx model, FileSystemTypeVersion), and EFA needs one (DOC_FSX_EFA).
            # AUTOMATIC mode sizes metadata IOPS with the storage (FSx API reference,
            # CreateFileSystemLustreMetadataConfiguration,
            # https://docs.aws.amazon.com/fsx/latest/APIReference/API_CreateFileSystemLustreMetadataConfiguration.html).
            # The L2 has no prop for it in aws-cdk-lib 2.275.0.
            cfn.add_property_override("LustreConfiguration.MetadataConfiguration.Mode",
                                      "AUTOMATIC")
        if props.efa_enabled:
            if not metadata:
                raise ValueError(
                    "StorageProps.efa_enabled needs fsx.deployment_type PERSISTENT_2 on Lustre "
                    f"2.15 (with the metadata configuration), got {cfg.deployment_type} on "
                    f"{cfg.lustre_version}: \"EFA is supported on Persistent 2 file systems with "
                    f"a metadata configuration specified\" ({DOC_FSX_EFA})")
            # The L2 has no prop for it in aws-cdk-lib 2.275.0
            # (CfnFileSystem.LustreConfigurationProperty has efa_enabled).
            cfn.add_property_override("LustreConfiguration.EfaEnabled", True)
            for rule in self.efa_rules:
                self.file_system.node.add_dependency(rule)

        self.data_repository_association: fsx.CfnDataRepositoryAssociation | None = None
        self.export_on_delete: CustomResource | None = None
        if cfg.data_repository is not None:
            association = self.data_repository_association = self._link_s3(cfg.data_repository)
            if props.retain_data:
                # Construct ids end in EFA_ID_SUFFIX with EFA (class doc, "Flipping EFA").
                self.export_on_delete = export_on_delete(
                    self, self.file_system, association, props.client_security_group,
                    self._repository_path, self._suffix)

    def _efa_rules(self) -> list[ec2.CfnSecurityGroupIngress | ec2.CfnSecurityGroupEgress]:
        """All traffic by security group id between the file system's group, itself and the
        nodes' group, in and out (see the class doc and :data:`EFA_SECURITY_GROUPS_DOC`)."""
        fsx_group = self.security_group.security_group_id
        nodes = self.props.client_security_group.security_group_id
        rules: list[ec2.CfnSecurityGroupIngress | ec2.CfnSecurityGroupEgress] = []
        for name, group, other, whom in (
                ("FsxSelf", fsx_group, fsx_group, "between the file servers"),
                ("FsxNodes", fsx_group, nodes, "between the file servers and the nodes"),
                ("NodesFsx", nodes, fsx_group, "between the nodes and the file servers")):
            description = f"FSx for Lustre over EFA: all traffic {whom}"
            rules.append(ec2.CfnSecurityGroupIngress(
                self, f"EfaIngress{name}", group_id=group, ip_protocol="-1",
                source_security_group_id=other, description=description))
            rules.append(ec2.CfnSecurityGroupEgress(
                self, f"EfaEgress{name}", group_id=group, ip_protocol="-1",
                destination_security_group_id=other, description=description))
        return rules

    def _link_s3(self, dra: DataRepositoryConfig) -> fsx.CfnDataRepositoryAssociation:
        s3_path = dra.s3_path or f"s3://{self.bucket.bucket_name}/"
        self._repository_path = s3_path  # the export report goes below it
        return fsx.CfnDataRepositoryAssociation(
            self,
            f"DataRepositoryAssociation{self._suffix}",
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
