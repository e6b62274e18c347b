"""The interface every source reader implements."""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from core.errors import SourceChanged, SourceError
from core.spec import SourceOptions


@dataclass(frozen=True)
class Batch:
    """A bounded slice of the source, in source column names."""

    frame: pl.DataFrame
    first_row: int  # 0-based index of the frame's first data row in the source
    bytes_read: int  # source position after this batch, for progress
    lines: list[int] | None = None  # 1-based start line of each row, when cheap to know


@dataclass(frozen=True)
class RawChunk:
    """Whole CSV records as UTF-8 bytes, header removed: COPY can take them as they are."""

    data: bytes
    bytes_read: int


@dataclass(frozen=True)
class Fingerprint:
    size: int
    mtime_ns: int


class Source(ABC):
    """Reads one file. Column names are fixed at construction; batches stream."""

    format: str = ""

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

    def sample(self, rows: int = 200) -> pl.DataFrame:
        for batch in self.batches(rows):
            return batch.frame
        return pl.DataFrame({c: pl.Series(c, [], dtype=pl.String) for c in self.columns()})

    def dtypes(self) -> dict[str, pl.DataType]:
        """Native column types; text sources report String for every column."""
        return {c: pl.String() for c in self.columns()}

    def locate(self, row: int) -> tuple[int | None, str | None]:
        """(1-based line, original text) of data row `row`, when the format has lines."""
        return None, None

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
    pending: list[pl.DataFrame] = []
    pending_rows = 0
    row = 0  # index of the next row to emit
    seen = 0  # rows consumed from `frames`
    pos = 0
    for frame, pos in frames:
        if seen + frame.height <= skip_rows:
            seen += frame.height
            row = seen
            continue
        if seen < skip_rows:
            frame = frame.slice(skip_rows - seen)
            seen = skip_rows
            row = skip_rows
        seen += frame.height
        pending.append(frame)
        pending_rows += frame.height
        while pending_rows >= batch_rows:
            whole = pl.concat(pending, how="vertical") if len(pending) > 1 else pending[0]
            out, rest = whole.slice(0, batch_rows), whole.slice(batch_rows)
            yield Batch(out, row, pos)
            row += batch_rows
            pending, pending_rows = ([rest], rest.height) if rest.height else ([], 0)
    if pending_rows:
        whole = pl.concat(pending, how="vertical") if len(pending) > 1 else pending[0]
        yield Batch(whole, row, pos)
