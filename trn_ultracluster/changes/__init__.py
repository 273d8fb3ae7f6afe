"""What a deploy would change: :mod:`.classify` compares two templates resource by resource
(its docstring holds the sources), :mod:`.words` says what each change does and whether
``trn-ultracluster plan`` stops for it, :mod:`.claims` finds FSx claims a deploy would shrink.
Every name is importable from this package."""

from trn_ultracluster.changes.claims import ClaimShrink, quantity_bytes, shrinking_claims
from trn_ultracluster.changes.classify import (
    _NODEGROUP_ROLLERS,
    DATA_TYPES,
    DOCUMENTED_CREATE_ONLY,
    NODE_TYPES,
    NODEGROUP_VERSION_PROPERTIES,
    ChangeKind,
    ResourceChange,
    classify,
    role,
)
from trn_ultracluster.changes.words import (
    DOC_EKS_UPGRADE,
    control_plane_version_refusals,
    describe,
    refused_combination,
    split_advice,
    stops_deploy,
    summary,
)

__all__ = [
    "DATA_TYPES", "DOCUMENTED_CREATE_ONLY", "DOC_EKS_UPGRADE", "NODEGROUP_VERSION_PROPERTIES",
    "NODE_TYPES", "ChangeKind", "ClaimShrink", "ResourceChange", "_NODEGROUP_ROLLERS",
    "classify", "control_plane_version_refusals", "describe", "quantity_bytes",
    "refused_combination", "role", "shrinking_claims", "split_advice", "stops_deploy",
    "summary",
]
