"""The orchestrator seam: one registry entry per orchestrator the configuration allows, each
built through ``from_config`` and naming its job CLI backend in the outputs."""

from __future__ import annotations

import sys
from importlib import import_module
from typing import get_args

import pytest

from trn_ultracluster.config import ClusterConfig
from trn_ultracluster.orchestrators import ORCHESTRATORS


def allowed_orchestrators() -> set[str]:
    return set(get_args(ClusterConfig.model_fields["orchestrator"].annotation))


def test_every_orchestrator_the_config_allows_has_an_entry():
    from trn_ultracluster.contracts.orchestrators import ORCHESTRATORS as FACTS

    assert set(ORCHESTRATORS) == allowed_orchestrators() == set(FACTS)
    for name, (module, cls, construct_id) in ORCHESTRATORS.items():
        orchestrator = getattr(import_module(module), cls)
        assert callable(orchestrator.from_config), name
        assert isinstance(orchestrator.job_backend, str) and orchestrator.job_backend, name


def test_construct_ids_keep_the_logical_ids_of_deployed_stacks():
    """A new construct id would replace every resource of a deployed orchestrator."""
    ids = {n: e[2] for n, e in ORCHESTRATORS.items()}
    assert {n: ids[n] for n in ("eks", "hyperpod-slurm")} == {"eks": "Eks", "hyperpod-slurm": "HyperPod"}
    assert ids["hyperpod-eks"] == "HyperPodEks"
    assert ids["standalone"] == "Standalone"
    assert len(set(ids.values())) == len(ids)


@pytest.mark.parametrize("orchestrator, backend", [("eks", "eks"), ("hyperpod-slurm", "hyperpod-slurm"),
                                                   ("hyperpod-eks", "hyperpod-eks"),
                                                   ("standalone", "standalone")])
def test_the_stack_outputs_the_job_backend(synth, orchestrator, backend):
    from tests.conftest import profile_path

    # the hyperpod-eks profile: each configuration is synthesized once per session
    s = synth(profile_path("hyperpod-eks")) if orchestrator == "hyperpod-eks" else synth(
        orchestrator=orchestrator)
    assert s.output("JobBackend") == backend
    assert s.output("Orchestrator") == orchestrator
    assert type(s.stack.orchestrator).__module__ == ORCHESTRATORS[orchestrator][0]


def test_the_package_imports_no_orchestrator():
    """Each orchestrator pulls in large modules (Lambda layers); the registry imports lazily."""
    import subprocess

    code = ("import sys, trn_ultracluster.orchestrators; "
            "print(any(m.startswith('trn_ultracluster.orchestrators.eks.cluster') or "
            "m.startswith('trn_ultracluster.orchestrators.hyperpod_slurm.cluster') or "
            "m.startswith('trn_ultracluster.orchestrators.hyperpod_eks.cluster') or "
            "m.startswith('trn_ultracluster.orchestrators.standalone.cluster') for m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
