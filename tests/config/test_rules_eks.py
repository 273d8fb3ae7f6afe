"""Rules of the EKS orchestrator (more cases: tests/orchestrators/eks/test_cluster.py)."""

from __future__ import annotations

import pytest

from tests.config import check_one_error, warnings_about

# (case, context overrides as `-c` would give them, the exact message of the one error)
BAD_INPUTS = [
    ('deployer is an STS session', {'eks.deployer_principal_arn': 'arn:aws:sts::123456789012:assumed-role/Admin/alice'},
     "error: eks.deployer_principal_arn = 'arn:aws:sts::123456789012:assumed-role/Admin/alice': must be an IAM role or user ARN like 'arn:aws:iam::123456789012:role/Admin' (an assumed-role session ARN names its role: arn:aws:iam::<account>:role/<role name>) (see https://docs.aws.amazon.com/eks/latest/userguide/access-entries.html)"),
    ('node update config not auto or none', {'eks.node_update_config': 'minimal'},
     "error: eks.node_update_config = 'minimal': must be 'auto' or 'none' (see README.md#configuration)"),
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
     "warning: eks.node_update_config = 'none': should be 'auto' (or left out): 'none' only changes the Trainium node groups of eks on reserved capacity, and on-demand node groups never get an UpdateConfig (see README.md#upgrading-a-deployed-stack)"),
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
