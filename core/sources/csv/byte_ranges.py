"""The file's own bytes as chunks: whole-record byte ranges, and the reads that send them.

A run that loads a CSV file's own bytes cuts it at record boundaries (csv_records.record_cuts);
`byte_pieces` makes the ranges between the cuts that an earlier run has not committed (`Ranges`),
and a stream reads its range with `read_records`, in newline-ending slices for one COPY.
`raw_pieces` hands out the source's own chunks of bytes instead. Where the bytes cannot go to
COPY as they are, `ParseInstead` sends the rest of the load through the parser. `Piece`, the chunk a
stream takes, lives here with the code that cuts it; the streams are in chunked.py.
"""

from __future__ import annotations

import bisect
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from core.errors import LoadFailed, ParseInstead
from core.sources.base import BadRecord
from core.sources.csv.records import BareQuoteIn, Cut, EndsInQuote, record_cut

if TYPE_CHECKING:
    import polars as pl

    from core.sources.abilities import RawCsvChunks


@dataclass(frozen=True)
class Piece:
    """Source rows lo .. hi - 1, as the file's own bytes or as mapped rows (bad records aside)."""

    lo: int
    hi: int
    bytes_end: int  # source position after the chunk, for progress
    data: bytes | None = None
    frame: pl.DataFrame | None = None
    first: int = 0  # source row of frame row 0
    bad: tuple[BadRecord, ...] = ()
    by_bytes: bool = False  # lo .. hi - 1 are file bytes, which the stream reads itself
    records: int = -1  # of a byte range, when the reader that cut it counted them (else the stream counts)
    plain: bool = False  # a byte range with no quote and no backslash (records.is_plain): COPY's text format reads it

    def rows(self, loaded: int, rejected: int) -> int:
        """Source rows the chunk consumed (a byte range holds what COPY counted)."""
        return loaded + rejected if self.by_bytes else self.hi - self.lo


class Ranges:
    """Committed source row ranges, sorted and disjoint."""

    def __init__(self, pairs: list[tuple[int, int]]) -> None:
        self.pairs = sorted(pairs)
        self.los = [lo for lo, _ in self.pairs]

    def gaps(self, lo: int, hi: int) -> list[tuple[int, int]]:
        """The parts of lo .. hi - 1 that are not committed."""
        out, at = [], lo
        i = max(0, bisect.bisect_right(self.los, lo) - 1)
        while at < hi and i < len(self.pairs):
            a, b = self.pairs[i]
            if b <= at:
                i += 1
                continue
            if a >= hi:
                break
            if a > at:
                out.append((at, a))
            at = max(at, b)
            i += 1
        if at < hi:
            out.append((at, hi))
        return out


def raw_pieces(source: RawCsvChunks, done: Ranges, count: Callable[[bytes], int]) -> Iterator[Piece]:
    """The file's own records, chunk by chunk; committed chunks are passed over."""
    lo = 0
    for chunk in source.raw_chunks():
        if chunk.odd:
            raise ParseInstead("a quote inside an unquoted field, which COPY would read differently")
        if chunk.refused:
            raise ParseInstead("a relative date word (now, today, ...) in a date or time column")
        hi = lo + count(chunk.data)
        gaps = done.gaps(lo, hi)
        if gaps == [(lo, hi)] and hi > lo:
            yield Piece(lo, hi, chunk.bytes_read, data=chunk.data)
        elif gaps:
            raise ParseInstead("the earlier run cut the file into other chunks")
        lo = hi


def byte_pieces(cuts: Iterator[int], done: Ranges) -> Iterator[Piece]:
    """The byte ranges between record boundaries `cuts` (data start, ..., file end) that are
    not committed. Committed ranges end at record boundaries too, so a chunk an earlier run
    cut elsewhere leaves gaps that are whole records."""
    try:
        prev = next(cuts)
        for cut in cuts:
            for lo, hi in done.gaps(prev, cut):
                whole = (lo, hi) == (prev, cut)  # a part of a chunk (an earlier run's) was not counted
                counted = cut if whole and isinstance(cut, Cut) else None
                yield Piece(lo, hi, hi, by_bytes=True, records=counted.records if counted is not None else -1,
                            plain=counted is not None and counted.plain)
            prev = cut
    except (EndsInQuote, BareQuoteIn) as why:
        raise ParseInstead(str(why)) from None


SLICE_BYTES = 8 << 20  # a stream holds this much of its chunk at a time, however large the chunk


def read_bytes(fd: int, lo: int, hi: int, slice_bytes: int = SLICE_BYTES) -> Iterator[bytes]:
    """File bytes lo .. hi - 1 for one COPY, in slices cut anywhere: for a range whose records the
    reader that cut it counted (Piece.records), nothing is counted here."""
    at = lo
    while at < hi:
        data = os.pread(fd, min(slice_bytes, hi - at), at)
        if not data:
            raise LoadFailed("the file got shorter during the load; the chunks committed so far stay")
        yield data
        at += len(data)


def read_records(fd: int, lo: int, hi: int, slice_bytes: int | None = None, quote: bytes = b'"'
                 ) -> Iterator[memoryview]:
    """File bytes lo .. hi - 1 (whole records) in slices of whole records, for one COPY.

    The reader that cut the range checked it for bare quotes (csv_records.record_cuts), so a
    slice ends at its last newline outside quotes and can be counted on its own (slices cut at
    any newline, one inside a quoted field among them, made a stream's count of a range differ
    from the server's, and a per-batch parallel load of such a file fail). One pread per slice,
    and a count of its quotes.
    """
    at, slice_bytes = lo, slice_bytes or SLICE_BYTES
    while at < hi:
        want = min(slice_bytes, hi - at)
        while True:
            data = os.pread(fd, want, at)
            if len(data) < want:
                raise LoadFailed("the file got shorter during the load; the chunks committed so far stay")
            end = len(data) if at + want == hi else record_cut(data, quote)
            if end:
                break
            want = min(2 * want, hi - at)  # one record longer than a slice: take more
        yield memoryview(data)[:end]
        at += end
