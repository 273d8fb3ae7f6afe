"""The whole stack for every profile: outputs, CloudFormation limits, cfn-lint, cdk-nag."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import aws_cdk as cdk
import pytest
from aws_cdk import aws_s3 as s3
from cdk_nag import AwsSolutionsChecks

from tests.conftest import PROFILES
from trn_ultracluster.outputs import EKS_KEYS, FOUNDATION_KEYS, HYPERPOD_KEYS
from trn_ultracluster.summary import CFN_RESOURCE_LIMIT, CFN_TEMPLATE_LIMIT_BYTES

CONFIGS = [None, *PROFILES]
IDS = ["default", *(p.stem for p in PROFILES)]

CFN_LINT_IGNORED = {
    # CDK itself emits a DependsOn on a Lambda's role that the Fn::GetAtt of the role already
    # implies (custom resource providers of aws-cdk-lib and cdk-ecr-deployment).
    "W3005": "redundant DependsOn emitted by CDK's own custom resource providers",
}


@pytest.fixture(scope="module", params=CONFIGS, ids=IDS)
def each(request, synth):
    return synth(request.param)


def test_every_foundation_output_and_only_its_orchestrators(each):
    outputs = set(each.template["Outputs"])
    assert {k.value for k in FOUNDATION_KEYS} <= outputs
    other = HYPERPOD_KEYS if each.config.orchestrator == "eks" else EKS_KEYS
    assert not outputs & {k.value for k in other}
    assert each.output("InstanceType") == each.config.instance_type
    assert each.output("NodeCountMax") == str(each.config.nodes.max)
    assert each.output("Orchestrator") == each.config.orchestrator
    assert each.output("Region") == each.config.region


def test_under_cloudformation_limits(each):
    body = json.dumps(each.template, indent=1)  # how CDK writes it
    assert len(body.encode()) < CFN_TEMPLATE_LIMIT_BYTES
    assert len(each.template["Resources"]) < CFN_RESOURCE_LIMIT


def test_cfn_lint_clean_on_every_profile(synth, tmp_path):
    failures = []
    for config, name in zip(CONFIGS, IDS):
        s = synth(config)
        path = tmp_path / f"{name}.template.json"
        path.write_text(json.dumps(s.template))
        result = subprocess.run(
            [str(Path(sys.executable).parent / "cfn-lint"), "--regions", s.config.region,
             "--ignore-checks", *CFN_LINT_IGNORED, "--", str(path)],
            capture_output=True, text=True, timeout=600)
        if result.returncode != 0:
            failures.append(f"{name}: {result.stdout[:3000]}{result.stderr[:1000]}")
    assert not failures, "\n".join(failures)


NAG_FINDING = re.compile(r"^(Annotation::)?AwsSolutions-[A-Z]+[0-9]+(\[.+\])?$")


def nag_acknowledgments(stack) -> list[tuple[str, str, str]]:
    """(construct path, finding id, reason) of every cdk-nag acknowledgment in ``stack``."""
    found = []
    for construct in stack.node.find_all():
        for entry in construct.node.metadata:
            if entry.type == cdk.Validations.ACKNOWLEDGED_RULES_METADATA_KEY:
                found += [(construct.node.path, rule, reason) for rule, reason in entry.data.items()
                          if "AwsSolutions" in rule]
    return found


def test_every_acknowledgment_is_one_finding_on_a_narrow_construct_with_a_reason(each):
    acks = nag_acknowledgments(each.stack)
    assert acks, "expected the ECR copy function's acknowledgments at least"
    for path, rule, reason in acks:
        assert NAG_FINDING.match(rule), f"{rule} on {path} is not one finding id"
        assert path.count("/") >= 2, f"{rule} acknowledged on {path}, too wide"
        assert len(reason) >= 40, f"{rule} on {path}: reason too short to review"


def test_an_unacknowledged_finding_fails_synth(tmp_path):
    app = cdk.App(outdir=str(tmp_path))
    stack = cdk.Stack(app, "Bad")
    s3.Bucket(stack, "NoSslNoLogs")
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks())
    with pytest.raises(Exception, match="(?i)validation"):
        app.synth()
