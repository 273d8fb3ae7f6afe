"""Storage: FSx for Lustre settings, Lustre ports, S3 data bucket, DRA, deletion policies."""

from __future__ import annotations

import json

from tests.conftest import profile_path


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


def test_data_repository_association_can_be_disabled_or_pointed_elsewhere(synth):
    assert synth(**LUSTRE_2_12_UNLINKED).resources(
        "AWS::FSx::DataRepositoryAssociation") == {}
    other = synth(**{"fsx.data_repository.s3_path": "s3://my-datasets/llama/",
                     "fsx.data_repository.auto_export": "false"})
    dra = other.only("AWS::FSx::DataRepositoryAssociation")
    assert dra["DataRepositoryPath"] == "s3://my-datasets/llama/"
    assert "AutoExportPolicy" not in dra["S3"]
