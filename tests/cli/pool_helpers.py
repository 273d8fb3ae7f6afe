"""Stack outputs of a cluster with several node pools (``profiles/mixed.yaml``: trn1, trn2 and
cpu), as each orchestrator's stack writes them, and spies on what the job CLI hands the job
backends (the checked job, ``status``, ``scale``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.helpers import outputs_values, write_outputs
from trn_ultracluster.cli.backends import BACKENDS
from trn_ultracluster.cli.commands import common

REGISTRY = "123456789012.dkr.ecr.us-east-2.amazonaws.com"
IMAGES = {"xla": f"{REGISTRY}/trn:xla-1", "native": f"{REGISTRY}/trn:native-1"}
"""One training image per Neuron stack; a CPU pool's is the main pool's (the xla one here)."""

MIXED = (("trn1", "trn1.32xlarge", (0, 1, 2), "xla"),
         ("trn2", "trn2.48xlarge", (0, 0, 4), "native"),
         ("cpu", "m7i.8xlarge", (0, 1, 2), ""))
"""The pools of ``profiles/mixed.yaml``: name, type, nodes (min, desired, max), Neuron stack."""


def _place(orchestrator: str, name: str) -> dict[str, str]:
    """What the orchestrator adds to a pool in the ``Pools`` output (its ``pool_details``):
    lists as ``Fn::Join(",", ...)`` makes them, comma-joined strings."""
    if orchestrator == "hyperpod-slurm":
        return {"partition": name, "instance_groups": name}
    if orchestrator == "hyperpod-eks":
        return {"instance_groups": name}
    if orchestrator == "standalone":
        return {"auto_scaling_groups": f"TrnUltraCluster-Nodes{name}-A,TrnUltraCluster-Nodes{name}-B"}
    return {"node_groups": f"TrnUltraCluster-{name}-0,TrnUltraCluster-{name}-1"}


def pools_json(orchestrator: str, pools=MIXED) -> str:
    """The ``Pools`` output of a stack of ``pools``, in the shape
    ``TrnUltraClusterStack._pools_output`` writes (``contracts/pools.py`` ``parse_pools``)."""
    return json.dumps([
        {"name": name, "instance_type": instance_type, "accelerated": bool(stack),
         "nodes": {"min": lo, "desired": desired, "max": hi}, "neuron_stack": stack,
         "image_uri": IMAGES[stack or "xla"], **_place(orchestrator, name)}
        for name, instance_type, (lo, desired, hi), stack in pools])


def mixed_outputs(orchestrator: str, pools=MIXED) -> dict[str, str]:
    """Every output of a stack of ``pools`` on ``orchestrator``: the top-level ones are the
    main (first) pool's, as the stack writes them."""
    _, instance_type, (lo, desired, hi), stack = pools[0]
    values = outputs_values(orchestrator, instance_type, stack)
    values.update({"NodeCountMin": str(lo), "NodeCountDesired": str(desired),
                   "NodeCountMax": str(hi), "TrainingImageUri": IMAGES[stack],
                   "Pools": pools_json(orchestrator, pools)})
    return values


def mixed_file(tmp_path: Path, orchestrator: str = "hyperpod-slurm", pools=MIXED,
               **values: str | None) -> str:
    """An outputs file of :func:`mixed_outputs` with ``values`` changed (``None``: left out)."""
    return str(write_outputs(tmp_path, {**mixed_outputs(orchestrator, pools), **values}))


@pytest.fixture
def never_sent(monkeypatch):
    """Fail the test if the CLI reaches the cluster or uploads a working directory."""
    from trn_ultracluster.cli.commands import jobs

    def refuse(*_, **__):
        raise AssertionError("the CLI reached the cluster or uploaded the working directory")

    for backend in BACKENDS.values():
        monkeypatch.setattr(backend, "connect", refuse)
    monkeypatch.setattr(jobs, "upload_snapshot", refuse)


@pytest.fixture
def jobs_made(monkeypatch) -> list:
    """The checked jobs (``JobRequest``) the commands hand the backends, in order."""
    made = []
    real = common.job_request

    def spy(**kwargs):
        made.append(real(**kwargs))
        return made[-1]

    monkeypatch.setattr(common, "job_request", spy)
    return made


@pytest.fixture
def backend_calls(monkeypatch) -> list:
    """``(method, args...)`` of each ``status`` / ``scale`` call on any backend, which answer
    without reaching a cluster."""
    calls = []

    def status(self, job, pool=None):
        calls.append(("status", job, pool))
        return [f"jobs of {pool.name if pool else 'every pool'}"]

    def scale(self, nodes, pool=None):
        calls.append(("scale", nodes, pool))
        return f"{pool.name if pool else 'main'}: {nodes} nodes"

    for backend in BACKENDS.values():
        monkeypatch.setattr(backend, "status", status)
        monkeypatch.setattr(backend, "scale", scale)
    return calls
