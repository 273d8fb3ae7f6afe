#!/usr/bin/env python3
"""Estimated first-deploy time of each profile: the critical path of its template.

Synthesizes the default configuration (cdk.json) and every ``profiles/*.yaml`` (in process,
as the tests do), then prints for each the critical path of CloudFormation's create
(:func:`trn_ultracluster.deploy_time.critical_path`): every resource on it with its start,
finish and create time, and whether that time is published or our estimate. For HyperPod
profiles it also prints whether the cluster waits for the file system in the template
(it should not: the lifecycle script waits for it at run time) and the ratio of the
estimated create time to the time with cluster and file system in series.

Usage: ``make bench-deploy`` or ``.venv/bin/python benchmarks/deploy_time.py [profile ...]``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from trn_ultracluster.app import build_app  # noqa: E402
from trn_ultracluster.deploy_time import critical_path, create_minutes  # noqa: E402
from trn_ultracluster.contracts.outputs import STACK_NAME  # noqa: E402
from trn_ultracluster.template_graph import transitive_dependencies  # noqa: E402


def synthesize(profile: Path | None, outdir: Path) -> dict:
    """The template of ``profile`` (``None``: cdk.json's default configuration).

    cdk-nag and the configuration warnings print from the jsii runtime's own process, so
    its output is silenced at the file-descriptor level while the app synthesizes.
    """
    context = json.loads((REPO_ROOT / "cdk.json").read_text())["context"]
    if profile is not None:
        context["config"] = str(profile)
    sys.stdout.flush()
    saved = [os.dup(1), os.dup(2)]
    with open(os.devnull, "w") as null:
        os.dup2(null.fileno(), 1)
        os.dup2(null.fileno(), 2)
        try:
            app, _, _ = build_app(context, outdir=str(outdir), base_dir=REPO_ROOT)
            template = app.synth().get_stack_by_name(STACK_NAME).template
        finally:
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            for fd in saved:
                os.close(fd)
    return template


def report(name: str, template: dict) -> list[str]:
    """Lines describing ``template``'s critical path."""
    path = critical_path(template)
    lines = [f"{name}: about {path.total_minutes:.0f} min to CREATE_COMPLETE "
             f"({len(template['Resources'])} resources)"]
    for step in path.steps:
        kind = "published" if step.minutes.published else "estimate"
        wait = f", then waits for {step.waits_for_runtime}" if step.waits_for_runtime else ""
        lines.append(f"  {step.start:5.1f} -> {step.finish:5.1f}  {step.resource_type:<40} "
                     f"{step.logical_id} ({step.minutes.minutes:g} min, {kind}{wait})")
    resources = template["Resources"]
    clusters = [n for n, r in resources.items() if r["Type"] == "AWS::SageMaker::Cluster"]
    storage = [n for n, r in resources.items()
               if r["Type"] in ("AWS::FSx::FileSystem", "AWS::FSx::DataRepositoryAssociation")]
    file_systems = [n for n in storage if resources[n]["Type"] == "AWS::FSx::FileSystem"]
    for cluster in clusters:
        waits = [fs for fs in storage if fs in transitive_dependencies(template, cluster)]
        ready = path.finish[cluster]
        lines.append(f"  HyperPod cluster: waits for FSx in the template: "
                     f"{'yes' if waits else 'no'}; InService at about {ready:.0f} min")
        if file_systems and not waits:
            series = (max(path.finish[fs] for fs in file_systems)
                      + create_minutes("AWS::SageMaker::Cluster").minutes)
            lines.append(f"  with the cluster created after FSx it would be about {series:.0f} "
                         f"min: ratio {ready / series:.2f}")
    return lines


def sources(types: set[str]) -> list[str]:
    """The source of each resource type's create time."""
    return [f"  {kind}: {create_minutes(kind).minutes:g} min, {create_minutes(kind).source}"
            for kind in sorted(types)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("profiles", nargs="*", type=Path,
                        help="profile files (default: cdk.json's configuration and profiles/*.yaml)")
    args = parser.parse_args()
    targets: list[Path | None] = list(args.profiles) or [
        None, *sorted((REPO_ROOT / "profiles").glob("*.yaml"))]
    print("Estimated create times (no AWS account here: per-type times are published "
          "figures or our estimates, see trn_ultracluster/deploy_time.py)")
    on_paths: set[str] = set()
    with tempfile.TemporaryDirectory() as tmp:
        for n, profile in enumerate(targets):
            name = "default (cdk.json)" if profile is None else str(
                profile.relative_to(REPO_ROOT) if profile.is_absolute() else profile)
            template = synthesize(profile, Path(tmp) / f"out{n}")
            print("\n".join(report(name, template)))
            on_paths |= {s.resource_type for s in critical_path(template).steps}
    print("Sources of the create times on these paths:")
    print("\n".join(sources(on_paths)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
