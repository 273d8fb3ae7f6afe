"""What a synthesized TrnUltraCluster template bills by the hour: its bill of materials.

Read from the template itself, so it holds for every orchestrator and configuration: the
instances of EKS node groups and Auto Scaling groups (min for idle, max for running), the
instance groups of SageMaker HyperPod clusters (HyperPod keeps their count: idle = running),
EKS control planes, NAT gateways and FSx for Lustre file systems.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from trn_ultracluster.estimate.prices import PriceKey

__all__ = ["Bill", "BillItem", "FileSystemThroughput", "bill_of_materials", "is_true"]


@dataclass(frozen=True)
class BillItem:
    """One line of the bill.

    Attributes:
        label: what it is, e.g. ``EKS node group TrainiumNodes: trn1.32xlarge``.
        key: what prices it (:mod:`trn_ultracluster.estimate.prices`).
        idle, running: how many units bill when nodes are at their minimum / maximum
            (instances, clusters, gateways, or GB of storage for ``GB-month`` prices).
        prepaid: billed up front (a Capacity Block or a training plan), not by the hour:
            shown, left out of the totals.
        fallback: a key priced instead when ``key`` has no price, as a lower bound (the EC2
            price of an ``ml.`` instance type).
    """

    label: str
    key: PriceKey
    idle: float
    running: float
    prepaid: bool = False
    fallback: PriceKey | None = None


@dataclass(frozen=True)
class FileSystemThroughput:
    """The throughput of one FSx for Lustre file system with a per-unit throughput.

    Attributes:
        label: the file system's logical id, shortened.
        capacity_gib: ``StorageCapacity``, GiB.
        per_unit_mb_s_tib: ``PerUnitStorageThroughput``, MB/s per TiB.
        nodes: the Trainium nodes that share it (output ``NodeCountMax``).
        deployment_type: ``LustreConfiguration.DeploymentType``.
        efa_enabled: ``LustreConfiguration.EfaEnabled`` (absent: ``False``, the API's
            default).
    """

    label: str
    capacity_gib: int
    per_unit_mb_s_tib: int
    nodes: int
    deployment_type: str = "PERSISTENT_2"
    efa_enabled: bool = False

    @property
    def aggregate_mb_s(self) -> float:
        """MB/s of the whole file system: "calculated by multiplying file system storage
        capacity (TiB) by the PerUnitStorageThroughput (MB/s/TiB)" (botocore's FSx model,
        ``CreateFileSystemLustreConfiguration.PerUnitStorageThroughput``); 1 TiB = 1024 GiB."""
        return self.capacity_gib / 1024 * self.per_unit_mb_s_tib

    @property
    def per_node_mb_s(self) -> float | None:
        """Each node's share at ``nodes`` nodes reading at once, MB/s (``None``: no nodes)."""
        return self.aggregate_mb_s / self.nodes if self.nodes else None


@dataclass(frozen=True)
class Bill:
    """The bill of materials of one template.

    Attributes:
        region: the stack's Region (output ``Region``).
        items: its lines.
        notes: what the estimate does not price, and prepaid capacity.
        throughput: the FSx for Lustre file systems that have a per-unit throughput.
    """

    region: str
    items: list[BillItem]
    notes: list[str]
    throughput: list[FileSystemThroughput]


def _short(logical_id: str) -> str:
    """``EksClusterNodegroupSystemNodes7D54C381`` -> ``EksClusterNodegroupSystemNodes``."""
    return logical_id[:-8] if len(logical_id) > 8 and logical_id[-8:].isalnum() \
        and logical_id[-8:].upper() == logical_id[-8:] else logical_id


def _launch_template_data(resources: dict[str, Any], ref: Any) -> dict[str, Any]:
    """The ``LaunchTemplateData`` a ``{"Ref": id}`` / ``{"LaunchTemplateId": {"Ref": id}}``
    points at (empty when it is not in the template)."""
    if isinstance(ref, dict):
        ref = ref.get("Ref", ref.get("Id", ref.get("LaunchTemplateId")))
    if isinstance(ref, dict):
        ref = ref.get("Ref")
    resource = resources.get(ref) if isinstance(ref, str) else None
    return resource["Properties"]["LaunchTemplateData"] if resource else {}


def is_true(value: Any) -> bool:
    """A CloudFormation Boolean: ``true`` or the string ``"true"`` (any case)."""
    return value is True or (isinstance(value, str) and value.lower() == "true")


def _is_capacity_block(data: dict[str, Any]) -> bool:
    return data.get("InstanceMarketOptions", {}).get("MarketType") == "capacity-block"


def _instance_item(label: str, instance_type: str, low: float, high: float,
                   data: dict[str, Any]) -> BillItem:
    return BillItem(f"{label}: {instance_type}", ("ec2", instance_type), low, high,
                    prepaid=_is_capacity_block(data))


def bill_of_materials(template: dict[str, Any]) -> Bill:
    """The hourly bill of ``template`` (a synthesized TrnUltraCluster template).

    Raises:
        KeyError: the template has no ``Region`` output (not a TrnUltraCluster template).
    """
    resources = template["Resources"]
    region = template["Outputs"]["Region"]["Value"]
    items: list[BillItem] = []
    notes: list[str] = []
    throughput: list[FileSystemThroughput] = []
    nodes = int(template["Outputs"].get("NodeCountMax", {}).get("Value", 0))
    for name, resource in resources.items():
        kind, props = resource["Type"], resource.get("Properties", {})
        if kind == "AWS::EKS::Nodegroup":
            data = _launch_template_data(resources, props.get("LaunchTemplate"))
            scaling = props["ScalingConfig"]
            for instance_type in props.get("InstanceTypes") or [data.get("InstanceType")]:
                items.append(_instance_item(f"EKS node group {_short(name)}", instance_type,
                                            scaling["MinSize"], scaling["MaxSize"], data))
        elif kind == "AWS::AutoScaling::AutoScalingGroup":
            data = _launch_template_data(resources, props.get("LaunchTemplate"))
            items.append(_instance_item(f"Auto Scaling group {_short(name)}",
                                        data.get("InstanceType"), int(props["MinSize"]),
                                        int(props["MaxSize"]), data))
        elif kind == "AWS::SageMaker::Cluster":
            for group in props["InstanceGroups"]:
                ml_type = group["InstanceType"]
                plan = bool(group.get("TrainingPlanArn"))
                items.append(BillItem(
                    f"HyperPod instance group {group['InstanceGroupName']}: {ml_type}",
                    ("sagemaker-cluster", ml_type), group["InstanceCount"],
                    group["InstanceCount"], prepaid=plan,
                    fallback=("ec2", ml_type.removeprefix("ml."))))
        elif kind == "AWS::EKS::Cluster":
            items.append(BillItem(f"EKS control plane {_short(name)}", ("eks", "cluster"), 1, 1))
            # AWS::EKS::Cluster ControlPlaneScalingConfig.Tier, "standard" when absent
            # (CloudFormation template reference, AWS::EKS::Cluster ControlPlaneScalingConfig)
            tier = props.get("ControlPlaneScalingConfig", {}).get("Tier", "standard")
            if tier != "standard":
                items.append(BillItem(f"EKS Provisioned Control Plane {tier} {_short(name)}",
                                      ("eks-pcp", tier), 1, 1))
        elif kind == "AWS::EC2::NatGateway":
            items.append(BillItem(f"NAT gateway {_short(name)}", ("nat-gateway", "hour"), 1, 1))
        elif kind == "AWS::FSx::FileSystem":
            lustre = props.get("LustreConfiguration", {})
            deployment = lustre.get("DeploymentType", "SCRATCH_1")
            per_unit = lustre.get("PerUnitStorageThroughput", "-")
            gib = props["StorageCapacity"]
            tier = "" if per_unit == "-" else f" {per_unit} MB/s/TiB"
            items.append(BillItem(
                f"FSx for Lustre {deployment}{tier}, {gib} GiB",
                ("fsx-lustre", f"{deployment}/{per_unit}"), gib, gib))
            if per_unit != "-":
                throughput.append(FileSystemThroughput(
                    _short(name), gib, per_unit, nodes, deployment,
                    is_true(lustre.get("EfaEnabled", False))))
    if any(i.prepaid for i in items):
        notes.append("Capacity Block / training plan nodes are paid up front when the "
                     "capacity is bought, not by the hour: shown, not in the totals")
    notes.append("not priced: data processed by NAT gateways (per GB), S3 storage and "
                 "requests, EBS root volumes, CloudWatch, ECR storage, data transfer, and "
                 "the one-time CodeBuild image build")
    return Bill(region, items, notes, throughput)
