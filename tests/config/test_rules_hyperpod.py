"""Rules of the SageMaker HyperPod Slurm orchestrator (more cases, each naming its field:
tests/orchestrators/hyperpod_slurm/test_cluster.py)."""

from __future__ import annotations

import pytest

from tests.config import check_one_error

# (case, context overrides as `-c` would give them, the exact message of the one error)
BAD_INPUTS = [
    ('hyperpod without ml. type', {'orchestrator': 'hyperpod-slurm', 'instance_type': 'trn1.2xlarge'},
     "error: orchestrator = 'hyperpod-slurm': must be 'eks' or 'standalone' for trn1.2xlarge: SageMaker HyperPod offers only 'trn1.32xlarge', 'trn1n.32xlarge', 'trn2.3xlarge' or 'trn2.48xlarge' (or choose one of those instance types) (see https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod.html)"),
    ('worker group split past 63 characters',
     {'orchestrator': 'hyperpod-slurm', 'nodes.desired': 2000, 'nodes.max': 2000,
      'hyperpod.worker_groups': [{'name': 'wwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwww'}]},
     "error: hyperpod.worker_groups[0].name = 'wwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwww': must be at most 61 characters: its 2000 instances take 2 instance groups (one per compute subnet they fill, at most 6758 each), the last named '<name>-2', and an instance group name has at most 63 (see https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_ClusterInstanceGroupSpecification.html)"),
]


@pytest.mark.parametrize("case, overrides, message", BAD_INPUTS, ids=[c[0] for c in BAD_INPUTS])
def test_bad_input_gives_one_exact_message(case, overrides, message):
    check_one_error(overrides, message)


# --- node settings HyperPod does not use ------------------------------------------------

HYPERPOD_UNUSED = [
    ("root_volume_gib", 1024, "hyperpod.worker_ebs_volume_gib"),
    ("efa_interface_layout", "efa-only", "creates the nodes' network interfaces itself"),
    ("placement_group", False, "places an instance group's nodes itself"),
]


@pytest.mark.parametrize("orchestrator", ["hyperpod-slurm", "hyperpod-eks"])
@pytest.mark.parametrize("field, value, instead", HYPERPOD_UNUSED,
                         ids=[c[0] for c in HYPERPOD_UNUSED])
def test_hyperpod_warns_of_node_settings_it_does_not_use(orchestrator, field, value, instead):
    """HyperPod launches its nodes from its instance groups, not from the stack's launch
    template (SageMaker API Reference, ClusterInstanceGroupSpecification: no launch template,
    root volume or placement group): such a setting changes nothing on the nodes, and the
    warning names the field and what HyperPod uses instead. On main it passed silently."""
    from tests.config import STYLE, warnings_about

    overrides = {"orchestrator": orchestrator, field: value}
    if orchestrator == "hyperpod-eks":
        overrides["eks.kubernetes_version"] = "1.34"
    (warning,) = warnings_about(overrides, field)
    assert STYLE.match(warning), warning
    assert warning.startswith(f"warning: {field} = {value!r}: should be left out with "
                              f"orchestrator '{orchestrator}'")
    assert instead in warning
    # only placement_group reaches the placement group (false drops it)
    assert ("launch template and placement group" in warning) == (field == "placement_group")


@pytest.mark.parametrize("field, value, _", HYPERPOD_UNUSED, ids=[c[0] for c in HYPERPOD_UNUSED])
def test_the_same_settings_are_quiet_where_the_launch_template_is_used(field, value, _):
    from tests.config import warnings_about

    assert warnings_about({"orchestrator": "eks", field: value}, field) == []
    assert warnings_about({"orchestrator": "hyperpod-slurm"}, field) == []  # defaults: quiet


MIXED_POOLS = [
    {"name": "trn1", "instance_type": "trn1.32xlarge", "nodes": {"max": 2}},
    {"name": "big", "instance_type": "trn1.32xlarge", "nodes": {"max": 2}},
]


@pytest.mark.parametrize("orchestrator", ["hyperpod-slurm", "hyperpod-eks"])
@pytest.mark.parametrize("field, value, instead", HYPERPOD_UNUSED,
                         ids=[c[0] for c in HYPERPOD_UNUSED])
def test_hyperpod_warns_of_a_pools_own_node_settings(orchestrator, field, value, instead):
    """A pool's own root volume, EFA layout or placement group sets only its launch template
    (and placement group), which HyperPod does not use either: the warning names the pool's
    field. Set to any value, it warns (it exists only to differ from the top-level one)."""
    from tests.config import STYLE, warnings_about

    pools = [MIXED_POOLS[0], {**MIXED_POOLS[1], field: value}]
    overrides = {"orchestrator": orchestrator, "pools": pools}
    if orchestrator == "hyperpod-eks":
        overrides["eks.kubernetes_version"] = "1.34"
    path = f"pools[1].{field}"
    (warning,) = warnings_about(overrides, path)
    assert STYLE.match(warning), warning
    assert warning.startswith(f"warning: {path} = {value!r}: should be left out with "
                              f"orchestrator '{orchestrator}': it sets pool big's launch template")
    assert instead in warning
    assert warnings_about({**overrides, "orchestrator": "eks", "eks.kubernetes_version": "1.34"},
                          path) == []
    assert warnings_about({**overrides, "pools": MIXED_POOLS}, path) == []  # not set: quiet
