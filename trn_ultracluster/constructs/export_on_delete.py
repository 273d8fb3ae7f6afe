"""The export on delete of :class:`~trn_ultracluster.constructs.storage.Storage`: a custom
resource that exports the FSx for Lustre file system to its S3 data repository, after the
nodes are gone, before the file system is deleted
(:mod:`trn_ultracluster.constructs.fsx_export.handler` does the work; docs/deploy.md, "What
`cdk destroy` does")."""

from __future__ import annotations

from pathlib import Path

from aws_cdk import Aws, CustomResource, Duration, Stack
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_fsx as fsx
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import custom_resources as cr
from constructs import Construct

from trn_ultracluster.constructs.handler_function import handler_function
from trn_ultracluster.nag import acknowledge, acknowledge_provider_framework, nag_partition

__all__ = ["EXPORT_DEADLINE", "EXPORT_POLL", "EXPORT_SERVICE_TIMEOUT", "EXPORT_TIMEOUT",
           "EXPORT_WAIT", "export_on_delete"]

EXPORT_HANDLER = Path(__file__).resolve().parent / "fsx_export"
EXPORT_WAIT = Duration.minutes(20)
"""How long the export on delete waits for the nodes to go before exporting anyway."""
EXPORT_SERVICE_TIMEOUT = Duration.hours(1)
"""CloudFormation waits for a custom resource at most 3600 s (``ServiceTimeout``, 1-3600,
default 3600: CloudFormation template reference, ``AWS::CloudFormation::CustomResource``)."""
EXPORT_TIMEOUT = Duration.minutes(55)
"""The provider framework's own limit, inside CloudFormation's (:data:`EXPORT_SERVICE_TIMEOUT`):
on timeout it reports a clean failure (the file system is kept; ``cdk destroy`` can be run
again, and a still-running export is waited for then)."""
EXPORT_DEADLINE = Duration.minutes(52)
"""The export's own budget from the start of the delete (node wait included): the handler
fails with a message naming the task and how to finish before :data:`EXPORT_TIMEOUT` ends the
wait with the framework's generic one (two polls and a Lambda timeout of margin)."""
EXPORT_REPORT_PREFIX = ".trn-ultracluster/export-reports"
"""Where in the linked bucket the export's report of failed files goes (FSx API reference,
``CompletionReport``: the path must be in the linked S3 data repository; the report lands
in ``<path>/task-<id>/failures.csv``)."""
EXPORT_POLL = Duration.seconds(30)


def export_on_delete(scope: Construct, file_system: fsx.LustreFileSystem,
                     association: fsx.CfnDataRepositoryAssociation,
                     node_security_group: ec2.ISecurityGroup, repository_path: str,
                     suffix: str) -> CustomResource:
    """Export ``file_system`` to S3 before it is deleted, after the nodes are gone.

    Args:
        scope: where the role, functions, provider and custom resource go (the
            :class:`~trn_ultracluster.constructs.storage.Storage`).
        file_system: the file system to export.
        association: its data repository association: the custom resource depends on it
            (and so on the file system), so CloudFormation deletes it, and so runs the export,
            before either.
        node_security_group: the nodes' security group: when the whole stack is deleted, the
            handler first waits until no network interface of it is in use (at most
            :data:`EXPORT_WAIT`).
        repository_path: the association's S3 path; the report of failed files goes below it
            (:data:`EXPORT_REPORT_PREFIX`).
        suffix: appended to every construct id: ``Efa`` with EFA
            (:data:`~trn_ultracluster.constructs.storage.EFA_ID_SUFFIX`; ``Storage``'s class
            doc, "Flipping EFA"), else empty.
    """
    stack, sfx = Stack.of(scope), suffix
    role = iam.Role(scope, f"ExportRole{sfx}",
                    assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
                    description="Export the FSx file system to S3 before cdk destroy deletes it")
    role.add_to_policy(iam.PolicyStatement(
        actions=["fsx:CreateDataRepositoryTask"],
        resources=[
            stack.format_arn(service="fsx", resource="file-system",
                             resource_name=file_system.file_system_id),
            stack.format_arn(service="fsx", resource="task", resource_name="*"),
        ]))
    # Describe* actions have no resource-level permissions (Service Authorization
    # Reference, Amazon FSx and Amazon EC2: no resource type listed for them).
    role.add_to_policy(iam.PolicyStatement(
        actions=["fsx:DescribeDataRepositoryTasks", "fsx:DescribeDataRepositoryAssociations",
                 "ec2:DescribeNetworkInterfaces"],
        resources=["*"]))
    role.add_to_policy(iam.PolicyStatement(actions=["cloudformation:DescribeStacks"],
                                           resources=[Aws.STACK_ID]))
    functions = {
        entry: handler_function(
            scope, f"Export-{entry}{sfx}", code=EXPORT_HANDLER, handler=f"handler.{entry}",
            role=role, timeout=Duration.minutes(1),
            description="TrnUltraCluster: export FSx to S3 before deletion")
        for entry in ("on_event", "is_complete")}
    provider = cr.Provider(
        scope, f"ExportProvider{sfx}",
        on_event_handler=functions["on_event"],
        is_complete_handler=functions["is_complete"],
        query_interval=EXPORT_POLL,
        total_timeout=EXPORT_TIMEOUT,
    )
    export = CustomResource(
        scope, f"ExportOnDelete{sfx}",
        service_token=provider.service_token,
        resource_type="Custom::FsxExportOnDelete",
        service_timeout=EXPORT_SERVICE_TIMEOUT,
        properties={
            "FileSystemId": file_system.file_system_id,
            "NodeSecurityGroupId": node_security_group.security_group_id,
            "WaitSeconds": str(int(EXPORT_WAIT.to_seconds())),
            "DeadlineSeconds": str(int(EXPORT_DEADLINE.to_seconds())),
            "ReportPath": f"{repository_path.rstrip('/')}/{EXPORT_REPORT_PREFIX}",
        },
    )
    export.node.add_dependency(association)
    _acknowledge(scope, role, provider, list(functions.values()))
    return export


def _acknowledge(scope: Construct, role: iam.Role, provider: cr.Provider,
                 handlers: list[lambda_.Function]) -> None:
    acknowledge(role.node.find_child("DefaultPolicy"), "AwsSolutions-IAM5[Resource::*]",
                "fsx:DescribeDataRepositoryTasks and ec2:DescribeNetworkInterfaces have no "
                "resource-level permissions (Service Authorization Reference).")
    acknowledge(role.node.find_child("DefaultPolicy"),
                f"AwsSolutions-IAM5[Resource::arn:{nag_partition(Stack.of(scope))}:fsx:"
                f"{Stack.of(scope).region}:<AWS::AccountId>:task/*]",
                "The export task's id is not known before CreateDataRepositoryTask.")
    acknowledge_provider_framework(provider, handlers)
