"""A small evaluator of identity-based IAM policies: does a role's set of policy documents
allow one request (action, resource ARN, condition context)?

Why our own: of the maintained evaluators we looked at, none evaluates a request's resource
and conditions as IAM does. moto 5.2.5 (``moto/iam/access_control.py``) says in its module
doc "TODO add support for the Resource and Condition parts of IAM policies": it evaluates
``StringEquals`` of trust policies only, and an Allow whose condition does not hold comes out
as an explicit deny. principalmapper 1.1.5 (``querying/local_policy_simulation.py``, last
release 2022-01, AGPL-3.0) matches resource ARNs case-insensitively. iam-ape 1.1.6 computes a
principal's effective permissions from an account's authorization details, not a decision
for one request; policyuniverse expands and minimizes action lists only.

What it implements, from AWS's "Policy evaluation logic" pages of the IAM user guide
(https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_evaluation-logic.html
and "The difference between explicit and implicit denies",
https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_evaluation-logic_AccessPolicyLanguage_Interplay.html),
for identity-based policies of one principal in one account (no SCP, boundary, session or
resource-based policy: the stack uses none on its roles):

- a request is denied by default; an applicable ``Deny`` statement denies it whatever else
  allows it (explicit deny); otherwise an applicable ``Allow`` allows it;
- a statement applies when its ``Action`` (or ``NotAction``), ``Resource`` (or
  ``NotResource``) and every condition match the request;
- action names are case-insensitive and take ``*`` and ``?`` wildcards
  ("IAM JSON policy elements: Action"); resource ARNs are case-sensitive, each of their six
  colon-separated parts matched on its own with ``*`` and ``?``, the resource part keeping its
  own colons ("IAM JSON policy elements: Resource");
- conditions ("IAM JSON policy elements: Condition operators",
  https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_elements_condition_operators.html):
  several operators in a block, and several keys under one operator, must all hold (AND);
  several values for one key: any may match (OR); a key missing from the request makes the
  condition false, unless the operator ends in ``IfExists``, which then holds; context key
  names are case-insensitive. Operators: ``StringEquals``, ``StringEqualsIgnoreCase``,
  ``StringLike``, ``ArnEquals``, ``ArnLike`` (the two ARN operators match alike, part by part
  with wildcards), ``Bool``, each with ``IfExists``, and ``Null``.

Anything else (negated operators, ``ForAllValues:``/``ForAnyValue:``, policy variables such
as ``${aws:username}``, numeric/date/IP operators) raises :class:`Unsupported` rather than
being guessed: add it, with its rule, when a template uses it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any

__all__ = ["Decision", "Request", "Unsupported", "arn_matches", "evaluate", "wildcard_matches"]


class Unsupported(ValueError):
    """A policy uses an element, operator or variable this evaluator does not implement."""


@dataclass(frozen=True)
class Request:
    """One AWS call as IAM authorizes it.

    Attributes:
        action: ``service:Operation`` (``ec2:CreateNetworkInterface``).
        resource: the ARN IAM checks (one request per resource type the action checks), or
            ``*`` for an action without resource types.
        context: condition keys of the request -> value (``{"ec2:Vpc": "arn:...:vpc/..."}``).
    """

    action: str
    resource: str
    context: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Decision:
    """The answer for one request.

    Attributes:
        allowed: whether the documents allow it.
        explicit_deny: a ``Deny`` statement applies.
        statements: the statements that decide it (the applicable denies, else allows).
    """

    allowed: bool
    explicit_deny: bool
    statements: tuple[Mapping[str, Any], ...]

    def __str__(self) -> str:
        sids = [s.get("Sid", "<no Sid>") for s in self.statements]
        if self.explicit_deny:
            return f"explicitly denied by {sids}"
        return f"allowed by {sids}" if self.allowed else "implicitly denied: no statement allows it"


def evaluate(documents: Sequence[Mapping[str, Any]], request: Request) -> Decision:
    """Whether the policy ``documents`` (each ``{"Statement": [...]}``) allow ``request``.

    Raises:
        Unsupported: a statement the evaluator cannot decide (module doc).
    """
    allows, denies = [], []
    for document in documents:
        statements = document["Statement"]
        for statement in [statements] if isinstance(statements, Mapping) else statements:
            if _applies(statement, request):
                (denies if statement["Effect"] == "Deny" else allows).append(statement)
    if denies:
        return Decision(False, True, tuple(denies))
    return Decision(bool(allows), False, tuple(allows))


def _listed(value: Any) -> list[Any]:
    """A policy element's one value or list of values, as a list."""
    return list(value) if isinstance(value, (list, tuple)) else [value]


def _applies(statement: Mapping[str, Any], request: Request) -> bool:
    if "Principal" in statement or "NotPrincipal" in statement:
        raise Unsupported("Principal: a resource-based or trust policy, not an identity policy")
    if "Action" in statement:
        action = any(wildcard_matches(a, request.action, case_sensitive=False)
                     for a in _listed(statement["Action"]))
    else:
        action = not any(wildcard_matches(a, request.action, case_sensitive=False)
                         for a in _listed(statement["NotAction"]))
    if not action:
        return False
    if "Resource" in statement:
        resource = any(arn_matches(r, request.resource) for r in _listed(statement["Resource"]))
    else:
        resource = not any(arn_matches(r, request.resource)
                           for r in _listed(statement["NotResource"]))
    return resource and _conditions_hold(statement.get("Condition", {}), request.context)


@cache
def _pattern(pattern: str, case_sensitive: bool) -> re.Pattern[str]:
    if "${" in pattern:
        raise Unsupported(f"policy variable in {pattern!r}")
    regex = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)
    return re.compile(f"^{regex}$", re.S if case_sensitive else re.S | re.I)


def wildcard_matches(pattern: str, value: str, *, case_sensitive: bool = True) -> bool:
    """``value`` matches ``pattern``, whose ``*`` stands for any characters and ``?`` for one."""
    return _pattern(pattern, case_sensitive).match(value) is not None


def arn_matches(pattern: str, arn: str) -> bool:
    """``arn`` matches the ARN ``pattern``: ``*`` alone matches anything; else each of the six
    parts (``arn:partition:service:region:account:resource``, the resource keeping its colons)
    matches on its own, case-sensitively, with wildcards; a pattern or value of fewer parts
    matches nothing."""
    if "${" in pattern:
        raise Unsupported(f"policy variable in {pattern!r}")
    if pattern == "*":
        return True
    wanted, got = pattern.split(":", 5), arn.split(":", 5)
    if len(wanted) != 6 or len(got) != 6:
        return False
    return all(wildcard_matches(w, g) for w, g in zip(wanted, got))


_STRING = {
    "StringEquals": lambda want, got: want == got,
    "StringEqualsIgnoreCase": lambda want, got: want.lower() == got.lower(),
    "StringLike": wildcard_matches,
    "ArnEquals": arn_matches,
    "ArnLike": arn_matches,
    "Bool": lambda want, got: want.lower() == got.lower(),
}


def _conditions_hold(block: Mapping[str, Mapping[str, Any]], context: Mapping[str, str]) -> bool:
    values = {k.lower(): v for k, v in context.items()}
    for operator, keys in block.items():
        if ":" in operator:
            raise Unsupported(f"set operator {operator}")
        for key, wanted in keys.items():
            present = key.lower() in values
            if operator == "Null":
                if not any((str(w).lower() == "true") != present for w in _listed(wanted)):
                    return False
                continue
            base = operator.removesuffix("IfExists")
            if base not in _STRING:
                raise Unsupported(f"condition operator {operator}")
            if not present:
                if base == operator:
                    return False
                continue
            got = values[key.lower()]
            if not any(_STRING[base](str(w), got) for w in _listed(wanted)):
                return False
    return True
