"""One-screen summary of a synthesized TrnUltraCluster cloud assembly.

``python -m trn_ultracluster.summary [cdk.out]`` prints where the template and the cdk-nag
report are, the resources by type, and the cluster's shape (the main pool's instance type and
node counts, each node pool, AZ ID, EFA interfaces per node, whether the file system is
EFA-enabled), read from the template itself.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trn_ultracluster.cloud_assembly import AssemblyError, assembly_stack
from trn_ultracluster.contracts.catalog import UnknownInstanceTypeError, get_any_instance
from trn_ultracluster.contracts.outputs import OutputKey
from trn_ultracluster.estimate.pools import template_pools

if TYPE_CHECKING:
    from trn_ultracluster.estimate.report import Estimate

__all__ = ["efa_interfaces_per_node", "main", "summarize"]

CFN_TEMPLATE_LIMIT_BYTES = 1_000_000
"""CloudFormation quotas: template body 1 MB (S3 URL), 500 resources per stack
(https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/cloudformation-limits.html)."""
CFN_RESOURCE_LIMIT = 500


def efa_interfaces_per_node(template: dict[str, Any]) -> int:
    """Count EFA interfaces (``efa`` or ``efa-only``) in the stack's launch template.

    Raises:
        ValueError: the template has no launch template.
    """
    for resource in template["Resources"].values():
        if resource["Type"] == "AWS::EC2::LaunchTemplate":
            interfaces = resource["Properties"]["LaunchTemplateData"]["NetworkInterfaces"]
            return sum(1 for i in interfaces if i.get("InterfaceType") in ("efa", "efa-only"))
    raise ValueError("the template has no AWS::EC2::LaunchTemplate")


def _output(template: dict[str, Any], key: OutputKey) -> Any:
    return template.get("Outputs", {}).get(key.value, {}).get("Value", "?")


def _estimate_line(est: Estimate) -> str:
    """One line of :mod:`trn_ultracluster.estimate` with the offline table (synth makes no
    AWS call)."""
    partial = "" if est.complete else ", some items unpriced"
    return (f"estimate:       ${est.idle_usd:,.2f}/h idle, ${est.running_usd:,.2f}/h running "
            f"(offline table{partial}; itemized: trn-ultracluster estimate); first deploy "
            f"~{est.deploy_minutes:.0f} min")


def _pool_lines(template: dict[str, Any], est: Estimate) -> list[str]:
    """One line per node pool of the ``Pools`` output: type, node counts (min / desired /
    max), EFA interfaces per node (the catalog's, which its launch template has one per
    network card of), Neuron stack, and its hourly cost when the template has several pools;
    none for a template synthesized before pools."""
    costs = {p.name: p for p in est.pools} if len(est.pools) > 1 else {}
    lines = []
    for i, pool in enumerate(template_pools(template)):
        try:
            efa = get_any_instance(pool.instance_type).efa_interfaces
        except UnknownInstanceTypeError:
            efa = None
        what = ("no EFA (CPU)" if not pool.accelerated else
                "EFA interfaces unknown" if efa is None else
                f"{efa} EFA interfaces" if efa else "no EFA")
        stack = f", Neuron stack {pool.neuron_stack}" if pool.neuron_stack else ""
        cost = costs.get(pool.name)
        money = ("" if cost is None or not cost.lines else
                 f", ${cost.idle_usd:,.2f}/h idle, ${cost.running_usd:,.2f}/h running")
        head = "pools:          " if i == 0 else " " * 16
        lines.append(f"{head}{pool.name}: {pool.instance_type}, nodes {pool.nodes_min} / "
                     f"{pool.nodes_desired} / {pool.nodes_max}, {what}{stack}{money}")
    return lines


def summarize(outdir: Path) -> str:
    """Return the summary text for the cloud assembly in ``outdir``.

    Raises:
        AssemblyError: no synthesized stack in ``outdir`` (run synth first).
    """
    from trn_ultracluster.estimate import OfflinePrices, estimate
    from trn_ultracluster.estimate.lustre import efa_summary

    stack = assembly_stack(outdir)
    path = stack.template_path
    text = path.read_text(encoding="utf-8")
    template = json.loads(text)
    resources = template["Resources"]
    by_type = Counter(r["Type"] for r in resources.values())
    report = outdir / "validation-report.json"
    est = estimate(template, OfflinePrices(template["Outputs"]["Region"]["Value"]))
    lines = [
        f"template:       {path} ({len(text.encode()) / 1000:.0f} kB of "
        f"{CFN_TEMPLATE_LIMIT_BYTES // 1000} kB, {len(resources)} of {CFN_RESOURCE_LIMIT} resources)",
        f"cdk-nag report: {report if report.exists() else '(none written: no findings)'}",
        "",
        f"stack:          {stack.name}",
        f"instance type:  {_output(template, OutputKey.INSTANCE_TYPE)}",
        "nodes:          min {} / desired {} / max {}".format(
            _output(template, OutputKey.NODE_COUNT_MIN),
            _output(template, OutputKey.NODE_COUNT_DESIRED),
            _output(template, OutputKey.NODE_COUNT_MAX),
        ),
        *_pool_lines(template, est),
        f"compute AZ ID:  {_output(template, OutputKey.COMPUTE_AZ_ID)}",
        f"EFA per node:   {efa_interfaces_per_node(template)} interfaces",
        f"FSx over EFA:   {efa_summary(template)} (docs/lustre-over-efa.md)",
        f"orchestrator:   {_output(template, OutputKey.ORCHESTRATOR)}",
        f"Neuron stack:   {_output(template, OutputKey.NEURON_STACK)} (python -m trn_train train "
        f"--backend {_output(template, OutputKey.NEURON_STACK)}; docs/training-stacks.md)",
        _estimate_line(est),
        "",
        "resources by type:",
    ]
    width = max(len(t) for t in by_type)
    lines += [f"  {t:<{width}}  {n}" for t, n in sorted(by_type.items())]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """CLI entry: print the summary; exit 1 with a hint when nothing was synthesized."""
    args = sys.argv[1:] if argv is None else argv
    outdir = Path(args[0] if args else "cdk.out")
    try:
        print(summarize(outdir))
    except AssemblyError as err:
        print(f"{err}: run `make synth` first", file=sys.stderr)
        return 1
    except (OSError, ValueError, KeyError) as err:  # template missing, unreadable or not ours
        print(f"cannot read the synthesized template in {outdir} ({err!r}): run `make synth` "
              "again", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
