"""Rules of the HyperPod on EKS orchestrator: the bad combinations refused before synth
(an instance type HyperPod does not offer, a Kubernetes version HyperPod does not support, a
Capacity Block instead of a training plan, a VPC CNI below HyperPod's minimum, a Region
without the health-monitoring agent's image), and the ``eks``/``hyperpod`` rules that apply to
it too."""

from __future__ import annotations

import re

import pytest

from tests.config import check_one_error, errors, load
from trn_ultracluster.config.facts import (
    DEFAULT_KUBERNETES_VERSION,
    EKS_KUBERNETES_VERSIONS,
    HYPERPOD_EKS_KUBERNETES_VERSIONS,
)

HP = {"orchestrator": "hyperpod-eks"}
PREREQ = "https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-eks-prerequisites.html"

# (case, context overrides as `-c` would give them, the exact message of the one error)
BAD_INPUTS = [
    ("instance type HyperPod does not offer", {**HP, "instance_type": "trn1.2xlarge", "nodes.max": "1"},
     "error: orchestrator = 'hyperpod-eks': must be 'eks' or 'standalone' for trn1.2xlarge: SageMaker HyperPod offers only 'trn1.32xlarge', 'trn1n.32xlarge', 'trn2.3xlarge' or 'trn2.48xlarge' (or choose one of those instance types) (see https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod.html)"),
    ("type the Neuron device plugin of HyperPod's chart does not select",
     {**HP, "instance_type": "trn2.3xlarge", "az_ids": "sae1-az1,sae1-az2"},
     "error: orchestrator = 'hyperpod-eks': must be 'hyperpod-slurm', 'eks' or 'standalone' for trn2.3xlarge: the Neuron device plugin of SageMaker HyperPod's Helm chart runs only on ml.trn1.2xlarge, ml.trn1.32xlarge, ml.trn1n.32xlarge, ml.trn2.48xlarge, so ml.trn2.3xlarge nodes would offer no NeuronCores to jobs (see https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-eks-install-packages-using-helm-chart.html)"),
    ("Kubernetes version HyperPod does not support", {**HP, "eks.kubernetes_version": "1.36"},
     f"error: eks.kubernetes_version = '1.36': must be one of '1.30', '1.31', '1.32', '1.33', '1.34' or '1.35' with orchestrator 'hyperpod-eks' (the versions SageMaker HyperPod supports) (see {PREREQ})"),
    ("Capacity Block instead of a training plan",
     {**HP, "capacity.type": "capacity-block", "capacity.reservation_id": "cr-0123456789abcdef0",
      "placement_group": "false"},
     "error: capacity.type = 'capacity-block': must be 'on-demand' with orchestrator 'hyperpod-eks': HyperPod does not launch into EC2 capacity reservations; reserve capacity with a SageMaker training plan (hyperpod.training_plan_arn) (see https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_ClusterInstanceGroupSpecification.html)"),
    ("VPC CNI below HyperPod's minimum", {**HP, "eks.addon_versions.vpc_cni": "v1.18.2-eksbuild.1"},
     f"error: eks.addon_versions.vpc_cni = 'v1.18.2-eksbuild.1': must be v1.18.3 or newer with orchestrator 'hyperpod-eks' (SageMaker HyperPod's minimum) (see {PREREQ})"),
    ("Region without the health-monitoring agent", {**HP, "az_ids": "apne2-az1,apne2-az2"},
     "error: az_ids = ['apne2-az1', 'apne2-az2']: must be in a Region where HyperPod's health-monitoring agent image is published (ap-northeast-1, ap-south-1, ap-southeast-1, ap-southeast-2, ap-southeast-3, ap-southeast-4, ca-central-1, eu-central-1, eu-north-1, eu-south-2, eu-west-1, eu-west-2, sa-east-1, us-east-1, us-east-2, us-west-1, us-west-2) with orchestrator 'hyperpod-eks', not ap-northeast-2 (see https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-eks-install-packages-using-helm-chart.html)"),
    ("too many TrainJob restarts", {**HP, "hyperpod.job_max_restarts": "101"},
     "error: hyperpod.job_max_restarts = 101: must be between 0 and 100 (see docs/hyperpod-eks.md#auto-resume)"),
    ("a Kubernetes version without a Neuron AMI pin", {"eks.kubernetes_version": "1.30"},
     "error: eks.kubernetes_version = '1.30': must be '1.34', '1.35' or '1.36' or null (the versions with an EKS Neuron AMI and a pinned kubectl layer) (see https://docs.aws.amazon.com/eks/latest/userguide/kubernetes-versions.html)"),
]


@pytest.mark.parametrize("case, overrides, message", BAD_INPUTS, ids=[c[0] for c in BAD_INPUTS])
def test_bad_input_gives_one_exact_message(case, overrides, message):
    check_one_error(overrides, message)


def test_the_default_version_is_one_hyperpod_and_the_neuron_ami_both_support():
    default = load(HP).config
    assert default.kubernetes_version == DEFAULT_KUBERNETES_VERSION["hyperpod-eks"] == "1.34"
    assert default.kubernetes_version in set(HYPERPOD_EKS_KUBERNETES_VERSIONS) & set(EKS_KUBERNETES_VERSIONS)
    assert load({}).config.kubernetes_version == "1.36"  # the eks orchestrator keeps its own
    assert load({"orchestrator": "hyperpod-slurm"}).config.kubernetes_version is None


def test_hyperpod_takes_1_35_and_no_longer_1_28_or_1_29():
    """1.35 has a Neuron AMI and a kubectl layer and HyperPod supports it; 1.28 and 1.29 left
    HyperPod's list (they are not in the stack's either, so the eks rule refuses them too)."""
    assert load({**HP, "eks.kubernetes_version": "1.35"}).config.kubernetes_version == "1.35"
    for old in ("1.28", "1.29"):
        hyperpod = [e for e in errors({**HP, "eks.kubernetes_version": old})
                    if "with orchestrator 'hyperpod-eks'" in e]
        assert hyperpod == [f"error: eks.kubernetes_version = '{old}': must be one of '1.30', "
                            "'1.31', '1.32', '1.33', '1.34' or '1.35' with orchestrator "
                            "'hyperpod-eks' (the versions SageMaker HyperPod supports) "
                            f"(see {PREREQ})"]


def test_yaml_floats_read_as_the_versions_they_name():
    """YAML reads ``1.30`` as 1.3: it must still mean 1.30, and 1.34 must mean 1.34."""
    assert load({**HP, "eks.kubernetes_version": 1.34}).config.kubernetes_version == "1.34"
    assert "'1.30'" in errors({"eks.kubernetes_version": 1.3})[0]


def test_slurm_only_keys_do_not_apply():
    """No controller, login node or partition on EKS: their Slurm rules stay quiet, and a
    worker group may be called what a Slurm node group is."""
    config = load({**HP, "hyperpod.controller_instance_type": "c5.xlarge",
                   "hyperpod.worker_groups": [{"name": "controller", "partition": "dev"}]}).config
    assert config.hyperpod_worker_counts == {"controller": 1}


@pytest.mark.parametrize("overrides, field", [
    ({"eks.training_namespace": "Bad_NS"}, "eks.training_namespace"),
    ({"hyperpod.cluster_name": "bad_name"}, "hyperpod.cluster_name"),
    ({"hyperpod.worker_groups": [{"instance_count": 5}]}, "hyperpod.worker_groups"),
    ({"hyperpod.training_plan_arn": "plan-1"}, "hyperpod.training_plan_arn"),
])
def test_the_eks_and_hyperpod_rules_apply(overrides, field):
    assert any(f"error: {field} = " in line for line in errors({**HP, **overrides}))


def test_neuron_plugin_types_are_those_of_the_vendored_chart():
    """HYPERPOD_NEURON_PLUGIN_TYPES is the Trainium part of the node affinity of the Neuron
    device plugin the stack installs on HyperPod on EKS: update both together."""
    import yaml

    from trn_ultracluster.config.facts import HYPERPOD_NEURON_PLUGIN_TYPES
    from trn_ultracluster.orchestrators.hyperpod_eks.versions import DEPENDENCIES_CHART

    template = DEPENDENCIES_CHART / "charts/neuron-device-plugin/templates/k8s-neuron-device-plugin.yaml"
    daemonset = yaml.safe_load(re.sub(r"\{\{.*?\}\}", "helm", template.read_text()))
    (term,) = daemonset["spec"]["template"]["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    (expression,) = term["matchExpressions"]
    assert expression["key"] == "node.kubernetes.io/instance-type"
    trainium = tuple(v for v in expression["values"] if v.startswith("ml.trn"))
    assert trainium == HYPERPOD_NEURON_PLUGIN_TYPES


def test_hyperpod_slurm_and_eks_accept_the_one_chip_type():
    """Only HyperPod on EKS needs the chart's Neuron device plugin: HyperPod with Slurm and
    EKS take trn2.3xlarge."""
    for orchestrator in ("hyperpod-slurm", "eks"):
        config = load({"orchestrator": orchestrator, "instance_type": "trn2.3xlarge",
                       "az_ids": "sae1-az1,sae1-az2"}).config
        assert config.instance.name == "trn2.3xlarge"
