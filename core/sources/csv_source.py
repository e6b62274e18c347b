"""CSV/TSV: the file decoded to UTF-8 and cut into whole records (csv_records says where
records end), then parsed by polars, or passed to COPY as they are.

The same cut feeds three consumers: polars parsing (mapped loads), COPY of the
file's own bytes (the fast path), and the streams of parallel-copy.
"""

from __future__ import annotations

import codecs
import csv
import io
import re
from collections.abc import Iterator, Sequence

import polars as pl

from core.errors import SourceError
from core.sources.base import BadRecord, Batch, RawChunk, Source, rebatch_parts
from core.sources.csv_records import (
    _field_cut,
    count_fields,
    has_bare_quote,
    record_cut,
    record_text,
    scan_records,
    split_records,
    unclosed_reason,
)
from core.sources.sniff import CsvDialect, sniff_csv
from core.spec import SourceOptions

# Records are cut and parsed 4 MB at a time: on 1M mixed rows (91 MB) polars and the cutting
# took 0.30 CPU-s in 1 MB chunks, 0.23 in 4 MB, 0.21 in 16 MB; batches are cut from them anyway.
CHUNK_BYTES = 4 << 20
MAX_RECORD_BYTES = 64 << 20  # one record longer than this means a quote that never closes


class CsvSource(Source):
    format = "csv"

    def __init__(self, options: SourceOptions, *, tsv: bool = False) -> None:
        super().__init__(options)
        self.format = "tsv" if tsv else "csv"
        try:
            self.dialect: CsvDialect = sniff_csv(
                str(self.path),
                delimiter=options.delimiter,
                quote=options.quote,
                header=options.header,
                encoding=options.encoding,
                null=options.null,
                tsv=tsv,
            )
        except (OSError, LookupError, UnicodeError) as exc:
            raise SourceError(f"cannot read the file: {exc}", path=str(self.path)) from None
        self._header_end = 0  # byte offset (in UTF-8 stream) of the first data record
        self._header_lines = 0  # lines the header takes
        self._columns = self._read_header()
        self.null_columns = self._null_columns(options)

    def _null_columns(self, options: SourceOptions) -> list[str] | None:
        """The columns where the null marker means NULL (None: all of them)."""
        if not self.dialect.null:
            return None
        if options.null_columns is not None:
            wanted = set(options.null_columns)
            return [c for c in self._columns if c in wanted]
        if self.dialect.null_columns is None:
            return None
        return [self._columns[i] for i in self.dialect.null_columns if i < len(self._columns)]

    # -- shape --------------------------------------------------------------------------

    def _read_header(self) -> list[str]:
        first = b""
        for data in self._utf8_blocks(1 << 20):
            first += data
            cut = self._first_record_end(first)
            if cut:
                break
            if len(first) > MAX_RECORD_BYTES:
                raise SourceError(f"the first record does not end within {MAX_RECORD_BYTES >> 20} MB "
                                  "(a quote that never closes?)", path=str(self.path), line=1)
        else:
            cut = len(first)
            if b"\r" in first.strip():
                raise SourceError("its lines end in a bare carriage return (old Mac style), which is not "
                                  "supported; convert the line endings to LF or CRLF", path=str(self.path))
        if not first.strip():
            raise SourceError("the file is empty", path=str(self.path))
        if b"\x00" in first[:cut]:
            raise SourceError(
                f"the first record contains NUL bytes: this is not {self.dialect.encoding} text (UTF-16? "
                "binary?); give the file's encoding",
                path=str(self.path), line=1,
            )
        record = first[:cut].decode("utf-8", errors="replace")
        try:
            fields = next(csv.reader(io.StringIO(record, newline=""), delimiter=self.dialect.delimiter,
                                     quotechar=self.dialect.quote))
        except csv.Error as exc:
            raise SourceError(f"cannot read the first record: {exc}", path=str(self.path), line=1) from None
        if self.dialect.header:
            self._header_end = cut
            self._header_lines = first[:cut].count(b"\n")
            return _unique_names([f.strip() or f"column_{i + 1}" for i, f in enumerate(fields)])
        return [f"column_{i + 1}" for i in range(len(fields))]

    def _first_record_end(self, buf: bytes) -> int:
        q = self.dialect.quote.encode()
        pos = 0
        while True:
            nl = buf.find(b"\n", pos)
            if nl < 0:
                return 0
            if buf.count(q, 0, nl) % 2 == 0:
                return nl + 1
            pos = nl + 1

    def columns(self) -> list[str]:
        return list(self._columns)

    @property
    def quote(self) -> str:
        return self.dialect.quote

    # -- bytes --------------------------------------------------------------------------

    def _utf8_blocks(self, block: int) -> Iterator[bytes]:
        """The file as UTF-8 bytes, BOM removed, transcoded when it is in another encoding."""
        enc = self.dialect.encoding.lower().replace("_", "-")
        passthrough = enc in ("utf-8", "utf8", "utf-8-sig")
        decoder = None if passthrough else codecs.getincrementaldecoder(self.dialect.encoding)("strict")
        cr_only = self.dialect.newline == "\r"
        try:
            with open(self.path, "rb") as f:
                # UTF-16/32 decoders read the byte order from the BOM themselves.
                f.seek(0 if enc in ("utf-16", "utf16", "utf-32", "utf32") else self.dialect.bom_bytes)
                while True:
                    raw = f.read(block)
                    if not raw:
                        if decoder is not None:
                            tail = decoder.decode(b"", final=True)
                            if tail:
                                yield tail.encode("utf-8").replace(b"\r", b"\n") if cr_only else tail.encode("utf-8")
                        return
                    data = raw if decoder is None else decoder.decode(raw).encode("utf-8")
                    # Old Mac files end lines with CR alone; COPY and the parser both get LF.
                    yield data.replace(b"\r", b"\n") if cr_only else data
        except UnicodeError as exc:
            reason = exc.reason if isinstance(exc, UnicodeDecodeError) else str(exc)
            raise SourceError(f"not valid {self.dialect.encoding}: {reason}", path=str(self.path)) from None
        except OSError as exc:
            raise SourceError(f"cannot read the file: {exc.strerror}", path=str(self.path)) from None

    def raw_chunks(self, chunk_bytes: int | None = None, *, tolerant: bool = False) -> Iterator[RawChunk]:
        """Whole data records, about chunk_bytes at a time, header skipped.

        A file that ends inside a quoted field raises SourceError naming the line the field
        opens at, unless `tolerant` (the parsed path, which turns it into a bad record).
        """
        chunk_bytes = chunk_bytes or CHUNK_BYTES
        q = self.dialect.quote.encode()
        d = self.dialect.delimiter.encode()
        buf = b""
        consumed = 0  # data bytes handed out, counted in the UTF-8 stream
        scanned = 0  # buf[:scanned] is known to hold no record end
        skip = self._header_end
        for data in self._utf8_blocks(chunk_bytes):
            if skip:
                take = min(skip, len(data))
                data, skip = data[take:], skip - take
            buf = buf + data if buf else data
            if len(buf) < chunk_bytes:
                continue
            odd = has_bare_quote(buf, d, q)
            cut = _field_cut(buf, d, q) if odd else record_cut(buf, q, scanned)
            if cut == 0:  # one record longer than a chunk: keep reading, up to a limit
                if len(buf) > MAX_RECORD_BYTES:
                    raise self._runaway(buf, consumed)
                scanned = len(buf)
                continue
            scanned = 0
            consumed += cut
            yield RawChunk(buf[:cut], self._progress(consumed), odd)
            buf = buf[cut:]
        if buf:
            odd = has_bare_quote(buf, d, q)
            if not tolerant and q and buf.count(q) % 2 and not odd:
                raise self._unclosed(buf, consumed)
            if not buf.endswith(b"\n"):
                buf += b"\n"
            yield RawChunk(buf, self.size, odd)

    def _progress(self, consumed: int) -> int:
        return min(self.size, max(0, consumed + self._header_end + self.dialect.bom_bytes))

    def _runaway(self, buf: bytes, consumed: int) -> SourceError:
        """The error for a record that outgrew MAX_RECORD_BYTES (`buf` starts with it)."""
        q = self.dialect.quote.encode()
        start = self._line_at(self._header_end + consumed)
        limit = f"{MAX_RECORD_BYTES >> 20} MB"
        at = buf.find(q) if q else -1
        if at < 0:
            return SourceError(f"the record starting here has no line break in its first {limit}",
                               path=str(self.path), line=start)
        line = start + buf.count(b"\n", 0, at)
        return SourceError(
            f"quoted field opened at line {line} never closes (no closing {self.dialect.quote} "
            f"in the next {limit}); the quote character may be wrong, or the file cut short",
            path=str(self.path), line=line,
        )

    def _unclosed(self, buf: bytes, consumed: int) -> SourceError:
        """The error for a file that ends inside a quoted field (`buf` is its last chunk)."""
        q = self.dialect.quote.encode()
        *_, (line, start, end, _closed) = split_records(buf, q, self._line_at(self._header_end + consumed))
        reason = unclosed_reason(buf[start:end], line, q)
        return SourceError(reason, path=str(self.path), line=line)

    def _line_at(self, offset: int) -> int:
        """1-based line of byte `offset` of the UTF-8 stream (slow: error reports only)."""
        newlines = 0
        for data in self._utf8_blocks(CHUNK_BYTES):
            if offset <= len(data):
                return newlines + data.count(b"\n", 0, offset) + 1
            newlines += data.count(b"\n")
            offset -= len(data)
        return newlines + 1

    # -- parsed -------------------------------------------------------------------------

    def _polars(self, data: bytes) -> pl.DataFrame:
        d = self.dialect
        # PostgreSQL reads a *quoted* null marker as text; polars would make it null. Such
        # fields are swapped for a sentinel before parsing and back to the marker text after.
        quoted = (d.quote + d.null + d.quote).encode() if d.null and d.quote else b""
        swapped = 0
        if quoted and quoted in data:
            data, swapped = self._quoted_null_pattern().subn(quoted.replace(d.null.encode(), _QUOTED_NULL), data)
        frame = pl.read_csv(
            data,
            has_header=False,
            separator=d.delimiter,
            quote_char=d.quote or None,
            new_columns=self._columns,
            schema={c: pl.String for c in self._columns},
            null_values=(
                None if not d.null
                else [d.null] if self.null_columns is None
                else {c: d.null for c in self.null_columns}
            ),
            # PostgreSQL's rule: with another null marker, an empty field is an empty string.
            empty_string_is_null=not d.null,
            infer_schema=False,
            raise_if_empty=False,
        )
        if swapped:
            sentinel = _QUOTED_NULL.decode()
            frame = frame.with_columns(
                pl.when(pl.col(c) == sentinel).then(pl.lit(d.null)).otherwise(pl.col(c)).alias(c)
                for c in frame.columns
            )
        return frame

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
        odd: bool | None = None,
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
                if self._fields_fit(data, frame):
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
            values: list[str | None] = []
            if reason is None:
                for (value, quoted), name in zip(fields, self._columns):
                    if not quoted and value == marker and name in nulls:
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

    def _fields_fit(self, data: bytes, frame: pl.DataFrame) -> bool:
        """True when every parsed row had all its fields (polars fills missing ones with null).

        Every delimiter in the data either separates two fields or sits in a (quoted) value.
        polars refuses rows with too many fields, so the separators add up to
        height * (columns - 1) exactly when no row is short (a blank line counts as short).
        """
        n = len(self._columns)
        if n == 1 or not frame.height:
            return True
        if not self.dialect.null and not frame.get_column(frame.columns[-1]).null_count():
            return True  # a short row leaves its last field null: none is, so none is short
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

    def batches(self, batch_rows: int, skip_rows: int = 0) -> Iterator[Batch]:
        for batch in self.batches_with_bad(batch_rows, skip_rows):
            if batch.bad:
                first = batch.bad[0]
                raise SourceError(first.reason, path=str(self.path), line=first.line)
            yield batch

    def batches_with_bad(self, batch_rows: int, skip_rows: int = 0) -> Iterator[Batch]:
        def parts() -> Iterator[tuple[pl.DataFrame, int, list[BadRecord]]]:
            row, line, offset = 0, 1 + self._header_lines, 0
            for chunk in self.raw_chunks(tolerant=True):
                frame, bad = self.parse_records(
                    chunk.data, row, line, offset, final=chunk.bytes_read >= self.size, odd=chunk.odd
                )
                yield frame, chunk.bytes_read, bad
                row += frame.height + len(bad)
                line += chunk.data.count(b"\n")
                offset += len(chunk.data)

        yield from rebatch_parts(parts(), batch_rows, skip_rows)

    def locate(self, row: int) -> tuple[int | None, str | None]:
        """Slow on purpose: only error reports ask, so it rescans the file."""
        line = 1 + self._header_lines
        q = self.dialect.quote.encode()
        index = 0
        try:
            for chunk in self.raw_chunks(tolerant=True):
                n = chunk.data.count(b"\n") if not q or q not in chunk.data else -1
                if n >= 0 and index + n <= row:  # no quotes: one record per line, skip it whole
                    index += n
                    line += n
                    continue
                for start_line, start, end, _closed in split_records(chunk.data, q, line,
                                                                     self.dialect.delimiter.encode()):
                    if index == row:
                        return start_line, record_text(chunk.data[start:end])
                    index += 1
                line += chunk.data.count(b"\n")
        except SourceError:
            return None, None
        return None, None


    def row_at_data_line(self, data_line: int) -> int | None:
        """The row at COPY's "line N" when the file's data bytes went to COPY unparsed.

        COPY counts physical lines, except newlines inside quotes of the first record it
        reads: it learns the line-ending style only when that record ends. So every
        record after the first sits that many lines further down than N says.
        """
        q = self.dialect.quote.encode()
        index, line = 0, 1 + self._header_lines
        target = data_line + self._header_lines
        try:
            for chunk in self.raw_chunks(tolerant=True):
                if index == 0 and data_line > 1:
                    first = next(split_records(chunk.data, q, line), None)
                    if first is not None:
                        target += chunk.data.count(b"\n", first[1], first[2])
                if not q or q not in chunk.data:  # no quotes: one record per line
                    n = chunk.data.count(b"\n")
                    if line + n <= target:
                        index, line = index + n, line + n
                        continue
                    return index + (target - line)
                found = None
                for start_line, _start, _end, _closed in split_records(chunk.data, q, line):
                    if start_line > target:
                        return found
                    found = index
                    index += 1
                line += chunk.data.count(b"\n")
                if line > target:
                    return found
        except SourceError:
            return None
        return None


def _polars_reason(exc: Exception) -> str:
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return f"cannot be parsed: {first[:200]}"


_QUOTED_NULL = b"\x01sluice:quoted-null-marker\x01"  # stands in for a quoted null marker while parsing


def _unique_names(names: list[str]) -> list[str]:
    seen: dict[str, int] = {}
    out = []
    for n in names:
        if n in seen:
            seen[n] += 1
            out.append(f"{n}_{seen[n]}")
        else:
            seen[n] = 1
            out.append(n)
    return out
