"""The pinned Kubernetes versions: each version the configuration allows has its kubectl layer
(a pinned package) and an ``aws_eks_v2`` version; the defaults are among them."""

from __future__ import annotations

from importlib import import_module

import pytest

from trn_ultracluster.config.facts import (
    DEFAULT_KUBERNETES_VERSION,
    EKS_KUBERNETES_VERSIONS,
    HYPERPOD_EKS_KUBERNETES_VERSIONS,
)
from trn_ultracluster.orchestrators.eks.versions import KUBECTL_LAYERS, kubernetes_version
from tests.conftest import REPO_ROOT


def test_every_allowed_version_has_a_pinned_kubectl_layer():
    assert set(KUBECTL_LAYERS) == set(EKS_KUBERNETES_VERSIONS)
    requirements = (REPO_ROOT / "requirements.txt").read_text()
    for version, (module, cls) in KUBECTL_LAYERS.items():
        assert hasattr(import_module(module), cls), version
        minor = version.split(".")[1]
        assert f"aws-cdk.lambda-layer-kubectl-v{minor}==" in requirements
        assert kubernetes_version(version).version == version


def test_defaults_are_allowed_and_hyperpods_is_one_hyperpod_supports():
    assert set(DEFAULT_KUBERNETES_VERSION.values()) <= set(EKS_KUBERNETES_VERSIONS)
    assert DEFAULT_KUBERNETES_VERSION["hyperpod-eks"] in HYPERPOD_EKS_KUBERNETES_VERSIONS


def test_a_version_without_a_layer_is_refused():
    with pytest.raises(KeyError):
        kubernetes_version("1.35")
