"""Rules of the network: AZ IDs, the VPC block and its address plan, NAT gateways."""

from __future__ import annotations

import pytest

from tests.config import (
    CPU_POOL,
    TRN1_POOL,
    TRN2_POOL,
    check_one_error,
    load,
    warnings_about,
    with_pools,
)

# (case, context overrides as `-c` would give them, the exact message of the one error)
BAD_INPUTS = [
    ('AZ IDs from two regions', {'az_ids': 'usw2-az4,use1-az6'},
     "error: az_ids = ['usw2-az4', 'use1-az6']: must all be in one Region (usw2-az4 is in us-west-2, use1-az6 is in us-east-1) (see https://docs.aws.amazon.com/ram/latest/userguide/working-with-az-ids.html)"),
    ('malformed AZ ID', {'az_ids': 'us-west-2a,usw2-az1'},
     "error: az_ids[0] = 'us-west-2a': must be an AZ ID like 'usw2-az4' (AZ IDs name the same zone in every account; AZ names like 'us-west-2a' do not) (see https://docs.aws.amazon.com/ram/latest/userguide/working-with-az-ids.html)"),
    ('unknown region code', {'az_ids': 'usw2-az4,xyz9-az2'},
     "error: az_ids[1] = 'xyz9-az2': must start with a known Region code, not 'xyz9'; known: apne1, apne2, aps1, apse1, apse2, apse4, cac1, euc1, eun1, euw1, euw2, sae1, use1, use2, usw1, usw2 (see https://docs.aws.amazon.com/ram/latest/userguide/working-with-az-ids.html)"),
    ('one AZ ID', {'az_ids': 'usw2-az4'},
     "error: az_ids = ['usw2-az4']: must list at least 2 AZ IDs of one Region (first = compute AZ; a second for the services that need two AZs) (see https://docs.aws.amazon.com/ram/latest/userguide/working-with-az-ids.html)"),
    ('repeated AZ ID', {'az_ids': 'usw2-az4,usw2-az4'},
     "error: az_ids = ['usw2-az4', 'usw2-az4']: must not repeat an AZ ID (see https://docs.aws.amazon.com/ram/latest/userguide/working-with-az-ids.html)"),
    ('CIDR too small', {'vpc_cidr': '10.0.0.0/28'},
     "error: vpc_cidr = '10.0.0.0/28': must address nodes.max = 1 nodes of 24 addresses (8 EFA interfaces with an address + 16 pods): a /28 VPC cannot hold a private subnet and a /24 public one in each of 2 AZs; use a larger block (a /16 at most) (see https://docs.aws.amazon.com/vpc/latest/userguide/amazon-vpc-limits.html)"),
    ('CIDR malformed', {'vpc_cidr': '10.0.0.0/33'},
     "error: vpc_cidr = '10.0.0.0/33': must be an IPv4 CIDR block like '10.0.0.0/16' ('10.0.0.0/33' does not appear to be an IPv4 or IPv6 network) (see https://docs.aws.amazon.com/vpc/latest/userguide/vpc-cidr-blocks.html)"),
    ('CIDR host bits', {'vpc_cidr': '10.0.0.1/16'},
     "error: vpc_cidr = '10.0.0.1/16': must be an IPv4 CIDR block like '10.0.0.0/16' (10.0.0.1/16 has host bits set) (see https://docs.aws.amazon.com/vpc/latest/userguide/vpc-cidr-blocks.html)"),
    ('CIDR too large', {'vpc_cidr': '10.0.0.0/8'},
     "error: vpc_cidr = '10.0.0.0/8': must be an IPv4 block between /16 and /28 (see https://docs.aws.amazon.com/vpc/latest/userguide/vpc-cidr-blocks.html)"),
    ('NAT count', {'nat_gateways': '3'},
     'error: nat_gateways = 3: must be 1 or 2 (one, or one per AZ ID) (see https://docs.aws.amazon.com/vpc/latest/userguide/vpc-nat-gateway.html)'),
    ('public VPC range', {'vpc_cidr': '8.8.0.0/16'},
     "error: vpc_cidr = '8.8.0.0/16': must lie in a private range: 10.0.0.0/8, 172.16.0.0/12 or 192.168.0.0/16 (RFC 1918) or 100.64.0.0/10 (RFC 6598) (see https://docs.aws.amazon.com/vpc/latest/userguide/vpc-cidr-blocks.html)"),
    ('loopback VPC range', {'vpc_cidr': '127.0.0.0/16'},
     "error: vpc_cidr = '127.0.0.0/16': must lie in a private range: 10.0.0.0/8, 172.16.0.0/12 or 192.168.0.0/16 (RFC 1918) or 100.64.0.0/10 (RFC 6598) (see https://docs.aws.amazon.com/vpc/latest/userguide/vpc-cidr-blocks.html)"),
    ('multicast VPC range', {'vpc_cidr': '224.0.0.0/16'},
     "error: vpc_cidr = '224.0.0.0/16': must lie in a private range: 10.0.0.0/8, 172.16.0.0/12 or 192.168.0.0/16 (RFC 1918) or 100.64.0.0/10 (RFC 6598) (see https://docs.aws.amazon.com/vpc/latest/userguide/vpc-cidr-blocks.html)"),
    ('more nodes than the given blocks hold', {'nodes.max': '5000', 'vpc_secondary_cidrs': '100.64.0.0/20'},
     "error: vpc_secondary_cidrs = ['100.64.0.0/20']: must address nodes.max = 5000 nodes of 24 addresses (8 EFA interfaces with an address + 16 pods): 5000 nodes of 24 addresses do not fit 10.0.0.0/16 and the secondary blocks given in vpc_secondary_cidrs: at most 2546 nodes; lower nodes.max to 2546 or add blocks (see https://docs.aws.amazon.com/vpc/latest/userguide/amazon-vpc-limits.html)"),
    ('secondary block from another RFC 1918 range', {'vpc_secondary_cidrs': '172.16.0.0/16'},
     "error: vpc_secondary_cidrs[0] = '172.16.0.0/16': must lie in 10.0.0.0/8 or 100.64.0.0/10 next to a primary block in 10.0.0.0/8: the VPC refuses other RFC 1918 ranges (see https://docs.aws.amazon.com/vpc/latest/userguide/vpc-cidr-blocks.html#add-cidr-block-restrictions)"),
    ('secondary block overlaps', {'vpc_secondary_cidrs': '10.1.0.0/16,10.1.128.0/17'},
     "error: vpc_secondary_cidrs[1] = '10.1.128.0/17': must not overlap vpc_cidr or an earlier secondary block (see https://docs.aws.amazon.com/vpc/latest/userguide/vpc-cidr-blocks.html#add-cidr-block-restrictions)"),
    ('secondary 10.0.0.0/16 next to 10.1.0.0/16', {'vpc_cidr': '10.1.0.0/16', 'vpc_secondary_cidrs': '10.0.0.0/16'},
     "error: vpc_secondary_cidrs[0] = '10.0.0.0/16': must not lie in 10.0.0.0/16 when a block of the VPC is in 10.0.0.0/15 (the VPC refuses it) (see https://docs.aws.amazon.com/vpc/latest/userguide/vpc-cidr-blocks.html#add-cidr-block-restrictions)"),
    ('secondary block too large', {'vpc_secondary_cidrs': '10.2.0.0/15'},
     "error: vpc_secondary_cidrs[0] = '10.2.0.0/15': must be an IPv4 block between /16 and /28 (see https://docs.aws.amazon.com/vpc/latest/userguide/vpc-cidr-blocks.html)"),
]


@pytest.mark.parametrize("case, overrides, message", BAD_INPUTS, ids=[c[0] for c in BAD_INPUTS])
def test_bad_input_gives_one_exact_message(case, overrides, message):
    check_one_error(overrides, message)


# (case, context overrides, field, the exact warning about it; the configuration stays valid)
WARNINGS = [
    ('AZ where the type was never seen', {'az_ids': 'usw2-az3,usw2-az1'}, 'az_ids[0]',
     "warning: az_ids[0] = 'usw2-az3': should be an AZ ID where trn1.32xlarge has been seen offered (use1-az4, use1-az5, use1-az6, use2-az3, usw2-az1, usw2-az4, aps1-az2, apse2-az1, apse2-az2, apse4-az1): run `preflight` to check your account (see https://docs.aws.amazon.com/ram/latest/userguide/working-with-az-ids.html)"),
    ('type with no AZ recorded', {'instance_type': 'trn2u.48xlarge', 'nodes.max': '4', 'nodes.desired': '4'}, 'az_ids[0]',
     "warning: az_ids[0] = 'usw2-az4': should be an AZ ID where trn2u.48xlarge has been seen offered (none recorded): run `preflight` to check your account (see https://docs.aws.amazon.com/ram/latest/userguide/working-with-az-ids.html)"),
]


@pytest.mark.parametrize("case, overrides, field, message", WARNINGS, ids=[c[0] for c in WARNINGS])
def test_warning_gives_one_exact_message(case, overrides, field, message):
    assert warnings_about(overrides, field) == [message]


def test_az_where_type_was_never_seen_is_a_warning_not_an_error():
    loaded = load({"az_ids": "usw2-az3,usw2-az1"})
    assert loaded.config.compute_az_id == "usw2-az3"
    (warning,) = [w for w in loaded.warnings if w.field.startswith("az_ids")]
    assert warning.field == "az_ids[0]" and warning.severity == "warning"
    assert "has been seen offered (" in str(warning)
    assert "preflight" in str(warning)


def test_every_trainium_pools_type_is_looked_up_in_the_compute_az():
    """usw2-az4 offers trn1.32xlarge but no trn2.48xlarge (catalog az_ids_seen): one warning,
    naming the trn2 pool; the CPU pool is left to preflight (no AZ IDs recorded)."""
    config = with_pools(TRN1_POOL, TRN2_POOL, CPU_POOL, az_ids="usw2-az4,usw2-az1")
    assert warnings_about(config, "az_ids[0]") == [
        "warning: az_ids[0] = 'usw2-az4': should be an AZ ID where trn2.48xlarge (pool trn2) has "
        "been seen offered (use2-az1, use2-az2, use2-az3): run `preflight` to check your account "
        "(see https://docs.aws.amazon.com/ram/latest/userguide/working-with-az-ids.html)"]
    assert warnings_about(with_pools(TRN1_POOL, TRN2_POOL, CPU_POOL), "az_ids[0]") == []
