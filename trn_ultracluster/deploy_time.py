"""How long a first ``cdk deploy`` takes: the critical path of a synthesized template.

CloudFormation creates a resource once everything it refers to (``Ref``, ``Fn::GetAtt``,
``Fn::Sub``) and everything in its ``DependsOn`` is created, and creates independent
resources in parallel (CloudFormation user guide, "DependsOn attribute",
https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/aws-attribute-dependson.html).
So a stack's create time is the longest chain of the dependency graph
(:mod:`trn_ultracluster.template_graph`) weighted by each resource's create time.

Create times per resource type (:data:`CREATE_MINUTES`) carry their source; where no
published figure exists the entry says so and gives our estimate. There is no AWS account
here: nothing in this module is measured, and the totals are estimates for planning, not
promises.

Training image builds (``Custom::CDKContainerImageBuild``, one per Neuron stack of the node
pools, and the user's image, which depends on the stack's) are counted like any resource, from
the template's edges: the stack makes each further Neuron stack's build wait for the one
before (``stacks/cluster.py``), so a second Neuron stack adds a whole build to the critical
path. It does so because the builds share one CodeBuild project (``cdklabs.deploy-time-build``'s
``SingletonProject``) without a concurrent build limit, whose builds "are queued if the number
of running builds reaches the concurrent build limit for the platform and compute type"
(CodeBuild user guide, "Builds in AWS CodeBuild"), and the stack's queue timeout is 5 minutes
(:data:`trn_ultracluster.contracts.quotas.IMAGE_BUILD_QUEUED_MINUTES`): two builds at once in
an account whose concurrency is 1 would fail the deploy. :func:`concurrent_image_builds`
counts the builds that start at once.

Besides the template's edges, :data:`RUNTIME_WAITS` models waits the template cannot show:
HyperPod Slurm nodes' lifecycle script waits for the file system to be AVAILABLE (it finds it
by its tag, so that CloudFormation creates both in parallel). HyperPod on EKS has no such
wait: the FSx CSI driver mounts the file system when a pod asks for it.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

from trn_ultracluster.template_graph import dependencies

__all__ = ["CREATE_MINUTES", "IMAGE_BUILD", "CriticalPath", "Minutes", "RUNTIME_WAITS",
           "concurrent_image_builds", "create_minutes", "critical_path", "runtime_waits"]

IMAGE_BUILD = "Custom::CDKContainerImageBuild"
"""The resource type of a training image build (``cdklabs.deploy-time-build``)."""



@dataclass(frozen=True)
class Minutes:
    """A resource type's typical create time.

    Attributes:
        minutes: typical create time, in minutes.
        source: where the figure comes from.
        published: ``True`` when the source states the figure (or a range whose upper end
            it is); ``False`` for our estimate.
    """

    minutes: float
    source: str
    published: bool = False


_ESTIMATE = "no published figure found; our estimate"
CREATE_MINUTES: dict[str, Minutes] = {
    "AWS::SageMaker::Cluster": Minutes(
        15, "SageMaker developer guide, 'Getting started with SageMaker HyperPod using the AWS "
            "CLI': InService 'typically 10 to 15 minutes' (upper end; the page is about Slurm, "
            "no figure for an EKS-orchestrated cluster was found and the same is assumed)",
        True),
    "AWS::FSx::FileSystem": Minutes(
        10, "aws-samples/awsome-distributed-training 1.architectures/5.sagemaker-hyperpod/"
            "README.md: the FSx for Lustre PERSISTENT_2 stack 'will take about 10 minutes'. "
            "No figure was found for an EFA-enabled file system or by size (hashicorp/"
            "terraform-provider-aws PR #40568 says only that an EFA-enabled one 'takes a "
            "significant amount of time to launch'): the same 10 minutes is used",
        True),
    "AWS::EKS::Cluster": Minutes(
        9, "AWS What's New 2021-03-19, 'Amazon EKS reduces cluster creation time by 40%': "
           "a control plane 'in 9 minutes or less, on average'", True),
    "AWS::EC2::NatGateway": Minutes(
        5, "aws-samples/awsome-distributed-training 1.architectures/5.sagemaker-hyperpod/"
           "README.md: the VPC stack with its NAT gateway 'takes about 5 minutes' (the whole "
           "stack; an upper bound for the gateway)", True),
    "AWS::FSx::DataRepositoryAssociation": Minutes(
        3, f"{_ESTIMATE} (includes the metadata import of an empty or small bucket)"),
    "AWS::EKS::Nodegroup": Minutes(
        4, f"{_ESTIMATE} (instances launch and join; botocore's NodegroupActive waiter "
           "allows 40 min)"),
    "AWS::EKS::Addon": Minutes(1, _ESTIMATE),
    "AWS::AutoScaling::AutoScalingGroup": Minutes(
        4, f"{_ESTIMATE} (the standalone nodes launch; their setup, which pulls the image, "
           "runs after CloudFormation is done with the group: its time is not in the stack's)"),
    IMAGE_BUILD: Minutes(
        20, f"{_ESTIMATE}: CodeBuild pulls the Neuron base image (several GB), installs the "
            "training program and pushes to ECR (docs/deploy.md, 'Training image')"),
    "Custom::AWSCDK-EKS-HelmChart": Minutes(
        2, f"{_ESTIMATE} (helm install --wait of a small chart)"),
    "Custom::AWSCDK-EKS-KubernetesResource": Minutes(0.5, _ESTIMATE),
    "Custom::CDKBucketDeployment": Minutes(1, f"{_ESTIMATE} (a Lambda function copies a few "
                                              "files)"),
    "AWS::Lambda::Function": Minutes(0.5, _ESTIMATE),
    "AWS::Lambda::LayerVersion": Minutes(0.5, _ESTIMATE),
    "AWS::CodeBuild::Project": Minutes(0.2, _ESTIMATE),
}
"""Create minutes by resource type (types not listed: :data:`DEFAULT`)."""
DEFAULT = Minutes(0.2, "API-call resources (IAM, S3, VPC parts, log groups, ...): seconds; "
                       "our estimate")
_AFTER_STORAGE = Minutes(
    2, f"{_ESTIMATE}: once the file system (and its S3 link) is ready the lifecycle script "
       "mounts it, writes homes and the job environment, and HyperPod reports the nodes")
RUNTIME_WAITS: dict[str, tuple[tuple[str, Minutes], ...]] = {
    "AWS::SageMaker::Cluster": (("AWS::FSx::FileSystem", _AFTER_STORAGE),
                                ("AWS::FSx::DataRepositoryAssociation", _AFTER_STORAGE)),
}
"""Resource type -> (type it waits for while it is being created, minutes it still needs
once that one is created), ...: waits outside the template's graph (the HyperPod Slurm
lifecycle script waits for the file system and its data repository association); only for
the resources :func:`runtime_waits` says wait."""


def runtime_waits(resource: dict[str, Any]) -> tuple[tuple[str, Minutes], ...]:
    """The :data:`RUNTIME_WAITS` of one template resource: a HyperPod cluster waits for the
    file system only when Slurm orchestrates it (its lifecycle script mounts /fsx); an
    EKS-orchestrated one does not."""
    if resource["Type"] == "AWS::SageMaker::Cluster":
        if "Slurm" not in resource.get("Properties", {}).get("Orchestrator", {}):
            return ()
    return RUNTIME_WAITS.get(resource["Type"], ())


def create_minutes(resource_type: str) -> Minutes:
    """The create time of ``resource_type`` (:data:`CREATE_MINUTES`, else :data:`DEFAULT`)."""
    return CREATE_MINUTES.get(resource_type, DEFAULT)


@dataclass(frozen=True)
class Step:
    """One resource on the critical path.

    Attributes:
        logical_id, resource_type: the resource.
        start, finish: minutes since the deploy started.
        minutes: its create time (:class:`Minutes`).
        waits_for_runtime: the resource whose creation it waited for outside the template's
            graph (:data:`RUNTIME_WAITS`), or ``None``.
    """

    logical_id: str
    resource_type: str
    start: float
    finish: float
    minutes: Minutes
    waits_for_runtime: str | None = None


@dataclass(frozen=True)
class CriticalPath:
    """The longest chain of a template's create.

    Attributes:
        total_minutes: when the last resource is created (the stack's CREATE_COMPLETE).
        steps: the chain, first resource first.
        finish: every resource's finish time (minutes), by logical id.
    """

    total_minutes: float
    steps: list[Step]
    finish: dict[str, float]


def critical_path(template: dict[str, Any]) -> CriticalPath:
    """The critical path of creating ``template`` (a synthesized CloudFormation template).

    Each resource starts when all it depends on (:func:`~trn_ultracluster.template_graph.dependencies`)
    are created and takes :func:`create_minutes`; a resource with a runtime wait
    (:data:`RUNTIME_WAITS`) also finishes no earlier than that wait allows.

    Raises:
        ValueError: the template has a dependency cycle (CloudFormation rejects those too).
    """
    resources = template["Resources"]
    graph = dependencies(template)
    by_type: dict[str, list[str]] = {}
    for name, resource in resources.items():
        by_type.setdefault(resource["Type"], []).append(name)
    visiting: set[str] = set()

    @cache
    def timing(name: str) -> tuple[float, float, str | None, str | None]:
        """(start, finish, the dependency that set the start, the runtime wait that set
        the finish or None)."""
        if name in visiting:
            raise ValueError(f"dependency cycle through {name}")
        visiting.add(name)
        start, before = 0.0, None
        for dep in graph[name]:
            if timing(dep)[1] > start:
                start, before = timing(dep)[1], dep
        kind = resources[name]["Type"]
        finish, waited = start + create_minutes(kind).minutes, None
        for other_type, after in runtime_waits(resources[name]):
            for other in by_type.get(other_type, []):
                if timing(other)[1] + after.minutes > finish:
                    finish, waited = timing(other)[1] + after.minutes, other
        visiting.discard(name)
        return start, finish, before, waited

    finish = {name: timing(name)[1] for name in resources}
    last = max(finish, key=lambda n: finish[n])
    steps: list[Step] = []
    name: str | None = last
    while name is not None:
        start, end, before, waited = timing(name)
        kind = resources[name]["Type"]
        steps.append(Step(name, kind, start, end, create_minutes(kind), waited))
        name = waited if waited is not None else before
    steps.reverse()
    return CriticalPath(finish[last], steps, finish)


def concurrent_image_builds(template: dict[str, Any]) -> int:
    """How many image builds of ``template`` start at once: those that depend, directly or
    not, on no other image build (the user's image, built on the stack's, waits for it)."""
    resources = template["Resources"]
    graph = dependencies(template)
    builds = {name for name, r in resources.items() if r["Type"] == IMAGE_BUILD}

    def upstream(name: str, seen: set[str]) -> set[str]:
        for dep in graph[name]:
            if dep not in seen:
                seen.add(dep)
                upstream(dep, seen)
        return seen

    return sum(1 for b in builds if not (upstream(b, set()) & builds))
