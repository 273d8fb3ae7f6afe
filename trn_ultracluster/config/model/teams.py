"""Teams: ``teams`` (who shares the cluster, with what quota per pool) and ``scheduling``
(the priority classes and whether a higher one preempts a lower one).

Each scheduler enforces them itself: Kueue on ``eks`` (a ClusterQueue per team in one cohort),
HyperPod task governance on ``hyperpod-eks`` (a compute quota per team), Slurm accounting on
``hyperpod-slurm`` (an account per team, associations with ``GrpTRES`` limits, a QOS per
priority class). ``standalone`` has no scheduler and refuses ``teams``.

Units. A quota is given per pool in ``nodes`` or in ``neuron_cores`` (physical NeuronCores,
the catalog's ``neuron_cores``), and :class:`TeamQuota` converts it for each scheduler with
the catalog: Slurm (``GrpTRES=node=N``) and HyperPod (``ComputeQuotaResourceConfig.Count``,
instances) count whole nodes; Kueue counts what the job's pods request: Neuron devices
(``aws.amazon.com/neuron``, one per Trainium chip) on a Trainium pool, vCPUs and memory on a
CPU pool. A NeuronCore quota that is no whole number of what the scheduler counts is an error
(``config/rules/teams.py``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from pydantic import Field

from trn_ultracluster.config.model.base import FrozenModel
from trn_ultracluster.config.model.pools import Pool
from trn_ultracluster.contracts.catalog import InstanceSpec

__all__ = ["DEFAULT_PRIORITY_CLASSES", "DOC_TEAMS", "PriorityClassConfig", "SchedulingConfig",
           "TEAM_NAME_MAX", "TEAM_NAME_PATTERN", "Team", "TeamConfig", "TeamQuota",
           "TeamQuotaConfig", "resolve_teams"]

DOC_TEAMS = "docs/teams.md"
TEAM_NAME_MAX = 40
TEAM_NAME_PATTERN = re.compile(r"^[a-z]([a-z0-9-]*[a-z0-9])?\Z")
"""A team's name is at once a Slurm account, a Kubernetes namespace and LocalQueue, and a
HyperPod task-governance team; the strictest of their rules holds: lowercase letters, digits
and hyphens, starting with a letter and ending alphanumeric, at most :data:`TEAM_NAME_MAX`
characters. HyperPod: ``ComputeQuotaTarget.TeamName`` matches
``[a-z0-9]([-a-z0-9]*[a-z0-9]){0,39}?`` (botocore 1.44.8 SageMaker model, shape
``ComputeQuotaTargetTeamName``); a Kubernetes namespace is an RFC 1123 DNS label (at most 63
lowercase alphanumerics or ``-``, starting and ending alphanumeric; Kubernetes docs "Namespaces"
and "Object Names and IDs"); a Slurm account is a name sacctmgr(1) takes as one word (no
whitespace or commas; the lowercase-only rule here leaves no question of case)."""


class TeamQuotaConfig(FrozenModel):
    """A team's quota on one pool: ``teams[i].quota.<pool>``; give ``nodes`` or
    ``neuron_cores``, not both (``config/rules/teams.py`` says so with the field's name).

    Attributes:
        nodes: whole nodes of the pool, 0 or more.
        neuron_cores: physical NeuronCores (a Trainium pool only), 0 or more; converted to
            what each scheduler counts (:class:`TeamQuota`): whole nodes on HyperPod and
            Slurm, whole Neuron devices (chips) on ``eks``.
    """

    nodes: int | None = Field(default=None, ge=0)
    neuron_cores: int | None = Field(default=None, ge=0)


class TeamConfig(FrozenModel):
    """One team: ``teams[i]``.

    Attributes:
        name: 1-40 lowercase letters, digits and hyphens, starting with a letter and ending
            alphanumeric (:data:`TEAM_NAME_PATTERN`); its Slurm account, Kubernetes namespace
            and queue, HyperPod team.
        quota: pool name -> :class:`TeamQuotaConfig`; a pool left out: quota 0 there (the
            team runs on it only by borrowing).
        borrow: may use quota other teams leave idle (Kueue ``borrowingLimit`` unset, HyperPod
            ``LendAndBorrow``, Slurm: its ``GrpTRES`` limit is the pool less what
            non-lending teams hold).
        lend: lets other teams use its idle quota (Kueue ``lendingLimit`` unset; ``false``:
            ``lendingLimit: 0``, HyperPod ``DontLend``, Slurm: the others' limits leave it
            free).
        priority: its jobs' default priority class (``scheduling.priority_classes``); ``null``:
            the lowest class.
        default: ``submit`` without ``--team`` runs as this team (at most one team; a lone
            team is the default).
    """

    name: str
    quota: dict[str, TeamQuotaConfig] = {}
    borrow: bool = True
    lend: bool = True
    priority: str | None = None
    default: bool = False


class PriorityClassConfig(FrozenModel):
    """One priority class: ``scheduling.priority_classes[i]``.

    Attributes:
        name: the class's name (:data:`TEAM_NAME_PATTERN`, the rule of HyperPod's
            ``ClusterSchedulerPriorityClassName``); ``submit --priority`` takes it.
        weight: 0 to 100, higher first: HyperPod's ``PriorityClass.Weight`` range (botocore
            SageMaker model, shape ``PriorityWeight``: min 0, max 100), also the Kueue
            WorkloadPriorityClass ``value`` and the Slurm QOS ``Priority``. No two classes
            of one weight (they would not be ordered).
    """

    name: str
    weight: int


DEFAULT_PRIORITY_CLASSES = (PriorityClassConfig(name="training", weight=100),
                            PriorityClassConfig(name="experiment", weight=10))
"""``training`` above ``experiment``: the big run's jobs go first."""


class SchedulingConfig(FrozenModel):
    """How the scheduler orders teams' jobs: ``scheduling`` (used with ``teams``).

    Attributes:
        priority_classes: the classes, at most 10 (HyperPod's ``PriorityClassList``: max 10,
            botocore SageMaker model); names unique.
        preemption: ``lower-priority`` (default): a job may stop jobs of a lower class in
            its own team, and a team reclaims quota it lent by stopping borrowers' jobs
            (Kueue ``withinClusterQueue: LowerPriority``, ``reclaimWithinCohort: Any``;
            HyperPod ``PreemptTeamTasks: LowerPriority``; Slurm ``PreemptType=preempt/qos``,
            each QOS preempting the lower ones, ``PreemptMode=REQUEUE``). A stopped job is
            requeued and starts again later (the bundled trainer resumes from its last
            checkpoint; a program without checkpoints starts over). ``never``: nothing is
            stopped, a higher class only goes first in the queue; the big run then waits for
            running experiments to end. The default is ``lower-priority`` because without it
            quota lent to another team is not returned until that team's jobs end, so
            ``lend: true`` would let one long job hold another team's quota.
    """

    priority_classes: tuple[PriorityClassConfig, ...] = DEFAULT_PRIORITY_CLASSES
    preemption: Literal["lower-priority", "never"] = "lower-priority"


@dataclass(frozen=True)
class TeamQuota:
    """A team's quota on one pool, in every unit a scheduler counts.

    Attributes:
        pool: the pool's name.
        instance: the pool type's catalog entry.
        nodes: whole nodes, or ``None`` when the configured NeuronCores are no whole number
            of nodes (Slurm and HyperPod cannot count it; the rules say so).
        neuron_cores: physical NeuronCores (0 on a CPU pool).
        neuron_devices: Neuron devices (``aws.amazon.com/neuron``: Trainium chips), or
            ``None`` when the NeuronCores are no whole number of chips (Kueue cannot count
            it).
    """

    pool: str
    instance: InstanceSpec
    nodes: int | None
    neuron_cores: int
    neuron_devices: int | None

    @classmethod
    def of(cls, pool: str, instance: InstanceSpec, quota: TeamQuotaConfig) -> TeamQuota:
        """Convert ``quota`` with the catalog: nodes x ``neuron_cores`` per node; NeuronCores
        / cores per chip (``neuron_cores // chips``) or per node. ``nodes`` wins where both
        units are given, and a quota of neither is 0 (the rules refuse both)."""
        cores_per_node = instance.neuron_cores
        if quota.nodes is not None:
            return cls(pool, instance, quota.nodes, quota.nodes * cores_per_node,
                       quota.nodes * instance.chips)
        cores = quota.neuron_cores or 0
        per_chip = cores_per_node // instance.chips if instance.chips else 0
        nodes = cores // cores_per_node if cores_per_node and cores % cores_per_node == 0 \
            else (0 if cores == 0 else None)
        devices = cores // per_chip if per_chip and cores % per_chip == 0 \
            else (0 if cores == 0 else None)
        return cls(pool, instance, nodes, cores, devices)

    @property
    def vcpus(self) -> int | None:
        """vCPUs of the quota's nodes (Kueue's unit on a CPU pool), ``None`` as ``nodes``."""
        return None if self.nodes is None else self.nodes * self.instance.vcpus

    @property
    def memory_gib(self) -> int | None:
        """Memory of the quota's nodes, GiB (Kueue's other unit on a CPU pool)."""
        return None if self.nodes is None else self.nodes * self.instance.memory_gib


@dataclass(frozen=True)
class Team:
    """A team with its settings resolved (what the orchestrators and the ``Teams`` output
    read).

    Attributes:
        name: the team's name.
        index: its position in ``teams``.
        quotas: its quota on every pool, in pool order (0 on a pool its ``quota`` leaves
            out); a quota naming no pool is left out here (the rules report it).
        borrow, lend: as configured.
        priority: its default priority class (configured, else the lowest class).
        default: ``submit`` without ``--team`` runs as this team.
    """

    name: str
    index: int
    quotas: tuple[TeamQuota, ...]
    borrow: bool
    lend: bool
    priority: str
    default: bool

    def quota(self, pool: str) -> TeamQuota:
        """The quota on pool ``pool``.

        Raises:
            KeyError: no such pool.
        """
        for quota in self.quotas:
            if quota.pool == pool:
                return quota
        raise KeyError(pool)


def resolve_teams(teams: tuple[TeamConfig, ...], scheduling: SchedulingConfig,
                  pools: tuple[Pool, ...]) -> tuple[Team, ...]:
    """Every team with its quotas converted (:class:`TeamQuota`) on every pool of ``pools``
    (``ClusterConfig.node_pools``), in pool order; a pool whose type is in no catalog, or a
    quota naming no pool, is left out (the rules report both). A team without ``priority``
    gets the lowest class of ``scheduling``; the only team is the default one."""
    classes = sorted(scheduling.priority_classes, key=lambda c: c.weight)
    lowest = classes[0].name if classes else ""
    only = len(teams) == 1
    out = []
    for i, team in enumerate(teams):
        quotas = []
        for pool in pools:
            try:
                spec = pool.instance
            except ValueError:
                continue
            given = team.quota.get(pool.name, TeamQuotaConfig(nodes=0))
            quotas.append(TeamQuota.of(pool.name, spec, given))
        out.append(Team(team.name, i, tuple(quotas), team.borrow, team.lend,
                        team.priority or lowest, team.default or only))
    return tuple(out)
