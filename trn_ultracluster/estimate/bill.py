"""What a synthesized TrnUltraCluster template bills by the hour: its bill of materials.

Read from the template itself, so it holds for every orchestrator and configuration: the
instances of EKS node groups and Auto Scaling groups (min for idle, max for running), the
instance groups of SageMaker HyperPod clusters (HyperPod keeps their count: idle = running),
EKS control planes, NAT gateways and FSx for Lustre file systems.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from trn_ultracluster.contracts.hyperpod import CONTROLLER_GROUP, LOGIN_GROUP
from trn_ultracluster.contracts.pools import PoolInfo
from trn_ultracluster.estimate.pools import resource_pool, template_pools
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
        pool: the node pool whose nodes these are (:func:`~.pools.resource_pool`); ``None``
            for what the pools share (control plane, system nodes, NAT, file system).
    """

    label: str
    key: PriceKey
    idle: float
    running: float
    prepaid: bool = False
    fallback: PriceKey | None = None
    pool: str | None = None


@dataclass(frozen=True)
class FileSystemThroughput:
    """The throughput of one FSx for Lustre file system with a per-unit throughput.

    Attributes:
        label: the file system's logical id, shortened.
        capacity_gib: ``StorageCapacity``, GiB.
        per_unit_mb_s_tib: ``PerUnitStorageThroughput``, MB/s per TiB.
        nodes: the nodes that share it: every pool's ``nodes.max`` (output ``Pools``; a
            template without it: ``NodeCountMax``).
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
        pools: the template's node pools (:func:`~.pools.template_pools`), ``()`` for a
            template synthesized before pools.
    """

    region: str
    items: list[BillItem]
    notes: list[str]
    throughput: list[FileSystemThroughput]
    pools: tuple[PoolInfo, ...] = ()


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
                   data: dict[str, Any], pool: str | None) -> BillItem:
    return BillItem(f"{label}: {instance_type}", ("ec2", instance_type), low, high,
                    prepaid=_is_capacity_block(data), pool=pool)


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
    pools = template_pools(template)
    nodes = (sum(p.nodes_max for p in pools) if pools else
             int(template["Outputs"].get("NodeCountMax", {}).get("Value", 0)))
    for name, resource in resources.items():
        kind, props = resource["Type"], resource.get("Properties", {})
        if kind == "AWS::EKS::Nodegroup":
            data = _launch_template_data(resources, props.get("LaunchTemplate"))
            scaling = props["ScalingConfig"]
            for instance_type in props.get("InstanceTypes") or [data.get("InstanceType")]:
                items.append(_instance_item(
                    f"EKS node group {_short(name)}", instance_type, scaling["MinSize"],
                    scaling["MaxSize"], data, resource_pool(pools, name, resource, instance_type)))
        elif kind == "AWS::AutoScaling::AutoScalingGroup":
            data = _launch_template_data(resources, props.get("LaunchTemplate"))
            instance_type = data.get("InstanceType")
            items.append(_instance_item(
                f"Auto Scaling group {_short(name)}", instance_type, int(props["MinSize"]),
                int(props["MaxSize"]), data, resource_pool(pools, name, resource, instance_type)))
        elif kind == "AWS::SageMaker::Cluster":
            for group in props["InstanceGroups"]:
                ml_type, group_name = group["InstanceType"], group["InstanceGroupName"]
                plan = bool(group.get("TrainingPlanArn"))
                ec2_type = ml_type.removeprefix("ml.")
                items.append(BillItem(
                    f"HyperPod instance group {group_name}: {ml_type}",
                    ("sagemaker-cluster", ml_type), group["InstanceCount"],
                    group["InstanceCount"], prepaid=plan, fallback=("ec2", ec2_type),
                    pool=_hyperpod_pool(pools, name, resource, ec2_type, group_name)))
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
    return Bill(region, items, notes, throughput, pools)


def _hyperpod_pool(pools: tuple[PoolInfo, ...], name: str, resource: dict[str, Any],
                   ec2_type: str, group_name: str) -> str | None:
    """The pool of a HyperPod instance group: :func:`~.pools.resource_pool` by its name; a
    worker group split over several compute subnets is ``<pool>``, ``<pool>-2`` ... (its pool's
    ``instance_groups`` may be tokens); the controller and login groups belong to none."""
    if group_name in (CONTROLLER_GROUP, LOGIN_GROUP):
        return None
    found = resource_pool(pools, name, resource, ec2_type, group_name)
    if found is not None:
        return found
    for pool in pools:
        if pool.instance_type == ec2_type and (group_name == pool.name or group_name.startswith(
                f"{pool.name}-")):
            return pool.name
    return None
