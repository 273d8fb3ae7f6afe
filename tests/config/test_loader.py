"""Loading: the layers (model defaults, cdk.json, a profile, ``-c`` keys), dotted keys,
profile files, cdk.json holding only what differs from the defaults, and the app's exit."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from tests.config import check_one_error, errors, load
from tests.conftest import REPO_ROOT, cdk_json_context
from trn_ultracluster.config import CONTEXT_KEY, ClusterConfig, ConfigError, load_config

# (case, context overrides as `-c` would give them, the exact message of the one error)
BAD_INPUTS = [
    ('dotted key below a number', {'nodes.max.x': '1'},
     "error: nodes.max.x = '1': must name a key of a mapping: nodes.max is the int 1, not a mapping of keys (see docs/configuration-guide.md#layers)"),
    ('dotted key below a list', {'az_ids.0': 'usw2-az1'},
     "error: az_ids.0 = 'usw2-az1': must name a key of a mapping: az_ids is a list, not a mapping of keys; give the whole list: -c az_ids=a,b (see docs/configuration-guide.md#layers)"),
    ('empty profile name', {'config': ''},
     "error: config = '': must name a YAML profile file, e.g. profiles/dev.yaml (it is empty) (see docs/configuration-guide.md#layers)"),
    ('missing profile', {'config': 'profiles/nope.yaml'},
     "error: config = 'profiles/nope.yaml': must name an existing YAML profile file, e.g. profiles/dev.yaml (see docs/configuration-guide.md#layers)"),
    ('dotted key below a default number', {'root_volume_gib.x': '1'},
     "error: root_volume_gib.x = '1': must name a key of a mapping: root_volume_gib is the int 512, not a mapping of keys (see docs/configuration-guide.md#layers)"),
]


@pytest.mark.parametrize("case, overrides, message", BAD_INPUTS, ids=[c[0] for c in BAD_INPUTS])
def test_bad_input_gives_one_exact_message(case, overrides, message):
    check_one_error(overrides, message)


# --- cdk.json holds only what differs from the model's defaults -------------------------


def _not_differing(block: dict[str, Any], model: BaseModel, path: str = "") -> list[str]:
    """Keys of a cdk.json configuration object that the model lacks or that set a value
    equal to the model's default (nested models compared key by key)."""
    found = []
    for key, value in block.items():
        where = f"{path}{key}"
        if key not in type(model).model_fields:
            found.append(f"{where}: not a configuration key")
            continue
        default = getattr(model, key)
        if isinstance(default, BaseModel) and isinstance(value, dict):
            found += _not_differing(value, default, f"{where}.")
            continue
        try:
            given = getattr(type(model).model_validate({key: value}), key)
        except ValidationError:
            continue  # invalid: test_default_config_is_valid says so
        if given == default:
            found.append(f"{where}: {value!r} is the model's default")
    return found


def test_cdk_json_sets_only_what_differs_from_the_model_defaults():
    block = cdk_json_context().get(CONTEXT_KEY, {})
    assert _not_differing(block, ClusterConfig()) == [], (
        "cdk.json repeats a default (change it in trn_ultracluster/config/model/ instead) "
        "or sets an unknown key")


def test_the_cdk_json_guard_finds_repeated_defaults_and_unknown_keys():
    block = {"instance_type": "trn1.32xlarge", "az_ids": ["usw2-az4", "usw2-az1"],
             "fsx": {"lustre_version": "2.15", "storage_capacity_gib": 2400},
             "nodes": {"max": 4}, "tags": {"project": "x"}, "instance_typo": 1}
    assert _not_differing(block, ClusterConfig()) == [
        "instance_type: 'trn1.32xlarge' is the model's default",
        "az_ids: ['usw2-az4', 'usw2-az1'] is the model's default",
        "fsx.lustre_version: '2.15' is the model's default",
        "instance_typo: not a configuration key",
    ]


def test_default_config_is_valid():
    loaded = load({})
    # orchestrator settings may warn about their defaults; the foundation's are silent
    assert [w for w in loaded.warnings if w.field.split(".")[0] not in ("eks", "hyperpod")] == []
    c = loaded.config
    assert (c.instance_type, c.region, c.compute_az_id) == ("trn1.32xlarge", "us-west-2", "usw2-az4")
    assert (c.fsx.deployment_type, c.fsx.storage_capacity_gib) == ("PERSISTENT_2", 1200)
    assert (c.fsx.per_unit_storage_throughput, c.fsx.data_compression) == (250, "LZ4")
    assert c.fsx.lustre_version == "2.15"
    assert c == ClusterConfig(tags={"project": "trn-ultracluster"})  # the defaults + cdk.json


# --- layers ----------------------------------------------------------------------------


def test_layers_defaults_then_cdk_json_then_profile_then_dash_c():
    context = cdk_json_context()
    context["trn-ultracluster"] = {"root_volume_gib": 200, "nodes": {"max": 4}}
    context["config"] = "profiles/dev.yaml"  # sets nodes {0, 1, 1}
    context["nodes.max"] = "3"
    context["az_ids"] = "usw2-az1,usw2-az4"
    c = load_config(context, base_dir=REPO_ROOT).config
    assert c.root_volume_gib == 200  # cdk.json object, untouched by the profile
    assert c.nodes.max == 3  # -c beats the profile, which beat cdk.json
    assert c.nodes.desired == 1  # from the profile
    assert c.az_ids == ("usw2-az1", "usw2-az4")  # comma list from -c
    assert c.tags["env"] == "dev"
    assert c.fsx.per_unit_storage_throughput == 125


def test_loading_does_not_change_the_given_context():
    context = cdk_json_context()
    before = json.dumps(context, sort_keys=True)
    load_config({**context, "fsx.storage_capacity_gib": "2400"}, base_dir=REPO_ROOT)
    assert json.dumps(context, sort_keys=True) == before


def test_dash_c_values_are_typed_like_yaml():
    c = load({"placement_group": "false", "nodes.max": "2", "fsx.lustre_version": "2.12",
              "fsx.data_repository": "null", "data_removal_policy": "destroy"}).config
    assert c.placement_group is False and c.nodes.max == 2
    assert c.fsx.lustre_version == "2.12" and c.fsx.data_repository is None


def test_cdk_keys_are_not_taken_for_config_keys():
    loaded = load({"@aws-cdk/core:newStyleStackSynthesis": True, "aws:cdk:enable-path-metadata": True})
    assert loaded.config.instance_type == "trn1.32xlarge"


def test_a_key_set_twice_on_the_command_line_and_below_it_is_reported_not_a_crash():
    found = errors({"nodes": "5", "nodes.max": "3"})
    assert found[0].startswith("error: nodes.max = '3': must name a key of a mapping: nodes is "
                               "the int 5, not a mapping of keys")
    assert found[1].startswith("error: nodes = 5: must be a mapping")


def test_tag_keys_with_slashes_and_colons_are_kept():
    tags = load({"tags.team/owner": "ml", "tags.app:name": "trn", "tags.k8s.io/x": "y"}).config.tags
    assert {"team/owner": "ml", "app:name": "trn", "k8s.io/x": "y"}.items() <= tags.items()


# --- profile files -----------------------------------------------------------------------


@pytest.mark.parametrize("text, error", [
    ("instance_type: [unclosed", "must be valid YAML"),
    ("- a\n- list\n", "must hold a YAML mapping of config keys, got list"),
])
def test_bad_profile_file(tmp_path, text, error):
    profile = tmp_path / "p.yaml"
    profile.write_text(text)
    with pytest.raises(ConfigError, match=error):
        load({"config": str(profile)})


@pytest.mark.parametrize("content, error", [
    (b"", "must hold a YAML mapping of config keys like profiles/dev.yaml (it is empty)"),
    (b"# only a comment\n", "must hold a YAML mapping of config keys like profiles/dev.yaml (it is empty)"),
    (b"nodes: {max: 2}\nnodes: {max: 4}\n", "found the key 'nodes' twice"),
    (b"instance_type: trn1.32xlarge\n\xff\xfe\n", "must be UTF-8 text (byte 29 is not)"),
    (b"nodes: {max: " + b"1" * 5000 + b"}\n", "must be valid YAML (Exceeds the limit"),
])
def test_bad_profile_files(tmp_path, content, error):
    path = tmp_path / "p.yaml"
    path.write_bytes(content)
    (message,) = errors({"config": str(path)})
    assert message.startswith(f"error: config = {str(path)!r}: ")
    assert error in message and "\n" not in message


# --- the app ----------------------------------------------------------------------------


def test_app_exits_2_and_writes_no_template(tmp_path):
    env = {**os.environ, "CDK_OUTDIR": str(tmp_path),
           "CDK_CONTEXT_JSON": json.dumps({**cdk_json_context(), "nodes.min": "-1"})}
    result = subprocess.run([sys.executable, "app.py"], cwd=REPO_ROOT, env=env,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    assert "error: nodes.min = -1: must be 0 or more" in result.stderr
    assert "Traceback" not in result.stderr
    assert list(tmp_path.iterdir()) == []


def test_a_mapping_as_a_key_is_a_yaml_error_not_a_crash(tmp_path):
    """Found by the fuzz test: ``{{}}`` is a mapping whose key is a mapping."""
    from trn_ultracluster.config import ConfigError, load_config

    (tmp_path / "p.yaml").write_text("{{}}")
    with pytest.raises(ConfigError) as err:
        load_config({"config": str(tmp_path / "p.yaml")})
    assert "found a dict as a key; keys are names" in str(err.value)
