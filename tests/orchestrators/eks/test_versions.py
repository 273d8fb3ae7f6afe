"""The pinned Kubernetes versions: each version the configuration allows has its kubectl layer
(a pinned package) and an ``aws_eks_v2`` version; the defaults are among them. The EFA device
plugin pin is a chart version that ships the image its docstring names."""

from __future__ import annotations

from importlib import import_module

import pytest

from trn_ultracluster.config.facts import (
    DEFAULT_KUBERNETES_VERSION,
    EKS_KUBERNETES_VERSIONS,
    HYPERPOD_EKS_KUBERNETES_VERSIONS,
)
from trn_ultracluster.orchestrators.eks import versions
from trn_ultracluster.orchestrators.eks.versions import (
    EFA_PLUGIN_CHART,
    KUBECTL_LAYERS,
    kubernetes_version,
)
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
        kubernetes_version("1.37")  # Neuron AMIs exist, but aws-cdk-lib 2.275.0 has no V1_37


EFA_CHART_IMAGES = {"v0.5.20": "v0.5.13", "v0.5.29": "v0.5.20", "v0.5.30": "v0.5.20"}
"""Chart version -> image (``appVersion``) of ``aws-efa-k8s-device-plugin``, from aws/eks-charts
gh-pages ``index.yaml`` @ c7f9ea5 (2026-08-03): the two charts that ship image v0.5.20, the
newest image, and chart v0.5.20, the chart whose version equals that image's (it ships
v0.5.13)."""


def test_the_efa_plugin_pin_is_a_chart_version_shipping_the_image_the_doc_names():
    """Helm reads the pin as the chart version; pinning the image's version installs an older
    image."""
    image = EFA_CHART_IMAGES[EFA_PLUGIN_CHART.version]
    assert image == max(EFA_CHART_IMAGES.values(), key=lambda v: tuple(map(int, v[1:].split("."))))
    doc = " ".join((versions.__doc__ or "").split())
    assert f"version {EFA_PLUGIN_CHART.version}, which ships image {image}," in doc
