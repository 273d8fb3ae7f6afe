"""The dashboard and alarms: ``observability``."""

from __future__ import annotations

from trn_ultracluster.config.model.base import FrozenModel

__all__ = ["ObservabilityConfig"]


class ObservabilityConfig(FrozenModel):
    """The stack's dashboard and alarms (``constructs/observability.py``, ``constructs/alarms.py``).

    Default: no e-mail subscription, the file-system alarm at 90 % full, the idle alarm after
    4 hours of Trainium nodes at under 1 % NeuronCore utilization.

    Attributes:
        alarm_email: an address subscribed to the alarm topic (SNS sends it a confirmation
            mail first); ``null``: subscribe yourself to the ``AlarmTopicArn`` output.
        fsx_full_percent: the FSx alarm fires when more than this share of the file system's
            storage capacity is used (50-99).
        idle_hours: the idle alarm fires when Trainium nodes run this many hours in a row
            (1-24) at under ``idle_utilization_percent`` NeuronCore utilization.
        idle_utilization_percent: average NeuronCore utilization, percent (0-100 exclusive),
            under which a running Trainium node counts as idle.
    """

    alarm_email: str | None = None
    fsx_full_percent: int = 90
    idle_hours: int = 4
    idle_utilization_percent: float = 1.0
