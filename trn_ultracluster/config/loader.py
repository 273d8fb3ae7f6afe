"""Loading: the configuration layers, merged before parsing.

Layers, lowest precedence first:

1. the defaults of :class:`~trn_ultracluster.config.model.ClusterConfig`;
2. the ``trn-ultracluster`` object in ``cdk.json`` context (only what differs from 1);
3. a profile file given with ``-c config=path.yaml``;
4. single keys given with ``-c key=value``; nested keys use dots
   (``-c fsx.storage_capacity_gib=2400``), lists use commas (``-c az_ids=usw2-az4,usw2-az1``).
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel

from trn_ultracluster.config.errors import ConfigError, ConfigIssue, shown
from trn_ultracluster.config.facts import DOC_CONFIG_GUIDE
from trn_ultracluster.config.model import ClusterConfig, LoadedConfig
from trn_ultracluster.config.parse import parse_config

__all__ = ["CONTEXT_KEY", "PATH_FIELDS", "PROFILE_CONTEXT_KEY", "ConfigLayers", "config_layers",
           "load_config"]

CONTEXT_KEY = "trn-ultracluster"
"""cdk.json context key of the configuration object (only what differs from the defaults)."""

PROFILE_CONTEXT_KEY = "config"
"""``-c config=path.yaml`` names a profile file."""


def _parse_scalar(value: Any) -> Any:
    """Turn a ``-c key=value`` string into YAML's typed value (``"16"`` -> 16)."""
    if not isinstance(value, str):
        return value
    try:
        parsed = yaml.load(value, Loader=_StrictLoader)  # noqa: S506 - a SafeLoader subclass
    except (yaml.YAMLError, ValueError):  # ValueError: an int beyond Python's 4300 digits
        return value
    return value if isinstance(parsed, dict) else parsed


_LIST_FIELDS = {"az_ids", "eks.public_access_cidrs", "vpc_secondary_cidrs"}
_MAPPING_FIELDS = {"tags"}
"""Fields whose keys are free text: ``-c tags.team/owner=ml`` sets the key ``team/owner``
(everything after the first dot), even with dots, colons or slashes in it."""


def _kind(value: Any) -> str:
    return {list: "a list", tuple: "a list", dict: "a mapping"}.get(
        type(value), f"the {type(value).__name__} {shown(value)}")


def _default_at(path: list[str]) -> Any:
    """The model's default at a field path (a nested model is a mapping), or ``None`` where
    the model has no such field or its default is ``None``."""
    value: Any = ClusterConfig()
    for part in path:
        if not isinstance(value, BaseModel) or part not in type(value).model_fields:
            return None
        value = getattr(value, part)
    return {} if isinstance(value, BaseModel) else value


def _set_dotted(target: dict[str, Any], dotted: str, value: Any) -> ConfigIssue | None:
    """Set a ``-c`` key in ``target``; nested keys use dots, lists use commas.

    Returns:
        ``None``, or the issue when the key goes below a value that is not a mapping, given
        or default (``-c nodes.max.x=1``, ``-c az_ids.0=...``); ``target`` is then unchanged.
    """
    head, _, rest = dotted.partition(".")
    parts = [head, rest] if head in _MAPPING_FIELDS and rest else dotted.split(".")
    node = target
    for depth, part in enumerate(parts[:-1]):
        child = node.get(part)
        if child is None:
            default = _default_at(parts[:depth + 1])
            if default is None or isinstance(default, dict):
                child = node[part] = {}
            else:
                child = default  # reported below, not set
        if not isinstance(child, dict):
            where = ".".join(parts[:depth + 1])
            hint = (f"; give the whole list: -c {where}=a,b" if isinstance(child, (list, tuple))
                    else "")
            return ConfigIssue(dotted, value, f"must name a key of a mapping: {where} is "
                               f"{_kind(child)}, not a mapping of keys{hint}", DOC_CONFIG_GUIDE)
        node = child
    if dotted in _LIST_FIELDS and isinstance(value, str):
        value = [v.strip() for v in value.split(",") if v.strip()]
    node[parts[-1]] = _parse_scalar(value)
    return None


PATH_FIELDS = (("training_image", "user_dockerfile"), ("training_image", "user_context"))
"""Fields that name a file or directory: a relative path is read from ``base_dir`` (the
project directory, where ``cdk.json`` is and the CDK CLI runs ``app.py``), as profile paths
are, and stored absolute, so that rules and constructs never depend on the working
directory."""


def _resolve_paths(raw: dict[str, Any], base_dir: Path) -> None:
    """Make the text values of :data:`PATH_FIELDS` in ``raw`` absolute (``~`` expanded);
    values of other types are left for the model to refuse."""
    for section, key in PATH_FIELDS:
        values = raw.get(section)
        if isinstance(values, dict) and isinstance(values.get(key), str) and values[key].strip():
            try:
                path = Path(values[key]).expanduser()
            except RuntimeError:  # "~user" of no such user, or no home: the rule says so
                continue
            values[key] = str((base_dir / path).absolute())


def _deep_merge(base: dict[str, Any], top: Mapping[str, Any]) -> dict[str, Any]:
    """``top`` over ``base``, mappings merged key by key; neither input is changed."""
    out = copy.deepcopy(base)
    for key, value in top.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), dict):
            out[key] = _deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


class _StrictLoader(yaml.SafeLoader):
    """PyYAML's safe loader with two rules of YAML 1.2: a key given twice in one mapping is
    refused (keys must be unique; PyYAML would keep the last one silently), and only
    ``true``/``false`` (any case YAML 1.2's core schema allows) are booleans: PyYAML follows
    YAML 1.1, where ``yes``, ``no``, ``on`` and ``off`` are booleans too, so ``fsx.efa: on``
    would pass as ``true`` instead of being refused (YAML 1.2.2 spec, 10.3.2 "Tag
    Resolution", https://yaml.org/spec/1.2.2/#1032-tag-resolution)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            try:
                hash(key)
            except TypeError:  # a mapping or list as a key (`{{}: 1}`): no config key
                raise yaml.constructor.ConstructorError(
                    "while reading a mapping", node.start_mark,
                    f"found a {type(key).__name__} as a key; keys are names",
                    key_node.start_mark) from None
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    "while reading a mapping", node.start_mark,
                    f"found the key {key!r} twice", key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


_StrictLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:bool"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()}
_StrictLoader.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"),
    list("tTfF"))


def _profile_issue(path_text: str, allowed: str) -> ConfigError:
    return ConfigError([ConfigIssue(PROFILE_CONTEXT_KEY, path_text, allowed, DOC_CONFIG_GUIDE)])


def _read_profile(path_text: str, base_dir: Path) -> dict[str, Any]:
    if not path_text.strip():
        raise _profile_issue(path_text, "must name a YAML profile file, e.g. profiles/dev.yaml "
                                        "(it is empty)")
    path = Path(path_text)
    if not path.is_absolute():
        path = base_dir / path
    if not path.is_file():
        raise _profile_issue(path_text, "must name an existing YAML profile file, e.g. "
                                        "profiles/dev.yaml")
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as err:
        raise _profile_issue(path_text, f"must be UTF-8 text (byte {err.start} is not)") from None
    except OSError as err:
        raise _profile_issue(path_text, f"must be a readable file ({err.strerror})") from None
    try:
        data = yaml.load(text, Loader=_StrictLoader)  # noqa: S506 - a SafeLoader subclass
    except (yaml.YAMLError, ValueError) as err:  # ValueError: an int beyond 4300 digits
        raise _profile_issue(path_text, f"must be valid YAML ({err})") from None
    if data is None:
        raise _profile_issue(path_text, "must hold a YAML mapping of config keys like "
                                        "profiles/dev.yaml (it is empty)")
    if not isinstance(data, dict):
        raise _profile_issue(path_text, f"must hold a YAML mapping of config keys, got "
                                        f"{type(data).__name__}")
    return data


def _is_our_key(key: str) -> bool:
    """Context keys that belong to the configuration: any key under a configuration field
    (``tags.team/owner``), and other plain keys (reported as unknown when they are not
    fields); keys with ``:``, ``@`` or ``/`` outside a field are CDK's (feature flags,
    ``aws:cdk:...``)."""
    if key in (CONTEXT_KEY, PROFILE_CONTEXT_KEY):
        return False
    if key.split(".", 1)[0] in ClusterConfig.model_fields:
        return True
    return ":" not in key and "@" not in key and "/" not in key


@dataclass(frozen=True)
class ConfigLayers:
    """The layers of a configuration before they are merged (module docstring), each holding
    only what it sets.

    Attributes:
        cdk_json: the ``trn-ultracluster`` object of ``cdk.json`` context.
        profile: the profile file's mapping (empty without one); its path, as given.
        profile_path: ``-c config=...`` as given, or ``None``.
        overrides: the ``-c key=value`` keys, nested as a profile would hold them.
        key_issues: ``-c`` keys that could not be set (below a value that is no mapping).
    """

    cdk_json: dict[str, Any]
    profile: dict[str, Any]
    profile_path: str | None
    overrides: dict[str, Any]
    key_issues: tuple[ConfigIssue, ...] = ()

    def merged(self) -> dict[str, Any]:
        """The layers merged, lowest first (defaults come from the model when parsed)."""
        return _deep_merge(_deep_merge(copy.deepcopy(self.cdk_json), self.profile),
                           self.overrides)


def config_layers(context: Mapping[str, Any], base_dir: Path | str = ".") -> ConfigLayers:
    """Read the layers of ``context`` (as :func:`load_config` takes it) without merging them.

    Raises:
        ConfigError: ``cdk.json``'s object is no mapping, or the profile cannot be read.
    """
    cdk_json = context.get(CONTEXT_KEY) or {}
    if not isinstance(cdk_json, Mapping):
        raise ConfigError([ConfigIssue(CONTEXT_KEY, cdk_json,
                                       "must be a mapping of config keys in cdk.json context",
                                       DOC_CONFIG_GUIDE)])
    profile_path = (str(context[PROFILE_CONTEXT_KEY] or "") if PROFILE_CONTEXT_KEY in context
                    else None)
    profile = _read_profile(profile_path, Path(base_dir)) if profile_path is not None else {}
    below = _deep_merge(copy.deepcopy(dict(cdk_json)), profile)  # what -c keys go below
    overrides: dict[str, Any] = {}
    key_issues = []
    for key in sorted(k for k in context if _is_our_key(k)):
        issue = _set_dotted(below, key, context[key])
        if issue is None:
            _set_dotted(overrides, key, context[key])
        else:
            key_issues.append(issue)
    return ConfigLayers(copy.deepcopy(dict(cdk_json)), profile, profile_path, overrides,
                        tuple(key_issues))


def load_config(context: Mapping[str, Any], base_dir: Path | str = ".") -> LoadedConfig:
    """Build the configuration from CDK context (cdk.json, ``-c``) and a profile file.

    Args:
        context: all context values, e.g. ``{k: app.node.try_get_context(k) ...}`` or the
            dict a test passes. Keys with ``:``, ``@`` or ``/`` are CDK's and are ignored.
        base_dir: directory that relative paths are read from: the profile's and those of
            :data:`PATH_FIELDS`.

    Returns:
        The validated, frozen configuration and its warnings.

    Raises:
        ConfigError: the profile cannot be read, or a field is invalid.
    """
    layers = config_layers(context, base_dir)
    raw = layers.merged()
    key_issues = list(layers.key_issues)
    _resolve_paths(raw, Path(base_dir))
    try:
        loaded = parse_config(raw)
    except ConfigError as err:
        raise ConfigError(key_issues + err.issues) from None
    if key_issues:
        raise ConfigError(key_issues + list(loaded.warnings))
    return loaded
