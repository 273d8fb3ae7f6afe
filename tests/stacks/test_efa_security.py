"""EFA's security-group rule, read from the synthesized template of every orchestrator.

EC2 user guide, EFA, "Prepare an EFA-enabled security group"
(https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa-start.html#efa-start-security): the
group of an EFA interface must allow all inbound **and** all outbound traffic from and to the
group itself. An all-outbound ``0.0.0.0/0`` rule does not stand in for the outbound one: EFA's
SRD traffic is neither IPv4 nor IPv6 and only security-group-referencing rules match it
(awslabs/awsome-distributed-ai #546; gardener/gardener-extension-provider-aws #1832: NCCL
fails with "Unresponsive receiver" until the egress rule to the group itself exists). cfn-lint,
cdk-nag and checkov all pass a template without it, so this test reads the rule itself.
"""

from __future__ import annotations

from typing import Any

import pytest

EFA_TYPES = {"efa", "efa-only"}


def efa_interface_groups(template: dict[str, Any]) -> list[Any]:
    """The security groups (as template references) of every EFA interface the stack's
    nodes get: the launch template's EFA interfaces (EKS node groups, standalone's Auto
    Scaling group) and, for HyperPod, the cluster's ``VpcConfig`` and any instance group's
    ``OverrideVpcConfig`` (HyperPod attaches the nodes' EFA interfaces in them)."""
    groups: list[Any] = []
    for resource in template["Resources"].values():
        props = resource.get("Properties", {})
        if resource["Type"] == "AWS::EC2::LaunchTemplate":
            for interface in props["LaunchTemplateData"].get("NetworkInterfaces", []):
                if interface.get("InterfaceType") in EFA_TYPES:
                    groups.extend(interface["Groups"])
        elif resource["Type"] == "AWS::SageMaker::Cluster":
            configs = [props.get("VpcConfig")] + [
                g.get("OverrideVpcConfig") for g in props["InstanceGroups"]]
            for config in filter(None, configs):
                groups.extend(config["SecurityGroupIds"])
    return groups


def _rule_to_itself(template: dict[str, Any], group: Any, kind: str) -> list[dict[str, Any]]:
    """All-protocol rules of ``group`` whose peer is ``group``: ``kind`` ``Ingress`` (peer
    ``SourceSecurityGroupId``) or ``Egress`` (``DestinationSecurityGroupId``), as rule
    resources or inline in the group."""
    peer_key = "SourceSecurityGroupId" if kind == "Ingress" else "DestinationSecurityGroupId"
    rules = [r["Properties"] for r in template["Resources"].values()
             if r["Type"] == f"AWS::EC2::SecurityGroup{kind}"
             and r["Properties"]["GroupId"] == group]
    logical = group["Fn::GetAtt"][0] if isinstance(group, dict) and "Fn::GetAtt" in group else None
    if logical in template["Resources"]:
        rules += template["Resources"][logical]["Properties"].get(f"SecurityGroup{kind}", [])
    return [r for r in rules if r.get(peer_key) == group and str(r["IpProtocol"]) == "-1"]


def check_efa_groups(s) -> None:
    """Every EFA interface group of ``s`` allows all traffic to and from itself."""
    groups = efa_interface_groups(s.template)
    if not s.config.instance.supports_efa:
        assert groups == []  # trn1.2xlarge: one plain interface, nothing to check
        return
    assert groups, "no EFA interface found: the test would check nothing"
    for group in {repr(g): g for g in groups}.values():
        assert _rule_to_itself(s.template, group, "Ingress"), f"{group}: no ingress from itself"
        assert _rule_to_itself(s.template, group, "Egress"), (
            f"{group}: no egress rule to itself; 0.0.0.0/0 does not match EFA's SRD traffic")


def test_every_efa_interface_group_allows_all_traffic_to_and_from_itself(each):
    check_efa_groups(each)


@pytest.mark.parametrize("orchestrator", ["hyperpod-slurm", "hyperpod-eks"])
def test_instance_groups_in_other_subnets_keep_the_efa_group(scale_stack, orchestrator):
    """At scale, HyperPod instance groups outside compute subnet 0 name their security group
    in ``OverrideVpcConfig``: the same rules hold for it."""
    s = scale_stack(orchestrator)
    (cluster,) = s.resources("AWS::SageMaker::Cluster").values()
    assert any("OverrideVpcConfig" in g for g in cluster["Properties"]["InstanceGroups"])
    check_efa_groups(s)


def test_the_check_fails_without_the_egress_rule(default):
    """The check above fails on the template as it was before the rule existed."""
    template = {**default.template, "Resources": {
        k: r for k, r in default.template["Resources"].items()
        if r["Type"] != "AWS::EC2::SecurityGroupEgress"}}
    (group, *_) = efa_interface_groups(template)
    assert _rule_to_itself(template, group, "Ingress")
    assert not _rule_to_itself(template, group, "Egress")
