"""FSx claims whose storage request a deploy would lower, which Kubernetes refuses
(:func:`shrinking_claims`)."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

_KUBERNETES_RESOURCE = "Custom::AWSCDK-EKS-KubernetesResource"
_TOKEN = "__cfn_token__"
_QUANTITY = re.compile(r"^([0-9]+(?:\.[0-9]+)?)(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)?$")
_FACTORS = {None: 1, "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15,
            "E": 10**18, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50,
            "Ei": 2**60}
"""Suffixes of a Kubernetes quantity (Kubernetes API reference, "Quantity": binary ``Ki``
.. ``Ei``, decimal ``k`` .. ``E``); the exponent forms (``1e3``) are not read."""


@dataclass(frozen=True)
class ClaimShrink:
    """A PersistentVolumeClaim whose ``spec.resources.requests.storage`` a deploy lowers.
    Kubernetes refuses it: "spec.resources.requests.storage: Forbidden: field can not be less
    than previous value" (the API server's validation of a claim update, the message as
    ``kubectl`` users report it; the validation code itself not read here), so the manifest's
    custom resource fails and the stack rolls back.

    Attributes:
        logical_id: the ``Custom::AWSCDK-EKS-KubernetesResource`` in ``after``.
        namespace: the claim's namespace (None when the manifest gives none).
        name: the claim's name.
        before: the deployed request, as written (``"2400Gi"``).
        after: the new request (``"1200Gi"``).
        volume: the claim's ``spec.volumeName`` (the PersistentVolume it is bound to), if any.
    """

    logical_id: str
    namespace: str | None
    name: str
    before: str
    after: str
    volume: str | None = None


def quantity_bytes(quantity: str) -> float | None:
    """A Kubernetes quantity (``"1200Gi"``) in bytes; None when it is not of the plain
    number-and-suffix form."""
    match = _QUANTITY.match(quantity.strip()) if isinstance(quantity, str) else None
    if match is None:
        return None
    return float(match.group(1)) * _FACTORS[match.group(2)]


def _manifest_objects(manifest: Any) -> list[dict[str, Any]]:
    """The Kubernetes objects of a ``Manifest`` property: JSON text, or an ``Fn::Join`` of
    text and intrinsic functions (each intrinsic read as a placeholder string; CDK writes
    them inside JSON strings). Empty when it cannot be read."""
    if isinstance(manifest, Mapping) and set(manifest) == {"Fn::Join"}:
        separator, parts = manifest["Fn::Join"]
        if not isinstance(separator, str) or not isinstance(parts, list):
            return []
        manifest = separator.join(p if isinstance(p, str) else _TOKEN for p in parts)
    if not isinstance(manifest, str):
        return []
    try:
        objects = json.loads(manifest)
    except ValueError:
        return []
    objects = objects if isinstance(objects, list) else [objects]
    return [o for o in objects if isinstance(o, dict)]


def _claim_requests(template: Mapping[str, Any]) -> dict[tuple[str | None, str],
                                                         tuple[str, str, str | None]]:
    """(namespace, name) of each PersistentVolumeClaim in the template's Kubernetes manifests
    -> (logical id, storage request, volume name)."""
    out = {}
    for logical_id, resource in (template.get("Resources") or {}).items():
        if resource.get("Type") != _KUBERNETES_RESOURCE:
            continue
        manifest = (resource.get("Properties") or {}).get("Manifest")
        for obj in _manifest_objects(manifest):
            if obj.get("kind") != "PersistentVolumeClaim":
                continue
            meta = obj.get("metadata") or {}
            storage = (((obj.get("spec") or {}).get("resources") or {}).get("requests")
                       or {}).get("storage")
            volume = (obj.get("spec") or {}).get("volumeName")
            if isinstance(meta.get("name"), str) and isinstance(storage, str):
                out[(meta.get("namespace"), meta["name"])] = (
                    logical_id, storage, volume if isinstance(volume, str) else None)
    return out


def shrinking_claims(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[ClaimShrink]:
    """Each claim of both templates (same namespace and name) whose storage request is lower
    in ``after``: the EKS FSx claim of a stack deployed with a request above today's fixed
    1200 GiB (:data:`trn_ultracluster.orchestrators.eks.manifests.FSX_CLAIM_REQUEST_GIB`).
    A claim deleted and recreated under a new name (``fsx.efa`` turned on) is not compared."""
    old, new = _claim_requests(before), _claim_requests(after)
    out = []
    for key in sorted(set(old) & set(new), key=str):
        was, now = quantity_bytes(old[key][1]), quantity_bytes(new[key][1])
        if was is not None and now is not None and now < was:
            out.append(ClaimShrink(new[key][0], key[0], key[1], old[key][1], new[key][1],
                                   new[key][2]))
    return out
