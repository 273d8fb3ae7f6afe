"""Rules of scale: the VPC's NAU ceiling (an error), quotas to raise (warnings that name the
quota), the EKS control plane past 5,000 nodes, Capacity Blocks, file system throughput."""

from __future__ import annotations

import pytest

from tests.config import (
    CAPACITY_BLOCK,
    CPU_POOL,
    TRN1_POOL,
    TRN2_POOL,
    check_one_error,
    load,
    warnings_about,
    with_pools,
)

BIG_EKS = {"nodes.max": "2000", "efa_interface_layout": "efa"}

BAD_INPUTS = [
    ('more nodes than one VPC addresses', {'nodes.max': '20000', 'efa_interface_layout': 'efa-only'},
     "error: nodes.max = 20000: must fit one VPC: 20000 nodes of 25 NAU units (1 ENA address + 8 EFA-only interfaces + 16 pods) need 501,024 NAU units, above the 256,000 one VPC may have (Network Address Usage, quota L-BB24F6E5, at its maximum): at most 10199 nodes (see https://docs.aws.amazon.com/vpc/latest/userguide/network-address-usage.html)"),
    ('NAU quota above what AWS grants', {'quotas.vpc_network_address_usage': '300000'},
     "error: quotas.vpc_network_address_usage = 300000: must be at most 256,000, the most AWS grants (vpc L-BB24F6E5, 'Network Address Usage') (see https://docs.aws.amazon.com/vpc/latest/userguide/amazon-vpc-limits.html)"),
    ('CIDR block quota above what AWS grants', {'quotas.vpc_cidr_blocks': '51'},
     "error: quotas.vpc_cidr_blocks = 51: must be at most 50, the most AWS grants (vpc L-83CA0A9D, 'IPv4 CIDR blocks per VPC') (see https://docs.aws.amazon.com/vpc/latest/userguide/amazon-vpc-limits.html)"),
    ('node group quota of 0', {'quotas.eks_nodes_per_nodegroup': '0'},
     'error: quotas.eks_nodes_per_nodegroup = 0: must be at least 1 (see https://docs.aws.amazon.com/eks/latest/userguide/service-quotas.html)'),
    ('no pod addresses', {'eks.pod_ips_per_node': '0'},
     'error: eks.pod_ips_per_node = 0: must be between 1 and 250 (see https://github.com/aws/amazon-vpc-cni-k8s#minimum_ip_target-v160)'),
]


@pytest.mark.parametrize("case, overrides, message", BAD_INPUTS, ids=[c[0] for c in BAD_INPUTS])
def test_bad_input_gives_one_exact_message(case, overrides, message):
    check_one_error(overrides, message)


def test_the_largest_eks_efa_only_cluster_one_vpc_addresses_is_accepted():
    loaded = load({"nodes.max": "10199", "efa_interface_layout": "efa-only",
                   "quotas.vpc_network_address_usage": "256000",
                   "quotas.network_interfaces": "100000"})
    plan = loaded.config.address_plan
    assert plan.nau <= 256_000 and len(plan.groups) + 1 <= 30  # and the system node group
    assert not [w for w in loaded.warnings if w.field.startswith("quotas.")]


def test_a_quota_to_raise_is_a_warning_that_names_it():
    (nau,) = warnings_about(BIG_EKS, "quotas.vpc_network_address_usage")
    assert nau.startswith("warning: quotas.vpc_network_address_usage = 64000: should be at "
                          "least 65,024 for 2,000 nodes x 32 NAU")
    assert "L-BB24F6E5" in nau and "up to 256,000" in nau and "preflight" in nau
    (enis,) = warnings_about(BIG_EKS, "quotas.network_interfaces")
    assert "16,000" in enis and "L-DF5E4CA3" in enis
    raised = {**BIG_EKS, "quotas.vpc_network_address_usage": "70000"}
    assert warnings_about(raised, "quotas.vpc_network_address_usage") == []


def test_cidr_block_and_node_group_quotas():
    many = {"nodes.max": "4000", "quotas.vpc_cidr_blocks": "1"}
    (blocks,) = warnings_about(many, "quotas.vpc_cidr_blocks")
    assert "should be at least 2" in blocks and "L-83CA0A9D" in blocks
    groups = warnings_about({"nodes.max": "2000", "quotas.eks_nodegroups_per_cluster": "3"},
                            "quotas.eks_nodegroups_per_cluster")
    assert len(groups) == 1 and "L-6D54EA21" in groups[0]


def test_past_5000_nodes_eks_is_ultra_scale():
    big = {"nodes.max": "6000", "efa_interface_layout": "efa-only",
           "quotas.vpc_network_address_usage": "256000"}
    (warning,) = warnings_about(big, "nodes.max")
    assert "ultra scale" in warning and "eks.control_plane_tier" in warning
    assert warnings_about({**big, "orchestrator": "hyperpod-slurm"}, "nodes.max") == []


def test_control_plane_tier_without_eks_is_a_warning():
    (warning,) = warnings_about({"orchestrator": "standalone",
                                 "eks.control_plane_tier": "tier-xl"}, "eks.control_plane_tier")
    assert "no EKS cluster" in warning


def test_capacity_block_past_64_nodes_is_a_warning():
    cb = {"capacity.type": "capacity-block", "capacity.reservation_id": "cr-0123456789abcdef0",
          "placement_group": "false", "nodes.max": "65"}
    (warning,) = warnings_about(cb, "nodes.max")
    assert "up to 64 instances" in warning
    assert warnings_about({**cb, "nodes.max": "64"}, "nodes.max") == []


def test_file_system_too_slow_for_the_cluster_is_a_warning():
    (warning,) = warnings_about({"nodes.max": "64"}, "fsx.storage_capacity_gib")
    assert "should give each of the 64 nodes at least 10 MB/s, not 4.6" in warning
    assert "640 MB/s in all" in warning
    assert warnings_about({"nodes.max": "16"}, "fsx.storage_capacity_gib") == []


# --- per pool ---------------------------------------------------------------------------

def test_quota_warnings_name_each_pools_part():
    config = with_pools({**TRN1_POOL, "nodes": {"min": 0, "desired": 0, "max": 300}},
                        {**CPU_POOL, "nodes": {"min": 0, "desired": 0, "max": 3000}})
    (enis,) = warnings_about(config, "quotas.network_interfaces")
    assert enis.startswith("warning: quotas.network_interfaces = 5000: should be at least 5,400 "
                           "for trn1: 300 x 8 + cpu: 3,000 x 1 interfaces in use2-az3")


def test_the_control_plane_counts_every_pools_nodes():
    big = with_pools({**TRN1_POOL, "nodes": {"min": 0, "desired": 0, "max": 3000}},
                     {**CPU_POOL, "nodes": {"min": 0, "desired": 0, "max": 2100}},
                     **{"quotas.vpc_network_address_usage": "256000",
                        "quotas.network_interfaces": "100000"})
    (warning,) = warnings_about(big, "pools")[-1:]
    assert warning.startswith("warning: pools = {'trn1': 3000, 'cpu': 2100}: should be at most "
                              "5,000 on one Kubernetes cluster (the pools' nodes.max together: "
                              "5,100)")
    assert warnings_about(big, "nodes.max") == []


def test_capacity_blocks_per_pool_and_shared():
    block = {**TRN2_POOL, "capacity": CAPACITY_BLOCK, "placement_group": False}
    (warning,) = warnings_about(with_pools(TRN1_POOL, {**block, "nodes": {
        "min": 0, "desired": 0, "max": 68}}), "pools[1].nodes.max")
    assert warning.startswith("warning: pools[1].nodes.max = 68: should be at most 64 with "
                              "pools[1].capacity.type 'capacity-block'")
    two = with_pools(TRN1_POOL, {**block, "nodes": {"min": 0, "desired": 0, "max": 40}},
                     {**block, "name": "trn2b", "nodes": {"min": 0, "desired": 0, "max": 40}})
    assert warnings_about(two, "pools[2].capacity.reservation_id") == [
        "warning: pools[2].capacity.reservation_id = 'cr-0123456789abcdef0': should hold the "
        "pools that share it: trn2, trn2b take up to 80 instances together, and one Capacity "
        "Block holds up to 64 (see https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/"
        "capacity-blocks-launch.html)"]


def test_the_file_systems_clients_are_every_pools_nodes():
    """6 nodes of three pools share 293 MB/s: the CPU nodes read the file system too."""
    config = with_pools({**TRN1_POOL, "nodes": {"min": 0, "desired": 0, "max": 20}},
                        {**CPU_POOL, "nodes": {"min": 0, "desired": 0, "max": 10}})
    (warning,) = warnings_about(config, "fsx.storage_capacity_gib")
    assert "should give each of the 30 nodes at least 10 MB/s, not 9.8" in warning
