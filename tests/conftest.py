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
import hashlib
import json
import os
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
for path in (REPO_ROOT, REPO_ROOT / "training"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))
os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
os.environ.setdefault("JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION", "1")
# moto's EC2 backend loads about 1,300 stock AMIs per Region at each start and reset (a third
# of a second each: most of the preflight tests' time); no test reads them (the DLAMI lookup
# tests answer DescribeImages with the Stubber). The switch: moto/settings.py,
# ``ec2_load_default_amis`` (moto 5).
os.environ.setdefault("MOTO_EC2_LOAD_DEFAULT_AMIS", "false")
if "PYTEST_XDIST_WORKER_COUNT" in os.environ:
    # Under pytest-xdist, torch in each worker (and the training processes the tests start)
    # would use a thread per core: with every worker doing so, 2 workers x 2 torchrun
    # processes x all cores oversubscribe the machine until a real run times out. One share
    # of the cores per worker (set before torch is imported; subprocesses inherit it).
    _share = (os.cpu_count() or 1) // int(os.environ["PYTEST_XDIST_WORKER_COUNT"])
    os.environ.setdefault("OMP_NUM_THREADS", str(max(1, _share)))


def _system_python3() -> str:
    """The interpreter that ``python3``, the first on PATH, runs (under ``make``: the venv's,
    whose ``bin`` the Makefile puts first; else the machine's, resolved past a version
    manager's shim); with a shim, that interpreter goes first on PATH.

    The node-script tests run the lifecycle and setup scripts, which call ``python3`` (lcs.py)
    dozens of times per run; each pyenv shim call resolves the version through about fifteen
    bash processes (0.1 s here, several times that with both cores busy), which was half the
    time of those tests. The same interpreter runs, so nothing the scripts see changes.
    """
    import shutil
    import subprocess
    import tempfile

    found = shutil.which("python3") or sys.executable
    if "shims" not in Path(found).parts:
        return found
    import atexit

    real = subprocess.run([found, "-c", "import sys; print(sys.executable)"],
                          capture_output=True, text=True, check=True).stdout.strip()
    direct = Path(tempfile.mkdtemp(prefix="python3-"))
    atexit.register(shutil.rmtree, direct, True)
    (direct / "python3").symlink_to(real)
    os.environ["PATH"] = f"{direct}{os.pathsep}{os.environ['PATH']}"
    return real


SYSTEM_PYTHON3 = _system_python3()
"""The ``python3`` on PATH, without a shim: what the node scripts run (with ``-S``, so only the
standard library whichever it is)."""

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


class Synth:
    """One synthesized configuration.

    Attributes:
        template: the stack's template.
        outdir: the cloud assembly directory (assets).
        config, warnings: the validated configuration and its warnings.
        stack: the CDK stack object; synthesized in this process on first use when the
            template came from another pytest-xdist worker's synth (:func:`synth`).
    """

    def __init__(self, template: dict[str, Any], outdir: Path, config: Any,
                 warnings: tuple[Any, ...], stack: Any = None,
                 make_stack: Any = None) -> None:
        self.template = template
        self.outdir = outdir
        self.config = config
        self.warnings = warnings
        self._stack = stack
        self._make_stack = make_stack

    @property
    def stack(self) -> Any:
        if self._stack is None:
            self._stack = self._make_stack()
        return self._stack

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


def _context(profile: str | Path | None, context: dict[str, Any]) -> dict[str, Any]:
    ctx = cdk_json_context()
    if profile is not None:
        ctx["config"] = str(profile)
    ctx.update(context)
    return ctx


def _synth_now(ctx: dict[str, Any], outdir: Path) -> tuple[Any, dict[str, Any], Any]:
    """Synthesize ``ctx`` into ``outdir``: (stack, template, loaded configuration)."""
    from trn_ultracluster.app import build_app

    app, stack, loaded = build_app(ctx, outdir=str(outdir), base_dir=REPO_ROOT)
    assembly = app.synth()
    return stack, assembly.get_stack_by_name(stack.stack_name).template, loaded


@pytest.fixture(scope="session")
def synth(tmp_path_factory, worker_id):
    """Factory fixture: ``synth(profile=None, **context) -> Synth``, cached per session.

    Under pytest-xdist the workers share one cache: the first worker to need a
    configuration synthesizes it under a file lock into a directory of the session's base
    temp directory and writes its template there; the others read it (their ``Synth.stack``
    synthesizes again in that worker, on first use only: few tests need the CDK objects).
    """
    cache: dict[tuple, Synth] = {}
    shared = None if worker_id == "master" else tmp_path_factory.getbasetemp().parent / "synth"

    def _synth(profile: str | Path | None = None, **context: Any) -> Synth:
        key = (str(profile), tuple(sorted((k, repr(v)) for k, v in context.items())))
        if key in cache:
            return cache[key]
        ctx = _context(profile, context)
        if shared is None:
            outdir = tmp_path_factory.mktemp("cdk.out")
            stack, template, loaded = _synth_now(ctx, outdir)
            cache[key] = Synth(template, outdir, loaded.config, loaded.warnings, stack)
            return cache[key]
        from filelock import FileLock

        from trn_ultracluster.config import load_config

        name = hashlib.sha256(repr(key).encode()).hexdigest()[:16]
        root = shared / name
        root.mkdir(parents=True, exist_ok=True)
        done = root / "template.json"
        with FileLock(str(root / "lock")):
            if done.exists():
                loaded = load_config(ctx, base_dir=REPO_ROOT)
                stack = None
                template = json.loads(done.read_text())
            else:
                stack, template, loaded = _synth_now(ctx, root / "cdk.out")
                tmp = root / "template.json.tmp"
                tmp.write_text(json.dumps(template))
                tmp.replace(done)
        cache[key] = Synth(template, root / "cdk.out", loaded.config, loaded.warnings, stack,
                           make_stack=lambda: _synth_now(
                               ctx, tmp_path_factory.mktemp("cdk.out"))[0])
        return cache[key]

    return _synth


@pytest.fixture(scope="session")
def built_once(tmp_path_factory, worker_id):
    """Factory fixture: ``built_once(name, build) -> Path``, a directory that ``build(path)``
    fills once per test session, for work too slow to repeat in each pytest-xdist worker (a
    training run the tests of several workers read).

    Under pytest-xdist the first worker to ask builds it under a file lock in the session's
    shared base temp directory, as :func:`synth` does; the others wait for the lock and reuse
    it. A build that raised leaves no ``<name>.built`` marker (beside the directory, not in
    it), so the next caller builds again (and fails the same way). Without xdist it is built
    here, once per ``name``. The directory is the tests' to read, not to write.
    """
    from filelock import FileLock

    root = tmp_path_factory.getbasetemp() if worker_id == "master" else (
        tmp_path_factory.getbasetemp().parent)
    root = root / "built-once"
    root.mkdir(exist_ok=True)

    def _built(name: str, build: Callable[[Path], None]) -> Path:
        path, marker = root / name, root / f"{name}.built"
        with FileLock(str(root / f"{name}.lock")):
            if not marker.exists():
                shutil.rmtree(path, ignore_errors=True)
                path.mkdir()
                build(path)
                marker.touch()
        return path

    return _built


@pytest.fixture(scope="session")
def worker_id(request) -> str:
    """pytest-xdist's worker id (``gw0``...), ``master`` without xdist (its own fixture of
    that name takes precedence when the plugin is loaded)."""
    return getattr(request.config, "workerinput", {}).get("workerid", "master")


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
