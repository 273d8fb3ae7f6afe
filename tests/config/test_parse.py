"""Parsing: pydantic's shape and type errors in the one message style, and every problem
reported at once."""

from __future__ import annotations

import pytest

from tests.config import check_one_error, errors
from trn_ultracluster.config.parse import _TYPE_MESSAGES

# (case, context overrides as `-c` would give them, the exact message of the one error)
BAD_INPUTS = [
    ('unknown image build', {'training_image.build': 'docker'},
     "error: training_image.build = 'docker': must be 'codebuild' or 'local' (see docs/configuration.md)"),
    ('unknown deployment type', {'fsx.deployment_type': 'PERSISTENT_3'},
     "error: fsx.deployment_type = 'PERSISTENT_3': must be 'SCRATCH_1', 'SCRATCH_2', 'PERSISTENT_1' or 'PERSISTENT_2' (see https://docs.aws.amazon.com/fsx/latest/LustreGuide/using-fsx-lustre.html)"),
    ('count not a number', {'nodes.max': 'many'},
     "error: nodes.max = 'many': must be a whole number (see docs/configuration.md)"),
    ('unknown orchestrator', {'orchestrator': 'slurm'},
     "error: orchestrator = 'slurm': must be 'eks', 'hyperpod-slurm', 'hyperpod-eks' or 'standalone' (see docs/configuration.md)"),
    ('unknown top-level key', {'instance_typo': 'trn1.32xlarge'},
     "error: instance_typo = 'trn1.32xlarge': must be one of the known keys here: az_ids, capacity, data_removal_policy, efa_interface_layout, eks, fsx, hyperpod, instance_type, nat_gateways, nodes, observability, orchestrator, placement_group, pools, quotas, root_volume_gib, scheduling, stack_name, standalone, tags, teams, training_image, vpc_cidr, vpc_secondary_cidrs (see docs/configuration.md)"),
    ('unknown nested key', {'fsx.capacity': '1200'},
     'error: fsx.capacity = 1200: must be one of the known keys here: data_compression, data_repository, deployment_type, efa, lustre_version, per_unit_storage_throughput, storage_capacity_gib (see https://docs.aws.amazon.com/fsx/latest/LustreGuide/using-fsx-lustre.html)'),
    ('unknown removal policy', {'data_removal_policy': 'snapshot'},
     "error: data_removal_policy = 'snapshot': must be 'retain' or 'destroy' (see docs/configuration.md)"),
    ('unknown EFA layout', {'efa_interface_layout': 'ena'},
     "error: efa_interface_layout = 'ena': must be 'efa' or 'efa-only' (see https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa-acc-inst-types.html)"),
    ('float-looking Lustre version', {'fsx.lustre_version': 2.150001},
     "error: fsx.lustre_version = '2.150001': must be '2.10', '2.12' or '2.15' (see https://docs.aws.amazon.com/fsx/latest/LustreGuide/using-fsx-lustre.html)"),
]


@pytest.mark.parametrize("case, overrides, message", BAD_INPUTS, ids=[c[0] for c in BAD_INPUTS])
def test_bad_input_gives_one_exact_message(case, overrides, message):
    check_one_error(overrides, message)


def test_every_problem_is_reported_also_when_a_type_is_wrong():
    found = errors({"nodes.max": "many", "fsx.storage_capacity_gib": "3000",
                    "az_ids": "usw2-az4,use1-az6"})
    assert [e.split(" = ")[0] for e in found] == [
        "error: nodes.max", "error: az_ids", "error: fsx.storage_capacity_gib"]
    # no second-order complaint about the bad field's default (nodes.desired vs nodes.max)
    assert not any("nodes.desired" in e for e in found)


@pytest.mark.parametrize("value, message", [
    ("1" * 5000, "must be a whole number"),  # beyond Python's and pydantic's int digits
    (".inf", "must be a finite number"),
])
def test_numbers_out_of_any_range_are_clean_errors(value, message):
    (error,) = errors({"nodes.max": value})
    assert error.startswith("error: nodes.max = ") and f": {message} (see " in error


def test_type_messages_say_must():
    assert all(m.startswith("must ") for m in _TYPE_MESSAGES.values())


@pytest.mark.parametrize("field, kind", [
    ("nodes.max", "must be a whole number"),
    ("fsx.storage_capacity_gib", "must be a whole number"),
    ("observability.idle_hours", "must be a whole number"),
    ("observability.idle_utilization_percent", "must be a number"),
])
def test_true_is_not_a_number(field, kind):
    """Lax pydantic would read ``true`` as 1: a count of ``true`` is a mistake."""
    assert any(line.startswith(f"error: {field} = True: {kind}") for line in errors({field: "true"}))
