"""The two standalone profiles, synthesized once per session (the ``synth`` fixture)."""

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
