"""Instance catalog: facts agree with each other and with the published numbers."""

from __future__ import annotations

import pytest

from trn_ultracluster.contracts.catalog import CATALOG, UnknownInstanceTypeError, get_instance
from trn_ultracluster.config import region_of_az_id


def test_published_numbers():
    trn1 = get_instance("trn1.32xlarge")
    assert (trn1.chips, trn1.neuron_cores, trn1.network_cards, trn1.efa_interfaces) == (16, 32, 8, 8)
    assert trn1.peak_bf16_tflops == 3040  # Neuron trn1-arch: 3,040 BF16 TFLOPS per instance
    assert trn1.peak_bf16_tflops_per_logical_core == 95
    trn1n = get_instance("trn1n.32xlarge")
    assert (trn1n.network_cards, trn1n.efa_interfaces, trn1n.network_bandwidth_gbps) == (16, 16, 1600)
    trn2 = get_instance("trn2.48xlarge")
    assert (trn2.neuron_cores, trn2.logical_neuron_cores, trn2.efa_interfaces) == (128, 64, 16)
    assert round(trn2.peak_bf16_tflops) == 10672  # Neuron trn2-arch: 10.7 PF dense BF16
    assert get_instance("trn1.2xlarge").supports_efa is False


@pytest.mark.parametrize("spec", CATALOG.values(), ids=list(CATALOG))
def test_each_entry_is_consistent(spec):
    assert spec.neuron_cores % spec.chips == 0
    assert spec.neuron_cores % spec.logical_neuron_core_config == 0
    if spec.supports_efa:
        assert spec.efa_interfaces == spec.network_cards  # one EFA interface per card
    if spec.hyperpod_instance_type is not None:
        assert spec.hyperpod_instance_type == f"ml.{spec.name}"
    for az_id in spec.az_ids_seen:
        region_of_az_id(az_id)  # well formed, known region
    assert spec.sources, "every entry names its sources"


@pytest.mark.parametrize("spec", CATALOG.values(), ids=list(CATALOG))
def test_each_entry_names_its_own_sources(spec):
    """Every fact of every entry (derived ones too) names a source key of the module doc."""
    import dataclasses
    import re

    from trn_ultracluster.contracts import catalog

    keys = set(re.findall(r"^- ``([a-z0-9-]+)``", catalog.__doc__, re.M))
    keys |= {"neuron-trainium", "neuron-trainium2"}  # listed together on one line
    named = [f.strip() for facts, _ in spec.sources for f in facts.split(",")]
    facts = {f.name for f in dataclasses.fields(spec)} - {"name", "neuron_core_version", "sources"}
    if not spec.az_ids_seen:
        facts.discard("az_ids_seen")  # nothing recorded, nothing to source
    assert sorted(named) == sorted(set(named)), "a fact is named twice"
    # LNC 1 is trn1's only mode (no source needed); trn2 names its LNC 2 source
    assert facts - {"logical_neuron_core_config"} <= set(named), facts - set(named)
    for _, source in spec.sources:
        assert source.split(" ")[0] in keys, source
    az_source = dict((f, s) for fs, s in spec.sources for f in fs.split(", ")).get("az_ids_seen")
    if spec.name == "trn1.2xlarge":
        assert az_source == "offerings-moto"  # not the 32xlarge's record it was derived from


def test_unknown_type_lists_the_supported_ones():
    with pytest.raises(UnknownInstanceTypeError, match="supported: trn1.2xlarge, trn1.32xlarge"):
        get_instance("p5.48xlarge")


def test_catalog_imports_only_the_standard_library():
    import ast
    from pathlib import Path

    import trn_ultracluster.contracts.catalog as module

    tree = ast.parse(Path(module.__file__).read_text())
    imported = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module.split(".")[0] for n in ast.walk(tree)
                 if isinstance(n, ast.ImportFrom) and n.module}
    assert imported <= {"__future__", "dataclasses"}  # the training image ships it alone
