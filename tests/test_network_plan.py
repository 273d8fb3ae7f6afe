"""The VPC address plan shared by the config rules and the network construct."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from trn_ultracluster import network_plan
from trn_ultracluster.network_plan import (
    MIN_PRIVATE_SUBNET_MASK,
    PUBLIC_SUBNET_MASK,
    fits,
    max_nodes,
    private_subnet_mask,
    vpc_prefix_needed,
)


def test_two_roomy_private_and_two_public_subnets_fit_a_slash_16():
    assert fits(16, 2, MIN_PRIVATE_SUBNET_MASK)
    assert fits(16, 2, 18) and not fits(16, 2, 17)  # two /17s leave no room for the /24s
    assert fits(18, 2, 20) and not fits(19, 2, 20)


@pytest.mark.parametrize("vpc_prefix, azs, nodes, ips, mask", [
    (16, 2, 1, 118, MIN_PRIVATE_SUBNET_MASK),  # few nodes: at least a /20 when there is room
    (16, 2, 64, 118, 19),  # 64 x 118 + 5 = 7557 addresses
    (19, 2, 16, 118, 21),  # 16 x 118 + 5 = 1893 -> /21; a /19 cannot hold two /20s and /24s
    (16, 2, 0, 118, MIN_PRIVATE_SUBNET_MASK),
])
def test_private_subnet_mask(vpc_prefix, azs, nodes, ips, mask):
    assert private_subnet_mask(vpc_prefix, azs, nodes, ips) == mask


def test_vpc_prefix_needed_and_max_nodes():
    assert vpc_prefix_needed(2, 21) == 19  # 2 x (2048 + 256) addresses
    assert vpc_prefix_needed(2, 16) == 14  # more than any VPC (a /16 at most)
    assert max_nodes(16, 2, 118) == (2 ** 14 - 5) // 118 == 138  # a /18 private subnet per AZ
    assert max_nodes(28, 2, 118) == 0


def test_public_subnets_are_slash_24():
    assert PUBLIC_SUBNET_MASK == 24


def test_standard_library_only():
    tree = ast.parse(Path(network_plan.__file__).read_text())
    imported = {alias.name.split(".")[0] for node in ast.walk(tree)
                if isinstance(node, ast.Import) for alias in node.names}
    imported |= {node.module.split(".")[0] for node in ast.walk(tree)
                 if isinstance(node, ast.ImportFrom) and node.module}
    assert imported <= {"__future__", "math"}
