"""The file's own bytes as chunks: whole-record byte ranges, and the reads that send them.

A run that loads a CSV file's own bytes cuts it at record boundaries (csv_records.record_cuts);
`byte_pieces` makes the ranges between the cuts that an earlier run has not committed (`Ranges`),
and a stream reads its range with `read_records`, in newline-ending slices for one COPY.
`raw_pieces` hands out the source's own chunks of bytes instead. Where the bytes cannot go to
COPY as they are, `Reparse` sends the rest of the load through the parser. `Piece`, the chunk a
stream takes, lives here with the code that cuts it; the streams are in chunked.py.
"""

from __future__ import annotations

import bisect
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from core.errors import LoadFailed
from core.sources.base import BadRecord, Source
from core.sources.csv_records import BareQuoteIn, EndsInQuote

if TYPE_CHECKING:
    import polars as pl


class Reparse(Exception):
    """The file's own bytes cannot go to COPY here; load the rest through the parser."""


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


def raw_pieces(source: Source, done: Ranges, count: Callable[[bytes], int]) -> Iterator[Piece]:
    """The file's own records, chunk by chunk; committed chunks are passed over."""
    lo = 0
    for chunk in source.raw_chunks():  # type: ignore[attr-defined]
        if chunk.odd:
            raise Reparse("a quote inside an unquoted field, which COPY would read differently")
        if chunk.refused:
            raise Reparse("a relative date word (now, today, ...) in a date or time column")
        hi = lo + count(chunk.data)
        gaps = done.gaps(lo, hi)
        if gaps == [(lo, hi)] and hi > lo:
            yield Piece(lo, hi, chunk.bytes_read, data=chunk.data)
        elif gaps:
            raise Reparse("the earlier run cut the file into other chunks")
        lo = hi


def byte_pieces(cuts: Iterator[int], done: Ranges) -> Iterator[Piece]:
    """The byte ranges between record boundaries `cuts` (data start, ..., file end) that are
    not committed. Committed ranges end at record boundaries too, so a chunk an earlier run
    cut elsewhere leaves gaps that are whole records."""
    try:
        prev = next(cuts)
        for cut in cuts:
            for lo, hi in done.gaps(prev, cut):
                yield Piece(lo, hi, hi, by_bytes=True)
            prev = cut
    except (EndsInQuote, BareQuoteIn) as why:
        raise Reparse(str(why)) from None


SLICE_BYTES = 8 << 20  # a stream holds this much of its chunk at a time, however large the chunk


def read_records(fd: int, lo: int, hi: int, slice_bytes: int = SLICE_BYTES) -> Iterator[memoryview]:
    """File bytes lo .. hi - 1 (whole records) in slices ending at a newline, for one COPY.

    The reader that cut the range checked it for bare quotes (csv_records.record_cuts), so the
    stream only reads and sends: one pread per slice, no per-byte Python work.
    """
    at = lo
    while at < hi:
        want = min(slice_bytes, hi - at)
        while True:
            data = os.pread(fd, want, at)
            if len(data) < want:
                raise LoadFailed("the file got shorter during the load; the chunks committed so far stay")
            end = len(data) if at + want == hi else data.rfind(b"\n") + 1
            if end:
                break
            want = min(2 * want, hi - at)  # one record longer than a slice: take more
        yield memoryview(data)[:end]
        at += end
