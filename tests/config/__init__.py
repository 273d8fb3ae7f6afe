"""Tests of trn_ultracluster.config, one module per source module (rules: one per concern).

Helpers shared by them: configurations are loaded the way ``npx cdk synth`` loads them,
from cdk.json's context plus ``-c`` style overrides.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.conftest import REPO_ROOT, cdk_json_context
from trn_ultracluster.config import ConfigError, LoadedConfig, load_config

STYLE = re.compile(r"^(error: \S.* = .+?: must |warning: \S.* = .+?: should )\S.* \(see \S+\)$")
"""The one style of every issue: ``<severity>: <field> = <value>: must|should ... (see
<link>)``; an error says what the field must be, a warning what it should be."""


def load(overrides: dict[str, Any]) -> LoadedConfig:
    """cdk.json's context with ``overrides`` (``-c`` keys), loaded."""
    context = cdk_json_context()
    context.update(overrides)
    return load_config(context, base_dir=REPO_ROOT)


def errors(overrides: dict[str, Any]) -> list[str]:
    """The error lines that ``overrides`` give (there must be some)."""
    with pytest.raises(ConfigError) as err:
        load(overrides)
    return [str(e) for e in err.value.issues if e.severity == "error"]


def check_one_error(overrides: dict[str, Any], message: str) -> None:
    """``overrides`` give exactly one error, ``message``, also in the ConfigError's text."""
    with pytest.raises(ConfigError) as err:
        load(overrides)
    assert [str(e) for e in err.value.issues if e.severity == "error"] == [message]
    assert message in str(err.value)


def warnings_about(overrides: dict[str, Any], field: str) -> list[str]:
    """The warning lines about ``field`` of a valid configuration."""
    return [str(w) for w in load(overrides).warnings if w.field == field]


# --- node pools -------------------------------------------------------------------------

TRN1_POOL = {"name": "trn1", "instance_type": "trn1.32xlarge",
             "nodes": {"min": 0, "desired": 1, "max": 2}}
TRN2_POOL = {"name": "trn2", "instance_type": "trn2.48xlarge",
             "nodes": {"min": 0, "desired": 0, "max": 4}, "efa_interface_layout": "efa-only"}
CPU_POOL = {"name": "cpu", "instance_type": "m7i.8xlarge",
            "nodes": {"min": 0, "desired": 1, "max": 2}}
"""The pools of ``profiles/mixed.yaml``, as ``pools`` items."""
CAPACITY_BLOCK = {"type": "capacity-block", "reservation_id": "cr-0123456789abcdef0"}


def with_pools(*pools: dict[str, Any], **overrides: Any) -> dict[str, Any]:
    """``-c`` overrides of a cluster of ``pools`` (items of ``pools``, changed copies of
    :data:`TRN1_POOL` ...) in use2-az3, which offers trn1 and trn2, with ``overrides``."""
    return {"az_ids": "use2-az3,use2-az1", "pools": [dict(p) for p in pools], **overrides}
