"""Rules of the dashboard and alarms (``observability``) and of the Container Insights add-on
version."""

from __future__ import annotations

from collections.abc import Iterator

from trn_ultracluster.config.errors import ConfigIssue
from trn_ultracluster.config.facts import (
    ADDON_VERSION_RE,
    CLOUDWATCH_OBSERVABILITY_MIN,
    DOC_CW_ALARMS,
    DOC_CW_OBSERVABILITY_ADDON,
    DOC_SNS_EMAIL,
    EMAIL_RE,
    FSX_FULL_PERCENT_RANGE,
    IDLE_HOURS_RANGE,
)
from trn_ultracluster.config.model import ClusterConfig

__all__ = ["observability"]


def _alarms(c: ClusterConfig) -> Iterator[ConfigIssue]:
    o = c.observability
    if o.alarm_email is not None and not EMAIL_RE.match(o.alarm_email):
        yield ConfigIssue("observability.alarm_email", o.alarm_email,
                          "must be an e-mail address like 'ml-team@example.com' or null",
                          DOC_SNS_EMAIL)
    low, high = FSX_FULL_PERCENT_RANGE
    if not low <= o.fsx_full_percent <= high:
        yield ConfigIssue("observability.fsx_full_percent", o.fsx_full_percent,
                          f"must be {low}-{high} (percent of the file system used)", DOC_CW_ALARMS)
    low, high = IDLE_HOURS_RANGE
    if not low <= o.idle_hours <= high:
        yield ConfigIssue("observability.idle_hours", o.idle_hours,
                          f"must be {low}-{high} hours", DOC_CW_ALARMS)
    if not 0 < o.idle_utilization_percent < 100:
        yield ConfigIssue("observability.idle_utilization_percent", o.idle_utilization_percent,
                          "must be more than 0 and less than 100 (percent NeuronCore "
                          "utilization)", DOC_CW_ALARMS)


def _addon(c: ClusterConfig) -> Iterator[ConfigIssue]:
    version = c.eks.addon_versions.amazon_cloudwatch_observability
    match = ADDON_VERSION_RE.match(version or "")
    if c.orchestrator == "eks" and match and (
            tuple(int(g) for g in match.groups()) < CLOUDWATCH_OBSERVABILITY_MIN):
        need = ".".join(map(str, CLOUDWATCH_OBSERVABILITY_MIN))
        yield ConfigIssue("eks.addon_versions.amazon_cloudwatch_observability", version,
                          f"must be v{need} or newer (older versions cannot take their IAM "
                          "role through EKS Pod Identity)", DOC_CW_OBSERVABILITY_ADDON)


def observability(c: ClusterConfig) -> Iterator[ConfigIssue]:
    yield from _alarms(c)
    yield from _addon(c)
