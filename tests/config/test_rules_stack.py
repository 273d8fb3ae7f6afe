"""Rules of ``stack_name``: a CloudFormation stack name that also fits the names derived
from it (the EKS cluster's, the HyperPod cluster's unless ``hyperpod.cluster_name`` is set)."""

from __future__ import annotations

import pytest

from tests.config import check_one_error, load

CFN = "https://docs.aws.amazon.com/AWSCloudFormation/latest/APIReference/API_CreateStack.html"
BAD_INPUTS = [
    ('starts with a digit', {'stack_name': '2fast'},
     f"error: stack_name = '2fast': must be 1-128 letters, digits and hyphens, starting with a letter (a CloudFormation stack name) (see {CFN})"),
    ('underscore', {'stack_name': 'trn_two'},
     f"error: stack_name = 'trn_two': must be 1-128 letters, digits and hyphens, starting with a letter (a CloudFormation stack name) (see {CFN})"),
    ('too long for the EKS cluster name', {'stack_name': 'T' * 92},
     f"error: stack_name = '{'T' * 92}': must be at most 91 characters with orchestrator 'eks': the EKS cluster is named '<stack_name>-<8 hex digits>' and EKS allows 100 (see https://docs.aws.amazon.com/eks/latest/APIReference/API_CreateCluster.html)"),
    ('named like the default stack\'s HyperPod cluster', {'stack_name': 'trn-ultracluster', 'orchestrator': 'hyperpod-eks'},
     "error: stack_name = 'trn-ultracluster': must not be 'trn-ultracluster' with a HyperPod orchestrator unless hyperpod.cluster_name is set: the default stack (TrnUltraCluster) names its HyperPod cluster so (see https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_CreateCluster.html)"),
    ('too long for the HyperPod cluster name', {'stack_name': 'T' * 64, 'orchestrator': 'hyperpod-slurm'},
     f"error: stack_name = '{'T' * 64}': must be at most 63 characters and not end with a hyphen while it also names the HyperPod cluster; or set hyperpod.cluster_name (see https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_CreateCluster.html)"),
]


@pytest.mark.parametrize("case, overrides, message", BAD_INPUTS, ids=[c[0] for c in BAD_INPUTS])
def test_bad_input_gives_one_exact_message(case, overrides, message):
    check_one_error(overrides, message)


def test_a_long_stack_name_is_fine_with_an_explicit_hyperpod_cluster_name():
    config = load({"stack_name": "T" * 80, "orchestrator": "hyperpod-slurm",
                   "hyperpod.cluster_name": "team-a"}).config
    assert (config.stack_name, config.hyperpod_cluster_name) == ("T" * 80, "team-a")


def test_the_default_stack_keeps_the_hyperpod_name_it_had_before_stack_name():
    """ClusterName is create-only: a new default name would replace running clusters."""
    config = load({}).config
    assert (config.stack_name, config.hyperpod.cluster_name) == ("TrnUltraCluster", None)
    assert config.hyperpod_cluster_name == "trn-ultracluster"
    assert config.hyperpod_settings.cluster_name == "trn-ultracluster"
    assert load({"stack_name": "TrnTwo"}).config.hyperpod_cluster_name == "TrnTwo"
