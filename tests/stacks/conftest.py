"""The stack tests' fixture: ``each``, the default configuration and every profile."""

from __future__ import annotations

import pytest

from tests.conftest import PROFILES

CONFIGS = [None, *PROFILES]
IDS = ["default", *(p.stem for p in PROFILES)]


@pytest.fixture(scope="module", params=CONFIGS, ids=IDS)
def each(request, synth):
    """One synthesized configuration per test: the default, then each profile."""
    return synth(request.param)
