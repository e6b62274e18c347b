"""Typed progress events: the engine's only way of talking to its callers."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum


class Phase(StrEnum):
    CONNECTING = "connecting"
    PREPARING = "preparing"
    LOADING = "loading"
    FINISHING = "finishing"
    DONE = "done"
    FAILED = "failed"
    CANCELLED = "cancelled"


@dataclass(frozen=True)
class Progress:
    phase: Phase
    rows_read: int = 0
    rows_loaded: int = 0
    rows_rejected: int = 0
    bytes_read: int = 0  # bytes of the source consumed so far
    bytes_total: int = 0  # size of the source (0 when unknown)
    elapsed: float = 0.0  # seconds since the job started
    message: str = ""

    @property
    def rows_per_s(self) -> float:
        return self.rows_loaded / self.elapsed if self.elapsed > 0 else 0.0

    @property
    def mb_per_s(self) -> float:
        return self.bytes_read / 1e6 / self.elapsed if self.elapsed > 0 else 0.0

    @property
    def fraction(self) -> float | None:
        if not self.bytes_total:
            return None
        return min(1.0, self.bytes_read / self.bytes_total)

    @property
    def eta_s(self) -> float | None:
        frac = self.fraction
        if not frac or frac <= 0 or self.elapsed <= 0:
            return None
        return self.elapsed * (1 - frac) / frac


def human_seconds(s: float | None) -> str:
    """12:05 or 1:02:03; --:-- when unknown."""
    if s is None:
        return "--:--"
    s = int(s)
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60:02d}:{s % 60:02d}"


ProgressCallback = Callable[[Progress], None]
LogCallback = Callable[[str], None]
