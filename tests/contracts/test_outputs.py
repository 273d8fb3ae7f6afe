"""``contracts/outputs.py``: the ``FsxEfa`` output's description carries why ``fsx.efa``
decided as it did, within CloudFormation's 1,024 characters."""

from __future__ import annotations

from tests.config import load
from trn_ultracluster.config.fsx_efa import plan_fsx_efa
from trn_ultracluster.contracts.outputs import (
    OUTPUT_DESCRIPTION_MAX_CHARS,
    fsx_efa_description,
    fsx_efa_reason,
)


def test_the_reason_round_trips_through_the_description():
    why = "off (auto): fsx.storage_capacity_gib must be a multiple of 4,800 GiB"
    assert fsx_efa_reason(fsx_efa_description(why)) == why
    assert fsx_efa_reason("FSx for Lustre over EFA: off") is None  # an older stack
    assert fsx_efa_reason(None) is None


def test_the_longest_reason_fits_an_output_description():
    """``auto`` with every rule failing above 10 GB/s gives the longest reason; it must fit
    CloudFormation's limit ("between 0 and 1024 bytes", "Outputs syntax") or be cut."""
    c = load({"instance_type": "trn2.48xlarge", "az_ids": "use2-az3,use2-az1",
              "efa_interface_layout": "efa-only", "nodes.max": "2000", "nodes.desired": "0",
              "fsx.storage_capacity_gib": "60000", "fsx.per_unit_storage_throughput": "1000",
              "fsx.efa": "auto"}).config
    plan = plan_fsx_efa(c)
    assert plan.gains and len(plan.failed) >= 2
    text = fsx_efa_description(plan.reason)
    assert len(text) <= OUTPUT_DESCRIPTION_MAX_CHARS and text.isascii()  # bytes = characters
    assert len(fsx_efa_description("x" * 2000)) == OUTPUT_DESCRIPTION_MAX_CHARS
    assert fsx_efa_description("x" * 2000).endswith("...")
