"""``preflight``'s capacity check: each reservation the pools launch into can serve them.

Pools on one reservation (``capacity.reservation_id``, the top-level one or a pool's own) are
checked together: one EC2 ``DescribeCapacityReservations`` per reservation, which must be
``active`` and not past its end date, in the compute AZ ID, of the pools' instance type, of
the configured kind (a Capacity Block has ``ReservationType capacity-block``), hold at least
the pools' ``nodes.max`` together, and (``capacity-reservation``) be in each pool's placement
group (``PlacementGroupArn`` names ``capacity.placement_group_name``). A configuration
without ``pools`` reads as it always did: one check named ``capacity``, its messages naming
the top-level keys.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from trn_ultracluster.cli.aws import aws_errors, error_code
from trn_ultracluster.cli.check import Check, guarded
from trn_ultracluster.config import ClusterConfig
from trn_ultracluster.config.model import CapacityConfig, Pool
from trn_ultracluster.config.rules.pool_keys import capacity_key

__all__ = ["RESERVATION_STATES", "capacity_checks"]

CAPACITY_CHECK = "capacity"

RESERVATION_STATES: dict[str, str] = {
    "active": "the capacity is available for use",
    "expired": "it reached its end date; the capacity is released",
    "cancelled": "it was cancelled; the capacity is released",
    "pending": "the request succeeded, the capacity is still being provisioned",
    "failed": "the request failed (invalid parameters, capacity or instance limits)",
    "scheduled": "a future-dated reservation, delivered on its start date",
    "payment-pending": "a Capacity Block whose upfront payment is not processed yet",
    "payment-failed": "a Capacity Block whose payment was not processed in 12 hours; released",
    "assessing": "EC2 is assessing the future-dated request",
    "delayed": "EC2 cannot deliver the future-dated capacity by its start date",
    "unsupported": "EC2 cannot support the future-dated request; it will not be delivered",
    "cancelling": "it is being cancelled; the capacity is released",
    "unavailable": "not described in the EC2 API reference",
}
"""``State`` of a Capacity Reservation -> what it means: botocore's EC2 model (1.44.8),
``CapacityReservation.State`` (shape ``CapacityReservationState``) and its documentation;
only ``active`` can take instances (EC2 user guide, "Launch instances into an existing
Capacity Reservation", https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/capacity-reservations-launch.html)."""
_WAIT_STATES = frozenset({"pending", "scheduled", "assessing", "delayed", "payment-pending"})
"""States that may still become ``active`` (the rest are released, failed or refused)."""
_PLACEMENT_GROUP_ARN = ":placement-group/"
"""A placement group's ARN ends in ``:placement-group/<name>`` (Service Authorization
Reference, Amazon EC2 resource types: ``arn:${Partition}:ec2:${Region}:${Account}:
placement-group/${PlacementGroupName}``)."""

Problem = tuple[str, str]
"""What is wrong with a reservation, and the fix."""


@dataclass(frozen=True)
class _Users:
    """The pools that launch into one reservation: its ``capacity`` section (the pools'
    ``capacity``) and the pools, in order."""

    capacity: CapacityConfig
    pools: tuple[Pool, ...]

    @property
    def rid(self) -> str:
        return self.capacity.reservation_id or ""

    @property
    def nodes(self) -> int:
        """The pools' ``nodes.max`` together: what the reservation must hold."""
        return sum(p.nodes.max for p in self.pools)


def _users(config: ClusterConfig) -> list[_Users]:
    """Each reservation the pools launch into, with its pools, in the order of their first
    pool; on-demand pools take none."""
    found: dict[str, list[Pool]] = {}
    for pool in config.node_pools:
        if pool.capacity.type != "on-demand":
            found.setdefault(pool.capacity.reservation_id or "", []).append(pool)
    return [_Users(pools[0].capacity, tuple(pools)) for pools in found.values()]


def _read_reservation(session: Any, rid: str) -> dict[str, Any] | None:
    """The ``CapacityReservation`` ``rid`` (EC2 ``DescribeCapacityReservations``), or None
    when the Region has none of that ID."""
    from botocore.exceptions import ClientError

    with aws_errors("DescribeCapacityReservations"):
        try:
            found = session.client("ec2").describe_capacity_reservations(
                CapacityReservationIds=[rid])["CapacityReservations"]
        except ClientError as err:
            if not error_code(err).startswith("InvalidCapacityReservationId"):
                raise
            found = []
    return found[0] if found else None


def _state_problems(r: dict[str, Any], now: datetime) -> list[Problem]:
    """The reservation is ``active`` (:data:`RESERVATION_STATES`) and its ``EndDate`` (absent
    when unlimited) has not passed; EC2 sets ``expired`` at the end date (botocore's EC2
    model, ``CapacityReservation.EndDate``), so an active reservation past it is ending."""
    state, rid = r["State"], r["CapacityReservationId"]
    again = "reserve the capacity again and set capacity.reservation_id to the new reservation"
    if state != "active":
        meaning = RESERVATION_STATES.get(state, "a state this tool does not know")
        fix = (f"wait until it is active (aws ec2 describe-capacity-reservations "
               f"--capacity-reservation-ids {rid}), then run preflight again"
               if state in _WAIT_STATES else again)
        return [(f"state is {state}: {meaning} (must be active)", fix)]
    end = r.get("EndDate")
    if end is not None and (end if end.tzinfo else end.replace(tzinfo=timezone.utc)) <= now:
        return [(f"its end date {end:%Y-%m-%d %H:%M} UTC has passed", again)]
    return []


def _fit_problems(r: dict[str, Any], config: ClusterConfig, users: _Users) -> list[Problem]:
    """The reservation matches the pools: AZ ID, instance type, kind (a Capacity Block has
    ``ReservationType capacity-block``), and ``TotalInstanceCount`` >= the pools' ``nodes.max``
    together. An instance launches into a reservation only with matching attributes (EC2 user
    guide, "Launch instances into an existing Capacity Reservation")."""
    problems = []
    az, itype, total = r.get("AvailabilityZoneId"), r["InstanceType"], r["TotalInstanceCount"]
    first, cap = users.pools[0], users.capacity
    if az != config.compute_az_id:
        problems.append((f"it is in {az}, compute AZ is {config.compute_az_id}",
                         f"set az_ids to start with {az}"))
    for pool in users.pools:
        if pool.instance_type != itype:
            who = "config" if not config.pools else f"pool {pool.name}"
            problems.append((f"it holds {itype}, {who} uses {pool.instance_type}",
                             f"set {pool.key('instance_type')}: {itype}"))
    kind = r.get("ReservationType", "default")
    if kind != ("capacity-block" if cap.type == "capacity-block" else "default"):
        want = "capacity-block" if kind == "capacity-block" else "capacity-reservation"
        field = capacity_key(config, first, "type")
        problems.append((f"it is a {kind} reservation, {field} is {cap.type}",
                         f"set {field}: {want}"))
    if total < users.nodes:
        problems.append(_too_small(config, users, total))
    return problems


def _too_small(config: ClusterConfig, users: _Users, total: int) -> Problem:
    need = users.nodes
    if len(users.pools) == 1:
        key = users.pools[0].key("nodes.max")
        return (f"it holds {total} instances, {key} is {need}",
                f"lower {key} to {total}, or use a reservation of at least {need} instances")
    names = ", ".join(p.name for p in users.pools)
    return (f"it holds {total} instances, the pools {names} take up to {need} (nodes.max)",
            f"lower their nodes.max to {total} in all, or use a reservation of at least "
            f"{need} instances")


def _reservation_group(r: dict[str, Any]) -> str | None:
    """Name of the cluster placement group the reservation was created in
    (``PlacementGroupArn``), or None."""
    arn = r.get("PlacementGroupArn")
    return arn.split(_PLACEMENT_GROUP_ARN, 1)[-1] if arn else None


def _placement_problems(r: dict[str, Any], config: ClusterConfig, pool: Pool) -> list[Problem]:
    """An On-Demand Capacity Reservation created in a cluster placement group takes only
    launches into that group ("you must also specify the ARN of the cluster placement group
    in which to launch the instance"; placement group ARN is one of the matching attributes),
    and a reservation cannot be moved into or out of a group (EC2 user guide, "Capacity
    Reservations in cluster placement groups",
    https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/cr-cpg.html). So ``pool``'s group
    must be the reservation's: its ``capacity.placement_group_name``. A reservation in no
    group with the stack's own group is allowed (the configuration warns about it)."""
    group, named = _reservation_group(r), pool.capacity.placement_group_name
    if group == named:
        return []
    name_key = capacity_key(config, pool, "placement_group_name")
    nodes = "the nodes" if not config.pools else f"pool {pool.name}'s nodes"
    if group is None:
        return [(f"it is in no placement group, {name_key} is {named}",
                 f"remove {name_key}, or create a reservation in {named} "
                 "(an existing reservation cannot be moved into a placement group)")]
    fix = f"set {name_key}: {group}"
    if named is not None:
        return [(f"it was created in placement group {group}, {name_key} is {named}", fix)]
    if pool.uses_placement_group:
        return [(f"it was created in placement group {group}, the stack would launch {nodes} "
                 "into a new group of its own", fix)]
    if not pool.instance.supports_efa:  # a node without EFA gets no placement group
        return [(f"it was created in placement group {group}, and {pool.instance_type} nodes "
                 "(no EFA) launch into no placement group",
                 "use a reservation created in no placement group")]
    return [(f"it was created in placement group {group}, {nodes} launch into no "
             f"placement group", f"set {pool.key('placement_group')}: true and {name_key}: "
             f"{group}")]


def _check(session: Any, config: ClusterConfig, users: _Users, name: str) -> Check:
    """Whether one reservation can serve its pools: found, ``active``, not past its end date,
    in the compute AZ ID, of their type, of the configured kind, holding their ``nodes.max``
    together, and (``capacity-reservation``) in each pool's placement group.

    ``InstanceMatchCriteria`` is not checked: the launch template targets the reservation
    by ID, which an ``open`` reservation accepts and a ``targeted`` one requires ("only
    accepts instances that have matching attributes ... and explicitly target the Capacity
    Reservation", botocore's EC2 model, ``CapacityReservation.InstanceMatchCriteria``).

    Returns:
        A passed check, or a failed one listing every problem (``; ``) and their fixes.
    """
    rid, cap = users.rid, users.capacity
    r = _read_reservation(session, rid)
    if r is None:
        return Check(name, False, f"{rid} not found in {config.region}",
                     f"check {capacity_key(config, users.pools[0], 'reservation_id')} and the "
                     "Region (az_ids)")
    problems = _state_problems(r, datetime.now(timezone.utc)) + _fit_problems(r, config, users)
    if cap.type == "capacity-reservation":
        problems += [p for pool in users.pools for p in _placement_problems(r, config, pool)]
    if problems:
        return Check(name, False, f"{rid}: " + "; ".join(dict.fromkeys(p for p, _ in problems)),
                     "; ".join(dict.fromkeys(fix for _, fix in problems)))
    group = _reservation_group(r)
    return Check(name, True, f"{rid} active in {config.compute_az_id}: "
                 f"{r['TotalInstanceCount']} x {r['InstanceType']}"
                 + (f" in placement group {group}" if group else ""))


def capacity_checks(session: Any, config: ClusterConfig) -> list[Check]:
    """One check per reservation the pools launch into (:func:`_check`), each failing alone
    when AWS cannot answer; one passed check when every pool is on-demand. Each is named
    ``capacity``, with ``pools`` ``capacity <pool>[, <pool>...]``.

    Args:
        session: boto3 session in the configuration's Region.
        config: validated configuration.
    """
    reservations = _users(config)
    if not reservations:
        return [Check(CAPACITY_CHECK, True, "on-demand (no reservation configured)")]
    checks = []
    for users in reservations:
        name = (CAPACITY_CHECK if not config.pools else
                f"{CAPACITY_CHECK} {', '.join(p.name for p in users.pools)}")
        checks.append(guarded(name, _check, session, config, users, name))
    return checks
