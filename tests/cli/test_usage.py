"""Accounting arithmetic of ``usage`` (trn_ultracluster.cli.usage): the period of
``--since``/``--until``, the seconds of a job inside it, node-hours, NeuronCore-hours from the
catalog, cost from a price per hour (n/a without one), and the table."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from trn_ultracluster.cli.errors import CliError, ExitCode
from trn_ultracluster.cli.usage import (
    Period,
    TeamUsage,
    UsageRecord,
    parse_period,
    summarize,
    usage_lines,
)
from trn_ultracluster.contracts.pools import PoolInfo

NOW = datetime(2026, 11, 27, 12, 0, tzinfo=timezone.utc)
UTC = timezone.utc
POOLS = (PoolInfo("trn1", "trn1.32xlarge", True, 0, 3, 4),
         PoolInfo("trn2", "trn2.48xlarge", True, 0, 0, 2),
         PoolInfo("cpu", "m7i.8xlarge", False, 0, 2, 2))
PRICES = {"trn1.32xlarge": 21.50, "m7i.8xlarge": 1.6128}
"""The offline table's figures (estimate/prices.py); trn2.48xlarge has none there."""
HOUR = 3600.0


@pytest.mark.parametrize("since, until, start, end", [
    (None, None, NOW - timedelta(days=30), NOW),
    ("2026-11-01", None, datetime(2026, 11, 1, tzinfo=UTC), NOW),
    ("2026-11-01T08:30", "2026-11-02T08:30:15", datetime(2026, 11, 1, 8, 30, tzinfo=UTC),
     datetime(2026, 11, 2, 8, 30, 15, tzinfo=UTC)),
    ("7d", "now", NOW - timedelta(days=7), NOW),
    ("36h", "12h", NOW - timedelta(hours=36), NOW - timedelta(hours=12)),
    (" 2026-11-20 ", None, datetime(2026, 11, 20, tzinfo=UTC), NOW),
])
def test_the_forms_of_since_and_until(since, until, start, end):
    assert parse_period(since, until, now=NOW) == Period(start, end)


@pytest.mark.parametrize("since, until, message", [
    ("yesterday", None, "--since 'yesterday' is not a time: give YYYY-MM-DD, "
                        "YYYY-MM-DDTHH:MM[:SS] (UTC), now, or Nd / Nh (days or hours ago)"),
    (None, "2026/11/01", "--until '2026/11/01' is not a time"),
    ("7w", None, "--since '7w' is not a time"),
    ("2026-11-31", None, "--since '2026-11-31' is not a time (day is out of range for month): "
                        "give YYYY-MM-DD"),
    ("2026-12-01", "2026-11-01", "--since 2026-12-01 00:00:00 UTC must be before --until "
                                 "2026-11-01 00:00:00 UTC"),
    ("now", None, "--since 2026-11-27 12:00:00 UTC (now) must be before --until "
                  "2026-11-27 12:00:00 UTC (the default)"),
    ("2027-01-01", None, "--since 2027-01-01 00:00:00 UTC must be before --until "
                         "2026-11-27 12:00:00 UTC (the default)"),
    ("1h", "2d", "--since 2026-11-27 11:00:00 UTC (1h) must be before --until "
                 "2026-11-25 12:00:00 UTC (2d)"),
])
def test_a_bad_period_is_a_usage_error(since, until, message):
    with pytest.raises(CliError) as err:
        parse_period(since, until, now=NOW)
    assert err.value.message.startswith(message)
    assert err.value.exit_code == ExitCode.USAGE and err.value.fix


def test_clip_counts_the_seconds_inside_the_period():
    period = Period(datetime(2026, 11, 1, tzinfo=UTC), datetime(2026, 11, 2, tzinfo=UTC))
    at = lambda h: datetime(2026, 11, 1, tzinfo=UTC) + timedelta(hours=h)  # noqa: E731
    assert period.seconds == 24 * HOUR
    assert period.clip(at(1), at(3)) == 2 * HOUR           # inside
    assert period.clip(at(-5), at(2)) == 2 * HOUR          # began before
    assert period.clip(at(23), at(30)) == 1 * HOUR         # ended after
    assert period.clip(at(-5), at(-1)) == 0                # before
    assert period.clip(at(25), at(26)) == 0                # after
    assert period.clip(at(20), None) == 4 * HOUR           # still running, the period is past


def test_summarize_adds_node_hours_neuron_core_hours_and_cost_per_team_and_pool():
    records = [
        UsageRecord("research", "trn1", "1", 2, 3 * HOUR),
        UsageRecord("research", "trn1", "2", 1, 1.5 * HOUR),
        UsageRecord("research", "cpu", "3", 1, 2 * HOUR),
        UsageRecord("platform", "trn1", "4", 1, 4 * HOUR),
        UsageRecord("platform", "trn2", "5", 2, 0.5 * HOUR),
        UsageRecord("", "gone", "6", 3, HOUR),
    ]
    rows = summarize(records, POOLS, PRICES.get)
    assert rows == [
        TeamUsage("platform", "trn1", "trn1.32xlarge", 1, 4.0, 128.0, 86.0),
        TeamUsage("platform", "trn2", "trn2.48xlarge", 1, 1.0, 128.0, None),  # no price
        TeamUsage("research", "trn1", "trn1.32xlarge", 2, 7.5, 240.0, 161.25),
        TeamUsage("research", "cpu", "m7i.8xlarge", 1, 2.0, 0.0, pytest.approx(3.2256)),
        TeamUsage("", "gone", "", 1, 3.0, 0.0, None),  # outside teams, a pool the stack lacks
    ]


def test_summarize_of_nothing_is_nothing():
    assert summarize([], POOLS, PRICES.get) == []


def test_the_usage_table():
    period = Period(datetime(2026, 11, 1, tzinfo=UTC), datetime(2026, 12, 1, tzinfo=UTC))
    rows = [TeamUsage("platform", "trn1", "trn1.32xlarge", 1, 4.0, 128.0, 86.0),
            TeamUsage("platform", "trn2", "trn2.48xlarge", 1, 1.0, 128.0, None),
            TeamUsage("research", "trn1", "trn1.32xlarge", 2, 7.5, 240.0, 161.25),
            TeamUsage("research", "cpu", "m7i.8xlarge", 1, 2.0, 0.0, 3.2256)]
    lines = usage_lines(rows, period, "offline table")
    assert lines[0] == "usage 2026-11-01 00:00 to 2026-12-01 00:00 UTC"
    assert lines[1].split() == ["TEAM", "POOL", "TYPE", "JOBS", "NODE-H", "NEURONCORE-H",
                                "COST", "USD"]
    assert [line.split() for line in lines[2:8]] == [
        ["platform", "trn1", "trn1.32xlarge", "1", "4.00", "128.0", "86.00"],
        ["platform", "trn2", "trn2.48xlarge", "1", "1.00", "128.0", "n/a"],
        ["research", "trn1", "trn1.32xlarge", "2", "7.50", "240.0", "161.25"],
        ["research", "cpu", "m7i.8xlarge", "1", "2.00", "0.0", "3.23"],
        ["total", "platform", "2", "5.00", "256.0", "n/a"],   # a pool without a price
        ["total", "research", "3", "9.50", "240.0", "164.48"],
    ]
    assert lines[8] == "prices: offline table; node-hours from the scheduler's records"
    # the columns line up: each number ends where its header does
    assert lines[2].index("86.00") + 5 == len(lines[1]) == len(lines[6].rstrip())


def test_the_usage_table_of_an_empty_period():
    period = Period(datetime(2026, 11, 1, tzinfo=UTC), datetime(2026, 11, 2, tzinfo=UTC))
    assert usage_lines([], period, "x")[2:] == ["(no jobs in this period)"]
