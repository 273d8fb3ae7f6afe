"""What a deploy of one template over another does to each resource of a running stack.

:func:`classify` compares two CloudFormation templates — ``before`` (deployed) and
``after`` (synthesized) — and puts every resource in one class (:data:`ChangeKind`):

- ``unchanged``: same type and properties, and nothing it references is replaced;
- ``updated``: updated in place (a property that is not create-only changed, or a value it
  references does);
- ``replaced``: the logical id is gone and a resource of the same type and role appears (CDK
  ids are the construct path plus an 8-character hash: same path without the hash, or a
  path that differs by the :data:`ROLE_SUFFIXES` the stack uses to force a replacement), or
  a create-only property changed. Create-only properties are the schemas'
  ``createOnlyProperties`` (:data:`trn_ultracluster.create_only.CREATE_ONLY`, generated from
  cfn-lint's bundled schemas) plus :data:`DOCUMENTED_CREATE_ONLY`, properties the
  CloudFormation reference marks "Update requires: Replacement" that the schemas omit;
- ``nodes rolled``: the resource stays but every node it runs is replaced: an
  ``AWS::EKS::Nodegroup`` whose ``Version``, ``ReleaseVersion`` or ``LaunchTemplate`` changes,
  or whose launch template gets a new version that reaches it through ``Fn::GetAtt
  LatestVersionNumber`` (EKS user guide, "Understand each phase of node updates",
  https://docs.aws.amazon.com/eks/latest/userguide/managed-node-update-behavior.html: the
  setup phase makes a new launch template version, then the scale-up, upgrade and
  scale-down phases replace each node; EKS API reference ``UpdateNodegroupVersion``:
  "Updates the Kubernetes version or AMI version", a new launch template version included);
  an ``AWS::AutoScaling::AutoScalingGroup`` whose ``LaunchTemplate`` or ``VPCZoneIdentifier``
  changes under an ``AutoScalingRollingUpdate`` or ``AutoScalingReplacingUpdate`` policy
  (CloudFormation template reference, "UpdatePolicy attribute",
  https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/aws-attribute-updatepolicy.html);
  without such a policy the group is ``updated``: running nodes keep their launch template
  version, nodes started later use the new one;
- ``added``, ``removed``.

Values are compared as JSON, intrinsic functions included. A ``Ref`` or ``Fn::GetAtt`` to a
replaced resource changes the value that holds it (a new physical id), and so does ``Fn::GetAtt
[template, LatestVersionNumber]`` of a launch template whose ``LaunchTemplateData`` changed, or
references something replaced: "Launch templates are immutable; after you create a launch
template, you can't modify it. Instead, you can create a new version" (EC2 user guide, "Modify
a launch template (manage launch template versions)",
https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/manage-launch-template-versions.html), so
CloudFormation's in-place update of ``LaunchTemplateData`` is a new version (inferred from that
page and the ``LatestVersionNumber`` return value, not run against AWS). Only ``Type`` and
``Properties`` decide the class: ``Metadata``, ``DependsOn``, ``Condition`` and deletion
policies do not update a resource.

:func:`describe` says what a change does in a user's words; :func:`stops_deploy` says whether
``trn-ultracluster plan`` stops for it (data-bearing or node-carrying resources replaced or
removed, nodes rolled); :func:`refused_combination` says whether CloudFormation refuses it
outright: an ``AWS::EKS::Nodegroup`` update that combines a version-type property
(:data:`NODEGROUP_VERSION_PROPERTIES`) with any other, which fails with "Version and
ReleaseVersion updates cannot be combined with other updates" and rolls the stack back
(CloudFormation user guide, ``AWS::EKS::Nodegroup``, the callout of
awsdocs/aws-cloudformation-user-guide#1181: "updates to tags cannot be associated with an
update ReleaseVersion, Version or LaunchTemplate"; aws/containers-roadmap#1258, "Update
nodegroup and template at the same time", open, workaround "Creating two cfn updates";
eksctl-io/eksctl#2565; aws/aws-cdk#13602 and #16644). :func:`shrinking_claims` finds an FSx
claim whose storage request a deploy would lower, which Kubernetes refuses.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from trn_ultracluster.create_only import CREATE_ONLY

__all__ = [
    "DATA_TYPES", "DOCUMENTED_CREATE_ONLY", "NODEGROUP_VERSION_PROPERTIES", "NODE_TYPES",
    "ChangeKind", "ResourceChange", "classify", "role",
]

ChangeKind = Literal["unchanged", "updated", "replaced", "nodes rolled", "added", "removed"]

DOCUMENTED_CREATE_ONLY: dict[str, tuple[str, ...]] = {
    "AWS::FSx::FileSystem": (
        "/properties/LustreConfiguration/DeploymentType",
        "/properties/LustreConfiguration/EfaEnabled",
    ),
}
"""Create-only properties the schemas cfn-lint ships omit (its ``AWS::FSx::FileSystem``
schema lists no ``LustreConfiguration`` property).

- ``DeploymentType``: CloudFormation reference, ``AWS::FSx::FileSystem LustreConfiguration``,
  "Update requires: Replacement"
  (https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/aws-properties-fsx-filesystem-lustreconfiguration.html).
- ``EfaEnabled``: "you cannot enable or disable EFA on an existing file system" (FSx for
  Lustre user guide, "Working with EFA-enabled file systems"); the stack renames the file
  system when it flips (``constructs/storage.py``), this covers a template that does not.

tests/test_changes.py checks each is absent from botocore's FSx ``UpdateFileSystem`` request
(nothing can change it in place)."""

DATA_TYPES = frozenset({
    "AWS::FSx::FileSystem", "AWS::S3::Bucket", "AWS::ECR::Repository", "AWS::KMS::Key",
})
"""Types whose replacement or removal loses data (files, objects, images, what a key
encrypted). Log groups are not among them: the stack's are its functions' and builds'."""
_KEEPS = ("Retain", "RetainExceptOnCreate", "Snapshot")
"""``DeletionPolicy`` / ``UpdateReplacePolicy`` values that keep the old resource in the
account (CloudFormation template reference, "DeletionPolicy attribute")."""
NODE_TYPES = frozenset({
    "AWS::EKS::Nodegroup", "AWS::AutoScaling::AutoScalingGroup", "AWS::SageMaker::Cluster",
    "AWS::EKS::Cluster", "AWS::EC2::PlacementGroup",
})
"""Types whose replacement or removal takes running nodes (or, for the EKS cluster, every
workload) with it; a cluster placement group's replacement goes with new nodes."""

ROLE_SUFFIXES = ("Efa",)
"""Construct-id suffixes that mark a forced replacement: ``FileSystemEfa`` replaces
``FileSystem`` (``constructs/storage.py`` ``EFA_ID_SUFFIX``)."""
_HASH = re.compile(r"[0-9A-F]{8}$")
NODEGROUP_VERSION_PROPERTIES = ("Version", "ReleaseVersion", "LaunchTemplate")
"""``AWS::EKS::Nodegroup`` properties whose update replaces every node (module doc): the
members of EKS ``UpdateNodegroupVersion`` (tests/test_changes.py checks botocore's model).
CloudFormation refuses to combine a change of one of them with a change of any other
property of the same node group (:func:`refused_combination`)."""
_NODEGROUP_ROLLERS = NODEGROUP_VERSION_PROPERTIES
_ASG_ROLLERS = ("LaunchTemplate", "VPCZoneIdentifier", "PlacementGroup")
_ROLLING_POLICIES = ("AutoScalingRollingUpdate", "AutoScalingReplacingUpdate")


@dataclass(frozen=True)
class ResourceChange:
    """The class of one resource.

    Attributes:
        logical_id: the id in ``before`` (``after`` for an added resource).
        type: the CloudFormation type (of ``after`` when it changed).
        kind: :data:`ChangeKind`.
        new_logical_id: for a replacement by another logical id, the new id.
        reasons: why, one phrase each (a create-only property, a launch template version,
            the properties that changed).
        kept: for ``removed`` / ``replaced``: the old resource stays in the account, no
            longer managed by the stack (``DeletionPolicy`` / ``UpdateReplacePolicy``
            ``Retain`` or ``Snapshot``).
        version_changes: for an ``AWS::EKS::Nodegroup`` whose nodes roll, the
            :data:`NODEGROUP_VERSION_PROPERTIES` that change, in that order.
        other_changes: for the same, the other top-level properties that change in the same
            update, sorted (non-empty: CloudFormation refuses the update,
            :func:`refused_combination`).
    """

    logical_id: str
    type: str
    kind: ChangeKind
    new_logical_id: str | None = None
    reasons: tuple[str, ...] = field(default=())
    kept: bool = False
    version_changes: tuple[str, ...] = field(default=())
    other_changes: tuple[str, ...] = field(default=())


def role(logical_id: str) -> str:
    """The construct path of a CDK logical id: without its 8-character hash and any
    :data:`ROLE_SUFFIXES` (``StorageFileSystemEfa717B2224`` -> ``StorageFileSystem``)."""
    base = _HASH.sub("", logical_id) if len(logical_id) > 8 else logical_id
    for suffix in ROLE_SUFFIXES:
        if base.endswith(suffix):
            base = base[: -len(suffix)]
    return base


def _canon(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def _at(value: Any, parts: list[str]) -> list[Any]:
    """The values at a JSON pointer's ``parts`` (``*``: each item of a list); ``None`` where
    a part is missing."""
    if not parts:
        return [value]
    head, rest = parts[0], parts[1:]
    if head == "*":
        return [v for item in value for v in _at(item, rest)] if isinstance(value, list) else [None]
    if isinstance(value, Mapping) and head in value:
        return _at(value[head], rest)
    return [None]


def _references(value: Any) -> Iterator[tuple[str, str | None]]:
    """``(logical id, attribute or None)`` of every ``Ref`` and ``Fn::GetAtt`` in ``value``."""
    if isinstance(value, Mapping):
        if set(value) == {"Ref"} and isinstance(value["Ref"], str):
            yield value["Ref"], None
            return
        if set(value) == {"Fn::GetAtt"}:
            target = value["Fn::GetAtt"]
            if isinstance(target, str):
                target = target.split(".", 1)
            if isinstance(target, list) and target and isinstance(target[0], str):
                yield target[0], str(target[1]) if len(target) > 1 else None
                return
        for v in value.values():
            yield from _references(v)
    elif isinstance(value, list):
        for v in value:
            yield from _references(v)


def _create_only(cfn_type: str) -> tuple[str, ...]:
    return CREATE_ONLY.get(cfn_type, ()) + DOCUMENTED_CREATE_ONLY.get(cfn_type, ())


def _pair_replacements(removed: list[str], added: list[str], before: Mapping[str, Any],
                       after: Mapping[str, Any]) -> dict[str, str]:
    """Removed id -> added id of the same type and :func:`role`."""
    pairs: dict[str, str] = {}
    free = list(added)
    for old in removed:
        for new in free:
            if (before[old]["Type"] == after[new]["Type"] and role(old) == role(new)):
                pairs[old] = new
                free.remove(new)
                break
    return pairs


class _State:
    """The classes found so far, as the references between resources need them."""

    def __init__(self, before: Mapping[str, Any], after: Mapping[str, Any]) -> None:
        self.before, self.after = before, after
        self.replaced: set[str] = set()  # ids in ``after`` whose physical resource is new
        self.new_versions: set[str] = set()  # launch templates in ``after`` with a new version

    def volatile(self, value: Any) -> str | None:
        """Why ``value`` (in ``after``) resolves to something else than before, or None."""
        for target, attribute in _references(value):
            if target in self.replaced:
                return f"{target} is replaced"
            if target in self.new_versions and attribute == "LatestVersionNumber":
                return f"launch template {target} gets a new version"
        return None


def _property_changes(old: Mapping[str, Any], new: Mapping[str, Any], state: _State,
                      ) -> dict[str, str]:
    """Top-level property name -> why it changed."""
    changes = {}
    for name in sorted(set(old) | set(new)):
        if _canon(old.get(name)) != _canon(new.get(name)):
            changes[name] = f"{name} changed"
        elif (why := state.volatile(new.get(name))) is not None:
            changes[name] = f"{name}: {why}"
    return changes


def _create_only_changes(cfn_type: str, old: Mapping[str, Any], new: Mapping[str, Any],
                         state: _State) -> list[str]:
    out = []
    for pointer in _create_only(cfn_type):
        parts = pointer.split("/")[2:]  # "/properties/A/B" -> ["A", "B"]
        was, now = _at(old, parts), _at(new, parts)
        if _canon(was) != _canon(now):
            out.append(f"create-only property {'.'.join(parts)} changed")
        elif (why := state.volatile(now)) is not None:
            out.append(f"create-only property {'.'.join(parts)}: {why}")
    return out


def _rolls(cfn_type: str, changed: Mapping[str, str], resource: Mapping[str, Any]) -> list[str]:
    """Why an update of ``resource`` replaces its nodes (module doc), or nothing."""
    if cfn_type == "AWS::EKS::Nodegroup":
        return [changed[p] for p in _NODEGROUP_ROLLERS if p in changed]
    if cfn_type == "AWS::AutoScaling::AutoScalingGroup":
        policy = resource.get("UpdatePolicy") or {}
        rolling = "AutoScalingRollingUpdate" in policy or (
            policy.get("AutoScalingReplacingUpdate", {}).get("WillReplace") in (True, "true"))
        if rolling:
            return [changed[p] for p in _ASG_ROLLERS if p in changed]
    return []


def _classify_kept(logical_id: str, state: _State) -> ResourceChange:
    old, new = state.before[logical_id], state.after[logical_id]
    if old["Type"] != new["Type"]:
        return ResourceChange(logical_id, new["Type"], "replaced",
                              reasons=(f"type {old['Type']} -> {new['Type']}",),
                              kept=old.get("UpdateReplacePolicy") in _KEEPS)
    cfn_type = new["Type"]
    kept = old.get("UpdateReplacePolicy") in _KEEPS
    old_p, new_p = old.get("Properties", {}) or {}, new.get("Properties", {}) or {}
    changed = _property_changes(old_p, new_p, state)
    if not changed:
        return ResourceChange(logical_id, cfn_type, "unchanged")
    if create_only := _create_only_changes(cfn_type, old_p, new_p, state):
        return ResourceChange(logical_id, cfn_type, "replaced", reasons=tuple(create_only),
                              kept=kept)
    if rolls := _rolls(cfn_type, changed, new):
        if cfn_type == "AWS::EKS::Nodegroup":
            return ResourceChange(
                logical_id, cfn_type, "nodes rolled", reasons=tuple(rolls),
                version_changes=tuple(p for p in _NODEGROUP_ROLLERS if p in changed),
                other_changes=tuple(sorted(p for p in changed if p not in _NODEGROUP_ROLLERS)))
        return ResourceChange(logical_id, cfn_type, "nodes rolled", reasons=tuple(rolls))
    return ResourceChange(logical_id, cfn_type, "updated", reasons=tuple(changed.values()))


CDK_METADATA = "AWS::CDK::Metadata"
"""The CDK CLI's version-reporting resource: ``cdk deploy`` adds it, an in-process synth (the
``plan`` command's, the tests') does not; it holds no cluster state, so :func:`classify`
leaves it out of both templates."""


def _without_metadata(resources: Mapping[str, Any]) -> dict[str, Any]:
    return {k: r for k, r in resources.items() if r.get("Type") != CDK_METADATA}


def classify(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[ResourceChange]:
    """Classify every resource of two templates (module doc), in logical-id order.

    Args:
        before: the deployed template (``{"Resources": {...}, ...}``).
        after: the template to deploy.

    Returns:
        One :class:`ResourceChange` per logical id of either template but
        :data:`CDK_METADATA`; a replacement by another logical id is one change
        (``logical_id`` old, ``new_logical_id`` new).
    """
    b, a = (_without_metadata(t.get("Resources", {})) for t in (before, after))
    removed = sorted(set(b) - set(a))
    added = sorted(set(a) - set(b))
    pairs = _pair_replacements(removed, added, b, a)
    state = _State(b, a)
    state.replaced.update(set(added))
    common = sorted(set(a) & set(b))
    results: dict[str, ResourceChange] = {}
    while True:  # replacements and new versions reach what references them: to a fixed point
        results = {i: _classify_kept(i, state) for i in common}
        replaced = {i for i, c in results.items() if c.kind == "replaced"}
        versions = {i for i, c in results.items()  # its data, or what the data references
                    if c.type == "AWS::EC2::LaunchTemplate" and c.kind == "updated"
                    and any(r.startswith("LaunchTemplateData") for r in c.reasons)}
        if replaced <= state.replaced and versions <= state.new_versions:
            break
        state.replaced |= replaced
        state.new_versions |= versions
    out = list(results.values())
    for old, new in pairs.items():
        out.append(ResourceChange(old, a[new]["Type"], "replaced", new_logical_id=new,
                                  reasons=(f"logical id {old} -> {new}",),
                                  kept=b[old].get("DeletionPolicy") in _KEEPS))
    out += [ResourceChange(i, b[i]["Type"], "removed",
                           kept=b[i].get("DeletionPolicy") in _KEEPS)
            for i in removed if i not in pairs]
    paired = set(pairs.values())
    out += [ResourceChange(i, a[i]["Type"], "added") for i in added if i not in paired]
    return sorted(out, key=lambda c: c.logical_id)
