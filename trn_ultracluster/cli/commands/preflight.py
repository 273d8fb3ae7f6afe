"""``preflight``: load the configuration as the CDK app does and check the account before a
deploy (:mod:`trn_ultracluster.cli.preflight` has the checks)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from trn_ultracluster.cli.errors import CliError, ExitCode
from trn_ultracluster.cli.project_config import project_context
from trn_ultracluster.config.fsx_efa import plan_fsx_efa

__all__ = ["configuration", "preflight"]


def configuration(args: argparse.Namespace, repo: Path) -> tuple[dict[str, Any], Any]:
    """The CDK context and the validated configuration of ``args``, as the CDK app reads
    them in ``repo`` (cdk.json's context, ``--profile``, ``-c``), for the commands that work
    before a deploy (``preflight``, ``plan``).

    Returns:
        ``(context, config)``: the context dict and its ``ClusterConfig``.

    Raises:
        CliError: (USAGE) a ``-c`` that is not KEY=VALUE, an invalid configuration, or a
            ``--region`` that is not the configuration's Region.
    """
    from trn_ultracluster.config import ConfigError, load_config

    context = project_context(repo, args.profile, args.context)
    try:
        config = load_config(context, base_dir=repo).config
    except ConfigError as err:
        raise CliError(str(err), "fix the configuration (docs/configuration.md)") from None
    if args.region and args.region != config.region:
        raise CliError(f"--region {args.region} is not the configuration's Region {config.region} "
                       f"(derived from az_ids {', '.join(config.az_ids)})",
                       "leave --region out, or set az_ids to AZ IDs of "
                       f"{args.region} (-c az_ids=... or a profile)")
    return context, config


def _print_estimate(args: argparse.Namespace, config: Any, session: Any) -> None:
    """Print the estimate of ``--cdk-out`` when it was synthesized from ``config`` (else say
    why not), with the quota increases ``config`` needs, and warn on stderr when running costs more than ``--max-hourly-usd``."""
    from trn_ultracluster.cli.commands.estimate import estimate_text, load_template
    from trn_ultracluster.config.quota_needs import quota_needs
    from trn_ultracluster.estimate.lustre import efa_enabled
    from trn_ultracluster.estimate.pools import template_pools

    try:
        template = load_template(args.cdk_out)
    except CliError as err:
        print(f"estimate: none ({err.message}; {err.fix})")
        return
    found = {k: str(v.get("Value")) for k, v in template["Outputs"].items()}
    expected = {"Region": config.region, "InstanceType": config.instance_type,
                "NodeCountMax": str(config.nodes.max), "Orchestrator": config.orchestrator}
    pools = template_pools(template)
    if pools:  # a template synthesized before pools has none to compare
        found["Pools"] = ", ".join(f"{p.name}: {p.instance_type} x {p.nodes_max}" for p in pools)
        expected["Pools"] = ", ".join(f"{p.name}: {p.instance_type} x {p.nodes.max}"
                                      for p in config.node_pools)
    # the file system's EFA, which the configuration decides (fsx.efa and what auto reads)
    found["EfaEnabled"] = str(efa_enabled(template)).lower()
    expected["EfaEnabled"] = str(plan_fsx_efa(config).enabled).lower()
    stale = [f"{k} {found.get(k)} (configuration: {v})" for k, v in expected.items()
             if found.get(k) != v]
    if stale:
        print(f"estimate: none ({args.cdk_out} was synthesized from another configuration: "
              f"{'; '.join(stale)}; run `make synth` with the same profile)")
        return
    text, running = estimate_text(template, offline=args.offline, session=session,
                                  needs=quota_needs(config))
    print(text)
    if args.max_hourly_usd is not None and running > args.max_hourly_usd:
        print(f"warning: running costs ${running:,.2f}/h, more than --max-hourly-usd "
              f"{args.max_hourly_usd:g}", file=sys.stderr)


def preflight(args: argparse.Namespace) -> int:
    """Load the config like the CDK app does, then run the checks in its Region.

    ``--outputs-file`` is refused (nothing is deployed yet); ``--region`` must be the
    configuration's Region; ``--stack-name`` names the stack whose state is reported.
    """
    import subprocess

    from trn_ultracluster.cli import aws
    from trn_ultracluster.cli.preflight import format_table, run_preflight
    if args.outputs_file is not None:
        raise CliError("preflight checks the account before a deploy and reads no outputs: "
                       "--outputs-file has no meaning here",
                       "leave --outputs-file out (`outputs --outputs-file ...` reads a "
                       "deployed stack's outputs)")
    _, config = configuration(args, Path.cwd())
    session = aws.make_session(config.region)
    account, checks = run_preflight(session, config, subprocess.run,
                                    stack_name=args.stack_name or config.stack_name,
                                    only=args.only)
    nodes = " + ".join(f"{p.instance_type} x {p.nodes.max}" for p in config.node_pools)
    print(f"preflight: {nodes} in {config.compute_az_id} "
          f"({config.region}), orchestrator {config.orchestrator}, account {account}")
    print(format_table(checks))
    if args.only is None:
        _print_estimate(args, config, session)
    failed = [c.name for c in checks if not c.ok]
    if failed:
        print(f"preflight failed: {', '.join(failed)}", file=sys.stderr)
        return ExitCode.CHECK_FAILED
    print("preflight passed")
    return ExitCode.OK
