"""Pinned versions, add-ons, charts and names of the EKS orchestrator, with their sources.

Facts used here and their sources:

- Kubernetes 1.36 (``eks``' default): the newest version with an EKS AL2023 Neuron AMI that
  aws-cdk-lib 2.275.0 can build (``aws_eks_v2.KubernetesVersion`` V1_25 .. V1_36). The
  newest release where a 1.36 Neuron AMI was read by name is awslabs/amazon-eks-ami v20260903
  (``amazon-eks-node-al2023-x86_64-neuron-1.36-v20260903``, release version 1.36.3-20260903);
  the node group takes SSM
  ``/aws/service/eks/optimized-ami/1.36/amazon-linux-2023/x86_64/neuron/recommended/image_id``,
  which follows newer AMIs. The kubectl layer matches it:
  ``aws-cdk.lambda-layer-kubectl-v36==2.0.1`` (PyPI). Avoid AMI releases v20260930 and
  v20261003: release v20261012 "fixes a kernel panic during memory reclaim (#2845) that caused
  nodes to unexpectedly reboot on releases v20260930 and v20261003".
- Kubernetes 1.37 is not adopted: amazon-eks-ami v20261023 and v20261119 publish
  ``amazon-eks-node-al2023-x86_64-neuron-1.37-*`` AMIs and ``aws-cdk.lambda-layer-kubectl-v37``
  2.0.0 exists (PyPI), but aws-cdk-lib 2.275.0, the newest on PyPI, has no
  ``KubernetesVersion.V1_37``.
- Kubernetes 1.34 (``hyperpod-eks``' default) with
  ``aws-cdk.lambda-layer-kubectl-v34==2.2.2`` and 1.35 with
  ``aws-cdk.lambda-layer-kubectl-v35==2.2.2`` (kubectl 1.35.2, helm 4.1.3; PyPI), whose layers
  hold kubectl and helm. See :data:`trn_ultracluster.config.facts.EKS_KUBERNETES_VERSIONS` for
  their AMIs and :data:`~trn_ultracluster.config.facts.HYPERPOD_EKS_KUBERNETES_VERSIONS` for
  HyperPod.
- Neuron Helm chart ``oci://public.ecr.aws/neuron/neuron-helm-chart`` 1.10.0 (pulled
  2026-09-11, digest sha256:ed5d8f73...; the newest release on
  github.com/aws-neuron/neuron-helm-charts/releases, "19 Aug" 2026, device plugin image
  2.32.0.0); values ``devicePlugin.enabled``, ``scheduler.enabled``, ``npd.enabled``
  (aws-neuron/neuron-helm-charts ``charts/neuron-helm-chart/values.yaml`` and README). The
  chart's extra kube-scheduler (``my-scheduler``, kube-scheduler v1.31 in 1.10.0) is off: no
  pod of the stack names it (``schedulerName``), and whole-node pods need no contiguous-core
  placement. Since 1.9.0 the chart also carries the Neuron UltraServer operator
  (``ultraserverOperator.enabled``, default false; the 1.9.0 release note enables it with
  ``draDriver.enabled=true``), left off here: it needs the DRA driver, and the chart's
  ``validateConfig`` (``_helpers.tpl``) refuses the DRA driver beside the device plugin
  ("DRA driver and device plugin cannot both be enabled"). The operator is documented for
  Trn3pds only ("Instance type - Trn3pds launched with K8s version 1.34.2+":
  aws-neuron/aws-neuron-sdk ``deploy/eks/ultraserver-operator.rst`` @ 81ce03a, 2026-08-21) and
  UltraServer support is "disabled by default" (Neuron containers release notes 2.31.0). The
  chart's ``neuronInstances`` list trn3 types since 1.9.0 (1.10.0: trn3.48xlarge,
  trn3n.48xlarge, trn3en.24xlarge, trn3s-es.48xlarge) beside trn1, trn1n, trn2 and trn2u.
- EFA device plugin: chart ``aws-efa-k8s-device-plugin`` version v0.5.30, which ships image
  v0.5.20, in ``https://aws.github.io/eks-charts`` (aws/eks-charts
  ``stable/aws-efa-k8s-device-plugin/Chart.yaml`` @ bfe91c4, 2026-07-21: ``version: v0.5.30``,
  ``appVersion: "v0.5.20"``, the newest; gh-pages ``index.yaml`` @ c7f9ea5, 2026-08-03). The
  chart version and the image version differ: Helm reads the pin as the chart version, and
  chart v0.5.20 ships image v0.5.13. Values ``nodeSelector`` and ``tolerations`` (both in the
  chart's ``values.yaml`` and ``templates/daemonset.yaml`` @ bfe91c4).
- Kubeflow Trainer chart 2.3.0, ``oci://ghcr.io/kubeflow/charts/kubeflow-trainer``
  (pinned with the chart above). It installs JobSet too: kubeflow/trainer
  ``charts/kubeflow-trainer/Chart.yaml`` (version 2.3.0) lists the dependency ``jobset``
  0.12.0 from ``oci://registry.k8s.io/jobset/charts`` with ``condition: jobset.install``,
  and ``charts/kubeflow-trainer/values.yaml`` sets ``jobset.install: true``. v2.4.0 exists
  (github.com/kubeflow/trainer/releases/tag/v2.4.0) with breaking changes: ReplicatedJob
  names in runtimes limited to 20 characters (#4394), the TrainJob image set on the MPI
  launcher and nodes (#4301), ``dataCache.lws.install`` honoured (#4120), CRDs kept on
  ``helm uninstall`` (#4122; a stack delete would leave them), CertManagement fields renamed
  (#3386), PRTE variables for Open MPI 5 (#4029). The stack stays on 2.3.0 until 2.4.0 is
  tested here; the API it uses is still ``trainer.kubeflow.org/v1alpha1`` (the only API
  package on kubeflow/trainer master, 2026-08-21).
- Kueue chart 0.20.0, ``oci://registry.k8s.io/kueue/charts/kueue`` (installed only with
  ``teams``: :mod:`.teams`). Kueue's install guide installs that chart with ``helm install kueue
  oci://registry.k8s.io/kueue/charts/kueue --version=<chart version> --namespace kueue-system
  --create-namespace --wait`` (kubernetes-sigs/kueue ``site/content/en/docs/getting-started/
  installation.md``); a released chart runs image ``registry.k8s.io/kueue/kueue:v<version>``
  (``hack/helm-chart-package.sh`` rewrites the image for tags ``vX.Y.Z``). Why 0.20.0: Kueue
  added the Kubeflow Trainer v2 integration (``trainer.kubeflow.org/trainjob``) in v0.14.0
  ("Add an alpha integration for Kubeflow Trainer to Kueue", #6597, ``CHANGELOG-0.14.md``),
  moved it to Trainer v2.2's ``runtimePatches`` in v0.17.0 (#10127), and supports Trainer v2.3
  (the stack's 2.3.0) from v0.20.0 only: "TrainJob: support Trainer v2.3. If you use Trainer
  v2.2, you have to update it to v2.3 since Trainer v2.2 and v2.3 don't have API
  compatibility" (#14504, ``CHANGELOG/CHANGELOG-0.20.md``); v0.19.2 still builds against
  Trainer v2.2.1 (``go.mod``). Kubernetes: "version 1.29 or newer" (install guide); v0.19 and
  later build against ``k8s.io/api`` v0.36 (``go.mod``), the stack's 1.36. v0.20 serves only
  ``kueue.x-k8s.io/v1beta2`` (CHANGELOG-0.20, #14558), which the stack's objects use. The chart
  0.20.0 is used by public install guides (oracle-quickstart/oci-hpc-oke, ``helm install kueue
  oci://registry.k8s.io/kueue/charts/kueue --version="0.20.0"``); its digest and its v0.20.0
  tag were not read here (the repository copy read ends 2026-08-22), so the tests validate the
  objects against the v0.19.2 CRDs (``tests/fixtures/kueue-0.19.2/README.md``).
- Add-on names ``vpc-cni``, ``coredns``, ``kube-proxy``, ``eks-pod-identity-agent``,
  ``aws-fsx-csi-driver``, service accounts ``aws-node`` (VPC CNI) and
  ``fsx-csi-controller-sa`` (FSx CSI controller): EKS user guide, "Amazon EKS add-ons"
  and "Use Pod Identity with the VPC CNI / FSx CSI driver".
- Pod Identity trust: principal ``pods.eks.amazonaws.com``, actions ``sts:AssumeRole``
  and ``sts:TagSession`` (EKS user guide, "pod-id-role"); ``ServicePrincipal(...)
  .with_session_tags()`` writes both in one statement.
- FSx CSI controller: ``fsx:DescribeFileSystems`` is in the driver's IAM policy
  (kubernetes-sigs/aws-fsx-csi-driver ``docs/install.md``, "Set up driver permissions").
  The rest of that policy (create/delete/update file systems, S3 data repositories) is for
  dynamic provisioning and volume expansion, which a static volume does not use.
- Node role policies ``AmazonEKSWorkerNodePolicy`` and
  ``AmazonEC2ContainerRegistryPullOnly`` (EKS user guide, "create-node-role").
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import import_module

from aws_cdk import Duration
from aws_cdk import aws_eks_v2 as eks
from aws_cdk.aws_lambda import ILayerVersion
from constructs import Construct

__all__ = [
    "ADMIN_POLICY",
    "KUBECTL_LAYERS",
    "CONTROL_PLANE_LOG_GROUP",
    "EFA_PLUGIN_CHART",
    "FSX_CSI_SERVICE_ACCOUNT",
    "HelmChartPin",
    "KUEUE_CHART",
    "NEURON_CHART",
    "NODE_POLICIES",
    "SYSTEM_NODES",
    "TRAINER_CHART",
    "TRAINER_INSTALL_TIMEOUT",
    "VPC_CNI_SERVICE_ACCOUNT",
    "kubectl_layer",
    "kubernetes_version",
]

KUBECTL_LAYERS: dict[str, tuple[str, str]] = {
    "1.34": ("aws_cdk.lambda_layer_kubectl_v34", "KubectlV34Layer"),
    "1.35": ("aws_cdk.lambda_layer_kubectl_v35", "KubectlV35Layer"),
    "1.36": ("aws_cdk.lambda_layer_kubectl_v36", "KubectlV36Layer"),
}
"""Kubernetes version -> (module, class) of its kubectl/helm Lambda layer (pinned in
requirements.txt). The versions are
:data:`trn_ultracluster.config.facts.EKS_KUBERNETES_VERSIONS` (a test checks it); each
module is imported only when its version is used."""


def kubernetes_version(version: str) -> eks.KubernetesVersion:
    """The ``aws_eks_v2.KubernetesVersion`` of ``"1.34"``-style text.

    Raises:
        KeyError: a version without a kubectl layer (the configuration allows none).
    """
    KUBECTL_LAYERS[version]  # noqa: B018 (only versions the stack can build)
    return eks.KubernetesVersion.of(version)


def kubectl_layer(scope: Construct, construct_id: str, version: str) -> ILayerVersion:
    """The kubectl/helm Lambda layer matching Kubernetes ``version`` (construct
    ``construct_id`` in ``scope``).

    Raises:
        KeyError: a version without a pinned layer.
    """
    module, cls = KUBECTL_LAYERS[version]
    layer: ILayerVersion = getattr(import_module(module), cls)(scope, construct_id)
    return layer
SYSTEM_NODES = 2
"""On-demand system nodes for controllers and add-ons (two, for one failure)."""
NODE_POLICIES = {
    "AmazonEKSWorkerNodePolicy": "nodes describe EC2 and join the cluster",
    "AmazonEC2ContainerRegistryPullOnly": "nodes pull images from ECR, read only",
}
"""Managed policies of the node role (name -> why): join the cluster, pull images, nothing
else (EKS user guide, "create-node-role")."""
VPC_CNI_SERVICE_ACCOUNT = "aws-node"
FSX_CSI_SERVICE_ACCOUNT = "fsx-csi-controller-sa"
KUBE_SYSTEM = "kube-system"


@dataclass(frozen=True)
class HelmChartPin:
    """A Helm chart at a pinned version (never "latest") and the namespace it goes to."""

    chart: str
    repository: str
    version: str
    namespace: str


NEURON_CHART = HelmChartPin(
    "neuron-helm-chart", "oci://public.ecr.aws/neuron/neuron-helm-chart", "1.10.0", KUBE_SYSTEM)
EFA_PLUGIN_CHART = HelmChartPin(
    "aws-efa-k8s-device-plugin", "https://aws.github.io/eks-charts", "v0.5.30", KUBE_SYSTEM)
"""The chart version (v0.5.30, image v0.5.20), not the image version (module doc)."""
TRAINER_CHART = HelmChartPin(
    "kubeflow-trainer", "oci://ghcr.io/kubeflow/charts/kubeflow-trainer", "2.3.0",
    "kubeflow-system")
KUEUE_CHART = HelmChartPin(
    "kueue", "oci://registry.k8s.io/kueue/charts/kueue", "0.20.0", "kueue-system")
"""Kueue (with ``teams`` only): the first release for Kubeflow Trainer v2.3 (module doc)."""
TRAINER_INSTALL_TIMEOUT = Duration.minutes(10)
"""``helm --wait`` timeout of the Kubeflow Trainer chart. The install runs inside aws-eks-v2's
kubectl handler, a Lambda function with a 15-minute timeout (aws-cdk-lib 2.275.0
``aws-eks-v2/lib/kubectl-provider.ts``: ``timeout: Duration.minutes(15)``; Lambda's maximum),
which also pulls the chart and runs helm: 10 minutes leaves it that margin, so a slow
rollout fails with helm's message instead of a Lambda timeout."""
ADMIN_POLICY = "AmazonEKSClusterAdminPolicy"
"""EKS access policy for cluster-wide admin (EKS user guide, "Review access policy
permissions")."""


CONTROL_PLANE_LOG_GROUP = "/aws/eks/{cluster}/cluster"
"""Where EKS sends control-plane logs (EKS user guide, "Send control plane logs to
CloudWatch Logs"; AWS Knowledge Center, "eks-get-control-plane-logs")."""
