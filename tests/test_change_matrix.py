"""What a change of the configuration does to a running cluster (issue 29, item 6).

Each row of :data:`trn_ultracluster.change_matrix.ROWS` is synthesized before and after and
every resource classified (:func:`trn_ultracluster.changes.classify`); the classes must be
the row's (the same data renders the docs table, docs/changes.md, checked below).
"""

from __future__ import annotations

import json
import re

import pytest

from tests.conftest import REPO_ROOT, profile_path
from trn_ultracluster.change_matrix import ROWS, SEVERITY, ChangeRow, markdown_table, role_of
from trn_ultracluster.changes import (
    classify,
    describe,
    refused_combination,
    shrinking_claims,
    stops_deploy,
)

def _templates(synth, row: ChangeRow) -> tuple[dict, dict]:
    profile = profile_path(row.base)
    return (synth(profile, **row.before).template, synth(profile, **row.after).template)


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r.id)
def test_change_does_what_the_table_says(synth, row):
    before, after = _templates(synth, row)
    changes = classify(before, after)
    resources = {**before["Resources"], **after["Resources"]}
    worst: dict[str, str] = {}
    # every row is one deploy CloudFormation and Kubernetes accept (changes.refused_combination)
    problems = [describe(c) for c in changes if refused_combination(c)]
    problems += [f"claim {c.name} shrinks {c.before} -> {c.after}"
                 for c in shrinking_claims(before, after)]
    for change in changes:
        resource = resources.get(change.new_logical_id or change.logical_id,
                                 resources[change.logical_id])
        role = role_of(change.type, resource)
        if role in row.expected:
            if SEVERITY.index(change.kind) > SEVERITY.index(worst.get(role, "unchanged")):
                worst[role] = change.kind
        elif stops_deploy(change):
            problems.append(f"{role or change.type}: {describe(change)}")
    for role, kind in row.expected.items():
        assert any(role_of(r["Type"], r) == role for r in resources.values()), (
            f"{row.id}: no resource of role {role!r} in the template")
        if worst.get(role, "unchanged") != kind:
            found = [describe(c) for c in changes
                     if role_of(c.type, resources.get(c.logical_id) or
                                resources[c.new_logical_id]) == role and c.kind != "unchanged"]
            problems.append(f"{role}: expected {kind}, got {worst.get(role, 'unchanged')}"
                            + (f" ({'; '.join(found)})" if found else ""))
    assert not problems, f"{row.id}:\n  " + "\n  ".join(problems)


_REQUEST = re.compile(r'requests\\":\{\\"storage\\":\\"(\d+)Gi')


def _claim_requests(template: dict) -> list[str]:
    """Storage requests of the FSx claims in the template's Kubernetes manifests."""
    return [m for r in template["Resources"].values()
            if r["Type"] == "Custom::AWSCDK-EKS-KubernetesResource"
            for m in _REQUEST.findall(json.dumps(r.get("Properties", {})))]


@pytest.mark.parametrize("row", [r for r in ROWS if r.key == "fsx.storage_capacity_gib"
                                 and r.orchestrator in ("eks", "hyperpod-eks")], ids=lambda r: r.id)
def test_growing_the_file_system_keeps_the_claim(synth, row):
    """Kubernetes refuses to resize a claim that was not dynamically provisioned
    (``storageClassName: ""``): its request must not follow the capacity."""
    before, after = _templates(synth, row)
    assert _claim_requests(before), "no FSx claim found in the manifests"
    assert _claim_requests(after) == _claim_requests(before)


def test_claim_request_pattern_reads_a_claim():
    manifest = json.dumps({"Manifest": json.dumps(
        [{"kind": "PersistentVolumeClaim", "spec": {"resources": {"requests":
                                                                  {"storage": "1200Gi"}}}}],
        separators=(",", ":"))})
    template = {"Resources": {"M": {"Type": "Custom::AWSCDK-EKS-KubernetesResource",
                                    "Properties": json.loads(manifest)}}}
    assert _claim_requests(template) == ["1200"]


def test_rows_are_unique_and_cover_the_keys_users_change():
    ids = [r.id for r in ROWS]
    assert len(ids) == len(set(ids))
    keys = {r.key for r in ROWS}
    assert {"nodes", "instance_type", "efa_interface_layout", "tags", "root_volume_gib",
            "fsx.storage_capacity_gib", "fsx.per_unit_storage_throughput",
            "fsx.deployment_type", "fsx.efa", "eks.kubernetes_version",
            "eks.control_plane_tier", "observability.idle_hours",
            "training_image.build"} <= keys


def test_only_changes_whose_purpose_it_is_roll_nodes_or_replace():
    """The rule of issue 29 item 6, on the table itself."""
    may_roll = {"instance_type", "efa_interface_layout", "root_volume_gib",
                "eks.kubernetes_version"}
    may_replace_data = {"fsx.deployment_type", "fsx.efa"}
    for row in ROWS:
        kinds = set(row.expected.values())
        if "nodes rolled" in kinds:
            assert row.key in may_roll, row.id
        if "replaced" in kinds:
            assert row.key in may_replace_data, row.id
            assert row.expected.get("file system") == "replaced", row.id


def test_docs_table_is_the_matrix():
    text = (REPO_ROOT / "docs" / "changes.md").read_text()
    start, end = "<!-- change-matrix:start -->\n", "<!-- change-matrix:end -->"
    assert start in text and end in text, "docs/changes.md lacks the change-matrix markers"
    table = text.split(start, 1)[1].split(end, 1)[0]
    assert table == markdown_table(), (
        "docs/changes.md's table differs from trn_ultracluster/change_matrix.py ROWS: paste "
        "the output of `python -m trn_ultracluster.change_matrix` between the markers")
