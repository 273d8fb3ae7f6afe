"""Rules of the training image: the Neuron training stack of the instance family."""

from __future__ import annotations

from tests.config import check_one_error, warnings_about
from trn_ultracluster.config import load_config


def test_native_on_trainium_is_an_error_naming_the_allowed_stacks():
    check_one_error(
        {"training_image.neuron_stack": "native"},
        "error: training_image.neuron_stack = 'native': must be 'auto' or 'xla' on "
        "trn1.32xlarge: TorchNeuron, the native stack, supports Trainium2 and Trainium3 only "
        "(Neuron SDK 2.33.0) (see https://awsdocs-neuron.readthedocs-hosted.com/en/latest/"
        "torch/index.html)")


def test_xla_on_trainium2_is_allowed_with_a_warning_that_it_is_frozen():
    overrides = {"instance_type": "trn2.48xlarge", "az_ids": "use2-az3,use2-az1",
                 "training_image.neuron_stack": "xla"}
    assert warnings_about(overrides, "training_image.neuron_stack") == [
        "warning: training_image.neuron_stack = 'xla': should be 'auto' (native) on "
        "trn2.48xlarge: the XLA stack is frozen at Neuron SDK 2.30, the last release with a "
        "PyTorch/XLA training image; it gets no fixes (see README.md#training-stacks)"]
    assert load_config(overrides).config.neuron_stack == "xla"


def test_auto_follows_the_instance_family():
    assert load_config({}).config.neuron_stack == "xla"
    trn2 = load_config({"instance_type": "trn2.48xlarge", "az_ids": "use2-az3,use2-az1"})
    assert trn2.config.neuron_stack == "native"
    assert not [w for w in trn2.warnings if w.field == "training_image.neuron_stack"]
