"""Find the Neuron DLAMI of one SDK release at deploy time (custom resource
``Custom::NeuronDlami``, CDK provider framework).

No SSM parameter names the DLAMI of one Neuron SDK release; the Neuron DLAMI User Guide's way
to one is EC2 ``DescribeImages`` with owner ``amazon`` and a ``description`` filter on the
SDK version ("Finding a DLAMI for a specific Neuron SDK version", aws-neuron/aws-neuron-sdk
``deploy/environments/dlami.rst`` at v2.32.0). The stack passes the filters
(:meth:`trn_ultracluster.config.facts.NeuronStack.dlami_filters`).

- Create / Update: ``DescribeImages(Owners=[Owner], Filters=Filters, IncludeDeprecated=True)``
  (a deprecated AMI still launches; DescribeImages leaves deprecated AMIs out unless asked,
  botocore EC2 model ``IncludeDeprecated``), the newest ``CreationDate`` wins (AWS may
  republish a release's DLAMI with fixes). The physical id is the AMI id; attributes
  ``ImageId``, ``Name``, ``Description``. No match fails the deploy with the filters and the
  configuration keys that choose another AMI. An Update runs only when the properties change
  (a new SDK release in the table), so the nodes' AMI does not move between deploys.
- Delete: nothing to do (the resource only read).

Standard library and boto3 only (the Lambda Python runtime ships boto3).
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["find_image", "on_event"]

CONFIG_KEYS = "standalone.ami_id or standalone.ami_ssm_parameter"
"""What chooses another AMI (docs/standalone.md)."""


def _ec2() -> Any:
    import boto3

    return boto3.client("ec2")


def find_image(ec2: Any, owner: str, filters: list[dict[str, Any]]) -> dict[str, Any]:
    """The newest image of ``owner`` that matches ``filters`` (every page).

    Raises:
        LookupError: no image matches.
    """
    images: list[dict[str, Any]] = []
    for page in ec2.get_paginator("describe_images").paginate(
            Owners=[owner], Filters=filters, IncludeDeprecated=True):
        images.extend(page.get("Images", []))
    if not images:
        wanted = "; ".join(f"{f['Name']}={','.join(f['Values'])}" for f in filters)
        raise LookupError(f"no AMI of owner {owner} in this Region matches {wanted}: set "
                          f"{CONFIG_KEYS} to an AMI with the Neuron SDK of the training image")
    return max(images, key=lambda image: image.get("CreationDate", ""))


def on_event(event: dict[str, Any], _context: Any = None) -> dict[str, Any]:
    """The provider framework's ``onEvent``."""
    print(json.dumps({k: event.get(k) for k in ("RequestType", "PhysicalResourceId")}))
    if event["RequestType"] == "Delete":
        return {"PhysicalResourceId": event["PhysicalResourceId"]}
    props = event["ResourceProperties"]
    image = find_image(_ec2(), props["Owner"], props["Filters"])
    print(json.dumps({k: image.get(k) for k in ("ImageId", "Name", "Description",
                                                "CreationDate")}))
    return {"PhysicalResourceId": image["ImageId"],
            "Data": {"ImageId": image["ImageId"], "Name": image.get("Name", ""),
                     "Description": image.get("Description", "")}}
