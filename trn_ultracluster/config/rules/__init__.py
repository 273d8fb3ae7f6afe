"""The AWS rules that span fields, one module per concern.

Each rule takes the shape-checked :class:`~trn_ultracluster.config.model.ClusterConfig`
and yields a :class:`~trn_ultracluster.config.errors.ConfigIssue` per problem: an error
says what the field "must" be, a warning what it "should" be. :data:`RULES` runs them in
this order, so that issues are listed in the same order every time.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from trn_ultracluster.config.errors import ConfigIssue
from trn_ultracluster.config.model import ClusterConfig
from trn_ultracluster.config.rules import (
    capacity,
    compute,
    eks,
    fsx,
    hyperpod,
    network,
    observability,
    pools,
    replan,
    scale,
    stack,
    standalone,
    tags,
    task_governance,
    teams,
    training_image,
)

__all__ = ["RULES", "Rule"]

Rule = Callable[[ClusterConfig], Iterator[ConfigIssue]]

RULES: tuple[Rule, ...] = (
    stack.stack_name,
    pools.pool_names,
    pools.pool_types,
    pools.pools_replace_shorthand,
    pools.cpu_pool_settings,
    compute.instance_type_known,
    compute.node_counts,
    compute.whole_ultraservers,
    compute.multi_node_needs_efa,
    compute.efa_layout_needs_efa,
    training_image.neuron_stack,
    training_image.user_image,
    network.az_ids,
    network.az_offers_instance,
    network.vpc_cidr,
    network.nat_gateways,
    scale.quotas,
    scale.address_plan,
    replan.resplit,
    scale.control_plane,
    scale.capacity_at_scale,
    scale.file_system_throughput,
    compute.root_volume,
    fsx.fsx_capacity,
    fsx.fsx_throughput,
    fsx.fsx_version,
    fsx.fsx_data_repository,
    fsx.data_removal,
    fsx.fsx_efa,
    capacity.capacity,
    capacity.reservation_placement_group,
    hyperpod.orchestrator,
    hyperpod.hyperpod,
    hyperpod.unused_node_settings,
    hyperpod.worker_parts,
    hyperpod.hyperpod_eks,
    eks.eks,
    observability.observability,
    standalone.standalone,
    teams.teams_orchestrator,
    teams.team_names,
    teams.team_quotas,
    teams.priority_classes,
    task_governance.task_governance,
    tags.tags,
)
