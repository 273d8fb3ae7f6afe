"""The whole stack for every profile: outputs, CloudFormation limits, cfn-lint, checkov, cdk-nag
(the cfn-lint and checkov runs of some in `make test-matrix`: ``LINTED_IN_MATRIX``)."""

from __future__ import annotations

import json
import re
import subprocess

import aws_cdk as cdk
import pytest
from aws_cdk import aws_s3 as s3
from cdk_nag import AwsSolutionsChecks

from tests.cfn_lint import cfn_lint
from tests.conftest import REPO_ROOT, Synth
from tests.stacks.conftest import CONFIGS, IDS, LINT_PARAMS, LINTED_IN_MATRIX, synth_config
from trn_ultracluster.contracts.outputs import FOUNDATION_KEYS, OutputKey
from trn_ultracluster.summary import CFN_RESOURCE_LIMIT, CFN_TEMPLATE_LIMIT_BYTES


def test_every_foundation_output_and_only_its_orchestrators(each):
    from trn_ultracluster.contracts.orchestrators import ORCHESTRATORS

    outputs = set(each.template["Outputs"])
    own = ORCHESTRATORS[each.config.orchestrator].output_keys
    optional = (OutputKey.TEAMS,) if each.config.teams else ()  # Teams only with teams
    assert outputs == {k.value for k in FOUNDATION_KEYS + own + optional}  # and no other's
    assert each.output("InstanceType") == each.config.instance_type
    assert each.output("NodeCountMax") == str(each.config.nodes.max)
    assert each.output("Orchestrator") == each.config.orchestrator
    assert each.output("Region") == each.config.region


def test_under_cloudformation_limits(each):
    body = json.dumps(each.template, indent=1)  # how CDK writes it
    assert len(body.encode()) < CFN_TEMPLATE_LIMIT_BYTES
    assert len(each.template["Resources"]) < CFN_RESOURCE_LIMIT


def _cfn_lint_lists(instance_type: str, region: str) -> bool:
    """Whether cfn-lint's bundled per-Region EC2 instance types (``E3628``'s data, built from
    AWS pricing data) list ``instance_type`` in ``region``."""
    from importlib.resources import files

    path = files("cfnlint") / "data/schemas/extensions/aws_ec2_instance/instancetype_enum.json"
    return instance_type in json.loads(path.read_text()).get(region, {}).get("enum", ())


def _stale_region_list(finding: dict, config) -> bool:
    """An ``E3628`` finding on the Trainium type alone, where cfn-lint's list lacks the type
    but the catalog saw it offered in the compute AZ: cfn-lint 1.58.0 lists trn2.3xlarge in no
    Region, while DescribeInstanceTypeOfferings (catalog ``offerings-moto``) has it in
    sa-east-1 and ap-southeast-4."""
    return (finding["Rule"]["Id"] == "E3628"
            and finding["Message"].startswith(f"'{config.instance_type}' is not one of")
            and not _cfn_lint_lists(config.instance_type, config.region)
            and config.az_ids[0] in config.instance.az_ids_seen)


@pytest.mark.parametrize("config", LINT_PARAMS)
def test_cfn_lint_clean(synth, config):
    """cfn-lint on each configuration's template (one test per configuration, so that
    pytest-xdist workers share them)."""
    s = synth_config(synth, config)
    findings = [f for f in cfn_lint(s.template, s.config.region)
                if not _stale_region_list(f, s.config)]
    assert not findings, json.dumps(findings)[:3000]


def test_cfn_lint_finds_a_broken_template(default):
    """The in-process lint is alive: an unknown property and a DependsOn on a resource that
    does not exist are found (E3002, E3005)."""
    broken = json.loads(json.dumps(default.template))
    name = next(k for k, r in broken["Resources"].items() if r["Type"] == "AWS::EC2::VPC")
    broken["Resources"][name]["Properties"]["NoSuchProperty"] = 1
    broken["Resources"][name]["DependsOn"] = "NoSuchResource"
    assert {f["Rule"]["Id"] for f in cfn_lint(broken, default.config.region)} >= {"E3002",
                                                                                    "E3005"}


def test_only_a_region_list_without_the_type_is_excused():
    """The E3628 excuse holds for trn2.3xlarge in sa-east-1 only while cfn-lint lacks it there,
    never for a type cfn-lint lists (trn2.48xlarge in us-east-2)."""
    from tests.config import load

    finding = {"Rule": {"Id": "E3628"}, "Message": "'trn2.3xlarge' is not one of ['c1.medium']"}
    one_chip = load({"instance_type": "trn2.3xlarge", "az_ids": "sae1-az1,sae1-az2"}).config
    assert _stale_region_list(finding, one_chip) is not _cfn_lint_lists("trn2.3xlarge", "sa-east-1")
    trn2 = load({"instance_type": "trn2.48xlarge", "az_ids": "use2-az1,use2-az2"}).config
    assert not _stale_region_list({**finding, "Message": "'trn2.48xlarge' is not one of []"}, trn2)


CHECKOV = REPO_ROOT / ".venv-checkov" / "bin" / "checkov"


CHECKOV_RUNS = {"profiles": 2, "matrix": 3}
"""checkov runs per tier: the default and the profiles `make test` lints in two, the
:data:`LINTED_IN_MATRIX` configurations in three (one run per configuration would pay checkov's
start-up, about 4 s, each time; one run for all would keep one pytest-xdist worker busy
alone)."""


def checkov_batch(tier: str, n: int) -> list[tuple]:
    """(configuration, id) of run ``n`` of ``tier`` (:data:`CHECKOV_RUNS`)."""
    chosen = [(c, i) for c, i in zip(CONFIGS, IDS)
              if (i in LINTED_IN_MATRIX) == (tier == "matrix")]
    return chosen[n::CHECKOV_RUNS[tier]]


def test_the_lint_tiers_name_real_configurations():
    assert LINTED_IN_MATRIX <= set(IDS)


def test_every_configuration_is_in_one_checkov_batch():
    assert sorted(i for tier, runs in CHECKOV_RUNS.items() for n in range(runs)
                  for _, i in checkov_batch(tier, n)) == sorted(IDS)


@pytest.mark.parametrize("tier, n", [
    pytest.param(tier, n, id=f"{tier}-{n + 1}",
                 marks=(pytest.mark.matrix,) if tier == "matrix" else ())
    for tier, runs in CHECKOV_RUNS.items() for n in range(runs)])
def test_checkov_finds_nothing_and_every_skip_is_one_resource_with_a_reason(synth, tmp_path,
                                                                           tier, n):
    """checkov (its own venv, set up by `make test`) on the template of every configuration
    (each in one run of one tier: :func:`checkov_batch`):
    zero failures; skips are read from each resource's Metadata, so plain checkov on a
    synthesized template gives the same result."""
    assert CHECKOV.is_file(), f"{CHECKOV} is missing: run `make setup-dev` (make test does)"
    chosen = checkov_batch(tier, n)
    for config, name in chosen:
        (tmp_path / f"{name}.template.json").write_text(
            json.dumps(synth_config(synth, config).template))
    # --compact: without it the JSON report carries every resource's code block for each of
    # its checks (267 MB for five templates), and writing and reading that took most of the
    # run; --skip-download: nothing is fetched from Prisma Cloud (CI may be offline).
    done = subprocess.run([str(CHECKOV), "-d", str(tmp_path), "--framework", "cloudformation",
                           "-o", "json", "--compact", "--skip-download"],
                          capture_output=True, text=True, timeout=900)
    assert done.returncode in (0, 1), done.stderr[-2000:]
    report = json.loads(done.stdout)
    report = report[0] if isinstance(report, list) else report
    assert report["summary"]["parsing_errors"] == 0
    assert report["summary"]["resource_count"] > 0
    failed = [(c["file_path"], c["check_id"], c["resource"])
              for c in report["results"]["failed_checks"]]
    assert not failed, failed
    for check in report["results"]["skipped_checks"]:
        assert len(check["check_result"].get("suppress_comment", "")) >= 40, check["resource"]
    assert report["summary"]["passed"] > 0


NAG_FINDING = re.compile(r"^(Annotation::)?AwsSolutions-[A-Z]+[0-9]+(\[.+\])?$")


def nag_acknowledgments(s: Synth) -> list[tuple[str, str, str]]:
    """(construct path, finding id, reason) of every cdk-nag acknowledgment of ``s``'s stack,
    from its cloud assembly: the metadata the synth wrote for each construct path (inline in
    ``manifest.json`` or in the stack's ``additionalMetadataFile``), so the test needs no
    CDK objects of its own."""
    artifact = json.loads((s.outdir / "manifest.json").read_text())["artifacts"][
        s.config.stack_name]
    metadata = dict(artifact.get("metadata", {}))
    if "additionalMetadataFile" in artifact:
        metadata.update(json.loads((s.outdir / artifact["additionalMetadataFile"]).read_text()))
    return [(path.lstrip("/"), rule, reason)
            for path, entries in metadata.items() for entry in entries
            if entry["type"] == cdk.Validations.ACKNOWLEDGED_RULES_METADATA_KEY
            for rule, reason in entry["data"].items() if "AwsSolutions" in rule]


def test_every_acknowledgment_is_one_finding_on_a_narrow_construct_with_a_reason(each):
    acks = nag_acknowledgments(each)
    assert acks, "expected the ECR copy function's acknowledgments at least"
    for path, rule, reason in acks:
        assert NAG_FINDING.match(rule), f"{rule} on {path} is not one finding id"
        assert path.count("/") >= 2, f"{rule} acknowledged on {path}, too wide"
        assert len(reason) >= 40, f"{rule} on {path}: reason too short to review"


@pytest.mark.parametrize("profile", [None, "ultracluster-16", "hyperpod-eks", "single-node"],
                         ids=["eks", "hyperpod", "hyperpod-eks", "standalone"])
def test_every_acknowledgment_names_a_finding_that_exists(tmp_path, monkeypatch, profile):
    """Synthesize with every acknowledgment recorded instead of applied: each must match a
    cdk-nag finding on its construct or below, or it only misleads a reviewer."""
    from tests.conftest import cdk_json_context, profile_path
    from trn_ultracluster.app import build_app

    recorded = []
    real_of = cdk.Validations.of

    class Recorder:
        def __init__(self, scope):
            self.scope, self.real = scope, real_of(scope)

        def acknowledge(self, *acks):
            recorded.extend((self.scope.node.path, a.id) for a in acks)

        def add_plugins(self, *plugins):
            self.real.add_plugins(*plugins)

    monkeypatch.setattr(cdk.Validations, "of", staticmethod(Recorder))
    context = cdk_json_context()
    if profile:
        context["config"] = str(profile_path(profile))
    app, _, _ = build_app(context, outdir=str(tmp_path), base_dir=REPO_ROOT)
    with pytest.raises(Exception):
        app.synth()  # the findings are no longer acknowledged
    report = json.loads((tmp_path / "validation-report.json").read_text())
    found = [(v["ruleName"], c["constructPath"]) for plugin in report["pluginReports"]
             for v in plugin["violations"] for c in v["violatingConstructs"]]
    nag = [(path, finding) for path, finding in recorded if finding.startswith("AwsSolutions")]
    assert len(nag) > 20
    for path, finding in nag:
        assert any(rule == finding and (where == path or where.startswith(path + "/"))
                   for rule, where in found), f"{finding} acknowledged on {path}: no such finding"


def test_an_unacknowledged_finding_fails_synth(tmp_path):
    app = cdk.App(outdir=str(tmp_path))
    stack = cdk.Stack(app, "Bad")
    s3.Bucket(stack, "NoSslNoLogs")
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks())
    with pytest.raises(Exception, match="(?i)validation"):
        app.synth()


# --- what cdk destroy keeps ------------------------------------------------------------------

KEPT = ("Retain", "RetainExceptOnCreate")


def _kept(template) -> set[str]:
    return {k for k, r in template["Resources"].items() if r.get("DeletionPolicy") in KEPT}


def _deleted_network(template, name: str) -> set[str]:
    """Network resources (VPC, subnets, security groups, ... all of AWS::EC2::) that ``name``
    needs, directly or through others, and that cdk destroy deletes."""
    from trn_ultracluster.template_graph import transitive_dependencies

    kept = _kept(template)
    return {d for d in transitive_dependencies(template, name, holding_only=True) - kept
            if template["Resources"][d]["Type"].startswith("AWS::EC2::")}


def test_nothing_kept_on_destroy_depends_on_a_deleted_network_resource(each):
    """A kept resource that needs the VPC's subnet or a security group (the file system, say)
    holds them in use: CloudFormation cannot delete them and ends DELETE_FAILED. (Kept log
    groups name the deleted functions whose logs they hold; names hold nothing.)"""
    for name in sorted(_kept(each.template)):
        needs = _deleted_network(each.template, name)
        assert not needs, f"{name} is kept but needs {sorted(needs)}, which are deleted"


def _functions_in_the_vpc(template) -> dict[str, dict]:
    return {k: r for k, r in template["Resources"].items()
            if r["Type"] == "AWS::Lambda::Function" and "VpcConfig" in r["Properties"]}


def test_no_function_in_the_vpc_without_a_documented_reason(each):
    """A VPC function's network interfaces outlive it by up to 20 minutes (Lambda developer
    guide, "Giving Lambda functions access to resources in an Amazon VPC") and hold the
    subnets and security groups that cdk destroy deletes after it (aws/aws-cdk #18650,
    go-to-k/delstack #637): each one in the VPC says why in its metadata, and docs/deploy.md
    ("A private EKS endpoint") says what to expect."""
    from trn_ultracluster.nag import IN_VPC_REASON
    from trn_ultracluster.template_graph import transitive_dependencies

    deploy_doc = (REPO_ROOT / "docs" / "deploy.md").read_text()
    for name, function in _functions_in_the_vpc(each.template).items():
        # its deletion precedes that of its subnets: it depends on them
        subnets = {d for d in transitive_dependencies(each.template, name)
                   if each.template["Resources"][d]["Type"] == "AWS::EC2::Subnet"}
        assert subnets, f"{name} is in the VPC but depends on no subnet of the stack"
        reason = function.get("Metadata", {}).get(IN_VPC_REASON)
        assert reason, f"{name} runs in the VPC without {IN_VPC_REASON} metadata"
        assert "docs/deploy.md#a-private-eks-endpoint" in reason
    assert "\n## A private EKS endpoint\n" in deploy_doc


@pytest.mark.parametrize("context, in_vpc", [
    ({}, False),  # public endpoint open to every address: the default
    ({"eks.public_access_cidrs": "203.0.113.0/24"}, True),
    ({"eks.endpoint_access": "private"}, True),
    ({"orchestrator": "hyperpod-eks", "eks.endpoint_access": "private"}, True),
])
def test_kubectl_functions_leave_the_vpc_when_the_public_endpoint_lets_them(synth, context, in_vpc):
    from trn_ultracluster.nag import IN_VPC_REASON

    template = synth(**context).template
    kubectl = {k: r for k, r in template["Resources"].items()
               if r["Type"] == "AWS::Lambda::Function" and "KubectlProvider" in k}
    assert len(kubectl) == 2  # the handler and the provider framework's onEvent
    for name, function in kubectl.items():
        assert ("VpcConfig" in function["Properties"]) is in_vpc, name
        reason = function.get("Metadata", {}).get(IN_VPC_REASON)
        assert (reason is not None) is in_vpc, name
        if in_vpc:  # the reason the retention test above asks of every in-VPC function
            assert "docs/deploy.md#a-private-eks-endpoint" in reason
    # no other function of the stack is in the VPC
    assert set(_functions_in_the_vpc(template)) == (set(kubectl) if in_vpc else set())


def test_retain_keeps_only_data_logs_and_keys(each):
    types = {each.template["Resources"][k]["Type"] for k in _kept(each.template)}
    if each.config.data_removal_policy == "retain":
        assert types == {"AWS::S3::Bucket", "AWS::Logs::LogGroup", "AWS::KMS::Key"}
    else:
        assert types == set(), "data_removal_policy: destroy must leave nothing behind"


def test_the_closure_check_catches_a_kept_resource_in_the_vpc(default):
    template = json.loads(json.dumps(default.template))
    fsx = default.ref_id("StorageFileSystem")
    template["Resources"][fsx]["DeletionPolicy"] = "Retain"  # the old design
    needs = _deleted_network(template, fsx)
    assert {default.ref_id("NetworkVpc"), default.ref_id("StorageFsxSecurityGroup")} <= needs


def test_every_log_group_is_encrypted_expires_and_follows_the_data_policy(each):
    key = {"Fn::GetAtt": [each.ref_id("LogsKey"), "Arn"]}
    groups = each.resources("AWS::Logs::LogGroup")
    assert groups
    policy = "Retain" if each.config.data_removal_policy == "retain" else "Delete"
    for name, group in groups.items():
        props = group["Properties"]
        assert props["KmsKeyId"] == key, name
        assert props["RetentionInDays"] > 0, name
        if "LogGroup" not in name:  # ours; "<function>LogGroup" ones are libraries' (2 years)
            assert props["RetentionInDays"] == 30, name
        assert group["DeletionPolicy"] == policy, name
