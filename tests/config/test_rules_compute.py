"""Rules of the Trainium nodes: instance type, node counts, EFA, root volume."""

from __future__ import annotations

import pytest

from tests.config import check_one_error, errors, load, warnings_about

# (case, context overrides as `-c` would give them, the exact message of the one error)
BAD_INPUTS = [
    ('unknown instance type', {'instance_type': 'trn3.48xlarge'},
     "error: instance_type = 'trn3.48xlarge': must be one of 'trn1.2xlarge', 'trn1.32xlarge', 'trn1n.32xlarge', 'trn2.3xlarge', 'trn2.48xlarge' or 'trn2u.48xlarge' (see https://docs.aws.amazon.com/ec2/latest/instancetypes/ac.html)"),
    ('trn1.2xlarge multi-node', {'instance_type': 'trn1.2xlarge', 'nodes.max': '2'},
     "error: nodes.max = 2: must be 1 for trn1.2xlarge, which has no EFA (single-node only); for more nodes use 'trn1.32xlarge', 'trn1n.32xlarge', 'trn2.3xlarge', 'trn2.48xlarge' or 'trn2u.48xlarge' (see https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa-acc-inst-types.html)"),
    ('negative node count', {'nodes.min': '-1'},
     'error: nodes.min = -1: must be 0 or more (see docs/configuration.md)'),
    ('min > max', {'nodes.min': '3', 'nodes.max': '2'},
     'error: nodes.min = 3: must be at most nodes.max (2) (see docs/configuration.md)'),
    ('desired > max', {'nodes.desired': '5', 'nodes.max': '2'},
     'error: nodes.desired = 5: must be between nodes.min (0) and nodes.max (2) (see docs/configuration.md)'),
    ('max zero', {'nodes.max': '0', 'nodes.desired': '0'},
     'error: nodes.max = 0: must be at least 1 (use nodes.desired = 0 to idle) (see docs/configuration.md)'),
    ('too many nodes', {'nodes.max': '999999'},
     'error: nodes.max = 999999: must be at most 100,000 (the largest EKS cluster) (see https://aws.amazon.com/blogs/containers/amazon-eks-enables-ultra-scale-ai-ml-workloads-with-support-for-100k-nodes-per-cluster/)'),
    ('part of an UltraServer', {'instance_type': 'trn2u.48xlarge', 'nodes.max': '6', 'nodes.desired': '4'},
     "error: nodes.max = 6: must be a multiple of 4 for trn2u.48xlarge (e.g. 4 or 8): an UltraServer is 4 trn2u.48xlarge instances in one NeuronLink domain, sold as one Capacity Block, and a 4-node Neuron UltraServer job (Neuron's default) needs all 4 of one UltraServer (see https://awsdocs-neuron.readthedocs-hosted.com/en/latest/about-neuron/arch/neuron-hardware/trn2-arch.html)"),
    ('less than one UltraServer running',
     {'instance_type': 'trn2u.48xlarge', 'nodes.max': '8', 'nodes.desired': '2'},
     "error: nodes.desired = 2: must be 0 or a multiple of 4 for trn2u.48xlarge (e.g. 4): an UltraServer is 4 trn2u.48xlarge instances in one NeuronLink domain, sold as one Capacity Block, and a 4-node Neuron UltraServer job (Neuron's default) needs all 4 of one UltraServer (see https://awsdocs-neuron.readthedocs-hosted.com/en/latest/about-neuron/arch/neuron-hardware/trn2-arch.html)"),
    ('root volume too small', {'root_volume_gib': '8'},
     'error: root_volume_gib = 8: must be between 64 and 16384 GiB (see https://docs.aws.amazon.com/ebs/latest/userguide/general-purpose.html)'),
]


@pytest.mark.parametrize("case, overrides, message", BAD_INPUTS, ids=[c[0] for c in BAD_INPUTS])
def test_bad_input_gives_one_exact_message(case, overrides, message):
    check_one_error(overrides, message)


def test_efa_only_on_a_type_without_efa_warns_and_changes_nothing(synth):
    overrides = {"instance_type": "trn1.2xlarge", "placement_group": "false",
                 "efa_interface_layout": "efa-only"}
    assert warnings_about(overrides, "efa_interface_layout") == [
        "warning: efa_interface_layout = 'efa-only': should be left out for trn1.2xlarge, which "
        "has no EFA: the nodes get one ordinary network interface, so 'efa-only' has no effect "
        "(see https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa-acc-inst-types.html)"]
    assert warnings_about({"efa_interface_layout": "efa-only"}, "efa_interface_layout") == []


@pytest.mark.parametrize("nodes", [
    {"nodes.min": "0", "nodes.desired": "0", "nodes.max": "4"},  # idle until the block starts
    {"nodes.min": "4", "nodes.desired": "8", "nodes.max": "8"},  # two whole UltraServers
])
def test_whole_ultraservers_are_accepted(nodes):
    config = load({"instance_type": "trn2u.48xlarge", **nodes}).config
    assert config.nodes.max % config.instance.ultraserver_nodes == 0


def test_the_ultraserver_rule_leaves_other_types_alone():
    """Types sold alone (``ultraserver_nodes`` None) take any count, e.g. 6 trn2.48xlarge."""
    assert load({"instance_type": "trn2.48xlarge", "nodes.max": "6", "az_ids": "use2-az1,use2-az2"}
                ).config.nodes.max == 6


def test_min_desired_and_max_each_named_once():
    """Three counts off the UltraServer size give three errors, one per field."""
    found = errors({"instance_type": "trn2u.48xlarge", "nodes.min": "1", "nodes.desired": "2",
                    "nodes.max": "6"})
    assert [e.split(" = ")[0] for e in found] == [
        "error: nodes.max", "error: nodes.min", "error: nodes.desired"]
