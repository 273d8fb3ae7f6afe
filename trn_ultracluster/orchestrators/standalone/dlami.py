"""The standalone nodes' default AMI on the ``xla`` stack: the Neuron DLAMI of the training
image's SDK release, found at deploy time (custom resource ``Custom::NeuronDlami``, handler in
``dlami_lookup/``). (The ``native`` stack boots the Base DLAMI by its SSM parameter instead:
:func:`.ami.image_id`.)

Why not the DLAMI's public SSM parameter: the Neuron DLAMI User Guide documents only
``<prefix>/latest/image_id`` ("Support for finding specific Neuron SDK version DLAMIs will be
added in future releases"), and the ``latest`` PyTorch 2.9 DLAMI is no longer the SDK 2.30.0
one whose environment we use (:data:`trn_ultracluster.config.facts.XLA_STACK`). Why not a
synth-time lookup (``ec2.LookupMachineImage``): synth makes no AWS calls, so that
``cdk synth`` works without credentials (README, "Quick start"). The lookup runs at create and when its filters change,
so a later deploy does not move the nodes' AMI.
"""

from __future__ import annotations

from pathlib import Path

from aws_cdk import CustomResource, Duration
from aws_cdk import aws_iam as iam
from aws_cdk import custom_resources as cr
from constructs import Construct

from trn_ultracluster.config.facts import NeuronStack
from trn_ultracluster.constructs.handler_function import handler_function
from trn_ultracluster.nag import acknowledge, acknowledge_provider_framework

__all__ = ["DLAMI_OWNER", "DlamiLookup"]

HANDLER = Path(__file__).resolve().parent / "dlami_lookup"
DLAMI_OWNER = "amazon"
"""The DLAMIs' owner alias, as in the guide's ``aws ec2 describe-images --owners amazon``."""


class DlamiLookup(Construct):
    """The newest DLAMI of ``stack``'s SDK release in the stack's Region.

    Attributes:
        image_id: the AMI id (token, ``Fn::GetAtt ImageId``).
        image_name: the AMI's name (token).
        resource: the ``Custom::NeuronDlami`` resource.
    """

    def __init__(self, scope: Construct, construct_id: str, *, stack: NeuronStack) -> None:
        super().__init__(scope, construct_id)
        role = iam.Role(self, "Role", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
                        description="Find the Neuron DLAMI of one SDK release (DescribeImages)")
        # ec2:DescribeImages has no resource-level permissions: the EC2 user guide says the
        # Describe* actions do not support them, and the Service Authorization Reference
        # lists no resource type for it (as for the Describe calls of
        # constructs/export_on_delete.py).
        role.add_to_policy(iam.PolicyStatement(actions=["ec2:DescribeImages"],
                                               resources=["*"]))
        function = handler_function(
            self, "Lookup", code=HANDLER, handler="handler.on_event", role=role,
            timeout=Duration.minutes(1),
            description="TrnUltraCluster: find the Neuron DLAMI of one SDK release")
        provider = cr.Provider(self, "Provider", on_event_handler=function)
        self.resource = CustomResource(
            self, "Dlami", service_token=provider.service_token,
            resource_type="Custom::NeuronDlami",
            properties={"Owner": DLAMI_OWNER, "Filters": stack.dlami_filters(),
                        "SdkRelease": stack.sdk_release})
        self.image_id = self.resource.get_att_string("ImageId")
        self.image_name = self.resource.get_att_string("Name")
        acknowledge(role.node.find_child("DefaultPolicy"), "AwsSolutions-IAM5[Resource::*]",
                    "ec2:DescribeImages has no resource-level permissions (EC2 user guide, "
                    "Service Authorization Reference); read only.")
        acknowledge_provider_framework(provider, [function])
