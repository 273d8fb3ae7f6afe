"""FSx for Lustre over EFA: whether the stack's file system is EFA-enabled, and why.

:func:`plan_fsx_efa` checks each rule of the FSx for Lustre user guide that an EFA-enabled
file system and its clients must meet (sources in :mod:`trn_ultracluster.config.facts`,
"FSx for Lustre over EFA"), and decides ``fsx.efa``:

- ``true``: enabled; each rule that does not hold is an error (``config.rules.fsx.fsx_efa``),
  and each node fails its set-up when its Lustre traffic does not go over EFA (mode
  ``required``).
- ``auto``: enabled when every rule holds and the file system's throughput is above the
  10 GB/s from which AWS recommends EFA; a node that falls back to TCP says so in its log
  and on the dashboard but keeps working (mode ``preferred``).
- ``false``: never (mode ``off``).

Two rules hold by construction and are not checked here: the clients are in the file
system's Availability Zone (the nodes and the file system share the compute AZ,
``ClusterConfig.compute_az_id``), and the client OS and kernel, which each node checks at
boot against :data:`~trn_ultracluster.config.facts.FSX_EFA_CLIENT_OS` (an AMI's kernel is
not known here).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from trn_ultracluster.config.facts import (
    DOC_FSX_EFA,
    DOC_FSX_EFA_CAPACITY,
    DOC_FSX_EFA_CLIENTS,
    FSX_EFA_CAPACITY_STEP_GIB,
    FSX_EFA_CLIENT_TYPES,
    FSX_EFA_DEPLOYMENT_TYPE,
    FSX_EFA_LUSTRE_VERSION,
    FSX_EFA_MAX_CONNECTIONS,
    FSX_EFA_MULTI_CARD_INTERFACES,
    FSX_EFA_RECOMMENDED_MB_S,
    FSX_SCRATCH_MB_S_TIB,
)
from trn_ultracluster.config.model import ClusterConfig
from trn_ultracluster.config.rules.scale import plannable
from trn_ultracluster.contracts.catalog import CATALOG, InstanceSpec
from trn_ultracluster.network_plan import PlanError

__all__ = ["EfaMode", "EfaRule", "FsxEfaPlan", "client_interfaces", "plan_fsx_efa"]

EfaMode = Literal["off", "preferred", "required"]
"""What a node does about Lustre over EFA: nothing; set it up and report a fall back to TCP;
set it up and fail the node set-up on a fall back."""


def client_interfaces(spec: InstanceSpec) -> int:
    """EFA interfaces one client binds to LNet, each one of the file system's 1,024 EFA
    connections: 2 on an instance with several network cards, 1 with one, 0 without EFA
    (:data:`~trn_ultracluster.config.facts.FSX_EFA_MULTI_CARD_INTERFACES`)."""
    if not spec.supports_efa:
        return 0
    return min(spec.efa_interfaces, FSX_EFA_MULTI_CARD_INTERFACES if spec.network_cards > 1
               else 1)


@dataclass(frozen=True)
class EfaRule:
    """One rule of EFA-enabled file systems and whether the configuration meets it.

    Attributes:
        name: short name (``deployment``, ``lustre-version``, ``capacity``, ``client``,
            ``connections``, ``address-block``).
        ok: whether it holds.
        field: the configuration field it binds, dotted.
        value: that field's value.
        needs: what the field must be, a sentence fragment starting with "must".
        doc: the page that states the rule.
    """

    name: str
    ok: bool
    field: str
    value: Any
    needs: str
    doc: str


@dataclass(frozen=True)
class FsxEfaPlan:
    """The decision of ``fsx.efa`` for one configuration.

    Attributes:
        setting: ``fsx.efa`` as configured (``True``, ``False`` or ``"auto"``).
        enabled: whether the file system is EFA-enabled (``EfaEnabled``).
        rules: every rule checked, in a fixed order.
        gains: whether the file system's throughput is above
            :data:`~trn_ultracluster.config.facts.FSX_EFA_RECOMMENDED_MB_S` (a scratch
            type's at its baseline, :data:`~trn_ultracluster.config.facts.FSX_SCRATCH_MB_S_TIB`).
        interfaces_per_client: EFA interfaces each node binds to LNet
            (:func:`client_interfaces`).
        connections: EFA connections of ``nodes.max`` nodes (limit 1,024).
    """

    setting: bool | Literal["auto"]
    enabled: bool
    rules: tuple[EfaRule, ...]
    gains: bool
    interfaces_per_client: int
    connections: int

    @property
    def failed(self) -> tuple[EfaRule, ...]:
        """The rules that do not hold."""
        return tuple(r for r in self.rules if not r.ok)

    @property
    def mode(self) -> EfaMode:
        """What the nodes do (:data:`EfaMode`): ``required`` for ``true``, ``preferred`` for
        ``auto`` when enabled, else ``off``."""
        if not self.enabled:
            return "off"
        return "required" if self.setting is True else "preferred"

    @property
    def reason(self) -> str:
        """Why it is on or off, one sentence fragment (estimate, summary, warnings, the
        ``FsxEfa`` output's description): with ``auto`` off by a rule, every rule that does
        not hold."""
        if self.setting is False:
            return "off: fsx.efa is false"
        if self.setting is True:
            return "on: fsx.efa is true"
        if not self.gains:
            return (f"off (auto): the file system's throughput is not above "
                    f"{FSX_EFA_RECOMMENDED_MB_S:,} MB/s, from which AWS recommends EFA")
        if self.failed:
            return "off (auto): " + "; ".join(f"{r.field} {r.needs}" for r in self.failed)
        return (f"on (auto): every rule holds and the throughput is above "
                f"{FSX_EFA_RECOMMENDED_MB_S:,} MB/s")


def _rules(c: ClusterConfig, interfaces: int) -> tuple[EfaRule, ...]:
    fsx = c.fsx
    rules = [EfaRule(
        "deployment", fsx.deployment_type == FSX_EFA_DEPLOYMENT_TYPE, "fsx.deployment_type",
        fsx.deployment_type,
        f"must be {FSX_EFA_DEPLOYMENT_TYPE}: EFA is supported on Persistent 2 file systems "
        "with a metadata configuration", DOC_FSX_EFA)]
    if fsx.deployment_type == FSX_EFA_DEPLOYMENT_TYPE:
        rules.append(EfaRule(
            "lustre-version", fsx.lustre_version == FSX_EFA_LUSTRE_VERSION,
            "fsx.lustre_version", fsx.lustre_version,
            f"must be {FSX_EFA_LUSTRE_VERSION}: EFA needs a metadata configuration, which the "
            f"stack gives PERSISTENT_2 on Lustre {FSX_EFA_LUSTRE_VERSION} (the FSx API creates "
            "no other version with one)", DOC_FSX_EFA))
    step = FSX_EFA_CAPACITY_STEP_GIB.get(fsx.per_unit_storage_throughput or 0)
    if fsx.deployment_type == FSX_EFA_DEPLOYMENT_TYPE and step is not None:
        gib = fsx.storage_capacity_gib
        rules.append(EfaRule(
            "capacity", gib > 0 and gib % step == 0, "fsx.storage_capacity_gib", gib,
            f"must be a multiple of {step:,} GiB at {fsx.per_unit_storage_throughput} "
            f"MB/s/TiB for an EFA-enabled file system ({step // 1200}x the 1,200 GiB "
            f"minimum without EFA; steps: "
            + ", ".join(f"{s:,} GiB at {t}" for t, s in FSX_EFA_CAPACITY_STEP_GIB.items())
            + ")", DOC_FSX_EFA_CAPACITY))
    rules.append(EfaRule(
        "client", c.instance_type in FSX_EFA_CLIENT_TYPES, "instance_type", c.instance_type,
        "must be one of " + ", ".join(sorted(FSX_EFA_CLIENT_TYPES)) + ": clients of an "
        "EFA-enabled file system are Nitro v4 or newer instances with EFA, excluding the trn2 "
        "instance family", DOC_FSX_EFA_CLIENTS))
    connections = c.nodes.max * interfaces
    rules.append(EfaRule(
        "connections", connections <= FSX_EFA_MAX_CONNECTIONS, "nodes.max", c.nodes.max,
        f"must be at most {FSX_EFA_MAX_CONNECTIONS // max(interfaces, 1):,}: each node binds "
        f"{interfaces} EFA interface(s) to Lustre, each one of the file system's "
        f"{FSX_EFA_MAX_CONNECTIONS:,} EFA connections ({connections:,} needed; past the limit "
        "is not documented)", DOC_FSX_EFA_CLIENTS))
    beside = _nodes_beside_file_system(c)
    if beside is not None:
        rules.append(EfaRule(
            "address-block", beside >= c.nodes.max, "vpc_cidr", c.vpc_cidr,
            f"must hold every node beside the file system: clients use the same Availability "
            f"Zone and /16 CIDR as the file system, and this block holds {beside:,} of the "
            f"{c.nodes.max:,} nodes (the address plan puts the others in secondary blocks); "
            "use a larger primary block (at most a /16) or lower nodes.max", DOC_FSX_EFA))
    return tuple(rules)


def _nodes_beside_file_system(c: ClusterConfig) -> int | None:
    """Nodes the address plan puts in the file system's block; ``None`` when the plan cannot
    be made (its own rule reports why)."""
    if not plannable(c):
        return None
    try:
        return c.address_plan.nodes_beside_file_system
    except PlanError:
        return None


def plan_fsx_efa(c: ClusterConfig) -> FsxEfaPlan:
    """Decide ``fsx.efa`` for ``c`` (see the module docstring).

    Returns:
        The plan; ``enabled`` is ``True`` for ``fsx.efa: true`` even where a rule fails (the
        configuration is then invalid and the rule ``fsx_efa`` reports each failure).
    """
    spec = CATALOG.get(c.instance_type)
    interfaces = client_interfaces(spec) if spec is not None else 0
    rules = _rules(c, interfaces)
    throughput = c.fsx.throughput_mb_s
    if throughput is None:  # a scratch type: its baseline decides whether auto says why
        throughput = (c.fsx.storage_capacity_gib / 1024
                      * FSX_SCRATCH_MB_S_TIB.get(c.fsx.deployment_type, 0))
    gains = throughput > FSX_EFA_RECOMMENDED_MB_S
    setting = c.fsx.efa
    enabled = setting is True or (setting == "auto" and gains and all(r.ok for r in rules))
    return FsxEfaPlan(setting=setting, enabled=enabled, rules=rules, gains=gains,
                      interfaces_per_client=interfaces, connections=c.nodes.max * interfaces)
