"""The rule: growing ``nodes.max`` never replaces the file system and never changes a launch
template (issue 29, item 5).

EFA is fixed when an FSx for Lustre file system is created ("you cannot enable or disable EFA
on an existing file system", FSx for Lustre user guide, "Working with EFA-enabled file
systems"), so the stack gives an EFA-enabled file system another logical id
(``constructs/storage.py``, "Flipping EFA"): a ``fsx.efa`` decision that a node count could
flip would replace the user's data on a plain ``cdk deploy`` of a grown cluster. And a
launch template whose content changes gives the EKS node groups a new version, which rolls
every node. Every profile is grown 2x and 10x (``nodes.desired`` with it, ``nodes.min``
kept):

- each grown configuration that validates decides the file system (``EfaEnabled``, hence its
  logical id) and every input of the launch template as the profile does; one that does not
  validate is refused by a node count (``nodes.max``), never by a file-system field, and is
  listed in :data:`REFUSED` (a new refusal fails the test instead of being skipped);
- one profile per orchestrator is really synthesized at 10x: the ``AWS::FSx::FileSystem``
  (logical id and properties) and every ``AWS::EC2::LaunchTemplate``'s ``LaunchTemplateData``
  are those of the profile's own template (4 synths beyond the profiles').
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.conftest import PROFILES, REPO_ROOT, cdk_json_context, profile_path
from trn_ultracluster.config import ClusterConfig, ConfigError, load_config
from trn_ultracluster.config.fsx_efa import plan_fsx_efa

GROWTH = (2, 10)

REFUSED = {
    ("trn1-2xl", 2), ("trn1-2xl", 10),  # trn1.2xlarge has no EFA: single-node only
    ("ultracluster-2000", 10),  # 20,000 nodes: above one VPC's NAU and HyperPod's group size
}
"""Grown profiles that the configuration refuses, each by a node-count rule."""

CARRIES_MODE = {"eks", "standalone"}
"""Orchestrators whose launch template carries the nodes' Lustre-over-EFA set-up (user data
with ``FsxEfaPlan.mode`` and ``interfaces_per_client``: ``orchestrators/eks/cluster.py``,
``orchestrators/standalone/node.py``); HyperPod's nodes read theirs from the lifecycle
scripts."""

SYNTHESIZED = {"eks": "dev", "hyperpod-eks": "hyperpod-eks", "standalone": "single-node",
               "hyperpod-slurm": "ultracluster-128"}
"""One profile per orchestrator, synthesized at 10x; ``ultracluster-128`` is the profile with
an EFA-enabled file system (``fsx.efa: true``), which 10x takes past 512 nodes."""


def load(profile: Path, **overrides: str) -> ClusterConfig:
    context = cdk_json_context()
    context["config"] = str(profile)
    context.update(overrides)
    return load_config(context, base_dir=REPO_ROOT).config


def grown(config: ClusterConfig, factor: int) -> dict[str, str]:
    """The ``-c`` overrides that grow ``config`` ``factor`` times."""
    return {"nodes.max": str(config.nodes.max * factor),
            "nodes.desired": str(config.nodes.desired * factor)}


def launch_template_inputs(c: ClusterConfig) -> tuple[Any, ...]:
    """What the stack builds the EFA launch template from (``stacks/cluster.py``, ``EfaProps``),
    and on orchestrators in :data:`CARRIES_MODE` the nodes' EFA set-up in its user data."""
    efa = plan_fsx_efa(c)
    node_side = (efa.mode, efa.interfaces_per_client) if c.orchestrator in CARRIES_MODE else ()
    return (c.instance_type, c.root_volume_gib, c.uses_placement_group,
            c.capacity.placement_group_name, c.capacity.type, c.capacity.reservation_id,
            c.efa_interface_layout, node_side)


CASES = [(p, k, {}) for p in PROFILES if "\npools:" not in p.read_text()
         for k in GROWTH] + [  # a profile of pools grows per pool, which -c cannot say
    # the same file system decided by auto rather than true
    (profile_path("ultracluster-128"), k, {"fsx.efa": "auto"}) for k in GROWTH]


@pytest.mark.parametrize(
    "profile, factor, extra", CASES,
    ids=[f"{p.stem}{'-' if x else ''}{'-'.join(f'{v}' for v in x.values())}-{k}x"
         for p, k, x in CASES])
def test_growing_nodes_max_keeps_the_file_system_and_the_launch_template(profile, factor,
                                                                         extra):
    base = load(profile, **extra)
    try:
        bigger = load(profile, **extra, **grown(base, factor))
    except ConfigError as refused:
        fields = [i.field for i in refused.issues if i.severity == "error"]
        assert (profile.stem, factor) in REFUSED, fields
        assert "nodes.max" in fields
        assert not [f for f in fields if f.startswith("fsx.") or f == "vpc_cidr"], fields
        return
    assert (profile.stem, factor) not in REFUSED
    assert bigger.nodes.max == base.nodes.max * factor
    assert plan_fsx_efa(bigger).enabled is plan_fsx_efa(base).enabled  # the file system's id
    assert launch_template_inputs(bigger) == launch_template_inputs(base)


def _of_type(template: dict, cfn_type: str) -> dict[str, Any]:
    return {k: r["Properties"] for k, r in template["Resources"].items()
            if r["Type"] == cfn_type}


@pytest.mark.parametrize("orchestrator, name", SYNTHESIZED.items(), ids=SYNTHESIZED.keys())
def test_a_stack_grown_10x_has_the_same_file_system_and_launch_templates(synth, orchestrator,
                                                                         name):
    base = synth(profile_path(name))
    bigger = synth(profile_path(name), **grown(base.config, 10))
    assert base.config.orchestrator == bigger.config.orchestrator == orchestrator
    assert bigger.config.nodes.max == 10 * base.config.nodes.max
    file_systems = _of_type(base.template, "AWS::FSx::FileSystem")
    assert len(file_systems) == 1
    assert _of_type(bigger.template, "AWS::FSx::FileSystem") == file_systems
    templates = {k: p["LaunchTemplateData"]
                 for k, p in _of_type(base.template, "AWS::EC2::LaunchTemplate").items()}
    assert templates
    assert {k: p["LaunchTemplateData"] for k, p in
            _of_type(bigger.template, "AWS::EC2::LaunchTemplate").items()} == templates
