"""The estimate of a synthesized template: hourly cost when idle and when running, itemized,
the first deploy's duration (:func:`trn_ultracluster.deploy_time.critical_path`), and each
file system's throughput with and without EFA (:mod:`.lustre`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from collections.abc import Sequence

from trn_ultracluster.contracts.quotas import IMAGE_BUILD_QUEUED_MINUTES, QuotaNeed, console_url
from trn_ultracluster.deploy_time import concurrent_image_builds, critical_path
from trn_ultracluster.estimate.bill import BillItem, FileSystemThroughput, bill_of_materials
from trn_ultracluster.estimate.lustre import (
    NO_EFA_PRICE,
    FileSystemEfa,
    file_system_efa,
    format_file_system_efa,
)
from trn_ultracluster.estimate.prices import HOURS_PER_MONTH, Price, PriceSource

__all__ = ["Estimate", "Line", "PoolCost", "estimate", "format_estimate"]


@dataclass(frozen=True)
class Line:
    """One priced line.

    Attributes:
        item: the bill line.
        price: its price (``None``: no source has one).
        hourly: USD per hour for one unit (GB-month prices divided by
            :data:`~trn_ultracluster.estimate.prices.HOURS_PER_MONTH`), or ``None``.
        lower_bound: ``price`` is the fallback's (e.g. the EC2 price of an ``ml.`` type).
    """

    item: BillItem
    price: Price | None
    hourly: float | None
    lower_bound: bool = False

    @property
    def idle_usd(self) -> float:
        """USD per hour at idle (0 for prepaid or unpriced lines)."""
        return 0.0 if self.hourly is None or self.item.prepaid else self.hourly * self.item.idle

    @property
    def running_usd(self) -> float:
        """USD per hour when running (0 for prepaid or unpriced lines)."""
        if self.hourly is None or self.item.prepaid:
            return 0.0
        return self.hourly * self.item.running


class _Priced:
    """Hourly totals of priced ``lines`` (a dataclass field of the class that mixes it in)."""

    lines: Sequence[Line]

    @property
    def idle_usd(self) -> float:
        """USD per hour with every group at its minimum."""
        return sum(line.idle_usd for line in self.lines)

    @property
    def running_usd(self) -> float:
        """USD per hour with every group at its maximum."""
        return sum(line.running_usd for line in self.lines)


@dataclass(frozen=True)
class PoolCost(_Priced):
    """What one node pool's nodes cost, from its priced lines.

    Attributes:
        name: the pool's name.
        instance_type: its instance type.
        nodes_idle, nodes_running: its nodes at the groups' minimum / maximum (HyperPod: its
            instance groups' counts, both).
        lines: its priced lines.
    """

    name: str
    instance_type: str
    nodes_idle: float
    nodes_running: float
    lines: tuple[Line, ...]

    @property
    def prepaid(self) -> bool:
        """Its nodes are paid up front (a Capacity Block or a training plan)."""
        return bool(self.lines) and all(line.item.prepaid for line in self.lines)

    @property
    def unpriced(self) -> bool:
        """A line of it has no price of its own (none, or a lower bound)."""
        return any(not line.item.prepaid and (line.price is None or line.lower_bound)
                   for line in self.lines)


@dataclass(frozen=True)
class Estimate(_Priced):
    """The estimate of one template.

    Attributes:
        region: the stack's Region.
        lines: the priced lines.
        source: the price source's name.
        deploy_minutes: the estimated first ``cdk deploy``, in minutes.
        notes: what is not priced, prepaid capacity, lower bounds.
        throughput: the FSx for Lustre file systems' throughput and each node's share.
        quota_increases: the quotas whose need is above AWS's default (or whose default
            differs per account), in the order given.
        fsx_efa: EFA for each file system of ``throughput``, in the same order.
        pools: each node pool's cost (:class:`PoolCost`), in the pools' order; empty for a
            template without the ``Pools`` output.
        image_builds: training image builds that run at once during the first deploy
            (:func:`~trn_ultracluster.deploy_time.concurrent_image_builds`).
    """

    region: str
    lines: list[Line]
    source: str
    deploy_minutes: float
    notes: list[str]
    throughput: list[FileSystemThroughput]
    quota_increases: list[QuotaNeed]
    fsx_efa: list[FileSystemEfa] = field(default_factory=list)
    pools: list[PoolCost] = field(default_factory=list)
    image_builds: int = 1

    @property
    def shared(self) -> list[Line]:
        """The lines no pool owns: control planes, system nodes, NAT gateways, file systems."""
        return [line for line in self.lines if line.item.pool is None]

    @property
    def complete(self) -> bool:
        """Every line has a price of its own (no missing price, no lower bound)."""
        return all(line.item.prepaid or (line.price is not None and not line.lower_bound)
                   for line in self.lines)


def _hourly(price: Price) -> float:
    return price.usd / HOURS_PER_MONTH if price.unit == "GB-month" else price.usd


def estimate(template: dict[str, Any], prices: PriceSource,
             needs: Sequence[QuotaNeed] = ()) -> Estimate:
    """Price the bill of ``template`` with ``prices`` and time its first deploy.

    ``needs`` are the quotas the configuration behind ``template`` needs
    (:func:`trn_ultracluster.config.quota_needs.quota_needs`; the template alone does not
    say): those above AWS's default become :attr:`Estimate.quota_increases`.
    Why the file system is EFA-enabled or not comes from the template
    (:func:`~trn_ultracluster.estimate.lustre.file_system_efa`).

    Raises:
        KeyError: not a TrnUltraCluster template (no ``Region`` output).
        ValueError: the template has a dependency cycle.
    """
    bill = bill_of_materials(template)
    lines, notes = [], list(bill.notes)
    for item in bill.items:
        price, lower = prices.price(item.key), False
        if price is None and item.fallback is not None:
            price, lower = prices.price(item.fallback), True
        lines.append(Line(item, price, None if price is None else _hourly(price), lower))
    if any(line.lower_bound and line.price and not line.item.prepaid for line in lines):
        notes.append("'>=': no price for the SageMaker ml. type here; the EC2 price of the same "
                     "type is shown as a lower bound (run with AWS credentials for the rest)")
    if any(line.price is None and not line.item.prepaid for line in lines):
        notes.append("'n/a': no price in this source (run with AWS credentials to use the AWS "
                     "Price List API)")
    efa = [file_system_efa(template, fs, prices) for fs in bill.throughput]
    if any(e.step_gib is not None for e in efa):
        notes.append(NO_EFA_PRICE)
    pools = [PoolCost(p.name, p.instance_type,
                      sum(ln.item.idle for ln in lines if ln.item.pool == p.name),
                      sum(ln.item.running for ln in lines if ln.item.pool == p.name),
                      tuple(ln for ln in lines if ln.item.pool == p.name))
             for p in bill.pools]
    return Estimate(bill.region, lines, prices.name, critical_path(template).total_minutes,
                    notes, bill.throughput, [n for n in needs if n.above_default], efa, pools,
                    concurrent_image_builds(template))


def _usd(value: float) -> str:
    return f"${value:,.2f}"


def _unit_usd(value: float) -> str:
    """Unit prices keep their cents' fractions: $0.045, $0.192, $21.50."""
    return f"${value:,.3f}" if value < 1 else f"${value:,.2f}"


def _builds(est: Estimate) -> str:
    """What the deploy time assumes of several training image builds (one per Neuron stack)."""
    if est.image_builds < 2:
        return ""
    return (f"; its {est.image_builds} training image builds run at once, which needs "
            f"CodeBuild's concurrent Linux/Large builds quota of at least {est.image_builds} "
            f"(a build queued past its {IMAGE_BUILD_QUEUED_MINUTES}-minute queue timeout fails the "
            "deploy; this stack builds its images one after the other)")


def _pool_lines(est: Estimate) -> list[str]:
    """One line per pool (idle: its groups at their minimum; running: at their maximum) and
    one for what they share, when the template has more than one pool (with one, the node
    lines above are the pool)."""
    if len(est.pools) < 2:
        return []
    out = []
    for pool in est.pools:
        if not pool.lines:
            out.append(f"pool {pool.name} ({pool.instance_type}): no nodes of it in this "
                       "template")
            continue
        nodes = (f"{pool.nodes_idle:g}" if pool.nodes_idle == pool.nodes_running
                 else f"{pool.nodes_idle:g}-{pool.nodes_running:g}")
        if pool.prepaid:
            cost = "prepaid"
        else:
            mark = " (incomplete: see notes)" if pool.unpriced else ""
            cost = f"idle {_usd(pool.idle_usd)}/h, running {_usd(pool.running_usd)}/h{mark}"
        out.append(f"pool {pool.name} ({pool.instance_type} x {nodes}): {cost}")
    shared = est.shared
    out.append(f"shared by the pools (control plane, system nodes, NAT, file system): idle "
               f"{_usd(sum(ln.idle_usd for ln in shared))}/h, running "
               f"{_usd(sum(ln.running_usd for ln in shared))}/h")
    return out


def format_estimate(est: Estimate) -> str:
    """The estimate as text: one line per item (units idle/running, unit price, USD per hour
    idle and running), the totals (idle: every group at its minimum, running: at its
    maximum), the deploy time, each file system's throughput (with what one client reaches
    over TCP and over EFA, and the smallest EFA-enabled size), the quota increases and the
    notes."""
    rows = []
    for line in est.lines:
        item, mark = line.item, ">=" if line.lower_bound else ""
        unit = "n/a" if line.price is None else f"{mark}{_unit_usd(line.price.usd)}/{line.price.unit}"
        count = (f"{item.idle:g}" if item.idle == item.running
                 else f"{item.idle:g}-{item.running:g}")
        if item.prepaid:
            idle = running = "prepaid"
        elif line.price is None:
            idle = running = "n/a"
        else:
            idle, running = mark + _usd(line.idle_usd), mark + _usd(line.running_usd)
        rows.append((item.label, count, unit, idle, running))
    head = ("item", "units", "price", "idle/h", "running/h")
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(5)]
    fmt = "  ".join(f"{{:{'<' if i < 2 else '>'}{w}}}" for i, w in enumerate(widths))
    total = "" if est.complete else " (incomplete: see notes)"
    out = [f"estimate for {est.region}; prices: {est.source}", fmt.format(*head)]
    out += [fmt.format(*r) for r in rows]
    out += [f"total per hour: idle {_usd(est.idle_usd)}, running {_usd(est.running_usd)}"
            f"{total}; per 30 days: idle {_usd(est.idle_usd * 720)}, running "
            f"{_usd(est.running_usd * 720)}",
            *_pool_lines(est),
            f"first deploy: about {est.deploy_minutes:.0f} min (critical path of the "
            "template; benchmarks/deploy_time.py prints it)" + _builds(est)]
    for i, fs in enumerate(est.throughput):
        share = ("" if fs.per_node_mb_s is None else
                 f", {fs.per_node_mb_s:,.1f} MB/s per node at {fs.nodes:,} nodes")
        out.append(f"file system {fs.label}: {fs.capacity_gib:,} GiB x {fs.per_unit_mb_s_tib} "
                   f"MB/s/TiB = {fs.aggregate_mb_s:,.0f} MB/s in all (with or without EFA)"
                   f"{share}")
        if i < len(est.fsx_efa):
            out += format_file_system_efa(est.fsx_efa[i])
    for need in est.quota_increases:
        q = need.quota
        default = ("AWS default differs per account (preflight reads it)" if q.default is None
                   else f"AWS default {q.default:,}")
        most = f", up to {q.maximum:,}" if q.maximum else ""
        which = f"{q.service} {q.code} {need.name}" if q.code else f"{q.service} {need.name!r}"
        out.append(f"quota increase: {which}: need "
                   f"{need.need:,} {q.unit} ({need.why}); {default}{most}: "
                   f"{console_url(est.region, q)}")
    out += [f"note: {n}" for n in est.notes]
    return "\n".join(out)
