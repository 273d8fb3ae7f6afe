"""Property-based tests of the configuration loader: random `-c` contexts and profile files
give either a valid configuration (which then synthesizes) or a ConfigError with one clean
line per problem in the one message style, and nothing written; never another exception."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from tests.config import STYLE
from tests.conftest import REPO_ROOT, cdk_json_context
from trn_ultracluster.config import ClusterConfig, ConfigError, load_config

HEADER = "invalid TrnUltraCluster configuration:"


def _paths(model: type[BaseModel], prefix: str = "") -> list[str]:
    """Every dotted field path of the model (``fsx.data_repository.s3_path``, ...)."""
    out = []
    for name, field in model.model_fields.items():
        nested = [a for a in getattr(field.annotation, "__args__", (field.annotation,))
                  if isinstance(a, type) and issubclass(a, BaseModel)]
        out.append(prefix + name)
        if nested:
            out += _paths(nested[0], f"{prefix}{name}.")
    return out


PATHS = _paths(ClusterConfig)
PLAUSIBLE = ["trn1.32xlarge", "trn2.48xlarge", "trn1.2xlarge", "usw2-az4,usw2-az1", "use2-az3",
             "10.0.0.0/16", "8.8.8.0/24", "PERSISTENT_2", "SCRATCH_1", "2.15", "2.10", "eks",
             "hyperpod-slurm", "standalone", "dlami-venv", "/dev/sda1", "retain", "destroy", "capacity-block", "cr-0123456789abcdef0",
             "null", "true", "false", "0", "1", "16", "-1", "2400", "250", "[a, b]", "{x: 1}",
             "s3://bucket/prefix/", "/", "/s3", "arn:aws:iam::123456789012:role/Admin"]
KEYS = st.one_of(st.sampled_from(PATHS), st.sampled_from(PATHS).map(lambda p: p + ".x"),
                 st.sampled_from(["tags.team/owner", "tags.aws:x", "az_ids.0", "nodes.max.y",
                                  "@aws-cdk/core:x", "aws:cdk:y", "config"]),
                 st.text(min_size=1, max_size=12))
VALUES = st.one_of(st.sampled_from(PLAUSIBLE), st.none(), st.booleans(),
                   st.integers(-10**15, 10**15), st.floats(allow_nan=True, allow_infinity=True),
                   st.text(max_size=40), st.lists(st.text(max_size=8), max_size=3),
                   st.dictionaries(st.text(max_size=6), st.integers(), max_size=2))


def _check(context: dict[str, Any], tmp: Path) -> Any:
    """Load; on ConfigError check its text; return the config or None."""
    full = cdk_json_context()
    full.update(context)
    try:
        return load_config(full, base_dir=tmp).config
    except ConfigError as err:
        lines = str(err).split("\n")
        assert lines[0] == HEADER
        assert len(lines) == len(err.issues) + 1, "one line per problem"
        for line in lines[1:]:
            assert line.startswith("  ") and STYLE.match(line[2:]), line
        assert any(i.severity == "error" for i in err.issues)
        return None


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(context=st.dictionaries(KEYS, VALUES, max_size=6))
def test_random_contexts_load_or_fail_cleanly(tmp_path_factory, context):
    _check(context, tmp_path_factory.mktemp("ctx"))


PROFILE_TEXT = st.one_of(
    st.binary(max_size=200),
    st.dictionaries(st.sampled_from(PATHS + ["nodes", "fsx", "tags"]), VALUES, max_size=5).map(
        lambda d: yaml.safe_dump(d).encode()),
    st.text(max_size=200).map(lambda s: s.encode("utf-8", "surrogatepass")),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(content=PROFILE_TEXT)
def test_random_profile_files_load_or_fail_cleanly(tmp_path_factory, content):
    tmp = tmp_path_factory.mktemp("profile")
    (tmp / "p.yaml").write_bytes(content)
    _check({"config": "p.yaml"}, tmp)


VALID_LEANING = st.dictionaries(
    st.sampled_from(["nodes.max", "nodes.desired", "vpc_cidr", "tags.team", "tags.cost-center",
                     "fsx.storage_capacity_gib", "fsx.per_unit_storage_throughput",
                     "efa_interface_layout", "root_volume_gib", "nat_gateways",
                     "placement_group", "instance_type", "data_removal_policy"]),
    st.sampled_from(["1", "2", "4", "10.1.0.0/16", "172.16.0.0/16", "ml team", "été", "2400",
                     "1200", "500", "125", "efa-only", "efa", "128", "2", "false", "true",
                     "trn1n.32xlarge", "destroy", "bad;value"]),
    max_size=3)


@pytest.mark.slow
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(context=VALID_LEANING)
def test_a_valid_configuration_synthesizes_and_a_bad_one_writes_nothing(tmp_path_factory, context):
    """Through the app itself: ConfigError before anything is written, or a template."""
    from trn_ultracluster.app import build_app

    tmp = tmp_path_factory.mktemp("app")
    outdir = tmp / "cdk.out"
    full = cdk_json_context()
    full.update(context)
    try:
        app, _, _ = build_app(full, outdir=str(outdir), base_dir=REPO_ROOT)
    except ConfigError:
        assert not outdir.exists() or not any(outdir.iterdir()), "nothing may be written"
        return
    app.synth()
    assert (outdir / "TrnUltraCluster.template.json").is_file()
    SYNTHESIZED.append(context)


SYNTHESIZED: list[dict[str, Any]] = []


@pytest.mark.slow
def test_the_synth_property_reached_valid_configurations():
    """Runs after the property above (file order): it must have synthesized some."""
    assert SYNTHESIZED, "no random configuration was valid: the strategy needs adjusting"
