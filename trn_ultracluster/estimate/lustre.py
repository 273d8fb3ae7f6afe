"""FSx for Lustre over EFA in the estimate: whether the file system is EFA-enabled and why,
what one client reaches over TCP and over EFA, and the smallest EFA-enabled file system at
its throughput tier with its price (docs/lustre-over-efa.md).

Read from the template: ``LustreConfiguration.EfaEnabled``, the stack output ``FsxEfa``
(what the nodes do: ``off``, ``preferred`` or ``required``), whose description carries why
``fsx.efa`` decided as it did (:attr:`~trn_ultracluster.config.fsx_efa.FsxEfaPlan.reason`,
written by the stack), and the output ``Orchestrator``. A template synthesized before the
reason was written gets what the template alone shows (:func:`template_reason`).

The figures are AWS's (:mod:`trn_ultracluster.config.facts`, "FSx for Lustre over EFA"): the
file system's throughput is capacity x tier with or without EFA; one client reaches at most
100 Gbps over TCP, and 5 Gbps from each storage server, and 700 Gbps over EFA; neither can be
more than the file system's own throughput. An EFA-enabled file system has fewer, larger
storage servers (one per capacity step instead of one per 2,400 GiB), so a client that falls
back to TCP reaches less of it than of the same file system without EFA.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from trn_ultracluster.config.facts import (
    FSX_CLIENT_GBPS,
    FSX_EFA_CAPACITY_STEP_GIB,
    FSX_EFA_CLIENT_TYPES,
    FSX_EFA_DEPLOYMENT_TYPE,
    FSX_EFA_RECOMMENDED_MB_S,
    FSX_STORAGE_PER_SERVER_GIB,
    FSX_TCP_GBPS_PER_SERVER,
)
from trn_ultracluster.contracts.outputs import OutputKey, fsx_efa_reason
from trn_ultracluster.estimate.bill import FileSystemThroughput, is_true
from trn_ultracluster.estimate.pools import template_pools
from trn_ultracluster.estimate.prices import Price, PriceSource

__all__ = ["Ceiling", "FileSystemEfa", "NODES_ON_TCP", "efa_ceiling", "efa_enabled",
           "efa_summary", "file_system_efa",
           "format_file_system_efa", "nodes_on_tcp", "storage_servers", "tcp_ceiling", "template_reason"]

SSD_MIN_GIB = 1200
"""The smallest SSD file system without EFA: "1200 GiB, 2400 GiB, and increments of 2400 GiB"
(botocore's FSx model, ``CreateFileSystemRequest.StorageCapacity``)."""
NO_EFA_PRICE = ("FSx for Lustre pricing (https://aws.amazon.com/fsx/lustre/pricing/) showed no "
                "EFA line item in the part that could be read here (not verified): an "
                "EFA-enabled file system is priced as the same storage, and costs more through "
                "its larger minimum size")
"""The estimate's note on the price of EFA."""


def efa_enabled(template: dict[str, Any]) -> bool:
    """Whether a file system of ``template`` is EFA-enabled (``LustreConfiguration.EfaEnabled``
    of an ``AWS::FSx::FileSystem``)."""
    return any(
        is_true(r.get("Properties", {}).get("LustreConfiguration", {}).get("EfaEnabled"))
        for r in template.get("Resources", {}).values()
        if isinstance(r, dict) and r.get("Type") == "AWS::FSx::FileSystem")


def _gbps(mb_s: float) -> float:
    """MB/s (10**6 bytes) to Gbit/s."""
    return mb_s * 8 / 1000


@dataclass(frozen=True)
class Ceiling:
    """The most one client reaches, and what sets it.

    Attributes:
        gbps: Gbit/s.
        bound: what limits it, e.g. ``3 storage servers x 5 Gbps``.
    """

    gbps: float
    bound: str


def storage_servers(fs: FileSystemThroughput) -> int | None:
    """Storage servers (OSS) of ``fs``: its capacity over the storage per server
    (:data:`~trn_ultracluster.config.facts.FSX_STORAGE_PER_SERVER_GIB`; one per capacity
    step when EFA-enabled), at least one; ``None`` for a type without a figure."""
    per = (FSX_EFA_CAPACITY_STEP_GIB.get(fs.per_unit_mb_s_tib) if fs.efa_enabled
           else FSX_STORAGE_PER_SERVER_GIB.get(fs.deployment_type))
    if per is None:
        return None
    return max(1, math.ceil(fs.capacity_gib / per))


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}" + ("" if n == 1 else "s")


def tcp_ceiling(fs: FileSystemThroughput) -> Ceiling:
    """What one client reaches of ``fs`` over TCP: the least of AWS's 100 Gbps per client,
    5 Gbps per storage server, and the file system's throughput."""
    options = [Ceiling(FSX_CLIENT_GBPS["tcp"], f"AWS's {FSX_CLIENT_GBPS['tcp']} Gbps per "
                                               "client over TCP")]
    servers = storage_servers(fs)
    if servers is not None:
        options.append(Ceiling(servers * FSX_TCP_GBPS_PER_SERVER,
                               f"{_plural(servers, 'storage server')} x "
                               f"{FSX_TCP_GBPS_PER_SERVER} Gbps"))
    options.append(Ceiling(_gbps(fs.aggregate_mb_s),
                           f"the file system's {fs.aggregate_mb_s:,.0f} MB/s"))
    return min(options, key=lambda c: c.gbps)


def efa_ceiling(fs: FileSystemThroughput) -> Ceiling | None:
    """What one client reaches of ``fs`` over EFA: the lesser of AWS's 700 Gbps per client
    and the file system's throughput; ``None`` when ``fs`` is not EFA-enabled."""
    if not fs.efa_enabled:
        return None
    return min((Ceiling(FSX_CLIENT_GBPS["efa"], f"AWS's {FSX_CLIENT_GBPS['efa']} Gbps per "
                                                "client over EFA"),
                Ceiling(_gbps(fs.aggregate_mb_s),
                        f"the file system's {fs.aggregate_mb_s:,.0f} MB/s")),
               key=lambda c: c.gbps)


def template_reason(fs: FileSystemThroughput, mode: str | None) -> str:
    """Why ``fs`` is EFA-enabled or not, as far as the template shows: the nodes' ``mode``
    (output ``FsxEfa``, ``None`` when absent) tells ``true`` from ``auto``; for a file system
    without EFA, ``false`` and ``auto`` look alike, except where the throughput alone keeps
    ``auto`` off. A template without the reason predates node-count limits that make
    ``true`` ``preferred``, so there ``preferred`` is ``auto``. The sentences of
    ``FsxEfaPlan.reason`` where they are the same."""
    if mode == "required":
        return "on: fsx.efa is true"
    if mode == "preferred":
        return (f"on (auto): the file system meets every rule of EFA-enabled file systems and "
                f"its throughput is above {FSX_EFA_RECOMMENDED_MB_S:,} MB/s")
    if fs.efa_enabled:
        return "on (EfaEnabled)"
    if fs.deployment_type != FSX_EFA_DEPLOYMENT_TYPE:
        return f"off: EFA-enabled file systems are {FSX_EFA_DEPLOYMENT_TYPE} only"
    if fs.aggregate_mb_s <= FSX_EFA_RECOMMENDED_MB_S:
        return (f"off: fsx.efa is false, or auto, which stays off at a throughput not above "
                f"{FSX_EFA_RECOMMENDED_MB_S:,} MB/s, from which AWS recommends EFA")
    return ("off: fsx.efa is false, or auto found a rule that does not hold (a synth with "
            "this version writes which in the FsxEfa output's description)")


_AFTER_JOIN = ("; one found on TCP after it joined logs an ERROR and reports 0 in "
               "node_fsx_lustre_over_efa (a joined Kubernetes node is not failed)")
NODES_ON_TCP: dict[tuple[str, str | None], str] = {
    ("required", "hyperpod-slurm"): "a worker node that cannot set up Lustre over EFA, or "
                                    "whose Lustre traffic goes over TCP, fails its lifecycle "
                                    "script",
    ("required", "standalone"): "a node that cannot set up Lustre over EFA, or whose Lustre "
                                "traffic goes over TCP, fails its set-up and powers off (its "
                                "Auto Scaling group replaces it)",
    ("required", "eks"): "a node that cannot set up LNet over EFA at boot powers off before it "
                         "joins (its node group replaces it)" + _AFTER_JOIN,
    ("required", "hyperpod-eks"): "a node that cannot set up LNet over EFA fails its lifecycle "
                                  "script" + _AFTER_JOIN,
    ("required", None): "a node whose Lustre traffic does not go over EFA is an error on the "
                        "node (docs/lustre-over-efa.md says what each orchestrator does)",
    ("preferred", None): "a node whose Lustre traffic falls back to TCP logs a warning and "
                         "reports 0 in node_fsx_lustre_over_efa",
}
"""What a node does when its Lustre traffic does not go over EFA, by ``FsxEfa`` mode and
output ``Orchestrator`` (``None``: any orchestrator, or none known), as the node scripts do it
(docs/lustre-over-efa.md, "Per orchestrator")."""


def nodes_on_tcp(mode: str | None, orchestrator: str | None) -> str | None:
    """:data:`NODES_ON_TCP` for ``mode`` and ``orchestrator``; ``None`` for mode ``off``."""
    return NODES_ON_TCP.get((mode or "", orchestrator), NODES_ON_TCP.get((mode or "", None)))


def _output(template: dict[str, Any], key: OutputKey, field: str = "Value") -> Any:
    return template.get("Outputs", {}).get(key.value, {}).get(field)


def efa_summary(template: dict[str, Any]) -> str:
    """One line on EFA for ``trn_ultracluster.summary``: why the file system is EFA-enabled
    or not (the reason the stack wrote in the ``FsxEfa`` output's description, else
    :func:`template_reason`) and, when it is, what a node on TCP does
    (:func:`nodes_on_tcp`); ``no file system`` without one."""
    mode = _output(template, OutputKey.FSX_EFA)
    written = fsx_efa_reason(_output(template, OutputKey.FSX_EFA, "Description"))
    on_tcp = nodes_on_tcp(mode, _output(template, OutputKey.ORCHESTRATOR))
    for name, r in template.get("Resources", {}).items():
        if not isinstance(r, dict) or r.get("Type") != "AWS::FSx::FileSystem":
            continue
        props = r.get("Properties", {})
        lustre = props.get("LustreConfiguration", {})
        fs = FileSystemThroughput(
            name, int(props.get("StorageCapacity", 0)),
            int(lustre.get("PerUnitStorageThroughput", 0)), 0,
            lustre.get("DeploymentType", "SCRATCH_1"), is_true(lustre.get("EfaEnabled")))
        nodes = f"; {on_tcp}" if on_tcp else ""
        return f"{written or template_reason(fs, mode)}{nodes}"
    return "no file system"


@dataclass(frozen=True)
class FileSystemEfa:
    """EFA and one file system, for the estimate.

    Attributes:
        fs: the file system.
        reason: whether it is EFA-enabled and why (``on ...`` / ``off ...``).
        tcp: what one client reaches over TCP.
        efa: what one client reaches over EFA (``None``: not EFA-enabled).
        step_gib: the smallest EFA-enabled capacity (and its step) at ``fs``'s tier
            (``None``: no EFA at its deployment type).
        price: the GB-month price of ``fs``'s storage (``None``: no price).
        client: the stack's instance type (output ``InstanceType``) when it cannot be a
            client of an EFA-enabled file system (not in
            :data:`~trn_ultracluster.config.facts.FSX_EFA_CLIENT_TYPES`): the estimate then
            shows no EFA figures; ``None`` when it can, or is not known.
        tcp_pools: with several pools, those whose type cannot be a client of an
            EFA-enabled file system (``"trn2 (trn2.48xlarge)"``, a CPU pool ``"cpu
            (m7i.8xlarge, no EFA)"``): their nodes mount it over TCP whatever ``fsx.efa``
            says.
    """

    fs: FileSystemThroughput
    reason: str
    tcp: Ceiling
    efa: Ceiling | None
    step_gib: int | None
    price: Price | None
    client: str | None = None
    tcp_pools: tuple[str, ...] = ()


def file_system_efa(template: dict[str, Any], fs: FileSystemThroughput,
                    prices: PriceSource) -> FileSystemEfa:
    """EFA for ``fs`` of ``template``, priced with ``prices``: the reason is the one the
    stack wrote (``FsxEfa`` output's description), else :func:`template_reason`."""
    mode = _output(template, OutputKey.FSX_EFA)
    reason = fsx_efa_reason(_output(template, OutputKey.FSX_EFA, "Description"))
    step = (FSX_EFA_CAPACITY_STEP_GIB.get(fs.per_unit_mb_s_tib)
            if fs.deployment_type == FSX_EFA_DEPLOYMENT_TYPE else None)
    instance_type = _output(template, OutputKey.INSTANCE_TYPE)
    pools = template_pools(template)
    tcp_pools = tuple(f"{p.name} ({p.instance_type}{'' if p.accelerated else ', no EFA'})"
                      for p in pools if p.instance_type not in FSX_EFA_CLIENT_TYPES
                      ) if len(pools) > 1 else ()
    return FileSystemEfa(
        fs=fs, reason=reason or template_reason(fs, mode), tcp=tcp_ceiling(fs),
        efa=efa_ceiling(fs), step_gib=step,
        price=prices.price(("fsx-lustre", f"{fs.deployment_type}/{fs.per_unit_mb_s_tib}")),
        client=(instance_type if instance_type and instance_type not in FSX_EFA_CLIENT_TYPES
                else None), tcp_pools=tcp_pools)


def _gbps_text(value: float) -> str:
    return f"{value:,.0f}" if value >= 10 else f"{value:.1f}"


def _usd(value: float) -> str:
    return f"${value:,.2f}"


def format_file_system_efa(e: FileSystemEfa) -> list[str]:
    """The estimate's lines on EFA for one file system (indented under its throughput line):
    the reason; what one client reaches over TCP and over EFA; the smallest EFA-enabled size
    at its tier and its monthly price beside this one's."""
    fs = e.fs
    out = [f"  EFA: {e.reason}"]
    tcp = f"over TCP up to {_gbps_text(e.tcp.gbps)} Gbps ({e.tcp.bound})"
    if e.client is not None:
        out.append(f"  one client: {tcp}; over EFA: not for {e.client} (clients of an "
                   f"EFA-enabled file system are {', '.join(sorted(FSX_EFA_CLIENT_TYPES))})")
        return out
    if e.efa is None:
        efa = (f"over EFA: not EFA-enabled (up to {FSX_CLIENT_GBPS['efa']} Gbps per client on "
               "an EFA-enabled file system)")
    else:
        efa = f"over EFA up to {_gbps_text(e.efa.gbps)} Gbps ({e.efa.bound})"
    out.append(f"  one client: {tcp}; {efa}")
    if e.tcp_pools and e.efa is not None:
        out.append(f"  over TCP (no EFA client): pool{'s' if len(e.tcp_pools) > 1 else ''} "
                   + ", ".join(e.tcp_pools))
    if e.step_gib is None:
        out.append(f"  EFA-enabled file systems are {FSX_EFA_DEPLOYMENT_TYPE} only (this one is "
                   f"{fs.deployment_type})")
        return out
    smallest = (f"  smallest EFA-enabled size at {fs.per_unit_mb_s_tib} MB/s/TiB: "
                f"{e.step_gib:,} GiB, then steps of {e.step_gib:,} GiB "
                f"({e.step_gib // SSD_MIN_GIB}x the {SSD_MIN_GIB:,} GiB minimum without EFA)")
    if e.price is not None and e.price.unit == "GB-month":
        smallest += (f": {_usd(e.step_gib * e.price.usd)} per month at "
                     f"${e.price.usd:,.3f}/GB-month; this one, {fs.capacity_gib:,} GiB: "
                     f"{_usd(fs.capacity_gib * e.price.usd)}")
    out.append(smallest)
    return out
