"""How the EKS managed node groups take a change (trn_ultracluster.orchestrators.eks.node_updates):
they follow the control plane's Kubernetes version, after it, and roll without surge
instances on reserved capacity. No synth of its own: the configurations are the ones
tests/orchestrators/eks/test_cluster.py and the HyperPod on EKS tests synthesize."""

from __future__ import annotations

import pytest

from tests.conftest import REPO_ROOT, profile_path
from trn_ultracluster.orchestrators.eks.node_updates import (
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


def test_on_demand_trainium_nodes_roll_with_surge(default, ultra2000):
    """On-Demand: EKS's default strategy (new nodes first, capacity kept: EKS user guide,
    "Understand each phase of node updates"), a tenth of each group at a time."""
    (group,) = _trainium(default)
    assert group["UpdateConfig"] == {"MaxUnavailable": 1, "UpdateStrategy": "DEFAULT"}
    for g in _trainium(ultra2000):
        assert g["UpdateConfig"] == {
            "MaxUnavailable": -(-g["ScalingConfig"]["MaxSize"] // 10),
            "UpdateStrategy": "DEFAULT"}
        assert g["UpdateConfig"]["MaxUnavailable"] <= MAX_UNAVAILABLE_LIMIT


def test_reserved_trainium_nodes_roll_without_surge(trn2):
    """A Capacity Block (and a Capacity Reservation) sized to the cluster has no room for a
    surge instance: ``MINIMAL`` terminates a node before launching its replacement ("total
    capacity never increases beyond your configured quantity", EKS user guide, "Understand
    each phase of node updates"). On main the group had no ``UpdateConfig``: EKS's default
    strategy, surge first."""
    (group,) = _trainium(trn2)
    assert group["CapacityType"] == "CAPACITY_BLOCK"
    assert group["UpdateConfig"]["UpdateStrategy"] == "MINIMAL"


def test_the_system_nodegroup_keeps_eks_defaults(default):
    """The two on-demand system nodes keep EKS's default update (one at a time, surge
    first): the add-ons' controllers stay up while they roll."""
    system = [r["Properties"] for k, r in default.resources("AWS::EKS::Nodegroup").items()
              if "Trainium" not in k]
    assert [("UpdateConfig" in p) for p in system] == [False]


@pytest.mark.parametrize("capacity, nodes, expected", [
    ("on-demand", 1, NodeUpdate("DEFAULT", 1)),
    ("on-demand", 10, NodeUpdate("DEFAULT", 1)),
    ("on-demand", 11, NodeUpdate("DEFAULT", 2)),
    ("on-demand", 450, NodeUpdate("DEFAULT", 45)),
    ("capacity-reservation", 64, NodeUpdate("MINIMAL", 7)),
    ("capacity-block", 4, NodeUpdate("MINIMAL", 1)),
    # EKS API Reference, NodegroupUpdateConfig: maxUnavailable "The maximum number is 100".
    ("capacity-reservation", 5000, NodeUpdate("MINIMAL", 100)),
    ("on-demand", 0, NodeUpdate("DEFAULT", 1)),  # maxUnavailable: "Minimum value of 1"
])
def test_node_update_per_capacity_and_group_size(capacity, nodes, expected):
    assert node_update(capacity, nodes) == expected


def test_node_update_refuses_an_unknown_capacity_type():
    with pytest.raises(ValueError, match="spot"):
        node_update("spot", 4)
