#!/usr/bin/env python3
"""Synth time of TrnUltraCluster (default config) against a one-bucket CDK app.

Both run through the same pinned CLI (``npx cdk synth``) and the same Python, in this run,
alternating, ``--runs`` times each; the medians and their ratio are printed, twice:

- cold: into a new output directory each time (a first ``make synth``: every asset, e.g.
  ~100 MB of Lambda layers and the ECR copy function, is staged);
- warm: into the same output directory again (a repeated ``make synth``: staged assets are
  reused).

Target: a ratio of at most 1.5 (most of a CDK synth is starting node and the jsii runtime,
which both apps pay).

Usage: ``make bench`` or ``.venv/bin/python benchmarks/synth.py [--runs 5]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
CDK = REPO_ROOT / "node_modules" / ".bin" / "cdk"
TARGET_RATIO = 1.5

BASELINE_APP = """
import aws_cdk as cdk
from aws_cdk import aws_s3 as s3

app = cdk.App()
stack = cdk.Stack(app, "OneBucket", env=cdk.Environment(region="us-west-2"))
s3.Bucket(stack, "Bucket")
app.synth()
"""


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"
    env.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
    env.setdefault("JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION", "1")
    return env


def time_synth(app_dir: Path, stack: str, outdir: Path) -> float:
    """Seconds for one ``cdk synth <stack> --quiet`` in ``app_dir``.

    Raises:
        subprocess.CalledProcessError: the synth failed.
    """
    start = time.perf_counter()
    subprocess.run([str(CDK), "synth", stack, "--quiet", "-o", str(outdir)], cwd=app_dir,
                   env=_env(), check=True, capture_output=True, text=True)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="synths of each app (default 3)")
    args = parser.parse_args()
    if not CDK.exists():
        print("node_modules missing: run `make setup` first", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        baseline = tmp_path / "baseline"
        baseline.mkdir()
        (baseline / "app.py").write_text(BASELINE_APP)
        context = json.loads((REPO_ROOT / "cdk.json").read_text())["context"]
        flags = {k: v for k, v in context.items() if k.startswith("@")}
        (baseline / "cdk.json").write_text(json.dumps({"app": "python3 app.py", "context": flags}))
        times: dict[str, tuple[list[float], list[float]]] = {"cold": ([], []), "warm": ([], [])}
        for i in range(args.runs):
            for mode, (base, ours) in times.items():
                b_out, o_out = (tmp_path / f"{mode}-b{i}", tmp_path / f"{mode}-o{i}")
                if mode == "warm":
                    b_out, o_out = tmp_path / "warm-b", tmp_path / "warm-o"
                    if i == 0:  # stage the assets once
                        time_synth(baseline, "OneBucket", b_out)
                        time_synth(REPO_ROOT, "TrnUltraCluster", o_out)
                base.append(time_synth(baseline, "OneBucket", b_out))
                ours.append(time_synth(REPO_ROOT, "TrnUltraCluster", o_out))
    for mode, (base, ours) in times.items():
        base_s, ours_s = statistics.median(base), statistics.median(ours)
        ratio = ours_s / base_s
        verdict = "within" if ratio <= TARGET_RATIO else "OVER"
        print(f"{mode}: one-bucket app median {base_s:5.2f} s, TrnUltraCluster median "
              f"{ours_s:5.2f} s -> ratio {ratio:.2f}x ({verdict} the {TARGET_RATIO}x target)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
