"""Whole CSV records into a frame of text, the malformed ones set apart with their line and why.

polars parses a chunk in one go. Only when it fails, or a cheap count says some record has too
few fields, or the bytes hold a NUL or end inside quotes, is the chunk taken apart record by
record (split_records), and polars then gets the good records, halving around any it refuses.
A chunk holding a bare quote is read field by field (scan_records), as no COPY would.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from core.errors import SourceError
from core.sources.base import BadRecord
from core.sources.csv.records import (
    count_fields,
    has_bare_quote,
    record_text,
    scan_records,
    split_records,
    unclosed_reason,
)
from core.sources.csv.swallowed import swallowing
from core.sources.sniff import CsvDialect

_QUOTED_NULL = b"\x01sluice:quoted-null-marker\x01"  # stands in for a quoted null marker while parsing


class CsvRecordParsing:
    """The parsing half of CsvSource (csv_source.py reads the file and cuts it into records)."""

    dialect: CsvDialect
    null_columns: list[str] | None  # where the null marker means NULL (None: every column)
    empty_null_columns: list[str]  # where an empty unquoted field is NULL too, beside the marker
    path: Path
    _columns: list[str]
    _header_end: int  # byte offset (in the UTF-8 stream) of the first data record
    _header_lines: int

    def _polars(self, data: bytes) -> pl.DataFrame:
        d = self.dialect
        # PostgreSQL reads a *quoted* null marker as text; polars would make it null. Such
        # fields are swapped for a sentinel before parsing and back to the marker text after.
        quoted = (d.quote + d.null + d.quote).encode() if d.null and d.quote else b""
        swapped = 0
        if quoted and quoted in data:
            data, swapped = self._quoted_null_pattern().subn(quoted.replace(d.null.encode(), _QUOTED_NULL), data)
        both = bool(d.null and self.empty_null_columns)
        frame = pl.read_csv(
            data,
            has_header=False,
            separator=d.delimiter,
            quote_char=d.quote or None,
            new_columns=self._columns,
            schema={c: pl.String for c in self._columns},
            null_values=(
                None if not d.null or both
                else [d.null] if self.null_columns is None
                else {c: d.null for c in self.null_columns}
            ),
            # PostgreSQL's rule: with another null marker, an empty field is an empty string.
            empty_string_is_null=not d.null or both,
            infer_schema=False,
            raise_if_empty=False,
        )
        if both:
            frame = self._both_nulls(frame)
        if swapped:
            sentinel = _QUOTED_NULL.decode()
            frame = frame.with_columns(
                pl.when(pl.col(c) == sentinel).then(pl.lit(d.null)).otherwise(pl.col(c)).alias(c)
                for c in frame.columns
            )
        return frame

    def _both_nulls(self, frame: pl.DataFrame) -> pl.DataFrame:
        """Read with empty unquoted fields as null and the marker as text: the marker becomes
        null where it applies, and empty fields become empty strings again outside
        empty_null_columns (a quoted "" is an empty string either way)."""
        d = self.dialect
        marked = set(self._columns if self.null_columns is None else self.null_columns)
        empty = set(self.empty_null_columns)

        def column(c: str) -> pl.Expr:
            e = pl.col(c) if c in empty else pl.col(c).fill_null("")
            return pl.when(e == d.null).then(None).otherwise(e).alias(c) if c in marked else e.alias(c)

        return frame.with_columns(column(c) for c in frame.columns)

    def _quoted_null_pattern(self) -> re.Pattern[bytes]:
        """A whole field that is the quoted null marker (never a doubled quote inside a value)."""
        d = self.dialect
        delim, quoted = re.escape(d.delimiter.encode()), re.escape((d.quote + d.null + d.quote).encode())
        return re.compile(rb"(?m)(?:^|(?<=" + delim + rb"))" + quoted + rb"(?=" + delim + rb"|\r?$)")

    def parse(self, data: bytes) -> pl.DataFrame:
        """Whole records as a frame of text; SourceError naming the line of the first malformed one."""
        frame, bad = self.parse_records(data, 0, 1 + self._header_lines, 0)
        if bad:
            raise SourceError(bad[0].reason, path=str(self.path), line=bad[0].line)
        return frame

    def parse_records(
        self, data: bytes, first_row: int, first_line: int, offset: int, *, final: bool = True,
        odd: bool | None = None, ends: Any = None,
    ) -> tuple[pl.DataFrame, list[BadRecord]]:
        """Whole records (row `first_row` on, from line `first_line`, at `offset` of the data
        stream) as a frame of the good ones plus the malformed ones.

        polars parses the chunk in one go; only when it fails, or a cheap count says some
        record has too few fields, or the bytes hold a NUL or end inside quotes, is the chunk
        taken apart record by record.
        """
        q = self.dialect.quote.encode()
        if odd if odd is not None else has_bare_quote(data, self.dialect.delimiter.encode(), q):
            return self._parse_fields(data, first_row, first_line, offset)
        if b"\x00" not in data and not (final and q and data.count(q) % 2):
            try:
                frame = self._polars(data)
            except (pl.exceptions.PolarsError, ValueError):
                pass
            else:
                if self._fields_fit(data, frame, ends):
                    return frame, []
        return self._parse_slow(data, first_row, first_line, offset)

    def _parse_fields(
        self, data: bytes, first_row: int, first_line: int, offset: int
    ) -> tuple[pl.DataFrame, list[BadRecord]]:
        """Records holding bare quotes, field by field (see scan_records): every strategy, and
        COPY never, reads them, so a quote inside a value is kept as written."""
        d = self.dialect
        n = len(self._columns)
        nulls = set(self._columns if self.null_columns is None else self.null_columns)
        empty = set(self.empty_null_columns) if d.null else set()
        marker = d.null.encode()
        rows: list[list[str | None]] = []
        bad: list[BadRecord] = []
        row = first_row
        for line, start, end, closed, fields in scan_records(data, d.delimiter.encode(), d.quote.encode(), first_line):
            raw = data[start:end]
            reason = None if closed else unclosed_reason(raw, line, d.quote.encode())
            if reason is None and b"\x00" in raw:
                reason = "contains a NUL byte"
            if reason is None and len(fields) != n:
                reason = (f"is a blank line, expected {n} fields" if not raw.strip(b"\r") and n > 1
                          else f"has {len(fields)} field{'s' if len(fields) != 1 else ''}, expected {n}")
            if reason is None and b"\n" in raw:
                # A quote that never closes, until a stray one inside a later field closes it (a bare
                # quote, so this reader, not COPY's, reads the chunk): the records it swallowed.
                reason = swallowing(raw, d.delimiter.encode(), d.quote.encode(), n, line)
            values: list[str | None] = []
            if reason is None:
                for (value, quoted), name in zip(fields, self._columns):
                    if not quoted and ((value == marker and name in nulls) or (not value and name in empty)):
                        values.append(None)
                        continue
                    try:
                        values.append(value.decode("utf-8"))
                    except UnicodeDecodeError as exc:
                        reason = f"not valid UTF-8 at byte offset {offset + start + exc.start} of the data"
                        break
            if reason is None:
                rows.append(values)
            else:
                bad.append(BadRecord(row, line, record_text(raw), reason))
            row += 1
        frame = pl.DataFrame(
            {c: pl.Series(c, [r[i] for r in rows], dtype=pl.String) for i, c in enumerate(self._columns)}
        )
        return frame, bad

    def _fields_fit(self, data: bytes, frame: pl.DataFrame, ends: Any = None) -> bool:
        """True when every parsed row had all its fields (polars fills missing ones with null).

        Every delimiter in the data either separates two fields or sits in a (quoted) value.
        polars refuses rows with too many fields, so the separators add up to
        height * (columns - 1) exactly when no row is short (a blank line counts as short).
        Where the reader found each record's end (`ends`), only the records whose last field
        came out null are counted, one by one, when they are few.
        """
        n = len(self._columns)
        if n == 1 or not frame.height:
            return True
        if not self.dialect.null:
            last = frame.get_column(frame.columns[-1])
            if not last.null_count():
                return True  # a short row leaves its last field null: none is, so none is short
            if ends is not None and len(ends) == frame.height:
                unsure = self._unsure_rows(data, frame, ends)
                if len(unsure) * 8 <= frame.height:
                    # (Counting the delimiters inside every value took as long as the parse.)
                    delimiter, quote = self.dialect.delimiter.encode(), self.dialect.quote.encode()
                    for i in unsure.tolist():
                        start = int(ends[i - 1]) + 1 if i else 0
                        if count_fields(data[start:int(ends[i])], delimiter, quote) != n:
                            return False
                    return True
        # (With a null marker, polars fills a missing field with "" instead: count.)
        d = self.dialect.delimiter
        total = data.count(d.encode())
        q = self.dialect.quote
        if q and q.encode() in data:
            in_values = frame.select(
                pl.sum_horizontal(pl.col(c).str.count_matches(d, literal=True).fill_null(0) for c in frame.columns)
                .sum()
            ).item()
            total -= int(in_values or 0)
        return total == frame.height * (n - 1)

    def _unsure_rows(self, data: bytes, frame: pl.DataFrame, ends: Any) -> Any:
        """The rows whose last field came out null and might be short, as a numpy array.

        A record that ends in the delimiter has an empty, unquoted last field; when the field
        before it has a value, that value is not the record's last field, so the record has all
        its fields (polars refuses more). Only the other rows need their fields counted: on the
        mixed shape, 2% of the rows a null note cost 30% of the parse counted one by one.
        """
        import numpy as np  # (the reader's numpy found `ends`)

        rows = frame.get_column(frame.columns[-1]).is_null().arg_true().to_numpy().astype(np.int64)
        if not len(rows):
            return rows
        b = np.frombuffer(data, dtype=np.uint8)
        stops = ends[rows].astype(np.int64)
        starts = np.where(rows > 0, ends[np.maximum(rows - 1, 0)].astype(np.int64) + 1, 0)
        at = stops - 1
        cr = (at >= starts) & (b[np.maximum(at, 0)] == 13)
        at -= cr
        ending = (at >= starts) & (b[np.maximum(at, 0)] == ord(self.dialect.delimiter))
        valued = frame.get_column(frame.columns[-2]).is_not_null().to_numpy()[rows]
        return rows[~(ending & valued)]

    def _parse_slow(
        self, data: bytes, first_row: int, first_line: int, offset: int
    ) -> tuple[pl.DataFrame, list[BadRecord]]:
        """Record by record: the malformed ones out, the rest through polars as usual."""
        good: list[tuple[int, int, bytes]] = []  # (row, line, record bytes without its newline)
        bad: list[BadRecord] = []
        row = first_row
        for line, start, end, closed in split_records(data, self.dialect.quote.encode(), first_line):
            raw = data[start:end]
            reason = self._check_record(raw, line, closed, offset + start)
            if reason is None:
                good.append((row, line, raw))
            else:
                bad.append(BadRecord(row, line, record_text(raw), reason))
            row += 1
        frames: list[pl.DataFrame] = []
        for part, frame_or_reason in self._parse_good(good):
            if isinstance(frame_or_reason, pl.DataFrame):
                frames.append(frame_or_reason)
            else:
                r, line, raw = part[0]
                bad.append(BadRecord(r, line, record_text(raw), frame_or_reason))
        bad.sort(key=lambda b: b.row)
        if not frames:
            return pl.DataFrame({c: pl.Series(c, [], dtype=pl.String) for c in self._columns}), bad
        return (pl.concat(frames, how="vertical") if len(frames) > 1 else frames[0]), bad

    def _parse_good(
        self, records: Sequence[tuple[int, int, bytes]]
    ) -> Iterator[tuple[Sequence[tuple[int, int, bytes]], pl.DataFrame | str]]:
        """polars on the good records, halving around any it still refuses (in order)."""
        if not records:
            return
        data = b"".join(raw + b"\n" for _, _, raw in records)
        why = "cannot be parsed as one record"
        try:
            frame: pl.DataFrame | None = self._polars(data)
        except (pl.exceptions.PolarsError, ValueError) as exc:
            frame, why = None, _polars_reason(exc)
        if frame is not None and frame.height == len(records) and self._fields_fit(data, frame):
            yield records, frame
            return
        if len(records) == 1:
            yield records, why
            return
        mid = len(records) // 2
        yield from self._parse_good(records[:mid])
        yield from self._parse_good(records[mid:])

    def _check_record(self, raw: bytes, line: int, closed: bool, offset: int) -> str | None:
        """Why this record cannot be a row, or None."""
        n = len(self._columns)
        q = self.dialect.quote.encode()
        if not closed:
            return unclosed_reason(raw, line, q)
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            where = offset + exc.start + self._header_end
            if self.dialect.encoding.lower().replace("_", "-") in ("utf-8", "utf8", "utf-8-sig"):
                where += self.dialect.bom_bytes
                return f"not valid UTF-8 at byte offset {where} of the file (byte 0x{raw[exc.start]:02x})"
            return f"not valid UTF-8 after transcoding (byte 0x{raw[exc.start]:02x})"  # pragma: no cover
        if "\x00" in text:
            return "contains a NUL byte"
        body = text[:-1] if text.endswith("\r") else text
        if not body and n > 1:
            return f"is a blank line, expected {n} fields"
        fields = count_fields(body, self.dialect.delimiter, self.dialect.quote)
        if fields != n:
            return f"has {fields} field{'s' if fields != 1 else ''}, expected {n}"
        return None


def _polars_reason(exc: Exception) -> str:
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return f"cannot be parsed: {first[:200]}"
