"""A source whose formatted columns (core.value_formats) arrive as PostgreSQL ISO text.

It wraps the file's own reader: every consumer (each strategy, the skip policy, the parallel
streams) reads converted batches, and a row with a value that does not fit its column's
format is a bad record like a ragged one (named by line, column, value and the format
expected): `batches()` raises at the first, `batches_with_bad()` sets it apart. The file's
own bytes cannot go to COPY any more, so the wrapper has no raw chunks (mapping.is_identity
says so too, for the formats in the mapping).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import polars as pl

from core.errors import SourceError
from core.sources.base import BadRecord, Batch, Source
from core.value_formats import ValueFormat, convert


class FormattedSource(Source):
    """`inner` with `formats` (source column -> format) applied to its batches."""

    def __init__(self, inner: Source, formats: dict[str, ValueFormat]) -> None:
        # Not Source.__init__: the inner reader has stat'ed and opened the file already.
        self.inner = inner
        self.formats = formats
        self.options = inner.options
        self.path = inner.path
        self.fingerprint = inner.fingerprint
        self.format = inner.format
        self._lines = _RowLines(inner)  # the reader's (misfits), apart from the sender's (server rejects)
        self._located = _RowLines(inner)

    def __getattr__(self, name: str) -> Any:
        if name in ("raw_chunks", "raw_or_parsed", "parse_later") or name.startswith("__"):
            raise AttributeError(name)  # converted values cannot come from the file's own bytes
        return getattr(self.inner, name)

    def columns(self) -> list[str]:
        return self.inner.columns()

    def dtypes(self) -> dict[str, pl.DataType]:
        return self.inner.dtypes()

    def locate(self, row: int) -> tuple[int | None, str | None]:
        return self._located.locate(row)

    def check_unchanged(self) -> None:
        self.inner.check_unchanged()

    def batches(self, batch_rows: int, skip_rows: int = 0) -> Iterator[Batch]:
        for batch in self.inner.batches(batch_rows, skip_rows):
            for part in self._split(batch):
                if part.bad:
                    first = part.bad[0]
                    raise SourceError(first.reason, path=str(self.path), line=first.line)
                yield part

    def batches_with_bad(self, batch_rows: int, skip_rows: int = 0) -> Iterator[Batch]:
        for batch in self.inner.batches_with_bad(batch_rows, skip_rows):
            yield from self._split(batch)

    def _split(self, batch: Batch) -> Iterator[Batch]:
        """The batch converted; at each row whose value does not fit, cut in two around it, so
        each part's rows stay contiguous and its bad records come before them (Batch's rule)."""
        frame, misses = convert(batch.frame, self.formats)
        if misses is None:
            yield Batch(frame, batch.first_row, batch.bytes_read, batch.lines, batch.bad)
            return
        bad_at = [i for i, column in enumerate(misses) if column is not None]
        start, pending = 0, list(batch.bad)
        for i in bad_at:
            if i > start:
                yield self._part(batch, frame, start, i, pending)
                pending = []
            pending.append(self._bad_record(batch, i, str(misses[i])))
            start = i + 1
        if start < frame.height or pending:
            yield self._part(batch, frame, start, frame.height, pending)

    @staticmethod
    def _part(batch: Batch, frame: pl.DataFrame, lo: int, hi: int, bad: list[BadRecord]) -> Batch:
        lines = batch.lines[lo:hi] if batch.lines is not None else None
        return Batch(frame.slice(lo, hi - lo), batch.first_row + lo, batch.bytes_read, lines, tuple(bad))

    def _bad_record(self, batch: Batch, i: int, column: str) -> BadRecord:
        row = batch.first_row + i
        value = batch.frame[column][i]
        fmt = self.formats[column]
        line, record = (batch.lines[i], None) if batch.lines is not None else self._lines.locate(row)
        if record is None:
            record = ",".join("" if v is None else str(v) for v in batch.frame.row(i))
        reason = f"column {column}: {str(value)!r} is not {fmt.expected()}"
        return BadRecord(row, line, record, reason, column, "" if value is None else str(value))


class _RowLines:
    """(line, record text) of rows asked in increasing order, in one pass over a CSV file.

    CsvSource.locate rescans the file from its start at each call: with the skip policy, a
    column with a thousand values that do not fit would read a large file a thousand times.
    Rows asked out of order (a new read of the file) start the pass again.
    """

    def __init__(self, source: Source) -> None:
        self.source = source
        self._records: Iterator[tuple[int, int, str]] | None = None
        self._next = 0  # the row the pass yields next

    def locate(self, row: int) -> tuple[int | None, str | None]:
        if getattr(self.source, "raw_chunks", None) is None or getattr(self.source, "dialect", None) is None:
            return self.source.locate(row)
        if self._records is None or row < self._next:
            self._records, self._next = self._pass(), 0
        for index, line, text in self._records:
            self._next = index + 1
            if index == row:
                return line, text
        self._records = None
        return self.source.locate(row)

    def _pass(self) -> Iterator[tuple[int, int, str]]:
        from core.sources.csv.records import record_text, split_records

        first, _ = self.source.locate(0)  # the first data record's line: past the header
        line = first or 1
        dialect = self.source.dialect  # type: ignore[attr-defined]
        q, d = dialect.quote.encode(), dialect.delimiter.encode()
        index = 0
        for chunk in self.source.raw_chunks(tolerant=True):  # type: ignore[attr-defined]
            for start_line, start, end, _closed in split_records(chunk.data, q, line, d):
                yield index, start_line, record_text(chunk.data[start:end])
                index += 1
            line += chunk.data.count(b"\n")


def formats_of(maps: list[Any]) -> dict[str, ValueFormat]:
    """Source column -> format, from a mapping's included columns (ColumnMap.format)."""
    from core.errors import ConfigError
    from core.value_formats import parse_format

    out: dict[str, ValueFormat] = {}
    for m in maps:
        if not m.include or m.source is None or not m.format:
            continue
        fmt = parse_format(m.format)
        if m.source in out and out[m.source].name != fmt.name:
            raise ConfigError(f"source column {m.source} is given two formats: {out[m.source].name} and {fmt.name}")
        out[m.source] = fmt
    return out


def with_formats(source: Source, maps: list[Any]) -> Source:
    """The source, wrapped when its mapping gives any column a format (SQL scripts: never)."""
    formats = formats_of(maps)
    if not formats or source.format == "sql":
        return source
    return FormattedSource(source, formats)
