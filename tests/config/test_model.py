"""The model: defaults, derived values, frozen, YAML's float versions, documented keys."""

from __future__ import annotations

import pytest

from tests.config import load
from tests.conftest import REPO_ROOT
from trn_ultracluster.config import (
    CapacityConfig,
    ClusterConfig,
    FsxConfig,
    NodeCounts,
    QuotasConfig,
    parse_config,
)


def test_config_is_frozen():
    c = load({}).config
    with pytest.raises(Exception):
        c.instance_type = "trn2.48xlarge"


def test_address_plan_counts_what_each_node_uses():
    eks = load({"nodes.max": "64", "nodes.desired": "64"}).config
    # 8 EFA interfaces with an address + eks.pod_ips_per_node (16) pod addresses
    assert eks.node_addresses.ips == 24 and eks.address_plan.private_mask == 20
    assert load({}).config.address_plan.private_mask == 20  # as every earlier version
    efa_only = load({"efa_interface_layout": "efa-only"}).config
    assert efa_only.node_addresses.ips == 17  # only the ENA primary takes an address
    slurm = load({"orchestrator": "hyperpod-slurm"}).config
    assert slurm.node_addresses.ips == 8  # no pods: one address per network card
    assert load({"eks.pod_ips_per_node": "32"}).config.node_addresses.pod_ips == 32


def test_yaml_float_lustre_version_keeps_two_decimals():
    assert parse_config({"fsx": {"lustre_version": 2.12}}).config.fsx.lustre_version == "2.12"


def test_known_float_versions_still_read_as_text():
    config = load({"fsx.lustre_version": 2.1, "fsx.deployment_type": "PERSISTENT_1",
                   "fsx.per_unit_storage_throughput": "200", "fsx.data_repository": "null",
                   "data_removal_policy": "destroy"}).config
    assert config.fsx.lustre_version == "2.10"


def test_hyperpod_worker_counts_default_to_nodes_desired():
    c = parse_config({"orchestrator": "hyperpod-slurm", "nodes": {"desired": 2, "max": 6},
                      "hyperpod": {"worker_groups": [{"name": "a"},
                                                     {"name": "b", "partition": "b",
                                                      "instance_count": 4}]}}).config
    assert c.hyperpod_worker_counts == {"a": 2, "b": 4}


def test_hyperpod_worker_parts_are_the_plans_groups_per_worker_group():
    """Two worker groups of 400 trn1.32xlarge on Slurm (8 addresses each): compute subnet 0,
    a /20, holds 479; the first group fits it, the second fills it and goes on in the next
    subnet, and a worker group of 0 instances keeps one empty part."""
    c = parse_config({"orchestrator": "hyperpod-slurm", "nodes": {"desired": 400, "max": 800},
                      "hyperpod": {"worker_groups": [
                          {"name": "a"}, {"name": "b", "partition": "b"},
                          {"name": "c", "partition": "c", "instance_count": 0}]}}).config
    parts = c.hyperpod_worker_parts
    assert {k: [(g.nodes, g.subnet) for g in v] for k, v in parts.items()} == {
        "a": [(400, 0)], "b": [(79, 0), (321, 1)], "c": [(0, 1)]}
    # the plan's subnets, sized for nodes.max, hold them
    assert [s.capacity for s in c.address_plan.compute_subnets] == [479, 4095]


def test_readme_documents_every_configuration_key():
    readme = (REPO_ROOT / "README.md").read_text()
    keys = [f"`{k}" for k in ClusterConfig.model_fields]
    keys += [f"`fsx.{k}" for k in FsxConfig.model_fields]
    keys += [f"nodes.{k}" for k in NodeCounts.model_fields]
    keys += [f"`capacity.{k}" for k in CapacityConfig.model_fields]
    keys += [f"`quotas.{k}" for k in QuotasConfig.model_fields]
    keys += [f"`eks.{k}" for k in ("pod_ips_per_node", "control_plane_tier",
                                          "node_update_config")]
    missing = [k for k in keys if k not in readme]
    assert not missing, f"README.md does not document {missing}"
