"""The FSx claim of the EKS-based orchestrators survives a file system grow
(trn_ultracluster.orchestrators.eks.manifests.FSX_CLAIM_REQUEST_GIB): the claim's manifest
is the same before and after, only the PersistentVolume's capacity follows the file system,
and the claim still binds (its request is at most the volume's capacity: the persistent
volume controller's ``checkVolumeSatisfyClaim``, "requested PV is too small" otherwise).
Kubernetes refuses to resize a statically bound claim ("only dynamically provisioned pvc can
be resized and the storageclass that provisions the pvc must support resize"), so on main a
grow failed the manifest update after the file system had grown."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.conftest import profile_path
from trn_ultracluster.orchestrators.eks import manifests as k8s

GROWN = {"fsx.storage_capacity_gib": "4800"}


def _objects(s) -> dict[str, dict[str, Any]]:
    """kind -> the one object of that kind among the stack's manifests (tokens become
    placeholders)."""
    out: dict[str, dict[str, Any]] = {}
    for r in s.resources("Custom::AWSCDK-EKS-KubernetesResource").values():
        manifest = r["Properties"]["Manifest"]
        if isinstance(manifest, dict):
            manifest = "".join(p if isinstance(p, str) else "token"
                               for p in manifest["Fn::Join"][1])
        for obj in json.loads(manifest):
            assert obj["kind"] not in out, obj["kind"]
            out[obj["kind"]] = obj
    return out


def _gib(quantity: str) -> int:
    assert quantity.endswith("Gi"), quantity
    return int(quantity[:-2])


@pytest.fixture(scope="module")
def grown(synth):
    return synth(**GROWN)


@pytest.fixture(scope="module")
def hpe(synth):
    return synth(profile_path("hyperpod-eks"))


def test_growing_the_file_system_leaves_the_claim_unchanged(default, grown):
    before, after = _objects(default), _objects(grown)
    assert before["PersistentVolumeClaim"] == after["PersistentVolumeClaim"]
    capacities = [_gib(o["PersistentVolume"]["spec"]["capacity"]["storage"])
                  for o in (before, after)]
    assert capacities == [default.config.fsx.storage_capacity_gib, 4800]


@pytest.mark.parametrize("name", ["default", "grown", "hpe"])
def test_the_claim_binds_to_the_volume(name, request):
    """Bound by name to the volume, same (empty) storage class and access modes, and asking
    for no more than the volume holds: on eks and hyperpod-eks, at every size."""
    s = request.getfixturevalue(name)
    objects = _objects(s)
    claim, volume = objects["PersistentVolumeClaim"], objects["PersistentVolume"]
    assert claim["spec"]["volumeName"] == volume["metadata"]["name"]
    assert claim["spec"]["storageClassName"] == volume["spec"]["storageClassName"] == ""
    assert claim["spec"]["accessModes"] == volume["spec"]["accessModes"]
    request_gib = _gib(claim["spec"]["resources"]["requests"]["storage"])
    assert request_gib == k8s.FSX_CLAIM_REQUEST_GIB
    assert request_gib <= _gib(volume["spec"]["capacity"]["storage"])


def test_the_fixed_request_fits_the_smallest_file_system():
    """1200 GiB is the smallest ``fsx.storage_capacity_gib`` the configuration accepts, so the
    claim fits every file system the stack can make."""
    from trn_ultracluster.config import ConfigError, parse_config

    parse_config({"fsx": {"storage_capacity_gib": k8s.FSX_CLAIM_REQUEST_GIB}})
    with pytest.raises(ConfigError, match="fsx.storage_capacity_gib"):
        parse_config({"fsx": {"storage_capacity_gib": k8s.FSX_CLAIM_REQUEST_GIB // 2}})
