"""Container Insights on the EKS cluster: the add-on, its Pod Identity role, its log groups."""

from __future__ import annotations

import json

from trn_ultracluster.orchestrators.eks.manifests import NEURON_TAINT
from trn_ultracluster.orchestrators.eks.observability import (
    ADDON_NAME,
    AGENT_POLICY,
    AGENT_SERVICE_ACCOUNT,
    LOG_GROUPS,
)


def addon(s) -> tuple[str, dict]:
    (found,) = [(k, r) for k, r in s.resources("AWS::EKS::Addon").items()
                if r["Properties"]["AddonName"] == ADDON_NAME]
    return found


def test_addon_default_version_tolerations_and_pod_identity(default):
    name, resource = addon(default)
    props = resource["Properties"]
    assert "AddonVersion" not in props  # EKS's default for the cluster's Kubernetes version
    assert props["ClusterName"] == {"Ref": default.ref_id("EksCluster")}
    assert json.loads(props["ConfigurationValues"]) == {"tolerations": [
        {"key": "aws.amazon.com/neuron", "operator": "Equal", "value": "true",
         "effect": "NoSchedule"}]}
    assert NEURON_TAINT.toleration() in json.loads(props["ConfigurationValues"])["tolerations"]
    (association,) = props["PodIdentityAssociations"]
    assert association["ServiceAccount"] == AGENT_SERVICE_ACCOUNT == "cloudwatch-agent"
    role = default.template["Resources"][association["RoleArn"]["Fn::GetAtt"][0]]["Properties"]
    (trust,) = role["AssumeRolePolicyDocument"]["Statement"]
    assert trust["Principal"] == {"Service": "pods.eks.amazonaws.com"}
    assert set(trust["Action"]) == {"sts:AssumeRole", "sts:TagSession"}
    (policy,) = role["ManagedPolicyArns"]
    assert policy["Fn::Join"][1][-1] == f":iam::aws:policy/{AGENT_POLICY}"


def test_addon_waits_for_its_log_groups_pod_identity_agent_and_system_nodes(default):
    _, resource = addon(default)
    res = default.template["Resources"]
    needs = set(resource["DependsOn"])
    agent = [k for k, r in default.resources("AWS::EKS::Addon").items()
             if r["Properties"]["AddonName"] == "eks-pod-identity-agent"]
    assert set(agent) <= needs
    assert any(res[d]["Type"] == "AWS::EKS::Nodegroup" for d in needs)
    groups = {d for d in needs if res[d]["Type"] == "AWS::Logs::LogGroup"}
    names = {res[g]["Properties"]["LogGroupName"]["Fn::Join"][1][-1] for g in groups}
    assert names == {f"/{n}" for n in LOG_GROUPS}
    for group in groups:  # created by the stack: encrypted, expiring, data policy
        assert res[group]["Properties"]["RetentionInDays"] == 30
        assert res[group]["Properties"]["LogGroupName"]["Fn::Join"][1][0] == "/aws/containerinsights/"


def test_pinned_version(synth):
    s = synth(**{"eks.addon_versions.amazon_cloudwatch_observability": "v6.4.0-eksbuild.1"})
    assert addon(s)[1]["Properties"]["AddonVersion"] == "v6.4.0-eksbuild.1"


def test_hyperpod_has_no_container_insights(synth):
    s = synth(orchestrator="hyperpod-slurm")
    assert not s.resources("AWS::EKS::Addon")
