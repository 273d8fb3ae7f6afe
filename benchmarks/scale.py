#!/usr/bin/env python3
"""How far each orchestrator and EFA layout scales, and what synth costs at scale.

Prints two Markdown tables (docs/scale.md holds a copy):

1. per orchestrator x layout (trn1.32xlarge): addresses and NAU units per node, the largest
   ``nodes.max`` the configuration accepts with AWS's default quotas (no quota to raise) and
   with every quota at its maximum (the VPC's NAU ceiling, 256,000; 50 CIDR blocks), and the
   quotas a 2,000-node cluster must raise;
2. per orchestrator x layout: synth time (the real CDK CLI, ``cdk synth --quiet``), template
   size and resource count at 1, 16, 256 and 2,000 nodes, and the ratio of the largest size to
   the smallest above 1 (2,000 : 16) of each,
   against CloudFormation's limits of 1 MB (a template from S3) and 500 resources
   (CloudFormation user guide, "Quotas":
   https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/cloudformation-limits.html).

The largest cluster is a binary search over the configuration rules (no synth). Quotas without
a published maximum (network interfaces, EKS node groups) are set to what the cluster needs in
the "maximum quotas" column.

Usage: ``.venv/bin/python benchmarks/scale.py [--sizes 1,16,256,2000] [--no-synth]``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from trn_ultracluster.config import ConfigError, load_config  # noqa: E402
from trn_ultracluster.config.facts import MAX_NODES  # noqa: E402
from trn_ultracluster.contracts.quotas import QUOTAS  # noqa: E402
from trn_ultracluster.network_plan import largest_cluster  # noqa: E402

CDK = REPO_ROOT / "node_modules" / ".bin" / "cdk"
ORCHESTRATORS = ("eks", "hyperpod-slurm", "hyperpod-eks", "standalone")
LAYOUTS = ("efa", "efa-only")
TEMPLATE_LIMIT_BYTES = 1_000_000
RESOURCE_LIMIT = 500
MAX_QUOTAS = {"quotas.vpc_network_address_usage": str(QUOTAS["vpc_network_address_usage"].maximum),
              "quotas.vpc_cidr_blocks": str(QUOTAS["vpc_cidr_blocks"].maximum),
              "quotas.network_interfaces": "10000000",
              "quotas.eks_nodegroups_per_cluster": "1000"}


def _context(orchestrator: str, layout: str, nodes: int) -> dict[str, str]:
    return {"orchestrator": orchestrator, "efa_interface_layout": layout,
            "nodes.max": str(nodes), "nodes.desired": str(nodes)}


def _accepts(context: dict[str, str], quotas_raised: bool) -> bool:
    try:
        loaded = load_config({**context, **(MAX_QUOTAS if quotas_raised else {})})
    except ConfigError:
        return False
    return quotas_raised or not any(w.field.startswith("quotas.") for w in loaded.warnings)


def quota_row(orchestrator: str, layout: str) -> dict[str, object]:
    """One row of table 1: per-node figures, largest clusters, quotas to raise at 2,000."""
    config = load_config(_context(orchestrator, layout, 1)).config
    per = config.node_addresses
    largest = {raised: largest_cluster(
        lambda n, r=raised: _accepts(_context(orchestrator, layout, max(n, 1)), r), MAX_NODES)
        for raised in (False, True)}
    try:
        loaded = load_config(_context(orchestrator, layout, 2000))
        to_raise = sorted({w.field.removeprefix("quotas.") for w in loaded.warnings
                           if w.field.startswith("quotas.")})
    except ConfigError:
        to_raise = ["(refused)"]
    return {"orchestrator": orchestrator, "layout": layout, "ips": per.ips, "nau": per.nau,
            "default": largest[False], "maximum": largest[True], "raise": to_raise}


def synth_row(orchestrator: str, layout: str, nodes: int, outdir: Path) -> dict[str, float]:
    """Synth ``nodes`` nodes with the real CDK CLI: seconds, template bytes, resources."""
    context = {**_context(orchestrator, layout, nodes), **MAX_QUOTAS}
    args = [str(CDK), "synth", "--quiet", "-o", str(outdir)]
    for key, value in context.items():
        args += ["-c", f"{key}={value}"]
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
           "PYTHONPATH": f"{REPO_ROOT}{os.pathsep}{REPO_ROOT / 'training'}"}
    start = time.perf_counter()
    subprocess.run(args, cwd=REPO_ROOT, env=env, check=True, capture_output=True)
    seconds = time.perf_counter() - start
    (template,) = outdir.glob("*.template.json")
    body = template.read_bytes()
    return {"seconds": seconds, "bytes": len(body),
            "resources": len(json.loads(body)["Resources"])}


def ratio_sizes(sizes: list[int]) -> tuple[int, int]:
    """The sizes the ratio column compares: (largest, base), the base the smallest size above 1
    (a 1-node cluster has no per-node growth to compare), else the smallest size. With one
    size, both are it."""
    above_one = [n for n in sizes if n > 1]
    return max(sizes), min(above_one) if above_one else min(sizes)


def ratios(rows: dict[int, dict[str, float]], sizes: list[int]) -> dict[str, float]:
    """Per measure (seconds, bytes, resources), the largest size's value over the base's
    (:func:`ratio_sizes`); ``rows`` maps a size to its measures."""
    largest, base = ratio_sizes(sizes)
    return {k: rows[largest][k] / rows[base][k] for k in ("seconds", "bytes", "resources")}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1,16,256,2000")
    parser.add_argument("--no-synth", action="store_true", help="only the quota table")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]

    print("| orchestrator | layout | addresses / NAU per node | largest, default quotas "
          "| largest, quotas at maximum | quotas to raise for 2,000 nodes |")
    print("|---|---|---|---|---|---|")
    for orchestrator in ORCHESTRATORS:
        for layout in LAYOUTS:
            r = quota_row(orchestrator, layout)
            print(f"| {orchestrator} | {layout} | {r['ips']} / {r['nau']} | {r['default']:,} "
                  f"| {r['maximum']:,} | {', '.join(r['raise']) or 'none'} |")
    if args.no_synth:
        return 0

    print()
    head = " | ".join(f"{n:,} nodes" for n in sizes)
    largest, base = ratio_sizes(sizes)
    print(f"| orchestrator | layout | {head} | {largest:,} : {base:,} |")
    print("|---|---|" + "---|" * (len(sizes) + 1))
    worst = {"bytes": 0, "resources": 0}
    for orchestrator in ORCHESTRATORS:
        for layout in LAYOUTS:
            rows: dict[int, dict[str, float]] = {}
            for n in sizes:
                with tempfile.TemporaryDirectory() as tmp:
                    rows[n] = synth_row(orchestrator, layout, n, Path(tmp))
            worst = {k: max(worst[k], *(r[k] for r in rows.values())) for k in worst}
            cells = " | ".join(f"{rows[n]['seconds']:.1f} s, {rows[n]['bytes'] / 1000:.0f} kB, "
                               f"{rows[n]['resources']} res" for n in sizes)
            ratio = ", ".join(f"{v:.2f}x" for v in ratios(rows, sizes).values())
            print(f"| {orchestrator} | {layout} | {cells} | {ratio} |")
    print(f"\nlargest template {worst['bytes'] / TEMPLATE_LIMIT_BYTES:.2f} of CloudFormation's "
          f"1 MB; most resources {worst['resources'] / RESOURCE_LIMIT:.2f} of its 500")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
