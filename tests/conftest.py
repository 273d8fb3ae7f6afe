"""Shared fixtures: each configuration is synthesized once per test session.

``synth(profile=None, **context)`` returns a :class:`Synth` with the template as a dict and
as ``aws_cdk.assertions.Template``; ``scale_stack(orchestrator, layout)`` is the
:data:`SCALE_NODES`-node cluster of one orchestrator and EFA layout, through ``synth``. The context starts from cdk.json (feature flags and
the default configuration), as ``npx cdk synth`` would, then adds ``config=<profile>`` and
the overrides (dotted keys as with ``-c``). cdk-nag runs on every synth: an unacknowledged
finding makes the synth, and so the test, fail.
"""

from __future__ import annotations

import gzip
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
for path in (REPO_ROOT, REPO_ROOT / "training"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))
os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
os.environ.setdefault("JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION", "1")

PROFILES = sorted((REPO_ROOT / "profiles").glob("*.yaml"))
FIXTURES = REPO_ROOT / "tests" / "fixtures"
"""Data files the tests read, vendored with their source and licence (a README in each
directory): the tests need nothing outside the repository."""
TRAINER_CRDS = FIXTURES / "kubeflow-trainer-2.3.0"
"""Kubeflow Trainer 2.3.0 (the chart the stack installs): the TrainJob and
ClusterTrainingRuntime CRDs and the chart's torch-distributed runtime."""
KUEUE_CRDS = FIXTURES / "kueue-0.19.2"
"""Kueue's CRDs (ResourceFlavor, ClusterQueue, LocalQueue, WorkloadPriorityClass, Workload) at
v0.19.2; its README says why not the 0.20.0 the stack installs."""


def cdk_json_context() -> dict[str, Any]:
    """The context block of cdk.json."""
    return json.loads((REPO_ROOT / "cdk.json").read_text())["context"]


@dataclass
class Synth:
    """One synthesized configuration."""

    template: dict[str, Any]
    outdir: Path
    stack: Any
    config: Any
    warnings: tuple[Any, ...]

    @property
    def assertions(self):
        from aws_cdk import assertions

        return assertions.Template.from_json(self.template)

    def resources(self, cfn_type: str) -> dict[str, dict[str, Any]]:
        """Resources of one type, logical id -> resource."""
        return {k: r for k, r in self.template["Resources"].items() if r["Type"] == cfn_type}

    def only(self, cfn_type: str) -> dict[str, Any]:
        """The single resource of ``cfn_type``'s properties (fails if not exactly one)."""
        found = self.resources(cfn_type)
        assert len(found) == 1, f"expected one {cfn_type}, found {sorted(found)}"
        return next(iter(found.values())).get("Properties", {})

    def logical(self, prefix: str) -> dict[str, Any]:
        """The one resource whose logical id is ``prefix`` + CDK's 8-character hash
        (construct path without slashes, e.g. ``EfaLaunchTemplate``)."""
        found = [r for k, r in self.template["Resources"].items()
                 if k.startswith(prefix) and len(k) == len(prefix) + 8]
        assert len(found) == 1, f"expected one resource {prefix}<hash>, found {len(found)}"
        return found[0]

    def ref_id(self, prefix: str) -> str:
        """Logical id of :meth:`logical`'s resource."""
        return next(k for k in self.template["Resources"]
                    if k.startswith(prefix) and len(k) == len(prefix) + 8)

    def output(self, key: str) -> Any:
        return self.template["Outputs"][key]["Value"]


@pytest.fixture(scope="session")
def synth(tmp_path_factory):
    """Factory fixture: ``synth(profile=None, **context) -> Synth``, cached per session."""
    from trn_ultracluster.app import build_app

    cache: dict[tuple, Synth] = {}

    def _synth(profile: str | Path | None = None, **context: Any) -> Synth:
        key = (str(profile), tuple(sorted((k, repr(v)) for k, v in context.items())))
        if key not in cache:
            ctx = cdk_json_context()
            if profile is not None:
                ctx["config"] = str(profile)
            ctx.update(context)
            outdir = tmp_path_factory.mktemp("cdk.out")
            app, stack, loaded = build_app(ctx, outdir=str(outdir), base_dir=REPO_ROOT)
            assembly = app.synth()
            template = assembly.get_stack_by_name(stack.stack_name).template
            cache[key] = Synth(template, outdir, stack, loaded.config, loaded.warnings)
        return cache[key]

    return _synth


def profile_path(name: str) -> Path:
    """Path of ``profiles/<name>.yaml``."""
    return REPO_ROOT / "profiles" / f"{name}.yaml"


@pytest.fixture(scope="session")
def default(synth) -> Synth:
    """The default configuration of cdk.json."""
    return synth()


FSX_EFA_PROFILE = "ultracluster-128"
"""The profile with ``fsx.efa: true``: 128 trn1.32xlarge on HyperPod Slurm, PERSISTENT_2 at
1000 MB/s/TiB with 14,400 GiB (three EFA capacity steps)."""


@pytest.fixture(scope="session")
def fsx_efa(synth) -> Synth:
    """The :data:`FSX_EFA_PROFILE` configuration (an EFA-enabled file system)."""
    return synth(profile_path(FSX_EFA_PROFILE))


SCALE_NODES = 2000
"""Nodes of :func:`scale_stack`'s clusters: trn1.32xlarge that fill more than one compute
subnet with every orchestrator (and more than one EKS node group)."""


@pytest.fixture(scope="session")
def scale_stack(synth):
    """Factory fixture: ``scale_stack(orchestrator, layout="efa") -> Synth``, the default
    configuration with ``nodes`` 0 / :data:`SCALE_NODES` / :data:`SCALE_NODES` of
    trn1.32xlarge, ``orchestrator`` and ``efa_interface_layout`` ``layout``; cached per
    session with every other ``synth``."""

    def _scale(orchestrator: str, layout: str = "efa") -> Synth:
        return synth(None, **{"orchestrator": orchestrator, "instance_type": "trn1.32xlarge",
                              "efa_interface_layout": layout, "nodes.min": 0,
                              "nodes.desired": SCALE_NODES, "nodes.max": SCALE_NODES})

    return _scale


RELEASE = REPO_ROOT / "tests" / "fixtures" / "release-8995205"
"""``tests/snapshots/<name>.json`` of commit 8995205, the previous release
(``git show 8995205:tests/snapshots/<name>.json | gzip -9n``): what a deployed stack of that
release runs."""


def release_template(name: str) -> dict:
    """The template ``name`` (``default``, ``trn2``) of the previous release."""
    with gzip.open(RELEASE / f"{name}.json.gz", "rt", encoding="utf-8") as f:
        return json.load(f)
