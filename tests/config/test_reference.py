"""The generated configuration reference and JSON Schema (issue "a newcomer's first hour"):
fresh, complete, named by every profile, and strict enough that a typo is caught."""

from __future__ import annotations

import json

import jsonschema
import pytest
import yaml

from tests.conftest import PROFILES
from trn_ultracluster.config.model import ClusterConfig, FsxConfig, TeamConfig
from trn_ultracluster.config.reference import (
    MODELINE,
    REFERENCE_PATH,
    SCHEMA_PATH,
    field_docs,
    json_schema,
    main,
    markdown,
)


def test_the_committed_reference_and_schema_are_what_make_docs_writes():
    assert REFERENCE_PATH.read_text(encoding="utf-8") == markdown(), "run make docs"
    assert json.loads(SCHEMA_PATH.read_text(encoding="utf-8")) == json_schema(), "run make docs"
    assert main(["--check"]) == 0


@pytest.mark.parametrize("model", [ClusterConfig, FsxConfig, TeamConfig])
def test_every_field_has_a_description_from_its_docstring(model):
    docs = field_docs(model)
    assert set(model.model_fields) <= set(docs), sorted(set(model.model_fields) - set(docs))
    assert all(docs[name].strip() for name in model.model_fields)


def test_the_reference_lists_every_key_of_every_section():
    text = markdown()
    for name in ClusterConfig.model_fields:
        assert f"| `{name}` |" in text
    for name in FsxConfig.model_fields:
        assert f"| `fsx.{name}` |" in text
    assert "| `teams[].quota.<pool>.neuron_cores` |" in text
    assert "| `pools[].instance_type` |" in text


def _schema():
    return json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))


@pytest.mark.parametrize("profile", PROFILES, ids=[p.stem for p in PROFILES])
def test_every_profile_names_the_schema_and_validates_against_it(profile):
    text = profile.read_text(encoding="utf-8")
    assert text.splitlines()[0] == MODELINE
    jsonschema.validate(yaml.safe_load(text), _schema())


def test_a_typo_in_a_key_is_caught_by_the_schema():
    validator = jsonschema.Draft202012Validator(_schema())
    errors = list(validator.iter_errors({"fsx": {"storage_capacity_gb": 1200}}))
    assert errors, "a misspelt nested key must not validate"
    assert "storage_capacity_gb" in errors[0].message
    assert list(validator.iter_errors({"instance_typ": "trn1.32xlarge"}))
    assert list(validator.iter_errors({"orchestrator": "kubernetes"}))
