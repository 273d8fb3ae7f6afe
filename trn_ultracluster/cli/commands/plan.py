"""``plan``: what a deploy of the configuration would do to the running stack, said before it
happens (issue 29, item 7).

It synthesizes the configuration in this process, as the CDK app does
(:func:`trn_ultracluster.app.build_app` with cdk.json's context, ``--profile`` and ``-c``),
rather than reading a ``cdk.out`` a previous ``make synth`` left: a stale or other
configuration's assembly would make the plan lie; ``--template`` compares a given template
instead. It reads the deployed template with CloudFormation ``GetTemplate``
(``TemplateStage: Original``, the template as submitted: CloudFormation API reference,
GetTemplate; ours has no transforms, so ``Processed`` is the same), classifies every
resource (:func:`trn_ultracluster.changes.classify`) and prints each replacement, removal and
node roll in words, and each resource updated in place by count.

Exit 1 when the deploy would replace or remove data or nodes or roll nodes
(:func:`~trn_ultracluster.changes.stops_deploy`), or lower the storage request of the EKS FSx
claim (:func:`~trn_ultracluster.changes.shrinking_claims`: Kubernetes refuses it until the
claim is recreated, docs/configuration-guide.md "File system size on EKS"), unless
``--allow-replace``; a stack that does not exist yet, or a change that stops nothing, exits 0.
Exit 1 also with ``--allow-replace`` when CloudFormation would refuse the deploy whatever the
user allows: a node group update that combines a version-type change with another
(:func:`~trn_ultracluster.changes.refused_combination`); the plan says how to split it in two
deploys. Going on would only fail the deploy and roll the stack back. ``make deploy`` runs it
first.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections import Counter
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from trn_ultracluster.changes import (
    ClaimShrink,
    ResourceChange,
    classify,
    control_plane_version_refusals,
    describe,
    refused_combination,
    shrinking_claims,
    stops_deploy,
)
from trn_ultracluster.cli.errors import CliError, ExitCode
from trn_ultracluster.network_plan import new_block_warning

__all__ = ["ALLOW_FLAG", "deployed_template", "describe_claim_shrink", "format_plan", "plan",
           "read_template", "synthesize"]

ALLOW_FLAG = "--allow-replace"
"""The option that lets the deploy go on (``make deploy ALLOW_REPLACE=1`` passes it)."""


def synthesize(context: Mapping[str, Any], base_dir: Path) -> dict[str, Any]:
    """The template of ``context`` (cdk.json's context with the overrides), synthesized in
    this process into a temporary directory.

    Raises:
        CliError: (USAGE) the configuration is invalid.
    """
    from trn_ultracluster.app import build_app
    from trn_ultracluster.config import ConfigError

    with tempfile.TemporaryDirectory(prefix="trn-plan-") as outdir:
        try:
            app, stack, _ = build_app(dict(context), outdir=outdir, base_dir=base_dir)
        except ConfigError as err:
            raise CliError(str(err), "fix the configuration (docs/configuration.md)") from None
        assembly = app.synth()
        return dict(assembly.get_stack_by_name(stack.stack_name).template)


def read_template(path: Path) -> dict[str, Any]:
    """The CloudFormation template at ``path`` (JSON, as ``cdk synth`` writes it).

    Raises:
        CliError: (USAGE) it cannot be read, is not JSON, or is not a template (an object
            with a ``Resources`` object).
    """
    fix = "pass a synthesized template (cdk.out/<stack>.template.json)"
    try:
        template = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise CliError(f"--template {path}: {err}", fix) from None
    if not isinstance(template, dict) or not isinstance(template.get("Resources"), dict):
        raise CliError(f"--template {path}: not a CloudFormation template (a JSON object with "
                       "a Resources object)", fix)
    return template


def deployed_template(session: Any, stack_name: str) -> dict[str, Any] | None:
    """The deployed stack's template (``GetTemplate``, stage ``Original``), None when the
    stack does not exist.

    Raises:
        CliError: AWS did not answer (:func:`~trn_ultracluster.cli.aws.aws_errors`), or the
            template is not JSON (STACK).
    """
    from botocore.exceptions import ClientError

    from trn_ultracluster.cli.aws import aws_errors, error_code

    with aws_errors(f"GetTemplate {stack_name}"):
        try:
            body = session.client("cloudformation").get_template(
                StackName=stack_name, TemplateStage="Original")["TemplateBody"]
        except ClientError as err:
            if error_code(err) == "ValidationError" and "does not exist" in str(err):
                return None
            raise
    if isinstance(body, str):  # botocore decodes a JSON body itself; YAML stays text
        try:
            body = json.loads(body)
        except json.JSONDecodeError:
            raise CliError(f"stack {stack_name}'s template is not JSON (was it deployed by "
                           "this project?)", "pass --stack-name of a TrnUltraCluster stack",
                           ExitCode.STACK) from None
    return dict(body)


def _new_blocks_of_eks(changes: list[ResourceChange], after: Mapping[str, Any]) -> list[str]:
    """The ``CidrBlock`` of each ``AWS::EC2::VPCCidrBlock`` the deploy adds, when ``after``
    has an EKS cluster (``eks``, ``hyperpod-eks``); empty otherwise."""
    resources = after.get("Resources", {})
    if not any(r.get("Type") == "AWS::EKS::Cluster" for r in resources.values()):
        return []
    return [str(resources[c.logical_id].get("Properties", {}).get("CidrBlock", c.logical_id))
            for c in changes if c.kind == "added" and c.type == "AWS::EC2::VPCCidrBlock"]


def describe_claim_shrink(claim: ClaimShrink) -> str:
    """``claim`` in words, with the steps that let the deploy recreate it
    (docs/configuration-guide.md, "File system size on EKS")."""
    namespace = claim.namespace or "<namespace>"
    volume = claim.volume or "<volume>"
    return (f"lowers the storage request of the claim {namespace}/{claim.name} (manifest "
            f"{claim.logical_id}) from {claim.before} to {claim.after}: Kubernetes refuses it "
            "(\"spec.resources.requests.storage: Forbidden: field can not be less than "
            "previous value\"), the manifest update fails and the stack rolls back. Before this "
            f"deploy, once no job uses the claim: kubectl delete pvc {claim.name} -n {namespace}"
            f" && kubectl patch pv {volume} --type json -p "
            "'[{\"op\":\"remove\",\"path\":\"/spec/claimRef\"}]' (the volume is Retain: "
            "the file system is untouched); the deploy then recreates the claim, which binds "
            f"to the same volume; run plan again with {ALLOW_FLAG} to go on "
            "(docs/configuration-guide.md#file-system-size-on-eks)")


def format_plan(stack_name: str, changes: list[ResourceChange],
                after: Mapping[str, Any],
                before: Mapping[str, Any] | None = None) -> tuple[str, bool]:
    """The plan as text, and whether it stops the deploy.

    Lines: what CloudFormation would refuse (``x``, :func:`refused_combination`), what stops
    the deploy (``!``: replacements, removals and rolls of :func:`stops_deploy`, and, with
    ``before``, each FSx claim whose request would shrink), then every other replacement and
    removal (``-``), the CIDR-block notice when it applies, the counts by class, and each
    custom resource whose handler's Update runs (``~``: Kubernetes manifests, the image
    build...).
    """
    refused = [c for c in changes if refused_combination(c)]
    versions = control_plane_version_refusals(before, after) if before is not None else []
    stopping = [c for c in changes if stops_deploy(c) and not refused_combination(c)]
    claims = shrinking_claims(before, after) if before is not None else []
    others = [c for c in changes if not stops_deploy(c)
              and c.kind in ("replaced", "removed", "nodes rolled")]
    lines = [f"plan: stack {stack_name}"]
    if refused or versions:
        lines.append(f"CloudFormation would refuse the deploy (whatever {ALLOW_FLAG} says):")
        lines += [f"  x {describe(c)}" for c in refused]
        lines += [f"  x {v}" for v in versions]
    if stopping or claims:
        lines.append("the deploy would:")
        lines += [f"  ! {describe(c)}" for c in stopping]
        lines += [f"  ! {describe_claim_shrink(c)}" for c in claims]
    if others:
        lines.append("also (no data or nodes at stake):")
        lines += [f"  - {describe(c)}" for c in others]
    if blocks := _new_blocks_of_eks(changes, after):
        lines.append(f"note: {new_block_warning(blocks)}")
    counts = Counter(c.kind for c in changes)
    lines.append("resources: " + ", ".join(
        f"{counts[k]} {k}" for k in ("unchanged", "updated", "nodes rolled", "replaced",
                                     "added", "removed") if counts[k]))
    custom = [c for c in changes if c.kind == "updated" and c.type.startswith("Custom::")]
    if custom:
        lines.append("custom resources that run their Update (a failed one fails the deploy):")
        lines += [f"  ~ {describe(c)}" for c in custom]
    return "\n".join(lines), bool(refused or versions or stopping or claims)


def plan(args: argparse.Namespace,
         synth: Callable[[Mapping[str, Any], Path], dict[str, Any]] | None = None) -> int:
    """Print what deploying the configuration would do to the deployed stack.

    Returns:
        0 when the stack does not exist or nothing stops the deploy (or ``--allow-replace``);
        1 (CHECK_FAILED) when something does.

    Raises:
        CliError: USAGE for a bad configuration, ``--template`` or ``--outputs-file``;
            CREDENTIALS / AWS as :func:`deployed_template`.
    """
    from trn_ultracluster.cli import aws
    from trn_ultracluster.cli.commands.preflight import configuration

    if args.outputs_file is not None:
        raise CliError("plan compares the deployed template with the configuration and reads "
                       "no outputs: --outputs-file has no meaning here",
                       "leave --outputs-file out")
    repo = Path.cwd()
    context, config = configuration(args, repo)
    stack_name = args.stack_name or config.stack_name
    region = config.region
    after = None
    if args.template is not None:
        after = read_template(args.template)
        if args.profile or args.context:
            print(f"plan: --template {args.template} is what is compared; --profile and -c "
                  "only name the stack and its Region here", file=sys.stderr)
    deployed = deployed_template(aws.make_session(region), stack_name)
    if deployed is None:
        print(f"plan: stack {stack_name} does not exist in {region}: the deploy creates it")
        return ExitCode.OK
    if after is None:
        after = (synth or synthesize)(context, repo)
    changes = classify(deployed, after)
    text, stops = format_plan(stack_name, changes, after, before=deployed)
    print(text)
    if not stops:
        print("plan: nothing is replaced and no node rolls")
        return ExitCode.OK
    if (any(refused_combination(c) for c in changes)
            or control_plane_version_refusals(deployed, after)):
        print("plan: stopped: CloudFormation would refuse the updates listed with 'x' and "
              f"roll the stack back ({ALLOW_FLAG} cannot change that); deploy in the steps "
              "each line gives (docs/deploy.md#upgrading-a-deployed-stack)", file=sys.stderr)
        return ExitCode.CHECK_FAILED
    if args.allow_replace:
        print(f"plan: going on ({ALLOW_FLAG})")
        return ExitCode.OK
    print(f"plan: stopped: the deploy would replace, roll or fail on what is listed with '!'. "
          f"To go "
          f"on, run again with {ALLOW_FLAG} (make deploy ALLOW_REPLACE=1); to avoid it, "
          "change the configuration back (docs/changes.md)", file=sys.stderr)
    return ExitCode.CHECK_FAILED
