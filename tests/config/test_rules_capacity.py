"""Rules of compute capacity: On-Demand, Capacity Reservation, Capacity Block."""

from __future__ import annotations

import pytest

from tests.config import check_one_error, warnings_about

# (case, context overrides as `-c` would give them, the exact message of the one error)
BAD_INPUTS = [
    ('Capacity Block with placement group', {'capacity.type': 'capacity-block', 'capacity.reservation_id': 'cr-0123456789abcdef0'},
     "error: placement_group = True: must be false with capacity.type 'capacity-block' (Capacity Blocks are already placed close together and cannot be combined with a cluster placement group) (see https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/capacity-blocks-launch.html)"),
    ('reservation without id', {'capacity.type': 'capacity-reservation'},
     "error: capacity.reservation_id = None: must be set (cr-...) when capacity.type is 'capacity-reservation' (see https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/capacity-reservations-launch.html)"),
    ('malformed reservation id', {'capacity.type': 'capacity-reservation', 'capacity.reservation_id': 'cr-xyz'},
     "error: capacity.reservation_id = 'cr-xyz': must be 'cr-' followed by 8 or 17 hex digits (see https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/resource-ids.html)"),
    ('reservation id on on-demand', {'capacity.reservation_id': 'cr-0123456789abcdef0'},
     "error: capacity.reservation_id = 'cr-0123456789abcdef0': must be null when capacity.type is 'on-demand' (see https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/capacity-reservations-launch.html)"),
]


@pytest.mark.parametrize("case, overrides, message", BAD_INPUTS, ids=[c[0] for c in BAD_INPUTS])
def test_bad_input_gives_one_exact_message(case, overrides, message):
    check_one_error(overrides, message)


# (case, context overrides, field, the exact warning about it; the configuration stays valid)
WARNINGS = [
    ('nodes with a Capacity Block on EKS', {'capacity.type': 'capacity-block', 'capacity.reservation_id': 'cr-0123456789abcdef0', 'placement_group': 'false'}, 'nodes',
     "warning: nodes = {'min': 0, 'desired': 1}: should be 0 with a Capacity Block, as they are not applied: the node group is created with 0 nodes (no instance can launch before the block starts); when it is active, run `trn-ultracluster scale --nodes N` (see https://docs.aws.amazon.com/eks/latest/userguide/capacity-blocks-mng.html)"),
]


@pytest.mark.parametrize("case, overrides, field, message", WARNINGS, ids=[c[0] for c in WARNINGS])
def test_warning_gives_one_exact_message(case, overrides, field, message):
    assert warnings_about(overrides, field) == [message]
