"""The DLAMI lookup custom resource handler: its DescribeImages request checked against
botocore's EC2 model (Stubber), the newest image of several pages chosen, a clear failure
when none matches, and a Delete that calls nothing."""

from __future__ import annotations

import boto3
import pytest
from botocore.stub import Stubber

from trn_ultracluster.config.facts import XLA_STACK
from trn_ultracluster.orchestrators.standalone.dlami import DLAMI_OWNER
from trn_ultracluster.orchestrators.standalone.dlami_lookup import handler

NAME = f"{XLA_STACK.dlami_name} 20260521"
REQUEST = {"Owners": [DLAMI_OWNER], "Filters": XLA_STACK.dlami_filters(),
           "IncludeDeprecated": True}


def image(image_id: str, created: str) -> dict:
    return {"ImageId": image_id, "Name": NAME, "CreationDate": created,
            "Description": f"Supported EC2 instances: Trn1, Trn2. Neuron SDK {XLA_STACK.sdk_release}"}


@pytest.fixture
def ec2(monkeypatch):
    client = boto3.client("ec2", region_name="us-west-2", aws_access_key_id="x",
                          aws_secret_access_key="y")
    monkeypatch.setattr(handler, "_ec2", lambda: client)
    with Stubber(client) as stub:
        yield stub
        stub.assert_no_pending_responses()


def event(request_type: str, **extra) -> dict:
    return {"RequestType": request_type, "ResourceType": "Custom::NeuronDlami",
            "ResourceProperties": {"ServiceToken": "arn", "Owner": DLAMI_OWNER,
                                   "Filters": XLA_STACK.dlami_filters(),
                                   "SdkRelease": XLA_STACK.sdk_release}, **extra}


@pytest.mark.parametrize("request_type", ["Create", "Update"])
def test_create_and_update_answer_the_newest_image_of_every_page(ec2, request_type):
    ec2.add_response("describe_images", {"Images": [image("ami-00000000000000001", "2026-05-21T10:00:00.000Z")],
                                         "NextToken": "page2"}, REQUEST)
    ec2.add_response("describe_images", {"Images": [image("ami-00000000000000003", "2026-06-02T10:00:00.000Z"),
                                                    image("ami-00000000000000002", "2026-05-25T10:00:00.000Z")]},
                     {**REQUEST, "NextToken": "page2"})
    extra = {"PhysicalResourceId": "ami-00000000000000001"} if request_type == "Update" else {}
    answer = handler.on_event(event(request_type, **extra))
    assert answer["PhysicalResourceId"] == "ami-00000000000000003"
    assert answer["Data"]["ImageId"] == "ami-00000000000000003"
    assert answer["Data"]["Name"] == NAME


def test_no_match_fails_with_the_filters_and_the_keys_to_set(ec2):
    ec2.add_response("describe_images", {"Images": []}, REQUEST)
    with pytest.raises(LookupError) as error:
        handler.on_event(event("Create"))
    message = str(error.value)
    assert f"description=*Neuron SDK {XLA_STACK.sdk_release}*" in message
    assert f"name={XLA_STACK.dlami_name} *" in message
    assert "standalone.ami_id or standalone.ami_ssm_parameter" in message


def test_delete_calls_nothing_and_keeps_the_physical_id(ec2):
    assert handler.on_event(event("Delete", PhysicalResourceId="ami-00000000000000003")) == {
        "PhysicalResourceId": "ami-00000000000000003"}
