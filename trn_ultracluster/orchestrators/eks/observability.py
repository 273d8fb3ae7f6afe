"""Container Insights on an EKS cluster: the ``amazon-cloudwatch-observability`` add-on with
its Neuron and EFA metrics, its IAM role through EKS Pod Identity, and the log groups it
writes to, created by the stack so that they are encrypted, expire and follow
``data_removal_policy``. Used by the EKS orchestrator (and, through the same call, by any
orchestrator built on an EKS cluster).

Facts used here and their sources:

- Neuron metrics (``node_neuroncore_utilization``, ``node_neurondevice_runtime_memory_used_bytes``,
  ``node_neuron_execution_errors_total``, ``node_neurondevice_hw_ecc_events_total``, ...) are
  collected "beginning with version 1.300036.0 of the CloudWatch agent" and need "the
  CloudWatch Observability EKS add-on version ``v1.5.0-eksbuild.1`` or later", the Neuron
  driver and the Neuron device plugin; EFA metrics (``node_efa_rx_bytes``,
  ``node_efa_tx_bytes``, ...) need agent 1.300037.0, add-on ``v1.5.2-eksbuild.1`` and the EFA
  device plugin (CloudWatch user guide, "Amazon EKS and Kubernetes Container Insights with
  enhanced observability metrics",
  https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/Container-Insights-metrics-enhanced-EKS.html).
  The cluster has both plugins (``cluster.py``).
- Pod Identity: "If you use version 3.1.0 or later of the add-on, you can use EKS Pod
  Identity" ("Quick start with the Amazon CloudWatch Observability EKS add-on",
  https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/Container-Insights-setup-EKS-addon.html);
  the role trusts ``pods.eks.amazonaws.com`` with the AWS managed ``CloudWatchAgentServerPolicy``
  and is associated with the service account ``cloudwatch-agent`` in the namespace
  ``amazon-cloudwatch`` (CloudWatch user guide, "Deploy Enhanced Container Insights (Classic)
  with CloudFormation or Helm": an ``AWS::EKS::PodIdentityAssociation`` with exactly these
  names). Here the association is the add-on's own (``AWS::EKS::Addon``
  ``PodIdentityAssociations``), so it is deleted with the add-on.
- Classic Container Insights (the ``ContainerInsights`` namespace the dashboard reads) is on
  by default in every chart release but v6.0.x-v6.1.x, which turned on the OTel pipeline
  instead; v6.2.0 "Disable Otel Container Insights by default" (aws-observability/helm-charts
  ``RELEASE_NOTES``; ``charts/amazon-cloudwatch-observability/values.yaml`` at v6.4.0:
  ``containerInsights.enabled: true``, ``otelContainerInsights.enabled: false``).
- Tolerations: the chart's ``tolerations`` value (root level, applied to the agent, Fluent Bit
  and the Neuron monitor DaemonSets; default ``- operator: Exists``, aws-observability/helm-charts
  PR #41 for aws/containers-roadmap#2195). We set it to the Trainium nodes' taint, so the
  DaemonSets run there whatever the default becomes. That the EKS add-on's configuration
  schema (``aws eks describe-addon-configuration``) accepts ``tolerations`` could not be read
  without an AWS account (not verified); the chart takes it.
- The Neuron monitor DaemonSet runs only on the instance types the chart lists (node affinity
  in ``values.yaml``: trn1.32xlarge, trn1n.32xlarge, trn2.3xlarge, trn2.48xlarge, trn2u.48xlarge,
  ...; v6.4.0 has no ``ml.trn2`` name).
- Log groups: the agent writes performance events to ``/aws/containerinsights/<cluster>/performance``
  (aws/amazon-cloudwatch-agent translator tests: ``log_group_name``
  ``/aws/containerinsights/{ClusterName}/performance``) and Fluent Bit container logs to
  ``.../application``, ``.../dataplane`` and ``.../host`` (chart ``values.yaml``,
  ``log_group_name``; ``auto_create_group true`` uses a group that exists). Fluent Bit's
  kubernetes filter has ``Merge_Log On`` with ``Merge_Log_Key log_processed``: a container's
  JSON line is in ``$.log_processed`` of its event.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_iam as iam
from aws_cdk import aws_logs as logs
from constructs import Construct, IDependable

from trn_ultracluster.constructs.metric_source import MetricSource
from trn_ultracluster.contracts.metrics import (
    CLUSTER_DIMENSION,
    CONTAINER_INSIGHTS_NAMESPACE,
    NODE_DIMENSIONS,
    training_namespace,
)
from trn_ultracluster.nag import acknowledge, managed_policy_finding
from trn_ultracluster.orchestrators.eks.manifests import NEURON_TAINT

__all__ = ["ADDON_NAME", "AGENT_NAMESPACE", "AGENT_POLICY", "AGENT_SERVICE_ACCOUNT",
           "LOG_GROUPS", "MIN_VERSION_EFA", "MIN_VERSION_NEURON", "MIN_VERSION_POD_IDENTITY",
           "container_insights"]

ADDON_NAME = "amazon-cloudwatch-observability"
AGENT_NAMESPACE = "amazon-cloudwatch"
AGENT_SERVICE_ACCOUNT = "cloudwatch-agent"
AGENT_POLICY = "CloudWatchAgentServerPolicy"
MIN_VERSION_NEURON = "v1.5.0-eksbuild.1"
MIN_VERSION_EFA = "v1.5.2-eksbuild.1"
MIN_VERSION_POD_IDENTITY = "v3.1.0"
"""Minimum add-on versions (module doc). The version itself is
``eks.addon_versions.amazon_cloudwatch_observability``: ``null`` (default) installs EKS's
default version for the cluster's Kubernetes version, as for the other add-ons (no build for
Kubernetes 1.36 could be verified without an AWS account); a pinned version below v3.1.0 is
refused by the configuration rules."""
LOG_GROUPS = ("performance", "application", "dataplane", "host")
"""``/aws/containerinsights/<cluster>/<name>``: the groups the add-on writes to."""


def container_insights(scope: Construct, cluster: eks.ICluster, *, version: str | None,
                       after: Sequence[IDependable],
                       tolerations: Sequence[dict[str, str]] = (NEURON_TAINT.toleration(),),
                       ) -> MetricSource:
    """Install Container Insights on ``cluster`` (constructs under ``scope``) and say where its
    metrics are.

    Creates the Pod Identity role (construct id ``CloudWatchAgentRole``), the four log groups
    (``ContainerInsightsLogs-<name>``) and the ``AWS::EKS::Addon`` (``Addon-amazon-cloudwatch-observability``)
    with the role associated to ``amazon-cloudwatch/cloudwatch-agent`` and ``tolerations`` as
    configuration. The add-on is created after the log groups (so the agents find them and
    ``cdk destroy`` removes the add-on, whose agents could re-create a group, first) and
    after ``after`` (the Pod Identity Agent add-on and the nodes that run the add-on's
    controller).

    Args:
        version: the add-on version, or ``None`` for EKS's default.
        after: what the add-on must wait for.
        tolerations: the DaemonSets' tolerations (default: the Trainium nodes' taint).

    Returns:
        The metric source of the cluster: ``ContainerInsights`` with ``ClusterName`` and
        the training lines in the ``application`` log group under ``$.log_processed``.
    """
    role = iam.Role(
        scope, "CloudWatchAgentRole",
        description="Container Insights agents (amazon-cloudwatch/cloudwatch-agent): metrics and logs",
        assumed_by=iam.ServicePrincipal("pods.eks.amazonaws.com").with_session_tags(),
        managed_policies=[iam.ManagedPolicy.from_aws_managed_policy_name(AGENT_POLICY)])
    acknowledge(role, managed_policy_finding(AGENT_POLICY),
                "The AWS managed policy AWS documents for the CloudWatch Observability add-on's "
                "agents (PutMetricData, their log groups, EC2 describe for metadata); AWS "
                "keeps it in step with the agent.")
    groups = {name: logs.LogGroup(
        scope, f"ContainerInsightsLogs-{name}",
        log_group_name=f"/aws/containerinsights/{cluster.cluster_name}/{name}",
        retention=logs.RetentionDays.ONE_MONTH)
        for name in LOG_GROUPS}
    addon = eks.CfnAddon(
        scope, f"Addon-{ADDON_NAME}",
        addon_name=ADDON_NAME,
        cluster_name=cluster.cluster_name,
        addon_version=version,
        resolve_conflicts="OVERWRITE",
        configuration_values=json.dumps({"tolerations": list(tolerations)}),
        pod_identity_associations=[eks.CfnAddon.PodIdentityAssociationProperty(
            service_account=AGENT_SERVICE_ACCOUNT, role_arn=role.role_arn)],
    )
    for dependency in (*groups.values(), role, *after):
        addon.node.add_dependency(dependency)
    return MetricSource(
        namespace=CONTAINER_INSIGHTS_NAMESPACE,
        cluster_dimensions={CLUSTER_DIMENSION: cluster.cluster_name},
        node_dimensions=NODE_DIMENSIONS,
        training_namespace=training_namespace(cluster.cluster_name),
        training_logs=groups["application"],
        training_log_selector="$.log_processed",
    )
