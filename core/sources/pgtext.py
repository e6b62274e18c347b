"""PostgreSQL's text COPY format (what `\\copy t to 'f'` and `COPY ... TO` write by default).

Tab-separated, `\\N` for NULL, backslash escapes, no quoting (pgtext_decode says how a field
reads). The raw path hands the file's own lines to `COPY ... (FORMAT text)` unparsed; the parsed
path decodes them exactly: polars splits a chunk at tabs and newlines and decodes whole columns,
and a chunk holding what only a careful reader gets right (a record continued by an escaped
newline, an escaped tab, a NUL byte, a ragged record) is read record by record instead.
"""

from __future__ import annotations

import codecs
import dataclasses
import re
from collections.abc import Callable, Iterator

import polars as pl

from core.errors import SourceError
from core.sources.base import BadRecord, Batch, ParseLater, RawChunk, Source, rebatch_parts
from core.sources.pgtext_decode import BadEscape, continues, decode_field, sniff_header, split_fields, unescape_column
from core.sources.sniff import CsvDialect, sniff_csv
from core.spec import SourceOptions

CHUNK_BYTES = 4 << 20
WARM_CHUNK_BYTES = 1 << 20  # as CSV's warm start reads (core.sources.csv.source)
FIRST_CHUNK_BYTES = 256 << 10  # the first raw chunk, as CSV's (each next one twice the last)
_END = b"\\."  # a line of its own: the end of the data (pg_dump's COPY blocks, old psql)


class PgTextSource(Source):
    format = "pgtext"

    def __init__(self, options: SourceOptions) -> None:
        super().__init__(options)
        delimiter = options.delimiter or "\t"
        marker = options.null if options.null is not None else "\\N"
        try:
            d = sniff_csv(str(self.path), delimiter=delimiter, quote='"', header=False,
                          encoding=options.encoding, null=marker)
        except (OSError, LookupError, UnicodeError) as exc:
            raise SourceError(f"cannot read the file: {exc}", path=str(self.path)) from None
        # What only the record-by-record reader gets right: an escaped delimiter, newline or CR.
        self._careful = re.compile(rb"\\[" + re.escape(delimiter.encode()) + rb"\n\r]")
        self.null_columns: list[str] | None = None  # the marker is NULL in every column (it is never a word here)
        self.empty_null_columns: list[str] = []  # an empty field is an empty string, always
        self._header_end = 0  # bytes of the header line in the UTF-8 stream
        self._header_lines = 0
        lines = self._head_lines(d, 50)
        if not lines:
            raise SourceError("the file is empty", path=str(self.path))
        fields = [split_fields(ln, delimiter) for ln in lines]
        header = options.header if options.header is not None else sniff_header(fields)
        # quote "" : no quoting; COPY's own counting of records is by lines (stages.send_raw).
        self.dialect: CsvDialect = dataclasses.replace(d, quote="", header=header, null_columns=None,
                                                       null_seen=(), empty_null=())
        if header:
            self._header_end = len(lines[0].encode("utf-8")) + 1
            self._header_lines = 1
            names = []
            for i, f in enumerate(fields[0]):
                try:
                    name = decode_field(f).strip()
                except BadEscape:
                    name = f
                names.append(name or f"column_{i + 1}")
            self._columns = _unique(names)
        else:
            self._columns = [f"column_{i + 1}" for i in range(len(fields[0]))]

    def _head_lines(self, d: CsvDialect, n: int) -> list[str]:
        """The first n lines (decoded), for the width and the header; the line end kept out."""
        head = b""
        for block in self._utf8_blocks(d, 1 << 16):
            head += block
            if head.count(b"\n") > n or len(head) > 1 << 20:
                break
        lines = head.split(b"\n")
        if not head.endswith(b"\n") and len(lines) > n:
            lines = lines[:-1]
        lines = lines[:n]
        out = [ln.rstrip(b"\r").decode("utf-8", errors="replace") for ln in lines]
        while out and not out[-1]:
            out.pop()  # a file ends with its last newline
        return out

    def columns(self) -> list[str]:
        return list(self._columns)

    @property
    def quote(self) -> str:
        return ""

    # -- bytes --------------------------------------------------------------------------

    def _utf8_blocks(self, d: CsvDialect, block: int, first: int | None = None) -> Iterator[bytes]:
        """The file as UTF-8, BOM removed; it ends at a `\\.` line when there is one. Read
        `first` bytes first, then twice as many each time, up to `block`."""
        size = min(first or block, block)
        enc = d.encoding.lower().replace("_", "-")
        decoder = None if enc in ("utf-8", "utf8", "utf-8-sig") else codecs.getincrementaldecoder(d.encoding)("strict")
        tail = b""  # the last bytes of the block before: an end marker may straddle two blocks
        try:
            with open(self.path, "rb") as f:
                f.seek(0 if enc in ("utf-16", "utf16", "utf-32", "utf32") else d.bom_bytes)
                at_start = True
                while True:
                    raw = f.read(size)
                    size = min(block, size * 2)
                    data = raw if decoder is None else decoder.decode(raw, final=not raw).encode("utf-8")
                    if not raw and not data:
                        return
                    end = _end_marker(tail + data, at_start) if _END in data or _END in tail + data[:2] else -1
                    if end >= 0:
                        yield data[: max(0, end - len(tail))]
                        return
                    at_start = False
                    tail = data[-3:]
                    yield data
        except UnicodeError as exc:
            reason = exc.reason if isinstance(exc, UnicodeDecodeError) else str(exc)
            raise SourceError(f"not valid {d.encoding}: {reason}", path=str(self.path)) from None
        except OSError as exc:
            raise SourceError(f"cannot read the file: {exc.strerror}", path=str(self.path)) from None

    def _chunks(self, chunk_bytes: int) -> Iterator[tuple[bytes, int]]:
        """Whole records of data (header skipped), about chunk_bytes at a time, with the file
        position after each."""
        buf = b""
        skip = self._header_end
        consumed = 0
        first = min(chunk_bytes, FIRST_CHUNK_BYTES)  # (the server starts sooner)
        want = first // 2  # a chunk's size: it grows as the blocks do
        for data in self._utf8_blocks(self.dialect, chunk_bytes, first=first + skip):
            want = min(chunk_bytes, want * 2)
            if skip:
                take = min(skip, len(data))
                data, skip = data[take:], skip - take
            buf = buf + data if buf else data
            if len(buf) < want:
                continue
            cut = _record_cut(buf)
            if cut <= 0:
                continue
            consumed += cut
            yield buf[:cut], self._progress(consumed)
            buf = buf[cut:]
        if buf == _END or buf.endswith(b"\n" + _END):
            buf = buf[: -len(_END)]
        if buf:
            if not buf.endswith(b"\n"):
                buf += b"\n"
            yield buf, self.size

    def _progress(self, consumed: int) -> int:
        return min(self.size, consumed + self._header_end + self.dialect.bom_bytes)

    def raw_chunks(self, chunk_bytes: int | None = None, *, tolerant: bool = False) -> Iterator[RawChunk]:
        """The file's own records for COPY (FORMAT text). A chunk with a record continued by an
        escaped newline is `odd`: COPY counts its rows differently, so the load parses instead."""
        line = 1 + self._header_lines
        for data, pos in self._chunks(chunk_bytes or CHUNK_BYTES):
            nul = data.find(b"\x00")
            if nul >= 0:  # COPY would refuse it as an encoding error; the parser names its record
                raise SourceError("contains a NUL byte", path=str(self.path), line=line + data.count(b"\n", 0, nul))
            odd = b"\\\n" in data and _has_continuation(data)
            lines = data.count(b"\n")
            # A relative date word (core.relative_dates) in a date column: the parser refuses its row.
            refused = self.refuse is not None and not odd and not tolerant and self.refuse.raw_refused(self, data)
            yield RawChunk(data, pos, odd, -1 if odd else lines, refused=refused)
            line += lines

    def raw_or_parsed(self, parse_now: Callable[[], bool], batch_rows: int, unit_bytes: int = CHUNK_BYTES,
                      raw_bytes: int | None = None) -> Iterator[RawChunk | ParseLater | Batch]:
        """The file's records in order, each chunk either as it is (for COPY's text format) or,
        when `parse_now()` says so as it is read, about `unit_bytes` left to parse_later() on
        the encoding stage (core.load.warm_start balances the two, as for CSV). A chunk COPY
        would count differently (a record continued by an escaped newline) or holding a value
        the client refuses is always left to the parser, which reads it as written or names
        the refused row."""
        row, line, offset = 0, 1 + self._header_lines, 0
        group: list[bytes] = []
        size = 0
        for data, pos in self._chunks(raw_bytes or WARM_CHUNK_BYTES):
            nul = data.find(b"\x00")
            if nul >= 0:  # COPY would refuse it as an encoding error; the parser names its record
                raise SourceError("contains a NUL byte", path=str(self.path), line=line + data.count(b"\n", 0, nul))
            odd = b"\\\n" in data and _has_continuation(data)
            later = odd or bool(group) or parse_now()
            if not later and self.refuse is not None and self.refuse.raw_refused(self, data):
                later = True  # (looked for only in chunks that go as they are: the parser refuses its own)
            lines = data.count(b"\n")
            if not later:
                yield RawChunk(data, pos, False, lines, lines)
                row, line, offset = row + lines, line + lines, offset + len(data)
                continue
            group.append(data)
            size += len(data)
            if size < unit_bytes and pos < self.size:
                continue
            unit = _unit(group, pos, row, line, offset)
            yield unit
            row, line = row + unit.chunk.records, line + unit.chunk.lines
            offset += len(unit.chunk.data)
            group, size = [], 0
        if group:  # (the last chunk ends the file: its position is the file's size)
            yield _unit(group, self.size, row, line, offset)

    def parse_later(self, unit: ParseLater, batch_rows: int, *, guarded: bool = True) -> list[Batch]:
        """The records raw_or_parsed() left to parse, in batches; a malformed record, or a value
        the client refuses, raises SourceError naming its line."""
        frame, bad, _lines = self._parse_chunk(unit.chunk.data, unit.row, unit.line)
        if bad:
            raise SourceError(bad[0].reason, path=str(self.path), line=bad[0].line)
        start = (unit.row, self._progress(unit.offset))
        parsed = rebatch_parts(iter([(frame, unit.chunk.bytes_read, bad)]), batch_rows, 0, start=start)
        if self.refuse is not None and guarded:  # (its columns are cheaper to look at than the unit's bytes)
            parsed = self.refuse.apply(self, parsed, with_bad=False)  # raises at the first refused row
        return list(parsed)

    # -- parsing ------------------------------------------------------------------------

    def batches(self, batch_rows: int, skip_rows: int = 0) -> Iterator[Batch]:
        for batch in self.batches_with_bad(batch_rows, skip_rows):
            if batch.bad:
                first = batch.bad[0]
                raise SourceError(first.reason, path=str(self.path), line=first.line)
            yield batch

    def batches_with_bad(self, batch_rows: int, skip_rows: int = 0) -> Iterator[Batch]:
        return rebatch_parts(self._parts(), batch_rows, skip_rows)

    def _parts(self) -> Iterator[tuple[pl.DataFrame, int, list[BadRecord]]]:
        row, line = 0, 1 + self._header_lines
        for data, pos in self._chunks(CHUNK_BYTES):
            frame, bad, lines = self._parse_chunk(data, row, line)
            yield frame, pos, bad
            row += frame.height + len(bad)
            line += lines

    def parse_records(self, data: bytes, first_row: int, first_line: int, offset: int = 0
                      ) -> tuple[pl.DataFrame, list[BadRecord]]:
        """Whole records as (good rows, malformed records), as CsvSource.parse_records."""
        frame, bad, _lines = self._parse_chunk(data, first_row, first_line)
        return frame, bad

    def _parse_chunk(self, data: bytes, first_row: int, first_line: int
                     ) -> tuple[pl.DataFrame, list[BadRecord], int]:
        """Whole records as (good rows, malformed records, physical lines they take)."""
        lines = data.count(b"\n")
        # One regex pass (its search jumps from backslash to backslash): four `in` tests took
        # ten times as long on an export whose every eleventh row holds a \N.
        if b"\x00" not in data and not self._careful.search(data):
            frame = self._polars(data, lines)
            if frame is not None:
                frame, bad = self._decode(frame, first_row, first_line)
                return frame, bad, lines
        frame, bad = self._parse_slow(data, first_row, first_line)
        return frame, bad, lines

    def _polars(self, data: bytes, records: int) -> pl.DataFrame | None:
        """The chunk split by polars, or None when it is not one record per line of full width."""
        n = len(self._columns)
        try:
            frame = pl.read_csv(
                data, has_header=False, separator=self.dialect.delimiter, quote_char=None,
                new_columns=self._columns, schema={c: pl.String for c in self._columns},
                null_values=[self.dialect.null], empty_string_is_null=False, infer_schema=False,
                raise_if_empty=False,
            )
        except (pl.exceptions.PolarsError, ValueError):
            return None
        # polars refuses a record with too many fields and fills a short one (or a blank line):
        # with none too long, the delimiters add up only when none is short.
        if frame.height != records or data.count(self.dialect.delimiter.encode()) != records * (n - 1):
            return None
        return frame

    def _decode(self, frame: pl.DataFrame, first_row: int, first_line: int
                ) -> tuple[pl.DataFrame, list[BadRecord]]:
        """Every column's escapes decoded column-wise; rows whose escapes make no text set apart."""
        bad: dict[int, str] = {}
        columns = []
        for c in frame.columns:
            s, why = unescape_column(frame.get_column(c))
            columns.append(s)
            for i, reason in why.items():
                bad.setdefault(i, f"column {c!r}: {reason}")
        frame = pl.DataFrame(columns)
        if not bad:
            return frame, []
        records = [BadRecord(first_row + i, first_line + i, self._record_text(frame, i), why)
                   for i, why in sorted(bad.items())]
        keep = pl.Series([i not in bad for i in range(frame.height)])
        return frame.filter(keep), records

    def _record_text(self, frame: pl.DataFrame, i: int) -> str:
        return self.dialect.delimiter.join("\\N" if v is None else repr(v)[1:-1] for v in frame.row(i))

    def _parse_slow(self, data: bytes, first_row: int, first_line: int) -> tuple[pl.DataFrame, list[BadRecord]]:
        """Record by record (Python): continued records joined, escaped delimiters kept."""
        n = len(self._columns)
        marker = self.dialect.null
        rows: list[list[str | None]] = []
        bad: list[BadRecord] = []
        row = first_row
        for line, raw in _records(data, first_line):
            reason = None
            values: list[str | None] = []
            if b"\x00" in raw:
                reason = "contains a NUL byte"
            else:
                try:
                    text = raw.decode("utf-8")
                except UnicodeDecodeError as exc:
                    text, reason = "", f"not valid UTF-8 (byte 0x{raw[exc.start]:02x})"
            if reason is None:
                fields = split_fields(text, self.dialect.delimiter)
                if len(fields) != n:
                    reason = (f"is a blank line, expected {n} fields" if not text and n > 1
                              else f"has {len(fields)} field{'s' if len(fields) != 1 else ''}, expected {n}")
                else:
                    for name, f in zip(self._columns, fields):
                        try:
                            values.append(None if f == marker else decode_field(f))
                        except BadEscape as why:
                            reason = f"column {name!r}: {why}"
                            break
            if reason is None:
                rows.append(values)
            else:
                bad.append(BadRecord(row, line, raw.decode("utf-8", "backslashreplace"), reason))
            row += 1
        frame = pl.DataFrame({c: pl.Series(c, [r[i] for r in rows], dtype=pl.String)
                              for i, c in enumerate(self._columns)})
        return frame, bad

    # -- where a row is -----------------------------------------------------------------

    def locate(self, row: int) -> tuple[int | None, str | None]:
        """(line, text) of data row `row`: slow on purpose, only error reports ask."""
        index, line = 0, 1 + self._header_lines
        try:
            for data, _pos in self._chunks(CHUNK_BYTES):
                n = data.count(b"\n")
                if not _has_continuation(data) and index + n <= row:
                    index, line = index + n, line + n
                    continue
                for start, raw in _records(data, line):
                    if index == row:
                        return start, raw.decode("utf-8", "backslashreplace")
                    index += 1
                line += n
        except SourceError:
            return None, None
        return None, None

    def row_at_data_line(self, data_line: int) -> int | None:
        """The row at COPY's "line N": the raw path sends only chunks of one record per line."""
        return data_line - 1 if data_line >= 1 else None


def _unit(group: list[bytes], pos: int, row: int, line: int, offset: int) -> ParseLater:
    """Chunks left to the parser as one unit, its records counted (a record continued by an
    escaped newline takes two lines)."""
    data = b"".join(group)
    lines = data.count(b"\n")
    records = sum(1 for _ in _records(data, 0)) if b"\\\n" in data else lines
    return ParseLater(RawChunk(data, pos, False, records, lines), row, line, offset)


def _records(data: bytes, first_line: int) -> Iterator[tuple[int, bytes]]:
    """(start line, record bytes without its line end) for each record of whole records."""
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    i, line = 0, first_line
    while i < len(lines):
        start, parts = line, [lines[i]]
        while continues(parts[-1]) and i + 1 < len(lines):
            i += 1
            line += 1
            parts.append(lines[i])
        rec = b"\n".join(parts)
        yield start, rec[:-1] if rec.endswith(b"\r") else rec
        i += 1
        line += 1


def _has_continuation(data: bytes) -> bool:
    """Whether some record goes on past a newline (its line ends in an escaping backslash)."""
    at = data.find(b"\\\n")
    while at >= 0:
        if continues(data[max(0, at - 4096):at + 1]):
            return True
        at = data.find(b"\\\n", at + 1)
    return False


def _record_cut(buf: bytes) -> int:
    """Just past the last newline that ends a record (not one escaped by a backslash)."""
    at = buf.rfind(b"\n")
    while at >= 0:
        if not continues(buf[max(0, at - 4096):at]):
            return at + 1
        at = buf.rfind(b"\n", 0, at)
    return 0


def _end_marker(data: bytes, at_start: bool) -> int:
    r"""Where a `\.` line starts in `data` (-1: none; one that ends the file without a newline is
    taken off at the end, PgTextSource._chunks)."""
    for post in (b"\n", b"\r\n"):
        at = data.find(b"\n" + _END + post)
        if at >= 0:
            return at + 1
    if at_start and data.startswith((_END + b"\n", _END + b"\r\n")):
        return 0
    return -1


def _unique(names: list[str]) -> list[str]:
    seen: dict[str, int] = {}
    out = []
    for n in names:
        seen[n] = seen.get(n, 0) + 1
        out.append(n if seen[n] == 1 else f"{n}_{seen[n]}")
    return out
