"""Rules of the standalone orchestrator (the AMI's id or SSM parameter, the DLAMI venv, the root
device, capacity); the orchestrator itself: tests/orchestrators/standalone."""

from __future__ import annotations

import pytest

from tests.config import (
    CAPACITY_BLOCK,
    TRN1_POOL,
    TRN2_POOL,
    check_one_error,
    errors,
    load,
    warnings_about,
    with_pools,
)
from trn_ultracluster.config.facts import NATIVE_STACK, NEURON_DLAMI_LATEST_PARAMETER, XLA_STACK

TRN2 = {'orchestrator': 'standalone', 'instance_type': 'trn2.48xlarge', 'az_ids': ['use2-az3', 'use2-az1']}
"""Standalone on trn2.48xlarge: the native stack (training_image.neuron_stack auto)."""

# (case, context overrides as `-c` would give them, the exact message of the one error)
BAD_INPUTS = [
    ('ami id malformed', {'orchestrator': 'standalone', 'standalone.ami_id': 'ami-123'},
     "error: standalone.ami_id = 'ami-123': must be 'ami-' followed by 8 or 17 hex digits (see https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/resource-ids.html)"),
    ('ami id and parameter', {'orchestrator': 'standalone', 'standalone.ami_id': 'ami-0123456789abcdef0', 'standalone.ami_ssm_parameter': '/my/ami'},
     "error: standalone.ami_ssm_parameter = '/my/ami': must be null when standalone.ami_id is set (one AMI source) (see docs/standalone.md)"),
    ('ami parameter without leading slash', {'orchestrator': 'standalone', 'standalone.ami_ssm_parameter': 'aws/service/x'},
     "error: standalone.ami_ssm_parameter = 'aws/service/x': must be an SSM parameter name like '/aws/service/neuron/dlami/pytorch-2.9/ubuntu-24.04/latest/image_id': a leading '/', levels of letters, digits and '_.-' separated by single '/', at most 1011 characters (see https://docs.aws.amazon.com/systems-manager/latest/APIReference/API_PutParameter.html)"),
    ('ami parameter with a space', {'orchestrator': 'standalone', 'standalone.ami_ssm_parameter': '/my amis/x'},
     "error: standalone.ami_ssm_parameter = '/my amis/x': must be an SSM parameter name like '/aws/service/neuron/dlami/pytorch-2.9/ubuntu-24.04/latest/image_id': a leading '/', levels of letters, digits and '_.-' separated by single '/', at most 1011 characters (see https://docs.aws.amazon.com/systems-manager/latest/APIReference/API_PutParameter.html)"),
    ('ami parameter with an empty level', {'orchestrator': 'standalone', 'standalone.ami_ssm_parameter': '/amis//x'},
     "error: standalone.ami_ssm_parameter = '/amis//x': must be an SSM parameter name like '/aws/service/neuron/dlami/pytorch-2.9/ubuntu-24.04/latest/image_id': a leading '/', levels of letters, digits and '_.-' separated by single '/', at most 1011 characters (see https://docs.aws.amazon.com/systems-manager/latest/APIReference/API_PutParameter.html)"),
    ('ami parameter too deep', {'orchestrator': 'standalone', 'standalone.ami_ssm_parameter': '/a/b/c/d/e/f/g/h/i/j/k/l/m/n/o/p'},
     "error: standalone.ami_ssm_parameter = '/a/b/c/d/e/f/g/h/i/j/k/l/m/n/o/p': must have at most 15 levels (see https://docs.aws.amazon.com/systems-manager/latest/APIReference/API_PutParameter.html)"),
    ('venv not absolute', {'orchestrator': 'standalone', 'standalone.runtime': 'dlami-venv', 'standalone.dlami_venv': 'opt/venv'},
     "error: standalone.dlami_venv = 'opt/venv': must be an absolute path of letters, digits and '_.+-' like '/opt/aws_neuronx_venv_pytorch_2_9_nxd_training' (see https://awsdocs-neuron.readthedocs-hosted.com/en/latest/deploy/environments/dlami.html)"),
    ('venv with a shell character', {'orchestrator': 'standalone', 'standalone.runtime': 'dlami-venv', 'standalone.dlami_venv': '/opt/$(reboot)'},
     "error: standalone.dlami_venv = '/opt/$(reboot)': must be an absolute path of letters, digits and '_.+-' like '/opt/aws_neuronx_venv_pytorch_2_9_nxd_training' (see https://awsdocs-neuron.readthedocs-hosted.com/en/latest/deploy/environments/dlami.html)"),
    ('root device', {'orchestrator': 'standalone', 'standalone.root_device_name': 'sda1'},
     "error: standalone.root_device_name = 'sda1': must be a device name like '/dev/sda1' or '/dev/xvda' (see https://docs.aws.amazon.com/ebs/latest/userguide/device_naming.html)"),
    ('capacity block', {'orchestrator': 'standalone', 'capacity.type': 'capacity-block', 'capacity.reservation_id': 'cr-0123456789abcdef0', 'placement_group': False},
     "error: capacity.type = 'capacity-block': must be 'on-demand' or 'capacity-reservation' with orchestrator 'standalone': this project does not launch an Auto Scaling group into a Capacity Block (see docs/standalone.md)"),
    ('dlami venv on the native stack without its DLAMI', {**TRN2, 'standalone.runtime': 'dlami-venv'},
     "error: standalone.runtime = 'dlami-venv': must be 'container' on the native stack unless standalone.ami_id or standalone.ami_ssm_parameter names the \"Deep Learning AMI Neuron torch-neuronx 2.14.0\" DLAMI (Neuron SDK 2.33.0), which has /opt/aws_neuronx_venv_torch_neuronx_2_14_0: without them the nodes boot the Neuron Base DLAMI (/aws/service/neuron/dlami/base/ubuntu-24.04/latest/image_id), which has no TorchNeuron environment. The torch-neuronx DLAMI's SSM parameter is not in the Neuron docs as of SDK 2.33.0; find it with `aws ssm get-parameters-by-path --path /aws/service/neuron/dlami --recursive` (see https://awsdocs-neuron.readthedocs-hosted.com/en/latest/deploy/environments/dlami.html)"),
    ('unknown runtime', {'orchestrator': 'standalone', 'standalone.runtime': 'conda'},
     "error: standalone.runtime = 'conda': must be 'container' or 'dlami-venv' (see docs/configuration.md)"),
]


@pytest.mark.parametrize("case, overrides, message", BAD_INPUTS, ids=[c[0] for c in BAD_INPUTS])
def test_bad_input_gives_one_exact_message(case, overrides, message):
    check_one_error(overrides, message)


def test_the_standalone_settings_are_only_checked_for_standalone():
    """Another orchestrator ignores the section, whatever it holds."""
    assert load({"standalone.runtime": "dlami-venv", "standalone.dlami_venv": "relative"})
    assert load({"standalone.root_device_name": "sda1", "orchestrator": "eks"})


def test_a_capacity_reservation_and_the_defaults_are_fine():
    loaded = load({"orchestrator": "standalone", "capacity.type": "capacity-reservation",
                   "capacity.reservation_id": "cr-0123456789abcdef0"})
    assert loaded.config.standalone.runtime == "container"
    assert loaded.config.standalone.root_device_name == "/dev/sda1"


def test_the_latest_pytorch_dlami_with_the_nxd_training_venv_is_a_warning():
    """The 'latest' PyTorch 2.9 DLAMI is a 2.31 one without NxD Training's environment."""
    base = {"orchestrator": "standalone", "standalone.runtime": "dlami-venv",
            "standalone.ami_ssm_parameter": NEURON_DLAMI_LATEST_PARAMETER}
    (warning,) = warnings_about(base, "standalone.ami_ssm_parameter")
    assert "should be null (the SDK 2.30.0 DLAMI)" in warning
    assert "2.31 dropped this NxD Training environment" in warning
    assert not warnings_about({**base, "standalone.dlami_venv": "/opt/aws_neuronx_venv_pytorch_2_9"},
                              "standalone.ami_ssm_parameter")
    assert not warnings_about({**base, "standalone.runtime": "container"},
                              "standalone.ami_ssm_parameter")


def test_dlami_venv_on_the_native_stack_with_its_dlami_named_is_fine():
    """ami_id or ami_ssm_parameter names the torch-neuronx DLAMI; the venv is the native
    stack's unless given; the container runtime needs neither."""
    for ami in ({'standalone.ami_id': 'ami-0123456789abcdef0'},
                {'standalone.ami_ssm_parameter': '/my/torch-neuronx/dlami'}):
        loaded = load({**TRN2, 'standalone.runtime': 'dlami-venv', **ami})
        assert loaded.config.neuron_stack == 'native' and not loaded.warnings
        assert loaded.config.standalone.dlami_venv is None
        assert loaded.config.standalone_settings.dlami_venv == NATIVE_STACK.venv
    assert load(TRN2).config.standalone_settings.runtime == 'container'
    # the xla stack on trn2 (a warning of its own) boots its DLAMI, which has the xla venv
    xla = load({**TRN2, 'training_image.neuron_stack': 'xla', 'standalone.runtime': 'dlami-venv'})
    assert xla.config.standalone_settings.dlami_venv == XLA_STACK.venv
    assert not [w for w in xla.warnings if w.field.startswith('standalone.')]


def test_the_resolved_venv_keeps_an_explicit_one():
    mine = '/opt/my_venv'
    for overrides in (TRN2, {'orchestrator': 'standalone'}):
        loaded = load({**overrides, 'standalone.runtime': 'dlami-venv',
                       'standalone.ami_id': 'ami-0123456789abcdef0',
                       'standalone.dlami_venv': mine})
        assert loaded.config.standalone_settings.dlami_venv == mine
    assert load({'orchestrator': 'standalone'}).config.standalone_settings.dlami_venv == (
        XLA_STACK.venv)


def test_an_unknown_instance_type_gets_its_own_error_not_a_crash():
    """The stack-dependent standalone checks skip a type the catalog does not know."""
    lines = errors({'orchestrator': 'standalone', 'instance_type': 'trn9.big',
                    'standalone.runtime': 'dlami-venv'})
    assert any(line.startswith("error: instance_type = 'trn9.big'") for line in lines), lines


def test_standalone_pools_on_a_capacity_block_and_the_native_stack():
    check_one_error(with_pools(TRN1_POOL, {**TRN2_POOL, "capacity": CAPACITY_BLOCK,
                                           "placement_group": False},
                               orchestrator="standalone"),
                    "error: pools[1].capacity.type = 'capacity-block': must be 'on-demand' or "
                    "'capacity-reservation' with orchestrator 'standalone': this project does "
                    "not launch an Auto Scaling group into a Capacity Block (see "
                    "docs/standalone.md)")
    (error,) = errors(with_pools(TRN1_POOL, TRN2_POOL, orchestrator="standalone",
                                 **{"standalone.runtime": "dlami-venv"}))
    assert error.startswith("error: standalone.runtime = 'dlami-venv': must be 'container' on "
                            "the native stack (pool trn2) unless standalone.ami_id")
