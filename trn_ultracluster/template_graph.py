"""The dependency graph of a synthesized CloudFormation template: what each resource refers
to (Ref, Fn::GetAtt, Fn::Sub and DependsOn), directly and transitively. Used by the
retention tests (nothing kept on ``cdk destroy`` depends on something deleted) and by the
deploy-time benchmark."""

from __future__ import annotations

import re
from typing import Any

__all__ = ["dependencies", "references", "transitive_dependencies"]

_SUB_REF = re.compile(r"\$\{([A-Za-z0-9]+)(?:\.[A-Za-z0-9.]+)?\}")


def references(value: Any) -> set[str]:
    """Logical ids (and pseudo parameters such as ``AWS::Region``, left out here) that an
    expression refers to through ``Ref``, ``Fn::GetAtt`` or ``Fn::Sub``."""
    found: set[str] = set()
    if isinstance(value, dict):
        for key, inner in value.items():
            if key == "Ref" and isinstance(inner, str):
                found.add(inner)
            elif key == "Fn::GetAtt":
                target = inner[0] if isinstance(inner, list) else str(inner).split(".")[0]
                found.add(target)
            elif key == "Fn::Sub":
                text, variables = (inner, {}) if isinstance(inner, str) else (inner[0], inner[1])
                local = set(variables)
                found |= {m for m in _SUB_REF.findall(text) if m not in local}
                found |= references(variables)
            else:
                found |= references(inner)
    elif isinstance(value, list):
        for inner in value:
            found |= references(inner)
    return {name for name in found if not name.startswith("AWS::")}


NAME_ONLY = {"AWS::Logs::LogGroup": "LogGroupName"}
"""Properties that only *name* another resource: a Lambda function's log group is named
``/aws/lambda/<function name>``, but holds nothing of the function in use."""


def dependencies(template: dict[str, Any], *, holding_only: bool = False) -> dict[str, set[str]]:
    """Resource logical id -> the resources it needs first (refs and DependsOn).

    Args:
        holding_only: only the references that can keep the other resource in use, for
            questions about deletion: ``Ref``/``GetAtt``/``Sub`` in properties, without
            ``DependsOn`` (an ordering, which CloudFormation ignores for a kept resource)
            and without references that only name a resource (:data:`NAME_ONLY`).
    """
    resources = template["Resources"]
    graph: dict[str, set[str]] = {}
    for name, resource in resources.items():
        depends = [] if holding_only else resource.get("DependsOn", [])
        depends = [depends] if isinstance(depends, str) else list(depends)
        props = dict(resource.get("Properties", {}))
        if holding_only:
            props.pop(NAME_ONLY.get(resource["Type"], ""), None)
        needs = references(props) | set(depends)
        graph[name] = {n for n in needs if n in resources}
    return graph


def transitive_dependencies(template: dict[str, Any], name: str, *,
                            holding_only: bool = False) -> set[str]:
    """Every resource ``name`` needs, directly or through others (see :func:`dependencies`)."""
    graph = dependencies(template, holding_only=holding_only)
    seen: set[str] = set()
    stack = [name]
    while stack:
        for dep in graph[stack.pop()]:
            if dep not in seen:
                seen.add(dep)
                stack.append(dep)
    return seen
