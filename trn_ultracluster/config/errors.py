"""Configuration problems: one :class:`ConfigIssue` per problem, raised together as
:class:`ConfigError`.

Every issue renders in one style::

    error: <field> = <value>: must ... (see <link>)
    warning: <field> = <value>: should ... (see <link>)

An error says what the field must be; a warning says what it should be and why.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["MAX_VALUE_CHARS", "ConfigError", "ConfigIssue", "one_of", "shown"]

MAX_VALUE_CHARS = 120
"""Longest value shown in a message; longer ones are cut with their length."""


def shown(value: Any) -> str:
    """``repr(value)`` on one line, cut after :data:`MAX_VALUE_CHARS` characters."""
    text = " ".join(repr(value).split())
    if len(text) <= MAX_VALUE_CHARS:
        return text
    return f"{text[:MAX_VALUE_CHARS - 3]}... ({len(repr(value))} characters)"


def one_of(values: Sequence[Any]) -> str:
    """``'a', 'b' or 'c'``: the values' reprs, for "must be ..." messages."""
    items = [repr(v) for v in values]
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " or " + items[-1]


@dataclass(frozen=True)
class ConfigIssue:
    """One problem in the configuration.

    Attributes:
        field: dotted path of the field, e.g. ``fsx.storage_capacity_gib``.
        value: the value given.
        allowed: what is allowed, as a sentence fragment: "must ..." for an error,
            "should ..." for a warning.
        doc: where to read more (URL, or a docs/ page with its anchor).
        severity: ``error`` stops synth; ``warning`` is printed and synth goes on.
    """

    field: str
    value: Any
    allowed: str
    doc: str
    severity: Literal["error", "warning"] = "error"

    @property
    def message(self) -> str:
        """``field = value: allowed (see doc)``, without the severity, on one line; a long
        value is cut (:data:`MAX_VALUE_CHARS`) and says how long it was."""
        field = self.field if self.field.isprintable() and " " not in self.field \
            else shown(self.field)
        return (f"{field} = {shown(self.value)}: {' '.join(self.allowed.split())} "
                f"(see {self.doc})")

    def __str__(self) -> str:
        return f"{self.severity}: {self.message}"


class ConfigError(ValueError):
    """Raised by :func:`~trn_ultracluster.config.load_config` when the configuration has
    errors.

    Attributes:
        issues: the errors (and any warnings found with them), one line each in ``str()``.
    """

    def __init__(self, issues: list[ConfigIssue]):
        self.issues = issues
        lines = "\n".join(f"  {issue}" for issue in issues)
        super().__init__(f"invalid TrnUltraCluster configuration:\n{lines}")
