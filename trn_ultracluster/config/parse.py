"""Parsing: pydantic checks shape and types, then the rules check the AWS rules that span
fields. Every problem becomes a :class:`~trn_ultracluster.config.errors.ConfigIssue`;
:func:`parse_config` reports them all at once."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ValidationError

from trn_ultracluster.config.errors import ConfigError, ConfigIssue
from trn_ultracluster.config.facts import (
    DOC_AZ_IDS,
    DOC_CAPACITY_BLOCKS,
    DOC_CONFIG,
    DOC_EFA,
    DOC_FSX_DEPLOY,
    DOC_INSTANCES,
    DOC_LUSTRE_OVER_EFA,
    DOC_PLACEMENT,
    DOC_VPC_CIDR,
)
from trn_ultracluster.config.model import ClusterConfig, LoadedConfig
from trn_ultracluster.config.model.teams import DOC_TEAMS
from trn_ultracluster.config.rules import RULES

__all__ = ["parse_config"]

_FIELD_DOCS = {
    "instance_type": DOC_INSTANCES,
    "az_ids": DOC_AZ_IDS,
    "vpc_cidr": DOC_VPC_CIDR,
    "fsx": DOC_FSX_DEPLOY,
    "fsx.efa": DOC_LUSTRE_OVER_EFA,
    "capacity": DOC_CAPACITY_BLOCKS,
    "placement_group": DOC_PLACEMENT,
    "efa_interface_layout": DOC_EFA,
    "orchestrator": DOC_CONFIG,
    "teams": DOC_TEAMS,
    "scheduling": DOC_TEAMS,
}


def _doc_for(field: str) -> str:
    head = field.split(".", 1)[0].split("[", 1)[0]
    return _FIELD_DOCS.get(field, _FIELD_DOCS.get(head, DOC_CONFIG))


def _loc_to_field(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


def _allowed_keys(model: type[BaseModel], loc: tuple[Any, ...]) -> list[str]:
    for part in loc[:-1]:
        if isinstance(part, int):
            continue
        annotation = model.model_fields[str(part)].annotation
        nested = [a for a in getattr(annotation, "__args__", (annotation,))
                  if isinstance(a, type) and issubclass(a, BaseModel)]
        if not nested:
            return []
        model = nested[0]
    return sorted(model.model_fields)


_TYPE_MESSAGES = {
    "int_parsing": "must be a whole number",
    "int_type": "must be a whole number",
    "int_from_float": "must be a whole number",
    "int_parsing_size": "must be a whole number",
    "float_type": "must be a number",
    "float_parsing": "must be a number",
    "bool_parsing": "must be true or false",
    "bool_type": "must be true or false",
    "string_type": "must be text",
    "list_type": "must be a list",
    "tuple_type": "must be a list",
    "dict_type": "must be a mapping of keys to values",
    "model_type": "must be a mapping of keys to values",
    "model_attributes_type": "must be a mapping of keys to values",
}


def _issues_from_pydantic(err: ValidationError) -> list[ConfigIssue]:
    issues = []
    for e in err.errors(include_url=False):
        field = _loc_to_field(e["loc"])
        value = e.get("input")
        if e["type"] == "missing":  # pydantic's input is the mapping the key is missing from
            message, value = "must be given", None
        elif e["type"] == "extra_forbidden":
            allowed = ", ".join(_allowed_keys(ClusterConfig, e["loc"]))
            message = f"must be one of the known keys here: {allowed}"
        elif e["type"] in _TYPE_MESSAGES:
            message = _TYPE_MESSAGES[e["type"]]
        elif e["msg"].startswith("Input should "):  # literal_error: "Input should be 'a' or 'b'"
            message = "must " + e["msg"].removeprefix("Input should ")
        else:
            message = f"must be valid ({e['msg']})"
        issues.append(ConfigIssue(field or "(top level)", value, message, _doc_for(field)))
    return issues


def _without(raw: dict[str, Any], locations: list[tuple[Any, ...]]) -> tuple[dict[str, Any], set[str]]:
    """``raw`` without the values at ``locations`` (pydantic error locations), so that they
    take their defaults; returns the copy and the dotted fields that were taken out. A
    location inside a list takes out the whole list."""
    out = copy.deepcopy(raw)
    removed: set[str] = set()
    for loc in locations:
        path = []
        for part in loc:
            if isinstance(part, int):
                break
            path.append(str(part))
        node: Any = out
        for part in path[:-1]:
            node = node.get(part) if isinstance(node, dict) else None
        if path and isinstance(node, dict) and path[-1] in node:
            del node[path[-1]]
            removed.add(".".join(path))
    return out, removed


def _about(issue: ConfigIssue, fields: set[str]) -> bool:
    """Whether ``issue`` is about (or mentions) one of ``fields``."""
    return any(issue.field == f or issue.field.startswith(f + ".") or f.startswith(issue.field + ".")
               or f in issue.allowed for f in fields)


def parse_config(raw: Mapping[str, Any]) -> LoadedConfig:
    """Validate a raw configuration mapping, reporting every problem at once.

    Pydantic checks shape and types first. When some fields are of the wrong type, the
    rules still run on the rest (the bad fields take their defaults for that), and their
    findings are reported too, except those about the bad fields.

    Args:
        raw: configuration keys as in a profile file (nested mappings).

    Returns:
        The frozen config and any warnings.

    Raises:
        ConfigError: one or more fields are invalid; every issue names its field.
    """
    shape_issues: list[ConfigIssue] = []
    replaced: set[str] = set()
    try:
        config = ClusterConfig.model_validate(dict(raw))
    except ValidationError as err:
        shape_issues = _issues_from_pydantic(err)
        rest, replaced = _without(dict(raw), [e["loc"] for e in err.errors()])
        try:
            config = ClusterConfig.model_validate(rest)
        except ValidationError:
            raise ConfigError(shape_issues) from None
    issues = [issue for rule in RULES for issue in rule(config)
              if not (replaced and _about(issue, replaced))]
    errors = shape_issues + [i for i in issues if i.severity == "error"]
    warnings = tuple(i for i in issues if i.severity == "warning")
    if errors:
        raise ConfigError(errors + list(warnings))
    return LoadedConfig(config, warnings)
