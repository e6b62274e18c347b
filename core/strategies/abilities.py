"""What some strategies can do beyond the Strategy interface: typing Protocols, one signature each.

The load asks `isinstance(strategy, Ability)`, never hasattr. The ClassVar flags of Strategy
(streams_raw_csv, warms_with_raw_csv, ...) say what a class can do before one is built, for
auto and the job's choices; these are the methods and settings an open strategy offers.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import Protocol, runtime_checkable


@runtime_checkable
class TakesRawCsv(Protocol):
    """COPY of the CSV file's own bytes, as they are (copy-csv, parallel-copy); `flush` ends the
    open write (core.first_bad: the rows ahead of a malformed record are weighed first)."""

    def write_raw(self, data: bytes, lines: int = -1) -> None: ...

    def flush(self) -> None: ...


@runtime_checkable
class WarmStarts(Protocol):
    """Sends the file's first records as they are while its encoder loads (copy-binary;
    core.load.warm_start): `ready` is set once the encoder is built."""

    ready: threading.Event

    @property
    def sending_raw(self) -> bool: ...

    def write_warm(self, data: bytes, records: int) -> None: ...

    def typed(self, prepared: object) -> bool: ...


@runtime_checkable
class ReadsByteRanges(Protocol):
    """Streams that read whole-record byte ranges of the file themselves (parallel-copy);
    each range (lo, hi, records, plain) comes with its records, counted by the cutter that refused
    any range whose quote swallowed whole records, and whether it holds no quote and no backslash;
    `progress(records, bytes)` is told what they read and sent so far."""

    def feed_raw(self, ranges: Iterable[tuple[int, int, int, bool]], path: str,
                 progress: Callable[[int, int], None]) -> None: ...


@runtime_checkable
class Abortable(Protocol):
    """Ends an open COPY before its savepoint is rolled back, or the server waits for it."""

    def abort(self) -> None: ...


@runtime_checkable
class CountsRows(Protocol):
    """Knows how many rows the server took, to check against the rows sent before a commit."""

    @property
    def rows_written(self) -> int: ...


@runtime_checkable
class TakesLines(Protocol):
    """Wants each batch's source lines (a script's statements replayed as they were grouped)."""

    lines: list[int] | None


@runtime_checkable
class ReplaysOnConflict(Protocol):
    """Replays a script's INSERT ... ON CONFLICT DO NOTHING as such."""

    on_conflict: bool


@runtime_checkable
class TwoPhaseCommits(Protocol):
    """All or nothing across its connections by two-phase commit, when the job says so."""

    two_phase: bool
