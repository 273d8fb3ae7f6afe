"""Rules of compute capacity: On-Demand, Capacity Reservation, Capacity Block."""

from __future__ import annotations

import pytest

from tests.config import (
    CAPACITY_BLOCK,
    CPU_POOL,
    TRN1_POOL,
    TRN2_POOL,
    check_one_error,
    errors,
    load,
    warnings_about,
    with_pools,
)

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
    ('placement group name on on-demand', {'capacity.placement_group_name': 'my-odcr-pg'},
     "error: capacity.placement_group_name = 'my-odcr-pg': must be null when capacity.type is 'on-demand': it names the cluster placement group an On-Demand Capacity Reservation was created in (capacity.type 'capacity-reservation') (see https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/cr-cpg.html)"),
    ('placement group name on a Capacity Block', {'capacity.type': 'capacity-block', 'capacity.reservation_id': 'cr-0123456789abcdef0', 'placement_group': 'false', 'capacity.placement_group_name': 'my-odcr-pg'},
     "error: capacity.placement_group_name = 'my-odcr-pg': must be null when capacity.type is 'capacity-block': it names the cluster placement group an On-Demand Capacity Reservation was created in (capacity.type 'capacity-reservation') (see https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/cr-cpg.html)"),
    ('placement group name without a placement group', {'capacity.type': 'capacity-reservation', 'capacity.reservation_id': 'cr-0123456789abcdef0', 'placement_group': 'false', 'capacity.placement_group_name': 'my-odcr-pg'},
     "error: capacity.placement_group_name = 'my-odcr-pg': must be null when placement_group is false (the nodes then launch into no placement group); set placement_group: true to launch them into this group (see https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/cr-cpg.html)"),
    ('placement group name on a type without EFA', {'capacity.type': 'capacity-reservation', 'capacity.reservation_id': 'cr-0123456789abcdef0', 'instance_type': 'trn1.2xlarge', 'orchestrator': 'standalone', 'capacity.placement_group_name': 'my-odcr-pg'},
     "error: capacity.placement_group_name = 'my-odcr-pg': must be null with instance_type 'trn1.2xlarge': a type without EFA launches into no placement group (see https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/cr-cpg.html)"),
    ('empty placement group name', {'capacity.type': 'capacity-reservation', 'capacity.reservation_id': 'cr-0123456789abcdef0', 'capacity.placement_group_name': "''"},
     "error: capacity.placement_group_name = '': must be 1 to 255 printable ASCII characters (an EC2 placement group name) (see https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_CreatePlacementGroup.html)"),
    ('placement group name of 256 characters', {'capacity.type': 'capacity-reservation', 'capacity.reservation_id': 'cr-0123456789abcdef0', 'capacity.placement_group_name': 'p' * 256},
     "error: capacity.placement_group_name = 'pppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppp... (258 characters): must be 1 to 255 printable ASCII characters (an EC2 placement group name) (see https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_CreatePlacementGroup.html)"),
    ('non-ASCII placement group name', {'capacity.type': 'capacity-reservation', 'capacity.reservation_id': 'cr-0123456789abcdef0', 'capacity.placement_group_name': 'grupo-añadido'},
     "error: capacity.placement_group_name = 'grupo-añadido': must be 1 to 255 printable ASCII characters (an EC2 placement group name) (see https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_CreatePlacementGroup.html)"),
]


@pytest.mark.parametrize("case, overrides, message", BAD_INPUTS, ids=[c[0] for c in BAD_INPUTS])
def test_bad_input_gives_one_exact_message(case, overrides, message):
    check_one_error(overrides, message)


# (case, context overrides, field, the exact warning about it; the configuration stays valid)
WARNINGS = [
    ('nodes with a Capacity Block on EKS', {'capacity.type': 'capacity-block', 'capacity.reservation_id': 'cr-0123456789abcdef0', 'placement_group': 'false'}, 'nodes',
     "warning: nodes = {'min': 0, 'desired': 1}: should be 0 with a Capacity Block, as they are not applied: the node group is created with 0 nodes (no instance can launch before the block starts); when it is active, run `trn-ultracluster scale --nodes N` (see https://docs.aws.amazon.com/eks/latest/userguide/capacity-blocks-mng.html)"),
    ('reservation with a new placement group', {'capacity.type': 'capacity-reservation', 'capacity.reservation_id': 'cr-0123456789abcdef0'}, 'capacity.placement_group_name',
     "warning: capacity.placement_group_name = None: should name the cluster placement group the reservation was created in: without it the stack creates a new, empty cluster placement group, in which the reservation holds no capacity (EC2 uses the reservation for instances launched into a placement group, but to hold capacity in one the reservation must be created in it, and an existing reservation cannot be moved into one), so launches can fail for insufficient capacity while the reservation has room; if the reservation is in no group, set placement_group: false to launch into the reservation alone (see https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/cr-cpg.html)"),
]


ODCR = {'capacity.type': 'capacity-reservation', 'capacity.reservation_id': 'cr-0123456789abcdef0'}


@pytest.mark.parametrize("overrides", [
    {**ODCR, 'capacity.placement_group_name': 'my-odcr-pg'},
    {**ODCR, 'placement_group': 'false'},
], ids=["group named", "no placement group"])
def test_reservation_in_its_group_or_without_one_has_no_placement_warning(overrides):
    assert warnings_about(overrides, 'capacity.placement_group_name') == []


def test_placement_group_name_of_255_printable_ascii_characters_is_valid():
    name = ''.join(chr(32 + i % 95) for i in range(255))
    config = load({**ODCR, 'capacity.placement_group_name': name}).config
    assert config.capacity.placement_group_name == name and config.uses_placement_group


@pytest.mark.parametrize("case, overrides, field, message", WARNINGS, ids=[c[0] for c in WARNINGS])
def test_warning_gives_one_exact_message(case, overrides, field, message):
    assert warnings_about(overrides, field) == [message]


# --- per pool ---------------------------------------------------------------------------

RID = "cr-0123456789abcdef0"
ODCR_DOC = "https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/capacity-reservations-launch.html"


def test_a_pools_own_capacity_is_checked_under_its_own_key():
    check_one_error(with_pools(TRN1_POOL, {**TRN2_POOL, "capacity": {
        "type": "capacity-reservation", "reservation_id": "cr-x"}, "placement_group": False}),
        "error: pools[1].capacity.reservation_id = 'cr-x': must be 'cr-' followed by 8 or 17 hex "
        "digits (see https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/resource-ids.html)")
    check_one_error(with_pools(TRN1_POOL, {**TRN2_POOL, "capacity": {
        "type": "capacity-reservation"}, "placement_group": False}),
        "error: pools[1].capacity.reservation_id = None: must be set (cr-...) when "
        f"pools[1].capacity.type is 'capacity-reservation' (see {ODCR_DOC})")


def test_one_reservation_holds_one_instance_type():
    """A pool that takes the top-level reservation of another type cannot launch into it."""
    check_one_error(
        with_pools(TRN1_POOL, TRN2_POOL, **{"capacity.type": "capacity-reservation",
                                            "capacity.reservation_id": RID,
                                            "capacity.placement_group_name": "pg"}),
        f"error: capacity.reservation_id = '{RID}': must not be the reservation of pool 'trn1' "
        "(trn1.32xlarge) for pool 'trn2' (trn2.48xlarge): a reservation holds one instance type; "
        "give pools[1] a capacity of its own (e.g. {type: on-demand}) (see " + ODCR_DOC + ")")
    # two pools of one type may share it (preflight checks it holds both pools' nodes)
    load(with_pools(TRN1_POOL, {**TRN1_POOL, "name": "trn1b"}, CPU_POOL | {"capacity": {
        "type": "on-demand"}}, **{"capacity.type": "capacity-reservation",
                                  "capacity.reservation_id": RID,
                                  "capacity.placement_group_name": "pg"}))


def test_a_capacity_block_pool_needs_no_placement_group_and_starts_at_0_on_eks():
    block = {**TRN2_POOL, "capacity": CAPACITY_BLOCK, "placement_group": False,
             "nodes": {"min": 0, "desired": 2, "max": 4}}
    config = with_pools(TRN1_POOL, block)
    (warning,) = warnings_about(config, "pools[1].nodes")
    assert warning.startswith("warning: pools[1].nodes = {'min': 0, 'desired': 2}: should be 0 "
                              "with a Capacity Block")
    assert "run `trn-ultracluster scale --pool trn2 --nodes N`" in warning
    assert warnings_about(config, "nodes") == []  # the main pool is on-demand


def test_a_reservation_pool_is_told_about_its_own_placement_group():
    odcr = {"type": "capacity-reservation", "reservation_id": RID}
    (warning,) = warnings_about(with_pools(TRN1_POOL, {**TRN2_POOL, "capacity": odcr}),
                                "pools[1].capacity.placement_group_name")
    assert warning.endswith("if the reservation is in no group, set pools[1].placement_group: "
                            "false to launch into the reservation alone (see "
                            "https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/cr-cpg.html)")
    assert errors(with_pools(TRN1_POOL, {**TRN2_POOL, "placement_group": False, "capacity": {
        **odcr, "placement_group_name": "pg"}})) == [
        "error: pools[1].capacity.placement_group_name = 'pg': must be null when "
        "pools[1].placement_group is false (the nodes then launch into no placement group); set "
        "pools[1].placement_group: true to launch them into this group (see "
        "https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/cr-cpg.html)"]
