"""The native backend's model and optimizer state in torch.distributed.checkpoint (DCP) format.

The state is ``get_state_dict(model, optimizer)`` (``torch.distributed.checkpoint.state_dict``):
keys are the eager model's parameter names (no ``module.`` of DDP, no FSDP2 wrapper names), and
under FSDP2 the values are the sharded DTensors, so each rank writes only its shards
(``dcp.save``: ``__<rank>_<n>.distcp`` per rank, ``.metadata`` by rank 0, the file names of
DCP's ``FileSystemWriter``). ``dcp.load`` reads them into the current model's layout: another
world size, or DDP instead of FSDP2, reshards on load.

Only the native backend imports this module; the xla path never imports DCP.
"""

from __future__ import annotations

import contextlib
import warnings
from pathlib import Path
from typing import Any, Iterator

import torch
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict

from trn_train.checkpoint import DCP_DIR, Checkpoint, FileEntries, hash_files
from trn_train.errors import CheckpointError

METADATA = ".metadata"
"""The global metadata file DCP's ``FileSystemWriter`` writes on the coordinator (rank 0)."""


@contextlib.contextmanager
def _single_process_is_meant() -> Iterator[None]:
    """Silence DCP's warning that, without a process group (one DDP process), it "assumes the
    intent is to save/load in a single process": that is the intent."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="torch.distributed is disabled, unavailable or uninitialized")
        yield


def write(tmp: Path, rank: int, model: torch.nn.Module, optimizer: torch.optim.Optimizer) -> FileEntries:
    """Save the model and optimizer state into ``tmp/dcp`` (collective: every rank calls it).

    Returns:
        The manifest entries (names relative to ``tmp``) of the files this rank wrote, read
        back and hashed after ``dcp.save`` returned (which it does on every rank only after
        rank 0 wrote ``.metadata``).
    """
    model_state, optim_state = get_state_dict(model, optimizer)
    out = tmp / DCP_DIR
    with _single_process_is_meant():
        dcp.save({"model": model_state, "optim": optim_state}, checkpoint_id=out)
    names = sorted(p.name for p in out.glob(f"__{rank}_*.distcp"))
    if rank == 0:
        names.append(METADATA)
    return hash_files(tmp, [f"{DCP_DIR}/{n}" for n in names])


def load(checkpoint: Checkpoint, model: torch.nn.Module, optimizer: torch.optim.Optimizer) -> None:
    """Load the model and optimizer state of ``checkpoint`` (collective) into the (wrapped)
    model and its optimizer, resharding to this run's world size and data parallelism.

    The ranks verified the files against the manifest before (each a share of them).

    Raises:
        CheckpointError: DCP or ``set_state_dict`` cannot read or apply the verified files
            (e.g. written by an incompatible torch version).
    """
    try:
        model_state, optim_state = get_state_dict(model, optimizer)
        state: dict[str, Any] = {"model": model_state, "optim": optim_state}
        with _single_process_is_meant():
            dcp.load(state, checkpoint_id=checkpoint.path / DCP_DIR)
        set_state_dict(model, optimizer, model_state_dict=state["model"], optim_state_dict=state["optim"])
    except Exception as e:  # noqa: BLE001 - any failure here means "cannot resume from it"
        raise CheckpointError(f"{checkpoint.path}: {DCP_DIR}/ cannot be loaded: {type(e).__name__}: {e}",
                              path=checkpoint.path, file=DCP_DIR) from None
