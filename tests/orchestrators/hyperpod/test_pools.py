"""Both HyperPod orchestrators with node pools (``profiles/mixed.yaml``: trn1.32xlarge main,
trn2.48xlarge, m7i.8xlarge CPU): one Compute instance group per pool with its own ``ml.``
type (Slurm: in the partition of the pool's name; EKS: labelled with the pool, the Neuron
taint on Trainium groups only), CPU groups without deep health checks and with
hyperthreading, the ``Pools`` output's partitions and instance groups, the execution role
scoped to every group's subnet, each pool's job environment in the Slurm lifecycle file, and
the ``CreateCluster`` request valid against botocore's SageMaker model."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.conftest import profile_path
from tests.orchestrators.hyperpod import create_cluster_request, sagemaker_model
from trn_ultracluster.contracts.pools import POOL_LABEL
from trn_ultracluster.orchestrators.hyperpod.instance_groups import (
    CPU_THREADS_PER_CORE,
    WORKER_THREADS_PER_CORE,
)

MIXED = profile_path("mixed")
POOL_TYPES = {"trn1": "ml.trn1.32xlarge", "trn2": "ml.trn2.48xlarge", "cpu": "ml.m7i.8xlarge"}
NEURON_TAINT = {"Effect": "NoSchedule", "Key": "aws.amazon.com/neuron", "Value": "true"}
EFA_LABEL = "vpc.amazonaws.com/efa.present"
KEYS = ("ClusterName", "InstanceGroups", "VpcConfig", "NodeRecovery", "Orchestrator")
BIG_TRN2 = [  # the mixed pools with 300 trn2 nodes: the trn2 and cpu pools reach subnet 1
    {"name": "trn1", "instance_type": "trn1.32xlarge", "nodes": {"min": 0, "desired": 1, "max": 2}},
    {"name": "trn2", "instance_type": "trn2.48xlarge",
     "nodes": {"min": 0, "desired": 300, "max": 300}},
    {"name": "cpu", "instance_type": "m7i.8xlarge", "nodes": {"min": 0, "desired": 1, "max": 2}},
]


@pytest.fixture(scope="module")
def slurm(synth):
    return synth(MIXED, orchestrator="hyperpod-slurm")


@pytest.fixture(scope="module")
def eks(synth):
    return synth(MIXED, orchestrator="hyperpod-eks")


def groups(s) -> dict[str, dict[str, Any]]:
    return {g["InstanceGroupName"]: g for g in s.only("AWS::SageMaker::Cluster")["InstanceGroups"]}


GROUP_OF = {"trn1": "workers", "trn2": "trn2", "cpu": "cpu"}
"""Pool -> its instance group: the main pool's keeps the one-pool stack's name ``workers``
(a renamed instance group is a new one, its nodes replaced), the others are named after the
pool."""


def check_worker_groups(s) -> dict[str, dict[str, Any]]:
    """What both orchestrators give every pool's group; returns pool -> its worker group."""
    found = groups(s)
    assert [n for n in found if n not in ("controller", "login")] == list(GROUP_OF.values())
    workers = {pool: found[group] for pool, group in GROUP_OF.items()}
    for name, group in workers.items():
        pool = s.config.pool(name)
        assert group["InstanceType"] == POOL_TYPES[name]
        assert group["InstanceCount"] == pool.nodes.desired
        assert group["InstanceStorageConfigs"] == [{"EbsVolumeConfig": {"VolumeSizeInGB": 500}}]
        if pool.accelerated:
            assert group["ThreadsPerCore"] == WORKER_THREADS_PER_CORE == 1
            assert group["OnStartDeepHealthChecks"] == ["InstanceStress", "InstanceConnectivity"]
        else:  # deep health checks test accelerators and EFA only
            assert group["ThreadsPerCore"] == CPU_THREADS_PER_CORE == 2
            assert "OnStartDeepHealthChecks" not in group
    return workers


def check_create_cluster(s) -> dict[str, Any]:
    params = create_cluster_request(s.only("AWS::SageMaker::Cluster"), s.template, KEYS)
    assert "Fn::" not in json.dumps(params) and '"Ref"' not in json.dumps(params)
    model = sagemaker_model()
    assert {g["InstanceType"] for g in params["InstanceGroups"]} <= set(
        model.shape_for("ClusterInstanceType").enum)
    return params


# --- hyperpod-slurm ----------------------------------------------------------------------------

def test_slurm_one_compute_group_per_pool_in_its_partition(slurm):
    workers = check_worker_groups(slurm)
    for name, group in workers.items():
        assert group["SlurmConfig"] == {"NodeType": "Compute", "PartitionNames": [name]}
        assert group["LifeCycleConfig"]["OnInitComplete"] == "on_init_complete.sh"
        assert "KubernetesConfig" not in group
    assert [g["SlurmConfig"]["NodeType"] for g in groups(slurm).values()][:2] == [
        "Controller", "Login"]
    assert slurm.output("HyperPodWorkerGroupNames") == "workers,trn2,cpu"


def test_slurm_create_cluster_request_passes_botocore_validation(slurm):
    params = check_create_cluster(slurm)
    node_types = sagemaker_model().shape_for("ClusterSlurmNodeType").enum
    assert {g["SlurmConfig"]["NodeType"] for g in params["InstanceGroups"]} <= set(node_types)


def test_slurm_pools_output_names_each_pools_partition_and_groups(slurm):
    assert slurm.stack.orchestrator.pool_details() == {
        "trn1": {"partition": "trn1", "instance_groups": "workers", "instances": 1},
        "trn2": {"partition": "trn2", "instance_groups": "trn2", "instances": 0},
        "cpu": {"partition": "cpu", "instance_groups": "cpu", "instances": 1}}
    text = json.dumps(slurm.output("Pools"))
    for name in POOL_TYPES:
        assert (f'\\"partition\\":\\"{name}\\",\\"instance_groups\\":'
                f'\\"{GROUP_OF[name]}\\"') in text


def test_slurm_lifecycle_file_holds_each_other_pools_environment(slurm):
    from trn_ultracluster.orchestrators.hyperpod_slurm.lifecycle import pool_environments

    o = slurm.stack.orchestrator
    pools = pool_environments(o, o.props.settings, o.worker_groups, o.props.worker_counts,
                              list(o.props.partitions.values()), o.props.foundation)
    assert list(pools) == ["trn2", "cpu"]  # the main pool's values are the shared env
    assert (pools["trn2"]["groups"], pools["trn2"]["efa"]) == (["trn2"], True)
    assert (pools["cpu"]["groups"], pools["cpu"]["efa"]) == (["cpu"], False)
    trn2 = {k: slurm.stack.resolve(v) for k, v in pools["trn2"]["env"].items()}
    cpu = {k: slurm.stack.resolve(v) for k, v in pools["cpu"]["env"].items()}
    assert (trn2["TRN_INSTANCE_TYPE"], trn2["TRN_NEURON_CORES_PER_NODE"],
            trn2["TRN_EFA_INTERFACES_PER_NODE"], trn2["TRN_NEURON_STACK"]) == (
        "trn2.48xlarge", "64", "16", "native")
    assert trn2["FI_PROVIDER"] == "efa" and "NEURON_CC_FLAGS" not in trn2
    assert "TrainingImageNative" in json.dumps(trn2["TRN_CONTAINER_IMAGE"])
    # a CPU pool: no NeuronCores, no EFA; the main pool's image and stack
    assert (cpu["TRN_INSTANCE_TYPE"], cpu["TRN_NEURON_CORES_PER_NODE"],
            cpu["TRN_EFA_INTERFACES_PER_NODE"], cpu["TRN_NEURON_STACK"]) == (
        "m7i.8xlarge", "0", "0", "xla")
    assert "FI_PROVIDER" not in cpu and cpu["TRN_PARTITIONS"] == "trn1,trn2,cpu"
    assert "TrainingImageNative" not in json.dumps(cpu["TRN_CONTAINER_IMAGE"])


def test_slurm_role_pulls_every_pools_image(slurm):
    pulls = [s for p in slurm.resources("AWS::IAM::Policy").values()
             if "HyperPodExecutionRole" in json.dumps(p["Properties"]["Roles"])
             for s in p["Properties"]["PolicyDocument"]["Statement"]
             if "ecr:BatchGetImage" in s["Action"]]
    text = json.dumps(pulls)
    assert "TrainingImageRepository" in text and "TrainingImageNativeRepository" in text


def test_default_slurm_stack_has_no_pools_section(synth):
    from trn_ultracluster.orchestrators.hyperpod_slurm.lifecycle import pool_environments

    o = synth(orchestrator="hyperpod-slurm").stack.orchestrator
    assert pool_environments(o, o.props.settings, o.worker_groups, o.props.worker_counts,
                             list(o.props.partitions.values()), o.props.foundation) == {}


@pytest.fixture(scope="module")
def big(synth):
    return synth(MIXED, orchestrator="hyperpod-slurm", pools=BIG_TRN2)


def test_a_pool_beyond_one_subnet_is_split_and_the_role_names_every_subnet(big):
    g = groups(big)
    assert [n for n in g if n not in ("controller", "login")] == ["workers", "trn2", "trn2-2", "cpu"]
    assert g["trn2"]["InstanceCount"] + g["trn2-2"]["InstanceCount"] == 300
    assert g["trn2-2"]["SlurmConfig"]["PartitionNames"] == ["trn2"]  # one partition per pool
    assert "OverrideVpcConfig" not in g["trn2"]
    other = g["trn2-2"]["OverrideVpcConfig"]["Subnets"]
    assert g["cpu"]["OverrideVpcConfig"]["Subnets"] == other
    assert big.stack.orchestrator.pool_details()["trn2"]["instance_groups"] == "trn2,trn2-2"
    create = [s for p in big.resources("AWS::IAM::Policy").values()
              for s in p["Properties"]["PolicyDocument"]["Statement"]
              if s.get("Sid") == "VpcCreateInterfaces"]
    (statement,) = create
    resources = json.dumps(statement["Resource"])
    compute = big.only("AWS::SageMaker::Cluster")["VpcConfig"]["Subnets"]
    for subnet in [*compute, *other]:
        assert json.dumps(subnet["Ref"]) in resources, subnet
    check_create_cluster(big)


# --- hyperpod-eks ------------------------------------------------------------------------------

def test_eks_one_group_per_pool_labelled_with_it_taint_on_trainium_only(eks):
    workers = check_worker_groups(eks)
    for name, group in workers.items():
        k8s = group["KubernetesConfig"]
        assert k8s["Labels"][POOL_LABEL] == name
        if eks.config.pool(name).accelerated:
            assert k8s["Labels"][EFA_LABEL] == "true" and k8s["Taints"] == [NEURON_TAINT]
            assert group["LifeCycleConfig"]["OnCreate"] == "on_create.sh"
        else:  # a CPU pool's nodes take any pod and keep Lustre on TCP
            assert k8s == {"Labels": {POOL_LABEL: "cpu"}}
            assert group["LifeCycleConfig"]["OnCreate"] == "on_create_no_efa.sh"
        assert "SlurmConfig" not in group


def test_eks_create_cluster_request_passes_botocore_validation(eks):
    params = check_create_cluster(eks)
    effects = sagemaker_model().shape_for("ClusterKubernetesTaint").members["Effect"].enum
    assert {t["Effect"] for g in params["InstanceGroups"]
            for t in g.get("KubernetesConfig", {}).get("Taints", [])} <= set(effects)


def test_eks_pools_output_and_efa_plugin_cover_every_efa_pool(eks):
    assert eks.stack.orchestrator.pool_details() == {
        name: {"instance_groups": GROUP_OF[name],
               "instances": eks.config.pool(name).nodes.desired} for name in POOL_TYPES}
    (efa,) = [r for r in eks.resources("Custom::AWSCDK-EKS-HelmChart").values()
              if r["Properties"]["Release"] == "aws-efa-k8s-device-plugin"]
    values = json.loads(efa["Properties"]["Values"])
    assert values["supportedInstanceLabels"]["values"] == ["ml.trn1.32xlarge", "ml.trn2.48xlarge"]


def test_eks_uploads_the_cpu_entry_point_only_with_a_cpu_pool(eks, synth):
    def staged(s) -> set[str]:
        (upload,) = s.resources("Custom::CDKBucketDeployment").values()
        return {p.name for key in upload["Properties"]["SourceObjectKeys"]
                if (s.outdir / f"asset.{key.removesuffix('.zip')}").is_dir()
                for p in (s.outdir / f"asset.{key.removesuffix('.zip')}").iterdir()}

    assert "on_create_no_efa.sh" in staged(eks)
    default = synth(profile_path("hyperpod-eks"))
    assert "on_create.sh" in staged(default) and "on_create_no_efa.sh" not in staged(default)
    for group in groups(default).values():  # no pools: the groups keep their labels
        assert POOL_LABEL not in group["KubernetesConfig"]["Labels"]
        assert group["LifeCycleConfig"]["OnCreate"] == "on_create.sh"
