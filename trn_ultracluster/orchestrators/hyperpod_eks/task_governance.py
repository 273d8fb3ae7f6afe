"""The teams of ``hyperpod-eks``, enforced by SageMaker HyperPod task governance (built on
Kueue): made only with ``teams`` in the configuration; without, the template is unchanged.

What the stack makes (:class:`TaskGovernance`), in create order:

1. the EKS add-on :data:`ADDON_NAME` (version
   ``eks.addon_versions.amazon_sagemaker_hyperpod_taskgovernance``, ``null``: EKS's default
   build), after the HyperPod cluster: "A HyperPod node must already
   exist in the EKS cluster before installing the HyperPod task governance add-on"; it
   installs Kueue (add-on v1.6.0-eksbuild.1: Kueue v0.19.2) and "If you already have Kueue
   installed in their clusters, uninstall Kueue before installing the EKS add-on" (SageMaker
   developer guide, "Task governance setup",
   https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-eks-operate-console-ui-governance-setup-task-governance.html),
   so no other Kueue may be installed on ``hyperpod-eks``;
2. the cluster policy, ``AWS::SageMaker::ClusterSchedulerConfig`` (:func:`scheduler_config`),
   after the add-on;
3. a compute quota per team, ``AWS::SageMaker::ComputeQuota``
   (:func:`compute_quota_properties`), after the policy. Each quota makes the team's namespace
   :func:`team_namespace` ("A corresponding Namespace will be created, of type
   ``hyperpod-ns-{team-name}``", guide, "Policies",
   https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-eks-operate-console-ui-governance-policies.html),
   with its LocalQueue :func:`local_queue` and ClusterQueue :func:`cluster_queue`;
4. per team, a wait until that namespace exists (``KubernetesObjectValue``: the kubectl
   provider polls ``kubectl get namespace`` every 10 s, a ``NotFound`` retried, up to
   :data:`NAMESPACE_WAIT`: aws-cdk-lib 2.275.0 ``aws-eks-v2`` kubectl handler ``get``), then
   the file system's PersistentVolume and claim there (:func:`team_fsx_volume`), so the
   runtime's ``claimName`` resolves in the team's namespace, where its TrainJobs run.

Mechanism: CloudFormation resources, no custom resource. Both types are in the CloudFormation
template reference (``AWS::SageMaker::ComputeQuota``; ``AWS::SageMaker::ClusterSchedulerConfig``,
https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/aws-resource-sagemaker-clusterschedulerconfig.html),
so CloudFormation creates, updates (in place: ``SchedulerConfig``, ``ComputeQuotaConfig``,
``ActivationState``, ``Tags``) and deletes them with the rest of the stack; a custom resource
would duplicate that with our own code and permissions. aws-cdk-lib 2.275.0 has an L1 for the
policy (``CfnClusterSchedulerConfig``) and none for the quota (a ``CfnResource``). cfn-lint
1.58 ships both schemas (``data/schemas/resources``: ``d964d045f320022e.json`` the policy,
``37c2673eb8818672.json`` the quota), but its per-Region type lists are snapshots that
disagree with the types' own documentation: the quota's schema says "Available in 15 regions
(us-east-1, us-east-2, us-west-1, us-west-2, ...)" while cfn-lint lists it in neither
us-west-1 nor ap-northeast-1, and it lists the policy in us-east-1 and us-west-1 but not in
us-west-2. A type missing from a Region's list is ``E3006`` "Resource type ... does not exist
in <Region>", and then cfn-lint checks none of its properties; so both resources skip that
one check (their ``Metadata``), and the tests check both requests against botocore's
SageMaker model and cfn-lint's schemas. Whether CloudFormation offers both types in a given
Region is not verified here (no AWS account).

Create-only (replaced when changed): the policy's ``Name`` and ``ClusterArn`` (template
reference, "Update requires: Replacement"); the quota's ``Name``, ``ClusterArn`` and
``ComputeQuotaTarget/TeamName`` (cfn-lint 1.58 schema, ``replacementStrategy``
``delete_then_create``). Delete: the volumes, then the quotas, the policy, the add-on, and
only then the HyperPod cluster: "When cluster deletion fails due to attached SageMaker
HyperPod task governance policies, you will need to Delete policies" (guide, "Troubleshoot",
"Deleting clusters").

Jobs: a TrainJob of team ``t`` at class ``c`` goes in :func:`team_namespace` with the labels
``kueue.x-k8s.io/queue-name: hyperpod-ns-t-localqueue`` and ``kueue.x-k8s.io/priority-class:
c-priority`` ("The priority class is in the format {priority-class-name}-priority", guide,
"Policies"; "you must include the following labels: kueue.x-k8s.io/queue-name:
hyperpod-ns-team-name-localqueue, kueue.x-k8s.io/priority-class: priority-class-name-priority",
guide, "Example HyperPod task governance AWS CLI commands"). The job CLI also puts both labels
on the Job and pod templates of the TrainJob's runtime through ``spec.runtimePatches``:
the add-on's Kueue, as reported, has no TrainJob integration and its admission policy denies
unlabelled pods in these namespaces, and Trainer v2.3.0 copies no TrainJob label down
(``trn_ultracluster.cli.backends.hyperpod_eks`` has the sources and what is not verified).

IAM: none in the stack. CloudFormation calls the SageMaker APIs with the deploying role; the
quota's handlers need ``sagemaker:CreateComputeQuota``, ``DescribeComputeQuota``,
``DescribeCluster``, ``AddTags``, ``ListTags``, ``eks:AssociateAccessPolicy``,
``DescribeCluster``, ``ListAssociatedAccessPolicies`` to create, and ``DeleteComputeQuota``,
``eks:DisassociateAccessPolicy``, ``DescribeAccessEntry`` to delete; the policy's, the same
with ``ClusterSchedulerConfig`` and ``eks:DescribeAccessEntry`` on create (cfn-lint 1.58
schemas, ``handlers``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from aws_cdk import CfnResource, Duration
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_sagemaker as sagemaker
from constructs import Construct

from trn_ultracluster.config.model.teams import PriorityClassConfig, SchedulingConfig, Team
from trn_ultracluster.orchestrators.eks import manifests as k8s
from trn_ultracluster.orchestrators.hyperpod.instance_groups import ml_name

__all__ = ["ADDON_NAME", "BORROW_LIMIT_PERCENT", "CFN_LINT_SKIP", "COMPUTE_QUOTA_TYPE",
           "FAIR_SHARE_WEIGHT", "NAMESPACE_WAIT", "SCHEDULER_CONFIG_NAME", "TaskGovernance",
           "TaskGovernanceProps", "cluster_queue", "compute_quota_properties", "local_queue",
           "priority_class_name", "priority_class_names", "quota_resources",
           "resource_sharing", "scheduler_config", "team_details", "team_fsx_volume",
           "team_namespace"]

ADDON_NAME = "amazon-sagemaker-hyperpod-taskgovernance"
"""The EKS add-on of HyperPod task governance (guide, "Task governance setup":
``aws eks create-addon ... --addon-name amazon-sagemaker-hyperpod-taskgovernance``)."""
COMPUTE_QUOTA_TYPE = "AWS::SageMaker::ComputeQuota"
SCHEDULER_CONFIG_NAME = "trn-ultracluster"
"""The policy's ``Name``: "unique within the SageMaker AI HyperPod cluster" (botocore 1.44.8
SageMaker model, ``CreateClusterSchedulerConfig``); the stack makes one per cluster."""
CFN_LINT_SKIP = ("cfn-lint", {"config": {"ignore_checks": ["E3006"]}})
"""The policy's and the quotas' ``Metadata``: cfn-lint's stale per-Region type lists
(module doc); only ``E3006``, only on them."""
NAMESPACE_PREFIX = "hyperpod-ns-"
LOCAL_QUEUE_SUFFIX = "-localqueue"
CLUSTER_QUEUE_SUFFIX = "-clusterqueue"
"""Task governance's names: namespace ``hyperpod-ns-<team>`` (guide, "Policies"), LocalQueue
``<namespace>-localqueue`` (guide, "Example HyperPod task governance AWS CLI commands"),
ClusterQueue ``<namespace>-clusterqueue``: the HyperPod CLI builds both queue names as
``hyperpod-ns-`` + the namespace's label ``sagemaker.amazonaws.com/quota-allocation-id`` +
the suffix (aws/sagemaker-hyperpod-cli ``src/sagemaker/hyperpod/cli/constants/command_constants.py``
and ``commands/cluster.py``, commit 011ca92), and AWS's sample lists the workloads of team
``team-b`` as queued in ``hyperpod-ns-team-b-localqueue`` and reserved in
``hyperpod-ns-team-b-clusterqueue`` (aws-samples/awsome-distributed-training
``1.architectures/7.sagemaker-hyperpod-eks/task-governance/README.md``). Not verified on a
cluster."""
PRIORITY_CLASS_SUFFIX = "-priority"
"""A class ``c`` is the WorkloadPriorityClass ``c-priority`` (guide, "Policies")."""
BORROW_LIMIT_PERCENT = 10000
"""``ResourceSharingConfig.BorrowLimit`` of a team that may borrow: the most, "A team can
borrow up to 10,000% of allocated compute" (guide, "Policies", "Percentage-based borrow
limit": a percentage of the team's own quota; botocore 1.44.8 ``BorrowLimit``: max 10000,
default 50), the nearest to Kueue's unlimited borrowing that ``borrow: true`` means."""
FAIR_SHARE_WEIGHT = 100
"""Every team's ``FairShareWeight``: one weight for all (the configuration has none per
team), not 0: "A zero weight signifies the lowest priority, implying this team will always
be at a disadvantage compared to other teams" (guide, "Policies")."""
NAMESPACE_WAIT = Duration.minutes(13)
"""How long the stack waits for a team's namespace after its quota: as long as the kubectl
provider allows with a margin (its Lambda function stops at 15 minutes, aws-cdk-lib 2.275.0
``aws-eks-v2`` ``kubectl-provider``; the handler's own calls need some of it). How long task
governance takes to make the namespace is not documented: a namespace later than this fails
the create and rolls the stack back (docs/hyperpod-eks.md says so)."""
STRATEGIES = {(True, True): "LendAndBorrow", (False, True): "Lend", (False, False): "DontLend"}
"""(borrow, lend) -> ``ResourceSharingConfig.Strategy`` (botocore 1.44.8: ``Lend``,
``DontLend``, ``LendAndBorrow``); borrowing without lending has none (the configuration rules
refuse it on ``hyperpod-eks``)."""
PREEMPT_TEAM_TASKS = {"lower-priority": "LowerPriority", "never": "Never"}
"""``scheduling.preemption`` -> ``ComputeQuotaConfig.PreemptTeamTasks`` ("When set to
LowerPriority, the entity's lower priority tasks are preempted by their own higher priority
tasks", botocore 1.44.8). Reclaiming lent quota is task governance's own: "By default, the
team loaning idle compute will preempt tasks from other teams" (guide, "Policies")."""


def team_namespace(team: str) -> str:
    """The namespace task governance makes for ``team``: ``hyperpod-ns-<team>``."""
    return f"{NAMESPACE_PREFIX}{team}"


def local_queue(team: str) -> str:
    """The team's LocalQueue (in :func:`team_namespace`), e.g.
    ``hyperpod-ns-research-localqueue``: the ``kueue.x-k8s.io/queue-name`` of its jobs, at
    most 63 characters for a 40-character team name (a label value's limit)."""
    return f"{team_namespace(team)}{LOCAL_QUEUE_SUFFIX}"


def cluster_queue(team: str) -> str:
    """The team's ClusterQueue, e.g. ``hyperpod-ns-research-clusterqueue``."""
    return f"{team_namespace(team)}{CLUSTER_QUEUE_SUFFIX}"


def priority_class_name(name: str) -> str:
    """The WorkloadPriorityClass of class ``name``, e.g. ``training-priority``."""
    return f"{name}{PRIORITY_CLASS_SUFFIX}"


def team_details(teams: Sequence[Team]) -> dict[str, dict[str, str]]:
    """Team name -> ``{"namespace", "queue", "cluster_queue"}`` (the ``Teams`` output's
    :class:`~trn_ultracluster.contracts.teams.TeamInfo` fields)."""
    return {t.name: {"namespace": team_namespace(t.name), "queue": local_queue(t.name),
                     "cluster_queue": cluster_queue(t.name)} for t in teams}


def priority_class_names(classes: Sequence[PriorityClassConfig]) -> dict[str, str]:
    """Class name -> its WorkloadPriorityClass (:func:`priority_class_name`)."""
    return {c.name: priority_class_name(c.name) for c in classes}


def scheduler_config(scheduling: SchedulingConfig, teams: Sequence[Team]) -> dict[str, Any]:
    """The policy's ``SchedulerConfig`` (CloudFormation and API shape alike): every class with
    its weight ("Task ranking"), ``FairShare`` ``Enabled`` (teams borrow idle compute by their
    equal :data:`FAIR_SHARE_WEIGHT`, not first come first served), and
    ``IdleResourceSharing`` ``Enabled`` when some team may borrow (then capacity no quota
    holds is borrowable too; "by default it is Disabled", guide, "Policies")."""
    return {
        "PriorityClasses": [{"Name": c.name, "Weight": c.weight}
                            for c in scheduling.priority_classes],
        "FairShare": "Enabled",
        "IdleResourceSharing": "Enabled" if any(t.borrow for t in teams) else "Disabled",
    }


def resource_sharing(team: Team) -> dict[str, Any]:
    """``ResourceSharingConfig`` of ``team``: :data:`STRATEGIES` of its borrow/lend, with
    :data:`BORROW_LIMIT_PERCENT` when it borrows.

    Raises:
        ValueError: borrow without lend (the configuration rules refuse it first).
    """
    strategy = STRATEGIES.get((team.borrow, team.lend))
    if strategy is None:
        raise ValueError(f"team {team.name}: HyperPod task governance cannot borrow without "
                         "lending")
    if team.borrow:
        return {"Strategy": strategy, "BorrowLimit": BORROW_LIMIT_PERCENT}
    return {"Strategy": strategy}


def quota_resources(team: Team) -> list[dict[str, Any]]:
    """``ComputeQuotaResources`` of ``team``: one entry per ``ml.`` instance type of the
    pools, in pool order, ``Count`` = its whole nodes there (pools of one type summed: task
    governance allocates by instance type), 0 where the team has none, so its ClusterQueue
    names every type.

    Raises:
        ValueError: a quota that is no whole number of nodes (the rules refuse it first).
    """
    counts: dict[str, int] = {}
    for quota in team.quotas:
        if quota.nodes is None:
            raise ValueError(f"team {team.name}: the quota on pool {quota.pool} is no whole "
                             "number of nodes")
        kind = ml_name(quota.instance)
        counts[kind] = counts.get(kind, 0) + quota.nodes
    return [{"InstanceType": kind, "Count": count} for kind, count in counts.items()]


def compute_quota_properties(team: Team, *, cluster_arn: str, preemption: str,
                             tags: Mapping[str, str]) -> dict[str, Any]:
    """The ``AWS::SageMaker::ComputeQuota`` properties of ``team`` (the ``CreateComputeQuota``
    request's shape): ``Name`` and ``TeamName`` the team's name, its resources
    (:func:`quota_resources`), sharing (:func:`resource_sharing`), ``PreemptTeamTasks`` of
    ``scheduling.preemption`` (:data:`PREEMPT_TEAM_TASKS`), ``ActivationState`` ``Enabled``
    and the stack's ``tags`` (a ``CfnResource`` gets none from ``Tags.of``)."""
    properties: dict[str, Any] = {
        "Name": team.name,
        "ClusterArn": cluster_arn,
        "ComputeQuotaConfig": {
            "ComputeQuotaResources": quota_resources(team),
            "ResourceSharingConfig": resource_sharing(team),
            "PreemptTeamTasks": PREEMPT_TEAM_TASKS[preemption],
        },
        "ComputeQuotaTarget": {"TeamName": team.name, "FairShareWeight": FAIR_SHARE_WEIGHT},
        "ActivationState": "Enabled",
    }
    if tags:
        properties["Tags"] = [{"Key": k, "Value": v} for k, v in sorted(tags.items())]
    return properties


def team_fsx_volume(namespace: str, claim: str, *, file_system_id: str, dns_name: str,
                    mount_name: str, storage_capacity_gib: int) -> list[k8s.Manifest]:
    """The file system's PersistentVolume ``<claim>-<namespace>`` and the claim ``claim``
    bound to it in ``namespace``: a static volume binds one claim, so each namespace gets its
    own volume of the same file system (the FSx CSI driver mounts each pod's volume itself,
    no shared staging: kubernetes-sigs/aws-fsx-csi-driver ``pkg/driver/node.go``, no node
    capabilities). The claim has the training namespace's name, which the runtimes mount."""
    volume = f"{claim}-{namespace}"
    return [k8s.fsx_persistent_volume(file_system_id=file_system_id, dns_name=dns_name,
                                      mount_name=mount_name,
                                      storage_capacity_gib=storage_capacity_gib, name=volume),
            k8s.fsx_persistent_volume_claim(namespace_name=namespace, name=claim,
                                            volume_name=volume)]


@dataclass(frozen=True)
class TaskGovernanceProps:
    """What task governance is made of.

    Attributes:
        teams: the resolved teams (``ClusterConfig.team_list``), not empty.
        scheduling: the ``scheduling`` section.
        tags: the stack's tags (``ClusterConfig.tags``).
        addon_version: the add-on's version, ``None``: EKS's default.
    """

    teams: tuple[Team, ...]
    scheduling: SchedulingConfig
    tags: Mapping[str, str]
    addon_version: str | None = None


class TaskGovernance(Construct):
    """The add-on, the policy, a quota per team and the FSx claim in each team's namespace
    (module doc: order, mechanism, deletion).

    Args:
        owner: the :class:`~trn_ultracluster.orchestrators.hyperpod_eks.cluster.
            HyperPodEksOrchestrator` (its ``cluster``, ``hyperpod_cluster``, ``addons``,
            ``fsx_claim_name`` and props), once its HyperPod cluster exists.

    Attributes:
        addon, policy: the add-on and the ``ClusterSchedulerConfig``.
        quotas, namespaces, volumes: team -> its quota, its namespace wait, its volume and
            claim.
    """

    def __init__(self, scope: Construct, construct_id: str, props: TaskGovernanceProps,
                 owner: Any) -> None:
        super().__init__(scope, construct_id)
        cluster, hyperpod = owner.cluster, owner.hyperpod_cluster
        self.addon = eks.CfnAddon(self, "Addon", addon_name=ADDON_NAME,
                                  cluster_name=cluster.cluster_name,
                                  addon_version=props.addon_version,
                                  resolve_conflicts="OVERWRITE")
        self.addon.node.add_dependency(hyperpod)
        config = scheduler_config(props.scheduling, props.teams)
        self.policy = sagemaker.CfnClusterSchedulerConfig(
            self, "SchedulerConfig", cluster_arn=hyperpod.attr_cluster_arn,
            name=SCHEDULER_CONFIG_NAME,
            scheduler_config=sagemaker.CfnClusterSchedulerConfig.SchedulerConfigProperty(
                priority_classes=[sagemaker.CfnClusterSchedulerConfig.PriorityClassProperty(
                    name=c["Name"], weight=c["Weight"]) for c in config["PriorityClasses"]],
                fair_share=config["FairShare"],
                idle_resource_sharing=config["IdleResourceSharing"]))
        self.policy.node.add_dependency(self.addon)
        self.policy.add_metadata(*CFN_LINT_SKIP)
        base = owner.props.foundation
        efa = base.fsx_efa_mode != "off"
        self.quotas: dict[str, CfnResource] = {}
        self.namespaces: dict[str, eks.KubernetesObjectValue] = {}
        self.volumes: dict[str, eks.KubernetesManifest] = {}
        for team in props.teams:
            quota = CfnResource(self, f"ComputeQuota-{team.name}", type=COMPUTE_QUOTA_TYPE,
                                properties=compute_quota_properties(
                                    team, cluster_arn=hyperpod.attr_cluster_arn,
                                    preemption=props.scheduling.preemption, tags=props.tags))
            quota.node.add_dependency(self.policy)
            quota.add_metadata(*CFN_LINT_SKIP)
            namespace = team_namespace(team.name)
            waited = eks.KubernetesObjectValue(
                self, f"Namespace-{team.name}", cluster=cluster, object_type="namespace",
                object_name=namespace, json_path=".metadata.name", timeout=NAMESPACE_WAIT)
            waited.node.add_dependency(quota)
            # A volume of an EFA-enabled file system has other names (k8s.fsx_volume_name):
            # another construct, created beside the old one, which is then deleted.
            volume = eks.KubernetesManifest(
                self, f"FsxVolume{'Efa' if efa else ''}-{team.name}", cluster=cluster,
                manifest=team_fsx_volume(
                    namespace, owner.fsx_claim_name,
                    file_system_id=base.file_system.file_system_id,
                    dns_name=base.file_system.dns_name, mount_name=base.file_system.mount_name,
                    storage_capacity_gib=owner.props.fsx_capacity_gib))
            volume.node.add_dependency(waited)
            volume.node.add_dependency(owner.addons["aws_fsx_csi_driver"])
            self.quotas[team.name], self.namespaces[team.name] = quota, waited
            self.volumes[team.name] = volume
