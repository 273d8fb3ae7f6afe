"""Storage: FSx for Lustre settings, Lustre ports, S3 data bucket, DRA, deletion policies."""

from __future__ import annotations

import json

import pytest

from tests.conftest import profile_path
from trn_ultracluster.contracts.outputs import fsx_efa_reason
from trn_ultracluster.config.fsx_efa import plan_fsx_efa
from trn_ultracluster.config.facts import DOC_FSX_EFA
from trn_ultracluster.template_graph import dependencies


LUSTRE_2_12_UNLINKED = {"fsx.lustre_version": "2.12", "fsx.data_repository": "null",
                        "data_removal_policy": "destroy"}


def _fsx(s):
    return s.logical("StorageFileSystem")


def test_fsx_defaults_persistent_2_lz4_lustre_2_15_with_metadata(default):
    props = _fsx(default)["Properties"]
    assert props["FileSystemType"] == "LUSTRE"
    assert props["StorageCapacity"] == 1200
    assert props["FileSystemTypeVersion"] == "2.15"
    lustre = props["LustreConfiguration"]
    assert lustre["DeploymentType"] == "PERSISTENT_2"
    assert lustre["PerUnitStorageThroughput"] == 250
    assert lustre["DataCompressionType"] == "LZ4"
    assert lustre["MetadataConfiguration"] == {"Mode": "AUTOMATIC"}


def test_fsx_lives_in_the_compute_subnet_with_its_own_security_group(default):
    props = _fsx(default)["Properties"]
    assert props["SubnetIds"] == [default.output("ComputeSubnetId")]
    assert props["SecurityGroupIds"] == [
        {"Fn::GetAtt": [default.ref_id("StorageFsxSecurityGroup"), "GroupId"]}]


def _ingress_to(s, group_prefix):
    gid = {"Fn::GetAtt": [s.ref_id(group_prefix), "GroupId"]}
    return [r["Properties"] for r in s.resources("AWS::EC2::SecurityGroupIngress").values()
            if r["Properties"]["GroupId"] == gid]


def test_lustre_ports_both_ways_between_nodes_and_file_servers(default):
    rules = _ingress_to(default, "StorageFsxSecurityGroup")
    efa = {"Fn::GetAtt": [default.ref_id("EfaSecurityGroup"), "GroupId"]}
    fsx = {"Fn::GetAtt": [default.ref_id("StorageFsxSecurityGroup"), "GroupId"]}
    from_nodes = {(r["FromPort"], r["ToPort"]) for r in rules if r["SourceSecurityGroupId"] == efa}
    assert from_nodes == {(988, 988), (1018, 1023)}  # FSx user guide: TCP 988, 1018-1023
    assert all(r["IpProtocol"] == "tcp" for r in rules)
    between = [(r["FromPort"], r["ToPort"]) for r in rules if r["SourceSecurityGroupId"] == fsx]
    assert any(lo <= 988 and hi >= 1023 for lo, hi in between)
    # the clients' group admits the file servers on the same ports (client rules)
    to_nodes = {(r["FromPort"], r["ToPort"], r["IpProtocol"])
                for r in _ingress_to(default, "EfaSecurityGroup")
                if r.get("SourceSecurityGroupId") == fsx}
    assert to_nodes == {(988, 988, "tcp"), (1018, 1023, "tcp")}


def test_profile_sets_capacity_and_throughput(synth):
    lustre = _fsx(synth(profile_path("ultracluster-16")))["Properties"]
    assert lustre["StorageCapacity"] == 4800
    assert lustre["LustreConfiguration"]["PerUnitStorageThroughput"] == 500


def test_no_metadata_configuration_on_lustre_2_12(synth):
    s = synth(**LUSTRE_2_12_UNLINKED)
    lustre = _fsx(s)["Properties"]["LustreConfiguration"]
    assert "MetadataConfiguration" not in lustre
    assert _fsx(s)["Properties"]["FileSystemTypeVersion"] == "2.12"


def test_data_bucket_encrypted_versioned_private_ssl_only_logged(default):
    bucket = default.logical("StorageDataBucket")["Properties"]
    assert bucket["BucketEncryption"]["ServerSideEncryptionConfiguration"][0][
        "ServerSideEncryptionByDefault"] == {"SSEAlgorithm": "AES256"}
    assert bucket["VersioningConfiguration"] == {"Status": "Enabled"}
    assert bucket["PublicAccessBlockConfiguration"] == {
        "BlockPublicAcls": True, "BlockPublicPolicy": True,
        "IgnorePublicAcls": True, "RestrictPublicBuckets": True}
    assert bucket["LoggingConfiguration"]["DestinationBucketName"] == {
        "Ref": default.ref_id("StorageAccessLogs")}
    policy = default.logical("StorageDataBucketPolicy")["Properties"]["PolicyDocument"]
    deny = [st for st in policy["Statement"] if st["Effect"] == "Deny"]
    assert deny and deny[0]["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}


def test_by_default_the_buckets_are_kept_and_the_file_system_exported_then_deleted(default):
    for prefix in ("StorageDataBucket", "StorageAccessLogs"):
        resource = default.logical(prefix)
        assert resource["DeletionPolicy"] == "Retain"
        assert resource["UpdateReplacePolicy"] == "Retain"
    assert default.resources("Custom::S3AutoDeleteObjects") == {}
    # the file system sits in the VPC: it is deleted with it, after the export
    assert default.logical("StorageFileSystem")["DeletionPolicy"] == "Delete"
    (export_id, export), = default.resources("Custom::FsxExportOnDelete").items()
    props = export["Properties"]
    assert props["FileSystemId"] == {"Ref": default.ref_id("StorageFileSystem")}
    assert props["NodeSecurityGroupId"] == {"Fn::GetAtt": [default.ref_id("EfaSecurityGroup"),
                                                          "GroupId"]}
    assert props["WaitSeconds"] == "1200"
    # CloudFormation waits at most an hour for a custom resource; the provider stops first
    assert export["Properties"]["ServiceTimeout"] == "3600"
    assert json.dumps(props["ReportPath"]).endswith('/.trn-ultracluster/export-reports"]]}')
    # deleted before the association and the file system: it depends on both
    from trn_ultracluster.template_graph import dependencies

    dra = default.ref_id("StorageDataRepositoryAssociation")
    assert {dra, default.ref_id("StorageFileSystem")} <= dependencies(default.template)[export_id]


def test_export_handler_may_only_export_this_file_system_and_read(default):
    role = default.ref_id("StorageExportRole")
    (policy,) = [p for p in default.resources("AWS::IAM::Policy").values()
                 if {"Ref": role} in p["Properties"]["Roles"]]
    statements = policy["Properties"]["PolicyDocument"]["Statement"]
    actions = {a for st in statements for a in ([st["Action"]] if isinstance(st["Action"], str)
                                                  else st["Action"])}
    assert actions == {"fsx:CreateDataRepositoryTask", "fsx:DescribeDataRepositoryTasks",
                       "fsx:DescribeDataRepositoryAssociations",
                       "ec2:DescribeNetworkInterfaces", "cloudformation:DescribeStacks",
                       "logs:CreateLogStream", "logs:PutLogEvents"}
    (create,) = [st for st in statements if st["Action"] == "fsx:CreateDataRepositoryTask"]
    assert default.ref_id("StorageFileSystem") in json.dumps(create["Resource"])


def test_destroy_policy_deletes_data_and_empties_buckets(synth):
    s = synth(profile_path("dev"))
    for prefix in ("StorageFileSystem", "StorageDataBucket", "StorageAccessLogs"):
        assert s.logical(prefix)["DeletionPolicy"] == "Delete"
    assert len(s.resources("Custom::S3AutoDeleteObjects")) == 2
    assert not s.resources("Custom::FsxExportOnDelete")  # nothing is kept, nothing to export


def test_data_repository_association_links_the_data_bucket(default):
    dra = default.only("AWS::FSx::DataRepositoryAssociation")
    assert dra["FileSystemId"] == {"Ref": default.ref_id("StorageFileSystem")}
    assert dra["FileSystemPath"] == "/"  # the whole file system is linked
    assert dra["DataRepositoryPath"] == {
        "Fn::Join": ["", ["s3://", {"Ref": default.ref_id("StorageDataBucket")}, "/"]]}
    assert dra["BatchImportMetaDataOnCreate"] is True
    events = ["NEW", "CHANGED", "DELETED"]
    assert dra["S3"] == {"AutoImportPolicy": {"Events": events}, "AutoExportPolicy": {"Events": events}}
    assert default.output("FsxDataRepositoryPath") == "/"
    assert default.output("DataBucketOnFsx") == "/"  # uploads and code snapshots appear there


def test_data_repository_association_can_be_disabled_or_pointed_elsewhere(synth):
    assert synth(**LUSTRE_2_12_UNLINKED).resources(
        "AWS::FSx::DataRepositoryAssociation") == {}
    other = synth(**{"fsx.data_repository.s3_path": "s3://my-datasets/llama/",
                     "fsx.data_repository.auto_export": "false"})
    dra = other.only("AWS::FSx::DataRepositoryAssociation")
    assert dra["DataRepositoryPath"] == "s3://my-datasets/llama/"
    assert "AutoExportPolicy" not in dra["S3"]
    # the stack's own bucket is not linked: its objects (uploads, code snapshots) appear nowhere
    assert other.output("FsxDataRepositoryPath") == "/" and other.output("DataBucketOnFsx") == "none"


# --- FSx for Lustre over EFA (fsx.efa) -------------------------------------------------------

CANNOT_CREATE = "https://docs.aws.amazon.com/fsx/latest/LustreGuide/cannot-create-fs.html"
SECURITY_GROUPS = "https://docs.aws.amazon.com/fsx/latest/LustreGuide/limit-access-security-groups.html"
TCP_IDS = {"AWS::FSx::FileSystem": "StorageFileSystemFFD87EE1",
           "AWS::FSx::DataRepositoryAssociation": "StorageDataRepositoryAssociationD324E1AA",
           "Custom::FsxExportOnDelete": "StorageExportOnDelete188A04A7"}
"""Logical ids of a stack without EFA, as every stack had them before ``fsx.efa``."""


def _one(s, cfn_type):
    ((name, resource),) = s.resources(cfn_type).items()
    return name, resource


def _group(s, prefix):
    return {"Fn::GetAtt": [s.ref_id(prefix), "GroupId"]}


def _all_traffic_rules(s) -> set[tuple[str, str, str]]:
    """(direction, group, peer) of every all-traffic rule between security groups, with the
    groups named ``fsx`` or ``nodes``."""
    names = {json.dumps(_group(s, "StorageFsxSecurityGroup")): "fsx",
             json.dumps(_group(s, "EfaSecurityGroup")): "nodes"}
    found = set()
    for cfn_type, direction, peer_key in (
            ("AWS::EC2::SecurityGroupIngress", "in", "SourceSecurityGroupId"),
            ("AWS::EC2::SecurityGroupEgress", "out", "DestinationSecurityGroupId")):
        for rule in s.resources(cfn_type).values():
            props = rule["Properties"]
            if props["IpProtocol"] == "-1" and peer_key in props:
                group = names.get(json.dumps(props["GroupId"]), "other")
                found.add((direction, group, names.get(json.dumps(props[peer_key]), "other")))
    return found


def test_efa_enabled_file_system_is_persistent_2_with_metadata(fsx_efa):
    """"EFA is supported on Persistent 2 file systems with a metadata configuration
    specified" (FSx for Lustre user guide, "Working with EFA-enabled file systems",
    DOC_FSX_EFA); 14,400 GiB is three steps at 1000 MB/s/TiB ("Managing storage capacity")."""
    assert plan_fsx_efa(fsx_efa.config).enabled and plan_fsx_efa(fsx_efa.config).mode == "required"
    _, fs = _one(fsx_efa, "AWS::FSx::FileSystem")
    props = fs["Properties"]
    assert props["StorageCapacity"] == 14400 and props["FileSystemTypeVersion"] == "2.15"
    lustre = props["LustreConfiguration"]
    assert lustre["EfaEnabled"] is True
    assert lustre["DeploymentType"] == "PERSISTENT_2"
    assert lustre["PerUnitStorageThroughput"] == 1000
    assert lustre["MetadataConfiguration"] == {"Mode": "AUTOMATIC"}
    assert fsx_efa.output("FsxEfa") == "required"
    description = fsx_efa.template["Outputs"]["FsxEfa"]["Description"]
    assert fsx_efa_reason(description) == "on: fsx.efa is true"


def test_without_efa_the_file_system_has_no_efa_setting_and_no_efa_rules(default):
    lustre = _one(default, "AWS::FSx::FileSystem")[1]["Properties"]["LustreConfiguration"]
    assert "EfaEnabled" not in lustre
    assert lustre["MetadataConfiguration"] == {"Mode": "AUTOMATIC"}
    rules = _all_traffic_rules(default)
    assert {("in", "nodes", "nodes"), ("out", "nodes", "nodes")} <= rules  # EFA between nodes
    assert not [r for r in rules if "fsx" in r]
    assert not [k for k in default.template["Resources"] if k.startswith("StorageEfa")]
    assert default.output("FsxEfa") == "off"
    assert fsx_efa_reason(default.template["Outputs"]["FsxEfa"]["Description"]) == (
        plan_fsx_efa(default.config).reason)


def test_efa_security_groups_allow_all_traffic_by_group_id_both_ways(fsx_efa):
    """"An EFA requires a security group that allows all inbound and outbound traffic to and
    from the security group itself and the security group of the clients" (FSx for Lustre
    user guide, "File system access control with Amazon VPC", SECURITY_GROUPS); rules with a
    CIDR (0.0.0.0/0 too) do not count, so every rule names a group. The Lustre port rules
    stay."""
    assert {r for r in _all_traffic_rules(fsx_efa) if "fsx" in r} == {
        ("in", "fsx", "fsx"), ("out", "fsx", "fsx"),
        ("in", "fsx", "nodes"), ("out", "fsx", "nodes"),
        ("in", "nodes", "fsx"), ("out", "nodes", "fsx")}
    for cfn_type in ("AWS::EC2::SecurityGroupIngress", "AWS::EC2::SecurityGroupEgress"):
        for name, rule in fsx_efa.resources(cfn_type).items():
            if name.startswith("StorageEfa"):
                assert "CidrIp" not in rule["Properties"] and "CidrIpv6" not in rule["Properties"]
                assert rule["Properties"]["Description"].startswith("FSx for Lustre over EFA")
    ports = {(r["FromPort"], r["ToPort"]) for r in _ingress_to(fsx_efa, "StorageFsxSecurityGroup")
             if r.get("IpProtocol") == "tcp"
             and r["SourceSecurityGroupId"] == _group(fsx_efa, "EfaSecurityGroup")}
    assert ports == {(988, 988), (1018, 1023)}


def test_efa_file_system_is_created_after_its_security_group_rules(fsx_efa):
    """FSx refuses to create an EFA-enabled file system whose security group does not allow
    all internal traffic yet: "Insufficient security group permissions to create an
    EFA-enabled file system" (FSx for Lustre user guide, "Creating an FSx for Lustre file
    system fails", CANNOT_CREATE)."""
    name, fs = _one(fsx_efa, "AWS::FSx::FileSystem")
    rules = {k for t in ("AWS::EC2::SecurityGroupIngress", "AWS::EC2::SecurityGroupEgress")
             for k, r in fsx_efa.resources(t).items()
             if r["Properties"]["IpProtocol"] == "-1" and k.startswith("StorageEfa")}
    assert len(rules) == 6
    assert rules <= set(fs["DependsOn"]) and rules <= dependencies(fsx_efa.template)[name]


def test_turning_efa_on_or_off_replaces_the_file_system_and_its_export(default, fsx_efa):
    """"You cannot enable or disable EFA on an existing file system" (FSx for Lustre user
    guide, "Working with EFA-enabled file systems", DOC_FSX_EFA), while CloudFormation lists
    ``EfaEnabled`` as "Update requires: No interruption": the stack replaces them itself with
    new logical ids; a stack without EFA keeps the ids it always had."""
    for cfn_type, tcp_id in TCP_IDS.items():
        assert _one(default, cfn_type)[0] == tcp_id
        efa_id, _ = _one(fsx_efa, cfn_type)
        assert efa_id != tcp_id and efa_id.startswith(tcp_id[:-8] + "Efa")
    # the export machinery is new too: the old export keeps a role that names the old file
    # system until CloudFormation has deleted it (Storage, "Flipping EFA")
    tcp_roles = {k for k in default.resources("AWS::IAM::Role") if k.startswith("StorageExport")}
    efa_roles = {k for k in fsx_efa.resources("AWS::IAM::Role") if k.startswith("StorageExport")}
    assert tcp_roles and efa_roles and not tcp_roles & efa_roles
    assert all(k.startswith(("StorageExportRoleEfa", "StorageExportProviderEfa"))
               for k in efa_roles)


def test_efa_export_runs_before_the_efa_file_system_and_association_go(fsx_efa):
    """CloudFormation deletes a resource before those it depends on: the export of the EFA
    file system depends on it and on its association, and its service token is the EFA
    provider's."""
    export_id, export = _one(fsx_efa, "Custom::FsxExportOnDelete")
    fs_id, _ = _one(fsx_efa, "AWS::FSx::FileSystem")
    dra_id, dra = _one(fsx_efa, "AWS::FSx::DataRepositoryAssociation")
    assert {fs_id, dra_id} <= dependencies(fsx_efa.template)[export_id]
    assert export["Properties"]["FileSystemId"] == {"Ref": fs_id}
    assert dra["Properties"]["FileSystemId"] == {"Ref": fs_id}
    token = export["Properties"]["ServiceToken"]["Fn::GetAtt"][0]
    assert token.startswith("StorageExportProviderEfaframeworkonEvent")


def test_storage_refuses_efa_without_a_metadata_configuration():
    """The construct checks what the configuration rules already refuse (DOC_FSX_EFA)."""
    import aws_cdk as cdk
    from aws_cdk import aws_ec2 as ec2

    from trn_ultracluster.config.model import FsxConfig
    from trn_ultracluster.constructs.storage import Storage, StorageProps

    stack = cdk.Stack(cdk.App(), "S")
    vpc = ec2.Vpc(stack, "Vpc", max_azs=1, nat_gateways=0)
    nodes = ec2.SecurityGroup(stack, "Nodes", vpc=vpc)
    fsx = FsxConfig(deployment_type="PERSISTENT_2", lustre_version="2.12",
                    data_repository=None)
    with pytest.raises(ValueError) as err:
        Storage(stack, "Storage", StorageProps(vpc=vpc, subnet=vpc.isolated_subnets[0],
                                               client_security_group=nodes, fsx=fsx,
                                               efa_enabled=True))
    assert "PERSISTENT_2 on Lustre 2.15" in str(err.value) and DOC_FSX_EFA in str(err.value)
