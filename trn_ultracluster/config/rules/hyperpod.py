"""Rules of the SageMaker HyperPod orchestrators (``hyperpod-slurm``, ``hyperpod-eks``):
instance types HyperPod offers, cluster and instance group names, counts, volumes and training
plans; Slurm's controller, login node and partitions; HyperPod on EKS's Kubernetes version,
VPC CNI, Region and job restarts."""

from __future__ import annotations

from collections.abc import Iterator

from trn_ultracluster import network_plan
from trn_ultracluster.config.errors import ConfigIssue, one_of
from trn_ultracluster.config.facts import (
    ADDON_VERSION_RE,
    DOC_HYPERPOD,
    DOC_HYPERPOD_CREATE,
    DOC_HYPERPOD_EKS,
    DOC_HYPERPOD_EKS_AUTO_RESUME,
    DOC_HYPERPOD_EKS_HELM,
    DOC_HYPERPOD_GROUP,
    DOC_HYPERPOD_SLURM,
    DOC_SUBNET_IPS,
    HYPERPOD_EBS_GIB_RANGE,
    HYPERPOD_EKS_KUBERNETES_VERSIONS,
    HYPERPOD_HMA_IMAGE_ACCOUNTS,
    HYPERPOD_MAX_INSTANCE_COUNT,
    HYPERPOD_NAME_MAX_CHARS,
    HYPERPOD_NAME_RE,
    HYPERPOD_NEURON_PLUGIN_TYPES,
    HYPERPOD_TYPE_RE,
    JOB_MAX_RESTARTS_RANGE,
    TRAINING_PLAN_RE,
    VPC_CNI_MIN_FOR_HYPERPOD,
)
from trn_ultracluster.config.model import ClusterConfig
from trn_ultracluster.config.rules.scale import plannable
from trn_ultracluster.contracts.catalog import CATALOG
from trn_ultracluster.contracts.hyperpod import (
    ALL_NODES_PARTITION,
    CONTROLLER_GROUP,
    LOGIN_GROUP,
    part_group_name,
)

__all__ = ["HYPERPOD_ORCHESTRATORS", "hyperpod", "hyperpod_eks", "orchestrator",
           "unused_node_settings", "worker_parts"]

HYPERPOD_ORCHESTRATORS = ("hyperpod-slurm", "hyperpod-eks")
"""The orchestrators whose nodes SageMaker HyperPod runs (the ``hyperpod`` section)."""


def orchestrator(c: ClusterConfig) -> Iterator[ConfigIssue]:
    """Every pool's type must be one HyperPod offers (an ``ml.`` name in the catalog); the
    CPU catalog's types all are."""
    if c.orchestrator not in HYPERPOD_ORCHESTRATORS:
        return
    for pool in c.node_pools:
        spec = CATALOG.get(pool.instance_type)
        if spec is None or spec.hyperpod_instance_type is not None:
            continue
        offered = sorted(n for n, s in CATALOG.items() if s.hyperpod_instance_type)
        field = pool.key("instance_type") if c.pools else "orchestrator"
        yield ConfigIssue(
            field, pool.instance_type if c.pools else c.orchestrator,
            f"must be 'eks' or 'standalone' for {spec.name}: SageMaker HyperPod offers only "
            f"{one_of(offered)} (or choose one of those instance types)",
            DOC_HYPERPOD,
        )


_NAME_RULE = ("must be 1-63 letters, digits and single hyphens, starting and ending with a "
              "letter or digit")


def _partition(where: str, partition: str) -> Iterator[ConfigIssue]:
    if not HYPERPOD_NAME_RE.match(partition):
        yield ConfigIssue(f"{where}.partition", partition,
                          "must be a Slurm partition name of letters, digits and single "
                          "hyphens", DOC_HYPERPOD_GROUP)
    elif partition == ALL_NODES_PARTITION:
        yield ConfigIssue(f"{where}.partition", partition,
                          f"must not be '{ALL_NODES_PARTITION}': HyperPod puts every "
                          "node of the cluster in that partition itself", DOC_HYPERPOD_SLURM)


def hyperpod(c: ClusterConfig) -> Iterator[ConfigIssue]:
    if c.orchestrator not in HYPERPOD_ORCHESTRATORS:
        return
    slurm = c.orchestrator == "hyperpod-slurm"
    hp = c.hyperpod
    name_rule = _NAME_RULE
    if hp.cluster_name is not None and (len(hp.cluster_name) > 63
                                        or not HYPERPOD_NAME_RE.match(hp.cluster_name)):
        yield ConfigIssue("hyperpod.cluster_name", hp.cluster_name, name_rule, DOC_HYPERPOD_CREATE)
    for field in ("controller_instance_type", "login_instance_type") if slurm else ():
        value = getattr(hp, field)
        if value is not None and not HYPERPOD_TYPE_RE.match(value):
            yield ConfigIssue(f"hyperpod.{field}", value,
                              "must be a SageMaker HyperPod instance type like 'ml.c5.xlarge'",
                              DOC_HYPERPOD_GROUP)
    if not hp.worker_groups:
        yield ConfigIssue("hyperpod.worker_groups", [], "must hold at least one worker group",
                          DOC_HYPERPOD_GROUP)
    seen: set[str] = {CONTROLLER_GROUP, LOGIN_GROUP} if slurm else set()
    total = 0
    for i, (group, pool) in enumerate(c.hyperpod_worker_groups):
        where = pool.field if c.pools else f"hyperpod.worker_groups[{i}]"
        if len(group.name) > 63 or not HYPERPOD_NAME_RE.match(group.name):
            yield ConfigIssue(f"{where}.name", group.name, name_rule, DOC_HYPERPOD_GROUP)
        elif group.name in seen:
            yield ConfigIssue(f"{where}.name", group.name,
                              f"must differ from the other instance group names "
                              f"({', '.join(sorted(seen))})", DOC_HYPERPOD_GROUP)
        seen.add(group.name)
        if slurm:
            if c.pools and group.partition == ALL_NODES_PARTITION:
                yield ConfigIssue(f"{where}.name", group.name,
                                  f"must not be '{ALL_NODES_PARTITION}' with orchestrator "
                                  "'hyperpod-slurm': a pool is a Slurm partition of its name, "
                                  "and HyperPod puts every node in that partition itself",
                                  DOC_HYPERPOD_SLURM)
            elif not c.pools:
                yield from _partition(where, group.partition)
        count = c.worker_group_count(group)
        if not 0 <= count <= HYPERPOD_MAX_INSTANCE_COUNT:
            yield ConfigIssue(f"{where}.instance_count", count,
                              f"must be between 0 and {HYPERPOD_MAX_INSTANCE_COUNT}",
                              DOC_HYPERPOD_GROUP)
        total += max(count, 0)
    if not c.pools and total > c.nodes.max:
        yield ConfigIssue("hyperpod.worker_groups", total,
                          f"must ask for at most nodes.max ({c.nodes.max}) worker nodes in "
                          f"all, not {total} (nodes.max sizes the compute subnet): raise nodes.max",
                          DOC_SUBNET_IPS)
    lo, hi = HYPERPOD_EBS_GIB_RANGE
    if not lo <= hp.worker_ebs_volume_gib <= hi:
        yield ConfigIssue("hyperpod.worker_ebs_volume_gib", hp.worker_ebs_volume_gib,
                          f"must be between {lo} and {hi} GiB", DOC_HYPERPOD_GROUP)
    if len(set(hp.deep_health_checks)) != len(hp.deep_health_checks):
        yield ConfigIssue("hyperpod.deep_health_checks", list(hp.deep_health_checks),
                          "must not repeat a check", DOC_HYPERPOD_GROUP)
    if hp.training_plan_arn is not None and (
            not 50 <= len(hp.training_plan_arn) <= 2048
            or not TRAINING_PLAN_RE.match(hp.training_plan_arn)):
        yield ConfigIssue("hyperpod.training_plan_arn", hp.training_plan_arn,
                          "must be a training plan ARN like 'arn:aws:sagemaker:us-west-2:"
                          "123456789012:training-plan/my-plan' (50-2048 characters)",
                          DOC_HYPERPOD_GROUP)
    capacities = {"capacity.type": c.capacity.type}
    capacities.update({f"pools[{i}].capacity.type": p.capacity.type
                       for i, p in enumerate(c.pools) if p.capacity is not None})
    for field, kind in capacities.items():
        if kind != "on-demand":
            yield ConfigIssue(field, kind,
                              f"must be 'on-demand' with orchestrator {c.orchestrator!r}: "
                              "HyperPod does not launch into EC2 capacity reservations; "
                              "reserve capacity with a SageMaker training plan "
                              "(hyperpod.training_plan_arn)", DOC_HYPERPOD_GROUP)


_HYPERPOD_DOES_INSTEAD = {
    "root_volume_gib": "HyperPod sizes its nodes' root volumes itself; the extra storage of "
                       "a worker is hyperpod.worker_ebs_volume_gib (an EBS volume HyperPod "
                       "mounts on every worker)",
    "efa_interface_layout": "HyperPod creates the nodes' network interfaces itself (an "
                            "instance group's own NetworkInterface.InterfaceType, which the "
                            "stack does not set)",
    "placement_group": "HyperPod places an instance group's nodes itself (an instance group "
                       "takes no placement group)",
}
"""What HyperPod does instead of each top-level node setting the stack's EFA launch template
and placement group carry (:func:`unused_node_settings`). An instance group's
``NetworkInterface`` (``InterfaceType`` ``efa`` or ``efa-only``) exists in the SageMaker API
(botocore 1.44's ``ClusterInstanceGroupSpecification``) and in the CloudFormation schema of
``AWS::SageMaker::Cluster`` cfn-lint ships; the stack does not map ``efa_interface_layout``
to it (HyperPod's address counting in :func:`trn_ultracluster.network_plan.node_addresses`
assumes its default)."""


_SETS = {
    "root_volume_gib": "launch template",
    "efa_interface_layout": "launch template",
    "placement_group": "launch template and placement group",
}
"""What each setting of :data:`_HYPERPOD_DOES_INSTEAD` changes in the template: the stack's
EFA launch template (and placement group), or a pool's own."""


def unused_node_settings(c: ClusterConfig) -> Iterator[ConfigIssue]:
    """On ``hyperpod-slurm`` and ``hyperpod-eks`` the nodes are HyperPod's: it launches them
    from its instance groups, not from the stack's launch template, so ``root_volume_gib``,
    ``efa_interface_layout`` and ``placement_group`` change only resources no node uses (the
    launch template, the placement group). A value other than the default is a warning
    naming what HyperPod uses instead. Source: SageMaker API Reference,
    ``ClusterInstanceGroupSpecification``
    (:data:`~trn_ultracluster.config.facts.DOC_HYPERPOD_GROUP`; botocore's SageMaker model):
    an instance group has no launch template, no root volume size and no placement group;
    its storage is ``InstanceStorageConfigs`` (``EbsVolumeConfig``). ``capacity.*`` needs no
    warning: anything but ``on-demand`` is an error (:func:`hyperpod`), and
    ``capacity.placement_group_name`` needs a capacity reservation.

    The same holds for a pool's own ``pools[i].root_volume_gib``, ``efa_interface_layout``
    and ``placement_group`` (set, whatever the value: a pool's setting exists only to differ
    from the top-level one): its instance groups are HyperPod's too."""
    if c.orchestrator not in HYPERPOD_ORCHESTRATORS:
        return
    defaults = ClusterConfig.model_fields
    set_here = [(field, field, getattr(c, field), "the stack's EFA")
                for field in _HYPERPOD_DOES_INSTEAD
                if getattr(c, field) != defaults[field].default]
    set_here += [(f"pools[{i}].{field}", field, getattr(pool, field), f"pool {pool.name}'s")
                 for i, pool in enumerate(c.pools)
                 for field in _HYPERPOD_DOES_INSTEAD if getattr(pool, field) is not None]
    for path, setting, value, owner in set_here:
        yield ConfigIssue(
            path, value,
            f"should be left out with orchestrator {c.orchestrator!r}: it sets "
            f"{owner} {_SETS[setting]}, which HyperPod does not use, so it changes nothing "
            f"on the nodes; {_HYPERPOD_DOES_INSTEAD[setting]}",
            DOC_HYPERPOD_GROUP, severity="warning")


def worker_parts(c: ClusterConfig) -> Iterator[ConfigIssue]:
    """A worker group split into several instance groups (one per compute subnet it fills,
    :attr:`ClusterConfig.hyperpod_worker_parts`) names the last ``<name>-<n>``: that name
    too must be at most 63 characters (``ClusterInstanceGroupName``)."""
    if c.orchestrator not in HYPERPOD_ORCHESTRATORS or not plannable(c):
        return
    try:
        parts = c.hyperpod_worker_parts
    except network_plan.PlanError:
        return  # scale.address_plan reports it
    for i, (group, pool) in enumerate(c.hyperpod_worker_groups):
        last = part_group_name(group.name, len(parts[group.name]) - 1)
        if len(group.name) <= HYPERPOD_NAME_MAX_CHARS < len(last):
            most = HYPERPOD_NAME_MAX_CHARS - (len(last) - len(group.name))
            yield ConfigIssue(
                pool.key("name") if c.pools else f"hyperpod.worker_groups[{i}].name", group.name,
                f"must be at most {most} characters: its {c.worker_group_count(group)} "
                f"instances take {len(parts[group.name])} instance groups (one per compute "
                f"subnet they fill, at most {HYPERPOD_MAX_INSTANCE_COUNT} each), the last "
                f"named '<name>-{len(parts[group.name])}', and an instance group name has "
                f"at most {HYPERPOD_NAME_MAX_CHARS}", DOC_HYPERPOD_GROUP)


def hyperpod_eks(c: ClusterConfig) -> Iterator[ConfigIssue]:
    """HyperPod on EKS: an instance type the Neuron device plugin of HyperPod's chart runs on,
    a Kubernetes version and VPC CNI HyperPod supports, a Region with the health-monitoring
    agent's image, and the TrainJob restart bound."""
    if c.orchestrator != "hyperpod-eks":
        return
    for pool in c.node_pools:
        spec = CATALOG.get(pool.instance_type)
        ml_type = spec.hyperpod_instance_type if spec is not None else None
        if ml_type is not None and ml_type not in HYPERPOD_NEURON_PLUGIN_TYPES:
            yield ConfigIssue(
                pool.key("instance_type") if c.pools else "orchestrator",
                pool.instance_type if c.pools else c.orchestrator,
                f"must be 'hyperpod-slurm', 'eks' or 'standalone' for {spec.name}: the Neuron "
                f"device plugin of SageMaker HyperPod's Helm chart runs only on "
                f"{', '.join(HYPERPOD_NEURON_PLUGIN_TYPES)}, so {ml_type} nodes would offer no "
                "NeuronCores to jobs", DOC_HYPERPOD_EKS_HELM)
    version = c.kubernetes_version
    if version not in HYPERPOD_EKS_KUBERNETES_VERSIONS:
        yield ConfigIssue("eks.kubernetes_version", version,
                          f"must be one of {one_of(HYPERPOD_EKS_KUBERNETES_VERSIONS)} with "
                          "orchestrator 'hyperpod-eks' (the versions SageMaker HyperPod supports)",
                          DOC_HYPERPOD_EKS)
    cni = c.eks.addon_versions.vpc_cni
    match = ADDON_VERSION_RE.match(cni or "")
    if match and tuple(int(g) for g in match.groups()) < VPC_CNI_MIN_FOR_HYPERPOD:
        need = ".".join(map(str, VPC_CNI_MIN_FOR_HYPERPOD))
        yield ConfigIssue("eks.addon_versions.vpc_cni", cni,
                          f"must be v{need} or newer with orchestrator 'hyperpod-eks' (SageMaker "
                          "HyperPod's minimum)", DOC_HYPERPOD_EKS)
    if c.region not in HYPERPOD_HMA_IMAGE_ACCOUNTS:
        yield ConfigIssue("az_ids", list(c.az_ids),
                          f"must be in a Region where HyperPod's health-monitoring agent image "
                          f"is published ({', '.join(sorted(HYPERPOD_HMA_IMAGE_ACCOUNTS))}) with "
                          f"orchestrator 'hyperpod-eks', not {c.region}", DOC_HYPERPOD_EKS_HELM)
    lo, hi = JOB_MAX_RESTARTS_RANGE
    if not lo <= c.hyperpod.job_max_restarts <= hi:
        yield ConfigIssue("hyperpod.job_max_restarts", c.hyperpod.job_max_restarts,
                          f"must be between {lo} and {hi}", DOC_HYPERPOD_EKS_AUTO_RESUME)
