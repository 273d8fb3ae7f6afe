"""Physical names that must be unique in an account and Region, derived from the stack.

A CloudFormation stack name is unique per account and Region (CloudFormation API reference,
CreateStack ``StackName``), and a stack id's UUID is unique per stack instance: a stack id is
``arn:aws:cloudformation:<region>:<account>:stack/<name>/<uuid>`` (``AWS::StackId`` pseudo
parameter). Names built from them never collide with another stack's, also not with a
deleted stack's kept resources (a kept log group, a bucket name S3 has not released yet).
"""

from __future__ import annotations

from aws_cdk import Aws, Fn, Stack

__all__ = ["stack_id_suffix", "stack_unique_name"]


def stack_id_suffix() -> str:
    """The first 8 hex digits of the stack id's UUID (a deploy-time token)."""
    uuid = Fn.select(2, Fn.split("/", Aws.STACK_ID))
    return Fn.select(0, Fn.split("-", uuid))


def stack_unique_name(stack: Stack) -> str:
    """``<stack name>-<8 hex digits of the stack id>`` (a deploy-time token): unique per stack
    instance; ``len(stack name) + 9`` characters."""
    return Fn.join("-", [stack.stack_name, stack_id_suffix()])
