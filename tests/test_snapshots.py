"""Backstop: one normalized snapshot per configuration (asset hashes masked).

Fine-grained tests say what must hold; this one shows any other change in review. After an
intended change, ``make snapshots`` regenerates them and lists, per snapshot, the resources
that changed (tools/snapshot_changes.py, with the change classifier): review that list. A
property a snapshot pins that a rule decides needs its own rule test; the snapshot only shows
that something changed.
"""

from __future__ import annotations

import json
import os
import re

import pytest

from tests.conftest import PROFILES, REPO_ROOT
from trn_ultracluster.changes import classify, summary

SNAPSHOTS = REPO_ROOT / "tests" / "snapshots"
HASH = re.compile(r"[0-9a-f]{64}")
CONFIGS = [None, *PROFILES]
IDS = ["default", *(p.stem for p in PROFILES)]


def normalize(template: dict) -> str:
    """Template JSON with asset hashes masked and keys sorted."""
    return HASH.sub("<asset-hash>", json.dumps(template, indent=1, sort_keys=True)) + "\n"


@pytest.mark.parametrize("config", CONFIGS, ids=IDS)
def test_snapshot(synth, config, request):
    name = request.node.callspec.id
    text = normalize(synth(config).template)
    path = SNAPSHOTS / f"{name}.json"
    if os.environ.get("UPDATE_SNAPSHOTS") == "1":
        SNAPSHOTS.mkdir(exist_ok=True)
        path.write_text(text)
    assert path.exists(), f"no snapshot {path.name}: run make snapshots"
    old = path.read_text()
    assert text == old, changed_message(name, json.loads(old), json.loads(text))


MAX_LISTED = 25


def changed_message(name: str, old: dict, new: dict) -> str:
    """The failure message: how to regenerate, and the resources that changed."""
    changes = summary(classify(old, new))
    if old.get("Outputs") != new.get("Outputs"):
        changes.append("outputs changed")
    listed = changes[:MAX_LISTED] + ([f"... and {len(changes) - MAX_LISTED} more"]
                                     if len(changes) > MAX_LISTED else [])
    return (f"{name} template changed ({len(changes)} changes); if intended, run `make "
            "snapshots` (regenerates tests/snapshots/*.json and lists the changed resources) "
            "and review the list:\n  " + "\n  ".join(listed or ["(only template attributes)"]))


def test_normalize_masks_asset_hashes_only():
    template = {"S3Key": "a" * 64 + ".zip", "Name": "abc"}
    assert json.loads(normalize(template)) == {"Name": "abc", "S3Key": "<asset-hash>.zip"}


def test_changed_message_says_how_to_regenerate_and_lists_resources():
    old = {"Resources": {"A": {"Type": "AWS::SNS::Topic", "Properties": {"X": 1}},
                         "B": {"Type": "AWS::S3::Bucket"}}}
    new = {"Resources": {"A": {"Type": "AWS::SNS::Topic", "Properties": {"X": 2}},
                         "C": {"Type": "AWS::SQS::Queue"}}}
    message = changed_message("dev", old, new)
    assert "make snapshots" in message
    assert "updated       AWS::SNS::Topic" in message and message.count("\n") == 3
    assert "removed       AWS::S3::Bucket                           B" in message
    assert "added         AWS::SQS::Queue" in message


def test_snapshot_changes_tool_lists_changed_resources(tmp_path, monkeypatch):
    """tools/snapshot_changes.py (``make snapshots``): per snapshot, the changed resources."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "snapshot_changes", REPO_ROOT / "tools" / "snapshot_changes.py")
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    topic = {"Resources": {"A": {"Type": "AWS::SNS::Topic"}}}
    (tmp_path / "dev.json").write_text(json.dumps(topic))
    (tmp_path / "new.json").write_text(json.dumps({"Resources": {}}))
    (tmp_path / "same.json").write_text(json.dumps({"Resources": {}}))
    committed = {"dev": {"Resources": {}}, "same": {"Resources": {}}}
    monkeypatch.setattr(tool, "SNAPSHOTS", tmp_path)
    monkeypatch.setattr(tool, "committed", lambda path, rev: committed.get(path.stem))
    lines = tool.report()
    assert lines[0] == "dev: 1 resources changed"
    assert lines[1].split() == ["added", "AWS::SNS::Topic", "A"]
    assert lines[2:] == ["new: new (0 resources)", "same: unchanged"]
