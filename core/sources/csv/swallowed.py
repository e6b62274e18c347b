"""A quote that never closes: a quoted field that swallows whole records (issue 26 item 5).

A field opening with a quote that the file never closes where it should runs on until the next
quote character, which may be a hundred lines below: COPY (and psql) then load those lines as one
value, and report success. Such a value has a shape no real one has: the lines inside it hold no
quote (the first would have closed it) and exactly the file's record width of delimiters, like
the records around it. A field is taken for one when enough of its inner lines (not the first,
which continues the opening line, nor the last, which starts the closing one) are shaped so, and
most of them are:

    columns  2    3-4  5+
    lines    4    2    1

(few delimiters per line are common in prose; six commas and no quote on every line are not).

Only chunks whose records span lines are looked at (a file without quoted newlines costs one
count of its newlines), and first with numpy, line by line at once: whole lines inside a quoted
field, with no quote and the record's width of delimiters. Only a chunk that has enough of them
is read record by record.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, NamedTuple

import polars as pl

from core.sources.base import BadRecord
from core.sources.csv.records import (
    lend_numpy,
    numpy_lent,
    quote_positions,
    record_text,
    records_and_lines,
    split_records,
    where_byte,
)

_NUMPY_BYTES = 1 << 16  # below this, numpy's start-up per call costs more than it saves


def _needed(columns: int) -> int:
    return 4 if columns <= 2 else 2 if columns <= 4 else 1


def _multiline_quoted(rec: bytes, d: bytes, q: bytes) -> Iterator[tuple[int, int]]:
    """(start, end) of each quoted value in `rec` that holds a newline; linear (str.find jumps)."""
    pos, n = 0, len(rec)
    while pos < n:
        if rec.startswith(q, pos):
            i = pos + 1
            while True:
                j = rec.find(q, i)
                if j < 0:
                    j = n
                    break
                if rec.startswith(q, j + 1):
                    i = j + 2  # a doubled quote: part of the value
                    continue
                break
            if rec.find(b"\n", pos + 1, j) >= 0:
                yield pos + 1, j
            nxt = rec.find(d, j)
        else:
            nxt = rec.find(d, pos)
        if nxt < 0:
            return
        pos = nxt + 1


def swallowing(rec: bytes, delimiter: bytes, quote: bytes, columns: int, line: int) -> str | None:
    """Why the record starting at `line` holds a quoted field that swallowed records, or None."""
    if not quote or columns < 2 or b"\n" not in rec:
        return None
    for start, end in _multiline_quoted(rec, delimiter, quote):
        inner = rec[start:end].split(b"\n")[1:-1]
        shaped = sum(1 for ln in inner if ln.count(delimiter) == columns - 1 and quote not in ln)
        if shaped >= _needed(columns) and shaped >= 0.8 * len(inner):
            opened = line + rec.count(b"\n", 0, start)
            closed = opened + rec.count(b"\n", start, end)
            d = "a tab" if delimiter == b"\t" else repr(delimiter.decode("utf-8", "replace"))
            return (f"a quoted field opens at line {opened} and closes only at line {closed}, holding {shaped:,} "
                    f"line{'s' if shaped != 1 else ''} shaped like whole records ({columns - 1} {d} delimiters, no "
                    f"quote): a quote that never closes? Check the {quote.decode()} at line {opened}")
    return None


def likely(data: bytes, delimiter: bytes, quote: bytes, columns: int) -> bool:
    """Whether `data` (whole records) has enough whole lines inside quoted fields shaped like
    records for find() to be worth running: a few passes of numpy over the bytes."""
    return counted(data, delimiter, quote, columns)[2]


class Counted(NamedTuple):
    records: int
    lines: int
    likely: bool  # see likely()
    # Where each record's newline stands in the data, when numpy counted them (else None): the
    # parser then looks at the records a missing field could explain alone (CsvRecordParsing).
    ends: Any = None


def counted(data: bytes, delimiter: bytes, quote: bytes, columns: int) -> Counted:
    """(records, lines, likely(), record ends) of `data` (whole records), the records and lines as
    records_and_lines() counts them, in one pass: the quotes before each line end say both
    whether it ends a record (an even count) and whether the line after it lies inside a
    quoted field; only such lines with no quote of their own have their delimiters counted.
    A small chunk is counted with bytes methods, and looked at with numpy only when some
    record spans lines."""
    if not quote or quote not in data or len(delimiter) != 1 or len(quote) != 1:
        return Counted(*records_and_lines(data, quote), False)
    if len(data) < _NUMPY_BYTES or not numpy_lent():
        # (Until numpy is lent, bytes methods count: importing it here held the first chunk of a
        # file with quotes back 50 ms, the server waiting; most files need it for no chunk.)
        records, lines = records_and_lines(data, quote)
        if lines <= records or columns < 2:
            return Counted(records, lines, False)
    import numpy as np

    lend_numpy()  # imported now anyway: the bare-quote test and the counts use it from here on
    ends = where_byte(np, data, 10)
    before = np.searchsorted(quote_positions(np, data, quote[0]), ends)  # quotes before each line end
    closing = (before & 1) == 0
    last = 1 if not data.endswith(b"\n") else 0  # the file's last record, with no newline
    records = int(np.count_nonzero(closing)) + last
    record_ends = None if last else ends[closing]
    if columns < 2 or len(ends) <= records:
        return Counted(records, len(ends), False, record_ends)
    # Line k + 1 lies inside a quoted field, with no quote of its own.
    inside = np.flatnonzero(((before[:-1] & 1) == 1) & (before[1:] == before[:-1]))
    need = _needed(columns)
    if len(inside) < need:
        return Counted(records, len(ends), False, record_ends)
    starts, stops = ends[inside] + 1, ends[inside + 1]
    if len(inside) <= 512:
        shaped = sum(1 for s, e in zip(starts.tolist(), stops.tolist(), strict=True)
                     if data.count(delimiter, s, e) == columns - 1)
    else:
        at = where_byte(np, data, delimiter[0])
        shaped = int(np.count_nonzero(np.searchsorted(at, stops) - np.searchsorted(at, starts) == columns - 1))
    return Counted(records, len(ends), shaped >= need, record_ends)


def first_found(data: bytes, delimiter: bytes, quote: bytes, columns: int, first_line: int
                ) -> tuple[int, str] | None:
    """(start line, why) of the first swallowing record of `data` (whole records), or None."""
    if not likely(data, delimiter, quote, columns):
        return None
    return next(((line, why) for _i, line, _rec, why in find(data, delimiter, quote, columns, first_line)), None)


def find(data: bytes, delimiter: bytes, quote: bytes, columns: int, first_line: int
         ) -> Iterator[tuple[int, int, bytes, str]]:
    """(record index, start line, record bytes, reason) of each swallowing record in `data`."""
    for index, (line, start, end, _closed) in enumerate(split_records(data, quote, first_line)):
        rec = data[start:end]
        why = swallowing(rec, delimiter, quote, columns, line)
        if why is not None:
            yield index, line, rec, why


def set_apart(data: bytes, frame: pl.DataFrame, bad: list[BadRecord], first_row: int, first_line: int,
              delimiter: bytes, quote: bytes) -> tuple[pl.DataFrame, list[BadRecord]]:
    """A parsed chunk with its swallowing records moved from the good rows to the malformed ones."""
    if data.count(b"\n") <= frame.height + len(bad) or not likely(data, delimiter, quote, frame.width):
        return frame, bad
    known = {b.row for b in bad}
    found = [(first_row + i, line, rec, why) for i, line, rec, why in find(data, delimiter, quote, frame.width,
                                                                          first_line)
             if first_row + i not in known]
    if not found:
        return frame, bad
    drop = set()
    for row, _line, _rec, _why in found:
        drop.add(row - first_row - sum(1 for r in known if r < row))  # its place among the good rows
    keep = pl.Series([i not in drop for i in range(frame.height)])
    more = [BadRecord(row, line, record_text(rec), why) for row, line, rec, why in found]
    return frame.filter(keep), sorted(bad + more, key=lambda b: b.row)
