"""The stack tests' fixture: ``each``, the default configuration, every profile, and 2,000
trn1.32xlarge nodes on each orchestrator and EFA layout (issue "UltraCluster scale": each
must synthesize and pass cfn-lint, cdk-nag and checkov; HyperPod makes its own interfaces, so
one layout stands for both, and ``profiles/ultracluster-2000.yaml`` is HyperPod Slurm's), and
the mixed-pool profile on every orchestrator."""

from __future__ import annotations

import pytest

from tests.conftest import PROFILES, REPO_ROOT

SCALE = {
    f"2000-{orchestrator}-{layout}": {"orchestrator": orchestrator, "efa_interface_layout": layout,
                                      "nodes.max": "2000"}
    for orchestrator, layout in (("eks", "efa"), ("eks", "efa-only"), ("hyperpod-eks", "efa"),
                                 ("standalone", "efa"), ("standalone", "efa-only"))
}
MIXED = {f"mixed-{orchestrator}": {"config": str(REPO_ROOT / "profiles" / "mixed.yaml"),
                                   "orchestrator": orchestrator}
         for orchestrator in ("hyperpod-slurm", "hyperpod-eks", "standalone")}
"""profiles/mixed.yaml (two Trainium pools and a CPU pool, on eks) on the other orchestrators
(issue "node pools": it must synthesize and pass cfn-lint, cdk-nag and checkov on all four)."""
TEAMS = {f"teams-{orchestrator}": {"config": str(REPO_ROOT / "profiles" / "teams.yaml"),
                                   "orchestrator": orchestrator}
         for orchestrator in ("hyperpod-slurm", "hyperpod-eks")}
"""profiles/teams.yaml (two teams, on eks) on the other orchestrators with a scheduler (issue
"teams": each must carry its scheduler's objects and pass cfn-lint, cdk-nag and checkov)."""
CONFIGS = [None, *PROFILES, *SCALE.values(), *MIXED.values(), *TEAMS.values()]
IDS = ["default", *(p.stem for p in PROFILES), *SCALE, *MIXED, *TEAMS]
VARIANTS = frozenset((*SCALE, *MIXED, *TEAMS))
"""The configurations that are not the default or a profile: `make test-matrix` checks them
(pytest marker ``matrix``), `make test` the default and every profile (CI runs both)."""
PARAMS = [pytest.param(config, id=name, marks=(pytest.mark.matrix,) if name in VARIANTS else ())
          for config, name in zip(CONFIGS, IDS)]
""":data:`CONFIGS` as pytest parameters, each with its id, the variants marked ``matrix``."""
LINTED_IN_MATRIX = VARIANTS | {"dev", "trn1-2xl", "trn2", "trn2-3xl", "ultracluster-2000"}
"""The configurations that `make test-matrix` lints (cfn-lint and checkov): the variants, and
the profiles that differ from another profile of `make test` only in instance type or size
(``dev`` and ``trn2`` are EKS as the default; ``trn1-2xl`` and ``trn2-3xl`` standalone as
``single-node``; ``ultracluster-2000`` HyperPod Slurm as ``ultracluster-16``). `make test`
synthesizes those profiles and runs every other check on them; CI runs both."""
LINT_PARAMS = [pytest.param(config, id=name,
                            marks=(pytest.mark.matrix,) if name in LINTED_IN_MATRIX else ())
               for config, name in zip(CONFIGS, IDS)]
""":data:`CONFIGS` as pytest parameters of the lint tests, :data:`LINTED_IN_MATRIX` marked
``matrix``."""


def synth_config(synth, config):
    """Synthesize one entry of :data:`CONFIGS`: ``None``, a profile path or context keys."""
    return synth(**config) if isinstance(config, dict) else synth(config)


@pytest.fixture(scope="module", params=PARAMS)
def each(request, synth):
    """One synthesized configuration per test: the default, each profile, each scale case."""
    return synth_config(synth, request.param)
