"""``plan``: the deployed template (botocore Stubber answering GetTemplate with a synthesized
template of the "before" configuration; moto for a stack that does not exist) against the
configuration, in words, with the exit code that stops ``make deploy``.

The templates are the change matrix's (tests/test_change_matrix.py): the session's ``synth``
cache holds them, so these tests add no synthesis.
"""

from __future__ import annotations

import json

import boto3
import moto
import pytest
from botocore.stub import Stubber

from tests.cli.helpers import REGION, run
from tests.conftest import REPO_ROOT, profile_path, release_template
from trn_ultracluster.changes import classify
from trn_ultracluster.cli.commands import plan as plan_cmd
from trn_ultracluster.network_plan import new_block_warning

STACK = "TrnUltraCluster"


class _Session:
    """A boto3 session stand-in whose CloudFormation client is stubbed."""

    def __init__(self, client):
        self._client = client

    def client(self, name, **_kwargs):
        assert name == "cloudformation", name
        return self._client


@pytest.fixture
def deployed(monkeypatch):
    """``deployed(template, after)``: GetTemplate answers ``template``; the configuration
    synthesizes to ``after``."""
    from trn_ultracluster.cli import aws

    monkeypatch.chdir(REPO_ROOT)
    stubs = []

    def _deployed(template, after):
        client = boto3.client("cloudformation", region_name=REGION)
        stub = Stubber(client)
        stub.add_response("get_template", {"TemplateBody": json.dumps(template)},
                          {"StackName": STACK, "TemplateStage": "Original"})
        stub.activate()
        stubs.append(stub)
        monkeypatch.setattr(aws, "make_session", lambda region: _Session(client))
        monkeypatch.setattr(plan_cmd, "synthesize", lambda context, repo: after)

    yield _deployed
    for stub in stubs:
        stub.assert_no_pending_responses()


def _dev(synth, **context):
    return synth(profile_path("dev"), **context).template


def test_plan_stops_a_deploy_that_rolls_the_trainium_nodes(synth, deployed, capsys):
    deployed(_dev(synth), _dev(synth, instance_type="trn1n.32xlarge"))
    code, out, err = run(capsys, "plan", "--profile", "profiles/dev.yaml",
                         "-c", "instance_type=trn1n.32xlarge")
    assert code == 1
    assert "  ! rolls every node of node group EksClusterNodegroupTrainiumNodes" in out
    assert "launch template EfaLaunchTemplate6E39CCE1 gets a new version" in out
    assert "plan: stopped" in err and "--allow-replace" in err and "ALLOW_REPLACE=1" in err


def test_allow_replace_prints_the_same_plan_and_goes_on(synth, deployed, capsys):
    deployed(_dev(synth), _dev(synth, instance_type="trn1n.32xlarge"))
    code, out, err = run(capsys, "plan", "--profile", "profiles/dev.yaml", "--allow-replace")
    assert code == 0 and "rolls every node of node group" in out
    assert "going on (--allow-replace)" in out and err == ""


def test_plan_says_the_file_system_is_replaced(synth, deployed, capsys):
    profile = profile_path("ultracluster-128")
    deployed(synth(profile).template, synth(profile, **{"fsx.efa": False}).template)
    code, out, _ = run(capsys, "plan", "--profile", "profiles/ultracluster-128.yaml",
                       "-c", "fsx.efa=false")
    assert code == 1
    assert "  ! replaces the file system StorageFileSystemEfa" in out
    assert "data not exported to S3 is lost" in out


def test_plan_lets_a_file_system_grow(synth, deployed, capsys):
    deployed(_dev(synth), _dev(synth, **{"fsx.storage_capacity_gib": 2400}))
    code, out, _ = run(capsys, "plan", "--profile", "profiles/dev.yaml")
    assert code == 0
    assert "plan: nothing is replaced and no node rolls" in out
    assert "!" not in out
    # the claim's manifest runs its handler's Update: said by name
    assert "custom resources that run their Update (a failed one fails the deploy):" in out
    assert "  ~ re-applies the Kubernetes manifest EksClustermanifestFsxVolume" in out


@moto.mock_aws
def test_plan_of_a_stack_not_yet_deployed_exits_0(monkeypatch, capsys):
    monkeypatch.chdir(REPO_ROOT)
    monkeypatch.setattr(plan_cmd, "synthesize",
                        lambda *a: pytest.fail("no synthesis without a deployed stack"))
    code, out, _ = run(capsys, "plan", "--profile", "profiles/dev.yaml")
    assert code == 0
    assert out == f"plan: stack {STACK} does not exist in {REGION}: the deploy creates it\n"


def test_plan_refuses_an_outputs_file_and_another_region(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(REPO_ROOT)
    code, _, err = run(capsys, "plan", "--outputs-file", str(tmp_path / "o.json"))
    assert code == 2 and "--outputs-file has no meaning here" in err
    code, _, err = run(capsys, "plan", "--profile", "profiles/dev.yaml", "--region", "us-east-1")
    assert code == 2 and "--region us-east-1 is not the configuration's Region us-west-2" in err


def test_a_new_cidr_block_on_an_eks_stack_says_the_hour(synth):
    """EKS user guide, network requirements: a block associated with the VPC can take up to
    one hour to be recognized by the cluster."""
    before = _dev(synth)
    after = json.loads(json.dumps(before))
    after["Resources"]["NetworkBlock10x1x0x0x16ABCDEF12"] = {
        "Type": "AWS::EC2::VPCCidrBlock",
        "Properties": {"CidrBlock": "10.1.0.0/16", "VpcId": {"Ref": "NetworkVpc7FB7348F"}}}
    text, stops = plan_cmd.format_plan(STACK, classify(before, after), after)
    assert not stops
    assert f"note: {new_block_warning(['10.1.0.0/16'])}" in text
    assert "10.1.0.0/16" in text and "up to one hour" in text
    # without an EKS cluster, no note
    for key, resource in list(after["Resources"].items()):
        if resource["Type"] == "AWS::EKS::Cluster":
            del after["Resources"][key]
    assert "note:" not in plan_cmd.format_plan(STACK, classify(before, after), after)[0]


def test_deployed_template_reads_a_json_text_body():
    client = boto3.client("cloudformation", region_name=REGION)
    with Stubber(client) as stub:
        stub.add_response("get_template", {"TemplateBody": '{"Resources": {}}'},
                          {"StackName": STACK, "TemplateStage": "Original"})
        assert plan_cmd.deployed_template(_Session(client), STACK) == {"Resources": {}}


def _deploy_recipe() -> str:
    return (REPO_ROOT / "Makefile").read_text().split("\ndeploy:", 1)[1].split("\n\n", 1)[0]


def test_make_deploy_runs_plan_first_and_allow_replace_passes_the_flag():
    recipe = _deploy_recipe()
    plan_at, cdk_at = recipe.index("-m trn_ultracluster plan"), recipe.index("$(CDK) deploy")
    assert plan_at < cdk_at
    assert "$(CDK_CONTEXT)" in recipe[plan_at:cdk_at]
    assert "-c eks.deployer_principal_arn=" in recipe[plan_at:cdk_at], (
        "plan must synthesize what cdk deploy deploys (the deployer's access entry)")
    assert "--allow-replace" in recipe and "ALLOW_REPLACE" in recipe
    assert "ALLOW_FSX_REPLACE" in recipe, "the old name keeps working"


def test_plan_compares_a_given_template_without_synthesizing(synth, deployed, capsys,
                                                             tmp_path, monkeypatch):
    after = _dev(synth, instance_type="trn1n.32xlarge")
    deployed(_dev(synth), after)
    (tmp_path / "t.json").write_text(json.dumps(after))
    monkeypatch.setattr(plan_cmd, "synthesize", lambda *a: pytest.fail("--template: no synthesis"))
    code, out, err = run(capsys, "plan", "--profile", "profiles/dev.yaml",
                         "--template", str(tmp_path / "t.json"))
    assert code == 1 and "rolls every node of node group" in out
    assert "--profile and -c only name the stack and its Region here" in err


@pytest.mark.parametrize("text, says", [
    ("[1, 2]", "not a CloudFormation template"),
    ("{}", "not a CloudFormation template"),
    ('{"Resources": []}', "not a CloudFormation template"),
    ("{not json", "Expecting property name"),
])
def test_a_bad_template_is_refused_before_any_aws_call(text, says, capsys, tmp_path,
                                                         monkeypatch):
    from trn_ultracluster.cli import aws

    monkeypatch.chdir(REPO_ROOT)
    monkeypatch.setattr(aws, "make_session", lambda region: pytest.fail("no AWS call"))
    (tmp_path / "t.json").write_text(text)
    code, _, err = run(capsys, "plan", "--template", str(tmp_path / "t.json"))
    assert code == 2 and says in err and "cdk.out/<stack>.template.json" in err
    code, _, err = run(capsys, "plan", "--template", str(tmp_path / "missing.json"))
    assert code == 2 and "No such file" in err


def test_the_cdk_cli_s_metadata_resource_is_not_a_change(synth, deployed, capsys):
    """``cdk deploy`` adds ``AWS::CDK::Metadata``; the in-process synth has none."""
    before = json.loads(json.dumps(_dev(synth)))
    before["Resources"]["CDKMetadata"] = {"Type": "AWS::CDK::Metadata",
                                          "Properties": {"Analytics": "v2:deflate64:x"}}
    deployed(before, _dev(synth))
    code, out, _ = run(capsys, "plan", "--profile", "profiles/dev.yaml")
    assert code == 0 and "CDKMetadata" not in out and "removed" not in out


def test_plan_synthesizes_what_the_deploy_deploys(synth, monkeypatch, capsys):
    """The whole path, synthesis included (one synthesis): the dev profile deployed and
    unchanged gives a plan with every resource unchanged."""
    from trn_ultracluster.cli import aws

    monkeypatch.chdir(REPO_ROOT)
    client = boto3.client("cloudformation", region_name=REGION)
    with Stubber(client) as stub:
        stub.add_response("get_template", {"TemplateBody": json.dumps(_dev(synth))},
                          {"StackName": STACK, "TemplateStage": "Original"})
        monkeypatch.setattr(aws, "make_session", lambda region: _Session(client))
        code, out, _ = run(capsys, "plan", "--profile", "profiles/dev.yaml")
    assert code == 0, out
    resources = len(_dev(synth)["Resources"])
    assert f"resources: {resources} unchanged\n" in out


# --- deploys that cannot succeed as they are: the upgrade from the previous release ------------

def test_plan_refuses_a_node_group_update_cloudformation_refuses_even_when_allowed(
        synth, deployed, capsys):
    """trn2 of the previous release (8995205) to today's: the Capacity Block node group would
    get its new ``UpdateConfig`` with its new ``Version`` and launch template version, which
    CloudFormation refuses ("Version and ReleaseVersion updates cannot be combined with other
    updates"): exit 1 even with --allow-replace, and the two steps."""
    deployed(release_template("trn2"), synth(profile_path("trn2")).template)
    code, out, err = run(capsys, "plan", "--profile", "profiles/trn2.yaml", "--allow-replace")
    assert code == 1
    assert "CloudFormation would refuse the deploy (whatever --allow-replace says):" in out
    assert "  x cannot update node group EksClusterNodegroupTrainiumNodes" in out
    assert "Split it: deploy 1: -c eks.node_update_config=none" in out
    assert "--allow-replace cannot change that" in err and "going on" not in out


def test_plan_stops_for_a_shrinking_claim_with_the_migration_steps(synth, deployed, capsys):
    """Step 1 of that upgrade (``eks.node_update_config: none``): nothing CloudFormation
    refuses, but the claim of the 2400 GiB file system would shrink to 1200Gi: the plan stops
    with the README's steps; --allow-replace goes on (after the steps, the deploy succeeds)."""
    step1 = synth(profile_path("trn2"), **{"eks.node_update_config": "none"}).template
    deployed(release_template("trn2"), step1)
    code, out, _ = run(capsys, "plan", "--profile", "profiles/trn2.yaml",
                       "-c", "eks.node_update_config=none")
    assert code == 1 and "  x " not in out
    assert ("  ! lowers the storage request of the claim training/fsx-lustre (manifest "
            "EksClustermanifestFsxVolume") in out
    assert "from 2400Gi to 1200Gi" in out
    assert "kubectl delete pvc fsx-lustre -n training && kubectl patch pv fsx-lustre" in out
    deployed(release_template("trn2"), step1)
    code, out, _ = run(capsys, "plan", "--profile", "profiles/trn2.yaml", "--allow-replace")
    assert code == 0 and "going on (--allow-replace)" in out


def test_plan_of_the_default_upgrade_is_a_roll_it_can_allow(default, deployed, capsys):
    """The default stack of the previous release: its Trainium nodes roll once (new Version
    and launch template version), nothing is refused, no claim shrinks."""
    deployed(release_template("default"), default.template)
    code, out, _ = run(capsys, "plan", "--allow-replace")
    assert code == 0
    assert "  ! rolls every node of node group EksClusterNodegroupTrainiumNodes" in out
    assert "  x " not in out and "lowers the storage request" not in out


def test_plan_refuses_a_kubernetes_version_skip_even_when_allowed(synth, deployed, capsys):
    before = json.loads(json.dumps(_dev(synth)))
    cluster = next(r for r in before["Resources"].values() if r["Type"] == "AWS::EKS::Cluster")
    cluster["Properties"]["Version"] = "1.34"   # the configuration says 1.36
    deployed(before, _dev(synth))
    code, out, err = run(capsys, "plan", "--profile", "profiles/dev.yaml", "--allow-replace")
    assert code == 1 and "x EKS cluster" in out and "1.34 -> 1.36 skips a minor version" in out
    assert "CloudFormation would refuse the updates listed with 'x'" in err
