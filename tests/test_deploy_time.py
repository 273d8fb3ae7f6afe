"""The deploy-time model: critical path of a template's create (trn_ultracluster/deploy_time.py)."""

from __future__ import annotations

import pytest

from tests.conftest import profile_path
from trn_ultracluster.deploy_time import CREATE_MINUTES, DEFAULT, critical_path


def template(**resources: tuple[str, list[str]]) -> dict:
    """A template of ``name=(type, [names it DependsOn])``."""
    return {"Resources": {name: {"Type": kind, "DependsOn": deps}
                          for name, (kind, deps) in resources.items()}}


def test_the_longest_chain_sets_the_total():
    t = template(Vpc=("AWS::EC2::VPC", []),
                 Nat=("AWS::EC2::NatGateway", ["Vpc"]),
                 Fs=("AWS::FSx::FileSystem", ["Vpc"]),
                 Eks=("AWS::EKS::Cluster", ["Nat"]))
    path = critical_path(t)
    assert [s.logical_id for s in path.steps] == ["Vpc", "Nat", "Eks"]
    assert path.total_minutes == pytest.approx(DEFAULT.minutes + 5 + 9)
    assert path.finish["Fs"] == pytest.approx(DEFAULT.minutes + 10)  # in parallel, shorter
    assert path.steps[1].start == pytest.approx(DEFAULT.minutes)


def test_references_order_resources_like_depends_on():
    t = {"Resources": {
        "Fs": {"Type": "AWS::FSx::FileSystem"},
        "Dra": {"Type": "AWS::FSx::DataRepositoryAssociation",
                "Properties": {"FileSystemId": {"Ref": "Fs"}}}}}
    assert [s.logical_id for s in critical_path(t).steps] == ["Fs", "Dra"]


SLURM = {"Orchestrator": {"Slurm": {"SlurmConfigStrategy": "Managed"}}}
EKS = {"Orchestrator": {"Eks": {"ClusterArn": "arn"}}}


def test_a_hyperpod_cluster_finishes_after_the_file_system_it_waits_for_at_run_time():
    t = template(Fs=("AWS::FSx::FileSystem", []), Cluster=("AWS::SageMaker::Cluster", []))
    t["Resources"]["Cluster"]["Properties"] = SLURM
    path = critical_path(t)  # cluster 15 min in parallel with FSx 10 min: the cluster ends
    assert path.total_minutes == 15
    t["Resources"]["Slow"] = {"Type": "AWS::EC2::NatGateway"}
    t["Resources"]["Fs"]["DependsOn"] = ["Slow"]  # FSx now ready at 15: cluster at 15 + 2
    path = critical_path(t)
    assert path.total_minutes == pytest.approx(5 + 10 + 2)
    assert [s.logical_id for s in path.steps] == ["Slow", "Fs", "Cluster"]
    assert path.steps[-1].waits_for_runtime == "Fs"


def test_an_eks_orchestrated_hyperpod_cluster_does_not_wait_for_the_file_system():
    """Its nodes run no script that mounts /fsx: the FSx CSI driver mounts it for pods."""
    t = template(Slow=("AWS::EC2::NatGateway", []), Fs=("AWS::FSx::FileSystem", ["Slow"]),
                 Cluster=("AWS::SageMaker::Cluster", []))
    t["Resources"]["Cluster"]["Properties"] = EKS
    path = critical_path(t)
    assert path.finish["Cluster"] == 15 and path.total_minutes == pytest.approx(5 + 10)
    assert all(s.waits_for_runtime is None for s in path.steps)


def test_a_cycle_is_an_error():
    t = template(A=("AWS::S3::Bucket", ["B"]), B=("AWS::S3::Bucket", ["A"]))
    with pytest.raises(ValueError, match="cycle"):
        critical_path(t)


def test_every_published_time_names_its_source():
    for kind, minutes in CREATE_MINUTES.items():
        assert minutes.source, kind
        assert minutes.published == ("no published figure" not in minutes.source), kind


def test_hyperpod_profile_creates_cluster_and_file_system_in_parallel(synth):
    s = synth(profile_path("ultracluster-16"))
    path = critical_path(s.template)
    (cluster,) = s.resources("AWS::SageMaker::Cluster")
    (fs,) = s.resources("AWS::FSx::FileSystem")
    # the cluster is not created after the file system: it is ready 15 min after its own
    # start (network first), not 15 min after FSx
    assert path.finish[cluster] < path.finish[fs] + CREATE_MINUTES["AWS::SageMaker::Cluster"].minutes
    assert path.finish[cluster] >= path.finish[fs] + 2  # its nodes still wait for FSx


def test_the_queue_timeout_the_estimate_names_is_the_image_builds():
    from trn_ultracluster.constructs.training_image import BUILD_QUEUED_TIMEOUT
    from trn_ultracluster.contracts.quotas import IMAGE_BUILD_QUEUED_MINUTES

    assert BUILD_QUEUED_TIMEOUT.to_minutes() == IMAGE_BUILD_QUEUED_MINUTES
