"""Build the CDK app: read context, validate the config, create the stack, add cdk-nag.

``app.py`` at the repository root calls :func:`main`; tests call :func:`build_app`.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import aws_cdk as cdk
from cdk_nag import AwsSolutionsChecks

from trn_ultracluster.config import ConfigError, LoadedConfig, load_config
from trn_ultracluster.stacks.cluster import TrnUltraClusterStack

__all__ = ["build_app", "main"]


def build_app(
    context: Mapping[str, Any] | None = None,
    outdir: str | None = None,
    base_dir: Path | str | None = None,
) -> tuple[cdk.App, TrnUltraClusterStack, LoadedConfig]:
    """Create the app and its one stack (named ``stack_name``, default ``TrnUltraCluster``)
    with cdk-nag AwsSolutions checks.

    Args:
        context: extra context (as ``-c`` would give); merged over cdk.json's when run by
            the CDK CLI, used alone in tests.
        outdir: cloud assembly directory (default: the CLI's, or a temporary one).
        base_dir: directory for relative profile paths (default: the working directory).

    Returns:
        The app, the stack and the loaded configuration (with its warnings).

    Raises:
        ConfigError: the configuration is invalid; nothing has been created.
    """
    # aws-cdk-lib's built-in CloudFormation validation (on by default since 2.27x) starts a
    # WebAssembly rule engine on every synth: about 2 s of our ~7 s `cdk synth` (measured
    # 2026-11-22 with a CPU profile of the jsii runtime). The templates are validated by the
    # pinned cfn-lint, cdk-nag and checkov for every configuration in `make test` instead.
    app = cdk.App(context=dict(context or {}), outdir=outdir,
                  builtin_cloud_formation_validation=False)
    loaded = load_config(app.node.get_all_context(), base_dir=base_dir or Path.cwd())
    stack = TrnUltraClusterStack(app, loaded.config.stack_name, config=loaded.config)
    for warning in loaded.warnings:
        # The CDK CLI prints these (and `cdk synth --strict` fails on them).
        cdk.Annotations.of(stack).add_warning_v2(f"trn-ultracluster:{warning.field}",
                                                 warning.message)
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(verbose=True))
    return app, stack, loaded


def main() -> int:
    """Entry point of ``app.py``: synthesize, or print config errors and exit 2."""
    try:
        app, _, _ = build_app()
    except ConfigError as err:
        print(err, file=sys.stderr)
        return 2
    app.synth()
    return 0
