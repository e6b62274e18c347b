"""The interface every source reader implements."""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import polars as pl

from core.errors import SourceChanged, SourceError
from core.spec import SourceOptions


@dataclass(frozen=True)
class BadRecord:
    """A source record that cannot become a row (ragged, undecodable, NUL byte, broken quoting)."""

    row: int  # 0-based index in the source: bad records occupy row numbers like good ones
    line: int | None  # 1-based line where the record starts
    record: str  # the record's text as found (invalid bytes backslash-escaped)
    reason: str
    column: str = ""  # the column whose value made it bad, when one did (core.relative_dates)
    value: str = ""

    def described(self) -> str:
        """The reason, with the column and value when known (an abort's message)."""
        return f"column {self.column!r}, value {self.value[:60]!r}: {self.reason}" if self.column else self.reason


@dataclass(frozen=True)
class Batch:
    """A bounded slice of the source, in source column names.

    The frame's rows are the contiguous source rows first_row .. first_row + height - 1.
    `bad` holds malformed records that come just before them (rows below first_row, after
    the previous batch), so first_row + height is always where the next batch starts.
    """

    frame: pl.DataFrame
    first_row: int  # 0-based index of the frame's first data row in the source
    bytes_read: int  # source position after this batch, for progress
    lines: list[int] | None = None  # 1-based start line of each row, when cheap to know
    bad: tuple[BadRecord, ...] = ()


@dataclass(frozen=True)
class RawChunk:
    """Whole CSV records as UTF-8 bytes, header removed: COPY can take them as they are."""

    data: bytes
    bytes_read: int
    odd: bool = False  # may hold a bare quote: only the field-aware reader reads it as written
    records: int = -1  # how many records `data` holds, when counted already (-1: not counted)
    lines: int = -1  # how many newlines it holds, counted with the records (-1: not counted)
    refused: bool = False  # holds a value the client refuses (core.relative_dates): the parser sets its row aside
    # Looked at whole for a quoted field that swallowed records, and none did (CsvSource.raw_chunks
    # refuses such a chunk): its parse need not look again.
    unswallowed: bool = False
    ends: Any = field(default=None, compare=False, repr=False)  # numpy: each record's newline, when counted so


@dataclass(frozen=True)
class ParseLater:
    """Whole CSV records the reader leaves for the encoding stage to parse (core.load.warm_start):
    `row`, `line` and `offset` say where they start, so their rows are numbered as batches() would."""

    chunk: RawChunk
    row: int
    line: int
    offset: int


@dataclass(frozen=True)
class Fingerprint:
    size: int
    mtime_ns: int


class ValueGuard(Protocol):
    """Values the client refuses before they are sent (core.relative_dates.RelativeDates, which
    the plan sets on the source): the sources ask it without importing it."""

    def apply(self, source: Source, batches: Iterator[Batch], with_bad: bool) -> Iterator[Batch]: ...

    def check(self, source: Source, batch: Batch) -> None: ...

    def may_hold(self, data: bytes | memoryview, *, import_polars: bool = ...) -> bool: ...

    def file_may_hold(self, path: str | Path, block: int = ...) -> bool: ...

    def raw_refused(self, source: Source, data: bytes) -> bool: ...


class Source(ABC):
    """Reads one file. Column names are fixed at construction; batches stream."""

    format: str = ""
    refuse: ValueGuard | None = None  # set by the plan: values refused before they are sent

    def __init__(self, options: SourceOptions) -> None:
        self.options = options
        self.path = Path(options.path)
        try:
            st = self.path.stat()
        except FileNotFoundError:
            raise SourceError("file not found", path=str(self.path)) from None
        except OSError as exc:
            raise SourceError(f"cannot read the file: {exc.strerror}", path=str(self.path)) from None
        if self.path.is_dir():
            raise SourceError("is a folder, not a file", path=str(self.path))
        self.fingerprint = Fingerprint(st.st_size, st.st_mtime_ns)

    @property
    def size(self) -> int:
        return self.fingerprint.size

    @abstractmethod
    def columns(self) -> list[str]: ...

    @abstractmethod
    def batches(self, batch_rows: int, skip_rows: int = 0) -> Iterator[Batch]: ...

    def batches_with_bad(self, batch_rows: int, skip_rows: int = 0) -> Iterator[Batch]:
        """Like batches(), but malformed records come back in Batch.bad instead of raising.

        Only the `skip` policy asks for them; sources whose records cannot be malformed
        (typed formats) have none.
        """
        return self.batches(batch_rows, skip_rows)

    def load_batches(self, batch_rows: int, skip_rows: int = 0, *, with_bad: bool = False) -> Iterator[Batch]:
        """What a load sends: batches(), or batches_with_bad() for the skip policy, with the rows
        whose values the client refuses (`refuse`) made bad records too (raised without with_bad)."""
        if self.refuse is None:
            return (self.batches_with_bad if with_bad else self.batches)(batch_rows, skip_rows)
        return self.refuse.apply(self, self.batches_with_bad(batch_rows, skip_rows), with_bad)

    def sample(self, rows: int = 200) -> pl.DataFrame:
        """The first `rows` good rows (malformed records are passed over)."""
        frames: list[pl.DataFrame] = []
        have = 0
        for batch in self.batches_with_bad(rows):
            frames.append(batch.frame)
            have += batch.frame.height
            if have >= rows:
                break
        if not have:
            return pl.DataFrame({c: pl.Series(c, [], dtype=pl.String) for c in self.columns()})
        frame = pl.concat(frames, how="vertical") if len(frames) > 1 else frames[0]
        return frame.head(rows)

    def dtypes(self) -> dict[str, pl.DataType]:
        """Native column types; text sources report String for every column."""
        return {c: pl.String() for c in self.columns()}

    def locate(self, row: int) -> tuple[int | None, str | None]:
        """(1-based line, original text) of data row `row`, when the format has lines."""
        return None, None

    def known_rows(self) -> int | None:
        """The exact number of rows when it costs no reading of the data (metadata, a sheet
        already in memory); None when only reading the file through would tell."""
        return None

    def check_unchanged(self) -> None:
        """Raise SourceChanged when the file vanished or changed since it was opened."""
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            raise SourceChanged(f"{self.path}: the file vanished during the load") from None
        if (st.st_size, st.st_mtime_ns) != (self.fingerprint.size, self.fingerprint.mtime_ns):
            raise SourceChanged(f"{self.path}: the file changed during the load")


def rebatch(frames: Iterator[tuple[pl.DataFrame, int]], batch_rows: int, skip_rows: int) -> Iterator[Batch]:
    """Re-slice frames of any size into frames of exactly batch_rows (the last may be short).

    `frames` yields (frame, bytes_read_after_it). Rows before `skip_rows` are dropped.
    """
    return rebatch_parts(((frame, pos, ()) for frame, pos in frames), batch_rows, skip_rows)


def rebatch_parts(
    parts: Iterator[tuple[pl.DataFrame, int, Sequence[BadRecord]]], batch_rows: int, skip_rows: int,
    start: tuple[int, int] = (0, 0),
) -> Iterator[Batch]:
    """rebatch() for parts that also carry malformed records.

    A part holds frame.height + len(bad) consecutive source rows; each bad record's `row`
    says where it sits among them and the frame's rows fill the others, in order. A bad
    record ends the batch being filled (its frame must stay contiguous) and opens the next.
    `start` is the source row and position of the first part (parts that continue a source
    whose beginning went elsewhere: core.load.warm_start).
    """
    r = _Rebatcher(batch_rows, skip_rows)
    r.first = r.next_row = start[0]
    r.pos = start[1]
    for frame, pos, bad in parts:
        r.enter_part(pos, frame.height + len(bad))
        if not bad:
            yield from r.good(frame)
            continue
        taken = 0
        for rec in sorted(bad, key=lambda b: b.row):
            before = rec.row - r.next_row  # good rows of this part ahead of the record
            if before > 0:
                yield from r.good(frame.slice(taken, before))
                taken += before
            yield from r.bad(rec)
        if taken < frame.height:
            yield from r.good(frame.slice(taken))
        elif r.empty is None:
            r.empty = frame.clear()
    yield from r.finish()


class _Rebatcher:
    def __init__(self, batch_rows: int, skip_rows: int) -> None:
        self.batch_rows = max(1, batch_rows)
        self.skip_rows = skip_rows
        self.pending: list[pl.DataFrame] = []
        self.pending_rows = 0
        self.pending_bad: list[BadRecord] = []
        self.first = 0  # source row of the first pending frame row
        self.next_row = 0  # source row of the next row to arrive
        self.pos = 0  # source position after the current part
        # Where the current part starts (position, source row) and its rows: a batch's position
        # is interpolated within it, so progress moves batch by batch and not part by part (a
        # 4 MB part holds some 50,000 rows; a slow strategy's first batch of 1,000 showed 80%).
        self.part_pos = 0
        self.part_row = 0
        self.part_rows = 0
        self.empty: pl.DataFrame | None = None

    def enter_part(self, pos: int, rows: int) -> None:
        self.part_pos, self.pos = self.pos, pos
        self.part_row, self.part_rows = self.next_row, rows

    def _at(self, row: int) -> int:
        """The source position just before `row`, estimated within the current part."""
        if self.part_rows <= 0 or row >= self.part_row + self.part_rows:
            return self.pos
        done = max(0, row - self.part_row) / self.part_rows
        return self.part_pos + int((self.pos - self.part_pos) * done)

    def good(self, frame: pl.DataFrame) -> Iterator[Batch]:
        if self.empty is None:
            self.empty = frame.clear()
        if self.next_row + frame.height <= self.skip_rows:
            self.next_row += frame.height
            return
        if self.next_row < self.skip_rows:
            frame = frame.slice(self.skip_rows - self.next_row)
            self.next_row = self.skip_rows
        if not frame.height:
            return
        if not self.pending_rows:
            self.first = self.next_row
        self.next_row += frame.height
        self.pending.append(frame)
        self.pending_rows += frame.height
        while self.pending_rows >= self.batch_rows:
            whole = pl.concat(self.pending, how="vertical") if len(self.pending) > 1 else self.pending[0]
            out, rest = whole.slice(0, self.batch_rows), whole.slice(self.batch_rows)
            yield Batch(out, self.first, self._at(self.first + self.batch_rows), bad=self._take_bad())
            self.first += self.batch_rows
            self.pending, self.pending_rows = ([rest], rest.height) if rest.height else ([], 0)

    def bad(self, rec: BadRecord) -> Iterator[Batch]:
        self.next_row += 1
        if rec.row < self.skip_rows:
            return
        if self.pending_rows:
            yield self._flush()
        self.pending_bad.append(rec)

    def finish(self) -> Iterator[Batch]:
        if self.pending_rows:
            yield self._flush()
        elif self.pending_bad:
            assert self.empty is not None
            yield Batch(self.empty, self.next_row, self._at(self.next_row), bad=self._take_bad())

    def _flush(self) -> Batch:
        whole = pl.concat(self.pending, how="vertical") if len(self.pending) > 1 else self.pending[0]
        batch = Batch(whole, self.first, self._at(self.first + whole.height), bad=self._take_bad())
        self.pending, self.pending_rows = [], 0
        return batch

    def _take_bad(self) -> tuple[BadRecord, ...]:
        out = tuple(self.pending_bad)
        self.pending_bad = []
        return out
