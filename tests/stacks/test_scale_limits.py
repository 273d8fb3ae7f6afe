"""Every configuration's Trainium groups, read from the template: each within its service
limit, in one compute subnet of the compute AZ, and every node's addresses fit that subnet.

Limits (each cited):
- EKS: "Nodes per managed node group: 450" (EKS user guide, service quotas,
  https://docs.aws.amazon.com/eks/latest/userguide/service-quotas.html), or the raised
  ``quotas.eks_nodes_per_nodegroup``;
- HyperPod: ``InstanceCount`` 0-6758 and 1-100 instance groups per cluster (botocore SageMaker
  model, ``ClusterInstanceCount``, ``ClusterInstanceGroupSpecifications``);
- subnets: 5 addresses of every subnet are AWS's ("Subnet CIDR blocks",
  https://docs.aws.amazon.com/vpc/latest/userguide/subnet-sizing.html).
"""

from __future__ import annotations

import ipaddress
from collections import defaultdict

from trn_ultracluster.config.facts import HYPERPOD_MAX_INSTANCE_COUNT
from trn_ultracluster.network_plan import SUBNET_RESERVED_IPS, subnet0_reserve

HYPERPOD_MAX_GROUPS = 100


def _ref(value) -> str:
    assert isinstance(value, dict) and set(value) == {"Ref"}, value
    return value["Ref"]


def trainium_groups(s) -> list[tuple[str, int, list[str]]]:
    """(logical id, most nodes, subnet logical ids) of every group of Trainium nodes."""
    res, out = s.template["Resources"], []
    for key, r in res.items():
        p = r["Properties"]
        if r["Type"] == "AWS::EKS::Nodegroup" and "TrainiumNodes" in key:
            out.append((key, p["ScalingConfig"]["MaxSize"], [_ref(x) for x in p["Subnets"]]))
        elif r["Type"] == "AWS::AutoScaling::AutoScalingGroup":
            out.append((key, int(p["MaxSize"]), [_ref(x) for x in p["VPCZoneIdentifier"]]))
        elif r["Type"] == "AWS::SageMaker::Cluster":
            default = [_ref(x) for x in p["VpcConfig"]["Subnets"]]
            for g in p["InstanceGroups"]:
                if g["InstanceType"].startswith("ml.trn"):
                    own = g.get("OverrideVpcConfig", {}).get("Subnets")
                    out.append((g["InstanceGroupName"], g["InstanceCount"],
                                [_ref(x) for x in own] if own else default))
    return out


def test_every_trainium_group_is_within_its_service_limit(each):
    c = each.config
    groups = trainium_groups(each)
    assert groups and sum(n for _, n, _ in groups) >= min(c.nodes.desired, c.nodes.max)
    for name, nodes, _ in groups:
        if c.orchestrator == "eks":
            assert nodes <= c.quotas.eks_nodes_per_nodegroup, name
        if c.orchestrator.startswith("hyperpod"):
            assert nodes <= HYPERPOD_MAX_INSTANCE_COUNT, name
    for r in each.resources("AWS::SageMaker::Cluster").values():
        assert len(r["Properties"]["InstanceGroups"]) <= HYPERPOD_MAX_GROUPS


def test_every_nodes_addresses_fit_its_one_compute_subnet(each):
    c, res = each.config, each.template["Resources"]
    per_subnet: dict[str, int] = defaultdict(int)
    for name, nodes, subnets in trainium_groups(each):
        assert len(subnets) == 1, f"{name} spans {subnets}: a group stays in one subnet"
        per_subnet[subnets[0]] += nodes
    subnet0 = each.output("ComputeSubnetId")["Ref"]
    mask = c.address_plan.private_mask
    for subnet, nodes in per_subnet.items():
        props = res[subnet]["Properties"]
        assert props["AvailabilityZoneId"] == c.compute_az_id
        size = ipaddress.ip_network(props["CidrBlock"]).num_addresses
        reserved = SUBNET_RESERVED_IPS + (subnet0_reserve(mask) if subnet == subnet0 else 0)
        assert nodes * c.node_addresses.ips + reserved <= size, (subnet, nodes)
