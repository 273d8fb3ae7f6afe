"""FSx for Lustre over EFA: whether the stack's file system is EFA-enabled, and why.

:func:`plan_fsx_efa` checks each rule of the FSx for Lustre user guide that an EFA-enabled
file system and its clients must meet (sources in :mod:`trn_ultracluster.config.facts`,
"FSx for Lustre over EFA"), and decides ``fsx.efa``:

- ``true``: enabled; each rule of the file system or its client type that does not hold is an
  error (``config.rules.fsx.fsx_efa``), and each node fails its set-up when its Lustre traffic
  does not go over EFA (mode ``required``) -- unless a node-count limit (below) does not hold,
  then mode ``preferred`` and a warning.
- ``auto``: enabled when the file system's own rules hold and its throughput is above the
  10 GB/s from which AWS recommends EFA; a node that falls back to TCP says so in its log and
  on the dashboard but keeps working (mode ``preferred``).
- ``false``: never (mode ``off``).

**What decides, and what only checks.** EFA is fixed when the file system is created ("you
cannot enable or disable EFA on an existing file system", the EFA page), so ``EfaEnabled``
flipping replaces the file system (:class:`~trn_ultracluster.constructs.storage.Storage`,
"Flipping EFA") and deletes what it holds beyond its S3 export. ``auto`` therefore decides
from the file system's own settings only (:attr:`EfaRule.kind` ``file-system``: deployment
type, Lustre version, capacity step at the throughput tier; and the throughput), which a
user changes to change the file system. The rules are of three kinds:

- ``file-system`` (``deployment``, ``lustre-version``, ``capacity``): decide ``auto``; an
  error with ``true``.
- ``client`` (``instance_type``): does *not* decide ``auto``. An EFA-enabled file system also
  serves clients over TCP: AWS's own EFA client set-up adds a ``tcp`` network beside the
  ``efa`` ones in LNet (EKS user guide, "Optimize Amazon FSx for Lustre performance on nodes
  (EFA)", ``fsx-csi-tuning-efa``), over which "Metadata RPCs and pings ride tcp by design"
  (aws/aws-parallelcluster PR #7572), and a client whose EFA set-up is wrong "silently falls
  back to ENA/TCP with no errors" (awslabs/awsome-distributed-ai PR #989); HyperPod Slurm's
  controller and login nodes, which have no EFA, mount this stack's EFA-enabled file system
  over TCP (docs/lustre-over-efa.md). No sentence of the FSx for Lustre user guide that says
  so in as many words was found with the search tool: not verified against a primary copy.
  So a change of ``instance_type`` -- a purposeful change, which rolls the
  nodes anyway -- never replaces the data: with a type that cannot be a client, the file
  system stays what its settings make it, the nodes mount it over TCP (mode ``off``), and
  ``auto`` warns when that file system is EFA-enabled (fewer, larger storage servers: a TCP
  client reaches less of it, docs/lustre-over-efa.md) so that the user can write
  ``false`` -- a file system field -- if that is what they want. With ``true`` such a type
  is an error (``true`` asks for EFA on every node).
- ``limit`` (``connections``: 1,024 EFA connections per file system, 2 per trn1 node, so 512
  nodes; ``address-block``: clients in the file system's /16, the address plan puts the nodes
  past the primary block into secondary blocks): depend on ``nodes.max``, a value users grow
  on a running cluster, so they never decide anything that replaces data. They are checks:
  a warning naming ``nodes.max``. With ``auto`` nothing else changes (mode ``preferred``:
  a node that cannot use EFA falls back to TCP and says so). With ``true`` the mode becomes
  ``preferred`` instead of ``required``, so that a node past the limit is not set to fail
  its set-up or power off. On ``eks`` and ``standalone`` (:data:`MODE_IN_LAUNCH_TEMPLATE`)
  the mode is in the nodes' launch template, where that change would roll every node, so
  ``true`` past a limit is an error there (``config.rules.fsx.fsx_efa``), not a downgrade.

**Node pools.** The file system's clients are every pool's nodes. Each Trainium pool has its
own ``client`` rule (field ``pools[i].instance_type``), the limits count the pools whose type
is a client (field ``pools``: 1,024 connections across them, their nodes in the file system's
block), and each pool's nodes get their own mode (:meth:`FsxEfaPlan.pool_mode`; ``mode`` is
the main pool's). CPU pools have no EFA: they have no ``client`` rule, never set up Lustre
over EFA and mount the file system over TCP (mode ``off``) whatever ``fsx.efa`` says. So
``true`` means EFA on every Trainium node (a Trainium pool of a type that cannot be a client is
an error, as the shorthand's type is), and ``required`` -- a node fails its set-up when its
Lustre traffic is not over EFA -- applies to the client pools' nodes only: a CPU node given
``required`` would fail every set-up, so the orchestrators must give each pool its own mode.

Two rules hold by construction and are not checked here: the clients are in the file
system's Availability Zone (the nodes and the file system share the compute AZ,
``ClusterConfig.compute_az_id``), and the client OS and kernel, which each node checks at
boot against :data:`~trn_ultracluster.config.facts.FSX_EFA_CLIENT_OS` (an AMI's kernel is
not known here).

Left as inputs of ``auto``: the file system's own capacity and throughput (a capacity grow
that crosses 10 GB/s, or leaves the EFA capacity step, flips ``auto``); the ``fsx.efa``
warning asks for ``true`` or ``false`` once ``auto`` turns EFA on, and ``make deploy``'s
preflight stops before a flip.
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
from trn_ultracluster.config.model import ClusterConfig, Pool
from trn_ultracluster.config.model.pools import SHORTHAND_POOL
from trn_ultracluster.config.rules.scale import plannable
from trn_ultracluster.contracts.catalog import CATALOG, CPU_CATALOG, InstanceSpec
from trn_ultracluster.network_plan import PlanError

__all__ = ["MODE_IN_LAUNCH_TEMPLATE", "EfaMode", "EfaRule", "FsxEfaPlan", "RuleKind",
           "client_interfaces", "plan_fsx_efa"]

EfaMode = Literal["off", "preferred", "required"]
"""What a node does about Lustre over EFA: nothing; set it up and report a fall back to TCP;
set it up and fail the node set-up on a fall back."""

MODE_IN_LAUNCH_TEMPLATE = frozenset({"eks", "standalone"})
"""Orchestrators whose nodes get :attr:`FsxEfaPlan.mode` in their launch template's user data
(``orchestrators/eks/lustre_efa.py``, ``orchestrators/standalone/node.py``): a change of the
mode is a new launch template version, which rolls every EKS Trainium node. HyperPod's nodes
read it from their lifecycle scripts' files in S3."""

RuleKind = Literal["file-system", "client", "limit"]
"""What a rule may do (module docstring): decide ``auto`` (``file-system``), decide whether
the nodes use EFA (``client``), or only warn (``limit``, node counts)."""


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
        kind: what it may do (:data:`RuleKind`).
        ok: whether it holds.
        field: the configuration field it binds, dotted.
        value: that field's value.
        needs: what the field must be, a sentence fragment starting with "must" (a
            ``limit``: "should").
        doc: the page that states the rule.
    """

    name: str
    kind: RuleKind
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
        enabled: whether the file system is EFA-enabled (``EfaEnabled``); never depends on a
            node count or ``instance_type``.
        rules: every rule checked, in a fixed order.
        gains: whether the file system's throughput is above
            :data:`~trn_ultracluster.config.facts.FSX_EFA_RECOMMENDED_MB_S` (a scratch
            type's at its baseline, :data:`~trn_ultracluster.config.facts.FSX_SCRATCH_MB_S_TIB`).
        interfaces_per_client: EFA interfaces each node of the main pool binds to LNet
            (:func:`client_interfaces`).
        connections: EFA connections of every client pool's ``nodes.max`` nodes (limit 1,024).
        main_pool: the main pool's name (whose nodes :attr:`mode` is).
        clients: the pools whose type may be a client of an EFA-enabled file system (their
            ``client`` rule holds); every other pool's nodes mount it over TCP.
        cpu_pools: the CPU pools: no EFA at all, so they always mount it over TCP.
    """

    setting: bool | Literal["auto"]
    enabled: bool
    rules: tuple[EfaRule, ...]
    gains: bool
    interfaces_per_client: int
    connections: int
    main_pool: str = SHORTHAND_POOL
    clients: tuple[str, ...] = ()
    cpu_pools: tuple[str, ...] = ()

    @property
    def failed(self) -> tuple[EfaRule, ...]:
        """The rules that do not hold."""
        return tuple(r for r in self.rules if not r.ok)

    def failed_of(self, *kinds: RuleKind) -> tuple[EfaRule, ...]:
        """The rules of ``kinds`` that do not hold."""
        return tuple(r for r in self.failed if r.kind in kinds)

    def pool_mode(self, pool: str) -> EfaMode:
        """What the nodes of pool ``pool`` do (:data:`EfaMode`): ``off`` when the file system
        is not EFA-enabled or the pool's type cannot be its client (a CPU pool never can: no
        EFA); ``required`` for ``true`` while every node-count limit holds; else
        ``preferred``. Each pool's nodes must get their own: a CPU node set to ``required``
        would fail its set-up."""
        if not self.enabled or pool not in self.clients:
            return "off"
        if self.setting is True and not self.failed_of("limit"):
            return "required"
        return "preferred"

    @property
    def mode(self) -> EfaMode:
        """What the main pool's nodes do (:meth:`pool_mode`): ``off`` when the file system is
        not EFA-enabled or ``instance_type`` cannot be its client; ``required`` for ``true``
        while every node-count limit holds; else ``preferred``."""
        return self.pool_mode(self.main_pool)

    @property
    def reason(self) -> str:
        """Why it is on or off, one sentence fragment (estimate, summary, warnings, the
        ``FsxEfa`` output's description): with ``auto`` off by a rule, every file-system rule
        that does not hold; when on, what the client types and node-count limits leave of it
        (and, with CPU pools, that they mount it over TCP)."""
        if self.setting is False:
            return "off: fsx.efa is false"
        if self.setting is True:
            head = "on: fsx.efa is true"
        elif not self.gains:
            return (f"off (auto): the file system's throughput is not above "
                    f"{FSX_EFA_RECOMMENDED_MB_S:,} MB/s, from which AWS recommends EFA")
        elif self.failed_of("file-system"):
            return "off (auto): " + "; ".join(
                f"{r.field} {r.needs}" for r in self.failed_of("file-system"))
        else:
            head = (f"on (auto): the file system meets every rule of EFA-enabled file systems "
                    f"and its throughput is above {FSX_EFA_RECOMMENDED_MB_S:,} MB/s")
        if self.cpu_pools:
            many = len(self.cpu_pools) > 1
            head += (f"; the CPU pool{'s' if many else ''} {', '.join(self.cpu_pools)} (no "
                     f"EFA) mount{'' if many else 's'} it over TCP")
        failed = self.failed_of("client")
        if failed and failed[0].field == "instance_type":  # the one pool of the shorthand
            return f"{head}; the nodes mount it over TCP: " + "; ".join(
                f"{r.field} {r.needs}" for r in failed)
        parts = [head]
        if failed:
            parts.append("those pools' nodes mount it over TCP: " + "; ".join(
                f"{r.field} {r.needs}" for r in failed))
        if self.failed_of("limit"):
            parts.append("mode preferred, a node that cannot use EFA falls back to TCP: "
                         + "; ".join(f"{r.field} {r.needs}" for r in self.failed_of("limit")))
        return "; ".join(parts)

def _file_system_rules(c: ClusterConfig) -> list[EfaRule]:
    fsx = c.fsx
    rules = [EfaRule(
        "deployment", "file-system", fsx.deployment_type == FSX_EFA_DEPLOYMENT_TYPE,
        "fsx.deployment_type", fsx.deployment_type,
        f"must be {FSX_EFA_DEPLOYMENT_TYPE}: EFA is supported on Persistent 2 file systems "
        "with a metadata configuration", DOC_FSX_EFA)]
    if fsx.deployment_type == FSX_EFA_DEPLOYMENT_TYPE:
        rules.append(EfaRule(
            "lustre-version", "file-system", fsx.lustre_version == FSX_EFA_LUSTRE_VERSION,
            "fsx.lustre_version", fsx.lustre_version,
            f"must be {FSX_EFA_LUSTRE_VERSION}: EFA needs a metadata configuration, which the "
            f"stack gives PERSISTENT_2 on Lustre {FSX_EFA_LUSTRE_VERSION} (the FSx API creates "
            "no other version with one)", DOC_FSX_EFA))
    step = FSX_EFA_CAPACITY_STEP_GIB.get(fsx.per_unit_storage_throughput or 0)
    if fsx.deployment_type == FSX_EFA_DEPLOYMENT_TYPE and step is not None:
        gib = fsx.storage_capacity_gib
        rules.append(EfaRule(
            "capacity", "file-system", gib > 0 and gib % step == 0, "fsx.storage_capacity_gib",
            gib,
            f"must be a multiple of {step:,} GiB at {fsx.per_unit_storage_throughput} "
            f"MB/s/TiB for an EFA-enabled file system ({step // 1200}x the 1,200 GiB "
            f"minimum without EFA; steps: "
            + ", ".join(f"{s:,} GiB at {t}" for t, s in FSX_EFA_CAPACITY_STEP_GIB.items())
            + ")", DOC_FSX_EFA_CAPACITY))
    return rules


def _client_rule(pool: Pool) -> EfaRule:
    return EfaRule(
        "client", "client", pool.instance_type in FSX_EFA_CLIENT_TYPES,
        pool.key("instance_type"), pool.instance_type,
        "must be one of " + ", ".join(sorted(FSX_EFA_CLIENT_TYPES)) + ": clients of an "
        "EFA-enabled file system are Nitro v4 or newer instances with EFA, excluding the trn2 "
        "instance family", DOC_FSX_EFA_CLIENTS)


def _interfaces(pool: Pool) -> int:
    spec = CATALOG.get(pool.instance_type)
    return client_interfaces(spec) if spec is not None else 0


def _limit_rules(c: ClusterConfig, clients: list[Pool]) -> list[EfaRule]:
    """The node-count limits over the EFA clients: one pool's (the shorthand, as it always
    was: named ``nodes.max``) or every client pool's together (named ``pools``)."""
    if not c.pools:
        interfaces, nodes = _interfaces(c.main_pool), c.nodes.max
        connections = nodes * interfaces
        rules = [EfaRule(
            "connections", "limit", connections <= FSX_EFA_MAX_CONNECTIONS, "nodes.max", nodes,
            f"should be at most {FSX_EFA_MAX_CONNECTIONS // max(interfaces, 1):,} for every "
            f"node to reach the file system over EFA: each node binds {interfaces} EFA "
            f"interface(s) to Lustre, each one of the file system's "
            f"{FSX_EFA_MAX_CONNECTIONS:,} EFA connections ({connections:,} needed; what happens "
            "past the limit is not documented)", DOC_FSX_EFA_CLIENTS)]
        beside = _beside_file_system(c, [c.main_pool])
        if beside is not None:
            rules.append(EfaRule(
                "address-block", "limit", beside >= nodes, "nodes.max", nodes,
                f"should be at most {beside:,} for every node to reach the file system over "
                f"EFA: clients use the same Availability Zone and /16 CIDR as the file system, "
                f"and vpc_cidr {c.vpc_cidr} holds {beside:,} of the {nodes:,} nodes (the "
                "address plan puts the others in secondary blocks); a larger primary block "
                "(at most a /16) holds more", DOC_FSX_EFA))
        return rules
    value = {p.name: p.nodes.max for p in clients}
    connections = sum(p.nodes.max * _interfaces(p) for p in clients)
    each = ", ".join(f"{p.name}: {p.nodes.max} x {_interfaces(p)}" for p in clients) or "none"
    rules = [EfaRule(
        "connections", "limit", connections <= FSX_EFA_MAX_CONNECTIONS, "pools", value,
        f"should need at most {FSX_EFA_MAX_CONNECTIONS:,} EFA connections in all for every "
        f"node to reach the file system over EFA: each node of an EFA client pool binds "
        f"EFA interfaces to Lustre (nodes.max x interfaces: {each}), each one of the file "
        f"system's {FSX_EFA_MAX_CONNECTIONS:,} EFA connections ({connections:,} needed; what "
        "happens past the limit is not documented); CPU pools and pools of other types take "
        "none (they mount it over TCP)", DOC_FSX_EFA_CLIENTS)]
    beside = _beside_file_system(c, clients)
    if beside is not None and clients:
        total = sum(p.nodes.max for p in clients)
        rules.append(EfaRule(
            "address-block", "limit", beside >= total, "pools", value,
            f"should keep every node of the EFA client pools in vpc_cidr {c.vpc_cidr} for "
            f"every node to reach the file system over EFA: clients use the same "
            f"Availability Zone and /16 CIDR as the file system, and it holds {beside:,} of "
            f"their {total:,} nodes (the address plan fills the compute subnets pool by pool, "
            "in order, and puts the rest in secondary blocks); a larger primary block (at "
            "most a /16), or the client pools listed first, holds more", DOC_FSX_EFA))
    return rules


def _beside_file_system(c: ClusterConfig, pools: list[Pool]) -> int | None:
    """Nodes of ``pools`` the address plan puts in the file system's block; ``None`` when the
    plan cannot be made (its own rule reports why)."""
    if not plannable(c):
        return None
    try:
        plan = c.address_plan
    except PlanError:
        return None
    primary = {i for i, s in enumerate(plan.compute_subnets) if s.block == plan.vpc_cidr}
    return sum(g.nodes for p in pools for g in plan.pool(p.name).groups if g.subnet in primary)


def plan_fsx_efa(c: ClusterConfig) -> FsxEfaPlan:
    """Decide ``fsx.efa`` for ``c`` (see the module docstring).

    The file-system rules come first, then one ``client`` rule per Trainium pool (named by
    its ``instance_type`` key), then the node-count limits over the pools whose type is a
    client. CPU pools have no ``client`` rule: they have no EFA, are never clients, and mount
    the file system over TCP whatever ``fsx.efa`` says (:meth:`FsxEfaPlan.pool_mode` is
    ``off`` for them).

    Returns:
        The plan; ``enabled`` is ``True`` for ``fsx.efa: true`` even where a rule fails (the
        configuration is then invalid and the rule ``fsx_efa`` reports each failure), and for
        ``auto`` depends only on the ``file-system`` rules and the throughput.
    """
    trainium = [p for p in c.node_pools if p.instance_type not in CPU_CATALOG]
    client_rules = [_client_rule(p) for p in trainium]
    clients = [p for p, r in zip(trainium, client_rules, strict=True) if r.ok]
    rules = (*_file_system_rules(c), *client_rules, *_limit_rules(c, clients))
    throughput = c.fsx.throughput_mb_s
    if throughput is None:  # a scratch type: its baseline decides whether auto says why
        throughput = (c.fsx.storage_capacity_gib / 1024
                      * FSX_SCRATCH_MB_S_TIB.get(c.fsx.deployment_type, 0))
    gains = throughput > FSX_EFA_RECOMMENDED_MB_S
    setting = c.fsx.efa
    enabled = setting is True or (setting == "auto" and gains and all(
        r.ok for r in rules if r.kind == "file-system"))
    connections = (c.nodes.max * _interfaces(c.main_pool) if not c.pools else
                   sum(p.nodes.max * _interfaces(p) for p in clients))
    return FsxEfaPlan(setting=setting, enabled=enabled, rules=rules, gains=gains,
                      interfaces_per_client=_interfaces(c.main_pool), connections=connections,
                      main_pool=c.main_pool.name, clients=tuple(p.name for p in clients),
                      cpu_pools=tuple(p.name for p in c.node_pools
                                      if p.instance_type in CPU_CATALOG))
