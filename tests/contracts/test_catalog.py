"""Instance catalog: facts agree with each other and with the published numbers."""

from __future__ import annotations

import dataclasses
import re

import pytest

from trn_ultracluster.contracts import catalog
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
    trn2_3xl = get_instance("trn2.3xlarge")  # one Trainium2 chip with one EFA interface
    assert (trn2_3xl.chips, trn2_3xl.neuron_cores, trn2_3xl.logical_neuron_cores) == (1, 8, 4)
    assert (trn2_3xl.network_cards, trn2_3xl.efa_interfaces, trn2_3xl.supports_efa) == (1, 1, True)
    assert trn2_3xl.peak_bf16_tflops_per_logical_core == 667 / 4
    assert get_instance("trn2u.48xlarge").ultraserver_nodes == 4  # Neuron trn2-arch


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
    assert spec.ultraserver_nodes is None or spec.ultraserver_nodes >= 2
    assert spec.sources, "every entry names its sources"


SOURCE_KEYS = {key for pair in re.findall(r"^- ``([a-z0-9-]+)``(?:, ``([a-z0-9-]+)``)?:",
                                          catalog.__doc__, re.M) for key in pair if key}
"""The source keys the module docstring defines (``- ``key``:`` lines; one line defines two)."""
SOURCE = re.compile(r"^(?P<keys>[a-z0-9-]+(?: \+ [a-z0-9-]+)*)(?: \((?P<note>[^()]+)\))?\Z")
"""A fact's source: keys joined by `` + ``, then an optional note in parentheses."""


def _sourced_facts(spec) -> dict[str, str]:
    """Fact name -> the source text ``spec.sources`` gives it."""
    return {fact.strip(): source for facts, source in spec.sources for fact in facts.split(",")}


def _facts_needing_a_source(spec) -> set[str]:
    """Every field of ``spec`` but its name, its core version (part of the chip's name) and the
    sources themselves; ``az_ids_seen`` only when something was recorded; the LNC of a trn1
    type (1, its only mode)."""
    facts = {f.name for f in dataclasses.fields(spec)} - {"name", "neuron_core_version", "sources"}
    if not spec.az_ids_seen:
        facts.discard("az_ids_seen")  # nothing recorded, nothing to source
    if spec.neuron_core_version == "v2":
        facts.discard("logical_neuron_core_config")
    return facts


def _check_sources(spec) -> None:
    """Fail, naming the row and the fact, unless every fact of ``spec`` names known keys."""
    named = [fact.strip() for facts, _ in spec.sources for fact in facts.split(",")]
    assert len(named) == len(set(named)), f"{spec.name}: a fact is named twice in {named}"
    for fact in sorted(_facts_needing_a_source(spec)):
        assert fact in named, (
            f"catalog row {spec.name!r}: fact {fact!r} = {getattr(spec, fact)!r} names no source; "
            f"add ({fact!r}, '<key>') to its sources, with <key> one of {sorted(SOURCE_KEYS)}")
    for fact, source in _sourced_facts(spec).items():
        match = SOURCE.match(source)
        assert match, (f"catalog row {spec.name!r}: fact {fact!r} has source {source!r}, not "
                       "'<key> + <key> (note)'")
        unknown = set(match["keys"].split(" + ")) - SOURCE_KEYS
        assert not unknown, (f"catalog row {spec.name!r}: fact {fact!r} names {sorted(unknown)}, "
                             f"not a source key of the module docstring {sorted(SOURCE_KEYS)}")


@pytest.mark.parametrize("spec", CATALOG.values(), ids=list(CATALOG))
def test_each_entry_names_its_own_sources(spec):
    """Every fact of every entry (derived ones too) names source keys of the module doc."""
    _check_sources(spec)
    if spec.name == "trn1.2xlarge":  # not the 32xlarge's record it was derived from
        assert _sourced_facts(spec)["az_ids_seen"] == "offerings-moto"


def test_source_checks_catch_a_fact_without_a_source_and_an_unknown_key():
    spec = dataclasses.replace(
        get_instance("trn2.3xlarge"), name="trn9.1xlarge",
        sources=tuple((f, s) for f, s in get_instance("trn2.3xlarge").sources
                      if f != "logical_neuron_core_config"))
    with pytest.raises(AssertionError, match="row 'trn9.1xlarge': fact "
                       "'logical_neuron_core_config' = 2 names no source"):
        _check_sources(spec)
    spec = dataclasses.replace(spec, sources=(*spec.sources,
                                              ("logical_neuron_core_config", "a-blog")))
    with pytest.raises(AssertionError, match=r"'logical_neuron_core_config' names \['a-blog'\]"):
        _check_sources(spec)


def _botocore_enum(service: str, shape: str) -> set[str]:
    """The values of enum ``shape`` in the installed botocore's newest model of ``service``."""
    from botocore.loaders import Loader

    return set(Loader().load_service_model(service, "service-2")["shapes"][shape]["enum"])


def _named_by_ec2(name: str) -> None:
    """Fail unless the installed botocore's EC2 ``InstanceType`` enum holds ``name``."""
    import botocore

    assert name in _botocore_enum("ec2", "InstanceType"), (
        f"catalog row {name!r} is not an EC2 instance type of botocore {botocore.__version__} "
        "(data/ec2/2016-11-15/service-2.json, shape InstanceType): an AWS source must name the "
        "type before it gets a row (see the module docstring, Trn3)")


@pytest.mark.parametrize("name", list(CATALOG))
def test_each_entry_is_an_ec2_instance_type(name):
    """Every row is a type the EC2 API names. trn2u.48xlarge entered the enum after botocore
    1.43.67 and is in 1.44.5, the oldest botocore the pinned boto3 1.44.5 accepts, so no row
    needs an exception."""
    _named_by_ec2(name)


def test_a_type_only_neuron_software_names_is_refused():
    with pytest.raises(AssertionError, match="'trn3.48xlarge' is not an EC2 instance type of "
                       "botocore .*an AWS source must name the type"):
        _named_by_ec2("trn3.48xlarge")  # in the Neuron driver and Helm chart only


@pytest.mark.parametrize("spec", CATALOG.values(), ids=list(CATALOG))
def test_hyperpod_name_matches_botocores_cluster_instance_types(spec):
    """A row has a HyperPod name exactly when SageMaker's ``ClusterInstanceType`` lists
    ``ml.<name>``: a missing name would refuse HyperPod for a type it offers."""
    offered = _botocore_enum("sagemaker", "ClusterInstanceType")
    expected = f"ml.{spec.name}" if f"ml.{spec.name}" in offered else None
    assert spec.hyperpod_instance_type == expected


def test_trainium2_sizes_agree_per_chip():
    """trn2.3xlarge is one chip of a trn2.48xlarge: the same cores, memory and peak per chip."""
    small, large = get_instance("trn2.3xlarge"), get_instance("trn2.48xlarge")
    for per_chip in ("neuron_cores", "accelerator_memory_gib"):
        assert getattr(small, per_chip) * large.chips == getattr(large, per_chip), per_chip
    assert small.peak_bf16_tflops_per_chip == large.peak_bf16_tflops_per_chip
    assert small.logical_neuron_core_config == large.logical_neuron_core_config


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
