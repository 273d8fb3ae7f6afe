"""What SageMaker HyperPod on EKS puts on its nodes and what the stack installs for it, with
the sources.

- Node labels: HyperPod labels its nodes ``sagemaker.amazonaws.com/node-health-status``
  (``Schedulable`` once the node passed the basic health checks; ``Unschedulable`` while deep
  health checks run; ``UnschedulablePendingReplacement`` / ``UnschedulablePendingReboot`` when
  it failed a check; "to be used as part of node selector filter in healthy nodes") and
  ``sagemaker.amazonaws.com/deep-health-check-status`` (SageMaker developer guide,
  "Resilience-related Kubernetes labels by SageMaker HyperPod",
  https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-eks-resiliency-node-labels.html).
- The instance-type label of a HyperPod node is the ``ml.`` name (``ml.trn1.32xlarge``): the
  HyperPod Helm chart selects its Neuron device plugin and health-monitoring agent by
  ``node.kubernetes.io/instance-type In [ml.trn1.32xlarge, ...]`` (aws/sagemaker-hyperpod-cli
  ``helm_chart/HyperPodHelmChart``, vendored in ``charts/``), and the HyperPod CLI's
  ``start-job --instance-type <ml.instance.type>`` selects nodes the same way.
- The taint ``sagemaker.amazonaws.com/node-health-status=Unschedulable:NoSchedule``: device
  plugins installed outside HyperPod's chart must tolerate it (the chart's readme,
  ``helm_chart/readme.md``, "If you install these plugins on your own, make sure that the
  following configurations are set ... Tolerations (across all plugins)").
- Labels and taints of an instance group (``KubernetesConfig``, at most 50 each), which
  HyperPod applies at node creation and keeps through replacement, scaling and patching:
  CloudFormation schema of ``AWS::SageMaker::Cluster`` (``ClusterKubernetesConfig``, cfn-lint
  1.58.0), botocore 1.44.5 ``ClusterKubernetesConfig``; AWS What's New "Amazon SageMaker
  HyperPod now supports custom Kubernetes labels and taints".
- The ``aws-hyperpod`` namespace cannot be renamed (SageMaker developer guide, "Installing
  packages on the Amazon EKS cluster using Helm").
- HyperPod creates the EKS access entries of the execution role and of its service-linked
  role itself ("This is created by HyperPod on your behalf": SageMaker API reference,
  ``ClusterMetadata.EksRoleAccessEntries`` / ``SlrAccessEntry``,
  https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_ClusterMetadata.html; the
  CloudFormation handler of ``AWS::SageMaker::Cluster`` needs ``eks:CreateAccessEntry`` and
  ``eks:AssociateAccessPolicy`` to create and ``eks:DeleteAccessEntry`` to delete, schema
  ``handlers`` in cfn-lint 1.58.0). The stack therefore creates none for them: a principal
  can be in only one access entry (EKS user guide, "Create access entries").
"""

from __future__ import annotations

from pathlib import Path

from trn_ultracluster.orchestrators.eks.manifests import Taint

__all__ = ["DEPENDENCIES_CHART", "DEPENDENCIES_NAMESPACE", "DEPENDENCIES_RELEASE",
           "HEALTH_STATUS_LABEL", "HMA_IMAGE_TAG", "HMA_REPOSITORY", "HYPERPOD_NAMESPACE",
           "LIFECYCLE_SCRIPTS", "ON_CREATE", "ON_CREATE_NO_EFA", "SCHEDULABLE",
           "UNSCHEDULABLE_TAINT"]

HEALTH_STATUS_LABEL = "sagemaker.amazonaws.com/node-health-status"
"""HyperPod's node health label (module doc)."""
SCHEDULABLE = "Schedulable"
"""The value of :data:`HEALTH_STATUS_LABEL` on a node that may run training pods."""
UNSCHEDULABLE_TAINT = Taint(HEALTH_STATUS_LABEL, "Unschedulable", "NoSchedule")
"""HyperPod's taint while a node runs deep health checks; device plugins tolerate it."""
HYPERPOD_NAMESPACE = "aws-hyperpod"
"""Namespace of the health-monitoring agent and the deep-health-check service account
(created by the chart's ``deep-health-check`` subchart; cannot be renamed)."""

DEPENDENCIES_CHART = Path(__file__).resolve().parent / "charts" / "hyperpod-dependencies"
"""The vendored subset of HyperPod's Helm chart (provenance: ``charts/README.md``)."""
DEPENDENCIES_RELEASE = "hyperpod-dependencies"
DEPENDENCIES_NAMESPACE = "kube-system"
"""Release name and namespace of AWS's install command (``helm install hyperpod-dependencies
HyperPodHelmChart --namespace kube-system``, "Installing packages on the Amazon EKS cluster
using Helm")."""
HMA_REPOSITORY = "hyperpod-health-monitoring-agent"
HMA_IMAGE_TAG = "1.0.1892.0_1.0.424.0"
"""The health-monitoring agent's ECR repository (in the Region's account of
:data:`trn_ultracluster.config.facts.HYPERPOD_HMA_IMAGE_ACCOUNTS`) and the tag the vendored
chart pins (``health-monitoring-agent/templates/_helpers.tpl``)."""

LIFECYCLE_SCRIPTS = Path(__file__).resolve().parent / "scripts"
"""Our lifecycle scripts for the Trainium instance group (uploaded as they are)."""
ON_CREATE = "on_create.sh"
"""The script HyperPod runs on every new or replaced node (``LifeCycleConfig.OnCreate``, as
AWS's HyperPod EKS samples use: aws-samples/awsome-distributed-training
``1.architectures/7.sagemaker-hyperpod-eks/LifecycleScripts/base-config/on_create.sh``)."""
ON_CREATE_NO_EFA = "on_create_no_efa.sh"
"""The ``OnCreate`` of a CPU pool's instance groups: :data:`ON_CREATE` on a node without an
EFA device, so FSx for Lustre stays on TCP whatever ``fsx.efa`` says (as the Slurm
controller and login nodes do). A separate entry point because each instance group names its
own ``LifeCycleConfig.OnCreate`` (botocore 1.44.8 SageMaker model), while how a node of
HyperPod on EKS would learn its instance group in a lifecycle script (the Slurm script reads
HyperPod's ``resource_config.json``) is not verified here."""
