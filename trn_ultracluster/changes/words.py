"""What a change does, in a user's words (:func:`describe`, :func:`summary`), whether
``trn-ultracluster plan`` stops for it (:func:`stops_deploy`), whether CloudFormation refuses
it (:func:`refused_combination`) and the control plane's version steps; the sources are in
:mod:`trn_ultracluster.changes.classify`'s docstring."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from trn_ultracluster.changes.classify import (
    DATA_TYPES,
    NODE_TYPES,
    ResourceChange,
)

def refused_combination(change: ResourceChange) -> bool:
    """Whether CloudFormation refuses ``change`` whatever the user allows: an
    ``AWS::EKS::Nodegroup`` update that changes a version-type property
    (:data:`NODEGROUP_VERSION_PROPERTIES`, EKS ``UpdateNodegroupVersion``) and any other
    property (``ScalingConfig``, ``UpdateConfig``, ``Labels``, ``Taints``: EKS
    ``UpdateNodegroupConfig``; ``Tags``: ``TagResource``) in one update. The resource fails
    with "Version and ReleaseVersion updates cannot be combined with other updates" and the
    stack rolls back (module doc for the sources). A version-type change alone, or the other
    changes alone, are accepted."""
    return (change.type == "AWS::EKS::Nodegroup" and change.kind == "nodes rolled"
            and bool(change.version_changes) and bool(change.other_changes))


DOC_EKS_UPGRADE = "https://docs.aws.amazon.com/eks/latest/userguide/update-cluster.html"
"""EKS user guide, "Update existing cluster to new Kubernetes version": "Once you upgrade a
cluster, you can't downgrade to a previous version" (since 2026-07 EKS rolls a control plane
back one minor version within 7 days of its upgrade: EKS user guide, rollback-cluster.html,
read through hashicorp/terraform-provider-aws#48751; whether CloudFormation's
``AWS::EKS::Cluster`` handler uses it is not verified). One minor version at a time: eksctl's
"Cluster upgrades" page on docs.aws.amazon.com, "The only values allowed for the --version
... are the current version of the cluster or one version higher. Upgrades of more than one
Kubernetes version are not supported"."""


def _minor(version: Any) -> tuple[int, int] | None:
    try:
        major, minor = str(version).split(".")[:2]
        return int(major), int(minor)
    except ValueError:
        return None


def control_plane_version_refusals(before: Mapping[str, Any],
                                   after: Mapping[str, Any]) -> list[str]:
    """What EKS refuses of a change of an ``AWS::EKS::Cluster``'s ``Version``
    (:data:`DOC_EKS_UPGRADE`), one sentence per cluster: a step of more than one minor version
    up, or any step down. Empty when every version stays, moves one minor version up, or is
    not a literal (a token).

    Args:
        before, after: the deployed and the new template (``{"Resources": {...}}``).
    """
    out = []
    old_resources, new_resources = before.get("Resources", {}), after.get("Resources", {})
    for logical_id, resource in new_resources.items():
        if resource.get("Type") != "AWS::EKS::Cluster" or logical_id not in old_resources:
            continue
        old = old_resources[logical_id].get("Properties", {}).get("Version")
        new = resource.get("Properties", {}).get("Version")
        o, n = _minor(old), _minor(new)
        if o is None or n is None or o == n or (o[0] == n[0] and n[1] == o[1] + 1):
            continue
        what = ("goes down" if n < o else "skips a minor version")
        out.append(f"EKS cluster {logical_id}: Kubernetes {old} -> {new} {what}; EKS updates a "
                   "control plane one minor version up at a time and does not downgrade one "
                   "(a rollback of one minor version within 7 days of its upgrade is EKS's own "
                   f"operation, not a template change): go one version at a time ({DOC_EKS_UPGRADE})")
    return sorted(out)


def split_advice(change: ResourceChange) -> str:
    """How to deploy a :func:`refused_combination` change in two CloudFormation updates, in
    words: first the other properties, then the version-type ones (the order the
    configuration can usually express; either order passes CloudFormation's rule). An
    ``UpdateConfig`` that appears on reserved capacity has its own path:
    ``eks.node_update_config: none`` first (docs/deploy.md "Upgrading a deployed stack")."""
    versions = ", ".join(change.version_changes)
    others = ", ".join(change.other_changes)
    if change.other_changes == ("UpdateConfig",):
        return ("deploy 1: -c eks.node_update_config=none (no UpdateConfig: the deploy changes "
                f"only {versions}; on reserved capacity scale the Trainium node groups to 0 "
                "first with `trn-ultracluster scale --nodes 0`, since EKS's default roll "
                "launches a new node before it terminates an old one); deploy 2: the "
                "configuration as it is (adds UpdateConfig alone); then scale back up "
                "(docs/deploy.md#upgrading-a-deployed-stack)")
    return (f"deploy 1: only the configuration change that changes {others} (keep what "
            f"changes {versions} as deployed); deploy 2: the rest, which changes {versions} "
            "alone (docs/deploy.md#upgrading-a-deployed-stack)")


def stops_deploy(change: ResourceChange) -> bool:
    """Whether ``trn-ultracluster plan`` stops for ``change``: nodes rolled, or a
    :data:`DATA_TYPES` / :data:`NODE_TYPES` resource replaced or removed."""
    if change.kind == "nodes rolled":
        return True
    if change.kind == "removed" and change.kept:
        return False
    return change.kind in ("replaced", "removed") and change.type in DATA_TYPES | NODE_TYPES


_NAMES = {
    "AWS::FSx::FileSystem": "the file system",
    "AWS::EKS::Nodegroup": "node group",
    "AWS::AutoScaling::AutoScalingGroup": "the Auto Scaling group",
    "AWS::SageMaker::Cluster": "the HyperPod cluster",
    "AWS::EKS::Cluster": "the EKS cluster",
    "AWS::EC2::PlacementGroup": "the cluster placement group",
    "AWS::EC2::LaunchTemplate": "launch template",
    "AWS::S3::Bucket": "bucket",
    "AWS::ECR::Repository": "the image repository",
    "AWS::Logs::LogGroup": "log group",
    "AWS::KMS::Key": "KMS key",
    "AWS::EC2::VPCCidrBlock": "CIDR block",
}

_LOSS = {
    "AWS::FSx::FileSystem": "data not exported to S3 is lost",
    "AWS::EKS::Nodegroup": "its nodes are terminated and running jobs on them stop",
    "AWS::AutoScaling::AutoScalingGroup": "its nodes are terminated and running jobs stop",
    "AWS::SageMaker::Cluster": "every node is terminated and running jobs stop",
    "AWS::EKS::Cluster": "every node, workload and Kubernetes object in it is lost",
    "AWS::EC2::PlacementGroup": "nodes must be launched again to be placed in the new group",
    "AWS::S3::Bucket": "its objects stay in the old bucket, which the stack no longer manages",
    "AWS::ECR::Repository": "its images are lost",
    "AWS::KMS::Key": "what the old key encrypted can no longer be read once it is deleted",
}


def _name(change: ResourceChange) -> str:
    what = _NAMES.get(change.type, change.type)
    return f"{what} {change.logical_id}"


def describe(change: ResourceChange) -> str:
    """``change`` in a user's words, e.g. "replaces the file system StorageFileSystem...:
    data not exported to S3 is lost (create-only property ... changed)"."""
    why = f" ({'; '.join(change.reasons)})" if change.reasons else ""
    loss = _LOSS.get(change.type)
    if change.kind == "nodes rolled":
        if refused_combination(change):
            return (f"cannot update node group {change.logical_id}: CloudFormation refuses an "
                    f"update that changes {', '.join(change.version_changes)} (a node roll, "
                    f"EKS UpdateNodegroupVersion) together with {', '.join(change.other_changes)}"
                    ": \"Version and ReleaseVersion updates cannot be combined with other "
                    "updates\", and the stack rolls back (CloudFormation user guide, "
                    "AWS::EKS::Nodegroup; aws/containers-roadmap#1258). Split it: "
                    f"{split_advice(change)}{why}")
        if change.type == "AWS::EKS::Nodegroup":
            return (f"rolls every node of node group {change.logical_id}: EKS replaces each node "
                    "with a new one, evicting the pods on it (by EKS's default strategy it "
                    "launches the new node first; under UpdateConfig MINIMAL, the Trainium "
                    f"groups on reserved capacity, it terminates the old one first){why}")
        return f"replaces every node of {_name(change)}{why}"
    if change.kind == "replaced":
        new = f" with {change.new_logical_id}" if change.new_logical_id else ""
        old = (" (the old one stays in the account, no longer managed by the stack)"
               if change.kept else "")
        return f"replaces {_name(change)}{new}{': ' + loss if loss else ''}{old}{why}"
    if change.kind == "removed":
        if change.kept:
            return (f"stops managing {_name(change)}: it stays in the account "
                    "(DeletionPolicy Retain)")
        return f"deletes {_name(change)}{': ' + loss if loss else ''}"
    if change.kind == "added":
        return f"creates {_name(change)}"
    if change.kind == "updated":
        if change.type == "Custom::AWSCDK-EKS-KubernetesResource":
            return (f"re-applies the Kubernetes manifest {change.logical_id} (its handler's "
                    "Update; one Kubernetes refuses, such as a new size of a statically bound "
                    f"claim, fails the deploy){why}")
        if change.type.startswith("Custom::"):
            return f"runs the Update of custom resource {change.logical_id} ({change.type}){why}"
        if change.type == "AWS::AutoScaling::AutoScalingGroup" and any(
                "launch template" in r or r.startswith("LaunchTemplate") for r in change.reasons):
            return (f"updates {_name(change)}: running nodes keep their launch template version, "
                    f"nodes started later use the new one{why}")
        return f"updates {_name(change)} in place{why}"
    return f"leaves {_name(change)} unchanged"


def summary(changes: list[ResourceChange]) -> list[str]:
    """One line per change other than ``unchanged``: ``<kind>  <type>  <logical id>``."""
    return [f"{c.kind:<12}  {c.type:<40}  {c.logical_id}"
            + (f" -> {c.new_logical_id}" if c.new_logical_id else "")
            for c in changes if c.kind != "unchanged"]


# --- FSx claims whose storage request shrinks ------------------------------------------------
