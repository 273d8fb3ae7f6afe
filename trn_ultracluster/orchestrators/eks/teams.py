"""Teams on ``eks``, enforced by Kueue: the chart and the objects of :mod:`.kueue`, applied to
the EKS cluster of :class:`~.cluster.EksOrchestrator` (only with ``teams``: without them the
template is as before).

Create order (each a dependency of the next, so CloudFormation creates them in this order and
deletes them in the reverse one):

1. the Kueue chart (:data:`~.versions.KUEUE_CHART`, ``helm --wait``: Kueue's readiness check
   waits for its webhook certificates "so that the early requests are not rejected during the
   Kueue's startup", ``cmd/kueue/main.go``), after the Kubeflow Trainer chart, whose TrainJob
   CRD the TrainJob integration watches;
2. a ResourceFlavor per pool and a WorkloadPriorityClass per priority class;
3. a ClusterQueue per team (after every flavor it names);
4. per team, its FSx PersistentVolume (after the FSx CSI add-on), then one manifest with its
   namespace, the claim of that volume (the name the runtimes mount) and its LocalQueue (after
   its ClusterQueue).

Delete order (``cdk destroy``; aws-eks-v2's handler runs ``kubectl delete -f``, which waits for
the objects to be gone, and ``helm uninstall`` with ``--wait`` for a chart installed with it):
a team's namespace goes first, with its TrainJobs, their Workloads and the claim; Kueue is
still running and removes the ``kueue.x-k8s.io/resource-in-use`` finalizer every Workload is
created with (``pkg/controller/jobframework/utils.go``). Then the volume, then the
ClusterQueue, whose finalizer Kueue removes once no Workload reserves its quota
(``pkg/controller/core/clusterqueue_controller.go``), then the flavors, whose finalizer Kueue
removes once no ClusterQueue names them (``resourceflavor_controller.go``), and the priority
classes; the chart last. The training namespace depends on the chart too (with teams only):
Kueue manages the TrainJobs there (:func:`~.kueue.manager_config`), so their Workloads carry
the finalizer, and the namespace must be gone before Kueue is. Reversed, a finalizer with no
controller to remove it keeps a namespace ``Terminating`` and the delete fails when the
kubectl handler times out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from aws_cdk import aws_eks_v2 as eks

from trn_ultracluster.orchestrators.eks import kueue
from trn_ultracluster.orchestrators.eks import manifests as k8s
from trn_ultracluster.orchestrators.eks.versions import KUEUE_CHART

if TYPE_CHECKING:
    from trn_ultracluster.config.model.teams import SchedulingConfig, Team

__all__ = ["KueueObjects", "add_kueue", "priority_class_names", "team_details"]


@dataclass
class KueueObjects:
    """What :func:`add_kueue` made.

    Attributes:
        chart: the Kueue Helm release.
        flavors: pool name -> its ResourceFlavor manifest.
        priority_classes: class name -> its WorkloadPriorityClass manifest.
        cluster_queues: team name -> its ClusterQueue manifest.
        volumes: team name -> its FSx PersistentVolume manifest.
        teams: team name -> the manifest of its namespace, claim and LocalQueue.
    """

    chart: eks.HelmChart
    flavors: dict[str, eks.KubernetesManifest]
    priority_classes: dict[str, eks.KubernetesManifest]
    cluster_queues: dict[str, eks.KubernetesManifest]
    volumes: dict[str, eks.KubernetesManifest]
    teams: dict[str, eks.KubernetesManifest]


def team_details(teams: Sequence[Team]) -> dict[str, dict[str, str]]:
    """The ``Teams`` output's per-team keys on ``eks``: ``namespace``, ``queue`` (the
    LocalQueue) and ``cluster_queue`` (:func:`~.kueue.team_names`)."""
    out = {}
    for team in teams:
        names = kueue.team_names(team.name)
        out[team.name] = {"namespace": names.namespace, "queue": names.queue,
                          "cluster_queue": names.cluster_queue}
    return out


def priority_class_names(scheduling: SchedulingConfig) -> dict[str, str]:
    """Priority class -> its WorkloadPriorityClass (the class's own name)."""
    return {c.name: c.name for c in scheduling.priority_classes}


def add_kueue(owner: Any, teams: Sequence[Team], scheduling: SchedulingConfig,
              pools: Sequence[kueue.FlavorPool]) -> KueueObjects:
    """Install Kueue and create the teams' objects on ``owner``'s cluster (the module doc says
    what and in which order).

    Args:
        owner: the :class:`~.control_plane.EksCluster` (not imported here: it imports this
            module's importer); its ``cluster``, ``chart()``, ``trainer_chart``, ``namespace``
            (the training namespace's manifest), ``addons``, ``fsx_claim_name`` and
            ``props`` (settings, foundation's file system, FSx capacity) are read.
        teams: the resolved teams (``ClusterConfig.team_list``), at least one.
        scheduling: the priority classes and the preemption setting.
        pools: every node pool as a flavor, main pool first.

    Raises:
        ValueError: no teams, or a quota :func:`~.kueue.quota_amounts` refuses.
    """
    if not teams:
        raise ValueError("add_kueue needs at least one team (without teams Kueue is not "
                         "installed)")
    cluster: eks.Cluster = owner.cluster
    training_ns = owner.props.settings.training_namespace
    managed = [training_ns, *(kueue.team_names(t.name).namespace for t in teams)]
    chart = owner.chart("KueueChart", KUEUE_CHART, kueue.chart_values(managed), wait=True,
                        create_namespace=True)
    chart.node.add_dependency(owner.trainer_chart)
    owner.namespace.node.add_dependency(chart)  # deleted before Kueue (module doc)

    flavors = {}
    for pool in pools:
        flavors[pool.name] = cluster.add_manifest(f"KueueFlavor-{pool.name}",
                                                  kueue.resource_flavor(pool))
        flavors[pool.name].node.add_dependency(chart)
    classes = {}
    for c in scheduling.priority_classes:
        classes[c.name] = cluster.add_manifest(f"KueuePriority-{c.name}",
                                               kueue.workload_priority_class(c.name, c.weight))
        classes[c.name].node.add_dependency(chart)

    base = owner.props.foundation
    claim = owner.fsx_claim_name
    queues, volumes, objects = {}, {}, {}
    for team in teams:
        names = kueue.team_names(team.name)
        queue = cluster.add_manifest(f"KueueTeam-{team.name}-ClusterQueue",
                                     kueue.cluster_queue(team, pools, scheduling.preemption))
        queue.node.add_dependency(chart, *flavors.values())
        volume_name = kueue.team_volume_name(claim, team.name)
        volume = cluster.add_manifest(f"KueueTeam-{team.name}-Volume", k8s.fsx_persistent_volume(
            file_system_id=base.file_system.file_system_id, dns_name=base.file_system.dns_name,
            mount_name=base.file_system.mount_name,
            storage_capacity_gib=owner.props.fsx_capacity_gib, name=volume_name))
        volume.node.add_dependency(owner.addons["aws_fsx_csi_driver"])
        team_objects = cluster.add_manifest(
            f"KueueTeam-{team.name}",
            k8s.namespace(names.namespace),
            k8s.fsx_persistent_volume_claim(namespace_name=names.namespace, name=claim,
                                            volume_name=volume_name),
            kueue.local_queue(team.name))
        team_objects.node.add_dependency(chart, queue, volume)
        queues[team.name], volumes[team.name], objects[team.name] = queue, volume, team_objects
    return KueueObjects(chart, flavors, classes, queues, volumes, objects)
