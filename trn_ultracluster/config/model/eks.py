"""EKS: ``eks`` and its add-on versions."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import field_validator

from trn_ultracluster.config.facts import (
    EKS_KUBERNETES_VERSIONS,
    HYPERPOD_EKS_KUBERNETES_VERSIONS,
)
from trn_ultracluster.config.model.base import FrozenModel

__all__ = ["EksAddonVersionsConfig", "EksConfig"]


class EksAddonVersionsConfig(FrozenModel):
    """Versions of the EKS add-ons (``aws eks describe-addon-versions`` names them).

    Default ``null`` for every add-on: EKS installs its default version for the cluster's
    Kubernetes version (no pinned build could be verified without an AWS account). To pin
    one, pick it from
    ``aws eks describe-addon-versions --kubernetes-version 1.36 --addon-name <name>``.
    See docs/eks.md "What is installed, and why".

    Attributes:
        vpc_cni: ``vpc-cni``; a pinned version must be v1.19.0 or newer with
            ``efa_interface_layout: efa-only`` (the CNI skips interfaces without an IP
            address since aws/amazon-vpc-cni-k8s PR #3047, merged 2024-09-26, after v1.18).
        coredns: ``coredns``.
        kube_proxy: ``kube-proxy`` (a pinned minor version must match the cluster's).
        eks_pod_identity_agent: ``eks-pod-identity-agent``.
        aws_fsx_csi_driver: ``aws-fsx-csi-driver``.
        amazon_cloudwatch_observability: ``amazon-cloudwatch-observability`` (Container
            Insights with its Neuron and EFA metrics); a pinned version must be v3.1.0 or
            newer (Pod Identity; see
            :mod:`trn_ultracluster.orchestrators.eks.observability`).
        amazon_sagemaker_hyperpod_taskgovernance: ``amazon-sagemaker-hyperpod-taskgovernance``
            (SageMaker HyperPod task governance; installed only on ``hyperpod-eks`` with
            ``teams``: :mod:`trn_ultracluster.orchestrators.hyperpod_eks.task_governance`).
    """

    vpc_cni: str | None = None
    coredns: str | None = None
    kube_proxy: str | None = None
    eks_pod_identity_agent: str | None = None
    aws_fsx_csi_driver: str | None = None
    amazon_cloudwatch_observability: str | None = None
    amazon_sagemaker_hyperpod_taskgovernance: str | None = None


_FLOAT_K8S_VERSIONS = {float(v): v for v in (*HYPERPOD_EKS_KUBERNETES_VERSIONS,
                                              *EKS_KUBERNETES_VERSIONS)}


class EksConfig(FrozenModel):
    """EKS settings (used when ``orchestrator`` is ``eks`` or ``hyperpod-eks``).

    Default: the orchestrator's Kubernetes version, the ``standard`` control plane, 16 pod
    addresses per Trainium node, API endpoint public and private, public side open to ``0.0.0.0/0`` (a warning
    asks you to narrow it), no extra admin role, two ``m6i.xlarge`` system nodes, jobs in
    the ``training`` namespace, the add-on versions of :class:`EksAddonVersionsConfig`.

    Attributes:
        kubernetes_version: Kubernetes minor version of the cluster, e.g. ``"1.34"``. Default
            ``None``: 1.36 with ``eks``, 1.34 with ``hyperpod-eks`` (HyperPod also
            supports 1.35; the default stays so that deployed clusters are not upgraded in
            place, :data:`~trn_ultracluster.config.facts.DEFAULT_KUBERNETES_VERSION`). The
            stack can build 1.34, 1.35 and 1.36
            (:data:`~trn_ultracluster.config.facts.EKS_KUBERNETES_VERSIONS`: the Neuron AMI
            and kubectl layer are pinned for each); with ``hyperpod-eks`` also one that
            HyperPod supports (1.30-1.35).
        endpoint_access: ``public-and-private`` (kubectl from the allow-list and from the
            VPC) or ``private`` (only from inside the VPC).
        public_access_cidrs: IPv4 CIDR blocks allowed to the public endpoint.
        admin_role_arn: IAM role given cluster admin through an EKS access entry
            (``AmazonEKSClusterAdminPolicy``), e.g. the role your team uses with kubectl.
        deployer_principal_arn: the IAM role or user that runs the deploy, also given
            cluster admin. ``make deploy`` sets it (``-c eks.deployer_principal_arn=...``)
            to the caller of ``aws sts get-caller-identity``, an assumed role resolved to its
            role ARN, so that whoever deployed can use kubectl and the job CLI at once.
            With neither set, only the CloudFormation execution role is admin.
        system_instance_type: instance type of the 2 on-demand system nodes (controllers,
            add-ons); must not be a Trainium type.
        training_namespace: Kubernetes namespace of training jobs and the FSx claim.
        addon_versions: EKS add-on versions.
        pod_ips_per_node: VPC addresses each node keeps for its pods: the VPC CNI's
            ``MINIMUM_IP_TARGET`` (with ``WARM_IP_TARGET`` 2,
            :data:`~trn_ultracluster.config.facts.CNI_WARM_IP_TARGET`, instead of the CNI's default of a whole spare network interface, 49 addresses on
            Trainium). The address plan counts this many per Trainium node (``eks`` only;
            HyperPod plans by its own rule). 1-250.
        control_plane_tier: EKS Provisioned Control Plane tier (``ControlPlaneScalingConfig``):
            ``standard`` (default, no extra charge) or ``tier-xl`` .. ``tier-8xl`` (hourly
            price in the estimate); see docs/eks.md "Control plane tier".
        node_update_config: whether the Trainium node groups on reserved capacity
            (``capacity-reservation``, ``capacity-block``) get an ``UpdateConfig``: ``auto``
            (default) gives them ``MINIMAL`` (terminate a node before launching its
            replacement: no surge instance the reservation cannot hold), ``none`` leaves it out
            (EKS's defaults: launch first, one node at a time). On-demand node groups never get
            one. ``none`` is the first of the two deploys that upgrade a reserved-capacity
            stack whose node groups have no ``UpdateConfig`` yet: CloudFormation refuses a
            node group update that combines a new ``Version`` or launch template version with
            a new ``UpdateConfig`` (docs/deploy.md "Upgrading a deployed stack";
            :mod:`trn_ultracluster.orchestrators.eks.node_updates`).
    """

    kubernetes_version: str | None = None
    endpoint_access: Literal["public-and-private", "private"] = "public-and-private"
    public_access_cidrs: tuple[str, ...] = ("0.0.0.0/0",)
    admin_role_arn: str | None = None
    deployer_principal_arn: str | None = None
    system_instance_type: str = "m6i.xlarge"
    training_namespace: str = "training"
    addon_versions: EksAddonVersionsConfig = EksAddonVersionsConfig()
    pod_ips_per_node: int = 16
    control_plane_tier: Literal["standard", "tier-xl", "tier-2xl", "tier-4xl",
                                "tier-8xl"] = "standard"
    node_update_config: Literal["auto", "none"] = "auto"

    @field_validator("kubernetes_version", mode="before")
    @classmethod
    def _k8s_version_as_text(cls, value: Any) -> Any:
        """YAML reads ``1.30`` as the float 1.3: map the floats of the known versions back to
        their text (as :meth:`.fsx.FsxConfig._version_as_text` does)."""
        if isinstance(value, float):
            return _FLOAT_K8S_VERSIONS.get(value, repr(value))
        return value
