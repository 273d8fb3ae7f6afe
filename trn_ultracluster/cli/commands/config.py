"""``config show`` and ``config check``: the effective configuration of ``--profile`` and
``-c`` with the layer that set each key, and every rule synth runs, without synthesizing and
without AWS credentials (as ``pcluster``'s validators and ``kubectl --dry-run`` work before
anything is created). docs/configuration.md lists the keys."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import yaml

from trn_ultracluster.cli.errors import CliError, ExitCode
from trn_ultracluster.cli.project_config import add_context_option, project_context

__all__ = ["LAYER_NAMES", "add_config_command", "annotated_yaml", "check", "layer_of", "show"]

LAYER_NAMES = ("-c", "profile", "cdk.json", "default")
"""The layers, highest precedence first (``trn_ultracluster.config.loader``)."""
COMMENT_COLUMN = 48


def add_config_command(sub: Any, command: Any) -> None:
    """Add ``config show`` and ``config check`` (``command`` makes a subcommand parser)."""
    p = command(sub, "config", help="show or check the configuration, offline",
                description="The configuration as synth reads it (cdk.json, --profile, -c), "
                            "without synthesizing and without AWS credentials. "
                            "docs/configuration.md lists every key.")
    inner = p.add_subparsers(dest="config_command", required=True, metavar="ACTION")
    options = argparse.ArgumentParser(add_help=False)
    options.add_argument("--profile", help="profile YAML, as `-c config=path.yaml` for the CDK")
    add_context_option(options)
    inner.add_parser("show", parents=[options], help="print the effective configuration",
                     description="Print the effective configuration as YAML, each key with "
                                 "the layer that set it: default, cdk.json, profile or -c.")
    inner.add_parser("check", parents=[options], help="run every rule synth runs",
                     description="Validate the configuration with every rule synth runs and "
                                 "print its errors and warnings; exit 2 on an error.")


def _context(args: argparse.Namespace, repo: Path) -> dict[str, Any]:
    return project_context(repo, args.profile, args.context)


def layer_of(path: tuple[str, ...], layers: Any) -> str:
    """The highest layer (:data:`LAYER_NAMES`) that sets ``path`` or a key above it."""
    for name, data in (("-c", layers.overrides), ("profile", layers.profile),
                       ("cdk.json", layers.cdk_json)):
        node: Any = data
        for part in path:
            if not isinstance(node, dict) or part not in node:
                break
            node = node[part]
            if not isinstance(node, dict):  # a scalar or a list set here covers what is below
                return name
        else:
            return name
    return "default"


def _scalar(value: Any) -> str:
    text = yaml.safe_dump(value, default_flow_style=True, width=10_000).strip()
    return text.removesuffix("\n...").removesuffix("...").strip()


def annotated_yaml(effective: dict[str, Any], layers: Any, path: tuple[str, ...] = (),
                   indent: int = 0) -> list[str]:
    """``effective`` as YAML lines, each leaf (and each list) with ``# <layer>``
    (:func:`layer_of`); nested mappings recurse."""
    lines = []
    pad = "  " * indent
    for key, value in effective.items():
        here = (*path, key)
        if isinstance(value, dict) and value:
            lines.append(f"{pad}{key}:")
            lines += annotated_yaml(value, layers, here, indent + 1)
            continue
        layer = layer_of(here, layers)
        if isinstance(value, list) and value and any(isinstance(v, dict) for v in value):
            lines.append(f"{pad}{key}:".ljust(COMMENT_COLUMN) + f"# {layer}")
            body = yaml.safe_dump(value, sort_keys=False, default_flow_style=False)
            lines += [f"{pad}  {line}" for line in body.splitlines()]
            continue
        lines.append(f"{pad}{key}: {_scalar(value)}".ljust(COMMENT_COLUMN) + f"# {layer}")
    return lines


def show(args: argparse.Namespace) -> int:
    """Print the effective configuration with each key's layer; an invalid configuration is
    an error (``config check`` lists every problem)."""
    from trn_ultracluster.config import ConfigError, load_config
    from trn_ultracluster.config.loader import config_layers

    repo = Path.cwd()
    context = _context(args, repo)
    try:
        layers = config_layers(context, base_dir=repo)
        loaded = load_config(context, base_dir=repo)
    except ConfigError as err:
        raise CliError(str(err), "fix the configuration (docs/configuration.md); "
                       "`trn-ultracluster config check` lists every problem") from None
    effective = loaded.config.model_dump(mode="json")
    source = f"profile {layers.profile_path}" if layers.profile_path else "no profile"
    print(f"# effective configuration: defaults < cdk.json < {source} < -c")
    for line in annotated_yaml(effective, layers):
        print(line.rstrip())
    return ExitCode.OK


def check(args: argparse.Namespace) -> int:
    """Run every configuration rule synth runs; print errors and warnings as synth does;
    exit 2 (USAGE) on an error."""
    from trn_ultracluster.config import ConfigError, load_config

    repo = Path.cwd()
    try:
        loaded = load_config(_context(args, repo), base_dir=repo)
    except ConfigError as err:
        for issue in err.issues:
            print(str(issue), file=sys.stderr)
        errors = sum(1 for i in err.issues if i.severity == "error")
        print(f"configuration invalid: {errors} error(s)", file=sys.stderr)
        return ExitCode.USAGE
    for issue in loaded.warnings:
        print(str(issue), file=sys.stderr)
    c = loaded.config
    print(f"configuration OK: stack {c.stack_name}, {c.orchestrator}, "
          + ", ".join(f"{p.name} {p.instance_type} x {p.nodes.max}" for p in c.node_pools)
          + f" in {c.region}; {len(loaded.warnings)} warning(s)")
    return ExitCode.OK


def config(args: argparse.Namespace) -> int:
    """Dispatch ``config show`` / ``config check``."""
    return show(args) if args.config_command == "show" else check(args)
