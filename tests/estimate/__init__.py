"""Tests of trn_ultracluster.estimate; helpers shared with the summary's tests."""

from __future__ import annotations

import json
from typing import Any

POOLS = [("trn1", "trn1.32xlarge", True, 0, 1, 4), ("trn2", "trn2.48xlarge", True, 0, 0, 2),
         ("cpu", "m7i.8xlarge", False, 0, 1, 3)]
"""name, type, accelerated, min, desired, max."""


def pools_output(groups: dict[str, Any]) -> dict[str, Any]:
    """The ``Pools`` output's value as CDK writes it: an ``Fn::Join`` of JSON text, with the
    image URI and each pool's ``groups`` (key -> an intrinsic) as intrinsics in its strings."""
    parts: list[Any] = ["["]
    for i, (name, itype, accelerated, lo, desired, hi) in enumerate(POOLS):
        head = json.dumps({"name": name, "instance_type": itype, "accelerated": accelerated,
                           "nodes": {"min": lo, "desired": desired, "max": hi}})[:-1]
        parts += [("," if i else "") + head + ', "image_uri": "',
                  {"Fn::Select": [4, {"Fn::Split": [":", {"Fn::GetAtt": ["Repo", "Arn"]}]}]},
                  '.dkr.ecr.example/repo:tag"']
        for key, value in groups.get(name, {}).items():
            parts += [f', "{key}": "', value, '"']
        parts.append("}")
    parts.append("]")
    return {"Value": {"Fn::Join": ["", parts]}}
