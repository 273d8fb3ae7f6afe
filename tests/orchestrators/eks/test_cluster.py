"""EKS orchestrator: template assertions for the cluster, node groups, add-ons, Helm charts,
security group rules, outputs and limits; every Kubernetes object the stack creates is
validated (core objects against the Kubernetes 1.36 JSON schemas, the ClusterTrainingRuntime
against the Kubeflow Trainer 2.3.0 CRD)."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from tests.cfn_lint import cfn_lint
from tests.conftest import REPO_ROOT, profile_path
from tests.crds import CLUSTER_TRAINING_RUNTIMES, load_crd, runtime_validator
from trn_ultracluster.orchestrators.eks import manifests as k8s
from trn_ultracluster.contracts.catalog import get_instance
from trn_ultracluster.config import ConfigError, parse_config
from trn_ultracluster.contracts.neuron_env import neuron_environment
from trn_ultracluster.estimate.bill import bill_of_materials

ADMIN = "arn:aws:iam::123456789012:role/TrainingAdmin"
TRN2 = REPO_ROOT / "profiles" / "trn2.yaml"
ULTRA16 = REPO_ROOT / "profiles" / "ultracluster-16.yaml"
K8S_VERSION = "1.36.0"

@pytest.fixture(scope="module")
def admin(synth):
    """Default config plus an admin role (the access entry is created)."""
    return synth(**{"eks.admin_role_arn": ADMIN})


@pytest.fixture(scope="module")
def trn2(synth):
    return synth(profile=TRN2)


@pytest.fixture(scope="module")
def trn2_3xl(synth):
    """One Trainium2 chip per node on EKS, in AZ IDs where moto saw trn2.3xlarge offered."""
    return synth(**{"instance_type": "trn2.3xlarge", "az_ids": "sae1-az1,sae1-az2"})


@pytest.fixture(scope="module")
def ultra2000(synth):
    """2,000 trn1.32xlarge nodes with EFA-only interfaces: more than one subnet and one
    node group hold. The same context keys as tests/stacks/conftest.py's
    ``2000-eks-efa-only``, so the session synthesizes it once."""
    return synth(**{"orchestrator": "eks", "efa_interface_layout": "efa-only",
                    "nodes.max": "2000"})


def _ref(resources: dict[str, Any], cfn_type: str, prefix: str) -> str:
    found = [k for k, r in resources.items() if r["Type"] == cfn_type and k.startswith(prefix)]
    assert len(found) == 1, found
    return found[0]


def _nodegroups(s) -> dict[str, dict[str, Any]]:
    groups = s.resources("AWS::EKS::Nodegroup")
    return {("trainium" if "Trainium" in k else "system"): r for k, r in groups.items()}


# --- control plane ------------------------------------------------------------------------


def test_cluster_version_logging_encryption_endpoint(default):
    cluster = default.only("AWS::EKS::Cluster")
    assert cluster["Version"] == "1.36"
    types = {t["Type"] for t in cluster["Logging"]["ClusterLogging"]["EnabledTypes"]}
    assert types == {"api", "audit", "authenticator", "controllerManager", "scheduler"}
    (encryption,) = cluster["EncryptionConfig"]
    assert encryption["Resources"] == ["secrets"]
    key_id = encryption["Provider"]["KeyArn"]["Fn::GetAtt"][0]
    assert default.template["Resources"][key_id]["Properties"]["EnableKeyRotation"] is True
    vpc = cluster["ResourcesVpcConfig"]
    assert vpc["EndpointPrivateAccess"] is True and vpc["EndpointPublicAccess"] is True
    assert vpc["PublicAccessCidrs"] == ["0.0.0.0/0"]
    assert cluster["AccessConfig"]["AuthenticationMode"] == "API"
    assert cluster["BootstrapSelfManagedAddons"] is False
    assert cluster["ComputeConfig"]["Enabled"] is False  # no Auto Mode


def test_endpoint_allow_list_and_private(synth):
    narrowed = synth(**{"eks.public_access_cidrs": "203.0.113.0/24,198.51.100.7/32"})
    vpc = narrowed.only("AWS::EKS::Cluster")["ResourcesVpcConfig"]
    assert vpc["PublicAccessCidrs"] == ["203.0.113.0/24", "198.51.100.7/32"]
    private = synth(**{"eks.endpoint_access": "private"})
    vpc = private.only("AWS::EKS::Cluster")["ResourcesVpcConfig"]
    assert vpc["EndpointPublicAccess"] is False and vpc["EndpointPrivateAccess"] is True


def test_admin_access_entry(default, admin):
    def principals(s):
        return [e["Properties"] for e in s.resources("AWS::EKS::AccessEntry").values()]

    assert all(p["PrincipalArn"] != ADMIN for p in principals(default))
    (entry,) = [p for p in principals(admin) if p["PrincipalArn"] == ADMIN]
    (policy,) = entry["AccessPolicies"]
    assert policy["AccessScope"]["Type"] == "cluster"
    assert "AmazonEKSClusterAdminPolicy" in json.dumps(policy["PolicyArn"])


def test_kubectl_provider_outside_the_vpc_with_an_open_public_endpoint(default, synth):
    """Default: out of the VPC (nothing left behind on destroy); with a narrowed allow-list
    it reaches the private endpoint from the private subnets (tests/stacks/test_cluster.py
    covers every endpoint setting)."""
    res = default.template["Resources"]
    handler = res[_ref(res, "AWS::Lambda::Function", "EksClusterKubectlProviderHandler")]
    assert "VpcConfig" not in handler["Properties"]
    narrowed = synth(**{"eks.public_access_cidrs": "203.0.113.0/24"}).template["Resources"]
    handler = narrowed[_ref(narrowed, "AWS::Lambda::Function", "EksClusterKubectlProviderHandler")]
    subnets = handler["Properties"]["VpcConfig"]["SubnetIds"]
    assert all("PrivateSubnet" in s["Ref"] for s in subnets) and len(subnets) == 2


# --- node groups --------------------------------------------------------------------------


def test_trainium_nodegroup_uses_launch_template(default):
    ng = _nodegroups(default)["trainium"]["Properties"]
    assert ng["AmiType"] == "AL2023_x86_64_NEURON"
    assert ng["LaunchTemplate"] == {
        "Id": {"Ref": _ref(default.template["Resources"], "AWS::EC2::LaunchTemplate", "Efa")},
        "Version": {"Fn::GetAtt": [ng["LaunchTemplate"]["Id"]["Ref"], "LatestVersionNumber"]},
    }
    # The launch template owns the instance type and the root volume.
    for conflicting in ("InstanceTypes", "DiskSize", "RemoteAccess"):
        assert conflicting not in ng
    assert ng["Subnets"] == [{"Ref": _ref(default.template["Resources"], "AWS::EC2::Subnet",
                                          "NetworkVpcPrivateSubnet1")}]
    assert ng["Taints"] == [{"Key": "aws.amazon.com/neuron", "Value": "true",
                             "Effect": "NO_SCHEDULE"}]
    # Only the EFA plugin's label: the kubelet sets node.kubernetes.io/instance-type.
    assert ng["Labels"] == {"vpc.amazonaws.com/efa.present": "true"}
    assert ng["ScalingConfig"] == {"MinSize": 0, "DesiredSize": 1, "MaxSize": 1}
    assert ng["CapacityType"] == "ON_DEMAND"


def test_trainium_nodegroup_capacity_block_starts_empty(trn2, synth):
    ng = _nodegroups(trn2)["trainium"]["Properties"]
    assert ng["CapacityType"] == "CAPACITY_BLOCK"
    # nothing can launch before the block starts: created at 0, scaled by `scale`
    assert ng["ScalingConfig"] == {"MinSize": 0, "DesiredSize": 0, "MaxSize": 4}
    asked = synth(TRN2, **{"nodes.min": "2", "nodes.desired": "3"})
    scaling = _nodegroups(asked)["trainium"]["Properties"]["ScalingConfig"]
    assert scaling == {"MinSize": 0, "DesiredSize": 0, "MaxSize": 4}
    (warning,) = [w for w in asked.warnings if w.field == "nodes"]
    assert "trn-ultracluster scale --nodes N" in warning.message
    assert ng["Labels"] == {"vpc.amazonaws.com/efa.present": "true"}


def _trainium_nodegroups(s) -> dict[str, dict[str, Any]]:
    """Construct id (``TrainiumNodes``, ``TrainiumNodes2``...) -> the node group's properties."""
    prefix = "EksClusterNodegroup"
    return {k[len(prefix):-8]: r["Properties"]
            for k, r in s.resources("AWS::EKS::Nodegroup").items()
            if k.startswith(prefix + "TrainiumNodes")}


def test_ultracluster_has_one_nodegroup_per_planned_group(ultra2000):
    plan = ultra2000.config.address_plan
    groups = _trainium_nodegroups(ultra2000)
    ids = ["TrainiumNodes", *(f"TrainiumNodes{i}" for i in range(2, len(plan.groups) + 1))]
    assert sorted(groups) == sorted(ids) and len(ids) == 5
    compute_subnets = ultra2000.output("ComputeSubnetIds")["Fn::Join"][1]
    assert len(compute_subnets) == len(plan.compute_subnets) > 1
    for construct_id, group in zip(ids, plan.groups):
        ng = groups[construct_id]
        assert ng["ScalingConfig"]["MaxSize"] == group.nodes <= 450
        # each group in exactly one subnet, the plan's
        assert ng["Subnets"] == [compute_subnets[group.subnet]]
    assert sum(ng["ScalingConfig"]["MaxSize"] for ng in groups.values()) == 2000
    # nodes.desired (1) fills the groups in order: all in the first
    assert [groups[i]["ScalingConfig"]["DesiredSize"] for i in ids] == [1, 0, 0, 0, 0]
    assert all(groups[i]["ScalingConfig"]["MinSize"] == 0 for i in ids)


def test_every_trainium_nodegroup_waits_for_the_compute_routes(ultra2000):
    res = ultra2000.template["Resources"]
    routes = {k for k, r in res.items() if r["Type"] in (
        "AWS::EC2::Route", "AWS::EC2::SubnetRouteTableAssociation")}
    associations = {k for k in routes if res[k]["Type"].endswith("Association")
                    and "Compute" in k}
    assert associations
    for ng_id in res:
        if ng_id.startswith("EksClusterNodegroupTrainiumNodes"):
            assert associations <= set(res[ng_id]["DependsOn"])


def test_ultracluster_output_lists_every_nodegroup(ultra2000):
    parts = ultra2000.output("EksTrainiumNodegroupName")["Fn::Join"]
    assert parts[0] == ""
    names = [p["Fn::GetAtt"][0] for p in parts[1] if isinstance(p, dict)]
    assert [p for p in parts[1] if isinstance(p, str)] == [","] * 4
    assert names == [ultra2000.ref_id(f"EksClusterNodegroup{i}") for i in
                     ("TrainiumNodes", "TrainiumNodes2", "TrainiumNodes3", "TrainiumNodes4",
                      "TrainiumNodes5")]


def test_default_keeps_its_one_nodegroup(default):
    """The default stack's Trainium node group keeps its logical id (the snapshot's), so an
    upgrade does not replace it."""
    snapshot = json.loads((REPO_ROOT / "tests" / "snapshots" / "default.json").read_text())
    before = [k for k in snapshot["Resources"] if k.startswith("EksClusterNodegroupTrainium")]
    now = [k for k in default.template["Resources"]
           if k.startswith("EksClusterNodegroupTrainium")]
    assert now == before == ["EksClusterNodegroupTrainiumNodesA3F71E5C"]
    assert default.output("EksTrainiumNodegroupName") == {
        "Fn::GetAtt": [before[0], "NodegroupName"]}


def test_system_nodegroup(default):
    ng = _nodegroups(default)["system"]["Properties"]
    assert ng["CapacityType"] == "ON_DEMAND"
    assert ng["AmiType"] == "AL2023_x86_64_STANDARD"
    assert ng["InstanceTypes"] == ["m6i.xlarge"]
    assert ng["ScalingConfig"] == {"MinSize": 2, "DesiredSize": 2, "MaxSize": 2}
    assert sorted(s["Ref"][:25] for s in ng["Subnets"]) == ["NetworkVpcPrivateSubnet1S",
                                                             "NetworkVpcPrivateSubnet2S"]
    assert "Taints" not in ng and "Labels" not in ng


def test_node_role_has_only_node_policies(default):
    ng = _nodegroups(default)["trainium"]["Properties"]
    role = default.template["Resources"][ng["NodeRole"]["Fn::GetAtt"][0]]["Properties"]
    arns = json.dumps(role["ManagedPolicyArns"])
    assert "AmazonEKSWorkerNodePolicy" in arns and "AmazonEC2ContainerRegistryPullOnly" in arns
    assert len(role["ManagedPolicyArns"]) == 2  # no CNI, no SSM, no admin
    assert "Policies" not in role


def test_security_groups_join_efa_and_cluster(default):
    res = default.template["Resources"]
    efa_sg = _ref(res, "AWS::EC2::SecurityGroup", "EfaSecurityGroup")
    cluster_sg = {"Fn::GetAtt": [_ref(res, "AWS::EKS::Cluster", "EksCluster"),
                                 "ClusterSecurityGroupId"]}
    rules = [r["Properties"] for r in default.resources("AWS::EC2::SecurityGroupIngress").values()]
    assert any(r["GroupId"] == cluster_sg and r["SourceSecurityGroupId"] == {
        "Fn::GetAtt": [efa_sg, "GroupId"]} and r["IpProtocol"] == "-1" for r in rules)
    assert any(r["GroupId"] == {"Fn::GetAtt": [efa_sg, "GroupId"]}
               and r["SourceSecurityGroupId"] == cluster_sg and r["IpProtocol"] == "-1"
               for r in rules)


# --- add-ons ------------------------------------------------------------------------------


def _addons(s) -> dict[str, dict[str, Any]]:
    return {r["Properties"]["AddonName"]: r for r in s.resources("AWS::EKS::Addon").values()}


def test_addon_names_versions_pod_identity(default):
    addons = _addons(default)
    assert set(addons) == {"vpc-cni", "coredns", "kube-proxy", "eks-pod-identity-agent",
                           "aws-fsx-csi-driver", "amazon-cloudwatch-observability"}
    # Default: no version, EKS installs its default for the cluster's Kubernetes version.
    assert all("AddonVersion" not in r["Properties"] for r in addons.values())
    accounts = {name: [a["ServiceAccount"] for a in r["Properties"].get("PodIdentityAssociations", [])]
                for name, r in addons.items()}
    assert accounts["aws-fsx-csi-driver"] == ["fsx-csi-controller-sa"]
    assert accounts["vpc-cni"] == ["aws-node"]


def test_pinned_addon_versions(synth):
    pinned = {"vpc-cni": "v1.19.0-eksbuild.1", "kube-proxy": "v1.36.0-eksbuild.1",
              "coredns": "v1.11.4-eksbuild.2", "eks-pod-identity-agent": "v1.3.4-eksbuild.1",
              "aws-fsx-csi-driver": "v1.5.0-eksbuild.1",
              "amazon-cloudwatch-observability": "v6.4.0-eksbuild.1"}
    s = synth(**{f"eks.addon_versions.{name.replace('-', '_')}": version
                 for name, version in pinned.items()})
    assert {name: r["Properties"]["AddonVersion"] for name, r in _addons(s).items()} == pinned


def test_pod_identity_roles(default):
    res = default.template["Resources"]
    fsx = _addons(default)["aws-fsx-csi-driver"]["Properties"]["PodIdentityAssociations"][0]
    role = res[fsx["RoleArn"]["Fn::GetAtt"][0]]["Properties"]
    trust = role["AssumeRolePolicyDocument"]["Statement"]
    actions = {a for st in trust for a in ([st["Action"]] if isinstance(st["Action"], str)
                                           else st["Action"])}
    assert actions == {"sts:AssumeRole", "sts:TagSession"}
    assert {st["Principal"]["Service"] for st in trust} == {"pods.eks.amazonaws.com"}
    policies = [p for p in default.resources("AWS::IAM::Policy").values()
                if {"Ref": fsx["RoleArn"]["Fn::GetAtt"][0]} in p["Properties"]["Roles"]]
    (statement,) = policies[0]["Properties"]["PolicyDocument"]["Statement"]
    assert statement["Action"] == "fsx:DescribeFileSystems"  # static volume: no resize
    # no resource-level permissions exist for it (Service Authorization Reference)
    assert statement["Resource"] == "*"


def test_addon_ordering(default):
    res = default.template["Resources"]
    ids = {r["Properties"]["AddonName"]: k for k, r in default.resources("AWS::EKS::Addon").items()}
    for ng in _nodegroups(default).values():
        assert {ids["vpc-cni"], ids["kube-proxy"], ids["eks-pod-identity-agent"]} <= set(ng["DependsOn"])
    system = _ref(res, "AWS::EKS::Nodegroup", "EksClusterNodegroupSystem")
    for name in ("coredns", "aws-fsx-csi-driver"):
        assert system in res[ids[name]]["DependsOn"]


def test_vpc_cni_keeps_pod_ips_per_node(default, synth):
    """MINIMUM_IP_TARGET is the pod addresses the address plan counts per node, on both EKS
    orchestrators; WARM_IP_TARGET the facts' value."""
    def env(s):
        return json.loads(_addons(s)["vpc-cni"]["Properties"]["ConfigurationValues"])["env"]

    assert env(default) == {"MINIMUM_IP_TARGET": "16", "WARM_IP_TARGET": "2"}
    assert env(synth(**{"eks.pod_ips_per_node": "40"}))["MINIMUM_IP_TARGET"] == "40"
    assert env(synth(profile_path("hyperpod-eks")))["MINIMUM_IP_TARGET"] == "16"


@pytest.mark.parametrize("tier", ["tier-xl", "tier-8xl"])
def test_control_plane_tier(default, synth, tier):
    assert "ControlPlaneScalingConfig" not in default.only("AWS::EKS::Cluster")
    tiered = synth(**{"eks.control_plane_tier": tier})
    assert tiered.only("AWS::EKS::Cluster")["ControlPlaneScalingConfig"] == {"Tier": tier}
    def keys(s):  # the estimate reads the tier from the template
        return [i.key for i in bill_of_materials(s.template).items if i.key[0] == "eks-pcp"]

    assert keys(tiered) == [("eks-pcp", tier)] and keys(default) == []


def test_efa_only_needs_recent_vpc_cni():
    with pytest.raises(ConfigError, match=r"eks.addon_versions.vpc_cni.*v1.19.0 or newer"):
        parse_config({"efa_interface_layout": "efa-only",
                      "eks": {"addon_versions": {"vpc_cni": "v1.18.6-eksbuild.1"}}})
    parse_config({"efa_interface_layout": "efa-only",
                  "eks": {"addon_versions": {"vpc_cni": "v1.19.0-eksbuild.1"}}})


@pytest.mark.parametrize("eks_config, match", [
    ({"public_access_cidrs": ["10.0.0.0/33"]}, r"eks.public_access_cidrs\[0\]"),
    ({"public_access_cidrs": []}, r"at least one CIDR"),
    ({"admin_role_arn": "arn:aws:iam::123:user/bob"}, r"eks.admin_role_arn.*IAM role ARN"),
    ({"system_instance_type": "trn1.32xlarge"}, r"non-Trainium"),
    ({"training_namespace": "Training_Jobs"}, r"DNS-1123"),
    ({"addon_versions": {"coredns": "latest"}}, r"eks.addon_versions.coredns"),
])
def test_eks_config_rules(eks_config, match):
    with pytest.raises(ConfigError, match=match):
        parse_config({"eks": eks_config})


# --- Helm charts --------------------------------------------------------------------------


def _charts(s) -> dict[str, dict[str, Any]]:
    return {r["Properties"]["Chart"]: r for r in
            s.resources("Custom::AWSCDK-EKS-HelmChart").values()}


def test_helm_charts_pinned(default):
    charts = _charts(default)
    expected = {
        "neuron-helm-chart": ("oci://public.ecr.aws/neuron/neuron-helm-chart", "1.10.0",
                              "kube-system"),
        "aws-efa-k8s-device-plugin": ("https://aws.github.io/eks-charts", "v0.5.30",
                                      "kube-system"),
        "kubeflow-trainer": ("oci://ghcr.io/kubeflow/charts/kubeflow-trainer", "2.3.0",
                             "kubeflow-system"),
    }
    assert set(charts) == set(expected)
    for chart, (repository, version, namespace) in expected.items():
        p = charts[chart]["Properties"]
        assert (p["Repository"], p["Version"], p["Namespace"]) == (repository, version, namespace)
    assert charts["kubeflow-trainer"]["Properties"]["Wait"] is True
    assert charts["kubeflow-trainer"]["Properties"]["CreateNamespace"] is True


def test_helm_chart_values(default):
    charts = _charts(default)
    neuron = json.loads(charts["neuron-helm-chart"]["Properties"]["Values"])
    assert neuron["devicePlugin"]["enabled"] is True and neuron["npd"]["enabled"] is True
    assert neuron["scheduler"]["enabled"] is False  # no pod names the chart's scheduler
    efa = json.loads(charts["aws-efa-k8s-device-plugin"]["Properties"]["Values"])
    assert efa["nodeSelector"] == {"vpc.amazonaws.com/efa.present": "true"}
    # the node type itself is the chart's one supported type (its own list may lack it)
    assert efa["supportedInstanceLabels"] == {"keys": ["node.kubernetes.io/instance-type"],
                                              "values": [default.config.instance_type]}
    assert efa["tolerations"] == [{"key": "aws.amazon.com/neuron", "operator": "Equal",
                                   "value": "true", "effect": "NoSchedule"}]
    # The Trainium node group carries exactly the label the EFA plugin selects.
    labels = _nodegroups(default)["trainium"]["Properties"]["Labels"]
    assert all(labels.get(k) == v for k, v in efa["nodeSelector"].items())


# --- Kubernetes objects -------------------------------------------------------------------


def _manifests(s) -> dict[str, list[dict[str, Any]]]:
    """Logical id -> the objects of each KubernetesResource; tokens become placeholders."""
    out = {}
    for logical_id, r in s.resources("Custom::AWSCDK-EKS-KubernetesResource").items():
        manifest = r["Properties"]["Manifest"]
        if isinstance(manifest, dict):
            manifest = "".join(p if isinstance(p, str) else "token"
                               for p in manifest["Fn::Join"][1])
        out[logical_id] = json.loads(manifest)
    return out


def _objects(s, kind: str) -> list[dict[str, Any]]:
    return [o for objs in _manifests(s).values() for o in objs if o["kind"] == kind]


def test_stack_objects_are_known(default):
    kinds = sorted(o["kind"] for objs in _manifests(default).values() for o in objs)
    assert kinds == ["ClusterTrainingRuntime", "Namespace", "PersistentVolume",
                     "PersistentVolumeClaim"]


@pytest.mark.parametrize("kind", ["Namespace", "PersistentVolume", "PersistentVolumeClaim"])
def test_core_objects_valid_kubernetes(default, kind):
    import kubernetes_validate

    (obj,) = _objects(default, kind)
    kubernetes_validate.validate(obj, K8S_VERSION, strict=True)


@pytest.mark.parametrize("kind, path, bad", [
    ("PersistentVolume", ["spec", "accessModes"], "ReadWriteMany"),
    ("PersistentVolume", ["spec", "csi", "volumeHandel"], "fs-1"),
    ("PersistentVolumeClaim", ["spec", "resources", "requests"], ["1200Gi"]),
    ("Namespace", ["metadata", "labels", "trn-ultracluster/managed-by"], 3),
])
def test_broken_core_object_fails(default, kind, path, bad):
    import kubernetes_validate

    (obj,) = _objects(default, kind)
    broken = copy.deepcopy(obj)
    node = broken
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = bad
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, K8S_VERSION, strict=True)


def test_fsx_volume_points_at_stack_file_system(default):
    res = default.template["Resources"]
    fs_id = _ref(res, "AWS::FSx::FileSystem", "StorageFileSystem")
    (volume,) = [r for r in default.resources("Custom::AWSCDK-EKS-KubernetesResource").values()
                 if "PersistentVolume" in json.dumps(r["Properties"]["Manifest"])]
    parts = volume["Properties"]["Manifest"]["Fn::Join"][1]
    assert {"Ref": fs_id} in parts  # volumeHandle and DNS name
    assert {"Fn::GetAtt": [fs_id, "LustreMountName"]} in parts
    (pv,) = _objects(default, "PersistentVolume")
    assert pv["spec"]["csi"]["driver"] == "fsx.csi.aws.com"
    assert pv["spec"]["persistentVolumeReclaimPolicy"] == "Retain"
    (pvc,) = _objects(default, "PersistentVolumeClaim")
    assert pvc["spec"]["volumeName"] == pv["metadata"]["name"]
    assert pvc["metadata"]["namespace"] == default.config.eks.training_namespace


def test_training_runtime_valid_against_crd(default):
    validator, crd = runtime_validator(), load_crd(CLUSTER_TRAINING_RUNTIMES)
    (runtime,) = _objects(default, "ClusterTrainingRuntime")
    assert runtime["apiVersion"] == f"{crd['spec']['group']}/v1alpha1"
    assert crd["spec"]["scope"] == "Cluster"
    errors = [e.message for e in validator.iter_errors(runtime)]
    assert errors == []


@pytest.mark.parametrize("mutate", [
    lambda rt: rt["spec"]["mlPolicy"].__setitem__("numNodes", "two"),
    lambda rt: rt["spec"]["mlPolicy"]["torch"].__setitem__("numProcPerNode", 32),
    lambda rt: rt["spec"].__setitem__("templates", rt["spec"]["template"]),
    lambda rt: rt["spec"]["template"]["spec"]["replicatedJobs"][0].__setitem__("replicas", "x"),
])
def test_broken_training_runtime_fails(default, mutate):
    validator = runtime_validator()
    (runtime,) = _objects(default, "ClusterTrainingRuntime")
    broken = copy.deepcopy(runtime)
    mutate(broken)
    assert list(validator.iter_errors(broken))


def _pod_spec(runtime: dict[str, Any]) -> dict[str, Any]:
    (job,) = runtime["spec"]["template"]["spec"]["replicatedJobs"]
    assert job["template"]["metadata"]["labels"] == {
        "trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}
    return job["template"]["spec"]["template"]["spec"]


@pytest.mark.parametrize("profile", [None, TRN2])
def test_runtime_takes_whole_node(synth, profile):
    s = synth(profile=profile)
    spec = s.config.instance
    (runtime,) = _objects(s, "ClusterTrainingRuntime")
    pod = _pod_spec(runtime)
    (container,) = pod["containers"]
    assert container["name"] == "node"
    expected = {"aws.amazon.com/neuron": str(spec.chips),
                "vpc.amazonaws.com/efa": str(spec.efa_interfaces)}
    assert container["resources"]["limits"] == expected == container["resources"]["requests"]
    assert pod["tolerations"] == [{"key": "aws.amazon.com/neuron", "operator": "Equal",
                                   "value": "true", "effect": "NoSchedule"}]
    assert pod["nodeSelector"] == {"node.kubernetes.io/instance-type": spec.name}
    assert {"name": "fsx", "mountPath": "/fsx"} in container["volumeMounts"]
    assert {"name": "fsx", "persistentVolumeClaim": {"claimName": "fsx-lustre"}} in pod["volumes"]
    env = {e["name"]: e["value"] for e in container["env"]}
    stack = s.config.neuron_stack
    directory = "/fsx/neuron-compile-cache" + ("" if stack == "xla" else "-native")
    cache = ({"NEURON_CC_FLAGS": f"--cache_dir={directory}"} if stack == "xla"
             else {"TORCH_NEURONX_NEFF_CACHE_DIR": directory})
    assert env == {**cache, "FI_PROVIDER": "efa", "FI_EFA_USE_DEVICE_RDMA": "1",
                   "TRN_NEURON_STACK": stack, "TRN_NEURON_CACHE_DIR": directory}
    assert stack == ("native" if spec.name.startswith("trn2") else "xla")


def test_runtime_created_after_trainer_chart(default):
    res = default.template["Resources"]
    trainer = _ref(res, "Custom::AWSCDK-EKS-HelmChart", "EksClusterchartKubeflowTrainer")
    runtime = _ref(res, "Custom::AWSCDK-EKS-KubernetesResource",
                   "EksClustermanifestNeuronTrainingRuntime")
    assert trainer in res[runtime]["DependsOn"]


# --- k8s builders (reused by the job CLI) -------------------------------------------------


@pytest.mark.parametrize("name, chips, efa, procs", [
    ("trn1.32xlarge", 16, 8, 32),
    ("trn1n.32xlarge", 16, 16, 32),
    ("trn2.48xlarge", 16, 16, 64),
    ("trn2.3xlarge", 1, 1, 4),  # one chip, one EFA interface, 8 cores at LNC 2
])
def test_neuron_resources_per_node(name, chips, efa, procs):
    spec = get_instance(name)
    assert k8s.neuron_resources_per_node(spec) == {"aws.amazon.com/neuron": chips,
                                                   "vpc.amazonaws.com/efa": efa}
    assert k8s.neuron_processes_per_node(spec) == procs


def test_single_node_type_has_no_efa_resource():
    spec = get_instance("trn1.2xlarge")
    assert k8s.neuron_resources_per_node(spec) == {"aws.amazon.com/neuron": 1}
    assert "FI_PROVIDER" not in neuron_environment(spec, "xla")


def test_one_chip_node_gets_its_efa_interface_from_the_plugin(trn2_3xl):
    """trn2.3xlarge on EKS: the EFA plugin's values name it (chart v0.5.20, an earlier pin,
    did not list it), its node group carries the plugin's label, its one EFA interface is in
    the launch template, and the runtime asks for that one interface."""
    efa = json.loads(_charts(trn2_3xl)["aws-efa-k8s-device-plugin"]["Properties"]["Values"])
    assert efa["supportedInstanceLabels"]["values"] == ["trn2.3xlarge"]
    labels = _nodegroups(trn2_3xl)["trainium"]["Properties"]["Labels"]
    assert all(labels.get(k) == v for k, v in efa["nodeSelector"].items())
    data = trn2_3xl.only("AWS::EC2::LaunchTemplate")["LaunchTemplateData"]
    (interface,) = data["NetworkInterfaces"]
    assert (interface["NetworkCardIndex"], interface["DeviceIndex"], interface["InterfaceType"]) \
        == (0, 0, "efa")
    (runtime,) = _objects(trn2_3xl, "ClusterTrainingRuntime")
    (container,) = _pod_spec(runtime)["containers"]
    assert container["resources"]["limits"] == {"aws.amazon.com/neuron": "1",
                                                "vpc.amazonaws.com/efa": "1"}


# --- outputs and limits -------------------------------------------------------------------


def test_eks_outputs(default):
    outputs = default.template["Outputs"]
    assert outputs["EksTrainingNamespace"]["Value"] == "training"
    assert outputs["EksFsxPvcName"]["Value"] == k8s.FSX_PVC_NAME
    assert outputs["EksTrainingRuntimeName"]["Value"] == k8s.TRAINING_RUNTIME_NAME
    command = json.dumps(outputs["EksUpdateKubeconfigCommand"]["Value"])
    assert "aws eks update-kubeconfig --region us-west-2 --name " in command
    cluster = _ref(default.template["Resources"], "AWS::EKS::Cluster", "EksCluster")
    assert outputs["EksClusterName"]["Value"] == {"Ref": cluster}
    assert outputs["EksClusterArn"]["Value"] == {"Fn::GetAtt": [cluster, "Arn"]}
    assert "Fn::GetAtt" in outputs["EksTrainiumNodegroupName"]["Value"]


def test_sixteen_node_eks_within_limits_and_cfn_lint(synth):
    s = synth(profile=ULTRA16, orchestrator="eks")
    assert len(s.template["Resources"]) < 500
    assert len(json.dumps(s.template)) < 1_000_000
    assert _nodegroups(s)["trainium"]["Properties"]["ScalingConfig"]["MaxSize"] == 16
    assert cfn_lint(s.template, s.config.region) == []


def test_control_plane_logs_go_to_a_stack_owned_log_group(default):
    """EKS writes control-plane logs to /aws/eks/<cluster>/cluster; the stack creates that
    group first (encrypted, expiring, kept or deleted with data_removal_policy), so nothing
    EKS-made outlives cdk destroy, and names it per stack instance so a kept one never
    blocks the next deploy."""
    (cluster_id, cluster), = default.resources("AWS::EKS::Cluster").items()
    logs_id = default.ref_id("EksControlPlaneLogs")
    group = default.template["Resources"][logs_id]
    name = cluster["Properties"]["Name"]
    assert group["Properties"]["LogGroupName"] == {"Fn::Join": ["", ["/aws/eks/", name, "/cluster"]]}
    assert "AWS::StackId" in json.dumps(name)  # unique per stack instance
    assert logs_id in cluster["DependsOn"]
    assert cluster["Properties"]["Logging"]["ClusterLogging"]["EnabledTypes"]


def test_an_efa_enabled_file_system_gets_another_volume_and_claim(default, synth):
    """Turning fsx.efa on or off replaces the file system (constructs/storage.py), and a
    PersistentVolume's source is immutable ("spec.persistentvolumesource is immutable after
    creation", Kubernetes API validation), as is a claim's volumeName: the EFA file system's
    volume and claim have another name and another construct (logical id), so CloudFormation
    creates them beside the old ones and then deletes those; the runtime mounts the new claim
    and the output names it."""
    from tests.orchestrators.eks.test_lustre_efa import EFA_EKS

    efa = synth(**EFA_EKS)
    for s, name in ((default, "fsx-lustre"), (efa, "fsx-lustre-efa")):
        (pv,) = _objects(s, "PersistentVolume")
        (pvc,) = _objects(s, "PersistentVolumeClaim")
        assert pv["metadata"]["name"] == pvc["metadata"]["name"] == \
            pvc["spec"]["volumeName"] == name
        (runtime,) = _objects(s, "ClusterTrainingRuntime")
        claims = [v["persistentVolumeClaim"]["claimName"] for v in _volumes(runtime)
                  if "persistentVolumeClaim" in v]
        assert claims == [name]
        assert s.output("EksFsxPvcName") == name

    def volume_ids(s):
        return {k for k, r in s.resources("Custom::AWSCDK-EKS-KubernetesResource").items()
                if "PersistentVolume" in json.dumps(r["Properties"]["Manifest"])}
    (old,), (new,) = volume_ids(default), volume_ids(efa)
    assert old.startswith("EksClustermanifestFsxVolume") and "FsxVolumeEfa" not in old
    assert new.startswith("EksClustermanifestFsxVolumeEfa")


def _volumes(runtime: dict[str, Any]) -> list[dict[str, Any]]:
    """The pod volumes of a ClusterTrainingRuntime's replicated jobs."""
    return [v for job in runtime["spec"]["template"]["spec"]["replicatedJobs"]
            for v in job["template"]["spec"]["template"]["spec"].get("volumes", [])]
