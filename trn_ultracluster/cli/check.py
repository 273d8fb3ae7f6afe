"""One ``preflight`` result (:class:`Check`) and the guard that turns an AWS call that could not
be answered into a failed check, so that the other checks still run."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from trn_ultracluster.cli.errors import CliError

__all__ = ["Check", "guarded"]


@dataclass(frozen=True)
class Check:
    """One preflight result: name, pass/fail, what was found, the fix when failed, and a
    warning that does not fail it."""

    name: str
    ok: bool
    detail: str
    fix: str = ""
    warning: str = ""


def guarded(name: str, check: Callable[..., Check], *args: Any) -> Check:
    """``check(*args)``, or a failed :class:`Check` named ``name`` with the error when AWS could
    not answer (denied, throttled, a service error: a :class:`CliError` from
    :func:`~trn_ultracluster.cli.aws.aws_errors`)."""
    try:
        return check(*args)
    except CliError as err:
        return Check(name, False, err.message, err.fix)
