"""The node pools of a synthesized template, read from its ``Pools`` output, and which pool
each billed group of nodes belongs to.

The ``Pools`` output is a JSON list written with ``Stack.to_json_string``
(:func:`trn_ultracluster.contracts.pools.parse_pools` shape); in the template it is an
``Fn::Join`` of JSON text and the intrinsics of the values that are tokens (the training
image URI, the orchestrator's node group and Auto Scaling group names). :func:`template_pools`
writes each ``Ref`` / ``Fn::GetAtt`` as ``<ref:LogicalId>`` (any other intrinsic as
``<token>``) and parses the result, so a pool's ``node_groups`` / ``auto_scaling_groups``
name the logical ids of its resources. Standard library only.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from trn_ultracluster.contracts.outputs import OutputKey
from trn_ultracluster.contracts.pools import POOL_LABEL, PoolInfo, parse_pools

__all__ = ["ref", "resource_pool", "template_pools"]


def ref(logical_id: str) -> str:
    """How :func:`template_pools` writes a reference to ``logical_id``."""
    return f"<ref:{logical_id}>"


def _render(value: Any) -> str:
    """A CloudFormation value as text: literals as they are, ``Ref`` / ``Fn::GetAtt`` as
    :func:`ref`, ``Fn::Join`` joined, any other intrinsic ``<token>``."""
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, dict) and len(value) == 1:
        (name, arg), = value.items()
        if name == "Ref" and isinstance(arg, str):
            return ref(arg)
        if name == "Fn::GetAtt" and isinstance(arg, list) and arg:
            return ref(str(arg[0]))
        if name == "Fn::Join" and isinstance(arg, list) and len(arg) == 2:
            return str(arg[0]).join(_render(v) for v in arg[1])
    return "<token>"


def template_pools(template: dict[str, Any]) -> tuple[PoolInfo, ...]:
    """The pools of ``template``'s ``Pools`` output; ``()`` when it has none (a template
    synthesized before pools) or the output is not the documented shape."""
    output = template.get("Outputs", {}).get(OutputKey.POOLS.value)
    if output is None:
        return ()
    try:
        return parse_pools(_render(output.get("Value")))
    except ValueError:
        return ()


def _labels(props: dict[str, Any]) -> dict[str, Any]:
    labels = props.get("Labels")
    return labels if isinstance(labels, dict) else {}


def _tags(props: dict[str, Any]) -> dict[str, Any]:
    tags = props.get("Tags")
    if isinstance(tags, dict):
        return tags
    if isinstance(tags, list):
        return {t.get("Key"): t.get("Value") for t in tags if isinstance(t, dict)}
    return {}


def resource_pool(pools: Sequence[PoolInfo], logical_id: str, resource: dict[str, Any],
                  instance_type: str | None, group_name: str | None = None) -> str | None:
    """The pool that a billed group of nodes belongs to, or ``None`` (the EKS system nodes,
    HyperPod's controller and login nodes: shared).

    In order: the pool whose ``node_groups`` / ``auto_scaling_groups`` name ``logical_id``
    (or whose ``instance_groups`` name ``group_name``, a HyperPod instance group); the
    resource's :data:`~trn_ultracluster.contracts.pools.POOL_LABEL` label (EKS node group)
    or tag (Auto Scaling group); the only pool of ``instance_type``.

    Args:
        pools: the template's pools (:func:`template_pools`).
        logical_id: the resource's logical id.
        resource: the resource (``Type`` and ``Properties``).
        instance_type: the EC2 type its nodes run (``ml.`` prefix removed).
        group_name: a HyperPod instance group's name.
    """
    names = {p.name for p in pools}
    for pool in pools:
        if ref(logical_id) in (*pool.node_groups, *pool.auto_scaling_groups):
            return pool.name
        if group_name is not None and group_name in pool.instance_groups:
            return pool.name
    props = resource.get("Properties", {})
    for marks in (_labels(props), _tags(props)):
        if marks.get(POOL_LABEL) in names:
            return str(marks[POOL_LABEL])
    of_type = [p.name for p in pools if p.instance_type == instance_type]
    return of_type[0] if len(of_type) == 1 else None

