"""Error types with messages that name the flag or field, the bad value and what is allowed.

Every error here is a user's (or the cluster's) problem, never a bug: ``python -m trn_train``
prints ``error: <message>`` on stderr, no traceback, and exits with the class's
``exit_code``:

====  ==================================================================================
code  meaning
====  ==================================================================================
0     done
2     bad input: a flag (:class:`InputError`), the prepared data (:class:`DataError`), no
      usable checkpoint (:class:`CheckpointError`), processes that disagree about the job
      (:class:`LaunchError`); fix it and run again
3     training diverged (:class:`TrainingDiverged`): non-finite loss, gradient norm or
      weights; the last good checkpoint is kept, change the hyperparameters and resume
====  ==================================================================================

(argparse itself also exits 2 for unknown flags and wrong types.)
"""

from __future__ import annotations


class TrnTrainError(Exception):
    """Base class of every error this package raises on purpose.

    Attributes:
        exit_code: the process exit status ``python -m trn_train`` returns for it.
    """

    exit_code = 2


class InputError(TrnTrainError, ValueError):
    """A flag, config field or input file has a bad value.

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


class CheckpointError(TrnTrainError):
    """A checkpoint cannot be resumed from (a file missing, truncated, corrupt or unreadable),
    or no checkpoint of the run can.

    Attributes:
        path: the checkpoint directory (``None`` when the error is about all of them).
        file: the offending file's name inside it, if one.
    """

    def __init__(self, message: str, path: object = None, file: str | None = None) -> None:
        self.path = path
        self.file = file
        super().__init__(message)


class LaunchError(TrnTrainError):
    """The processes of the job disagree about its shape (e.g. the XLA runtime's world size
    is not torchrun's ``WORLD_SIZE``), so training would be wrong, not just slow."""


class TrainingDiverged(TrnTrainError):
    """The loss, gradient norm or weights became non-finite; training stopped before writing a
    checkpoint of them."""

    exit_code = 3
