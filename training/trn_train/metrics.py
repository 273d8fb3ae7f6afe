"""Metrics: JSON lines on stdout, TensorBoard event files and a tqdm bar, all on rank 0."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any


class MetricsLogger:
    """Write one JSON object per line to stdout and numeric fields to TensorBoard.

    Args:
        enabled: False on ranks other than 0 (everything becomes a no-op).
        tensorboard_dir: where ``SummaryWriter`` writes event files (``None``: no TensorBoard).
        total_steps: length of the progress bar (stderr; ``progress=False`` hides it);
            :meth:`start_at` moves it to a resumed run's first step.
    """

    def __init__(self, enabled: bool, tensorboard_dir: Path | None, total_steps: int,
                 progress: bool = True) -> None:
        self.enabled = enabled
        self._tb = None
        self._bar = None
        if not enabled:
            return
        if tensorboard_dir is not None:
            from torch.utils.tensorboard import SummaryWriter

            self._tb = SummaryWriter(log_dir=str(tensorboard_dir))
        if progress:
            from tqdm import tqdm

            self._bar = tqdm(total=total_steps, unit="step", desc="train",
                             file=sys.stderr, dynamic_ncols=True)

    def event(self, name: str, **fields: Any) -> None:
        """Print ``{"event": name, **fields}`` as one JSON line (rank 0 only)."""
        if not self.enabled:
            return
        clean = {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in fields.items()}
        line = json.dumps({"event": name, **clean}, sort_keys=False, default=str)
        if self._bar is not None:
            self._bar.clear()
        print(line, flush=True)
        if self._bar is not None:
            self._bar.refresh()

    def scalars(self, step: int, values: dict[str, float]) -> None:
        """Log numeric ``values`` at ``step`` to TensorBoard under ``train/<name>``."""
        if not self.enabled or self._tb is None:
            return
        for k, v in values.items():
            if isinstance(v, (int, float)) and math.isfinite(v):
                self._tb.add_scalar(f"train/{k}", v, step)

    def start_at(self, step: int) -> None:
        """Show the progress bar at ``step`` of its total (a resumed run)."""
        if self._bar is not None:
            self._bar.n = step
            self._bar.refresh()

    def advance(self, steps: int = 1, **postfix: Any) -> None:
        """Move the progress bar ``steps`` forward; ``postfix`` (e.g. ``loss="2.31"``) is shown
        after it until the next call with a postfix."""
        if self._bar is not None:
            if postfix:
                self._bar.set_postfix(postfix, refresh=False)
            self._bar.update(steps)

    def close(self) -> None:
        """Flush TensorBoard and close the bar."""
        if self._tb is not None:
            self._tb.flush()
            self._tb.close()
        if self._bar is not None:
            self._bar.close()
