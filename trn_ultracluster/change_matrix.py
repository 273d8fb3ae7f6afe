"""What a change of the configuration does to a running cluster: the expected classes, one
source for the docs table (docs/changes.md, "What a change does to a running cluster") and
for the test that synthesizes each change and classifies every resource
(tests/test_change_matrix.py, with :func:`trn_ultracluster.changes.classify`).

Like the update policy ParallelCluster gives each configuration key, which ``pcluster
update-cluster`` checks: each :class:`ChangeRow` names a key, a change of it on one
orchestrator's base configuration (:data:`BASES`), and the class expected of each
:data:`ROLES` it lists. Every resource of a role must be at most that disruptive, and the
most disruptive of them exactly that (:data:`SEVERITY`); every resource of a role not listed
must not stop a deploy (:func:`~trn_ultracluster.changes.stops_deploy`: no node roll, no
replacement or removal of data or nodes).

The rows state the TARGET behaviour: only changes whose purpose it is (instance type, EFA
layout, root volume, Kubernetes version) roll nodes; tags, file-system capacity and
throughput, alarms and the image never do; the deployment type and ``fsx.efa`` replace the
file system, and ``trn-ultracluster plan`` says so before the deploy.

``python -m trn_ultracluster.change_matrix`` prints the docs table.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from trn_ultracluster.changes import ChangeKind

__all__ = ["BASES", "ROLES", "ROWS", "SEVERITY", "ChangeRow", "markdown_table", "role_of"]

BASES: dict[str, str] = {
    "eks": "dev",
    "hyperpod-slurm": "ultracluster-16",
    "hyperpod-eks": "hyperpod-eks",
    "standalone": "single-node",
}
"""Orchestrator -> the profile (``profiles/<name>.yaml``) each change starts from."""

SEVERITY: tuple[ChangeKind, ...] = (
    "unchanged", "added", "updated", "nodes rolled", "replaced", "removed")
"""Classes from least to most disruptive."""


def _trainium_group(cfn_type: str, resource: Mapping[str, Any]) -> bool:
    return (cfn_type == "AWS::EKS::Nodegroup"
            and "LaunchTemplate" in (resource.get("Properties") or {}))


def _system_group(cfn_type: str, resource: Mapping[str, Any]) -> bool:
    return cfn_type == "AWS::EKS::Nodegroup" and not _trainium_group(cfn_type, resource)


def _of_type(*types: str) -> Callable[[str, Mapping[str, Any]], bool]:
    return lambda cfn_type, _resource: cfn_type in types


ROLES: dict[str, Callable[[str, Mapping[str, Any]], bool]] = {
    "file system": _of_type("AWS::FSx::FileSystem"),
    "Trainium node groups": _trainium_group,
    "system node group": _system_group,
    "HyperPod cluster": _of_type("AWS::SageMaker::Cluster"),
    "Auto Scaling group": _of_type("AWS::AutoScaling::AutoScalingGroup"),
    "placement group": _of_type("AWS::EC2::PlacementGroup"),
    "EKS control plane": _of_type("AWS::EKS::Cluster"),
    "alarms": _of_type("AWS::CloudWatch::Alarm"),
    "image repository": _of_type("AWS::ECR::Repository"),
}
"""Role name -> whether a resource (type, template entry) has it."""


def role_of(cfn_type: str, resource: Mapping[str, Any]) -> str | None:
    """The :data:`ROLES` name of a resource, or None."""
    return next((name for name, test in ROLES.items() if test(cfn_type, resource)), None)


@dataclass(frozen=True)
class ChangeRow:
    """One change of one configuration key on one orchestrator, and what it must do.

    Attributes:
        key: the configuration key (dotted), e.g. ``fsx.deployment_type``.
        change: the change in words, e.g. ``PERSISTENT_2 -> SCRATCH_2``.
        orchestrator: a key of :data:`BASES`.
        after: context overrides of the configuration deployed next.
        expected: role -> the class of its most disruptive resource.
        before: context overrides of the deployed configuration (default: the base).
        profile: the profile to start from, when not the orchestrator's base.
        says: what the deploy does, for the docs table.
    """

    key: str
    change: str
    orchestrator: str
    after: Mapping[str, Any]
    expected: Mapping[str, ChangeKind]
    says: str
    before: Mapping[str, Any] = field(default_factory=dict)
    profile: str | None = None

    @property
    def id(self) -> str:
        """``<orchestrator>:<key>:<change>``, the row's test id."""
        return f"{self.orchestrator}:{self.key}:{self.change}"

    @property
    def base(self) -> str:
        """The profile name the row starts from."""
        return self.profile or BASES[self.orchestrator]


_GROW = {"nodes.desired": 4, "nodes.max": 4}
_TAGS = {"team": "ml"}
_NO_ROLL = "nothing rolls or is replaced"


def _resize(orchestrator: str, group_role: str, groups: str, *,
            grown_also: dict[str, ChangeKind] | None = None, how: str = "",
            ) -> tuple[ChangeRow, ChangeRow]:
    """The node-count rows of ``orchestrator``: 1 -> 4 and back (the same two templates,
    reversed); ``group_role`` is updated in place, the file system unchanged."""
    expected = {group_role: "updated", "file system": "unchanged"}
    return (ChangeRow("nodes", "1 -> 4", orchestrator, _GROW, {**expected, **(grown_also or {})},
                      f"resizes {groups}{how}; running nodes stay"),
            ChangeRow("nodes", "4 -> 1", orchestrator, {}, expected,
                      f"resizes {groups}; the nodes beyond the new size are terminated",
                      before=_GROW))


def _tags(profile_env: str) -> dict[str, Any]:
    return {"tags": {"project": "trn-ultracluster", "env": profile_env, **_TAGS}}


ROWS: tuple[ChangeRow, ...] = (
    # --- node counts: up, and back down (the same two templates, reversed) ---------------
    *_resize("eks", "Trainium node groups", "the Trainium node groups",
             grown_also={"placement group": "unchanged"}, how=" (ScalingConfig)"),
    ChangeRow("nodes", "128 -> 600, fsx.efa auto", "hyperpod-slurm",
              {"fsx.efa": "auto", "nodes.desired": 600, "nodes.max": 600},
              {"HyperPod cluster": "updated", "file system": "unchanged"},
              "changes the worker groups' InstanceCount (UpdateCluster), running nodes stay; "
              "the file system (14,400 GiB at 1000 MB/s/TiB, EFA by auto) "
              "stays: a node count never flips fsx.efa", before={"fsx.efa": "auto"},
              profile="ultracluster-128"),
    ChangeRow("nodes", "2 -> 4", "hyperpod-eks", _GROW,
              {"HyperPod cluster": "updated", "file system": "unchanged"},
              "changes the instance groups' InstanceCount (UpdateCluster); running nodes stay"),
    *_resize("standalone", "Auto Scaling group", "the Auto Scaling group"),
    # --- what the nodes are ----------------------------------------------------------------
    ChangeRow("instance_type", "trn1.32xlarge -> trn1n.32xlarge", "eks",
              {"instance_type": "trn1n.32xlarge"},
              {"Trainium node groups": "nodes rolled", "system node group": "unchanged",
               "file system": "unchanged", "placement group": "unchanged"},
              "rolls every Trainium node (a new launch template version)"),
    ChangeRow("instance_type", "trn1.32xlarge -> trn1n.32xlarge", "standalone",
              {"instance_type": "trn1n.32xlarge"},
              {"Auto Scaling group": "updated", "file system": "unchanged"},
              "a new launch template version: running nodes keep the old type, nodes started "
              "later get the new one (no UpdatePolicy)"),
    ChangeRow("efa_interface_layout", "efa -> efa-only", "eks",
              {"efa_interface_layout": "efa-only"},
              {"Trainium node groups": "nodes rolled", "file system": "unchanged"},
              "rolls every Trainium node (a new launch template version)"),
    ChangeRow("root_volume_gib", "512 -> 1024", "eks", {"root_volume_gib": 1024},
              {"Trainium node groups": "nodes rolled", "system node group": "unchanged",
               "file system": "unchanged"},
              "rolls every Trainium node (a new launch template version)"),
    ChangeRow("root_volume_gib", "512 -> 1024", "standalone", {"root_volume_gib": 1024},
              {"Auto Scaling group": "updated", "file system": "unchanged"},
              "a new launch template version: running nodes keep their volume, nodes started "
              "later get the new size"),
    # --- tags ------------------------------------------------------------------------------
    ChangeRow("tags", "add team: ml", "eks", _tags("dev"),
              {"Trainium node groups": "updated", "placement group": "unchanged",
               "file system": "updated"},
              "re-tags resources in place; " + _NO_ROLL),
    ChangeRow("tags", "add team: ml", "hyperpod-slurm", _tags("prod"),
              {"HyperPod cluster": "updated", "placement group": "unchanged",
               "file system": "updated"},
              "re-tags resources in place; " + _NO_ROLL),
    ChangeRow("tags", "add team: ml", "standalone", _tags("single-node"),
              {"Auto Scaling group": "updated", "placement group": "unchanged",
               "file system": "updated"},
              "re-tags resources in place; " + _NO_ROLL),
    # --- the file system -------------------------------------------------------------------
    ChangeRow("fsx.storage_capacity_gib", "1200 -> 2400", "eks",
              {"fsx.storage_capacity_gib": 2400},
              {"file system": "updated", "Trainium node groups": "unchanged"},
              "grows the file system in place (it cannot shrink); the claim stays valid"),
    ChangeRow("fsx.storage_capacity_gib", "1200 -> 2400", "hyperpod-eks",
              {"fsx.storage_capacity_gib": 2400},
              {"file system": "updated", "HyperPod cluster": "unchanged"},
              "grows the file system in place (it cannot shrink); the claim stays valid"),
    ChangeRow("fsx.per_unit_storage_throughput", "125 -> 250", "eks",
              {"fsx.per_unit_storage_throughput": 250},
              {"file system": "updated", "Trainium node groups": "unchanged"},
              "changes the throughput tier in place"),
    ChangeRow("fsx.deployment_type", "SCRATCH_2 -> PERSISTENT_2", "standalone",
              {"fsx.deployment_type": "PERSISTENT_2", "fsx.per_unit_storage_throughput": 125},
              {"file system": "replaced", "Auto Scaling group": "unchanged"},
              "REPLACES the file system: data not exported to S3 is lost",
              profile="trn1-2xl"),
    ChangeRow("fsx.efa", "true -> false", "hyperpod-slurm", {"fsx.efa": False},
              {"file system": "replaced", "HyperPod cluster": "unchanged"},
              "REPLACES the file system (EFA is set at creation): data not exported to S3 "
              "is lost", profile="ultracluster-128"),
    # --- Kubernetes ------------------------------------------------------------------------
    ChangeRow("eks.kubernetes_version", "1.35 -> 1.36", "eks", {},
              {"EKS control plane": "updated", "system node group": "nodes rolled",
               "Trainium node groups": "nodes rolled", "file system": "unchanged"},
              "upgrades the control plane, then rolls every node of every node group to the "
              "new version; if a roll fails, the stack's rollback must take the control plane "
              "back a version, which EKS allows one minor version back within 7 days (EKS user "
              "guide, rollback-cluster.html, since 2026-07) and which has ended in "
              "UPDATE_ROLLBACK_FAILED before (aws/containers-roadmap#497); not verified that "
              "CloudFormation uses the rollback: change nothing else in that deploy",
              before={"eks.kubernetes_version": "1.35"}),
    ChangeRow("eks.control_plane_tier", "standard -> tier-xl", "eks",
              {"eks.control_plane_tier": "tier-xl"},
              {"EKS control plane": "updated", "Trainium node groups": "unchanged",
               "system node group": "unchanged"},
              "changes the control plane's scaling tier in place; " + _NO_ROLL),
    # --- alarms and the image --------------------------------------------------------------
    ChangeRow("observability.idle_hours", "4 -> 8", "eks", {"observability.idle_hours": 8},
              {"alarms": "updated", "Trainium node groups": "unchanged",
               "file system": "unchanged"},
              "updates the idle alarm; " + _NO_ROLL),
    ChangeRow("training_image.build", "codebuild -> local", "eks",
              {"training_image.build": "local"},
              {"Trainium node groups": "unchanged", "file system": "unchanged",
               "image repository": "removed"},
              "the CDK CLI builds the image into its own asset repository: the stack's image "
              "repository is deleted with its images (rebuilt from the source, as on cdk "
              "destroy); no node rolls"),
    ChangeRow("training_image.user_dockerfile", "none -> examples/custom-image/Dockerfile",
              "eks", {"training_image.user_dockerfile": "examples/custom-image/Dockerfile"},
              {"Trainium node groups": "unchanged", "file system": "unchanged",
               "image repository": "updated"},
              "builds the user's image on the stack's image, after it, into the same "
              "repository (a lifecycle rule keeps the stack image it builds on); the "
              "TrainingImageUri output and the training runtime name it, so jobs submitted "
              "after the deploy run it and running jobs keep theirs; " + _NO_ROLL),
)
"""Every change the matrix test synthesizes, with its expected classes."""


def markdown_table() -> str:
    """The docs table: one line per row of :data:`ROWS`."""
    lines = ["| key | change | orchestrator (profile) | expected | what the deploy does |",
             "|---|---|---|---|---|"]
    for row in ROWS:
        expected = "; ".join(f"{role}: **{kind}**" if kind in ("nodes rolled", "replaced")
                             else f"{role}: {kind}" for role, kind in row.expected.items())
        lines.append(f"| `{row.key}` | {row.change} | {row.orchestrator} ({row.base}) | "
                     f"{expected} | {row.says} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(markdown_table(), end="")
