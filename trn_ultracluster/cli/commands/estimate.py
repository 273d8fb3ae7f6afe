"""``estimate``: the hourly cost (idle and running, itemized) and the first deploy's duration
of the synthesized stack (``cdk.out``), before anyone pays; ``preflight`` prints it too."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from trn_ultracluster.cli.errors import CliError, ExitCode
from trn_ultracluster.cli.files import read_text
from trn_ultracluster.cloud_assembly import AssemblyError, assembly_stack
from trn_ultracluster.contracts.quotas import QuotaNeed

__all__ = ["DEFAULT_CDK_OUT", "estimate", "estimate_text", "load_template"]

DEFAULT_CDK_OUT = Path("cdk.out")


def load_template(cdk_out: Path) -> dict[str, Any]:
    """The synthesized TrnUltraCluster template in ``cdk_out`` (the assembly's one stack,
    whatever its ``stack_name``).

    Raises:
        CliError: (USAGE) no template there (nothing synthesized), or it is not a
            TrnUltraCluster template.
    """
    fix = "run `make synth` (with the same PROFILE=...) first, or pass --cdk-out DIR"
    try:
        path = assembly_stack(cdk_out).template_path
    except AssemblyError as err:
        raise CliError(str(err), fix) from None
    if not path.is_file():
        raise CliError(f"no synthesized template at {path}", fix)
    try:
        template = json.loads(read_text(path, "template", fix))
    except json.JSONDecodeError as err:
        raise CliError(f"{path} is not JSON ({err})", fix) from None
    if not isinstance(template, dict) or "Region" not in template.get("Outputs", {}):
        raise CliError(f"{path} is not a TrnUltraCluster template (no Region output)", fix)
    return template


def _price_source(region: str, offline: bool, session: Any) -> Any:
    """The Price List API when ``session`` has credentials and ``offline`` is not set, else
    the offline table."""
    from trn_ultracluster.estimate import OfflinePrices, PriceListPrices

    if offline or session is None or session.get_credentials() is None:
        return OfflinePrices(region)
    return PriceListPrices(session, region)


def estimate_text(template: dict[str, Any], *, offline: bool, session: Any = None,
                  needs: Sequence[QuotaNeed] = ()) -> tuple[str, float]:
    """The estimate of ``template`` as text, and its running cost in USD per hour.

    ``needs``: the quotas of the configuration ``template`` was synthesized from (only
    ``preflight`` knows it); those above AWS's default are listed. Why the file system is
    EFA-enabled or not is in the template (the ``FsxEfa`` output's description).

    With credentials (``session``) and not ``offline``, prices come from the AWS Price List
    API; if the API fails (denied, unreachable), a warning goes to stderr and the offline
    table answers.
    """
    from botocore.exceptions import BotoCoreError, ClientError

    from trn_ultracluster.estimate import OfflinePrices, estimate, format_estimate

    region = template["Outputs"]["Region"]["Value"]
    source = _price_source(region, offline, session)
    try:
        try:
            est = estimate(template, source, needs)
        except (BotoCoreError, ClientError) as err:
            print(f"warning: the AWS Price List API failed ({err}); using the offline table",
                  file=sys.stderr)
            est = estimate(template, OfflinePrices(region), needs)
    except (KeyError, TypeError, ValueError) as err:  # a hand-edited or foreign template
        raise CliError(f"the synthesized template cannot be priced (unexpected shape: "
                       f"{err!r})", "synthesize it again: `make synth`") from None
    return format_estimate(est), est.running_usd


def estimate(args: argparse.Namespace) -> int:
    """Print the estimate of ``--cdk-out`` (default ``cdk.out``); exit 0."""
    from trn_ultracluster.cli import aws

    template = load_template(args.cdk_out)
    session = None if args.offline else aws.make_session(
        template["Outputs"]["Region"]["Value"])
    text, _ = estimate_text(template, offline=args.offline, session=session)
    print(text)
    return ExitCode.OK
