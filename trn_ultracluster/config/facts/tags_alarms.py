"""Tags, and observability (dashboard, alarms, Container Insights). Each fact with its source (the package docstring says more)."""

from __future__ import annotations

import re

# --- tags --------------------------------------------------------------------------------

TAG_PUNCTUATION = "+ - = . _ : / @"
"""Punctuation allowed in tag keys and values besides letters, numbers and spaces.

Source:
AWS tagging guide, "Tag naming limits and requirements" (DOC_TAGS): keys 1-128 and values
0-256 characters of letters, numbers and spaces representable in UTF-8 and + - = . _ : / @;
the "aws:" prefix is reserved for AWS. CloudFormation refuses other characters only at
deploy time, after the template is written."""
TAG_KEY_CHARS = 128
TAG_VALUE_CHARS = 256

# --- observability (dashboard, alarms, Container Insights) -------------------------------
DOC_SNS_EMAIL = "https://docs.aws.amazon.com/sns/latest/dg/sns-email-notifications.html"
DOC_CW_ALARMS = (
    "https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/AlarmThatSendsEmail.html")
DOC_CW_OBSERVABILITY_ADDON = (
    "https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/"
    "install-CloudWatch-Observability-EKS-addon.html")
EMAIL_RE = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+\Z")
"""A plausible e-mail address; SNS itself confirms it with a mail (DOC_SNS_EMAIL)."""
FSX_FULL_PERCENT_RANGE = (50, 99)
"""Our bounds for the file-system alarm: below 50 % it would fire on an ordinary file system,
at 100 % never."""
IDLE_HOURS_RANGE = (1, 24)
"""The idle alarm evaluates 1-hour periods; 24 of them is one day, within the limit of
PutMetricAlarm (EvaluationPeriods x Period at most one day, 86,400 s, for alarms with periods
under one hour, longer only for hourly and longer periods: CloudWatch API reference,
PutMetricAlarm ``EvaluationPeriods``). We stay at one day either way."""
CLOUDWATCH_OBSERVABILITY_MIN = (3, 1, 0)
"""Oldest ``amazon-cloudwatch-observability`` add-on that takes its IAM role through EKS Pod
Identity ("If you use version 3.1.0 or later of the add-on, you can use EKS Pod Identity",
CloudWatch user guide, "Quick start with the Amazon CloudWatch Observability EKS add-on",
https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/Container-Insights-setup-EKS-addon.html).
It is newer than the versions that brought the Neuron metrics (v1.5.0-eksbuild.1) and the
EFA metrics (v1.5.2-eksbuild.1), see
:mod:`trn_ultracluster.orchestrators.eks.observability`."""
