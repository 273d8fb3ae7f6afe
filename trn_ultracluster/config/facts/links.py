"""Documentation links, one per topic: where every configuration message points. Each fact with its source (the package docstring says more)."""

from __future__ import annotations

import re

DOC_CONFIG = "docs/configuration.md"
"""The generated configuration reference: every key, its type, default and allowed values."""
DOC_CONFIG_GUIDE = "docs/configuration-guide.md#layers"
"""How the layers (defaults, ``cdk.json``, a profile, ``-c``) are read."""
DOC_POOLS = "docs/pools.md"
DOC_CFN_STACK_NAME = "https://docs.aws.amazon.com/AWSCloudFormation/latest/APIReference/API_CreateStack.html"
DOC_EKS_CREATE_CLUSTER = "https://docs.aws.amazon.com/eks/latest/APIReference/API_CreateCluster.html"

# --- documentation links, one per topic ------------------------------------------------
DOC_AZ_IDS = "https://docs.aws.amazon.com/ram/latest/userguide/working-with-az-ids.html"
DOC_INSTANCES = "https://docs.aws.amazon.com/ec2/latest/instancetypes/ac.html"
DOC_EFA = "https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa-acc-inst-types.html"
DOC_VPC_CIDR = "https://docs.aws.amazon.com/vpc/latest/userguide/vpc-cidr-blocks.html"
DOC_SUBNET_IPS = "https://docs.aws.amazon.com/vpc/latest/userguide/subnet-sizing.html"
DOC_VPC_CIDR_RULES = (
    "https://docs.aws.amazon.com/vpc/latest/userguide/vpc-cidr-blocks.html"
    "#add-cidr-block-restrictions")
DOC_NAU = "https://docs.aws.amazon.com/vpc/latest/userguide/network-address-usage.html"
DOC_VPC_QUOTAS = "https://docs.aws.amazon.com/vpc/latest/userguide/amazon-vpc-limits.html"
DOC_EKS_QUOTAS = "https://docs.aws.amazon.com/eks/latest/userguide/service-quotas.html"
DOC_EKS_PCP = "https://docs.aws.amazon.com/eks/latest/userguide/eks-provisioned-control-plane.html"
DOC_EKS_ULTRA = ("https://aws.amazon.com/blogs/containers/amazon-eks-enables-ultra-scale-ai-ml-"
                 "workloads-with-support-for-100k-nodes-per-cluster/")
DOC_VPC_CNI = "https://github.com/aws/amazon-vpc-cni-k8s#minimum_ip_target-v160"
DOC_SCALE = "docs/scale.md"
DOC_NAT = "https://docs.aws.amazon.com/vpc/latest/userguide/vpc-nat-gateway.html"
DOC_FSX_DEPLOY = "https://docs.aws.amazon.com/fsx/latest/LustreGuide/using-fsx-lustre.html"
DOC_FSX_CAPACITY = (
    "https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/"
    "aws-resource-fsx-filesystem.html#cfn-fsx-filesystem-storagecapacity"
)
DOC_FSX_THROUGHPUT = (
    "https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/"
    "aws-properties-fsx-filesystem-lustreconfiguration.html"
    "#cfn-fsx-filesystem-lustreconfiguration-perunitstoragethroughput"
)
DOC_FSX_VERSION = "https://docs.aws.amazon.com/fsx/latest/LustreGuide/managing-lustre-version.html"
DOC_FSX_DRA = "https://docs.aws.amazon.com/fsx/latest/LustreGuide/create-dra-linked-data-repo.html"
DOC_CAPACITY_BLOCKS = "https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/capacity-blocks-launch.html"
DOC_EKS_CAPACITY_BLOCKS = "https://docs.aws.amazon.com/eks/latest/userguide/capacity-blocks-mng.html"
DOC_ODCR = "https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/capacity-reservations-launch.html"
DOC_PLACEMENT = "https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/placement-strategies.html"
DOC_ODCR_CPG = "https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/cr-cpg.html"
DOC_PLACEMENT_GROUP_NAME = (
    "https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_CreatePlacementGroup.html")
DOC_EBS_GP3 = "https://docs.aws.amazon.com/ebs/latest/userguide/general-purpose.html"
DOC_K8S_LARGE = "https://kubernetes.io/docs/setup/best-practices/cluster-large/"
DOC_FSX_QUOTAS = "https://docs.aws.amazon.com/fsx/latest/LustreGuide/limits.html"
DOC_TAGS = "https://docs.aws.amazon.com/tag-editor/latest/userguide/tagging.html"
DOC_HYPERPOD = "https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod.html"
DOC_RESOURCE_IDS = "https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/resource-ids.html"
DOC_HYPERPOD_CREATE = "https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_CreateCluster.html"
DOC_HYPERPOD_GROUP = (
    "https://docs.aws.amazon.com/sagemaker/latest/APIReference/"
    "API_ClusterInstanceGroupSpecification.html"
)
DOC_HYPERPOD_SLURM = "https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-ref.html"
DOC_EKS_ENDPOINT = "https://docs.aws.amazon.com/eks/latest/userguide/cluster-endpoint.html"
DOC_EKS_ACCESS = "https://docs.aws.amazon.com/eks/latest/userguide/access-entries.html"
DOC_EKS_ADDONS = "https://docs.aws.amazon.com/eks/latest/userguide/eks-add-ons.html"
DOC_K8S_NAMES = "https://kubernetes.io/docs/concepts/overview/working-with-objects/names/"
DOC_EKS_VERSIONS = "https://docs.aws.amazon.com/eks/latest/userguide/kubernetes-versions.html"
DOC_NODE_UPDATES = "docs/deploy.md#upgrading-a-deployed-stack"
DOC_HYPERPOD_EKS = (
    "https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-eks-prerequisites.html")
DOC_HYPERPOD_EKS_AUTO_RESUME = "docs/hyperpod-eks.md#auto-resume"
DOC_HYPERPOD_EKS_HELM = (
    "https://docs.aws.amazon.com/sagemaker/latest/dg/"
    "sagemaker-hyperpod-eks-install-packages-using-helm-chart.html")
DOC_NEURON_DLAMI = (
    "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/deploy/environments/dlami.html"
)
DOC_DEVICE_NAMES = "https://docs.aws.amazon.com/ebs/latest/userguide/device_naming.html"
DOC_SSM_PARAMETER_NAMES = (
    "https://docs.aws.amazon.com/systems-manager/latest/APIReference/API_PutParameter.html"
)
DOC_STANDALONE = "docs/standalone.md"
DOC_TRAINING_STACKS = "docs/training-stacks.md"
DOC_CUSTOM_IMAGE = "docs/custom-image.md"
DOC_TORCHNEURON = "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/index.html"
DOC_TRN2_ULTRASERVER = (
    "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/about-neuron/arch/neuron-hardware/"
    "trn2-arch.html")
