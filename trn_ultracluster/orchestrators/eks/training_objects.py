"""The Kubernetes objects of the training namespace, part of
:class:`~trn_ultracluster.orchestrators.eks.control_plane.EksCluster` (split out by concern):
the namespace, the static FSx PersistentVolume and claim, the main pool's
``ClusterTrainingRuntime`` and one runtime per other node pool. Every object is a manifest of
the EKS cluster (construct ids in the cluster's scope, as before the split)."""

from __future__ import annotations

from typing import Any

from aws_cdk import aws_eks_v2 as eks

from trn_ultracluster.orchestrators.eks import manifests as k8s


__all__ = ["add_training_objects"]


def add_training_objects(owner: Any) -> None:
    """Create the training namespace's objects of ``owner`` (the
    :class:`~.control_plane.EksCluster`, not imported here: it imports this module) and set
    its attributes
    ``namespace``, ``fsx_claim_name``, ``fsx_volume``, ``training_runtime`` (the main pool's,
    :meth:`~.control_plane.EksCluster.training_runtime_manifest`) and ``pool_runtimes`` (pool
    name -> the runtime of every other pool,
    :meth:`~.control_plane.EksCluster.pool_training_runtime_manifest`, id
    ``TrainingRuntime<suffix>``). Called once the Trainer chart and the FSx CSI add-on exist;
    each runtime waits for the chart (its CRD and webhook) and for the build of the image it
    names."""
    base, namespace = owner.props.foundation, owner.props.settings.training_namespace
    capacity = owner.props.fsx_capacity_gib
    owner.namespace = owner.cluster.add_manifest("TrainingNamespace", k8s.namespace(namespace))
    # An EFA-enabled file system replaces the other (constructs/storage.py): its volume
    # and claim get other names and another construct, so CloudFormation creates them
    # beside the old ones and deletes those (k8s.FSX_EFA_VOLUME_NAME says why).
    efa = base.fsx_efa_mode != "off"
    volume = owner.fsx_claim_name = k8s.fsx_volume_name(efa)
    owner.fsx_volume = owner.cluster.add_manifest(
        "FsxVolumeEfa" if efa else "FsxVolume",
        k8s.fsx_persistent_volume(
            file_system_id=base.file_system.file_system_id,
            dns_name=base.file_system.dns_name,
            mount_name=base.file_system.mount_name,
            storage_capacity_gib=capacity,
            name=volume,
        ),
        k8s.fsx_persistent_volume_claim(namespace_name=namespace,
                                        name=volume, volume_name=volume),
    )
    owner.fsx_volume.node.add_dependency(owner.namespace)
    owner.fsx_volume.node.add_dependency(owner.addons["aws_fsx_csi_driver"])
    owner.training_runtime = owner.cluster.add_manifest(
        "NeuronTrainingRuntime", owner.training_runtime_manifest())
    # The ClusterTrainingRuntime CRD and its validating webhook come with the chart; the
    # image it names exists once the build is done (the tag is known before).
    owner.training_runtime.node.add_dependency(owner.trainer_chart)
    owner.training_runtime.node.add_dependency(base.training_image.build)
    # Every other pool's runtime, id TrainingRuntime<suffix> (the main one keeps its id).
    runtimes: dict[str, eks.KubernetesManifest] = {}
    for pool in base.pools[1:]:
        runtime = owner.cluster.add_manifest(f"TrainingRuntime{pool.id_suffix}",
                                             owner.pool_training_runtime_manifest(pool))
        runtime.node.add_dependency(owner.trainer_chart)
        runtime.node.add_dependency(pool.training_image.build)
        runtimes[pool.pool.name] = runtime
    owner.pool_runtimes = runtimes
