"""Rules of the EKS orchestrator (more cases: tests/orchestrators/eks/test_cluster.py)."""

from __future__ import annotations

import pytest

from tests.config import (
    CPU_POOL,
    TRN1_POOL,
    TRN2_POOL,
    check_one_error,
    warnings_about,
    with_pools,
)

# (case, context overrides as `-c` would give them, the exact message of the one error)
BAD_INPUTS = [
    ('deployer is an STS session', {'eks.deployer_principal_arn': 'arn:aws:sts::123456789012:assumed-role/Admin/alice'},
     "error: eks.deployer_principal_arn = 'arn:aws:sts::123456789012:assumed-role/Admin/alice': must be an IAM role or user ARN like 'arn:aws:iam::123456789012:role/Admin' (an assumed-role session ARN names its role: arn:aws:iam::<account>:role/<role name>) (see https://docs.aws.amazon.com/eks/latest/userguide/access-entries.html)"),
    ('node update config not auto or none', {'eks.node_update_config': 'minimal'},
     "error: eks.node_update_config = 'minimal': must be 'auto' or 'none' (see docs/configuration.md)"),
]


@pytest.mark.parametrize("case, overrides, message", BAD_INPUTS, ids=[c[0] for c in BAD_INPUTS])
def test_bad_input_gives_one_exact_message(case, overrides, message):
    check_one_error(overrides, message)


# (case, context overrides, field, the exact warning about it; the configuration stays valid)
WARNINGS = [
    ('API endpoint open to the internet', {}, 'eks.public_access_cidrs',
     "warning: eks.public_access_cidrs = '0.0.0.0/0': should list your own networks instead: this block opens the Kubernetes API endpoint to the whole internet (see https://docs.aws.amazon.com/eks/latest/userguide/cluster-endpoint.html)"),
    ('no cluster admin', {}, 'eks.admin_role_arn',
     'warning: eks.admin_role_arn = None: should be set, or eks.deployer_principal_arn (make deploy sets it): with neither, only the CloudFormation execution role will be cluster admin; deploy with make deploy, or set the ARN of the IAM role you use with kubectl (see https://docs.aws.amazon.com/eks/latest/userguide/access-entries.html)'),
    ('node update config none on on-demand', {'eks.node_update_config': 'none'},
     'eks.node_update_config',
     "warning: eks.node_update_config = 'none': should be 'auto' (or left out): 'none' only changes the Trainium node groups of eks on reserved capacity, and on-demand node groups never get an UpdateConfig (see docs/deploy.md#upgrading-a-deployed-stack)"),
]


def test_node_update_config_none_on_reserved_capacity_is_quiet():
    """Step 1 of the two-step upgrade of a reserved stack: no warning."""
    reserved = {"capacity.type": "capacity-reservation",
                "capacity.reservation_id": "cr-0123456789abcdef0",
                "eks.node_update_config": "none"}
    assert warnings_about(reserved, "eks.node_update_config") == []
    (warning,) = warnings_about({"orchestrator": "hyperpod-eks",
                                 "eks.node_update_config": "none"}, "eks.node_update_config")
    assert "HyperPod runs the nodes of hyperpod-eks" in warning


@pytest.mark.parametrize("case, overrides, field, message", WARNINGS, ids=[c[0] for c in WARNINGS])
def test_warning_gives_one_exact_message(case, overrides, field, message):
    assert warnings_about(overrides, field) == [message]


def test_an_efa_only_pool_needs_a_vpc_cni_that_handles_it():
    check_one_error(with_pools(TRN1_POOL, TRN2_POOL, CPU_POOL,
                               **{"eks.addon_versions.vpc_cni": "v1.18.0-eksbuild.1"}),
                    "error: eks.addon_versions.vpc_cni = 'v1.18.0-eksbuild.1': must be v1.19.0 "
                    "or newer with pools[1].efa_interface_layout 'efa-only' (older CNIs fail on "
                    "interfaces without an IP address) (see "
                    "https://docs.aws.amazon.com/eks/latest/userguide/eks-add-ons.html)")


def test_node_update_config_none_applies_where_any_pool_is_on_reserved_capacity():
    odcr = {**TRN2_POOL, "placement_group": False, "capacity": {
        "type": "capacity-reservation", "reservation_id": "cr-0123456789abcdef0"}}
    none = {"eks.node_update_config": "none"}
    assert warnings_about(with_pools(TRN1_POOL, odcr, **none), "eks.node_update_config") == []
    assert warnings_about(with_pools(TRN1_POOL, TRN2_POOL, **none), "eks.node_update_config")
