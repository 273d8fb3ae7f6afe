"""The arithmetic of benchmarks/scale.py's ratio column (issue "a newcomer's first hour": with
``--sizes 16,2000`` it printed "2,000 : 2,000" and 1.00x, taking the second size as the
base)."""

from __future__ import annotations

import importlib.util

import pytest

from tests.conftest import REPO_ROOT


@pytest.fixture(scope="module")
def scale():
    spec = importlib.util.spec_from_file_location("bench_scale", REPO_ROOT / "benchmarks" / "scale.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(("sizes", "expected"), [
    ([16, 2000], (2000, 16)),
    ([1, 16, 256, 2000], (2000, 16)),
    ([2000, 256, 16], (2000, 16)),
    ([1, 2000], (2000, 2000)),
    ([1], (1, 1)),
])
def test_the_ratio_compares_the_largest_size_with_the_smallest_above_one(scale, sizes, expected):
    assert scale.ratio_sizes(sizes) == expected


def test_the_ratio_divides_the_largest_size_by_the_base(scale):
    rows = {1: {"seconds": 1.0, "bytes": 1.0, "resources": 1.0},
            16: {"seconds": 10.0, "bytes": 100.0, "resources": 50.0},
            2000: {"seconds": 20.0, "bytes": 400.0, "resources": 75.0}}
    assert scale.ratios(rows, [16, 2000]) == {"seconds": 2.0, "bytes": 4.0, "resources": 1.5}
    assert scale.ratios(rows, [1, 16, 2000]) == {"seconds": 2.0, "bytes": 4.0, "resources": 1.5}
