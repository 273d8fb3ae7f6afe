"""Backstop: one normalized snapshot per configuration (asset hashes masked).

Fine-grained tests say what must hold; this one shows any other change in review. After an
intended change, refresh with ``UPDATE_SNAPSHOTS=1 make test`` and read the diff.
"""

from __future__ import annotations

import json
import os
import re

import pytest

from tests.conftest import PROFILES, REPO_ROOT

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
    assert path.exists(), f"no snapshot {path.name}: run UPDATE_SNAPSHOTS=1 make test"
    assert text == path.read_text(), (
        f"{name} template changed; if intended, UPDATE_SNAPSHOTS=1 make test and review the diff")


def test_normalize_masks_asset_hashes_only():
    template = {"S3Key": "a" * 64 + ".zip", "Name": "abc"}
    assert json.loads(normalize(template)) == {"Name": "abc", "S3Key": "<asset-hash>.zip"}
