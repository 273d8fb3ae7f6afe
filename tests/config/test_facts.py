"""AWS facts: AZ ID to Region; the XLA stack's SDK release, image, DLAMI and venv agree."""

from __future__ import annotations

import re

import pytest

from tests.conftest import REPO_ROOT
from trn_ultracluster.config import StandaloneConfig, region_of_az_id
from trn_ultracluster.config.facts import AZ_ID_PREFIX_TO_REGION, NATIVE_STACK, XLA_STACK


@pytest.mark.parametrize("az_id, region", [
    ("usw2-az4", "us-west-2"), ("use1-az6", "us-east-1"), ("use2-az3", "us-east-2"),
    ("apse4-az1", "ap-southeast-4"), ("aps1-az2", "ap-south-1"),
])
def test_region_from_az_id(az_id, region):
    assert region_of_az_id(az_id) == region


@pytest.mark.parametrize("az_id, error", [
    ("us-west-2a", "is not an AZ ID like 'usw2-az4'"),
    ("xyz9-az1", "unknown region code 'xyz9'"),
])
def test_region_of_a_bad_az_id_is_a_value_error(az_id, error):
    with pytest.raises(ValueError, match=error):
        region_of_az_id(az_id)


def test_every_region_code_names_a_distinct_region():
    assert len(set(AZ_ID_PREFIX_TO_REGION.values())) == len(AZ_ID_PREFIX_TO_REGION)


# --- the XLA stack: one Neuron SDK release for the image, the DLAMI and its venv ----------

def test_the_xla_stack_names_one_sdk_release_everywhere():
    release = XLA_STACK.sdk_release
    assert re.fullmatch(r"\d+\.\d+\.\d+", release)
    assert XLA_STACK.training_image.endswith(f"-sdk{release}-ubuntu24.04")
    assert XLA_STACK.dlami_description == f"*Neuron SDK {release}*"
    assert {"Name": "description", "Values": [XLA_STACK.dlami_description]} in (
        XLA_STACK.dlami_filters())
    assert "Ubuntu 24.04" in XLA_STACK.dlami_name  # the image's OS (…-ubuntu24.04)
    # PyTorch 2.9 in the image tag, the DLAMI and the venv
    assert ":2.9.0-" in XLA_STACK.training_image and "PyTorch 2.9 " in XLA_STACK.dlami_name
    assert XLA_STACK.venv in XLA_STACK.dlami_venvs
    assert all(v.startswith("/opt/aws_neuronx_venv_pytorch_2_9") for v in XLA_STACK.dlami_venvs)
    assert set(XLA_STACK.sources) >= {"sdk_release", "training_image", "dlami_name",
                                      "dlami_venvs", "venv", "dlami_lookup"}


def test_the_dockerfile_builds_on_the_xla_stacks_image():
    dockerfile = (REPO_ROOT / "training/Dockerfile").read_text()
    (base,) = re.findall(r"^ARG BASE_IMAGE=(\S+)$", dockerfile, re.MULTILINE)
    assert base == XLA_STACK.training_image


# --- the native stack: Neuron SDK 2.33 built on Ubuntu 26.04, every version pinned ---------

def _dockerfile_args() -> dict[str, str]:
    text = (REPO_ROOT / "training/Dockerfile").read_text()
    return dict(re.findall(r"^ARG (\w+)=(\S+)$", text, re.MULTILINE))


def test_the_dockerfile_pins_the_native_stacks_packages():
    """Every Neuron and PyTorch package of the native stage is pinned to NATIVE_STACK's
    version (a '*' only past the version the release notes give: the build hash)."""
    args = _dockerfile_args()
    assert args["NATIVE_BASE_IMAGE"] == NATIVE_STACK.training_image
    assert NATIVE_STACK.training_image.endswith(":26.04")  # 2.33's images: Ubuntu 26.04 only
    pins = {"torch": "TORCH_VERSION", "torch-neuronx": "TORCH_NEURONX_VERSION",
            "neuronx-cc": "NEURONX_CC_VERSION", "nki": "NKI_VERSION",
            "aws-neuronx-runtime-lib": "NEURON_RUNTIME_LIB_VERSION",
            "aws-neuronx-collectives": "NEURON_COLLECTIVES_VERSION",
            "aws-neuronx-tools": "NEURON_TOOLS_VERSION"}
    assert set(pins) == set(NATIVE_STACK.packages)
    for package, arg in pins.items():
        assert args[arg] == NATIVE_STACK.packages[package], package
        assert re.fullmatch(r"\d+(\.\d+)+(\.?\*)?", args[arg]), (package, args[arg])
    assert args["TORCH_NEURONX_VERSION"].startswith("2.14.") and args["TORCH_VERSION"] == "2.14.0"
    assert re.fullmatch(r"\d+\.\d+\.\d+", args["EFA_INSTALLER_VERSION"])  # not "latest"


def test_every_pip_install_of_the_image_is_pinned():
    """No `pip install` line of the Dockerfile names a package without a version, and the
    native stage's requirements are the CPU tests' own pins."""
    text = re.sub(r"\\\n", " ", (REPO_ROOT / "training/Dockerfile").read_text())
    for line in text.splitlines():
        if "pip install" not in line:
            continue
        words = line.split("pip install", 1)[1].split("&&")[0].split()
        packages = [w.strip('"') for w in words if not w.startswith("-") and "://" not in w
                    and not w.endswith(".txt")]
        assert all("==" in p for p in packages), line
    def pins(name: str) -> list[str]:
        lines = (REPO_ROOT / "training" / name).read_text().splitlines()
        return [ln.strip() for ln in lines if ln.strip() and not ln.startswith("#")]

    native = pins("requirements-native.txt")
    assert native and all("==" in p for p in native) and native == pins("requirements-cpu.txt")


def test_the_standalone_defaults_are_the_stacks_dlami_and_venv():
    """No AMI and no venv given: each stack's own. xla finds its release's DLAMI (no Base
    DLAMI parameter); native boots the Base DLAMI by its parameter and names the torch-neuronx
    DLAMI's venv."""
    default = StandaloneConfig()
    assert (default.ami_id, default.ami_ssm_parameter, default.dlami_venv) == (None, None, None)
    assert default.resolved("xla").dlami_venv == XLA_STACK.venv
    assert default.resolved("native").dlami_venv == NATIVE_STACK.venv
    assert XLA_STACK.base_dlami_parameter is None
    assert NATIVE_STACK.base_dlami_parameter == (
        "/aws/service/neuron/dlami/base/ubuntu-24.04/latest/image_id")
    assert NATIVE_STACK.venv in NATIVE_STACK.dlami_venvs
