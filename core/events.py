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
    # A resumed run starts its counters where the earlier run's commits left them; its rates and
    # ETA count only what this run did in its own seconds.
    loaded_before: int = 0
    bytes_before: int = 0

    @property
    def rows_per_s(self) -> float:
        """This run's rows loaded per second (a resumed run's earlier rows took none of its time)."""
        return max(self.rows_loaded - self.loaded_before, 0) / self.elapsed if self.elapsed > 0 else 0.0

    @property
    def mb_per_s(self) -> float:
        return max(self.bytes_read - self.bytes_before, 0) / 1e6 / self.elapsed if self.elapsed > 0 else 0.0

    @property
    def fraction(self) -> float | None:
        if not self.bytes_total:
            return None
        return min(1.0, self.bytes_read / self.bytes_total)

    @property
    def eta_s(self) -> float | None:
        frac = self.fraction
        done = self.bytes_read - self.bytes_before  # this run's bytes, in this run's seconds
        if not frac or frac <= 0 or self.elapsed <= 0 or done <= 0:
            return None
        return self.elapsed * max(self.bytes_total - self.bytes_read, 0) / done


def human_seconds(s: float | None) -> str:
    """12:05 or 1:02:03; --:-- when unknown."""
    if s is None:
        return "--:--"
    s = int(s)
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60:02d}:{s % 60:02d}"


ProgressCallback = Callable[[Progress], None]
LogCallback = Callable[[str], None]
