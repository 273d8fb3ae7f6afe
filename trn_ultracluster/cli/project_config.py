"""The project's configuration as the job CLI sees it from the working directory: the
context of ``cdk.json`` (as the CDK app reads it) and the stack name it configures."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from trn_ultracluster.cli.errors import CliError
from trn_ultracluster.cli.files import read_text
from trn_ultracluster.contracts.outputs import STACK_NAME

__all__ = ["add_context_option", "cdk_context", "default_stack_name", "key_value",
           "project_context"]


def cdk_context(repo: Path) -> dict[str, Any]:
    """The ``context`` of ``cdk.json`` in ``repo`` (empty without the file), as the CDK app
    reads it.

    Raises:
        CliError: (USAGE) the file cannot be read or is not a JSON object.
    """
    path = repo / "cdk.json"
    if not path.exists():
        return {}
    fix = "fix cdk.json (the repository's copy is valid JSON), or run from the repository"
    try:
        data = json.loads(read_text(path, "file", fix).strip() or "null")
    except json.JSONDecodeError as err:
        raise CliError(f"{path} is not JSON ({err})", fix) from None
    context = data.get("context", {}) if isinstance(data, dict) else None
    if not isinstance(context, dict):
        raise CliError(f"{path} has no \"context\" object", fix)
    return dict(context)


def add_context_option(p: Any) -> None:
    """``-c KEY=VALUE`` (repeatable), as ``cdk -c``: what :func:`project_context` reads."""
    p.add_argument("-c", "--context", action="append", default=[], metavar="KEY=VALUE",
                   help="config override, as `cdk -c` (e.g. -c nodes.max=4); repeatable")


def key_value(items: list[str], option: str) -> dict[str, str]:
    """``KEY=VALUE`` items (``-c``) as a dict; a later item wins.

    Raises:
        CliError: (USAGE) an item without ``=`` or without a key.
    """
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise CliError(f"{option} {item!r} must be KEY=VALUE", f"e.g. {option} nodes.max=4")
        out[key] = value
    return out


def project_context(repo: Path, profile: str | None, overrides: list[str]) -> dict[str, Any]:
    """The CDK context the app would read in ``repo`` with ``--profile`` (as ``-c
    config=...``) and ``-c`` items: ``cdk.json``'s context, then those.

    Raises:
        CliError: (USAGE) as :func:`cdk_context` and :func:`key_value`.
    """
    from trn_ultracluster.config import PROFILE_CONTEXT_KEY

    context = cdk_context(repo)
    if profile:
        context[PROFILE_CONTEXT_KEY] = profile
    context.update(key_value(overrides, "-c"))
    return context


def default_stack_name(repo: Path, outputs_file: Path | None = None,
                       profile: str | None = None) -> str:
    """The stack the job CLI talks to when ``--stack-name`` is not given: the one stack of
    ``outputs_file`` when it holds exactly one; else ``stack_name`` of the configuration in
    ``repo``'s ``cdk.json`` with ``profile`` (what ``make deploy PROFILE=...`` deploys);
    else, without a ``cdk.json`` or profile, :data:`~trn_ultracluster.contracts.outputs.STACK_NAME`.

    Raises:
        CliError: (USAGE) the configuration cannot be loaded (a broken ``cdk.json``, a bad
            profile): which stack is meant is then unknown, and guessing could reach another.
    """
    if outputs_file is not None:
        try:
            data = json.loads(Path(outputs_file).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            data = None
        if isinstance(data, dict) and len(data) == 1:
            return str(next(iter(data)))
    from trn_ultracluster.config import PROFILE_CONTEXT_KEY, ConfigError, load_config

    context = cdk_context(repo)
    if profile:
        context[PROFILE_CONTEXT_KEY] = profile
    if not context:
        return STACK_NAME
    try:
        return load_config(context, base_dir=repo).config.stack_name
    except ConfigError as err:
        raise CliError(f"which stack? the configuration does not load: {err}",
                       "fix the configuration (docs/configuration.md), or pass --stack-name"
                       ) from None
