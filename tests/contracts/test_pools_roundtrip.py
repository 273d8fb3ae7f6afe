"""The ``Pools`` output's item and :class:`PoolInfo` are one shape read and written: what
``pools --json`` prints (:meth:`PoolInfo.to_json`) is what the stack writes and
:func:`parse_pools` reads back unchanged."""

from __future__ import annotations

import json

from trn_ultracluster.contracts.pools import PoolInfo, parse_pools


def test_to_json_and_parse_pools_are_inverse():
    pools = (PoolInfo("trn1", "trn1.32xlarge", True, 0, 1, 2, "xla", "img:1", "trn1",
                      instance_groups=("workers",), instances=1),
             PoolInfo("cpu", "m7i.8xlarge", False, 0, 1, 2, node_groups=("ng-a", "ng-b")))
    text = json.dumps([p.to_json() for p in pools])
    assert parse_pools(text) == pools
    assert json.loads(text)[0]["nodes"] == {"min": 0, "desired": 1, "max": 2}
