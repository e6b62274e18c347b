"""CSV/TSV: the file decoded to UTF-8 and cut into whole records (csv.records says where
records end), then parsed by polars (csv.parse), or passed to COPY as they are. The records
start below the header (csv.header: the notes above it, the column names).

The same cut feeds three consumers: polars parsing (mapped loads), COPY of the
file's own bytes (the fast path), and the streams of parallel-copy.
"""

from __future__ import annotations

import codecs
import dataclasses
import itertools
from collections.abc import Callable, Iterable, Iterator

import polars as pl

from core.errors import SourceError
from core.sources.base import BadRecord, Batch, ParseLater, RawChunk, Source, rebatch_parts
from core.sources.csv import swallowed
from core.sources.csv.header import read_header
from core.sources.csv.parse import CsvRecordParsing
from core.sources.csv.records import (
    count_byte,
    field_cut,
    has_bare_quote,
    record_cut,
    record_text,
    records_and_lines,
    split_records,
    unclosed_reason,
)
from core.sources.sniff import CsvDialect, sniff_csv
from core.spec import SourceOptions

# Records are cut and parsed 4 MB at a time: on 1M mixed rows (91 MB) polars and the cutting
# took 0.30 CPU-s in 1 MB chunks, 0.23 in 4 MB, 0.21 in 16 MB; batches are cut from them anyway.
CHUNK_BYTES = 4 << 20
# While copy-binary's encoder loads, the file's own records go to COPY in small chunks, so
# that little is promised to the slower CSV path once the encoder is ready (core.load.warm_start).
WARM_CHUNK_BYTES = 1 << 20
# The first chunk is this small, and each next one twice the last up to the chunk size: the
# server waited 60 ms for a first 8 MB chunk to be read, counted and scanned (copy-csv, 35 MB),
# and it parses a MB more slowly than the reader looks at one.
FIRST_CHUNK_BYTES = 256 << 10
MAX_RECORD_BYTES = 64 << 20  # one record longer than this means a quote that never closes


class CsvSource(CsvRecordParsing, Source):
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
        header = read_header(self._utf8_blocks(1 << 20), self.dialect, str(self.path), MAX_RECORD_BYTES)
        self._header_end = header.end  # byte offset (in UTF-8 stream) of the first data record
        self._header_lines = header.lines  # lines above it: notes and the header
        self._columns = header.names
        self.null_columns = self._null_columns(options)
        self.empty_null_columns = self._empty_null_columns(options)

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

    def _empty_null_columns(self, options: SourceOptions) -> list[str]:
        """Where an empty field is NULL beside the marker (sniff._empty_in)."""
        d = self.dialect
        if not d.null:
            return []
        if options.empty_null_columns is not None:  # the window's sniffed marker, or a profile
            wanted = set(options.empty_null_columns)
            return [c for c in self._columns if c in wanted]
        if options.null is not None:
            return []  # a marker the user named: PostgreSQL's rule, an empty field is an empty string
        return [self._columns[i] for i in d.empty_null if i < len(self._columns)]

    # -- shape --------------------------------------------------------------------------

    def columns(self) -> list[str]:
        return list(self._columns)

    @property
    def quote(self) -> str:
        return self.dialect.quote

    # -- bytes --------------------------------------------------------------------------

    def _utf8_blocks(self, block: int, first: int | None = None) -> Iterator[bytes]:
        """The file as UTF-8 bytes, BOM removed, transcoded when it is in another encoding; read
        `first` bytes first, then twice as many each time, up to `block`."""
        size = min(first or block, block)
        enc = self.dialect.encoding.lower().replace("_", "-")
        passthrough = enc in ("utf-8", "utf8", "utf-8-sig")
        decoder = None if passthrough else codecs.getincrementaldecoder(self.dialect.encoding)("strict")
        cr_only = self.dialect.newline == "\r"
        try:
            with open(self.path, "rb") as f:
                # UTF-16/32 decoders read the byte order from the BOM themselves.
                f.seek(0 if enc in ("utf-16", "utf16", "utf-32", "utf32") else self.dialect.bom_bytes)
                while True:
                    raw = f.read(size)
                    size = min(block, size * 2)
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

    def raw_chunks(self, chunk_bytes: int | None = None, *, tolerant: bool = False,
                   refusals: bool = True) -> Iterator[RawChunk]:
        """Whole data records, about chunk_bytes at a time, header skipped.

        A file that ends inside a quoted field, or holds one that swallowed whole records
        (core.sources.csv.swallowed), raises SourceError naming the lines, unless `tolerant` (the parsed
        path, which turns them into bad records). Chunks for COPY come with their records counted.
        """
        chunks = self._raw_chunks(chunk_bytes, tolerant=tolerant, refusals=refusals)
        return chunks if tolerant else self._counted_whole(chunks)

    def _counted_whole(self, chunks: Iterator[RawChunk]) -> Iterator[RawChunk]:
        """COPY's chunks, each with its records counted; one with a quoted field that swallowed
        records is refused here, where COPY would take it as one long value."""
        q, d = self.dialect.quote.encode(), self.dialect.delimiter.encode()
        consumed = 0
        for chunk in chunks:
            nul = chunk.data.find(b"\x00")
            if nul >= 0:  # COPY would refuse it as an encoding error; the parser names its record
                raise SourceError("contains a NUL byte", path=str(self.path),
                                  line=self._line_at(self._header_end + consumed + nul))
            records, lines, suspect, ends = swallowed.counted(chunk.data, d, q, len(self._columns))
            if suspect and not chunk.odd:
                found = swallowed.first_found(chunk.data, d, q, len(self._columns),
                                            self._line_at(self._header_end + consumed))
                if found is not None:
                    raise SourceError(found[1], path=str(self.path), line=found[0])
            consumed += len(chunk.data)
            yield dataclasses.replace(chunk, records=records, lines=lines, unswallowed=not chunk.odd, ends=ends)

    def _raw_chunks(self, chunk_bytes: int | None = None, *, tolerant: bool = False,
                    refusals: bool = True) -> Iterator[RawChunk]:
        unlooked = tolerant or not refusals  # the chunks' refused values are not looked for here
        chunk_bytes = chunk_bytes or CHUNK_BYTES
        q = self.dialect.quote.encode()
        d = self.dialect.delimiter.encode()
        buf = b""
        consumed = 0  # data bytes handed out, counted in the UTF-8 stream
        scanned = 0  # buf[:scanned] is known to hold no record end
        skip = self._header_end
        first = min(chunk_bytes, FIRST_CHUNK_BYTES)
        want = first // 2  # a chunk's size: it grows as the blocks do
        for data in self._utf8_blocks(chunk_bytes, first=first + skip):
            want = min(chunk_bytes, want * 2)
            if skip:
                take = min(skip, len(data))
                data, skip = data[take:], skip - take
            if buf and not scanned and len(buf) < want <= len(buf) + len(data):
                # The usual step: the rest of the last chunk (a record's start) and a whole
                # block. The cut is found in the block, the rest's quotes counted in, and the
                # chunk is joined with one copy (concatenating, then slicing, took two).
                cut = record_cut(data, q, parity=count_byte(buf, q) % 2 if q else 0)
                if cut:
                    chunk = b"".join((buf, memoryview(data)[:cut]))
                    if not has_bare_quote(chunk, d, q):
                        consumed += len(chunk)
                        yield self._raw(RawChunk(chunk, self._progress(consumed), False), unlooked)
                        buf = data[cut:]
                        continue
                    data = data[cut:]  # a bare quote: cut field by field below
                    buf = chunk
            buf = buf + data if buf else data
            if len(buf) < want:
                continue
            odd = has_bare_quote(buf, d, q)
            cut = field_cut(buf, d, q) if odd else record_cut(buf, q, scanned)
            if cut == 0:  # one record longer than a chunk: keep reading, up to a limit
                if len(buf) > MAX_RECORD_BYTES:
                    raise self._runaway(buf, consumed)
                scanned = len(buf)
                continue
            scanned = 0
            consumed += cut
            yield self._raw(RawChunk(buf[:cut], self._progress(consumed), odd), unlooked)
            buf = buf[cut:]
        if buf:
            odd = has_bare_quote(buf, d, q)
            if not tolerant and q and buf.count(q) % 2 and not odd:
                raise self._unclosed(buf, consumed)
            if not buf.endswith(b"\n"):
                buf += b"\n"
            yield self._raw(RawChunk(buf, self.size, odd), unlooked)

    def _raw(self, chunk: RawChunk, unlooked: bool) -> RawChunk:
        """A chunk for COPY as it is, marked `refused` when it holds a value the client refuses
        (see core.relative_dates); the parser's own chunks (`unlooked`) are not looked at here."""
        if unlooked or self.refuse is None or chunk.odd or not self.refuse.raw_refused(self, chunk.data):
            return chunk
        return dataclasses.replace(chunk, refused=True)

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

    def batches(self, batch_rows: int, skip_rows: int = 0) -> Iterator[Batch]:
        for batch in self.batches_with_bad(batch_rows, skip_rows):
            if batch.bad:
                first = batch.bad[0]
                raise SourceError(first.reason, path=str(self.path), line=first.line)
            yield batch

    def batches_with_bad(self, batch_rows: int, skip_rows: int = 0) -> Iterator[Batch]:
        yield from rebatch_parts(self._parts(self.raw_chunks(tolerant=True), 0, 1 + self._header_lines, 0),
                                 batch_rows, skip_rows)

    def _parts(self, chunks: Iterable[RawChunk], row: int, line: int, offset: int
               ) -> Iterator[tuple[pl.DataFrame, int, list[BadRecord]]]:
        """Each chunk parsed: (good rows, position after it, malformed records); `row`, `line`
        and `offset` say where the first chunk starts."""
        for chunk in chunks:
            frame, bad = self.parse_records(
                chunk.data, row, line, offset, final=chunk.bytes_read >= self.size, odd=chunk.odd, ends=chunk.ends
            )
            # A quote that never closes, until one that swallowed records closes it (a unit of the
            # warm start was looked at as it was read: a second look cost its encoder a quarter).
            if not chunk.odd and not chunk.unswallowed:
                frame, bad = swallowed.set_apart(chunk.data, frame, bad, row, line,
                                                     self.dialect.delimiter.encode(), self.dialect.quote.encode())
            yield frame, chunk.bytes_read, bad
            row += frame.height + len(bad)
            line += count_byte(chunk.data, b"\n")
            offset += len(chunk.data)

    def raw_or_parsed(self, parse_now: Callable[[], bool], batch_rows: int, unit_bytes: int = CHUNK_BYTES,
                      raw_bytes: int | None = None) -> Iterator[RawChunk | ParseLater | Batch]:
        """The file's records in order, each chunk either as it is (for CSV COPY) or, when
        `parse_now()` says so as it is read, about `unit_bytes` of records left to parse_later()
        on the encoding stage (core.load.warm_start balances the two). From a chunk COPY would
        read differently (a bare quote), or holding a value the client refuses, the rest is
        parsed here, in batches."""
        # Refused values are looked for only in the chunks that go as they are: a unit is parsed,
        # and the parser refuses them itself (the scan cost a quarter of the reader's time).
        chunks = self.raw_chunks(raw_bytes or WARM_CHUNK_BYTES, refusals=False)
        q = self.dialect.quote.encode()
        row, line, offset = 0, 1 + self._header_lines, 0
        back: list[RawChunk] = []  # read ahead, and not for the unit being gathered
        while True:
            chunk = back.pop() if back else next(chunks, None)
            if chunk is None:
                return
            later = not chunk.odd and parse_now()
            if not later:
                chunk = self._raw(chunk, False)  # (an odd chunk is not looked at: it goes parsed)
                if chunk.odd or chunk.refused:
                    rest = itertools.chain([chunk], _regroup(chunks, CHUNK_BYTES))
                    yield from self._parsed(rest, batch_rows, row, line, offset)
                    return
            else:
                group, size = [chunk], len(chunk.data)
                while size < unit_bytes:
                    more = next(chunks, None)
                    if more is None:
                        break
                    if more.odd:
                        back.append(more)
                        break
                    group.append(more)
                    size += len(more.data)
                chunk = _joined(group)
            if chunk.lines < 0:  # (counted whole chunks carry both; a joined unit sums them)
                records, lines = records_and_lines(chunk.data, q)
                chunk = dataclasses.replace(chunk, records=records, lines=lines)
            records, lines = chunk.records, chunk.lines
            yield ParseLater(chunk, row, line, offset) if later else chunk
            row, line, offset = row + records, line + lines, offset + len(chunk.data)

    def parse_later(self, unit: ParseLater, batch_rows: int, *, guarded: bool = True) -> list[Batch]:
        """The records raw_or_parsed() left to parse, in batches; a malformed record raises
        SourceError naming its line. Without `guarded`, the caller looks for refused values
        itself in the batches that need it (see core.load.warm_start), except in a batch that
        holds a malformed record, where the first bad one in file order is named."""
        # The refused words' guard looks at the guarded columns of the parsed rows (49 ms per
        # 1M mixed rows); a literal scan of the unit's bytes first, to spare it, cost 178.
        return list(self._parsed([unit.chunk], batch_rows, unit.row, unit.line, unit.offset, guarded=guarded))

    def _parsed(self, chunks: Iterable[RawChunk], batch_rows: int, row: int, line: int, offset: int,
                *, guarded: bool = True) -> Iterator[Batch]:
        parsed = rebatch_parts(self._parts(chunks, row, line, offset), batch_rows, 0,
                               start=(row, offset + self._header_end + self.dialect.bom_bytes))
        if self.refuse is not None and guarded:
            parsed = self.refuse.apply(self, parsed, with_bad=False)  # raises at the first bad record
        unlooked: list[Batch] = []  # (not guarded: yielded before a malformed record, not looked at)
        for batch in parsed:
            if batch.bad:
                if self.refuse is not None and not guarded:  # a refused value before it is named first
                    for earlier in (*unlooked, batch):
                        self.refuse.check(self, earlier)
                first = batch.bad[0]
                raise SourceError(first.reason, path=str(self.path), line=first.line)
            if self.refuse is not None and not guarded:
                unlooked.append(batch)
            yield batch

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


def _regroup(chunks: Iterable[RawChunk], size: int) -> Iterator[RawChunk]:
    """Consecutive chunks joined into about `size` bytes (whole records stay whole)."""
    group: list[RawChunk] = []
    have = 0
    for chunk in chunks:
        group.append(chunk)
        have += len(chunk.data)
        if have >= size:
            yield _joined(group)
            group, have = [], 0
    if group:
        yield _joined(group)


def _joined(group: list[RawChunk]) -> RawChunk:
    if len(group) == 1:
        return group[0]
    counted = all(c.lines >= 0 for c in group)
    ends = None
    if all(c.ends is not None for c in group):
        import numpy as np  # (numpy counted them)

        at = np.cumsum([0] + [len(c.data) for c in group[:-1]])
        ends = np.concatenate([c.ends + a for c, a in zip(group, at.tolist(), strict=True)])
    return RawChunk(b"".join(c.data for c in group), group[-1].bytes_read, any(c.odd for c in group),
                    sum(c.records for c in group) if counted else -1, sum(c.lines for c in group) if counted else -1,
                    unswallowed=all(c.unswallowed for c in group), ends=ends)

