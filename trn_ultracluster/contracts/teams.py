"""The teams as the stack reports them (stack output ``Teams``) and the job CLI reads them:
standard library only.

A stack with ``teams`` writes one JSON object, :func:`parse_teams` shape; each orchestrator
adds where a team's jobs go (the Slurm account, the Kubernetes namespace and LocalQueue, the
Kueue ClusterQueue) and the name each priority class has in its scheduler (the Slurm QOS, the
Kueue WorkloadPriorityClass). A stack without ``teams`` has no ``Teams`` output: every job is
first come first served, and ``--team`` is refused.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

__all__ = ["KUEUE_PRIORITY_LABEL", "KUEUE_QUEUE_LABEL", "PriorityClassInfo", "TeamError",
           "TeamInfo", "TeamQuotaInfo", "TeamsInfo", "parse_teams", "teams_info"]

KUEUE_QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
"""The label that puts a job in a Kueue LocalQueue (Kueue docs, "Run a Kubeflow TrainJob" and
"LocalQueue": ``metadata.labels["kueue.x-k8s.io/queue-name"]``)."""
KUEUE_PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
"""The label that gives a job a WorkloadPriorityClass (Kueue docs, "WorkloadPriorityClass":
``kueue.x-k8s.io/priority-class``)."""


class TeamError(ValueError):
    """A team or priority class that does not exist, no team given where several could run
    the job, or ``--team`` on a stack without teams; the message names what exists."""


@dataclass(frozen=True)
class TeamQuotaInfo:
    """A team's quota on one pool.

    Attributes:
        pool: the pool's name.
        nodes: whole nodes, or ``None`` when the quota is NeuronCores that are no whole
            number of nodes (Kueue only).
        neuron_cores: physical NeuronCores (0 on a CPU pool).
        neuron_devices: Neuron devices (chips), ``None`` when not whole.
    """

    pool: str
    nodes: int | None
    neuron_cores: int
    neuron_devices: int | None


@dataclass(frozen=True)
class TeamInfo:
    """One team of a deployed stack.

    Attributes:
        name: the team's name (``--team``).
        default: ``submit`` without ``--team`` uses it.
        priority: its default priority class (a :class:`PriorityClassInfo` name).
        borrow, lend: may use others' idle quota; lets others use its idle quota.
        quotas: its quota per pool.
        account: Slurm account (``hyperpod-slurm``), else ``""``.
        namespace: Kubernetes namespace of its jobs (``eks``, ``hyperpod-eks``), else ``""``.
        queue: Kueue LocalQueue in ``namespace``, else ``""``.
        cluster_queue: Kueue ClusterQueue of the team, else ``""``.
    """

    name: str
    default: bool
    priority: str
    borrow: bool
    lend: bool
    quotas: tuple[TeamQuotaInfo, ...] = ()
    account: str = ""
    namespace: str = ""
    queue: str = ""
    cluster_queue: str = ""

    def quota(self, pool: str) -> TeamQuotaInfo | None:
        """The quota on ``pool``; ``None`` for a pool the stack did not list."""
        return next((q for q in self.quotas if q.pool == pool), None)


@dataclass(frozen=True)
class PriorityClassInfo:
    """A priority class.

    Attributes:
        name: its name (``--priority``).
        weight: 0 to 100, higher first.
        scheduler_name: what the scheduler calls it (Slurm QOS, Kueue WorkloadPriorityClass);
            the name itself where the orchestrator adds nothing.
    """

    name: str
    weight: int
    scheduler_name: str = ""

    @property
    def scheduled_as(self) -> str:
        """:attr:`scheduler_name`, or :attr:`name` where it is empty."""
        return self.scheduler_name or self.name


@dataclass(frozen=True)
class TeamsInfo:
    """The teams of a deployed stack (empty: a stack without teams).

    Attributes:
        teams: the teams, in configuration order.
        priority_classes: the classes, highest weight first.
        preemption: ``lower-priority`` or ``never``.
    """

    teams: tuple[TeamInfo, ...] = ()
    priority_classes: tuple[PriorityClassInfo, ...] = ()
    preemption: str = "never"

    def __bool__(self) -> bool:
        return bool(self.teams)

    def to_json(self) -> dict[str, Any]:
        """The ``Teams`` output's value (:func:`parse_teams` shape)."""
        data = {"teams": [asdict(t) for t in self.teams],
                "priority_classes": [asdict(p) for p in self.priority_classes],
                "preemption": self.preemption}
        return json.loads(json.dumps(data))  # tuples to lists, as JSON has them

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TeamsInfo:
        """The inverse of :meth:`to_json`.

        Raises:
            KeyError, TypeError, ValueError: not the shape :func:`parse_teams` documents.
        """
        teams = tuple(
            TeamInfo(name=str(t["name"]), default=bool(t["default"]),
                     priority=str(t["priority"]), borrow=bool(t["borrow"]),
                     lend=bool(t["lend"]),
                     quotas=tuple(TeamQuotaInfo(
                         str(q["pool"]), None if q.get("nodes") is None else int(q["nodes"]),
                         int(q.get("neuron_cores") or 0),
                         None if q.get("neuron_devices") is None else int(q["neuron_devices"]))
                         for q in t.get("quotas") or ()),
                     account=str(t.get("account") or ""),
                     namespace=str(t.get("namespace") or ""),
                     queue=str(t.get("queue") or ""),
                     cluster_queue=str(t.get("cluster_queue") or ""))
            for t in data["teams"])
        classes = tuple(PriorityClassInfo(str(p["name"]), int(p["weight"]),
                                          str(p.get("scheduler_name") or ""))
                        for p in data.get("priority_classes") or ())
        return cls(teams, tuple(sorted(classes, key=lambda p: -p.weight)),
                   str(data.get("preemption") or "never"))

    def team(self, name: str | None) -> TeamInfo:
        """The team a job runs as: ``name`` (``--team``), else the default team.

        Raises:
            TeamError: no teams; ``name`` names no team; no ``name`` and no default team.
                The message lists the teams.
        """
        listed = ", ".join(f"{t.name}{' (default)' if t.default else ''}" for t in self.teams)
        if not self.teams:
            raise TeamError(f"--team {name!r}: this stack has no teams (its configuration "
                            "has no `teams`); leave --team out")
        if name is not None:
            found = next((t for t in self.teams if t.name == name), None)
            if found is None:
                raise TeamError(f"--team {name!r} names no team of this stack; its teams: "
                                f"{listed}")
            return found
        default = next((t for t in self.teams if t.default), None)
        if default is None:
            raise TeamError(f"this stack has {len(self.teams)} teams and none is the default: "
                            f"choose one with --team NAME; its teams: {listed}")
        return default

    def priority(self, name: str | None, team: TeamInfo) -> PriorityClassInfo:
        """The class a job runs at: ``name`` (``--priority``), else ``team``'s default.

        Raises:
            TeamError: ``name`` names no class; the message lists the classes.
        """
        wanted = name if name is not None else team.priority
        found = next((p for p in self.priority_classes if p.name == wanted), None)
        if found is None:
            listed = ", ".join(f"{p.name} ({p.weight})" for p in self.priority_classes)
            raise TeamError(f"--priority {wanted!r} names no priority class of this stack; "
                            f"its classes (weight, higher first): {listed}")
        return found


def parse_teams(text: str | None) -> TeamsInfo:
    """The teams of a ``Teams`` output value; ``None`` (no output): no teams.

    Shape::

        {"teams": [{"name": str, "default": bool, "priority": str, "borrow": bool,
                    "lend": bool,
                    "quotas": [{"pool": str, "nodes": int | null, "neuron_cores": int,
                                "neuron_devices": int | null}, ...],
                    "account": str, "namespace": str, "queue": str,
                    "cluster_queue": str}, ...],
         "priority_classes": [{"name": str, "weight": int, "scheduler_name": str}, ...],
         "preemption": "lower-priority" | "never"}

    Raises:
        ValueError: not JSON of that shape (the message says what is wrong).
    """
    if text is None:
        return TeamsInfo()
    try:
        data = json.loads(text)
        if not isinstance(data, dict):
            raise TypeError("not an object")
        return TeamsInfo.from_json(data)
    except (KeyError, TypeError, ValueError) as err:
        raise ValueError(f"the stack output Teams is not the teams' JSON ({err})") from None


def teams_info(teams: Sequence[Any], classes: Sequence[Any], preemption: str,
               details: Mapping[str, Mapping[str, str]] | None = None,
               class_names: Mapping[str, str] | None = None) -> TeamsInfo:
    """:class:`TeamsInfo` of resolved configuration teams (``ClusterConfig.team_list``: objects
    with ``name``, ``default``, ``priority``, ``borrow``, ``lend`` and ``quotas`` of ``pool``,
    ``nodes``, ``neuron_cores``, ``neuron_devices``) and priority classes (``name``,
    ``weight``), with what an orchestrator adds: ``details`` team -> ``account`` /
    ``namespace`` / ``queue`` / ``cluster_queue``; ``class_names`` class -> scheduler name."""
    details = details or {}
    class_names = class_names or {}
    infos = tuple(
        TeamInfo(t.name, t.default, t.priority, t.borrow, t.lend,
                 tuple(TeamQuotaInfo(q.pool, q.nodes, q.neuron_cores, q.neuron_devices)
                       for q in t.quotas),
                 **dict(details.get(t.name, {})))
        for t in teams)
    pcs = tuple(PriorityClassInfo(c.name, c.weight, class_names.get(c.name, ""))
                for c in sorted(classes, key=lambda c: -c.weight))
    return TeamsInfo(infos, pcs, preemption)

