"""Storage: FSx for Lustre settings, Lustre ports, S3 data bucket, DRA, deletion policies."""

from __future__ import annotations

from tests.conftest import profile_path


LUSTRE_2_12_UNLINKED = {"fsx.lustre_version": "2.12", "fsx.data_repository": "null"}


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


def test_lustre_ports_from_the_nodes_and_between_file_servers(default):
    rules = _ingress_to(default, "StorageFsxSecurityGroup")
    efa = {"Fn::GetAtt": [default.ref_id("EfaSecurityGroup"), "GroupId"]}
    fsx = {"Fn::GetAtt": [default.ref_id("StorageFsxSecurityGroup"), "GroupId"]}
    from_nodes = {(r["FromPort"], r["ToPort"]) for r in rules if r["SourceSecurityGroupId"] == efa}
    assert from_nodes == {(988, 988), (1018, 1023)}  # FSx user guide: TCP 988, 1018-1023
    assert all(r["IpProtocol"] == "tcp" for r in rules)
    between = [(r["FromPort"], r["ToPort"]) for r in rules if r["SourceSecurityGroupId"] == fsx]
    assert any(lo <= 988 and hi >= 1023 for lo, hi in between)


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


def test_data_is_retained_by_default(default):
    for prefix in ("StorageFileSystem", "StorageDataBucket", "StorageAccessLogs"):
        resource = default.logical(prefix)
        assert resource["DeletionPolicy"] == "Retain"
        assert resource["UpdateReplacePolicy"] == "Retain"
    assert default.resources("Custom::S3AutoDeleteObjects") == {}


def test_destroy_policy_deletes_data_and_empties_buckets(synth):
    s = synth(profile_path("dev"))
    for prefix in ("StorageFileSystem", "StorageDataBucket", "StorageAccessLogs"):
        assert s.logical(prefix)["DeletionPolicy"] == "Delete"
    assert len(s.resources("Custom::S3AutoDeleteObjects")) == 2


def test_data_repository_association_links_the_data_bucket(default):
    dra = default.only("AWS::FSx::DataRepositoryAssociation")
    assert dra["FileSystemId"] == {"Ref": default.ref_id("StorageFileSystem")}
    assert dra["FileSystemPath"] == "/s3"
    assert dra["DataRepositoryPath"] == {
        "Fn::Join": ["", ["s3://", {"Ref": default.ref_id("StorageDataBucket")}, "/"]]}
    assert dra["BatchImportMetaDataOnCreate"] is True
    events = ["NEW", "CHANGED", "DELETED"]
    assert dra["S3"] == {"AutoImportPolicy": {"Events": events}, "AutoExportPolicy": {"Events": events}}
    assert default.output("FsxDataRepositoryPath") == "/s3"


def test_data_repository_association_can_be_disabled_or_pointed_elsewhere(synth):
    assert synth(**LUSTRE_2_12_UNLINKED).resources(
        "AWS::FSx::DataRepositoryAssociation") == {}
    other = synth(**{"fsx.data_repository.s3_path": "s3://my-datasets/llama/",
                     "fsx.data_repository.auto_export": "false"})
    dra = other.only("AWS::FSx::DataRepositoryAssociation")
    assert dra["DataRepositoryPath"] == "s3://my-datasets/llama/"
    assert "AutoExportPolicy" not in dra["S3"]
