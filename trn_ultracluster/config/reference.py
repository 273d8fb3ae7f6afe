"""The configuration reference and JSON Schema, generated from the model: every key with its
type, default, allowed values and description, read from the models' own fields and their
docstrings' ``Attributes:`` sections (one source: the model).

``make docs`` writes :data:`REFERENCE_PATH` (Markdown) and :data:`SCHEMA_PATH` (JSON Schema,
draft 2020-12, as pydantic makes it, with each property's description added); every profile
names the schema in a ``yaml-language-server`` modeline, so editors complete and check keys.
``tests/config/test_reference.py`` fails when either file is stale.

Usage: ``python -m trn_ultracluster.config.reference [--write | --check]``.
"""

from __future__ import annotations

import argparse
import inspect
import json
import re
import sys
import types
import typing
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from trn_ultracluster.config.model import ClusterConfig

__all__ = ["REFERENCE_PATH", "SCHEMA_ID", "SCHEMA_PATH", "field_docs", "json_schema",
           "markdown", "main"]

REPO_ROOT = Path(__file__).resolve().parents[2]
REFERENCE_PATH = REPO_ROOT / "docs" / "configuration.md"
SCHEMA_PATH = REPO_ROOT / "docs" / "trn-ultracluster.schema.json"
SCHEMA_ID = "trn-ultracluster.schema.json"
MODELINE = "# yaml-language-server: $schema=../docs/trn-ultracluster.schema.json"
"""The first line of every profile (``profiles/*.yaml``): the YAML language server (VS Code's
YAML extension, and the editors that use it) reads the schema it names, relative to the file
(redhat-developer/yaml-language-server README, "Using inlined schema")."""

_ENTRY = re.compile(r"^(?P<names>[a-z_][a-z0-9_]*(?:,\s*[a-z_][a-z0-9_]*)*):\s*(?P<text>.*)$")


def field_docs(model: type[BaseModel]) -> dict[str, str]:
    """Field name -> description, from the ``Attributes:`` section of ``model``'s docstring
    (Google style: ``name: text`` at one indent, continuation lines indented more; ``a, b:
    text`` describes both). Inline reST markup (double backquotes, ``:class:`` roles) is
    turned into Markdown code."""
    doc = inspect.getdoc(model) or ""
    lines = doc.splitlines()
    try:
        start = next(i for i, line in enumerate(lines) if line.strip() == "Attributes:")
    except StopIteration:
        return {}
    out: dict[str, str] = {}
    current: list[str] = []
    names: list[str] = []
    indent = None
    for line in lines[start + 1:]:
        if not line.strip():
            continue
        width = len(line) - len(line.lstrip())
        if indent is None:
            indent = width
        if width < indent:
            break
        match = _ENTRY.match(line.strip()) if width == indent else None
        if match:
            for name in names:
                out[name] = _markdown_text(" ".join(current))
            names = [n.strip() for n in match["names"].split(",")]
            current = [match["text"]]
        else:
            current.append(line.strip())
    for name in names:
        out[name] = _markdown_text(" ".join(current))
    return out


def _markdown_text(text: str) -> str:
    """reST inline markup of the docstrings as Markdown."""
    text = re.sub(r":(?:class|func|meth|attr|data|mod):`~?([^`]+)`",
                  lambda m: f"`{m[1].split('.')[-1]}`", text)
    return text.replace("``", "`").strip()


def _models(model: type[BaseModel], seen: dict[str, type[BaseModel]] | None = None,
            ) -> dict[str, type[BaseModel]]:
    """Every model reachable from ``model``'s fields, by class name, ``model`` first."""
    seen = {} if seen is None else seen
    seen.setdefault(model.__name__, model)
    for field in model.model_fields.values():
        for inner in _inner_models(field.annotation):
            if inner.__name__ not in seen:
                _models(inner, seen)
    return seen


def _inner_models(annotation: Any) -> list[type[BaseModel]]:
    if inspect.isclass(annotation) and issubclass(annotation, BaseModel):
        return [annotation]
    return [m for arg in get_args(annotation) for m in _inner_models(arg)]


def json_schema() -> dict[str, Any]:
    """The JSON Schema of a profile (``ClusterConfig``, pydantic's validation schema) with
    each property's description from :func:`field_docs`."""
    schema = ClusterConfig.model_json_schema(mode="validation")
    models = _models(ClusterConfig)
    for name, model in models.items():
        target = schema if model is ClusterConfig else schema.get("$defs", {}).get(name)
        if target is None:
            continue
        docs = field_docs(model)
        for key, prop in target.get("properties", {}).items():
            if key in docs:
                prop["description"] = docs[key]
        summary = (inspect.getdoc(model) or "").split("\n\n")[0]
        target["description"] = _markdown_text(" ".join(summary.split()))
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = SCHEMA_ID
    schema["title"] = "TrnUltraCluster configuration (a profile, or cdk.json's trn-ultracluster)"
    return schema


def _type_text(annotation: Any) -> str:
    """A field's type in words: ``integer``, ``list of string``, ``one of 'a', 'b'``..."""
    origin = get_origin(annotation)
    args = get_args(annotation)
    if origin is Literal:
        return "one of " + ", ".join(f"`{a}`" for a in args)
    if origin in (typing.Union, types.UnionType):
        parts = [_type_text(a) for a in args if a is not type(None)]
        text = " or ".join(parts)
        return text + (" or null" if type(None) in args else "")
    if origin in (tuple, list):
        return f"list of {_type_text(args[0])}" if args else "list"
    if origin is dict:
        return f"mapping of {_type_text(args[0])} to {_type_text(args[1])}"
    if inspect.isclass(annotation) and issubclass(annotation, BaseModel):
        return f"[{annotation.__name__}](#{annotation.__name__.lower()})"
    return {int: "integer", str: "string", bool: "boolean", float: "number"}.get(
        annotation, getattr(annotation, "__name__", str(annotation)))


def _default_text(field: Any) -> str:
    if field.default_factory is not None:
        value = field.default_factory()
    elif field.default is PydanticUndefined:
        return "required"
    else:
        value = field.default
    if isinstance(value, BaseModel):
        return "see its section"
    if isinstance(value, tuple) and value and isinstance(value[0], BaseModel):
        return "`" + json.dumps([v.model_dump(mode="json") for v in value]) + "`"
    return "`" + json.dumps(value if not isinstance(value, tuple) else list(value)) + "`"


def _table(model: type[BaseModel], prefix: str) -> list[str]:
    docs = field_docs(model)
    rows = ["| key | type | default | description |", "|---|---|---|---|"]
    for name, field in model.model_fields.items():
        text = docs.get(name, "").replace("|", "\\|")
        rows.append(f"| `{prefix}{name}` | {_type_text(field.annotation)} | "
                    f"{_default_text(field)} | {text} |")
    return rows


_PATHS = {"ClusterConfig": "", "PoolConfig": "pools[].", "TeamConfig": "teams[].",
          "TeamQuotaConfig": "teams[].quota.<pool>.",
          "PriorityClassConfig": "scheduling.priority_classes[].",
          "HyperPodWorkerGroupConfig": "hyperpod.worker_groups[]."}
"""Where each model sits in a profile, where its field name is not the path (list items,
mappings); the others are found from the field that holds them."""


def _paths() -> dict[str, str]:
    paths = dict(_PATHS)

    def walk(model: type[BaseModel], prefix: str) -> None:
        for name, field in model.model_fields.items():
            for inner in _inner_models(field.annotation):
                if inner.__name__ not in paths:
                    paths[inner.__name__] = f"{prefix}{name}."
                    walk(inner, paths[inner.__name__])
                elif inner.__name__ in _PATHS:
                    walk(inner, paths[inner.__name__])

    walk(ClusterConfig, "")
    return paths


def markdown() -> str:
    """The configuration reference: one section per model, top level first."""
    paths = _paths()
    lines = ["<!-- Generated by `make docs` (trn_ultracluster/config/reference.py) from the "
             "configuration model: do not edit; tests/config/test_reference.py fails when it is "
             "stale. -->", "", "# Configuration reference", "",
             "Every key of a profile (`profiles/*.yaml`, `make synth PROFILE=...`), of "
             "`cdk.json`'s `trn-ultracluster` object and of `-c key=value` (nested keys with "
             "dots), with its type, default and meaning. Layers, lowest first: these defaults, "
             "`cdk.json`, the profile, `-c`; `trn-ultracluster config show` prints the "
             "effective configuration with the layer of each key, and `trn-ultracluster config "
             "check` runs every rule synth runs. The JSON Schema "
             "[trn-ultracluster.schema.json](trn-ultracluster.schema.json) holds the same and "
             "is named at the top of every profile, for editor completion.", ""]
    for name, model in _models(ClusterConfig).items():
        prefix = paths.get(name, "")
        title = "Top-level keys" if model is ClusterConfig else f"`{prefix.rstrip('.')}`"
        summary = (inspect.getdoc(model) or "").split("\n\n")[0]
        lines += [f'<a id="{name.lower()}"></a>', f"## {title}", "",
                  _markdown_text(" ".join(summary.split())), "", *_table(model, prefix), ""]
    return "\n".join(lines)


def _rendered() -> dict[Path, str]:
    return {REFERENCE_PATH: markdown(),
            SCHEMA_PATH: json.dumps(json_schema(), indent=2, sort_keys=True) + "\n"}


def main(argv: list[str] | None = None) -> int:
    """``--write``: write both files; ``--check``: exit 1 naming the stale ones."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true")
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args(argv)
    stale = [p for p, text in _rendered().items()
             if not p.exists() or p.read_text(encoding="utf-8") != text]
    if args.write:
        for path, text in _rendered().items():
            path.write_text(text, encoding="utf-8")
            print(f"wrote {path.relative_to(REPO_ROOT)}")
        return 0
    if stale:
        print("stale: " + ", ".join(str(p.relative_to(REPO_ROOT)) for p in stale)
              + " (run make docs)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
