"""What a ``required`` node that powers off at its first boot relies on (fsx.efa: true;
``eks/scripts/lustre_efa_boot.sh`` and ``standalone/scripts/node_setup.sh``): the instance
stops and its Auto Scaling group replaces it.

- "Auto Scaling marks an instance as unhealthy if its instance status is any value other than
  running" and replaces unhealthy instances, with EC2 status checks as the default health
  check (EC2 Auto Scaling user guide, "Health checks for instances in an Auto Scaling group",
  https://docs.aws.amazon.com/autoscaling/ec2/userguide/healthcheck.html); the grace period
  delays that: "Amazon EC2 Auto Scaling waits until the health check grace period ends before
  checking the health status of the instance" (the same page).
- A node group's launch template "can't include SubnetId, IamInstanceProfile,
  RequestSpotInstances, HibernationOptions, or TerminateInstances, or the node group
  deployment or update will fail" (CloudFormation, AWS::EKS::Nodegroup
  LaunchTemplateSpecification,
  https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/aws-properties-eks-nodegroup-launchtemplatespecification.html);
  managed node groups "are always deployed with a launch template to be used with the Amazon
  EC2 Auto Scaling group" (EKS user guide, "Customize managed nodes with launch templates").

That a stopped node is replaced this way is not verified on a deployed stack.
"""

from __future__ import annotations

import base64

import pytest

from tests.orchestrators.eks.test_lustre_efa import shell_part
from tests.orchestrators.standalone.template_values import resolve
from trn_ultracluster.config.fsx_efa import plan_fsx_efa

EFA_FSX = {"fsx.efa": "true", "fsx.storage_capacity_gib": "19200"}
"""An EFA-enabled file system at the default 250 MB/s/TiB (one EFA capacity step): the nodes'
mode is ``required``."""
GRACE_MAX_S = 900
"""Our bound: a powered-off node is replaced within about this long after its launch."""


@pytest.fixture(scope="module", params=["standalone", "eks"])
def required(synth, request):
    s = synth(orchestrator=request.param, **EFA_FSX)
    assert plan_fsx_efa(s.config).mode == "required"
    return request.param, s


def _launch_template_data(s) -> dict:
    (lt,) = [r for r in s.template["Resources"].values() if r["Type"] == "AWS::EC2::LaunchTemplate"]
    return lt["Properties"]["LaunchTemplateData"]


def test_a_powered_off_node_stops_rather_than_hibernates(required):
    """An OS shutdown stops the instance by default (EC2 user guide, "Change instance
    initiated shutdown behavior"); ``terminate`` would do as well, hibernation is refused by
    node groups and would keep it from being replaced."""
    _, s = required
    data = _launch_template_data(s)
    assert data.get("InstanceInitiatedShutdownBehavior", "stop") in ("stop", "terminate")
    assert "HibernationOptions" not in data
    assert "SubnetId" not in str(data.get("NetworkInterfaces"))  # a node group refuses it


def test_the_standalone_group_replaces_a_stopped_node(synth):
    """EC2 health checks (the default, or named) on every standalone Auto Scaling group, and a
    grace period that does not keep a powered-off node for long."""
    s = synth(orchestrator="standalone", **EFA_FSX)
    groups = [r["Properties"] for r in s.template["Resources"].values()
              if r["Type"] == "AWS::AutoScaling::AutoScalingGroup"]
    assert groups
    for group in groups:
        assert group.get("HealthCheckType", "EC2") in ("EC2", "ELB")  # ELB adds to EC2's
        assert int(group.get("HealthCheckGracePeriod", 0)) <= GRACE_MAX_S


def test_eks_trainium_nodes_run_on_a_managed_node_group_with_the_power_off_user_data(synth):
    s = synth(orchestrator="eks", **EFA_FSX)
    groups = [r["Properties"] for r in s.template["Resources"].values()
              if r["Type"] == "AWS::EKS::Nodegroup" and "LaunchTemplate" in r["Properties"]]
    assert groups and all("ScalingConfig" in g for g in groups)
    data = _launch_template_data(s)
    assert "IamInstanceProfile" not in data  # a node group refuses it
    part = shell_part(base64.b64decode(resolve(data["UserData"], s.template)).decode())
    assert "MODE='required'" in part and "systemctl poweroff" in part
