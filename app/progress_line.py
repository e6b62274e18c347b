"""The one-line progress display of a headless load on a terminal."""

from __future__ import annotations

import sys
from typing import TextIO

from core.events import Phase, Progress, human_seconds

__all__ = ["ProgressLine", "format_progress", "human_seconds"]


def format_progress(p: Progress) -> str:
    pct = f"{p.fraction * 100:5.1f}%" if p.fraction is not None else "     "
    parts = [
        f"{p.phase.value:<9}",
        pct,
        f"{p.rows_loaded:>12,} rows",
        f"{p.rows_per_s:>11,.0f} rows/s",
        f"{p.mb_per_s:7.1f} MB/s",
        f"ETA {human_seconds(p.eta_s)}",
    ]
    if p.rows_rejected:
        parts.append(f"{p.rows_rejected:,} rejected")
    return "  ".join(parts)


class ProgressLine:
    """Rewrites one terminal line; silent when the stream is not a terminal."""

    def __init__(self, stream: TextIO | None = None, enabled: bool | None = None) -> None:
        self.stream = stream or sys.stderr  # looked up now: a redirected stderr is the one to write to
        self.enabled = self.stream.isatty() if enabled is None else enabled
        self._shown = False

    def __call__(self, p: Progress) -> None:
        if not self.enabled:
            return
        self.stream.write("\r" + format_progress(p) + "\x1b[K")
        self.stream.flush()
        self._shown = True
        if p.phase in (Phase.DONE, Phase.FAILED, Phase.CANCELLED):
            self.end()

    def log(self, message: str) -> None:
        """A message on its own line (retries, resuming), the progress line redrawn after it."""
        if self._shown:
            self.stream.write("\r\x1b[K")
        self.stream.write(message + "\n")
        self.stream.flush()

    def end(self) -> None:
        if self._shown:
            self.stream.write("\n")
            self.stream.flush()
            self._shown = False
