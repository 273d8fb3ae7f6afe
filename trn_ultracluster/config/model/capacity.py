"""Compute capacity: ``capacity`` (On-Demand, a Capacity Reservation or a Capacity Block)."""

from __future__ import annotations

from typing import Literal

from trn_ultracluster.config.model.base import FrozenModel

__all__ = ["CapacityConfig"]


class CapacityConfig(FrozenModel):
    """Where compute capacity comes from.

    Attributes:
        type: ``on-demand`` (default), ``capacity-reservation`` (an On-Demand Capacity
            Reservation) or ``capacity-block`` (an EC2 Capacity Block for ML).
        reservation_id: the ``cr-`` id (``cr-`` and 8 or 17 hex digits) of the reservation
            or Capacity Block; needed by both reserved types.
        placement_group_name: ``capacity-reservation`` only, with ``placement_group: true``:
            the existing cluster placement group the reservation was created in (1-255
            ASCII characters). The launch template names it and the stack creates no
            placement group of its own (nor ever deletes this one); ``preflight`` checks
            that the reservation is in this group. Default ``null``: the stack creates a new
            cluster placement group, with a warning, which the reservation's capacity is not
            held in: to hold capacity in a cluster placement group, the reservation must be
            created in it, and an existing one cannot be moved into one (EC2 user guide,
            "Capacity Reservations in cluster placement groups",
            https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/cr-cpg.html).
    """

    type: Literal["on-demand", "capacity-reservation", "capacity-block"] = "on-demand"
    reservation_id: str | None = None
    placement_group_name: str | None = None
