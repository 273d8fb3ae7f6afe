"""The AWS service quotas a cluster can run into, with their codes: the one table the
configuration rules, ``preflight``, the estimate and the README's scale section read.

Standard library only.

Sources of the codes, defaults and maxima:

- VPC: Amazon VPC quotas, https://docs.aws.amazon.com/vpc/latest/userguide/amazon-vpc-limits.html
  ("Network Address Usage | 64,000 | Yes (L-BB24F6E5) (up to 256,000)"; "IPv4 CIDR blocks per
  VPC | 5 | Yes (L-83CA0A9D) (up to 50)"; "Network interfaces per Region | 5,000 | Yes
  (L-DF5E4CA3) ... This limit is enforced per Availability Zone"); moto 5.2.5's bundled
  defaults (``moto/servicequotas/resources/default_quotas/vpc.py``) hold the same codes.
- EKS: EKS user guide, service quotas ("Managed node groups per cluster | 30 | Yes"; "Nodes per
  managed node group | 450 | Yes"). The codes L-6D54EA21 and L-BD136A63 are those of
  ``aws service-quotas list-aws-default-service-quotas --service-code eks`` as several public
  quota dumps record them; not read on an AWS page.
- EC2: "Running On-Demand Trn instances" (vCPUs) L-2C3B7624: code from public quota dumps and
  the issue; its default differs per account (not an AWS-published number).
  "Running On-Demand Standard (A, C, D, H, I, M, R, T, Z) instances" (vCPUs) L-1216C47A, the
  quota of the CPU pools' types (EC2 user guide, "Amazon EC2 service quotas", On-Demand
  instance quotas, which names the quota; the code as public quota dumps record it): every
  CPU pool of :data:`~trn_ultracluster.contracts.catalog.CPU_CATALOG` counts against it.
- SageMaker HyperPod: quota names "ml.<type> for cluster usage", "Maximum number instances
  allowed per SageMaker HyperPod cluster" and "Total number of instances allowed across
  SageMaker HyperPod clusters"; their codes differ between sources, so ``preflight`` finds
  them by name (``ListServiceQuotas``).
- FSx: "Lustre Persistent_2 storage capacity" (GiB per Region), L-8F1B9C74, default 100,800 in
  the larger Regions (FSx for Lustre user guide, "Quotas"); the code from public quota dumps.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["IMAGE_BUILD_QUEUED_MINUTES", "QUOTAS", "Quota", "QuotaNeed", "console_url"]

IMAGE_BUILD_QUEUED_MINUTES = 5
"""The training image build's CodeBuild ``QueuedTimeoutInMinutes``
(``trn_ultracluster.constructs.training_image.BUILD_QUEUED_TIMEOUT``, which imports the CDK and
so is not imported here; tests/test_deploy_time.py checks that the two agree): a build that
waits longer in CodeBuild's queue (the account's concurrent Linux/Large builds, CodeBuild user
guide, "Builds in AWS CodeBuild": "builds are queued if the number of running builds reaches
the concurrent build limit for the platform and compute type") fails the deploy; the stack
therefore builds several images one after the other."""


@dataclass(frozen=True)
class Quota:
    """One service quota.

    Attributes:
        key: the ``quotas`` configuration key that holds the account's value, or the
            ``preflight`` check's name where the configuration has none.
        service: Service Quotas service code (``vpc``, ``eks``, ``ec2``, ``sagemaker``, ``fsx``).
        code: quota code, e.g. ``L-BB24F6E5``; ``None`` where it is found by ``name``.
        name: the quota's name in Service Quotas.
        default: AWS's default value; ``None`` where it differs per account.
        maximum: the most AWS grants on request; ``None`` where not published.
        unit: what it counts.
    """

    key: str
    service: str
    code: str | None
    name: str
    default: int | None
    maximum: int | None
    unit: str


QUOTAS: dict[str, Quota] = {q.key: q for q in (
    Quota("vpc_network_address_usage", "vpc", "L-BB24F6E5", "Network Address Usage",
          64_000, 256_000, "NAU units per VPC"),
    Quota("vpc_cidr_blocks", "vpc", "L-83CA0A9D", "IPv4 CIDR blocks per VPC", 5, 50,
          "CIDR blocks per VPC"),
    Quota("network_interfaces", "vpc", "L-DF5E4CA3", "Network interfaces per Region", 5_000,
          None, "network interfaces per AZ"),
    Quota("eks_nodes_per_nodegroup", "eks", "L-BD136A63", "Nodes per managed node group", 450,
          None, "nodes per node group"),
    Quota("eks_nodegroups_per_cluster", "eks", "L-6D54EA21", "Managed node groups per cluster",
          30, None, "node groups per cluster"),
    Quota("trn_vcpus", "ec2", "L-2C3B7624", "Running On-Demand Trn instances", None, None,
          "vCPUs"),
    Quota("standard_vcpus", "ec2", "L-1216C47A",
          "Running On-Demand Standard (A, C, D, H, I, M, R, T, Z) instances", None, None,
          "vCPUs"),
    Quota("hyperpod_instances", "sagemaker", None, "{ml_type} for cluster usage", None, None,
          "instances"),
    Quota("hyperpod_instances_per_cluster", "sagemaker", None,
          "Maximum number instances allowed per SageMaker HyperPod cluster", None, None,
          "instances per cluster"),
    Quota("hyperpod_instances_total", "sagemaker", None,
          "Total number of instances allowed across SageMaker HyperPod clusters", None, None,
          "instances"),
    Quota("fsx_lustre_persistent_2_gib", "fsx", "L-8F1B9C74",
          "Lustre Persistent_2 storage capacity", 100_800, None, "GiB per Region"),
)}
"""Quota key -> :class:`Quota`."""


@dataclass(frozen=True)
class QuotaNeed:
    """What one configuration needs of one quota.

    Attributes:
        quota: the quota (:data:`QUOTAS`).
        need: the value the configuration needs, in ``quota.unit``.
        why: how ``need`` was counted, for messages.
        name: the quota's name in Service Quotas with ``{ml_type}`` filled in (the name
            ``preflight`` looks it up by where ``quota.code`` is ``None``).
    """

    quota: Quota
    need: int
    why: str
    name: str

    @property
    def above_default(self) -> bool:
        """Whether the account must ask for more than AWS's default: ``need`` exceeds it,
        or the default differs per account (``quota.default`` is ``None``)."""
        return self.quota.default is None or self.need > self.quota.default


def console_url(region: str, quota: Quota) -> str:
    """The Service Quotas console page of ``quota`` in ``region``, where an increase is
    requested (``https://<region>.console.aws.amazon.com/servicequotas/home/services/<service>/quotas/<code>``;
    the service's list where the code is found by name)."""
    base = f"https://{region}.console.aws.amazon.com/servicequotas/home/services/{quota.service}"
    return f"{base}/quotas/{quota.code}" if quota.code else f"{base}/quotas"
