"""Validators of the CRDs vendored under ``tests/fixtures`` (Kubeflow Trainer, Kueue), built once
per test process.

A CRD file is parsed with libyaml when PyYAML has it (a TrainJob CRD takes about 3 s with the
pure-Python parser), and a validator's schema is checked against its metaschema once, not at
every ``jsonschema.validate`` call (about 0.9 s each for the TrainJob schema).
"""

from __future__ import annotations

import copy
import functools
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from tests.conftest import KUEUE_CRDS, TRAINER_CRDS

_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
TRAINJOBS = TRAINER_CRDS / "trainer.kubeflow.org_trainjobs.yaml"
CLUSTER_TRAINING_RUNTIMES = TRAINER_CRDS / "trainer.kubeflow.org_clustertrainingruntimes.yaml"
KUEUE_KINDS = {"ClusterQueue": "kueue.x-k8s.io_clusterqueues.yaml",
               "ResourceFlavor": "kueue.x-k8s.io_resourceflavors.yaml",
               "LocalQueue": "kueue.x-k8s.io_localqueues.yaml",
               "WorkloadPriorityClass": "kueue.x-k8s.io_workloadpriorityclasses.yaml"}
"""Kueue kinds -> their CRD file (``Workload``'s is the default of :func:`kueue_validator`)."""


@functools.lru_cache(maxsize=None)
def _load(path: Path) -> Any:
    return yaml.load(path.read_text(), Loader=_LOADER)


def load_crd(path: Path) -> dict[str, Any]:
    """The CRD at ``path`` as a dict (a fresh copy: callers may change it)."""
    return copy.deepcopy(_load(path))


def strict(schema: Any) -> Any:
    """The CRD schema as the API server's strict field validation sees it: unknown fields
    are errors wherever the schema lists properties and does not preserve unknown fields."""
    if isinstance(schema, dict):
        out = {k: strict(v) for k, v in schema.items()}
        if ("properties" in out and "additionalProperties" not in out
                and not out.get("x-kubernetes-preserve-unknown-fields")):
            out["additionalProperties"] = False
        return out
    if isinstance(schema, list):
        return [strict(v) for v in schema]
    return schema


@functools.lru_cache(maxsize=None)
def trainjob_validator() -> jsonschema.protocols.Validator:
    """The TrainJob CRD's first version's schema, as ``jsonschema.validate(manifest, schema)``
    checks it (the validator class it picks for the schema, metaschema-checked once)."""
    schema = _load(TRAINJOBS)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


def _version(crd: dict[str, Any], name: str) -> dict[str, Any]:
    (found,) = [v for v in crd["spec"]["versions"] if v["name"] == name]
    return found


def _strict_validator(version: dict[str, Any]) -> jsonschema.Draft7Validator:
    schema = strict(version["schema"]["openAPIV3Schema"])
    schema["properties"]["metadata"] = {"type": "object"}
    return jsonschema.Draft7Validator(schema)


@functools.lru_cache(maxsize=None)
def runtime_validator() -> jsonschema.Draft7Validator:
    """A strict validator of a ``ClusterTrainingRuntime`` against the CRD's ``v1alpha1``
    schema (unknown fields are errors, as with the API server's strict field validation)."""
    return _strict_validator(_version(_load(CLUSTER_TRAINING_RUNTIMES), "v1alpha1"))


@functools.lru_cache(maxsize=None)
def kueue_validator(kind: str) -> jsonschema.Draft7Validator:
    """A strict validator of the Kueue ``kind`` against the vendored CRD's ``v1beta2``
    schema, which is served and stored (unknown fields are errors, as with the API
    server's strict field validation)."""
    crd = _load(KUEUE_CRDS / KUEUE_KINDS.get(kind, "kueue.x-k8s.io_workloads.yaml"))
    assert crd["spec"]["names"]["kind"] == kind
    version = _version(crd, "v1beta2")
    assert version["served"] and version["storage"]
    return _strict_validator(version)
