"""CSV records in raw bytes: where they end, how many fields they hold, and quotes that
PostgreSQL's COPY and a field-by-field reader would read differently.

Pure byte work, shared by the CSV source (cutting chunks, parsing, locating a row) and
the load (counting the rows a raw COPY sent). Linear time, C-speed bytes methods where
the hot path runs (a chunk of a gigabyte file), Python only for the rare odd chunk.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator
from typing import Any, AnyStr

# Above this size, counts and the bare-quote check run in numpy once a path that loads it
# anyway (copy-binary) has lent it: numpy's loops let go of the GIL, which the parsing,
# typing and sending threads otherwise queue for (bytes methods and `re` hold it throughout).
# Other paths never import numpy for this: its import costs more than it saves there.
_NUMPY_BYTES = 1 << 16
_numpy: Any = None


def lend_numpy() -> None:
    """Let the counts below use numpy (call once it is imported, from a thread that needs it)."""
    global _numpy
    import numpy

    _numpy = numpy


def numpy_lent() -> bool:
    return _numpy is not None


def _loaded_numpy(data: bytes | memoryview) -> Any:
    return _numpy if len(data) >= _NUMPY_BYTES else None


def count_byte(data: bytes, byte: bytes) -> int:
    """How many times the one-byte `byte` occurs in `data` (data.count(byte))."""
    np = _loaded_numpy(data)
    if np is None or len(byte) != 1:
        return data.count(byte)
    b = np.frombuffer(data, dtype=np.uint8)
    return sum(int(np.count_nonzero(b[i:i + _WINDOW] == byte[0])) for i in _windows(len(b)))


def record_cut(buf: bytes, quote: bytes, start: int = 0, parity: int = 0) -> int:
    """Index just after the last newline in `buf` that is outside quotes (0 if none).

    `buf` must start at a record boundary, so an even number of quote characters
    before a newline means it ends a record (doubled quotes keep parity even).
    Newlines before `start` are not looked at (known not to end a record). `parity` is
    1 when `buf` continues a record after an odd number of quotes (inside a quoted field).
    """
    end = len(buf)
    i = buf.rfind(b"\n", start)
    if not quote or buf.find(quote) < 0:
        return 0 if parity % 2 else i + 1
    total = count_byte(buf, quote) + parity
    after = 0
    while i >= start:
        after += buf.count(quote, i, end)
        end = i
        if (total - after) % 2 == 0:
            return i + 1
        i = buf.rfind(b"\n", start, i)
    return 0


def split_records(
    data: bytes, quote: bytes, first_line: int, delimiter: bytes = b""
) -> Iterator[tuple[int, int, int, bool]]:
    """(start line, start, end, closed) of each record in `data`, end excluding its newline.

    Records end at a newline outside quotes, as record_cut and PostgreSQL's COPY see it;
    `closed` is False for a last record that ends inside a quoted field. Data holding a
    bare quote (given the delimiter) is split as scan_records reads it.
    """
    if delimiter and has_bare_quote(data, delimiter, quote):
        for line, start, end, closed, _fields in scan_records(data, delimiter, quote, first_line):
            yield line, start, end, closed
        return
    pos = start = 0
    line = rec_line = first_line
    inside = False
    size = len(data)
    while pos < size:
        nl = data.find(b"\n", pos)
        if nl < 0:
            nl = size
        if quote and data.count(quote, pos, nl) % 2:
            inside = not inside
        if not inside:
            yield rec_line, start, nl, True
            start = nl + 1
            rec_line = line + 1
        line += 1
        pos = nl + 1
    if start < size:
        yield rec_line, start, size - 1 if data.endswith(b"\n") else size, not inside


def unclosed_reason(record: bytes, line: int, quote: bytes) -> str:
    """Why a last record that ends inside quotes is malformed (it starts at `line`)."""
    at = record.find(quote)
    opened = line + record.count(b"\n", 0, at) if at >= 0 else line
    return f"quoted field opened at line {opened} never closes (the rest of the file is this one record)"


def count_fields(record: AnyStr, delimiter: AnyStr, quote: AnyStr) -> int:
    """Fields in one record, quotes toggling wherever they stand (PostgreSQL's CSV rule)."""
    if not quote or quote not in record:
        return record.count(delimiter) + 1
    outside = record.split(quote)[::2]  # the parts between pairs of quotes
    return sum(part.count(delimiter) for part in outside) + 1


def record_text(raw: bytes) -> str:
    """A record for messages and the reject file: invalid bytes and NULs escaped, no line end."""
    text = raw.decode("utf-8", errors="backslashreplace").replace("\x00", "\\x00")
    return text[:-1] if text.endswith("\r") else text


def has_bare_quote(data: bytes | memoryview, delimiter: bytes, quote: bytes) -> bool:
    """True when some quote neither opens, closes nor doubles a quoted field.

    Such a quote (37°36'37.8"N, or text after a closing quote as in "a"b) is where
    PostgreSQL's CSV reader, which lets a quote toggle quoting anywhere, and a reader
    that quotes only whole fields part ways: a quote with an ordinary byte (not the
    delimiter, a line end or a quote) on both sides.

    The pattern starts with the quote itself, so the regex engine skips from quote to quote
    at C speed and looks at the two neighbours only there; nothing is copied. (Mapping bytes
    to classes and searching with polars took 3-15 times longer; measured on the bench files.)
    """
    if not quote or len(quote) != 1 or len(delimiter) != 1:
        return False
    if isinstance(data, bytes) and quote not in data:  # (a memoryview's `in` compares ints)
        return False
    np = _loaded_numpy(data)
    if np is not None:
        return _numpy_bare_quote(np, data, delimiter[0], quote[0])
    return _bare_quote_pattern(delimiter, quote).search(data) is not None


def quote_positions(np: Any, data: bytes | memoryview, quote: int) -> Any:
    """Where `quote` stands in `data`, as a numpy array. The raw path asks twice of each chunk
    (the bare-quote test as it cuts it, then the counts): the last answer is kept for the same
    bytes object, one entry, replaced in one assignment (threads read it whole)."""
    last = _last_quotes
    if last is not None and last[0] is data and last[1] == quote:
        return last[2]
    at = where_byte(np, data, quote)
    _remember(data, quote, at)
    return at


def where_byte(np: Any, data: bytes | memoryview, byte: int) -> Any:
    """Where `byte` stands in `data`, as a numpy array, compared a window at a time (parallel-copy's
    cutter and streams, comparing whole chunks: some 100 MB more resident at the peak)."""
    b = np.frombuffer(data, dtype=np.uint8)
    kind = np.int32 if len(b) < 1 << 31 else np.int64  # half the memory of numpy's own int64
    if len(b) <= _WINDOW:
        return np.flatnonzero(b == byte).astype(kind)
    return np.concatenate([(np.flatnonzero(b[i:i + _WINDOW] == byte) + i).astype(kind) for i in _windows(len(b))])


# numpy compares bytes this many at a time: a whole 16 MB chunk at once made a 16 MB array of
# booleans per thread.
_WINDOW = 1 << 20


def _windows(size: int) -> range:
    return range(0, size, _WINDOW)


def _remember(data: bytes | memoryview, quote: int, at: Any) -> None:
    global _last_quotes
    _last_quotes = (data, quote, at)


_last_quotes: tuple[bytes | memoryview, int, Any] | None = None


def _numpy_bare_quote(np: Any, data: bytes | memoryview, delimiter: int, quote: int) -> bool:
    """has_bare_quote's test on the bytes around every quote at once."""
    b = np.frombuffer(data, dtype=np.uint8)
    at = quote_positions(np, data, quote)
    # A quote beside another quote (a doubled one, "" inside a value) has a neighbour that is
    # not ordinary: only lone quotes are looked at, found from the positions alone (JSON in CSV,
    # its quotes nearly all doubled: 0.70 -> 0.43 s a 128 MB file).
    apart = np.diff(at) > 1
    lone = np.ones(len(at), dtype=bool)
    lone[1:] &= apart
    lone[:-1] &= apart
    at = at[lone]
    inner = at[(at > 0) & (at < len(b) - 1)]  # a quote at either end has no ordinary byte beyond it
    special = np.zeros(256, dtype=bool)
    special[[delimiter, 13, 10, quote]] = True
    return bool(np.any(~special[b[inner - 1]] & ~special[b[inner + 1]]))


@functools.lru_cache(maxsize=16)
def _bare_quote_pattern(delimiter: bytes, quote: bytes) -> re.Pattern[bytes]:
    q = re.escape(quote)
    ordinary = b"[^" + re.escape(delimiter) + b"\r\n" + q + b"]"
    return re.compile(q + b"(?<=" + ordinary + q + b")(?=" + ordinary + b")")


def scan_records(
    data: bytes, delimiter: bytes, quote: bytes, first_line: int
) -> Iterator[tuple[int, int, int, bool, list[tuple[bytes, bool]]]]:
    """(start line, start, end, closed, fields) of each record, quoting whole fields only.

    The careful reading of records holding bare quotes: a quote opens a quoted field
    only at the field's start and is a plain character anywhere else; text after a
    closing quote is kept as written. Each field is (bytes, was quoted). `end` excludes
    the record's newline; `closed` is False for a last record inside an open quote.
    """
    n = len(data)
    pos, line = 0, first_line
    while pos < n:
        start, rec_line = pos, line
        fields: list[tuple[bytes, bool]] = []
        closed = True
        while True:
            if quote and data.startswith(quote, pos):
                parts: list[bytes] = []
                i = pos + 1
                while True:
                    j = data.find(quote, i)
                    if j < 0:
                        closed = False
                        parts.append(data[i:])
                        break
                    parts.append(data[i:j])
                    if data.startswith(quote, j + 1):
                        parts.append(quote)
                        i = j + 2
                        continue
                    i = j + 1
                    break
                if not closed:
                    fields.append((b"".join(parts), True))
                    line += data.count(b"\n", start, n)
                    yield rec_line, start, n - 1 if data.endswith(b"\n") else n, False, fields
                    return
                k = _field_end(data, delimiter, i)
                parts.append(data[i:k])
                value, quoted = b"".join(parts), True
            else:
                k = _field_end(data, delimiter, pos)
                value, quoted = data[pos:k], False
            if k >= n or data[k:k + 1] == b"\n":
                fields.append((value[:-1] if value.endswith(b"\r") else value, quoted))
                break
            fields.append((value, quoted))
            pos = k + 1
        line += data.count(b"\n", start, k) + 1
        yield rec_line, start, k, closed, fields
        pos = k + 1


def field_cut(buf: bytes, delimiter: bytes, quote: bytes) -> int:
    """Index just after the last whole record of `buf` read by scan_records (0 if none)."""
    cut = 0
    for _line, _start, end, closed, _fields in scan_records(buf, delimiter, quote, 1):
        if closed and end < len(buf):
            cut = end + 1
    return cut


def _field_end(data: bytes, delimiter: bytes, pos: int) -> int:
    d = data.find(delimiter, pos) if delimiter else -1
    nl = data.find(b"\n", pos)
    ends = [e for e in (d, nl) if e >= 0]
    return min(ends) if ends else len(data)


def first_record_end(buf: bytes, quote: bytes) -> int:
    """Index just after the first record of `buf` (its first newline outside quotes), 0 if none."""
    pos = 0
    while True:
        nl = buf.find(b"\n", pos)
        if nl < 0:
            return 0
        if not quote or buf.count(quote, 0, nl) % 2 == 0:
            return nl + 1
        pos = nl + 1


class EndsInQuote(ValueError):
    """The bytes end inside a quoted field."""


class BareQuoteIn(ValueError):
    """A chunk holds a quote that COPY and the parser would read differently (has_bare_quote)."""


class Cut(int):
    """A record boundary that record_cuts found, with the records between the cut before it and
    this one when its `look` counted them (-1 when nobody did), and whether those hold neither
    a quote nor a backslash (is_plain)."""

    records = -1
    plain = False


def is_plain(data: bytes, quote: bytes) -> bool:
    """No quote and no backslash in `data`: records that COPY's text format reads as its CSV
    format does (core.strategies.copy.plain_quote). Two memchr-speed scans."""
    return bool(quote) and quote not in data and b"\\" not in data


def record_cuts(fd: int, start: int, end: int, quote: bytes, every: int,
                longest: int = 64 << 20, delimiter: bytes = b"", first: tuple[int, ...] = (),
                taper: int = 0, look: Callable[[bytes], int] | None = None) -> Iterator[int]:
    """Record boundaries of the file bytes start .. end - 1 (both ends are boundaries), about
    `every` bytes apart (the first chunks `first` bytes long, when given): start, then each cut
    as it is found, then end. A rest shorter than a quarter of a chunk joins the chunk before it.

    With `taper` (streams sharing the chunks), a chunk is at most 1/taper of what is left,
    down to a quarter of `every`: the last chunks are small, so the streams finish together
    instead of one waiting on another's last big chunk.

    Each step reads `every` bytes from the last cut (a record boundary, so quote parity
    starts even) and keeps up to its last newline outside quotes (record_cut): one read and
    C-speed counting per byte, nothing per record. Raises EndsInQuote when the last
    record never closes its quote, ValueError when one record is longer than `longest`, and
    with a `delimiter`, BareQuoteIn before yielding the end of a chunk holding a bare quote:
    every cut yielded so far then lies before the first such quote, where COPY's records and
    the parser's are the same. `look(chunk)` sees each chunk's bytes (whole records) before its
    cut is yielded, and may refuse them by raising; it returns their records, and the cut is
    then a Cut that carries them (and whether they are plain): the streams that send the chunk
    need not read it to count.
    """
    import os

    yield start
    at, made = start, 0
    while at < end:
        want = first[made] if made < len(first) else every
        made += 1
        if taper:
            want = min(want, max(every // 4, (end - at) // taper))
        if end - at - want < want // 4:
            want = end - at  # no crumb of a chunk left at the end
        while True:
            buf = os.pread(fd, min(want, end - at), at)
            if at + len(buf) >= end:
                if quote and buf.count(quote) % 2:
                    raise EndsInQuote("the last record ends inside a quoted field")
                cut = len(buf)
                break
            cut = record_cut(buf, quote)
            if cut:
                break
            if want > longest:
                raise ValueError(f"a record longer than {longest >> 20} MB")
            want *= 2
        # One object for the chunk's bytes (a copy only when the cut falls short of the read), so
        # that the bare-quote test and the look share the quotes' positions (quote_positions).
        chunk = buf if cut == len(buf) else buf[:cut]
        if delimiter and has_bare_quote(chunk, delimiter, quote):
            raise BareQuoteIn("a quote inside an unquoted field, which COPY would read differently")
        at += cut
        if look is None:
            yield at
        else:
            counted = Cut(at)
            counted.records = look(chunk)
            counted.plain = is_plain(chunk, quote)
            yield counted
        if at >= end:
            return


def count_records(data: bytes, quote: bytes) -> int:
    """CSV records in `data` (whole records): newlines outside quoted fields, in linear time.

    Only quotes and newlines matter; a run of quotes counts by its parity (a doubled quote
    changes nothing), so what is left alternates outside/inside a quoted field.
    """
    return records_and_lines(data, quote)[0]


def records_and_lines(data: bytes, quote: bytes) -> tuple[int, int]:
    """count_records(), and the newlines `data` holds, in one pass over the bytes. With numpy
    lent, from where the quotes and newlines stand (a newline after an even number of quotes
    ends a record): no copy of the data, and no list of its pieces."""
    last = 1 if data and not data.endswith(b"\n") else 0  # the file's last record, with no newline
    if not quote or quote not in data:
        lines = data.count(b"\n")
        return lines + last, lines
    np = _loaded_numpy(data) if len(quote) == 1 else None
    if np is not None:
        ends = where_byte(np, data, 10)
        before = np.searchsorted(quote_positions(np, data, quote[0]), ends)
        return int(np.count_nonzero((before & 1) == 0)) + last, len(ends)
    if len(quote) == 1:
        data = data.translate(None, _not_newline_or(quote))
    lines = data.count(b"\n")
    if len(quote) == 1:
        data = data.replace(quote + quote, b"")
    return sum(part.count(b"\n") for part in data.split(quote)[::2]) + last, lines


@functools.lru_cache(maxsize=8)
def _not_newline_or(quote: bytes) -> bytes:
    """Every byte but the newline and `quote`: what count_records drops before counting."""
    keep = b"\n" + quote
    return bytes(b for b in range(256) if b not in keep)


def after_lines(buf: bytes, lines: int) -> int:
    """The offset just past the first `lines` newlines of `buf`; 0 if it holds fewer."""
    at = 0
    for _ in range(lines):
        at = buf.find(b"\n", at) + 1
        if not at:
            return 0
    return at
