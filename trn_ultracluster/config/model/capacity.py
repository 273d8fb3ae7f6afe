"""Compute capacity: ``capacity`` (On-Demand, a Capacity Reservation or a Capacity Block)."""

from __future__ import annotations

from typing import Literal

from trn_ultracluster.config.model.base import FrozenModel

__all__ = ["CapacityConfig"]


class CapacityConfig(FrozenModel):
    """Where compute capacity comes from.

    ``on-demand`` (default); ``capacity-reservation`` targets an On-Demand Capacity
    Reservation; ``capacity-block`` targets an EC2 Capacity Block for ML. Both need
    ``reservation_id``.
    """

    type: Literal["on-demand", "capacity-reservation", "capacity-block"] = "on-demand"
    reservation_id: str | None = None
