"""FSx for Lustre: ``fsx`` and its data repository association."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import field_validator
from pydantic_core import PydanticCustomError

from trn_ultracluster.config.model.base import FrozenModel

__all__ = ["DataRepositoryConfig", "FsxConfig"]


class DataRepositoryConfig(FrozenModel):
    """An FSx data repository association (DRA) that links a file system path to S3.

    Attributes:
        s3_path: ``s3://bucket/prefix/``; default ``None`` links the stack's data bucket.
        file_system_path: the part of the file system linked to S3: ``/`` (default) links
            the whole file system, so everything written to it is exported (and, with
            ``data_removal_policy: retain``, kept after ``cdk destroy``); a directory such
            as ``/s3`` links only that directory (no ``.`` or ``..`` levels, no trailing
            ``/``).
        auto_import: new and changed S3 objects appear in the file system.
        auto_export: new and changed files (checkpoints) are written back to S3.
    """

    s3_path: str | None = None
    file_system_path: str = "/"
    auto_import: bool = True
    auto_export: bool = True


_FLOAT_VERSIONS = {float(v): v for v in ("2.10", "2.12", "2.15")}


class FsxConfig(FrozenModel):
    """FSx for Lustre shared storage.

    Default: PERSISTENT_2, 1200 GiB, 250 MB/s/TiB, LZ4 compression, Lustre 2.15, linked to
    the stack's data bucket over the whole file system (``/``), EFA ``auto``.

    Attributes:
        deployment_type: ``PERSISTENT_2`` (default), ``PERSISTENT_1``, ``SCRATCH_2`` or
            ``SCRATCH_1`` (FSx for Lustre deployment types; the rules say which capacities,
            throughputs and Lustre versions each takes).
        storage_capacity_gib: the file system's size, GiB (SSD: 1200, 2400, then steps of
            2400; of 3600 on SCRATCH_1). An EFA-enabled file system has larger steps
            (docs/lustre-over-efa.md). Above the account's default quota (100,800 GiB of
            Persistent_2 storage) it gives a warning.
        per_unit_storage_throughput: MB/s per TiB of storage on the persistent types
            (PERSISTENT_2: 125, 250, 500 or 1000; PERSISTENT_1: 50, 100 or 200); ``null`` on
            the scratch types.
        data_compression: ``LZ4`` (default) or ``NONE``.
        lustre_version: ``2.15`` (default), ``2.12`` or ``2.10`` (not on PERSISTENT_2); set
            when the file system is created.
        data_repository: the link of the file system to S3 (a data repository association);
            ``null``: no link, which needs ``data_removal_policy: destroy`` (without it
            nothing would export the file system before ``cdk destroy`` deletes it).
        efa: ``auto`` (default), ``true`` or ``false`` (not the YAML 1.1 words ``yes``,
            ``no``, ``on``, ``off``): whether the file system is EFA-enabled and the nodes
            reach it over EFA (:mod:`trn_ultracluster.config.fsx_efa`). ``true`` requires it
            (a rule of the file system or the client type that does not hold is an error,
            and a node whose Lustre traffic does not go over EFA is an error on the node:
            what it then does depends on the orchestrator, docs/lustre-over-efa.md; past a
            node-count limit, a warning and a fall back to TCP instead), ``false`` never,
            ``auto`` where the file system's own rules hold and its throughput is above the
            10 GB/s from which AWS recommends it (node counts and ``instance_type`` never
            decide it). Set when the file system is created: a change replaces the file
            system (docs/lustre-over-efa.md).
    """

    deployment_type: Literal["SCRATCH_1", "SCRATCH_2", "PERSISTENT_1", "PERSISTENT_2"] = (
        "PERSISTENT_2"
    )
    storage_capacity_gib: int = 1200
    per_unit_storage_throughput: int | None = 250
    data_compression: Literal["NONE", "LZ4"] = "LZ4"
    lustre_version: Literal["2.10", "2.12", "2.15"] = "2.15"
    data_repository: DataRepositoryConfig | None = DataRepositoryConfig()
    efa: bool | Literal["auto"] = "auto"

    @property
    def throughput_mb_s(self) -> float | None:
        """Throughput of the whole file system, MB/s: capacity (TiB) x
        ``per_unit_storage_throughput`` (FSx API reference, ``LustreConfiguration``);
        ``None`` for the scratch types, which have no per-unit setting."""
        if self.per_unit_storage_throughput is None:
            return None
        return self.storage_capacity_gib / 1024 * self.per_unit_storage_throughput

    @field_validator("efa", mode="before")
    @classmethod
    def _efa_setting(cls, value: Any) -> Any:
        """``true``, ``false`` or ``auto`` only (also as the text ``-c fsx.efa=...`` gives):
        not the ``yes``/``on``/``1`` that lax pydantic would read as true, and one error
        instead of one per member of the union."""
        if isinstance(value, str) and value.lower() in ("true", "false"):
            return value.lower() == "true"
        if isinstance(value, bool) or value == "auto":
            return value
        raise PydanticCustomError("efa_setting", "Input should be true, false or 'auto'")

    @field_validator("lustre_version", mode="before")
    @classmethod
    def _version_as_text(cls, value: Any) -> Any:
        """YAML reads ``2.10`` as the float 2.1: map the floats of the known versions back
        to their text, and show any other float as written (``2.150001`` is not 2.15)."""
        if isinstance(value, float):
            return _FLOAT_VERSIONS.get(value, repr(value))
        return value
