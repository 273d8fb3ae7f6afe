"""SageMaker HyperPod, Amazon EKS and Kubernetes: names, versions and ranges. Each fact with its source (the package docstring says more)."""

from __future__ import annotations

import re

# --- SageMaker HyperPod ------------------------------------------------------------------
# Patterns and ranges below are botocore 1.44.5's SageMaker model
# (botocore/data/sagemaker/2017-07-24/service-2.json): shapes ClusterName,
# ClusterInstanceGroupName, ClusterPartitionNames, ClusterInstanceCount (0-6758),
# ClusterEbsVolumeSizeInGB (1-16384) and TrainingPlanArn; the CloudFormation schema of
# AWS::SageMaker::Cluster (as bundled with cfn-lint 1.58.0) has the same.
STACK_NAME_RE = re.compile(r"^[A-Za-z][-A-Za-z0-9]*\Z")
STACK_NAME_MAX_CHARS = 128
"""CloudFormation stack names: "can contain only alphanumeric characters (case sensitive) and
hyphens. It must start with an alphabetical character and can't be longer than 128
characters"; unique per account and Region (CloudFormation API reference, CreateStack
``StackName``, DOC_CFN_STACK_NAME)."""
EKS_CLUSTER_NAME_MAX_CHARS = 100
"""EKS cluster names: letters, digits, ``-`` and ``_``, at most 100 characters (EKS API
reference, CreateCluster ``name``). The stack names its cluster ``<stack name>-<8 hex>``
(:func:`trn_ultracluster.constructs.names.stack_unique_name`)."""
HYPERPOD_NAME_MAX_CHARS = 63
HYPERPOD_NAME_RE = re.compile(r"^[a-zA-Z0-9](-*[a-zA-Z0-9])*\Z")
HYPERPOD_TYPE_RE = re.compile(r"^ml\.[a-z0-9-]+\.[a-z0-9]+\Z")
TRAINING_PLAN_RE = re.compile(r"^arn:aws[a-z\-]*:sagemaker:[a-z0-9\-]*:[0-9]{12}:training-plan/.+\Z")
HYPERPOD_MAX_INSTANCE_COUNT = 6758
HYPERPOD_EBS_GIB_RANGE = (1, 16384)
"""Size of a worker's extra EBS volume, GiB (``ClusterEbsVolumeSizeInGB``)."""

# --- Amazon EKS and Kubernetes -----------------------------------------------------------

IAM_ROLE_ARN_RE = re.compile(r"^arn:aws[a-z-]*:iam::[0-9]{12}:role/[\w+=,.@/-]{1,512}\Z")
IAM_PRINCIPAL_ARN_RE = re.compile(
    r"^arn:aws[a-z-]*:iam::[0-9]{12}:(role|user)/[\w+=,.@/-]{1,512}\Z")
"""IAM role and user ARNs (names of letters, digits and ``+=,.@_-``, with an optional path):
IAM user guide, "IAM identifiers"; EKS access entries take either, a role with its path
(EKS user guide, "Create access entries")."""
ADDON_VERSION_RE = re.compile(r"^v(\d+)\.(\d+)\.(\d+)-eksbuild\.\d+\Z")
DNS_LABEL_RE = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?\Z")
INSTANCE_TYPE_RE = re.compile(r"^[a-z][a-z0-9-]*\.[a-z0-9-]+\Z")
EKS_KUBERNETES_VERSIONS = ("1.34", "1.35", "1.36")
"""Kubernetes versions the stack can build an EKS cluster with: each has an EKS AL2023 Neuron
AMI (awslabs/amazon-eks-ami ``CHANGELOG.md`` @ 81fec2e8, 2026-07-23, release v20260714:
``amazon-eks-node-al2023-x86_64-neuron-1.34-v20260714``, ``-1.35-v20260714`` and
``-1.36-v20260714``; the newest 1.36 name read is
``amazon-eks-node-al2023-x86_64-neuron-1.36-v20260903``, and release v20261119's AMI table
still lists AL2023_x86_64_NEURON source AMIs for "K8s 1.33 – 1.35" and "K8s 1.36 – 1.37"), an
``aws_eks_v2.KubernetesVersion`` in aws-cdk-lib 2.275.0 (V1_25 .. V1_36) and a pinned kubectl
Lambda layer (``aws-cdk.lambda-layer-kubectl-v34`` 2.2.2, ``-v35`` 2.2.2, ``-v36`` 2.0.1;
PyPI). 1.37 has Neuron AMIs (v20261023, v20261119) but no ``KubernetesVersion.V1_37`` in
aws-cdk-lib 2.275.0, the newest on PyPI. :mod:`trn_ultracluster.orchestrators.eks.versions`
maps each to those (a test checks the two agree)."""
DEFAULT_KUBERNETES_VERSION = {"eks": "1.36", "hyperpod-eks": "1.34"}
"""``eks.kubernetes_version`` when it is null, per orchestrator. ``eks``: the newest of
:data:`EKS_KUBERNETES_VERSIONS`. ``hyperpod-eks``: 1.34, not 1.35, the newest of
:data:`HYPERPOD_EKS_KUBERNETES_VERSIONS`, for two reasons. Changing a default upgrades, on its
next deploy, the control plane of every deployed cluster that left the version null, in place
and for good ("you can update only one minor version at a time"; "You cannot downgrade the
Kubernetes of an Amazon EKS cluster": EKS user guide, "Update existing cluster to new
Kubernetes version"). And HyperPod's support of 1.35 is known only from a mirror of AWS's page.
Set ``eks.kubernetes_version: "1.35"`` to use it."""
HYPERPOD_EKS_KUBERNETES_VERSIONS = ("1.30", "1.31", "1.32", "1.33", "1.34", "1.35")
"""Kubernetes versions of the EKS cluster that SageMaker HyperPod supports: "SageMaker
HyperPod supports Kubernetes versions 1.30, 1.31, 1.32, 1.33, 1.34, and 1.35" (SageMaker
developer guide, "Getting started with Amazon EKS support in SageMaker HyperPod",
DOC_HYPERPOD_EKS, ``sagemaker-hyperpod-eks-prerequisites``; read from a GitHub mirror of the
page, c2hans/aws-docs ``docs/sagemaker/latest/dg/sagemaker-hyperpod-eks-prerequisites.md`` @
07f049df, date unknown, the newest revision found; older revisions list 1.28 .. 1.34). 1.36 is
not listed. The stack can build only those also in :data:`EKS_KUBERNETES_VERSIONS`."""
HYPERPOD_EKS_AUTH_MODES = ("API", "API_AND_CONFIG_MAP")
"""EKS authentication modes HyperPod supports (same page); aws-eks-v2 clusters use ``API``."""
VPC_CNI_MIN_FOR_HYPERPOD = (1, 18, 3)
""""SageMaker HyperPod requires the Amazon VPC Container Network Interface (CNI) plugin
version 1.18.3 or later" (same page)."""
HYPERPOD_HMA_IMAGE_ACCOUNTS: dict[str, str] = {
    "us-east-1": "767398015722", "us-west-2": "905418368575", "us-east-2": "851725546812",
    "us-west-1": "011528288828", "eu-central-1": "211125453373", "eu-north-1": "654654141839",
    "eu-west-1": "533267293120", "eu-west-2": "011528288831", "eu-south-2": "626887787726",
    "ap-northeast-1": "533267052152", "ap-south-1": "011528288864",
    "ap-southeast-1": "905418428165", "ap-southeast-2": "851725636348",
    "ap-southeast-3": "971422672635", "ap-southeast-4": "084375568333",
    "ca-central-1": "843976229209", "sa-east-1": "025066253954",
}
"""Region -> AWS account of the ECR repository ``hyperpod-health-monitoring-agent``, from the
HyperPod Helm chart's ``health-monitoring-agent/templates/_helpers.tpl``
(``regionAccountMap``; aws/sagemaker-hyperpod-cli commit 011ca927, vendored in
``orchestrators/hyperpod_eks/charts``). In another Region the chart falls back to the
us-east-1 image; the configuration refuses such a Region instead."""
JOB_MAX_RESTARTS_RANGE = (0, 100)
"""``hyperpod.job_max_restarts``: JobSet ``failurePolicy.maxRestarts`` is an int32 (Kubeflow
Trainer 2.3.0 CRD); 100 is our bound (each restart reloads the last checkpoint)."""
VPC_CNI_MIN_FOR_EFA_ONLY = (1, 19, 0)
"""First VPC CNI minor after aws/amazon-vpc-cni-k8s PR #3047 ("Filter for interfaces with
no ip info", merged 2024-09-26), which lets the CNI start on nodes with ``efa-only``
interfaces. The exact first release is not verified; v1.19.0 is the next minor."""
HYPERPOD_NEURON_PLUGIN_TYPES = ("ml.trn1.2xlarge", "ml.trn1.32xlarge", "ml.trn1n.32xlarge",
                                "ml.trn2.48xlarge")
"""The Trainium ``ml.`` types the Neuron device plugin of SageMaker HyperPod's Helm chart runs
on: the node affinity ``node.kubernetes.io/instance-type In [...]`` of
``charts/neuron-device-plugin/templates/k8s-neuron-device-plugin.yaml`` (aws/sagemaker-hyperpod-cli
commit 011ca927, vendored in ``orchestrators/hyperpod_eks/charts``; unchanged upstream as
stored in 2026-11). ``ml.trn2.3xlarge``, which HyperPod offers (botocore 1.40.72), is not
in it, so a HyperPod on EKS node of that type would offer no ``aws.amazon.com/neuron``."""
