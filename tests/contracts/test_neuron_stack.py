"""The Neuron training stack each instance family gets, its environment and its cache."""

from __future__ import annotations

import pytest

from trn_ultracluster.contracts.catalog import CATALOG, get_instance
from trn_ultracluster.contracts.neuron_env import NATIVE_CACHE_VARIABLE, neuron_environment
from trn_ultracluster.contracts.neuron_stack import (
    NATIVE,
    XLA,
    compile_cache_dir,
    default_stack,
    supported_stacks,
)


@pytest.mark.parametrize("name", sorted(CATALOG))
def test_trainium_gets_xla_and_trainium2_gets_native_first(name):
    """TorchNeuron supports Trainium2 and Trainium3 only (Neuron SDK 2.33.0)."""
    spec = get_instance(name)
    if name.startswith("trn1"):
        assert supported_stacks(spec) == (XLA,) and default_stack(spec) == XLA
    else:
        assert spec.name.startswith("trn2")
        assert supported_stacks(spec) == (NATIVE, XLA) and default_stack(spec) == NATIVE


def test_each_stack_has_its_own_compile_cache_and_variable():
    assert compile_cache_dir(XLA) == "/fsx/neuron-compile-cache"  # deployed stacks keep theirs
    assert compile_cache_dir(NATIVE) == "/fsx/neuron-compile-cache-native"
    trn1, trn2 = get_instance("trn1.32xlarge"), get_instance("trn2.48xlarge")
    assert neuron_environment(trn1, XLA)["NEURON_CC_FLAGS"] == "--cache_dir=/fsx/neuron-compile-cache"
    native = neuron_environment(trn2, NATIVE)
    assert native[NATIVE_CACHE_VARIABLE] == "/fsx/neuron-compile-cache-native"
    assert "NEURON_CC_FLAGS" not in native  # an XLA-flow variable
    for env in (neuron_environment(trn1, XLA), native):  # libfabric over EFA on both stacks
        assert (env["FI_PROVIDER"], env["FI_EFA_USE_DEVICE_RDMA"]) == ("efa", "1")
    assert "FI_PROVIDER" not in neuron_environment(get_instance("trn1.2xlarge"), XLA)
