"""The import graph of ``trn_ultracluster``: no cycles, and no arrow pointing up the layers.

Read from the source with :mod:`ast`, not by importing: every ``import`` counts, also those
under ``if TYPE_CHECKING:`` and those inside a function (a cycle there is still a cycle for a
reader, and the layering is about what a module knows of, not when it loads it). An edge goes
to the module named (``from a.b import c`` goes to ``a.b.c`` when that is a module, else to
``a.b``), not to the packages above it: a package's ``__init__`` that imports its own
modules is no cycle.

The layers of the stack, bottom up: ``contracts`` (facts the CLI, the training program and
the stack share) < ``config`` < ``constructs`` < ``node_metrics`` < ``orchestrators`` <
``stacks`` < ``app``. Beside them the leaves ``network_plan`` and ``nag`` (they import
nothing of ours), the tools that read a synthesized template (``template_graph`` <
``deploy_time`` < ``estimate`` < ``summary``), ``diagram`` and the job CLI (``cli``, which
knows the contracts and the configuration, not the constructs).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT

PACKAGE = "trn_ultracluster"
PACKAGE_DIR = REPO_ROOT / PACKAGE

_CONFIG = frozenset({"contracts", "network_plan"})
_CONSTRUCTS = _CONFIG | {"config", "nag"}
_NODE_METRICS = _CONSTRUCTS | {"constructs"}
_ORCHESTRATORS = _NODE_METRICS | {"node_metrics"}
_STACKS = _ORCHESTRATORS | {"orchestrators"}

MAY_IMPORT: dict[str, frozenset[str]] = {
    "contracts": frozenset(),
    "network_plan": frozenset(),
    "nag": frozenset(),
    "config": _CONFIG,
    "constructs": _CONSTRUCTS,
    "node_metrics": _NODE_METRICS,
    "orchestrators": _ORCHESTRATORS,
    "stacks": _STACKS,
    "app": _STACKS | {"stacks"},
    "template_graph": frozenset(),
    "cloud_assembly": frozenset(),
    "deploy_time": frozenset({"template_graph"}),
    # contracts: the quota table (QuotaNeed, console_url) the estimate lists increases of
    "estimate": frozenset({"contracts", "deploy_time", "template_graph"}),
    "summary": frozenset({"cloud_assembly", "contracts", "estimate"}),
    "diagram": frozenset({"orchestrators"}),  # the registry of orchestrators, nothing built
    "create_only": frozenset(),  # generated: CloudFormation create-only properties
    "changes": frozenset({"create_only"}),  # classifies a template change
    "change_matrix": frozenset({"changes"}),  # the expected classes of each change
    "cli": frozenset({"changes", "cloud_assembly", "contracts", "config", "estimate",
                      "network_plan"}),
    "__main__": frozenset({"cli"}),
    "": frozenset(),  # the package's own __init__
}
"""Top-level package or module of ``trn_ultracluster`` -> the others it may import from
(its own modules it always may)."""

_SAME_MANIFESTS = ("the TrainJob the CLI submits is built by the same manifest functions as "
                   "the stack's training runtime (the module imports only contracts)")
_SAME_POOLS = ("a pool's TrainJob names the runtime and requests the resources the stack "
               "gives the pool (orchestrators.eks.pools imports only contracts and manifests)")
EXCEPTIONS: dict[tuple[str, str], str] = {
    (f"{PACKAGE}.cli.backends.trainjob", f"{PACKAGE}.orchestrators.eks.manifests"):
        _SAME_MANIFESTS,
    (f"{PACKAGE}.cli.backends.eks", f"{PACKAGE}.orchestrators.eks.manifests"): _SAME_MANIFESTS,
    (f"{PACKAGE}.cli.backends.kueue", f"{PACKAGE}.orchestrators.eks.manifests"):
        "a Workload's pool is read from the node label the stack's runtimes select (the "
        "module imports only contracts)",
    (f"{PACKAGE}.cli.backends.hyperpod_eks", f"{PACKAGE}.orchestrators.eks.manifests"):
        _SAME_MANIFESTS,
    (f"{PACKAGE}.cli.backends.trainjob", f"{PACKAGE}.orchestrators.eks.pools"): _SAME_POOLS,
    (f"{PACKAGE}.cli.backends.eks", f"{PACKAGE}.orchestrators.eks.pools"): _SAME_POOLS,
    (f"{PACKAGE}.estimate.lustre", f"{PACKAGE}.config.facts"):
        "the estimate prints the FSx for Lustre over EFA figures the configuration's rules "
        "check (capacity steps, throughput per client and per storage server, the 10 GB/s): "
        "one place for each figure and its source (config.facts imports nothing of the "
        "package)",
    (f"{PACKAGE}.cli.commands.plan", f"{PACKAGE}.app"):
        "plan synthesizes the configuration as the CDK app does (build_app, imported inside "
        "the function that synthesizes) to compare it with the deployed stack",
}
"""(importer, imported) -> why this one import crosses the layers."""


def module_files() -> dict[str, Path]:
    """Dotted module name -> its file, for every module of the package."""
    modules = {}
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        parts = path.relative_to(REPO_ROOT).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join(parts)] = path
    return modules


def imported(name: str, path: Path, modules: dict[str, Path]) -> Iterator[tuple[str, int]]:
    """The package's modules that the module ``name`` imports, each with its line."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([node.module] if node.module else [])])
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base
                       for a in node.names]
        else:
            continue
        for target in targets:
            while target not in modules and "." in target:  # import a.b.c of a module a.b
                target = target.rpartition(".")[0]
            if target in modules and target != name:
                yield target, node.lineno


def import_graph() -> dict[str, dict[str, int]]:
    """Module -> {module it imports: line of the (first) import}."""
    modules = module_files()
    graph: dict[str, dict[str, int]] = {}
    for name, path in modules.items():
        edges = graph.setdefault(name, {})
        for target, line in imported(name, path, modules):
            edges.setdefault(target, line)
    return graph


def top(name: str) -> str:
    """The top-level package or module of ``trn_ultracluster`` a module belongs to."""
    return name.removeprefix(PACKAGE).removeprefix(".").partition(".")[0]


def find_cycle(graph: dict[str, dict[str, int]]) -> list[str] | None:
    """One cycle of ``graph`` (its modules, the first repeated at the end), or ``None``."""
    done: set[str] = set()
    path: list[str] = []
    on_path: set[str] = set()

    def visit(node: str) -> list[str] | None:
        path.append(node)
        on_path.add(node)
        for target in sorted(graph[node]):
            if target in on_path:
                return [*path[path.index(target):], target]
            if target not in done and (cycle := visit(target)):
                return cycle
        path.pop()
        on_path.discard(node)
        done.add(node)
        return None

    for start in sorted(graph):
        if start not in done and (cycle := visit(start)):
            return cycle
    return None


def upward_imports(graph: dict[str, dict[str, int]]) -> list[str]:
    """Every import that crosses the layers of :data:`MAY_IMPORT`, as a sentence."""
    found = []
    for name, edges in sorted(graph.items()):
        allowed = MAY_IMPORT.get(top(name))
        for target, line in sorted(edges.items()):
            if (top(target) == top(name) or (name, target) in EXCEPTIONS
                    or (allowed is not None and top(target) in allowed)):
                continue
            found.append(f"{name} (line {line}) imports {target}: "
                         f"{top(name) or PACKAGE} may import only from "
                         f"{sorted(allowed or ())}")
    return found


def test_every_top_level_module_has_a_layer():
    new = sorted({top(name) for name in module_files()} - set(MAY_IMPORT))
    assert not new, f"add {new} to MAY_IMPORT in tests/test_imports.py (what may it import?)"


def test_the_package_has_no_import_cycle():
    graph = import_graph()
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(
        f"{a} (line {graph[a][b]})" for a, b in zip(cycle, cycle[1:])
    ) + f" -> {cycle[-1]}"


def test_no_import_points_up_the_layers():
    found = upward_imports(import_graph())
    assert not found, "imports against the layers:\n" + "\n".join(found)


def test_every_exception_is_still_needed():
    graph = import_graph()
    stale = [pair for pair in EXCEPTIONS if pair[1] not in graph.get(pair[0], {})]
    assert not stale, f"no longer imported, drop from EXCEPTIONS: {stale}"


@pytest.mark.parametrize(("source", "expected"), [
    ("from trn_ultracluster.orchestrators.base import Foundation\n",
     ["trn_ultracluster.config.x (line 1) imports trn_ultracluster.orchestrators.base"]),
    ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
     "    from trn_ultracluster.stacks import cluster\n",
     ["trn_ultracluster.config.x (line 3) imports trn_ultracluster.stacks.cluster"]),
    ("from trn_ultracluster.contracts.catalog import get_instance\n", []),
])
def test_an_upward_import_is_found_and_named(source, expected, tmp_path):
    modules = {"trn_ultracluster.config.x": tmp_path / "x.py",
               "trn_ultracluster.orchestrators.base": Path("base.py"),
               "trn_ultracluster.stacks.cluster": Path("cluster.py"),
               "trn_ultracluster.contracts.catalog": Path("catalog.py")}
    modules["trn_ultracluster.config.x"].write_text(source)
    graph = {"trn_ultracluster.config.x": dict(
        imported("trn_ultracluster.config.x", modules["trn_ultracluster.config.x"], modules))}
    found = upward_imports(graph)
    assert [f.partition(":")[0] for f in found] == expected


def test_a_cycle_is_found_with_its_lines():
    graph = {"a": {"b": 3}, "b": {"c": 5}, "c": {"a": 7}, "d": {"a": 1}}
    assert find_cycle(graph) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b": 1}, "b": {}}) is None
