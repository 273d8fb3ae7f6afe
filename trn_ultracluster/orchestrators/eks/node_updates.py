"""How an EKS managed node group takes a change: it follows the control plane's Kubernetes
version, and it rolls its nodes without surge instances where the capacity is reserved.

Both are properties of ``AWS::EKS::Nodegroup`` that ``aws_eks_v2.Nodegroup`` does not
expose (``Version``, ``UpdateConfig.UpdateStrategy``), so they are set on its L1 resource
(``node.default_child``).

CloudFormation refuses an update of a node group that combines a *version-type* change
(``Version``, ``ReleaseVersion``, ``LaunchTemplate``: what EKS ``UpdateNodegroupVersion``
takes) with any other (``UpdateConfig``, ``ScalingConfig``, ``Tags``, ``Labels``,
``Taints``...: ``UpdateNodegroupConfig`` and ``TagResource``), failing with "Version and
ReleaseVersion updates cannot be combined with other updates" and rolling the stack back
(CloudFormation user guide, ``AWS::EKS::Nodegroup``, callout added by
awsdocs/aws-cloudformation-user-guide#1181: "updates to tags cannot be associated with an
update ReleaseVersion, Version or LaunchTemplate"; aws/containers-roadmap#1258, whose
workaround is two CloudFormation updates; eksctl-io/eksctl#2565; aws/aws-cdk#13602 and
#16644). So an ``UpdateConfig`` is set only where it changes what EKS would do anyway
(:func:`node_update`): a stack deployed before node groups had ``Version`` (commit 8995205)
gets a new ``Version`` and launch template version on its first deploy of this version, and
an ``UpdateConfig`` in the same deploy would make it fail. ``trn-ultracluster plan`` finds
such a combination before the deploy (:func:`trn_ultracluster.changes.refused_combination`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from aws_cdk import aws_eks_v2 as eks

__all__ = ["EKS_DEFAULT_UPDATE", "MAX_UNAVAILABLE_LIMIT", "ROLL_FRACTION", "NodeUpdate",
           "follow_control_plane", "node_update", "set_node_update"]

MAX_UNAVAILABLE_LIMIT = 100
"""Most nodes a managed node group updates at once: ``maxUnavailable`` "The maximum number
is 100" (EKS API Reference, ``NodegroupUpdateConfig``,
https://docs.aws.amazon.com/eks/latest/APIReference/API_NodegroupUpdateConfig.html; EKS user
guide, "Understand each phase of node updates": "The maximum unavailable has a quota of 100
nodes. The default value is one node")."""
ROLL_FRACTION = 10
"""A roll takes at most one node in this many of a group at a time (at least one). A
synchronous training job spans every node and stops at the first one drained, so updating
one node at a time (EKS's default) only stretches the outage: a 450-node group would be
drained node by node. A tenth bounds what a roll takes away at once while finishing in about
ten rounds. Used on reserved capacity only (:func:`node_update`)."""


@dataclass(frozen=True)
class NodeUpdate:
    """The ``UpdateConfig`` of one Trainium node group.

    Attributes:
        strategy: ``DEFAULT`` (launch the new nodes first, then terminate the old) or
            ``MINIMAL`` (terminate first, then launch; never above the configured size).
        max_unavailable: nodes updated in parallel, 1-:data:`MAX_UNAVAILABLE_LIMIT`.
    """

    strategy: Literal["DEFAULT", "MINIMAL"]
    max_unavailable: int

    def cfn(self) -> dict[str, object]:
        """The ``UpdateConfig`` property (CloudFormation, ``AWS::EKS::Nodegroup
        UpdateConfig``: ``MaxUnavailable``, ``UpdateStrategy``)."""
        return {"MaxUnavailable": self.max_unavailable, "UpdateStrategy": self.strategy}


EKS_DEFAULT_UPDATE = NodeUpdate("DEFAULT", 1)
"""What EKS does with a node group that has no ``UpdateConfig``: one node at a time ("The
maximum unavailable has a quota of 100 nodes. The default value is one node", EKS user guide,
"Understand each phase of node updates",
https://docs.aws.amazon.com/eks/latest/userguide/managed-node-update-behavior.html), by the
*default* strategy, which "launches the new instances first, before terminating the old
instances" (EKS API Reference, ``NodegroupUpdateConfig``, ``updateStrategy``, valid values
``DEFAULT | MINIMAL``). That a group without ``updateStrategy`` uses ``DEFAULT`` is what the
name "default strategy" says; no page states the default value outright (not verified)."""


def node_update(capacity_type: str, group_nodes: int,
                mode: Literal["auto", "none"] = "auto") -> NodeUpdate | None:
    """The ``UpdateConfig`` of a Trainium node group of ``group_nodes`` nodes (its max size) on
    ``capacity_type``, or None to leave it out (EKS's defaults, :data:`EKS_DEFAULT_UPDATE`),
    for how the group rolls its nodes when its launch template version or Kubernetes version
    changes.

    EKS user guide, "Understand each phase of node updates"
    (https://docs.aws.amazon.com/eks/latest/userguide/managed-node-update-behavior.html):
    the *default* strategy "creates new nodes before terminating the old ones, so that the
    available capacity is maintained"; the *minimal* strategy is "useful in scenarios where
    you are constrained to resources or costs, for example with hardware accelerators such
    as GPUs. It terminat[es] the old nodes before creating the new ones, so that total
    capacity never increases beyond your configured quantity". The same page's scale-up
    phase raises the group's size by the larger of twice its AZs and ``maxUnavailable``
    before the upgrade phase; that it is skipped under *minimal* is what "never increases
    beyond your configured quantity" says, not verified separately. The EKS API Reference
    (``NodegroupUpdateConfig``, ``updateStrategy``) says the same: "The minimal strategy
    removes the guardrails and terminates the old instances before launching the new
    instances ... useful in scenarios where you are constrained to resources or costs (for
    example, with hardware accelerators such as GPUs)". No page says how ``MINIMAL`` meets a
    Capacity Block node group in particular (not verified against AWS).

    - ``capacity-reservation`` and ``capacity-block``: ``MINIMAL``, :data:`ROLL_FRACTION` of
      the group at a time (at least 1, at most :data:`MAX_UNAVAILABLE_LIMIT`). A reservation
      sized to the cluster has no room for a surge instance (a targeted launch beyond it
      fails), so the default strategy's new nodes could not launch and the update would fail
      with ``NodeCreationFailure``; terminating first frees the reserved slot the replacement
      takes. With ``mode`` ``none``: None (the first deploy of the two-step upgrade, module
      doc and docs/deploy.md "Upgrading a deployed stack").
    - ``on-demand``: None, EKS's defaults: the *default* strategy, EKS's recommendation "in
      most scenarios" (the group keeps its capacity while it rolls; the surge instances come
      from On-Demand capacity, which is not guaranteed for Trainium: if it is short, the
      update fails and the old nodes stay), one node at a time. An explicit ``UpdateConfig``
      (a tenth of the group at a time, as this module set before) would roll a large group
      faster, but a stack deployed before node groups had ``Version`` would then get it in the
      same update as its new ``Version`` and launch template version, which CloudFormation
      refuses (module doc): the default profile's upgrade would fail. One node at a time
      makes a roll of a 450-node group long; a synchronous training job stops at the first
      drained node either way.

    Raises:
        ValueError: an unknown capacity type or mode.
    """
    if capacity_type not in ("on-demand", "capacity-reservation", "capacity-block"):
        raise ValueError(f"capacity type must be on-demand, capacity-reservation or "
                         f"capacity-block, got: {capacity_type!r}")
    if mode not in ("auto", "none"):
        raise ValueError(f"mode must be auto or none, got: {mode!r}")
    if capacity_type == "on-demand" or mode == "none":
        return None
    parallel = min(MAX_UNAVAILABLE_LIMIT, max(1, math.ceil(group_nodes / ROLL_FRACTION)))
    return NodeUpdate("MINIMAL", parallel)


def set_node_update(nodegroup: eks.Nodegroup, update: NodeUpdate | None) -> None:
    """Give ``nodegroup`` the ``UpdateConfig`` of ``update`` (None: none, EKS's defaults).
    Changing it later updates the group in place (``UpdateConfig``: "Update requires: No
    interruption", CloudFormation template reference, ``AWS::EKS::Nodegroup UpdateConfig``),
    in a deploy of its own when the group's version-type properties change too (module doc)."""
    if update is not None:
        nodegroup.node.default_child.add_property_override(  # type: ignore[union-attr]
            "UpdateConfig", update.cfn())


def follow_control_plane(nodegroup: eks.Nodegroup, version: str) -> None:
    """Pin ``nodegroup``'s Kubernetes ``version`` (``"1.36"``) to the control plane's, so that a
    change of ``eks.kubernetes_version`` upgrades the nodes in the same deploy, after the
    control plane.

    Without ``Version`` a node group takes the cluster's version when it is created and keeps
    it ("The Kubernetes version to use for your managed nodes. By default, the Kubernetes
    version of the cluster is used, and this is the only accepted specified value",
    CloudFormation template reference, ``AWS::EKS::Nodegroup`` ``Version``, "Update requires:
    No interruption"; EKS API Reference, ``CreateNodegroup``): managed nodes
    "aren't automatically upgraded when you or Amazon EKS update your control plane" (EKS user
    guide, "Understand the Kubernetes version lifecycle on EKS", FAQ,
    https://docs.aws.amazon.com/eks/latest/userguide/kubernetes-versions.html), and kubelet may
    be at most three minor versions older than the API server (Kubernetes "Version Skew
    Policy", https://kubernetes.io/releases/version-skew-policy/#kubelet), so a cluster whose
    nodes stay behind cannot take the next upgrades. A version change rolls the group as
    :func:`node_update` says. ``Version`` must not be given with a launch template that names
    a custom AMI (same ``CreateNodegroup`` entry); the EKS node groups' launch template names
    none (the AMI type gives it).

    Order: the node group's ``ClusterName`` is a ``Ref`` to the ``AWS::EKS::Cluster``
    (``aws_eks_v2``), so CloudFormation updates the control plane first and the node group
    after it. (An explicit dependency on the cluster construct would also reach the Helm
    charts and manifests under it, which wait for the node groups: a cycle.)
    """
    nodegroup.node.default_child.add_property_override(  # type: ignore[union-attr]
        "Version", version)
