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
(pytest marker ``matrix``), `make test` the default and every profile (but the cfn-lint and
checkov runs of :data:`LINTED_IN_MATRIX`; CI runs both)."""


def params(in_matrix: frozenset[str]) -> list:
    """:data:`CONFIGS` as pytest parameters, each with its id, those named in ``in_matrix``
    marked ``matrix``."""
    return [pytest.param(config, id=name,
                         marks=(pytest.mark.matrix,) if name in in_matrix else ())
            for config, name in zip(CONFIGS, IDS)]


PARAMS = params(VARIANTS)
""":data:`CONFIGS` as pytest parameters, each with its id, the variants marked ``matrix``."""
LINTED_IN_MATRIX = VARIANTS | {"dev", "trn2-3xl", "ultracluster-2000", "mixed", "teams"}
"""The configurations whose cfn-lint and checkov runs are in `make test-matrix`: the variants
and five profiles. `make test` lints the default and the profiles whose templates have shapes
of their own: each other orchestrator (``hyperpod-eks``, ``single-node``, ``ultracluster-16``),
FSx for Lustre over EFA (``ultracluster-128``), a capacity block with the EFA-only layout on
trn2 (``trn2``), a DLAMI-venv node with SCRATCH_2 (``trn1-2xl``). The five: ``dev`` (the
default's EKS with one node and ``data_removal_policy: destroy``), ``trn2-3xl`` (standalone
with SCRATCH_2 as ``trn1-2xl``, container runtime, sa-east-1), ``ultracluster-2000``
(HyperPod Slurm at 2,000 nodes, as the 2,000-node variants), ``mixed`` and ``teams`` (on EKS:
node groups per pool, and Kueue objects inside custom resources, which cfn-lint does not read
into; on the other orchestrators they are variants). `make test` synthesizes those five and
runs every other check on them; CI runs both tiers."""
LINT_PARAMS = params(LINTED_IN_MATRIX)
"""The lint tests' parameters."""


def synth_config(synth, config):
    """Synthesize one entry of :data:`CONFIGS`: ``None``, a profile path or context keys."""
    return synth(**config) if isinstance(config, dict) else synth(config)


@pytest.fixture(scope="module", params=PARAMS)
def each(request, synth):
    """One synthesized configuration per test: the default, each profile, each scale case."""
    return synth_config(synth, request.param)
