"""The node pools as the stack reports them (stack output ``Pools``) and the job CLI reads
them: standard library only.

The stack writes one JSON list, :func:`pools_json` shape; each orchestrator adds what its
job backend needs to place a job in the pool (the Slurm partition, the EKS node groups and
node label, the standalone Auto Scaling groups, the HyperPod instance groups). A stack
deployed before pools existed has no ``Pools`` output: :func:`legacy_pool` describes its one
pool from the older outputs.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = ["POOL_LABEL", "PoolError", "PoolInfo", "choose_pool", "legacy_pool", "parse_pools"]

POOL_LABEL = "trn-ultracluster/pool"
"""Kubernetes node label (and EC2 tag key) whose value is the node's pool name: EKS node
groups set it, TrainJobs select it (``nodeSelector``)."""


class PoolError(ValueError):
    """A pool that does not exist, or no pool given where several could run the job; the
    message names the pools."""


@dataclass(frozen=True)
class PoolInfo:
    """One node pool of a deployed stack.

    Attributes:
        name: the pool's name (``--pool``).
        instance_type: its EC2 instance type.
        accelerated: a Trainium pool (``False``: a CPU pool).
        nodes_min, nodes_desired, nodes_max: its node counts as deployed.
        neuron_stack: its Neuron training stack (``xla``, ``native``), ``""`` for a CPU pool.
        image_uri: the training image its jobs run (the main image for a CPU pool).
        partition: Slurm partition (``hyperpod-slurm``), else ``""``.
        node_groups: EKS managed node group names (``eks``).
        auto_scaling_groups: Auto Scaling group names (``standalone``).
        instance_groups: HyperPod instance group names (``hyperpod-*``).
        instances: HyperPod: the instances its instance groups run (``nodes.desired``: HyperPod
            runs a fixed count, so it bounds a job); ``None`` elsewhere.
        capacity_type: ``on-demand``, ``capacity-reservation`` or ``capacity-block`` where
            the orchestrator reports it (``eks``), else ``""`` (unknown: a job backend uses
            the stack's ``CapacityType`` for the main pool only).
        capacity_reservation_id: the pool's ``cr-`` id, ``""`` for none or unknown.
    """

    name: str
    instance_type: str
    accelerated: bool
    nodes_min: int
    nodes_desired: int
    nodes_max: int
    neuron_stack: str = ""
    image_uri: str = ""
    partition: str = ""
    node_groups: tuple[str, ...] = field(default=())
    auto_scaling_groups: tuple[str, ...] = field(default=())
    instance_groups: tuple[str, ...] = field(default=())
    instances: int | None = None
    capacity_type: str = ""
    capacity_reservation_id: str = ""

    @property
    def job_nodes_max(self) -> int:
        """The most nodes one job of this pool can have: the instances HyperPod runs, or
        ``nodes.max`` where the nodes scale (``scale``)."""
        return self.nodes_max if self.instances is None else self.instances

    def to_json(self) -> dict[str, Any]:
        """This pool as one item of the ``Pools`` output (:func:`parse_pools` shape, the
        inverse of :meth:`from_json`; ``pools --json`` prints it)."""
        item: dict[str, Any] = asdict(self)
        item["nodes"] = {k: item.pop(f"nodes_{k}") for k in ("min", "desired", "max")}
        return item

    @classmethod
    def from_json(cls, item: Mapping[str, Any]) -> PoolInfo:
        """One item of the ``Pools`` output.

        Raises:
            KeyError, TypeError, ValueError: not the shape :func:`parse_pools` documents.
        """
        nodes = item["nodes"]
        return cls(
            name=str(item["name"]), instance_type=str(item["instance_type"]),
            accelerated=bool(item["accelerated"]), nodes_min=int(nodes["min"]),
            nodes_desired=int(nodes["desired"]), nodes_max=int(nodes["max"]),
            neuron_stack=str(item.get("neuron_stack") or ""),
            image_uri=str(item.get("image_uri") or ""),
            partition=str(item.get("partition") or ""),
            node_groups=tuple(_names(item.get("node_groups"))),
            auto_scaling_groups=tuple(_names(item.get("auto_scaling_groups"))),
            instance_groups=tuple(_names(item.get("instance_groups"))),
            instances=None if item.get("instances") is None else int(item["instances"]),
            capacity_type=str(item.get("capacity_type") or ""),
            capacity_reservation_id=str(item.get("capacity_reservation_id") or ""))


def _names(value: Any) -> list[str]:
    """A list of names, or the comma-joined string ``Fn::Join`` makes of one in CloudFormation."""
    if value is None or value == "":
        return []
    if isinstance(value, str):
        return [v for v in value.split(",") if v]
    return [str(v) for v in value]


def parse_pools(text: str) -> tuple[PoolInfo, ...]:
    """The pools of a ``Pools`` output value.

    Shape::

        [{"name": str, "instance_type": str, "accelerated": bool,
          "nodes": {"min": int, "desired": int, "max": int},
          "neuron_stack": str, "image_uri": str,
          "partition": str, "node_groups": str (comma-joined) | [str],
          "auto_scaling_groups": ..., "instance_groups": ...,
          "capacity_type": str, "capacity_reservation_id": str}, ...]

    Raises:
        ValueError: not JSON of that shape (the message says what is wrong).
    """
    try:
        items = json.loads(text)
        if not isinstance(items, list):
            raise TypeError("not a list")
        return tuple(PoolInfo.from_json(item) for item in items)
    except (KeyError, TypeError, ValueError) as err:
        raise ValueError(f"the stack output Pools is not a list of pools ({err})") from None


def legacy_pool(instance_type: str, nodes: Sequence[int], *, accelerated: bool = True,
                neuron_stack: str = "", image_uri: str = "", name: str = "trainium",
                ) -> PoolInfo:
    """The one pool of a stack deployed before the ``Pools`` output: ``instance_type`` and
    ``nodes`` (min, desired, max) from the ``InstanceType`` and ``NodeCount*`` outputs; its
    name is the one a configuration without ``pools`` gives its pool (``trainium``)."""
    lo, desired, hi = nodes
    return PoolInfo(name, instance_type, accelerated, lo, desired, hi, neuron_stack, image_uri)


def choose_pool(pools: Sequence[PoolInfo], name: str | None, *,
                accelerated_only: bool = False) -> PoolInfo:
    """The pool a job or command runs on: ``name``, or, without one, the only Trainium pool.

    Args:
        pools: the stack's pools.
        name: ``--pool``; ``None`` for the default.
        accelerated_only: refuse a CPU pool (a ``--recipe`` job, the smoke test's
            NeuronCore checks).

    Raises:
        PoolError: ``name`` names no pool; ``name`` is a CPU pool and ``accelerated_only``;
            no ``name`` and there is not exactly one Trainium pool. Each message lists the
            pools with their types.
    """
    listed = ", ".join(f"{p.name} ({p.instance_type}{'' if p.accelerated else ', CPU'})"
                       for p in pools)
    if name is not None:
        chosen = next((p for p in pools if p.name == name), None)
        if chosen is None:
            raise PoolError(f"--pool {name!r} names no pool of this stack; its pools: {listed}")
        if accelerated_only and not chosen.accelerated:
            raise PoolError(f"--pool {name!r} is a CPU pool ({chosen.instance_type}), and this "
                            f"needs NeuronCores; Trainium pools: "
                            + ", ".join(p.name for p in pools if p.accelerated))
        return chosen
    trainium = [p for p in pools if p.accelerated]
    if len(trainium) == 1:
        return trainium[0]
    raise PoolError(f"this stack has {len(trainium)} Trainium pools: choose one with --pool "
                    f"NAME; its pools: {listed}")
