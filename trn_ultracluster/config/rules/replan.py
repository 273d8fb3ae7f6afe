"""A warning where a change of the addresses per node would re-split the Trainium groups of a
running cluster across its compute subnets.

Synth cannot know the deployed stack, so this rule cannot tell whether a value changed; it
says, once, on every configuration whose groups already fill more than one compute subnet,
which fields decide the split and what a change of them does. ``trn-ultracluster plan``
(and ``make deploy``) compares with the deployed stack and names the groups.
"""

from __future__ import annotations

from collections.abc import Iterator

from trn_ultracluster import network_plan
from trn_ultracluster.config.errors import ConfigIssue
from trn_ultracluster.config.facts import DOC_SCALE
from trn_ultracluster.config.model import ClusterConfig
from trn_ultracluster.config.rules.scale import plannable

__all__ = ["FIELDS", "resplit"]

FIELDS = {
    "eks": ("instance_type", "efa_interface_layout", "eks.pod_ips_per_node"),
    "standalone": ("instance_type", "efa_interface_layout"),
}
"""The fields that decide a node's addresses (:func:`trn_ultracluster.network_plan.
node_addresses`), and so how many nodes a compute subnet holds, per orchestrator whose groups
the stack places (HyperPod ignores the layout and the pod addresses; its instance groups
follow the instance type only, whose change replaces them anyway)."""

_WHAT_HAPPENS = {
    "eks": ("a node group whose subnet changes is replaced with its running nodes ("
            "Subnets is create-only on AWS::EKS::Nodegroup), and a group the new plan no "
            "longer has is deleted"),
    "standalone": ("an Auto Scaling group whose subnet changes replaces its running instances "
                   "(VPCZoneIdentifier: 'Some interruptions', CloudFormation template "
                   "reference), and a group the new plan no longer has is deleted"),
}


def _value(c: ClusterConfig, field: str) -> object:
    obj: object = c
    for part in field.split("."):
        obj = getattr(obj, part)
    return obj


def resplit(c: ClusterConfig) -> Iterator[ConfigIssue]:
    """One warning on ``eks`` and ``standalone`` when the Trainium groups fill more than one
    compute subnet: the fields of :data:`FIELDS` set how many nodes each subnet holds, so a
    change of any of them on a running cluster re-splits the groups (the compute subnets keep
    their blocks; which group goes where changes), with what :data:`_WHAT_HAPPENS` says.
    Nothing for a plan of one subnet: its one group stays in subnet 0 (fill order)."""
    fields = FIELDS.get(c.orchestrator)
    if fields is None or not plannable(c):
        return
    try:
        plan = c.address_plan
    except network_plan.PlanError:
        return  # scale.address_plan reports it
    subnets = sorted({g.subnet for g in plan.groups})
    if len(subnets) < 2:
        return
    split = ", ".join(f"subnet {s}: {sum(g.nodes for g in plan.groups if g.subnet == s)} nodes "
                      f"in {sum(1 for g in plan.groups if g.subnet == s)} group(s)"
                      for s in subnets)
    if c.pools:
        yield _pools_resplit(c, plan, subnets, split)
        return
    others = " and ".join(f"{f} ({_value(c, f)})" for f in fields[1:])
    yield ConfigIssue(
        fields[0], _value(c, fields[0]),
        f"should change on a running cluster only after `trn-ultracluster plan` (or with "
        f"`make deploy`), and so should {others}: they set the addresses per node "
        f"({plan.per_node.rule}), which split the {len(plan.groups)} Trainium groups over "
        f"{len(subnets)} compute subnets ({split}); a change re-splits them: "
        f"{_WHAT_HAPPENS[c.orchestrator]}",
        DOC_SCALE, severity="warning")


def _pools_resplit(c: ClusterConfig, plan: network_plan.AddressPlan, subnets: list[int],
                   split: str) -> ConfigIssue:
    """With ``pools``: the pools fill the compute subnets in order, the first pool first
    (:func:`trn_ultracluster.network_plan.plan`), so what sets a pool's addresses per node, and
    the ``nodes.max`` of every pool before the last (its nodes take room the next pool's
    groups would have), move the later pools' groups too; a pool added at the end moves
    none."""
    per_pool = [f for f in FIELDS[c.orchestrator] if not f.startswith("eks.")]
    shared = [f"{f} ({_value(c, f)})" for f in FIELDS[c.orchestrator] if f.startswith("eks.")]
    earlier = ", ".join(f"{p.name}: {p.nodes.max}" for p in c.node_pools[:-1])
    what = ", ".join([f"each pool's {' and '.join(per_pool)}", *shared]
                     + ([f"the nodes.max of every pool but the last ({earlier}) and the pools' "
                         "order"] if earlier else []))
    return ConfigIssue(
        "pools", [p.name for p in c.node_pools],
        f"should change on a running cluster only after `trn-ultracluster plan` (or with "
        f"`make deploy`) in what decides where their groups go: {what}. The pools fill the "
        f"compute subnets in order ({plan.per_pool_rule}), which puts the {len(plan.groups)} "
        f"groups of the pools in {len(subnets)} compute subnets ({split}); a change re-splits "
        f"them (a pool added after the last moves none): {_WHAT_HAPPENS[c.orchestrator]}",
        DOC_SCALE, severity="warning")
