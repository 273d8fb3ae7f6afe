"""The tests' IAM evaluator (:mod:`tests.iam_eval`) against the rules of AWS's policy evaluation
pages, each case citing its rule:

- EVAL: "Policy evaluation logic",
  https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_evaluation-logic.html,
  and "The difference between explicit and implicit denies" (an applicable Deny wins over
  any Allow; no applicable statement: implicit deny);
- ACTION / RESOURCE: "IAM JSON policy elements: Action" / "Resource" (action names are not
  case-sensitive; wildcards ``*`` and ``?``; ARNs match part by part);
- CONDITION: "IAM JSON policy elements: Condition operators",
  https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_elements_condition_operators.html
  ("If the key that you specify in a policy condition is not present in the request context,
  the values do not match and the condition is false"; ``...IfExists``: true when the key is
  absent), and "Creating a condition with multiple context keys or values" (keys AND, values
  OR).
"""

from __future__ import annotations

import pytest

from tests.iam_eval import Request, Unsupported, arn_matches, evaluate

VPC = "arn:aws:ec2:us-west-2:111122223333:vpc/vpc-1"
ENI = "arn:aws:ec2:us-west-2:111122223333:network-interface/eni-1"


def _allow(action="ec2:CreateNetworkInterface", resource="*", **extra):
    return {"Effect": "Allow", "Action": action, "Resource": resource, **extra}


def _decide(*statements, action="ec2:CreateNetworkInterface", resource=ENI, **context):
    return evaluate([{"Statement": list(statements)}], Request(action, resource, context))


def test_default_deny_when_no_statement_applies():
    """EVAL: with no applicable Allow the request is implicitly denied."""
    decision = _decide(_allow("ec2:DeleteNetworkInterface"))
    assert not decision.allowed and not decision.explicit_deny


def test_explicit_deny_wins_over_an_allow():
    """EVAL: "the Deny statement trumps the Allow statement"."""
    deny = {"Effect": "Deny", "Action": "ec2:*", "Resource": ENI, "Sid": "No"}
    decision = _decide(_allow(), deny)
    assert not decision.allowed and decision.explicit_deny
    assert "No" in str(decision)


def test_a_deny_that_does_not_apply_leaves_the_allow():
    deny = {"Effect": "Deny", "Action": "ec2:*", "Resource": ENI.replace("eni-1", "eni-2")}
    assert _decide(_allow(), deny).allowed


@pytest.mark.parametrize("pattern, allowed", [
    ("EC2:createnetworkinterface", True),  # ACTION: names are not case-sensitive
    ("ec2:Create*", True),
    ("ec2:CreateNetworkInterfac?", True),
    ("ec2:Create?", False),  # ? is one character
    ("ec2:Delete*", False),
])
def test_action_names_and_wildcards(pattern, allowed):
    assert _decide(_allow(pattern)).allowed is allowed


@pytest.mark.parametrize("pattern, allowed", [
    ("*", True),
    (ENI, True),
    ("arn:aws:ec2:us-west-2:111122223333:network-interface/*", True),
    ("arn:aws:ec2:*:*:network-interface/eni-?", True),
    ("arn:aws:ec2:us-west-2:111122223333:Network-Interface/*", False),  # ARNs: case-sensitive
    ("arn:aws:ec2:us-west-2:111122223333:subnet/*", False),
    ("arn:aws:ec2:us-west-2:*:network-interface/eni-1?", False),
])
def test_resource_arns_and_wildcards(pattern, allowed):
    assert _decide(_allow(resource=pattern)).allowed is allowed


def test_a_wildcard_stays_within_its_arn_part():
    """RESOURCE: each colon-separated part matches on its own: a ``*`` in the region cannot
    swallow the account."""
    assert not arn_matches("arn:aws:ec2:*:network-interface/*", ENI)
    assert arn_matches("arn:aws:logs:*:*:log-group:/aws/sagemaker/Clusters/*",
                       "arn:aws:logs:r:1:log-group:/aws/sagemaker/Clusters/c/id:log-stream:s")


def test_not_action_and_not_resource():
    statement = {"Effect": "Allow", "NotAction": "ec2:Delete*", "NotResource": VPC}
    assert _decide(statement).allowed
    assert not _decide(statement, action="ec2:DeleteNetworkInterface").allowed
    assert not _decide(statement, resource=VPC).allowed


def test_conditions_on_the_request_context():
    """CONDITION: ``ArnEqualsIfExists`` holds when the key matches or is absent; a present key
    with another value makes the statement not apply."""
    statement = _allow(Condition={"ArnEqualsIfExists": {"ec2:Vpc": VPC}})
    assert _decide(statement, **{"ec2:Vpc": VPC}).allowed
    assert _decide(statement).allowed  # IfExists: key absent
    assert not _decide(statement, **{"ec2:Vpc": VPC.replace("vpc-1", "vpc-2")}).allowed
    assert _decide(statement, **{"EC2:VPC": VPC}).allowed  # key names are not case-sensitive


def test_a_missing_key_fails_a_condition_without_if_exists():
    """CONDITION: "the values do not match and the condition is false"."""
    statement = _allow(Condition={"ArnEquals": {"ec2:Vpc": VPC}})
    assert not _decide(statement).allowed


def test_several_values_are_or_several_keys_and_operators_are_and():
    """CONDITION: multiple values for a key: any; multiple keys and operators: all."""
    namespaces = {"StringEquals": {"cloudwatch:namespace": ["A", "B"]}}
    put = dict(action="cloudwatch:PutMetricData", resource="*")
    assert _decide(_allow("cloudwatch:PutMetricData", Condition=namespaces), **put,
                   **{"cloudwatch:namespace": "B"}).allowed
    assert not _decide(_allow("cloudwatch:PutMetricData", Condition=namespaces), **put,
                       **{"cloudwatch:namespace": "a"}).allowed  # StringEquals: case-sensitive
    both = {"StringEquals": {"k1": "x", "k2": "y"}}
    assert _decide(_allow(Condition=both), k1="x", k2="y").allowed
    assert not _decide(_allow(Condition=both), k1="x", k2="z").allowed
    two = {"StringEquals": {"k1": "x"}, "ArnLike": {"ec2:Vpc": "arn:aws:ec2:*:*:vpc/*"}}
    assert _decide(_allow(Condition=two), k1="x", **{"ec2:Vpc": VPC}).allowed
    assert not _decide(_allow(Condition=two), k1="x").allowed


def test_null_and_bool():
    assert _decide(_allow(Condition={"Null": {"k": "true"}})).allowed
    assert not _decide(_allow(Condition={"Null": {"k": "true"}}), k="v").allowed
    assert _decide(_allow(Condition={"Bool": {"aws:SecureTransport": True}}),
                   **{"aws:SecureTransport": "true"}).allowed


@pytest.mark.parametrize("statement", [
    _allow(Condition={"StringNotEquals": {"k": "x"}}),
    _allow(Condition={"ForAnyValue:StringEquals": {"aws:TagKeys": "x"}}),
    _allow(resource="arn:aws:s3:::b/${aws:username}/*"),
    {"Effect": "Allow", "Principal": "*", "Action": "*", "Resource": "*"},
])
def test_what_it_does_not_implement_is_an_error_not_a_guess(statement):
    with pytest.raises(Unsupported):
        _decide(statement)
