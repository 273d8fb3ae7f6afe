"""Issues and errors: the one message style, value truncation, and a check that every
message of the rules, the parser and the loader says "must" (errors) or "should"
(warnings)."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.config import (
    STYLE,
    errors,
    test_loader,
    test_parse,
    test_rules_capacity,
    test_rules_compute,
    test_rules_eks,
    test_rules_fsx,
    test_rules_hyperpod,
    test_rules_network,
    test_rules_tags,
)
from trn_ultracluster import config
from trn_ultracluster.config import ConfigError, ConfigIssue
from trn_ultracluster.config.errors import one_of

TABLES = [test_loader, test_parse, test_rules_capacity, test_rules_compute, test_rules_eks,
          test_rules_fsx, test_rules_hyperpod, test_rules_network, test_rules_tags]
MESSAGES = [m for t in TABLES for _, _, m in t.BAD_INPUTS]
MESSAGES += [m for t in TABLES for _, _, _, m in getattr(t, "WARNINGS", [])]


def test_issue_text_names_field_value_allowed_and_doc():
    issue = ConfigIssue("fsx.storage_capacity_gib", 3000, "must be ...", "https://doc")
    assert str(issue) == "error: fsx.storage_capacity_gib = 3000: must be ... (see https://doc)"


def test_error_text_has_a_header_and_one_line_per_issue():
    issues = [ConfigIssue("a", 1, "must be 2", "d"),
              ConfigIssue("b", "x\ny", "should be\n  z", "d", severity="warning")]
    assert str(ConfigError(issues)).split("\n") == [
        "invalid TrnUltraCluster configuration:",
        "  error: a = 1: must be 2 (see d)",
        "  warning: b = 'x\\ny': should be z (see d)",
    ]


def test_a_long_value_is_cut_in_the_message():
    (error,) = errors({"instance_type": "x" * 5000})
    assert len(error) < 400 and "... (5002 characters)" in error


def test_one_of():
    assert one_of(["a"]) == "'a'"
    assert one_of([1, 2, 3]) == "1, 2 or 3"


def test_the_message_tables_are_distinct_large_and_in_the_one_style():
    bad_inputs = [m for t in TABLES for _, _, m in t.BAD_INPUTS]
    assert len(bad_inputs) >= 50
    assert len(set(MESSAGES)) == len(MESSAGES)
    off_style = [m for m in MESSAGES if not STYLE.match(m)]
    assert not off_style, off_style


def _leading_text(node: ast.expr) -> str | None:
    """The literal text a string expression starts with (None: not a literal)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return _leading_text(node.values[0]) if node.values else ""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _leading_text(node.left)
    return None


def _messages_in_source(path: Path) -> list[tuple[int, str, str]]:
    """(line, severity, text) of every message given to ConfigIssue (or to the loader's
    _profile_issue), following a plain variable to its assignments."""
    tree = ast.parse(path.read_text())
    assigned: dict[str, list[ast.expr]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    assigned.setdefault(target.id, []).append(node.value)
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
            continue
        index = {"ConfigIssue": 2, "_profile_issue": 1}.get(node.func.id)
        if index is None or len(node.args) <= index:
            continue
        severity = next((k.value.value for k in node.keywords if k.arg == "severity"
                         and isinstance(k.value, ast.Constant)), "error")
        arg = node.args[index]
        values = assigned.get(arg.id, []) if isinstance(arg, ast.Name) else [arg]
        for value in values:
            text = _leading_text(value)
            if text is not None:
                found.append((node.lineno, severity, text))
    return found


def test_every_message_in_the_source_says_must_or_should():
    package = Path(config.__file__).parent
    found = {f"{p.relative_to(package)}:{line}": (severity, text)
             for p in sorted(package.rglob("*.py"))
             for line, severity, text in _messages_in_source(p)}
    assert len(found) > 60, "the source check found too few messages: is it still working?"
    wrong = {where: text for where, (severity, text) in found.items()
             if not text.startswith("must " if severity == "error" else "should ")}
    assert not wrong, wrong
