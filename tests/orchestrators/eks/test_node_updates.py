"""How the EKS managed node groups take a change (trn_ultracluster.orchestrators.eks.node_updates):
they follow the control plane's Kubernetes version, after it, and roll without surge
instances on reserved capacity; on-demand groups keep EKS's defaults. One synth of its own
(trn2 with ``eks.node_update_config: none``, shared with tests/test_changes.py); the others
are the ones tests/orchestrators/eks/test_cluster.py and the HyperPod on EKS tests
synthesize."""

from __future__ import annotations

import pytest

from tests.conftest import REPO_ROOT, profile_path
from trn_ultracluster.orchestrators.eks.node_updates import (
    EKS_DEFAULT_UPDATE,
    MAX_UNAVAILABLE_LIMIT,
    NodeUpdate,
    node_update,
)

TRN2 = REPO_ROOT / "profiles" / "trn2.yaml"


@pytest.fixture(scope="module")
def trn2(synth):
    """profiles/trn2.yaml: a Capacity Block on EKS."""
    return synth(profile=TRN2)


@pytest.fixture(scope="module")
def ultra2000(synth):
    """The 2,000-node EKS cluster of test_cluster.py (same context: synthesized once)."""
    return synth(**{"orchestrator": "eks", "efa_interface_layout": "efa-only",
                    "nodes.max": "2000"})


@pytest.fixture(scope="module")
def hpe(synth):
    return synth(profile_path("hyperpod-eks"))


def _cluster(s) -> tuple[str, dict]:
    (item,) = s.resources("AWS::EKS::Cluster").items()
    return item


@pytest.mark.parametrize("name", ["default", "trn2", "ultra2000", "hpe"])
def test_every_nodegroup_runs_the_control_planes_version_after_it(name, request):
    """CloudFormation ``AWS::EKS::Nodegroup`` ``Version`` ("By default, the Kubernetes version
    of the cluster is used", update: No interruption): each node group, system and Trainium,
    names the cluster's version, so a version change reaches them in the same deploy; and
    its ``ClusterName`` is a ``Ref`` to the cluster, so the control plane goes first (nodes may
    not be newer than the API server: Kubernetes Version Skew Policy). On main the node
    groups had no ``Version`` and kept the one they were created with."""
    s = request.getfixturevalue(name)
    cluster_id, cluster = _cluster(s)
    groups = s.resources("AWS::EKS::Nodegroup")
    assert groups
    for logical_id, group in groups.items():
        props = group["Properties"]
        assert props.get("Version") == cluster["Properties"]["Version"], logical_id
        assert props["ClusterName"] == {"Ref": cluster_id}, logical_id


def test_a_version_change_reaches_every_nodegroup(default, synth):
    """Changing ``eks.kubernetes_version`` changes the cluster's and every node group's
    ``Version`` together, and nothing else of the node groups."""
    older = synth(**{"eks.kubernetes_version": "1.35"})
    assert _cluster(older)[1]["Properties"]["Version"] == "1.35"
    before, after = (s.resources("AWS::EKS::Nodegroup") for s in (default, older))
    assert before.keys() == after.keys()
    for logical_id in before:
        b, a = before[logical_id]["Properties"], after[logical_id]["Properties"]
        assert (b["Version"], a["Version"]) == ("1.36", "1.35")
        assert {k: v for k, v in a.items() if k != "Version"} == {
            k: v for k, v in b.items() if k != "Version"}


def _trainium(s) -> list[dict]:
    return [r["Properties"] for k, r in s.resources("AWS::EKS::Nodegroup").items()
            if "Trainium" in k]


def test_on_demand_trainium_nodes_keep_eks_defaults(default, ultra2000):
    """On-Demand: no ``UpdateConfig``, so EKS's defaults (the default strategy, new nodes
    first, one at a time: :data:`EKS_DEFAULT_UPDATE`). A stack of the previous release has
    none, so its upgrade changes only the version-type properties; one more would make
    CloudFormation refuse the update ("Version and ReleaseVersion updates cannot be combined
    with other updates", CloudFormation user guide, AWS::EKS::Nodegroup,
    awsdocs/aws-cloudformation-user-guide#1181). Before, on-demand groups had DEFAULT with a
    tenth of the group at a time."""
    for s in (default, ultra2000):
        groups = _trainium(s)
        assert groups and not [g for g in groups if "UpdateConfig" in g]


def test_reserved_trainium_nodes_roll_without_surge(trn2):
    """A Capacity Block (and a Capacity Reservation) sized to the cluster has no room for a
    surge instance: ``MINIMAL`` terminates a node before launching its replacement ("total
    capacity never increases beyond your configured quantity", EKS user guide, "Understand
    each phase of node updates"). On main the group had no ``UpdateConfig``: EKS's default
    strategy, surge first."""
    (group,) = _trainium(trn2)
    assert group["CapacityType"] == "CAPACITY_BLOCK"
    assert group["UpdateConfig"] == {"MaxUnavailable": 1, "UpdateStrategy": "MINIMAL"}


def test_node_update_config_none_leaves_update_config_out(synth):
    """``eks.node_update_config: none`` (step 1 of the two-step upgrade of a reserved stack):
    the Capacity Block group has no ``UpdateConfig``, and nothing else of it changes."""
    (auto,) = _trainium(synth(profile=TRN2))
    (none,) = _trainium(synth(profile=TRN2, **{"eks.node_update_config": "none"}))
    assert "UpdateConfig" not in none
    assert {k: v for k, v in auto.items() if k != "UpdateConfig"} == none


def test_the_system_nodegroup_keeps_eks_defaults(default):
    """The two on-demand system nodes keep EKS's default update (one at a time, surge
    first): the add-ons' controllers stay up while they roll."""
    system = [r["Properties"] for k, r in default.resources("AWS::EKS::Nodegroup").items()
              if "Trainium" not in k]
    assert [("UpdateConfig" in p) for p in system] == [False]


@pytest.mark.parametrize("capacity, nodes, mode, expected", [
    ("on-demand", 1, "auto", None),
    ("on-demand", 450, "auto", None),
    ("capacity-reservation", 10, "auto", NodeUpdate("MINIMAL", 1)),
    ("capacity-reservation", 11, "auto", NodeUpdate("MINIMAL", 2)),
    ("capacity-reservation", 64, "auto", NodeUpdate("MINIMAL", 7)),
    ("capacity-block", 4, "auto", NodeUpdate("MINIMAL", 1)),
    # EKS API Reference, NodegroupUpdateConfig: maxUnavailable "The maximum number is 100".
    ("capacity-reservation", 5000, "auto", NodeUpdate("MINIMAL", 100)),
    ("capacity-block", 0, "auto", NodeUpdate("MINIMAL", 1)),  # "Minimum value of 1"
    ("capacity-block", 64, "none", None),
    ("on-demand", 64, "none", None),
])
def test_node_update_per_capacity_group_size_and_mode(capacity, nodes, mode, expected):
    assert node_update(capacity, nodes, mode) == expected


def test_eks_default_update_is_one_node_surge_first():
    """EKS user guide, "Understand each phase of node updates": maxUnavailable "The default
    value is one node"; the default strategy launches first (EKS API Reference,
    NodegroupUpdateConfig)."""
    assert EKS_DEFAULT_UPDATE == NodeUpdate("DEFAULT", 1)
    assert EKS_DEFAULT_UPDATE.max_unavailable <= MAX_UNAVAILABLE_LIMIT


def test_node_update_refuses_an_unknown_capacity_type_or_mode():
    with pytest.raises(ValueError, match="spot"):
        node_update("spot", 4)
    with pytest.raises(ValueError, match="sometimes"):
        node_update("capacity-block", 4, "sometimes")  # type: ignore[arg-type]
