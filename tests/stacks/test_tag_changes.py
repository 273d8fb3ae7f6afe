"""A change of the configuration's ``tags`` rolls no node and replaces nothing (issue 29,
"a ``tags`` change rolls no node and replaces no placement group"): the launch template and
the placement group are the same before and after, and every resource that changes changes
only its ``Tags``, a property CloudFormation updates in place on each of them (checked
against the resource schemas cfn-lint ships: ``Tags`` is not create-only there)."""

from __future__ import annotations

from typing import Any

import pytest
from cfnlint.schema import PROVIDER_SCHEMA_MANAGER

RETAGGED = {"tags.team": "ml-platform"}
"""A tag added on top of cdk.json's ``project`` tag (``-c tags.team=ml-platform``)."""


@pytest.fixture(scope="module")
def retagged(synth):
    return synth(**RETAGGED)


def _changed(before: dict[str, Any], after: dict[str, Any]) -> dict[str, set[str]]:
    """Logical id -> the properties that differ (every resource exists in both)."""
    assert before["Resources"].keys() == after["Resources"].keys()
    changed = {}
    for logical_id, b in before["Resources"].items():
        a = after["Resources"][logical_id]
        bp, ap = b.get("Properties", {}), a.get("Properties", {})
        keys = {k for k in bp.keys() | ap.keys() if bp.get(k) != ap.get(k)}
        if keys or b.get("DependsOn") != a.get("DependsOn"):
            changed[logical_id] = keys
    return changed


def test_a_tags_change_touches_only_tags_and_never_a_create_only_one(default, retagged):
    changed = _changed(default.template, retagged.template)
    assert changed, "the new tag reached no resource"
    for logical_id, keys in changed.items():
        cfn_type = default.template["Resources"][logical_id]["Type"]
        assert keys == {"Tags"}, (logical_id, keys)
        schema = PROVIDER_SCHEMA_MANAGER.get_resource_schema("us-east-1", cfn_type).schema
        assert "/properties/Tags" not in schema.get("createOnlyProperties", []), cfn_type


def test_a_tags_change_keeps_the_launch_template_and_the_placement_group(default, retagged):
    """EC2 ``AWS::EC2::PlacementGroup``: ``Tags`` is create-only (the stack leaves the group
    untagged); the launch template's data is unchanged, so no node group's
    ``LatestVersionNumber`` moves and EKS rolls no node. On main the tag reached both."""
    for cfn_type in ("AWS::EC2::LaunchTemplate", "AWS::EC2::PlacementGroup",
                     "AWS::EKS::Nodegroup"):
        before, after = default.resources(cfn_type), retagged.resources(cfn_type)
        assert before
        if cfn_type == "AWS::EKS::Nodegroup":  # their own tags change in place, nothing else
            # copies: the templates are the session's cached synths, shared by other tests
            before, after = (
                {k: {**v, "Properties": {p: x for p, x in v["Properties"].items() if p != "Tags"}}
                 for k, v in groups.items()} for groups in (before, after))
        assert before == after, cfn_type
    for group in default.resources("AWS::EC2::PlacementGroup").values():
        assert "Tags" not in group["Properties"]
