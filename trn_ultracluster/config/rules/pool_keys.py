"""What the per-pool rules share: the configuration path of a pool's setting that may come from
the top level, and issues reported once.

A pool's ``capacity`` and ``neuron_stack`` are its own (``pools[i].capacity``) or the
top-level ones (``capacity``, ``training_image.neuron_stack``) when left out; a message names
the key the user wrote, so that the fix is made where the value comes from. Several pools that
take the same top-level value would repeat one issue: :func:`once` keeps the first.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import wraps

from trn_ultracluster.config.errors import ConfigIssue
from trn_ultracluster.config.model import ClusterConfig, Pool

__all__ = ["capacity_key", "capacity_sources", "neuron_stack_key", "once"]


def capacity_key(c: ClusterConfig, pool: Pool, name: str) -> str:
    """The path of ``capacity.<name>`` of ``pool``: ``pools[i].capacity.<name>`` when the pool
    has its own ``capacity``, else the top-level ``capacity.<name>`` it takes."""
    own = bool(c.pools) and c.pools[pool.index].capacity is not None
    return pool.key(f"capacity.{name}") if own else f"capacity.{name}"


def capacity_sources(c: ClusterConfig) -> list[tuple[str, object]]:
    """Every ``capacity`` section written: ``("capacity", c.capacity)`` first, then
    ``("pools[i].capacity", ...)`` of each pool that has its own (the prefix of its keys and
    the :class:`~trn_ultracluster.config.model.CapacityConfig`)."""
    return [("capacity", c.capacity)] + [(f"pools[{i}].capacity", p.capacity)
                                         for i, p in enumerate(c.pools) if p.capacity is not None]


def neuron_stack_key(c: ClusterConfig, pool: Pool) -> str:
    """The path of ``pool``'s Neuron stack setting: ``pools[i].neuron_stack`` when the pool
    sets it, else ``training_image.neuron_stack``."""
    own = bool(c.pools) and c.pools[pool.index].neuron_stack is not None
    return pool.key("neuron_stack") if own else "training_image.neuron_stack"


def once(rule: Callable[[ClusterConfig], Iterator[ConfigIssue]]
         ) -> Callable[[ClusterConfig], Iterator[ConfigIssue]]:
    """``rule`` with each issue (by its text) reported once: pools that take one top-level
    value find its problem once each."""
    @wraps(rule)
    def wrapper(c: ClusterConfig) -> Iterator[ConfigIssue]:
        seen: set[str] = set()
        for issue in rule(c):
            if str(issue) not in seen:
                seen.add(str(issue))
                yield issue
    return wrapper
