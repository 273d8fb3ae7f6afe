"""Rules of the dashboard and alarms (``observability``) and of the Container Insights add-on."""

from __future__ import annotations

import pytest

from tests.config import STYLE, check_one_error, load

ALARMS = "https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/AlarmThatSendsEmail.html"
ADDON = ("https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/"
         "install-CloudWatch-Observability-EKS-addon.html")

# (case, context overrides as `-c` would give them, the exact message of the one error)
BAD_INPUTS = [
    ("not an e-mail address", {"observability.alarm_email": "ml-team"},
     "error: observability.alarm_email = 'ml-team': must be an e-mail address like "
     "'ml-team@example.com' or null (see https://docs.aws.amazon.com/sns/latest/dg/"
     "sns-email-notifications.html)"),
    ("file system alarm at 100 %", {"observability.fsx_full_percent": 100},
     f"error: observability.fsx_full_percent = 100: must be 50-99 (percent of the file system "
     f"used) (see {ALARMS})"),
    ("idle for two days", {"observability.idle_hours": 48},
     f"error: observability.idle_hours = 48: must be 1-24 hours (see {ALARMS})"),
    ("idle below 0 %", {"observability.idle_utilization_percent": 0},
     "error: observability.idle_utilization_percent = 0.0: must be more than 0 and less than "
     f"100 (percent NeuronCore utilization) (see {ALARMS})"),
    ("add-on without Pod Identity", {
        "eks.addon_versions.amazon_cloudwatch_observability": "v2.6.0-eksbuild.1"},
     "error: eks.addon_versions.amazon_cloudwatch_observability = 'v2.6.0-eksbuild.1': must be "
     "v3.1.0 or newer (older versions cannot take their IAM role through EKS Pod Identity) "
     f"(see {ADDON})"),
    ("add-on version not a version", {
        "eks.addon_versions.amazon_cloudwatch_observability": "latest"},
     "error: eks.addon_versions.amazon_cloudwatch_observability = 'latest': must be an EKS "
     "add-on version like 'v1.22.2-eksbuild.1' or null (see "
     "https://docs.aws.amazon.com/eks/latest/userguide/eks-add-ons.html)"),
]


@pytest.mark.parametrize("case, overrides, message", BAD_INPUTS, ids=[c[0] for c in BAD_INPUTS])
def test_bad_input_gives_one_exact_message(case, overrides, message):
    assert STYLE.match(message)
    check_one_error(overrides, message)


def test_defaults_and_good_values_pass():
    config = load({"observability.alarm_email": "ml-team@example.com",
                   "observability.fsx_full_percent": 80, "observability.idle_hours": 24,
                   "eks.addon_versions.amazon_cloudwatch_observability": "v3.1.0-eksbuild.1"}).config
    assert config.observability.alarm_email == "ml-team@example.com"
    defaults = load({}).config.observability
    assert (defaults.alarm_email, defaults.fsx_full_percent, defaults.idle_hours,
            defaults.idle_utilization_percent) == (None, 90, 4, 1.0)


def test_the_add_on_version_matters_only_on_eks():
    config = load({"orchestrator": "hyperpod-slurm",
                   "eks.addon_versions.amazon_cloudwatch_observability": "v2.6.0-eksbuild.1"})
    assert config.config.orchestrator == "hyperpod-slurm"


def test_patterns_do_not_take_a_trailing_newline():
    """``$`` also matches before a final newline (a quoted YAML value keeps it); SNS, EC2 and
    SSM would refuse such a value only at deploy time."""
    from trn_ultracluster.config import facts

    assert facts.EMAIL_RE.match("a@example.com") and not facts.EMAIL_RE.match("a@example.com\n")
    assert not facts.ROOT_DEVICE_RE.match("/dev/sda1\n")
    assert not facts.SSM_PARAMETER_NAME_RE.match("/aws/service/x\n")
