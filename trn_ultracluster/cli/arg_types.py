"""argparse ``type=`` functions of the job CLI's options: each turns the option's text into a
value or raises :class:`argparse.ArgumentTypeError`, whose message argparse prints after the
option's name (``argument --timeout: must be more than 0 seconds, got 0``)."""

from __future__ import annotations

import argparse
from collections.abc import Callable

__all__ = ["integer_from", "positive_seconds", "positive_usd", "ratio"]


def integer_from(minimum: int) -> Callable[[str], int]:
    """argparse type: an integer >= ``minimum``."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be an integer, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {value}")
        return value

    return parse


def _number(text: str, what: str) -> float:
    """``text`` as a float; :class:`argparse.ArgumentTypeError` ("must be ``what``") if it is
    not a number."""
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be {what}, got {text!r}") from None


def positive_seconds(text: str) -> float:
    """argparse type: seconds > 0."""
    value = _number(text, "a number of seconds")
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be more than 0 seconds, got {text}")
    return value


def ratio(text: str) -> float:
    """argparse type: a fraction in (0, 1]."""
    value = _number(text, "a number")
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"must be more than 0 and at most 1, got {text}")
    return value


def positive_usd(text: str) -> float:
    """argparse type: a budget in USD per hour, a finite number above 0."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} must be a number of USD above 0, e.g. 50")
    return value
