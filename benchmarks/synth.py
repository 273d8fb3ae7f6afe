#!/usr/bin/env python3
"""Synth time of TrnUltraCluster (default config) against a one-bucket CDK app.

Both run through the same pinned CLI (``npx cdk synth``) and the same Python, in this run,
alternating, ``--runs`` times each; the medians and their ratio are printed, twice:

- cold: into a new output directory each time (a first ``make synth``: every asset, e.g.
  ~100 MB of Lambda layers and the ECR copy function, is staged);
- warm: into the same output directory again (a repeated ``make synth``: staged assets are
  reused).

Target: a ratio of at most 1.5 against the one-bucket app as ``cdk init`` writes it (most of
a CDK synth is starting node and the jsii runtime, which both apps pay). That app runs
aws-cdk-lib's built-in CloudFormation validation (a WebAssembly rule engine, ~2 s), which
TrnUltraCluster turns off (``trn_ultracluster/app.py``: cfn-lint, cdk-nag and checkov check
every configuration in ``make test``); a second, informational ratio is against the
one-bucket app with the validation off too, i.e. the project's own work.

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

app = cdk.App(builtin_cloud_formation_validation={validation})
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
    context = json.loads((REPO_ROOT / "cdk.json").read_text())["context"]
    flags = {k: v for k, v in context.items() if k.startswith("@")}
    apps = {"one-bucket (cdk init)": True, "one-bucket, no built-in validation": False}
    times: dict[tuple[str, str], list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        dirs = {}
        for n, (name, validation) in enumerate(apps.items()):
            app_dir = tmp_path / f"baseline{n}"
            app_dir.mkdir()
            (app_dir / "app.py").write_text(BASELINE_APP.format(validation=validation))
            (app_dir / "cdk.json").write_text(json.dumps({"app": "python3 app.py",
                                                          "context": flags}))
            dirs[name] = (app_dir, "OneBucket")
        dirs["TrnUltraCluster"] = (REPO_ROOT, "TrnUltraCluster")
        for i in range(args.runs):
            for mode in ("cold", "warm"):
                for name, (app_dir, stack) in dirs.items():
                    out = tmp_path / f"{mode}-{abs(hash(name))}-{i if mode == 'cold' else 0}"
                    if mode == "warm" and i == 0:  # stage the assets once
                        time_synth(app_dir, stack, out)
                    times.setdefault((mode, name), []).append(time_synth(app_dir, stack, out))
    for mode in ("cold", "warm"):
        ours = statistics.median(times[(mode, "TrnUltraCluster")])
        for name in apps:
            base = statistics.median(times[(mode, name)])
            ratio = ours / base
            target = ""
            if name == "one-bucket (cdk init)":
                target = f" ({'within' if ratio <= TARGET_RATIO else 'OVER'} the {TARGET_RATIO}x target)"
            print(f"{mode}: TrnUltraCluster median {ours:5.2f} s / {name} median {base:5.2f} s "
                  f"-> ratio {ratio:.2f}x{target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
