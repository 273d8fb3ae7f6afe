"""The two standalone profiles (both on the xla stack), two trn2.48xlarge configurations (the
native stack) and profiles/mixed.yaml on standalone (three pools), synthesized once per
session (the ``synth`` fixture)."""

from __future__ import annotations

import pytest

from tests.conftest import profile_path


@pytest.fixture(scope="module")
def single(synth):
    """profiles/single-node.yaml: 1x trn1.32xlarge, container runtime."""
    return synth(profile_path("single-node"))


@pytest.fixture(scope="module")
def small(synth):
    """profiles/trn1-2xl.yaml: 1x trn1.2xlarge without EFA, DLAMI venv runtime."""
    return synth(profile_path("trn1-2xl"))


NATIVE = {"orchestrator": "standalone", "instance_type": "trn2.48xlarge",
          "az_ids": ["use2-az3", "use2-az1"]}
"""The default configuration on one trn2.48xlarge: ``training_image.neuron_stack: auto`` is
the native stack there."""
NATIVE_AMI_ID = "ami-0123456789abcdef0"


@pytest.fixture(scope="module")
def native(synth):
    """trn2.48xlarge, native stack, the standalone defaults (container runtime, default AMI)."""
    return synth(**NATIVE)


@pytest.fixture(scope="module")
def native_venv(synth):
    """trn2.48xlarge, native stack, ``runtime: dlami-venv`` on a pinned AMI (the config
    refuses dlami-venv on the native stack's default AMI)."""
    return synth(**NATIVE, **{"standalone.runtime": "dlami-venv",
                              "standalone.ami_id": NATIVE_AMI_ID})


@pytest.fixture(scope="module")
def mixed(synth):
    """profiles/mixed.yaml on standalone: trn1.32xlarge main pool ``trn1`` (xla),
    trn2.48xlarge pool ``trn2`` (native), m7i.8xlarge CPU pool ``cpu``."""
    return synth(profile_path("mixed"), orchestrator="standalone")
