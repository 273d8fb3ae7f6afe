"""Per-team accounting: what each team used, per pool, over a period, from the scheduler's own
records (each backend's :meth:`~trn_ultracluster.cli.backends.base.JobBackend.usage`), as
node-hours, NeuronCore-hours and a cost priced with the estimate's table.

A backend returns one :class:`UsageRecord` per job (or job step the scheduler counts), its
time already clipped to the period; :func:`summarize` adds them up per team and pool.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from trn_ultracluster.cli.errors import CliError
from trn_ultracluster.contracts.catalog import UnknownInstanceTypeError, get_any_instance
from trn_ultracluster.contracts.pools import PoolInfo

__all__ = ["HourlyPrice", "Period", "TeamUsage", "UsageRecord", "parse_period", "summarize",
           "usage_lines"]

_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2})?)?\Z")
_AGO = re.compile(r"^(\d+)([dh])\Z")


@dataclass(frozen=True)
class Period:
    """A period of time, UTC: ``start`` <= t < ``end``."""

    start: datetime
    end: datetime

    @property
    def seconds(self) -> float:
        """Its length in seconds."""
        return (self.end - self.start).total_seconds()

    def clip(self, start: datetime, end: datetime | None) -> float:
        """Seconds of ``[start, end)`` (``end`` ``None``: still running, now) inside the
        period; 0 when they do not meet."""
        stop = min(end or datetime.now(timezone.utc), self.end)
        return max((stop - max(start, self.start)).total_seconds(), 0.0)


def _when(option: str, text: str, now: datetime) -> datetime:
    """A time of ``--since``/``--until``: ``YYYY-MM-DD[THH:MM[:SS]]`` (UTC), ``now``, or ``Nd`` /
    ``Nh`` ago (sacct's ``-S``/``-E`` take dates of that form too)."""
    text = text.strip()
    if text == "now":
        return now
    ago = _AGO.match(text)
    if ago:
        n, unit = int(ago[1]), ago[2]
        return now - (timedelta(days=n) if unit == "d" else timedelta(hours=n))
    why = ""
    if _DATE.match(text):
        try:
            return datetime.fromisoformat(text).replace(tzinfo=timezone.utc)
        except ValueError as err:  # of the right form, no such day or hour
            why = f" ({err})"
    raise CliError(f"{option} {text!r} is not a time{why}: give YYYY-MM-DD, "
                   "YYYY-MM-DDTHH:MM[:SS] (UTC), now, or Nd / Nh (days or hours ago)",
                   f"e.g. {option} 2026-11-01, or {option} 7d")


def _shown(when: datetime, given: str | None) -> str:
    """``when`` for a message: to the second, in UTC, and how it was given when that was not
    a date (``now``, ``7d``, or left out: the default)."""
    text = when.strftime("%Y-%m-%d %H:%M:%S UTC")
    if given is None:
        return f"{text} (the default)"
    given = given.strip()
    return text if _DATE.match(given) else f"{text} ({given})"


def parse_period(since: str | None, until: str | None,
                 now: datetime | None = None) -> Period:
    """The period of ``usage``: ``--since`` (default: 30 days ago) to ``--until`` (default:
    now).

    Raises:
        CliError: (USAGE) a time in no accepted form, or ``--since`` not before ``--until``.
    """
    now = now or datetime.now(timezone.utc)
    start = _when("--since", since, now) if since else now - timedelta(days=30)
    end = _when("--until", until, now) if until else now
    if start >= end:
        raise CliError(f"--since {_shown(start, since)} must be before --until "
                       f"{_shown(end, until)}",
                       "e.g. --since 2026-11-01 --until 2026-12-01")
    return Period(start, end)


@dataclass(frozen=True)
class UsageRecord:
    """One job's use of one pool inside the period, as its scheduler recorded it.

    Attributes:
        team: the team (Slurm account, Kueue queue's team); ``""`` for a job outside teams.
        pool: the pool's name (partition, ResourceFlavor); ``""`` when unknown.
        job: the job's id or name.
        nodes: nodes the job held.
        seconds: seconds it held them inside the period.
    """

    team: str
    pool: str
    job: str
    nodes: int
    seconds: float


@dataclass(frozen=True)
class TeamUsage:
    """One team's use of one pool over the period.

    Attributes:
        team, pool: as :class:`UsageRecord`.
        instance_type: the pool's type (``""`` when the pool is unknown).
        jobs: jobs counted.
        node_hours: nodes x hours.
        neuron_core_hours: node-hours x the type's NeuronCores (0 on a CPU pool).
        cost_usd: node-hours x the type's hourly price, ``None`` without a price.
    """

    team: str
    pool: str
    instance_type: str
    jobs: int
    node_hours: float
    neuron_core_hours: float
    cost_usd: float | None


HourlyPrice = Callable[[str], float | None]
"""Instance type -> On-Demand USD per hour, or ``None`` where no price is known."""


def summarize(records: Iterable[UsageRecord], pools: Sequence[PoolInfo],
              price: HourlyPrice) -> list[TeamUsage]:
    """Add ``records`` up per team and pool: teams by name (jobs outside teams last), each
    team's pools in the stack's pool order (a pool the stack does not list last).

    Args:
        records: the backend's records.
        pools: the stack's pools (instance type of each).
        price: instance type -> USD per hour, or ``None`` (the estimate's
            :class:`~trn_ultracluster.estimate.prices.PriceSource`, per hour).

    Returns:
        One :class:`TeamUsage` per team and pool with records: jobs counted once per record,
        node-hours = nodes x seconds / 3600, NeuronCore-hours = node-hours x the type's
        physical NeuronCores (catalog; 0 for a CPU or unknown type), cost = node-hours x
        ``price`` (``None`` without a price or for an unknown pool).
    """
    by_pool = {p.name: p for p in pools}
    order = {p.name: i for i, p in enumerate(pools)}
    sums: dict[tuple[str, str], list[float]] = {}
    for r in records:
        entry = sums.setdefault((r.team, r.pool), [0, 0.0])
        entry[0] += 1
        entry[1] += r.nodes * r.seconds / 3600.0
    out = []
    for (team, pool), (jobs, node_hours) in sorted(
            sums.items(), key=lambda kv: (kv[0][0] == "", kv[0][0],
                                          order.get(kv[0][1], len(order)), kv[0][1])):
        info = by_pool.get(pool)
        itype = info.instance_type if info else ""
        try:
            cores = get_any_instance(itype).neuron_cores if itype else 0
        except UnknownInstanceTypeError:
            cores = 0
        hourly = price(itype) if itype else None
        out.append(TeamUsage(team, pool, itype, int(jobs), node_hours, node_hours * cores,
                             None if hourly is None else node_hours * hourly))
    return out


def usage_lines(rows: Sequence[TeamUsage], period: Period, price_source: str) -> list[str]:
    """The ``usage`` table: one line per team and pool, a total per team, and where the prices
    come from."""
    lines = [f"usage {period.start:%Y-%m-%d %H:%M} to {period.end:%Y-%m-%d %H:%M} UTC",
             f"{'TEAM':<16} {'POOL':<12} {'TYPE':<16} {'JOBS':>5} {'NODE-H':>10} "
             f"{'NEURONCORE-H':>13} {'COST USD':>10}"]
    if not rows:
        return [*lines, "(no jobs in this period)"]
    for r in rows:
        lines.append(f"{r.team or '-':<16} {r.pool or '?':<12} {r.instance_type or '?':<16} "
                     f"{r.jobs:>5} {r.node_hours:>10.2f} {r.neuron_core_hours:>13.1f} "
                     f"{_usd(r.cost_usd):>10}")
    for team in dict.fromkeys(r.team for r in rows):
        mine = [r for r in rows if r.team == team]
        costs = [r.cost_usd for r in mine]
        total = None if any(c is None for c in costs) else sum(costs)  # type: ignore[arg-type]
        lines.append(f"{'total ' + (team or '-'):<29} {'':<16} {sum(r.jobs for r in mine):>5} "
                     f"{sum(r.node_hours for r in mine):>10.2f} "
                     f"{sum(r.neuron_core_hours for r in mine):>13.1f} {_usd(total):>10}")
    lines.append(f"prices: {price_source}; node-hours from the scheduler's records")
    return lines


def _usd(value: float | None) -> str:
    return "n/a" if value is None else f"{value:,.2f}"
