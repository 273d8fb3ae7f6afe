"""A stand-in for FSx for Lustre's data repository association with automatic import, for
tests that run jobs for real on this machine: objects written to a (moto) S3 bucket appear
as files under a directory that stands in for the FSx mount, a little later, as the
association imports new objects (FSx for Lustre user guide, "Automatically import updates
from your S3 bucket"). Each object is written to a temporary name and renamed, so a reader
never sees half of one (what a real import guarantees is not documented; the node script
checks the archive's SHA-256 anyway).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

POLL_S = 0.3


@contextmanager
def auto_import(s3: Any, bucket: str, mount: Path, prefix: str = "",
                delay_s: float = 0.5) -> Iterator[list[str]]:
    """While open, copy every new object of ``bucket`` (below ``prefix``) to
    ``mount/<key>``, each first seen at least ``delay_s`` earlier; yields the list of
    imported keys (in order)."""
    imported: list[str] = []
    seen: dict[str, int] = {}
    stop = threading.Event()

    def sync() -> None:
        ticks_needed = max(1, round(delay_s / POLL_S))
        while not stop.wait(POLL_S):
            pages = s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
            for page in pages:
                for item in page.get("Contents", []):
                    key = item["Key"]
                    if key in imported:
                        continue
                    seen[key] = seen.get(key, 0) + 1
                    if seen[key] < ticks_needed:
                        continue
                    target = mount / key
                    target.parent.mkdir(parents=True, exist_ok=True)
                    partial = target.with_name(target.name + ".importing")
                    partial.write_bytes(s3.get_object(Bucket=bucket, Key=key)["Body"].read())
                    partial.rename(target)
                    imported.append(key)

    thread = threading.Thread(target=sync, name="fake-dra", daemon=True)
    thread.start()
    try:
        yield imported
    finally:
        stop.set()
        thread.join(timeout=10)
