"""Error types with messages that name the flag or field, the bad value and what is allowed."""

from __future__ import annotations


class TrnTrainError(Exception):
    """Base class of every error this package raises on purpose (the CLI prints it, exit 2)."""


class ConfigError(TrnTrainError, ValueError):
    """A flag or config field has a bad value.

    The message reads ``<field> must be <allowed>, got: <value>`` so a user can fix it
    without reading code.
    """

    def __init__(self, field: str, value: object, allowed: str, hint: str = "") -> None:
        self.field = field
        self.value = value
        self.allowed = allowed
        msg = f"{field} must be {allowed}, got: {value!r}"
        if hint:
            msg += f" ({hint})"
        super().__init__(msg)


class DataError(TrnTrainError):
    """The prepared data directory is missing, incomplete or corrupt.

    Attributes:
        shard: file name of the offending shard, or ``None`` when the problem is not one shard.
    """

    def __init__(self, message: str, shard: str | None = None) -> None:
        self.shard = shard
        super().__init__(message)
