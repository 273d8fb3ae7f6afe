"""The Trainium nodes: ``nodes`` (the instance type, root volume and EFA layout are
top-level keys of :class:`~trn_ultracluster.config.model.ClusterConfig`)."""

from __future__ import annotations

from trn_ultracluster.config.model.base import FrozenModel

__all__ = ["NodeCounts"]


class NodeCounts(FrozenModel):
    """Trainium node counts of the compute node group / instance group.

    Default: 0 minimum (the cluster can go idle), 1 desired, 1 maximum.

    Attributes:
        min: the fewest nodes the group keeps (0: the pool can go idle and cost nothing).
        desired: the nodes it runs after deploy (HyperPod: the instances it always runs;
            EKS and standalone: the start, changed later with ``trn-ultracluster scale``).
        max: the most nodes it may hold: the address plan, quotas and limits are checked
            against it. 0 <= min <= desired <= max and 1 <= max <= 100,000 (the largest EKS
            cluster); the VPC's Network Address Usage bounds it lower (docs/scale.md), and a
            type without EFA allows only 1.
    """

    min: int = 0
    desired: int = 1
    max: int = 1
