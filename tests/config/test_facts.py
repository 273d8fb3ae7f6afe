"""AWS facts: AZ ID to Region."""

from __future__ import annotations

import pytest

from trn_ultracluster.config import region_of_az_id
from trn_ultracluster.config.facts import AZ_ID_PREFIX_TO_REGION


@pytest.mark.parametrize("az_id, region", [
    ("usw2-az4", "us-west-2"), ("use1-az6", "us-east-1"), ("use2-az3", "us-east-2"),
    ("apse4-az1", "ap-southeast-4"), ("aps1-az2", "ap-south-1"),
])
def test_region_from_az_id(az_id, region):
    assert region_of_az_id(az_id) == region


@pytest.mark.parametrize("az_id, error", [
    ("us-west-2a", "is not an AZ ID like 'usw2-az4'"),
    ("xyz9-az1", "unknown region code 'xyz9'"),
])
def test_region_of_a_bad_az_id_is_a_value_error(az_id, error):
    with pytest.raises(ValueError, match=error):
        region_of_az_id(az_id)


def test_every_region_code_names_a_distinct_region():
    assert len(set(AZ_ID_PREFIX_TO_REGION.values())) == len(AZ_ID_PREFIX_TO_REGION)
