"""The EKS control plane waits for its address space: ``AWS::EKS::Cluster`` depends on every
secondary CIDR block (``AWS::EC2::VPCCidrBlock``), on ``eks`` and on ``hyperpod-eks``, whose
cluster is the same construct.

The rule (EKS user guide, "View Amazon EKS networking requirements for VPC and subnets", "VPC
requirements and considerations"): "it can take a cluster up to one hour for a CIDR block that
you associated with a VPC to be recognized. Then you can run the kubectl attach, kubectl cp,
kubectl exec, kubectl logs, and kubectl port-forward commands ... for nodes and pods in the new
CIDR block. Also, if you have Pods that operate as a webhook backend, then you must wait for
the control plane reconciliation to complete." Associated before the cluster is created, a
block is part of the VPC the control plane starts with."""

from __future__ import annotations

import pytest

from trn_ultracluster.network_plan import DOC_EKS_NEW_BLOCK, new_block_warning

EKS_PAGE = ("https://docs.aws.amazon.com/eks/latest/userguide/network-reqs.html"
            "#network-requirements-vpc")

BLOCKED = {
    "eks-4000": ({"orchestrator": "eks", "nodes.max": "4000"}),
    # the same context as tests/constructs/test_network.py: one synth per session for both
    "hyperpod-eks-2000": ({"orchestrator": "hyperpod-eks", "nodes.max": "2000"}),
}


def _depends_on(resource: dict) -> list[str]:
    depends = resource.get("DependsOn", [])
    return [depends] if isinstance(depends, str) else list(depends)


@pytest.mark.parametrize("context", BLOCKED.values(), ids=BLOCKED.keys())
def test_the_control_plane_waits_for_every_secondary_cidr_block(synth, context):
    s = synth(**context)
    blocks = s.resources("AWS::EC2::VPCCidrBlock")
    planned = s.config.address_plan.secondary_blocks
    assert planned and sorted(b["Properties"]["CidrBlock"] for b in blocks.values()) == sorted(
        planned)
    (cluster,) = s.resources("AWS::EKS::Cluster").values()
    assert sorted(blocks) == sorted(b for b in _depends_on(cluster) if b in blocks)


def test_a_cluster_without_secondary_blocks_waits_for_none(default):
    assert default.resources("AWS::EC2::VPCCidrBlock") == {}
    (cluster,) = default.resources("AWS::EKS::Cluster").values()
    assert not [d for d in _depends_on(cluster) if "Block" in d]


def test_the_warning_for_a_grow_that_adds_a_block_says_what_for_how_long_and_where_from():
    assert DOC_EKS_NEW_BLOCK == EKS_PAGE
    one = new_block_warning(["10.1.0.0/16"])
    assert one == (
        "This deploy associates a new CIDR block (10.1.0.0/16) with the VPC of a running EKS "
        "cluster: its nodes join at once, but the control plane recognizes the block only "
        "after its reconciliation, which takes up to one hour; until then kubectl attach, cp, "
        "exec, logs and port-forward fail for nodes and pods in it, and so do webhooks served "
        "by pods in it (EKS user guide, \"VPC requirements and considerations\": "
        f"{EKS_PAGE})")
    two = new_block_warning(["10.1.0.0/16", "10.2.0.0/16"])
    assert "new CIDR blocks (10.1.0.0/16, 10.2.0.0/16)" in two and "each block" in two
    with pytest.raises(ValueError):
        new_block_warning([])
