"""Every role the stack hands to a service allows the calls the service makes with it on the
resources the template gives that service (issue 29, "a test of the rule, not of the
template's shape"): HyperPod creating each instance group's interfaces in the subnets and
security groups of its ``VpcConfig``/``OverrideVpcConfig``, the VPC CNI doing the same for
every node group, CodeBuild pushing the training image, the FSx export function exporting
its file system, the nodes pulling the image, ... (the list and where each call comes from:
:mod:`tests.service_calls`), each evaluated against the role's policies by
:mod:`tests.iam_eval`. On every profile, the default configuration and at 2,000 and 4,000
nodes; and a test shows it catches the single-subnet role of before."""

from __future__ import annotations

import copy
import ipaddress
from typing import Any

import pytest

from tests.conftest import PROFILES, profile_path
from tests.service_calls import (
    ACCOUNT,
    StandIns,
    denied_calls,
    resource_types,
    service_calls,
)

SCALE = {"hyperpod-slurm": (2000, 4000), "hyperpod-eks": (2000, 3900), "eks": (2000, 4000)}
"""Node counts per orchestrator at scale (trn1.32xlarge, ``efa`` layout). HyperPod on EKS
stops short of 4,000: the configuration refuses it ("nodes.max = 4000: must fit one VPC: ...
at most 3922 nodes", 65 NAU units per node, above the 256,000 of one VPC), so 3,900, which
still fills five compute subnets, one in a secondary block."""
CONFIGS = (["default"] + [p.stem for p in PROFILES]
           + [f"{o}-{n}" for o, counts in SCALE.items() for n in counts])


def _synth(synth, scale_stack, name: str):
    if name == "default":
        return synth()
    orchestrator, _, nodes = name.rpartition("-")
    if orchestrator in SCALE:
        if (orchestrator, nodes) == ("eks", "2000"):
            # tests/stacks/conftest.py's "2000-eks-efa" (the session synthesizes it once).
            return synth(**{"orchestrator": "eks", "efa_interface_layout": "efa",
                            "nodes.max": "2000"})
        if int(nodes) == 2000:
            return scale_stack(orchestrator)
        # The keys and values of conftest's scale_stack, so another test of the same scale
        # shares the synth.
        return synth(None, **{"orchestrator": orchestrator, "instance_type": "trn1.32xlarge",
                              "efa_interface_layout": "efa", "nodes.min": 0,
                              "nodes.desired": int(nodes), "nodes.max": int(nodes)})
    return synth(profile_path(name))


def _denied(s, template: dict[str, Any] | None = None) -> list[str]:
    return [f"{call}: {decision}"
            for call, decision in denied_calls(template or s.template, s.config.region)]


@pytest.mark.parametrize("name", CONFIGS)
def test_every_role_allows_the_calls_its_service_makes_with_the_resources_it_is_given(
        synth, scale_stack, name):
    s = _synth(synth, scale_stack, name)
    assert service_calls(s.template, s.config.region), f"{name}: no call read"
    denied = _denied(s)
    assert not denied, "\n".join(denied)


@pytest.mark.parametrize("name", CONFIGS)
def test_each_call_names_a_resource_type_its_action_checks(synth, scale_stack, name):
    """The calls are what IAM would see: each request's resource is of a resource type the
    Service Reference lists for its action (or ``*`` for an action without one), so a call
    on a type the action never checks cannot pass for a check."""
    s = _synth(synth, scale_stack, name)
    wrong = [f"{c.request.action} on {c.request.resource} ({c.role}, {c.why})"
             for c in service_calls(s.template, s.config.region)
             if not resource_types(c.request.action, c.request.resource)]
    assert not wrong, "\n".join(wrong)


ROLE_KINDS = {
    "hyperpod-eks-2000": ("execution role of instance group", "Pod Identity role of",
                          "node role of EKS node group", "service role of CodeBuild project",
                          "execution role of FSx export function",
                          "execution role of Lambda function"),
    "ultracluster-2000": ("execution role of instance group", "execution role of HyperPod",
                          "service role of CodeBuild project"),
    "default": ("node role of EKS node group", "Pod Identity role of"),
    "single-node": ("instance role of launch template", "execution role of DLAMI lookup"),
}


@pytest.mark.parametrize("name, kinds", ROLE_KINDS.items())
def test_the_calls_reach_every_kind_of_role(synth, scale_stack, name, kinds):
    """So that the test above cannot pass by reading no call of a kind of role."""
    s = _synth(synth, scale_stack, name)
    found = {c.role_is for c in service_calls(s.template, s.config.region)}
    for kind in kinds:
        assert any(f.startswith(kind) for f in found), f"{name}: no call of a {kind}"


def _execution_role_statement(template: dict[str, Any], sid: str) -> dict[str, Any]:
    found = [st for r in template["Resources"].values() if r["Type"] == "AWS::IAM::Policy"
             for st in r["Properties"]["PolicyDocument"]["Statement"] if st.get("Sid") == sid]
    assert len(found) == 1, f"expected one statement {sid}, found {len(found)}"
    return found[0]


def _todays_role(template: dict[str, Any]) -> dict[str, Any]:
    """``template`` with the execution role of before issue 29: ``VpcCreateInterfaces``
    allowed compute subnet 0 only (the cluster's ``VpcConfig`` subnet)."""
    old = copy.deepcopy(template)
    (cluster,) = [r["Properties"] for r in old["Resources"].values()
                  if r["Type"] == "AWS::SageMaker::Cluster"]
    (subnet0,) = cluster["VpcConfig"]["Subnets"]
    statement = _execution_role_statement(old, "VpcCreateInterfaces")
    statement["Resource"] = [r for r in statement["Resource"]
                             if ":subnet/" not in str(r) or subnet0 in r["Fn::Join"][1]]
    assert len(statement["Resource"]) == 3  # interfaces, security group, subnet 0
    return old


def _override_subnets(template: dict[str, Any]) -> dict[str, str]:
    """Instance group -> the subnet of its ``OverrideVpcConfig``."""
    return {g["InstanceGroupName"]: g["OverrideVpcConfig"]["Subnets"][0]["Ref"]
            for r in template["Resources"].values() if r["Type"] == "AWS::SageMaker::Cluster"
            for g in r["Properties"]["InstanceGroups"] if "OverrideVpcConfig" in g}


@pytest.mark.parametrize("name, missing", [("ultracluster-2000", 1), ("hyperpod-eks-2000", 4)])
def test_the_test_fails_on_the_single_subnet_role_of_before(synth, scale_stack, name, missing):
    """Issue 29: at 2,000 nodes the role of before let HyperPod create interfaces in compute
    subnet 0 only: ``workers-2`` of the 2,000-node profile, and four groups of HyperPod on
    EKS (one subnet in a secondary block), could not start. The evaluator names each: role,
    action, the subnet and its instance group."""
    s = _synth(synth, scale_stack, name)
    overrides = _override_subnets(s.template)
    assert len(overrides) == missing
    denied = _denied(s, _todays_role(s.template))
    assert len(denied) == missing, "\n".join(denied)
    for group, subnet in overrides.items():
        (message,) = [d for d in denied if f"subnet-{subnet} " in d]
        assert "ExecutionRole" in message.split(" ")[1]
        assert "may not ec2:CreateNetworkInterface on " in message
        assert f"instance group {group}: subnet {subnet} of its OverrideVpcConfig" in message
    assert not _denied(s)
    if name == "hyperpod-eks-2000":
        blocks = [ipaddress.ip_network(r["Properties"]["CidrBlock"])
                  for r in s.template["Resources"].values()
                  if r["Type"] == "AWS::EC2::VPCCidrBlock"]
        in_blocks = [sn for sn in overrides.values() if any(
            ipaddress.ip_network(s.template["Resources"][sn]["Properties"]["CidrBlock"])
            .subnet_of(b) for b in blocks)]
        assert len(in_blocks) == 1, "expected one group in a secondary block"


@pytest.mark.parametrize("name", [n for n in CONFIGS if n.startswith(("hyperpod", "ultracluster"))])
def test_the_execution_role_creates_interfaces_in_the_groups_networks_and_no_other(
        synth, scale_stack, name):
    """Nothing wider than the stack's networks: the subnets and security groups of
    ``VpcCreateInterfaces`` are exactly those of ``VpcConfig`` and the ``OverrideVpcConfig``
    of every instance group (plus the interfaces themselves)."""
    s = _synth(synth, scale_stack, name)
    v = StandIns(s.template, s.config.region)
    (cluster,) = [r["Properties"] for r in s.template["Resources"].values()
                  if r["Type"] == "AWS::SageMaker::Cluster"]
    networks = [cluster["VpcConfig"]] + [g["OverrideVpcConfig"] for g in cluster["InstanceGroups"]
                                         if "OverrideVpcConfig" in g]
    expected = ({v.arn("ec2", f"subnet/{v.value(x)}") for n in networks for x in n["Subnets"]}
                | {v.arn("ec2", f"security-group/{v.value(x)}")
                   for n in networks for x in n["SecurityGroupIds"]}
                | {v.arn("ec2", "network-interface/*")})
    statement = v.value(_execution_role_statement(s.template, "VpcCreateInterfaces"))
    assert set(statement["Resource"]) == expected


# --- the stand-ins ---------------------------------------------------------------------------


def test_stand_ins_resolve_functions_alike_in_policies_and_properties(default):
    """The image URI the build pushes to (``Fn::Select``/``Fn::Split`` of the repository's
    ``Arn``) and the ARN the policies grant come out of one scheme; pseudo parameters,
    ``Fn::Sub``, ``Fn::If`` and ``AWS::NoValue`` are evaluated."""
    template = default.template
    v = StandIns(template, "us-west-2")
    repository = next(k for k, r in template["Resources"].items()
                      if r["Type"] == "AWS::ECR::Repository")
    (build,) = [r["Properties"] for r in template["Resources"].values()
                if r["Type"] == "Custom::CDKContainerImageBuild"]
    assert v.value(build["repositoryUri"]) == (
        f"{ACCOUNT}.dkr.ecr.us-west-2.amazonaws.com/{repository.lower()}")
    assert v.attribute(repository, "Arn") == (
        f"arn:aws:ecr:us-west-2:{ACCOUNT}:repository/{repository.lower()}")
    assert v.value({"Fn::Sub": "a-${AWS::AccountId}-${!Literal}"}) == f"a-{ACCOUNT}-${{Literal}}"
    assert v.value([{"Ref": "AWS::NoValue"}, "x"]) == ["x"]
    condition = next(iter(template["Conditions"]))
    assert v.value({"Fn::If": [condition, "yes", "no"]}) in ("yes", "no")
    with pytest.raises(ValueError):
        v.value({"Fn::ImportValue": "x"})


def test_the_service_reference_copy_is_read():
    """``resource_types`` reads cfn-lint's copy of the Service Reference: the create takes
    the subnet, security group and interface types (Service Authorization Reference, Amazon
    EC2, ``CreateNetworkInterface``), and an ARN of another type is none of them."""
    arn = "arn:aws:ec2:us-west-2:1:{}"
    action = "ec2:CreateNetworkInterface"
    assert resource_types(action, arn.format("subnet/subnet-1")) == ["subnet"]
    assert resource_types(action, arn.format("security-group/sg-1")) == ["security-group"]
    assert resource_types(action, arn.format("network-interface/eni-1")) == ["network-interface"]
    assert resource_types(action, arn.format("vpc/vpc-1")) == []
    assert resource_types("ec2:DescribeSubnets", "*") == ["*"]
