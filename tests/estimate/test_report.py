"""The estimate: totals, lower bounds, prepaid capacity, deploy time, and its text."""

from __future__ import annotations

import pytest

from tests.conftest import PROFILES, profile_path
from trn_ultracluster.deploy_time import critical_path
from trn_ultracluster.estimate import OfflinePrices, estimate, format_estimate
from trn_ultracluster.estimate.prices import HOURS_PER_MONTH, OFFLINE


def test_default_totals_are_the_sum_of_priced_lines(default):
    est = estimate(default.template, OfflinePrices(default.config.region))
    cfg = default.config
    trn = OFFLINE[("ec2", cfg.instance_type)].usd
    fsx = OFFLINE[("fsx-lustre", f"{cfg.fsx.deployment_type}/{cfg.fsx.per_unit_storage_throughput}")]
    fixed = (0.10 + 2 * 0.192 + cfg.nat_gateways * 0.045
             + cfg.fsx.storage_capacity_gib * fsx.usd / HOURS_PER_MONTH)
    assert est.idle_usd == pytest.approx(fixed + cfg.nodes.min * trn)
    assert est.running_usd == pytest.approx(fixed + cfg.nodes.max * trn)
    assert est.complete
    assert est.deploy_minutes == critical_path(default.template).total_minutes


def test_hyperpod_instances_without_an_ml_price_are_lower_bounds(synth):
    est = estimate(synth(orchestrator="hyperpod-slurm").template, OfflinePrices("us-west-2"))
    ml = [line for line in est.lines if line.item.key[0] == "sagemaker-cluster"]
    assert ml and all(line.lower_bound for line in ml)
    assert not est.complete
    text = format_estimate(est)
    assert "incomplete" in text and ">=$21.50" in text


def test_prepaid_capacity_stays_out_of_the_totals(synth):
    est = estimate(synth(profile_path("trn2")).template, OfflinePrices("us-east-2"))
    assert est.idle_usd == est.running_usd  # the Capacity Block nodes are the only variable
    assert "prepaid" in format_estimate(est)


@pytest.mark.parametrize("profile", PROFILES, ids=[p.stem for p in PROFILES])
def test_every_profile_prints_an_itemized_estimate_offline(synth, profile):
    s = synth(profile)
    text = format_estimate(estimate(s.template, OfflinePrices(s.config.region)))
    assert "offline table of" in text and "first deploy: about" in text
    assert s.config.instance_type in text
    assert sum(row.startswith("NAT gateway ") for row in text.splitlines()) == s.config.nat_gateways
