"""The VPC address plan (trn_ultracluster.network_plan): what a node takes, which subnets
hold the nodes, the groups, and the VPC's NAU ceiling."""

from __future__ import annotations

import ast
import ipaddress
from pathlib import Path

import pytest

from trn_ultracluster import network_plan
from trn_ultracluster.network_plan import (
    NAU_MAX,
    SERVICES_NAU,
    SUBNET_RESERVED_IPS,
    PlanError,
    candidate_blocks,
    largest_cluster,
    node_addresses,
    plan,
    private_mask,
    split,
    spread,
    subnet0_reserve,
)

ORCHESTRATORS = ("eks", "hyperpod-slurm", "hyperpod-eks", "standalone")
LAYOUTS = ("efa", "efa-only")
TRN1 = {"network_cards": 8, "efa_interfaces": 8}
TRN2 = {"network_cards": 16, "efa_interfaces": 16}


def _plan(orchestrator: str, layout: str, nodes: int, *, kind=TRN1, pods=16, group=450,
          cidr="10.0.0.0/16", **kw):
    return plan(vpc_cidr=cidr, az_count=2, nodes=nodes,
                per_node=node_addresses(orchestrator, layout, pod_ips=pods, **kind),
                group_size=group, **kw)


@pytest.mark.parametrize("orchestrator, layout, ips, nau, interfaces", [
    ("standalone", "efa", 8, 16, 8),  # one EFA interface with an address per card
    ("standalone", "efa-only", 1, 9, 9),  # ENA primary + 8 EFA-only interfaces (1 NAU each)
    ("eks", "efa", 8 + 16, 16 + 16, 8),  # + MINIMUM_IP_TARGET pod addresses
    ("eks", "efa-only", 1 + 16, 9 + 16, 9),
    ("hyperpod-slurm", "efa", 8, 16, 8),  # HyperPod: one address per network card
    ("hyperpod-slurm", "efa-only", 8, 16, 8),  # HyperPod makes its own interfaces
    ("hyperpod-eks", "efa", 50 + 7, 57 + 8, 8),  # 50 on the primary card + 1 on each other
])
def test_node_addresses_count_what_each_orchestrator_uses(orchestrator, layout, ips, nau,
                                                          interfaces):
    per = node_addresses(orchestrator, layout, pod_ips=16, **TRN1)
    assert (per.ips, per.nau, per.interfaces) == (ips, nau, interfaces)


@pytest.mark.parametrize("orchestrator, layout, ips, nau, interfaces", [
    ("standalone", "efa", 1, 2, 1),  # the one EFA interface holds the node's address
    ("standalone", "efa-only", 1, 2, 2),  # ENA primary + 1 EFA-only interface on card 0
    ("eks", "efa", 1 + 16, 2 + 16, 1),
    ("hyperpod-slurm", "efa", 1, 2, 1),
    ("hyperpod-eks", "efa", 50, 51, 1),
])
def test_node_addresses_of_a_one_card_efa_type(orchestrator, layout, ips, nau, interfaces):
    """trn2.3xlarge: one network card with one EFA interface."""
    per = node_addresses(orchestrator, layout, 1, 1, pod_ips=16)
    assert (per.ips, per.nau, per.interfaces) == (ips, nau, interfaces)
    assert "other 0" not in per.rule


def test_no_pod_addresses_off_kubernetes_and_one_interface_without_efa():
    assert node_addresses("standalone", "efa", 8, 8, pod_ips=200).pod_ips == 0
    assert node_addresses("hyperpod-slurm", "efa", 8, 8, pod_ips=200).pod_ips == 0
    plain = node_addresses("eks", "efa-only", 1, 0, pod_ips=16)
    assert (plain.interface_ips, plain.interfaces, plain.nau) == (1, 1, 17)


def test_private_subnets_stay_slash_20_where_they_fit():
    assert private_mask(16, 2) == 20
    assert private_mask(19, 2) == 21  # a /19 cannot hold two /20s and two /24s
    with pytest.raises(PlanError):
        private_mask(28, 2)


@pytest.mark.parametrize("orchestrator", ORCHESTRATORS)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("kind", [TRN1, TRN2], ids=["8 cards", "16 cards"])
def test_every_node_of_2000_fits_its_subnet(orchestrator, layout, kind):
    group = 450 if orchestrator == "eks" else 6758
    p = _plan(orchestrator, layout, 2000, kind=kind, group=group)
    assert sum(g.nodes for g in p.groups) == 2000
    for i, subnet in enumerate(p.compute_subnets):
        net = ipaddress.ip_network(subnet.cidr)
        held = sum(g.nodes for g in p.groups if g.subnet == i)
        reserved = SUBNET_RESERVED_IPS + (subnet0_reserve(p.private_mask) if i == 0 else 0)
        assert held * p.per_node.ips + reserved <= net.num_addresses
        assert net.subnet_of(ipaddress.ip_network(subnet.block))
    assert all(g.nodes <= group for g in p.groups)


def test_compute_subnets_do_not_overlap_each_other_or_the_vpc_subnets():
    p = _plan("hyperpod-eks", "efa", 2000, group=6758)
    nets = [ipaddress.ip_network(s.cidr) for s in p.compute_subnets]
    used = ipaddress.ip_network("10.0.16.0/20"), ipaddress.ip_network("10.0.32.0/23")
    for i, a in enumerate(nets):
        assert not any(a.overlaps(b) for b in nets[i + 1:])
        if i:
            assert not any(a.overlaps(u) for u in used)
    assert p.secondary_blocks == ("10.1.0.0/16",)  # the primary is full first


def test_a_larger_cluster_keeps_the_subnets_and_groups_of_a_smaller_one():
    small, large = _plan("eks", "efa", 700), _plan("eks", "efa", 5000)
    assert large.compute_subnets[:len(small.compute_subnets) - 1] == \
        small.compute_subnets[:-1]
    assert [s.cidr for s in large.compute_subnets][:len(small.compute_subnets)] == \
        [s.cidr for s in small.compute_subnets]
    full = small.groups[:-1]  # every group but the last keeps its size and subnet
    assert large.groups[:len(full)] == full


def test_eks_groups_hold_at_most_450_nodes():
    p = _plan("eks", "efa-only", 2000)
    assert max(g.nodes for g in p.groups) == 450
    assert len(p.groups) == 5


def test_nau_ceiling_refuses_a_cluster_one_vpc_cannot_address():
    per = node_addresses("eks", "efa-only", pod_ips=16, **TRN1)
    most = (NAU_MAX - SERVICES_NAU) // per.nau
    assert 10_000 <= most <= 10_300  # on the order of 10,000 trn1 nodes (160,000 chips)
    assert _plan("eks", "efa-only", most).nau <= NAU_MAX
    with pytest.raises(PlanError) as err:
        _plan("eks", "efa-only", most + 1)
    assert err.value.limit == "nau" and err.value.most == most
    assert "L-BB24F6E5" in str(err.value) and "256,000" in str(err.value)


def test_explicit_secondary_blocks_bound_the_address_space():
    with pytest.raises(PlanError) as err:
        _plan("hyperpod-eks", "efa", 2000, group=6758, secondary_cidrs=())
    assert err.value.limit == "address space" and err.value.most < 2000
    p = _plan("hyperpod-eks", "efa", 2000, group=6758, secondary_cidrs=("100.64.0.0/16",))
    assert p.secondary_blocks == ("100.64.0.0/16",)


def test_candidate_blocks_follow_the_association_rules():
    assert list(candidate_blocks("10.0.0.0/16"))[:2] == ["10.1.0.0/16", "10.2.0.0/16"]
    after_10_1 = list(candidate_blocks("10.1.0.0/16"))
    assert "10.0.0.0/16" not in after_10_1  # a block in 10.0.0.0/15 forbids 10.0.0.0/16
    assert after_10_1[254] == "100.64.0.0/16"  # then RFC 6598 space
    assert list(candidate_blocks("192.168.0.0/16"))[0] == "100.64.0.0/16"
    assert not any(b.startswith(("172.", "192.168.")) for b in candidate_blocks("10.0.0.0/16"))


def test_nodes_beside_the_file_system_are_those_in_its_block():
    p = _plan("hyperpod-eks", "efa", 2000, group=6758)
    # 57 addresses a node: the primary /16 holds 67 + 574 + 287 + 71 of them (its /20 less
    # the reserve, then a /17, a /18 and a /20); the other 1,001 are in 10.1.0.0/16
    assert [g.nodes for g in p.groups] == [67, 574, 287, 71, 1001]
    assert p.nodes_beside_file_system == 999


def test_split_keeps_each_group_in_one_subnet_and_refuses_too_many():
    assert [[(g.nodes, g.subnet) for g in gs] for gs in split([5, 4], [6, 10], 3)] == \
        [[(3, 0), (2, 0)], [(1, 0), (3, 1)]]
    with pytest.raises(PlanError):
        split([17], [6, 10], 100)


def test_spread_fills_groups_in_order():
    assert spread(500, [450, 450, 100]) == [450, 50, 0]
    with pytest.raises(ValueError):
        spread(1001, [450, 450, 100])


def test_largest_cluster_is_a_binary_search():
    assert largest_cluster(lambda n: n <= 1234, 100_000) == 1234
    assert largest_cluster(lambda n: False, 10) == 0


def test_standard_library_only():
    imported = set()
    for path in Path(network_plan.__file__).parent.glob("*.py"):
        tree = ast.parse(path.read_text())
        imported |= {alias.name for node in ast.walk(tree)
                     if isinstance(node, ast.Import) for alias in node.names}
        imported |= {node.module for node in ast.walk(tree)
                     if isinstance(node, ast.ImportFrom) and node.module}
    own = {name for name in imported if name.startswith("trn_ultracluster.network_plan")}
    assert {name.split(".")[0] for name in imported - own} <= {
        "__future__", "collections", "dataclasses", "ipaddress"}
