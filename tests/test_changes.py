"""The change classifier (``trn_ultracluster/changes/``) on small templates, and its
vendored create-only table against the schemas cfn-lint ships."""

from __future__ import annotations

import copy
import importlib.util
import json

import pytest

from tests.conftest import REPO_ROOT, release_template
from trn_ultracluster.changes import (
    DOCUMENTED_CREATE_ONLY,
    classify,
    control_plane_version_refusals,
    describe,
    quantity_bytes,
    refused_combination,
    role,
    shrinking_claims,
    stops_deploy,
)
from trn_ultracluster.create_only import CFN_LINT_VERSION, CREATE_ONLY


def _tool():
    spec = importlib.util.spec_from_file_location(
        "create_only_table", REPO_ROOT / "tools" / "create_only_table.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# --- the vendored table ----------------------------------------------------------------------


def test_vendored_create_only_table_is_cfn_lints():
    """A cfn-lint upgrade that changes a schema fails here: run
    ``python tools/create_only_table.py`` and review the diff."""
    tool = _tool()
    assert CFN_LINT_VERSION == tool.cfn_lint_version(), "python tools/create_only_table.py"
    assert CREATE_ONLY == tool.cfn_lint_table(sorted(CREATE_ONLY)), (
        "trn_ultracluster/create_only.py disagrees with cfn-lint's schemas: "
        "python tools/create_only_table.py")


def test_vendored_table_covers_every_type_of_the_templates():
    assert set(_tool().template_types()) <= set(CREATE_ONLY), "python tools/create_only_table.py"


def test_placement_group_tags_and_strategy_are_create_only():
    """The fact of issue 29: ``Tags`` of ``AWS::EC2::PlacementGroup`` is create-only."""
    group = set(CREATE_ONLY["AWS::EC2::PlacementGroup"])
    assert {"/properties/Tags", "/properties/Strategy"} <= group
    assert "/properties/LaunchTemplateData" not in CREATE_ONLY["AWS::EC2::LaunchTemplate"]


def test_documented_create_only_properties_cannot_be_updated_through_the_fsx_api():
    """Each property :data:`DOCUMENTED_CREATE_ONLY` adds is absent from FSx
    ``UpdateFileSystem`` (botocore's model): nothing changes it on an existing file system."""
    import botocore.session

    model = botocore.session.get_session().get_service_model("fsx")
    request = model.operation_model("UpdateFileSystem").input_shape.members
    lustre = model.shape_for("UpdateFileSystemLustreConfiguration").members
    for pointer in DOCUMENTED_CREATE_ONLY["AWS::FSx::FileSystem"]:
        parts = pointer.split("/")[2:]
        members = lustre if parts[0] == "LustreConfiguration" else request
        assert parts[-1] not in members, pointer
    # and the throughput tier, which the table says changes in place, is updatable
    assert "PerUnitStorageThroughput" in lustre


# --- classification --------------------------------------------------------------------------

NODEGROUP = {
    "Type": "AWS::EKS::Nodegroup",
    "Properties": {
        "ClusterName": {"Ref": "Cluster"},
        "LaunchTemplate": {"Id": {"Ref": "LaunchTemplate"},
                           "Version": {"Fn::GetAtt": ["LaunchTemplate", "LatestVersionNumber"]}},
        "ScalingConfig": {"MinSize": 0, "MaxSize": 4, "DesiredSize": 4},
        "Subnets": [{"Ref": "Subnet"}],
        "Tags": {"env": "dev"},
    },
}
BASE = {"Resources": {
    "Cluster": {"Type": "AWS::EKS::Cluster", "Properties": {
        "Name": "c",
        "KubernetesNetworkConfig": {"IpFamily": "ipv4", "ServiceIpv4Cidr": "172.20.0.0/16"},
        "ResourcesVpcConfig": {"SubnetIds": [{"Ref": "Subnet"}]}}},
    "Subnet": {"Type": "AWS::EC2::Subnet", "Properties": {"CidrBlock": "10.0.0.0/24",
                                                          "VpcId": "vpc-1"}},
    "PlacementGroup": {"Type": "AWS::EC2::PlacementGroup",
                       "Properties": {"Strategy": "cluster", "Tags": [{"Key": "a", "Value": "1"}]}},
    "LaunchTemplate": {"Type": "AWS::EC2::LaunchTemplate", "Properties": {"LaunchTemplateData": {
        "InstanceType": "trn1.32xlarge", "Placement": {"GroupName": {"Ref": "PlacementGroup"}}}}},
    "Nodes": NODEGROUP,
    "FileSystemFFD87EE1": {"Type": "AWS::FSx::FileSystem", "Properties": {
        "FileSystemType": "LUSTRE", "StorageCapacity": 1200, "SubnetIds": [{"Ref": "Subnet"}],
        "LustreConfiguration": {"DeploymentType": "PERSISTENT_2",
                                "PerUnitStorageThroughput": 125}}},
    "Manifest": {"Type": "Custom::AWSCDK-EKS-KubernetesResource",
                 "Properties": {"Manifest": {"Fn::Join": ["", ["[{\"size\":\"", "1200", "\"}]"]]}}},
}}


def _after(**edits):
    """BASE with ``edits``: logical id -> callable(resource) editing it in place, or None to
    drop it."""
    template = copy.deepcopy(BASE)
    for logical_id, edit in edits.items():
        if edit is None:
            del template["Resources"][logical_id]
        else:
            edit(template["Resources"].setdefault(logical_id, {}))
    return template


def _kinds(after, before=BASE):
    return {c.logical_id: c.kind for c in classify(before, after) if c.kind != "unchanged"}


def test_same_template_is_unchanged_everywhere():
    changes = classify(BASE, copy.deepcopy(BASE))
    assert {c.kind for c in changes} == {"unchanged"} and len(changes) == len(BASE["Resources"])


def test_launch_template_data_change_rolls_the_node_group_that_reads_its_latest_version():
    after = _after(LaunchTemplate=lambda r: r["Properties"]["LaunchTemplateData"].update(
        InstanceType="trn1n.32xlarge"))
    assert _kinds(after) == {"LaunchTemplate": "updated", "Nodes": "nodes rolled"}
    rolled = next(c for c in classify(BASE, after) if c.logical_id == "Nodes")
    assert stops_deploy(rolled)
    assert describe(rolled).startswith("rolls every node of node group Nodes: EKS replaces")
    assert "launch template LaunchTemplate gets a new version" in describe(rolled)


def test_a_pinned_launch_template_version_does_not_roll():
    def pin(r):
        r["Properties"]["LaunchTemplate"]["Version"] = "1"
    before = _after(Nodes=pin)
    after = _after(Nodes=pin, LaunchTemplate=lambda r: r["Properties"]["LaunchTemplateData"]
                   .update(InstanceType="trn1n.32xlarge"))
    assert _kinds(after, before) == {"LaunchTemplate": "updated"}


def test_node_group_tags_and_scaling_update_in_place():
    after = _after(Nodes=lambda r: r["Properties"].update(
        Tags={"env": "dev", "team": "ml"}, ScalingConfig={"MinSize": 0, "MaxSize": 8,
                                                          "DesiredSize": 8}))
    changes = classify(BASE, after)
    assert _kinds(after) == {"Nodes": "updated"}
    assert not any(stops_deploy(c) for c in changes)


def test_node_group_version_change_rolls_its_nodes():
    after = _after(Nodes=lambda r: r["Properties"].update(Version="1.36"))
    assert _kinds(after) == {"Nodes": "nodes rolled"}


def test_placement_group_tags_replace_it_and_the_new_group_reaches_the_nodes():
    """``Tags`` is create-only: the group is replaced; the launch template names the new
    group (a new version), and the node group rolls."""
    after = _after(PlacementGroup=lambda r: r["Properties"]["Tags"].append(
        {"Key": "team", "Value": "ml"}))
    assert _kinds(after) == {"PlacementGroup": "replaced", "LaunchTemplate": "updated",
                             "Nodes": "nodes rolled"}
    group = next(c for c in classify(BASE, after) if c.logical_id == "PlacementGroup")
    assert group.reasons == ("create-only property Tags changed",)


def test_nested_create_only_property_replaces_a_sibling_does_not():
    ip_family = _after(Cluster=lambda r: r["Properties"]["KubernetesNetworkConfig"].update(
        IpFamily="ipv6"))
    assert _kinds(ip_family)["Cluster"] == "replaced"
    other = _after(Cluster=lambda r: r["Properties"]["KubernetesNetworkConfig"].update(
        ElasticLoadBalancing={"Enabled": True}))
    assert _kinds(other) == {"Cluster": "updated"}


def test_a_replaced_resource_replaces_what_holds_it_in_a_create_only_property():
    """A new subnet (create-only ``CidrBlock``) is a new id in the file system's create-only
    ``SubnetIds``: the file system is replaced although its own text did not change."""
    after = _after(Subnet=lambda r: r["Properties"].update(CidrBlock="10.0.1.0/24"))
    kinds = _kinds(after)
    assert kinds["Subnet"] == "replaced" and kinds["FileSystemFFD87EE1"] == "replaced"
    assert kinds["Nodes"] == "replaced"  # Subnets is create-only on AWS::EKS::Nodegroup
    fs = next(c for c in classify(BASE, after) if c.logical_id == "FileSystemFFD87EE1")
    assert describe(fs).startswith("replaces the file system FileSystemFFD87EE1: data not "
                                   "exported to S3 is lost")
    assert "create-only property SubnetIds: Subnet is replaced" in describe(fs)


@pytest.mark.parametrize("edit, kind", [
    ({"StorageCapacity": 2400}, "updated"),
    ({"LustreConfiguration": {"DeploymentType": "PERSISTENT_2", "PerUnitStorageThroughput": 250}},
     "updated"),
    ({"LustreConfiguration": {"DeploymentType": "SCRATCH_2"}}, "replaced"),
    ({"LustreConfiguration": {"DeploymentType": "PERSISTENT_2", "PerUnitStorageThroughput": 125,
                              "EfaEnabled": True}}, "replaced"),
], ids=["capacity", "throughput", "deployment type", "efa"])
def test_file_system_changes(edit, kind):
    after = _after(FileSystemFFD87EE1=lambda r: r["Properties"].update(edit))
    assert _kinds(after)["FileSystemFFD87EE1"] == kind


def test_logical_id_of_the_same_role_is_a_replacement():
    """``FileSystemEfa<hash>`` replaces ``FileSystem<hash>`` (``constructs/storage.py``)."""
    def efa(r):
        r.update(copy.deepcopy(BASE["Resources"]["FileSystemFFD87EE1"]))
    after = _after(FileSystemFFD87EE1=None, FileSystemEfa717B2224=efa)
    [change] = [c for c in classify(BASE, after) if c.kind != "unchanged"]
    assert (change.kind, change.logical_id, change.new_logical_id) == (
        "replaced", "FileSystemFFD87EE1", "FileSystemEfa717B2224")
    assert stops_deploy(change)
    assert role("StorageFileSystemEfa717B2224") == role("StorageFileSystemFFD87EE1") == \
        "StorageFileSystem"


def test_removed_and_added_of_other_roles_are_not_paired():
    def other(r):
        r.update(copy.deepcopy(NODEGROUP))
    after = _after(Nodes=None, OtherNodes12345678=other)
    assert _kinds(after) == {"Nodes": "removed", "OtherNodes12345678": "added"}
    removed = next(c for c in classify(BASE, after) if c.logical_id == "Nodes")
    assert stops_deploy(removed) and describe(removed).startswith("deletes node group Nodes")


def test_a_retained_resource_that_leaves_the_template_stops_nothing():
    before = _after(FileSystemFFD87EE1=lambda r: r.update(DeletionPolicy="Retain"))
    after = _after(FileSystemFFD87EE1=None)
    [change] = [c for c in classify(before, after) if c.kind != "unchanged"]
    assert change.kind == "removed" and change.kept and not stops_deploy(change)
    assert "stays in the account" in describe(change)


def test_intrinsic_values_compare_as_json():
    same = _after(Manifest=lambda r: r["Properties"].update(
        Manifest={"Fn::Join": ["", ["[{\"size\":\"", "1200", "\"}]"]]}))
    assert _kinds(same) == {}
    grown = _after(Manifest=lambda r: r["Properties"].update(
        Manifest={"Fn::Join": ["", ["[{\"size\":\"", "2400", "\"}]"]]}))
    [change] = [c for c in classify(BASE, grown) if c.kind != "unchanged"]
    assert change.kind == "updated" and not stops_deploy(change)
    assert describe(change).startswith("re-applies the Kubernetes manifest Manifest")


def test_type_change_is_a_replacement():
    after = _after(Subnet=lambda r: r.update(Type="AWS::EC2::SubnetCidrBlock"))
    assert _kinds(after)["Subnet"] == "replaced"


@pytest.mark.parametrize("policy, kind", [
    (None, "updated"),
    ({"AutoScalingRollingUpdate": {"MaxBatchSize": 1}}, "nodes rolled"),
    ({"AutoScalingReplacingUpdate": {"WillReplace": True}}, "nodes rolled"),
], ids=["no policy", "rolling", "replacing"])
def test_auto_scaling_group_rolls_only_under_an_update_policy(policy, kind):
    group = {"Type": "AWS::AutoScaling::AutoScalingGroup", "Properties": {
        "MaxSize": "1", "MinSize": "0",
        "LaunchTemplate": {"LaunchTemplateId": {"Ref": "LaunchTemplate"},
                           "Version": {"Fn::GetAtt": ["LaunchTemplate", "LatestVersionNumber"]}}}}
    if policy:
        group["UpdatePolicy"] = policy
    before = _after(Group=lambda r: r.update(copy.deepcopy(group)))
    after = _after(Group=lambda r: r.update(copy.deepcopy(group)),
                   LaunchTemplate=lambda r: r["Properties"]["LaunchTemplateData"].update(
                       InstanceType="trn1n.32xlarge"))
    change = next(c for c in classify(before, after) if c.logical_id == "Group")
    assert change.kind == kind
    if kind == "updated":
        assert "running nodes keep their launch template version" in describe(change)


def test_the_classes_of_a_synthesized_change(synth):
    """On a real template: a capacity change of the dev profile updates the file system and
    the claim's manifest, and nothing stops the deploy."""
    from tests.conftest import profile_path

    before = synth(profile_path("dev")).template
    after = synth(profile_path("dev"), **{"fsx.storage_capacity_gib": 2400}).template
    changes = {c.logical_id: c for c in classify(before, after)}
    assert changes["StorageFileSystemFFD87EE1"].kind == "updated"
    assert changes["StorageFileSystemFFD87EE1"].reasons == ("StorageCapacity changed",)
    assert not [c for c in changes.values() if stops_deploy(c)]
    json.dumps([c.__dict__ for c in changes.values()])  # plain data


def test_node_group_properties_that_roll_are_those_of_update_nodegroup_version():
    """``Version``, ``ReleaseVersion`` and ``LaunchTemplate`` are what EKS
    ``UpdateNodegroupVersion`` takes (botocore's EKS model); that call replaces every node
    (EKS user guide, "Understand each phase of node updates")."""
    import botocore.session

    from trn_ultracluster.changes import _NODEGROUP_ROLLERS

    request = botocore.session.get_session().get_service_model("eks").operation_model(
        "UpdateNodegroupVersion").input_shape.members
    cfn_names = {name[0].upper() + name[1:] for name in request}  # version -> Version
    assert set(_NODEGROUP_ROLLERS) == cfn_names - {
        "ClusterName", "NodegroupName", "Force", "ClientRequestToken"}


# --- node group updates CloudFormation refuses ------------------------------------------------
# CloudFormation user guide, AWS::EKS::Nodegroup (callout of
# awsdocs/aws-cloudformation-user-guide#1181): "updates to tags cannot be associated with an
# update ReleaseVersion, Version or LaunchTemplate"; the resource fails with "Version and
# ReleaseVersion updates cannot be combined with other updates" (aws/containers-roadmap#1258,
# eksctl-io/eksctl#2565, aws/aws-cdk#13602 and #16644).


def _nodes(after, before=BASE):
    return next(c for c in classify(before, after) if c.logical_id == "Nodes")


@pytest.mark.parametrize("edit, versions, others", [
    (lambda p: p.update(Version="1.36", Tags={"env": "prod"}), ("Version",), ("Tags",)),
    (lambda p: p.update(ReleaseVersion="1.36.1-20261101",
                        ScalingConfig={"MinSize": 0, "MaxSize": 8, "DesiredSize": 8}),
     ("ReleaseVersion",), ("ScalingConfig",)),
    (lambda p: p.update(Version="1.36", UpdateConfig={"MaxUnavailable": 1,
                                                      "UpdateStrategy": "MINIMAL"},
                        Labels={"a": "b"}), ("Version",), ("Labels", "UpdateConfig")),
], ids=["version+tags", "release+scaling", "version+update config+labels"])
def test_a_version_type_change_with_any_other_is_refused(edit, versions, others):
    change = _nodes(_after(Nodes=lambda r: edit(r["Properties"])))
    assert change.kind == "nodes rolled" and refused_combination(change)
    assert (change.version_changes, change.other_changes) == (versions, others)
    text = describe(change)
    assert text.startswith("cannot update node group Nodes: CloudFormation refuses")
    assert "Version and ReleaseVersion updates cannot be combined with other updates" in text
    assert f"deploy 1: only the configuration change that changes {', '.join(others)}" in text


def test_a_new_launch_template_version_with_a_scaling_change_is_refused():
    """``nodes`` + ``instance_type`` in one deploy: the launch template's new version reaches
    the group (``LatestVersionNumber``) in the same update as its ``ScalingConfig``."""
    after = _after(
        LaunchTemplate=lambda r: r["Properties"]["LaunchTemplateData"].update(
            InstanceType="trn1n.32xlarge"),
        Nodes=lambda r: r["Properties"].update(
            ScalingConfig={"MinSize": 0, "MaxSize": 8, "DesiredSize": 8}))
    change = _nodes(after)
    assert refused_combination(change)
    assert change.version_changes == ("LaunchTemplate",)
    assert change.other_changes == ("ScalingConfig",)


@pytest.mark.parametrize("edit", [
    lambda r: r["Properties"].update(Version="1.36"),
    lambda r: r["Properties"].update(Version="1.36", ReleaseVersion="1.36.1-20261101"),
    lambda r: r["Properties"].update(Tags={"env": "prod"}, UpdateConfig={"MaxUnavailable": 2}),
], ids=["version", "version+release", "config only"])
def test_either_side_alone_is_accepted(edit):
    change = _nodes(_after(Nodes=edit))
    assert not refused_combination(change)
    assert "cannot update" not in describe(change)


def test_other_types_are_never_refused_combinations():
    after = _after(LaunchTemplate=lambda r: r["Properties"]["LaunchTemplateData"].update(
        InstanceType="trn1n.32xlarge"))
    assert not any(refused_combination(c) for c in classify(BASE, after)
                   if c.type != "AWS::EKS::Nodegroup")


# --- FSx claims whose request shrinks ---------------------------------------------------------

def _claim_manifest(storage, name="fsx-lustre"):
    """A PersistentVolume and its claim, as CDK writes them: JSON joined around a ``Ref``."""
    return {"Fn::Join": ["", [
        '[{"apiVersion":"v1","kind":"PersistentVolume","metadata":{"name":"fsx-lustre"},'
        '"spec":{"capacity":{"storage":"2400Gi"},"csi":{"volumeHandle":"',
        {"Ref": "FileSystemFFD87EE1"},
        '"}}},{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"'
        + name + '","namespace":"training"},"spec":{"storageClassName":"",'
        '"volumeName":"fsx-lustre","resources":{"requests":{"storage":"' + storage + '"}}}}]']]}


def _with_claim(storage, name="fsx-lustre"):
    return _after(Manifest=lambda r: r["Properties"].update(
        Manifest=_claim_manifest(storage, name)))


def test_a_shrinking_claim_request_is_found():
    [claim] = shrinking_claims(_with_claim("2400Gi"), _with_claim("1200Gi"))
    assert (claim.logical_id, claim.namespace, claim.name, claim.before, claim.after,
            claim.volume) == ("Manifest", "training", "fsx-lustre", "2400Gi", "1200Gi",
                              "fsx-lustre")


@pytest.mark.parametrize("before, after", [
    (("1200Gi",), ("1200Gi",)), (("1200Gi",), ("2400Gi",)), (("1228800Mi",), ("1200Gi",)),
    (("2400Gi",), ("1200Gi", "fsx-lustre-efa")),  # another claim: created, not updated
], ids=["same", "grows", "same size other unit", "renamed"])
def test_no_shrink(before, after):
    assert shrinking_claims(_with_claim(*before), _with_claim(*after)) == []


@pytest.mark.parametrize("text, size", [
    ("1200Gi", 1200 * 2**30), ("1.5Ti", 1.5 * 2**40), ("1G", 10**9), ("512", 512),
    ("12e3", None), ("lots", None),
])
def test_quantity_bytes(text, size):
    assert quantity_bytes(text) == size


# --- the upgrade from the previous release (commit 8995205) ------------------------------------

def _trainium(changes):
    [group] = [c for c in changes if c.type == "AWS::EKS::Nodegroup" and "Trainium" in
               c.logical_id]
    return group


def test_upgrading_the_default_stack_from_the_previous_release_is_one_deploy(default):
    """On-demand node groups get no ``UpdateConfig`` (node_updates.node_update), so the
    Trainium node group's update has only version-type changes (its new ``Version`` and the
    launch template version without the configuration's tags): CloudFormation takes it."""
    changes = classify(release_template("default"), default.template)
    group = _trainium(changes)
    assert group.kind == "nodes rolled"
    assert (group.version_changes, group.other_changes) == (("Version", "LaunchTemplate"), ())
    assert not [c for c in changes if refused_combination(c)]
    assert shrinking_claims(release_template("default"), default.template) == []


def test_upgrading_a_reserved_stack_from_the_previous_release_takes_two_deploys(synth):
    """trn2 (a Capacity Block): the node group's new ``UpdateConfig`` (``MINIMAL``) comes with
    its new ``Version`` and launch template version: refused, with the two steps; step 1
    (``eks.node_update_config: none``) has only version-type changes, step 2 only the
    ``UpdateConfig``. The claim of the 2400 GiB file system shrinks to 1200Gi."""
    from tests.conftest import profile_path

    old = release_template("trn2")
    step1 = synth(profile_path("trn2"), **{"eks.node_update_config": "none"}).template
    final = synth(profile_path("trn2")).template
    group = _trainium(classify(old, final))
    assert refused_combination(group) and group.other_changes == ("UpdateConfig",)
    text = describe(group)
    assert "deploy 1: -c eks.node_update_config=none" in text
    assert "trn-ultracluster scale --nodes 0" in text
    assert not any(refused_combination(c) for c in classify(old, step1))
    second = _trainium(classify(step1, final))
    assert (second.kind, second.reasons) == ("updated", ("UpdateConfig changed",))
    [claim] = shrinking_claims(old, final)
    assert (claim.name, claim.before, claim.after) == ("fsx-lustre", "2400Gi", "1200Gi")


def _cluster(version):
    return {"Resources": {"Cluster": {"Type": "AWS::EKS::Cluster",
                                      "Properties": {"Version": version}}}}


@pytest.mark.parametrize("before, after, refused", [
    ("1.35", "1.36", None),            # one minor version up: what EKS does
    ("1.35", "1.35", None),
    ("1.34", "1.36", "skips a minor version"),
    ("1.36", "1.35", "goes down"),
    ("1.35", {"Ref": "Version"}, None),  # a token: nothing to compare
])
def test_eks_takes_one_minor_version_up_at_a_time(before, after, refused):
    """EKS user guide, update-cluster: no downgrade; eksctl's cluster-upgrade page: only the
    current version or one higher."""
    found = control_plane_version_refusals(_cluster(before), _cluster(after))
    if refused is None:
        assert found == []
    else:
        (line,) = found
        assert refused in line and "update-cluster.html" in line and "Cluster" in line


def test_a_renamed_team_replaces_its_compute_quota_a_new_quota_updates_it():
    """HyperPod task governance (teams on hyperpod-eks): ``ComputeQuotaTarget.TeamName`` is
    create-only (the vendored table), ``ComputeQuotaConfig`` is not."""
    quota = {"Type": "AWS::SageMaker::ComputeQuota", "Properties": {
        "Name": "research", "ClusterArn": "arn", "ComputeQuotaTarget": {"TeamName": "research"},
        "ComputeQuotaConfig": {"ComputeQuotaResources": [
            {"InstanceType": "ml.trn1.32xlarge", "Count": 2}]}}}
    before = {"Resources": {"Quota": quota}}
    renamed = copy.deepcopy(before)
    renamed["Resources"]["Quota"]["Properties"]["ComputeQuotaTarget"]["TeamName"] = "ml"
    more = copy.deepcopy(before)
    more["Resources"]["Quota"]["Properties"]["ComputeQuotaConfig"]["ComputeQuotaResources"][0][
        "Count"] = 3
    assert [c.kind for c in classify(before, renamed)] == ["replaced"]
    assert [c.kind for c in classify(before, more)] == ["updated"]
