"""Rules of the SageMaker HyperPod Slurm orchestrator: instance types HyperPod offers,
cluster and instance group names, partitions, counts, volumes and training plans."""

from __future__ import annotations

from collections.abc import Iterator

from trn_ultracluster.config.errors import ConfigIssue, one_of
from trn_ultracluster.config.facts import (
    DOC_HYPERPOD,
    DOC_HYPERPOD_CREATE,
    DOC_HYPERPOD_GROUP,
    DOC_HYPERPOD_SLURM,
    DOC_SUBNET_IPS,
    HYPERPOD_EBS_GIB_RANGE,
    HYPERPOD_MAX_INSTANCE_COUNT,
    HYPERPOD_NAME_RE,
    HYPERPOD_TYPE_RE,
    TRAINING_PLAN_RE,
)
from trn_ultracluster.config.model import ClusterConfig
from trn_ultracluster.contracts.catalog import CATALOG
from trn_ultracluster.contracts.hyperpod import ALL_NODES_PARTITION, CONTROLLER_GROUP, LOGIN_GROUP

__all__ = ["hyperpod", "orchestrator"]


def orchestrator(c: ClusterConfig) -> Iterator[ConfigIssue]:
    spec = CATALOG.get(c.instance_type)
    if c.orchestrator == "hyperpod-slurm" and spec is not None and spec.hyperpod_instance_type is None:
        offered = sorted(n for n, s in CATALOG.items() if s.hyperpod_instance_type)
        yield ConfigIssue(
            "orchestrator", c.orchestrator,
            f"must be 'eks' for {c.instance_type}: SageMaker HyperPod offers only "
            f"{one_of(offered)} (or choose one of those instance types)",
            DOC_HYPERPOD,
        )


def hyperpod(c: ClusterConfig) -> Iterator[ConfigIssue]:
    if c.orchestrator != "hyperpod-slurm":
        return
    hp = c.hyperpod
    name_rule = "must be 1-63 letters, digits and single hyphens, starting and ending with " \
                "a letter or digit"
    if len(hp.cluster_name) > 63 or not HYPERPOD_NAME_RE.match(hp.cluster_name):
        yield ConfigIssue("hyperpod.cluster_name", hp.cluster_name, name_rule, DOC_HYPERPOD_CREATE)
    for field in ("controller_instance_type", "login_instance_type"):
        value = getattr(hp, field)
        if value is not None and not HYPERPOD_TYPE_RE.match(value):
            yield ConfigIssue(f"hyperpod.{field}", value,
                              "must be a SageMaker HyperPod instance type like 'ml.c5.xlarge'",
                              DOC_HYPERPOD_GROUP)
    if not hp.worker_groups:
        yield ConfigIssue("hyperpod.worker_groups", [], "must hold at least one worker group",
                          DOC_HYPERPOD_GROUP)
    seen: set[str] = {CONTROLLER_GROUP, LOGIN_GROUP}
    total = 0
    for i, group in enumerate(hp.worker_groups):
        where = f"hyperpod.worker_groups[{i}]"
        if len(group.name) > 63 or not HYPERPOD_NAME_RE.match(group.name):
            yield ConfigIssue(f"{where}.name", group.name, name_rule, DOC_HYPERPOD_GROUP)
        elif group.name in seen:
            yield ConfigIssue(f"{where}.name", group.name,
                              f"must differ from the other instance group names "
                              f"({', '.join(sorted(seen))})", DOC_HYPERPOD_GROUP)
        seen.add(group.name)
        if not HYPERPOD_NAME_RE.match(group.partition):
            yield ConfigIssue(f"{where}.partition", group.partition,
                              "must be a Slurm partition name of letters, digits and single "
                              "hyphens", DOC_HYPERPOD_GROUP)
        elif group.partition == ALL_NODES_PARTITION:
            yield ConfigIssue(f"{where}.partition", group.partition,
                              f"must not be '{ALL_NODES_PARTITION}': HyperPod puts every "
                              "node of the cluster in that partition itself", DOC_HYPERPOD_SLURM)
        count = c.worker_group_count(group)
        if not 0 <= count <= HYPERPOD_MAX_INSTANCE_COUNT:
            yield ConfigIssue(f"{where}.instance_count", count,
                              f"must be between 0 and {HYPERPOD_MAX_INSTANCE_COUNT}",
                              DOC_HYPERPOD_GROUP)
        total += max(count, 0)
    if total > c.nodes.max:
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
    if c.capacity.type != "on-demand":
        yield ConfigIssue("capacity.type", c.capacity.type,
                          "must be 'on-demand' with orchestrator 'hyperpod-slurm': HyperPod "
                          "does not launch into EC2 capacity reservations; reserve capacity "
                          "with a SageMaker training plan (hyperpod.training_plan_arn)",
                          DOC_HYPERPOD_GROUP)
