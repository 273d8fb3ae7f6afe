"""The ``built_once`` fixture (tests/conftest.py) that lets pytest-xdist workers share one
slow build (a training run, prepared data)."""

from __future__ import annotations

import pytest


def test_a_name_is_built_once_and_again_after_a_build_that_failed(built_once):
    calls = []

    def build(path):
        calls.append(path)
        (path / "out").write_text("built")

    first = built_once("test-once", build)
    assert built_once("test-once", build) == first and len(calls) == 1
    # the marker is beside the directory, not in it: the directory holds what build wrote
    assert sorted(p.name for p in first.iterdir()) == ["out"]
    assert (first / "out").read_text() == "built" and (first.parent / "test-once.built").exists()

    def broken(path):
        (path / "half").write_text("half-written")
        raise RuntimeError("the build failed")

    with pytest.raises(RuntimeError, match="the build failed"):
        built_once("test-broken", broken)
    again = built_once("test-broken", build)
    assert len(calls) == 2 and sorted(p.name for p in again.iterdir()) == ["out"]
