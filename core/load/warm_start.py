"""Warm start and balance: the server parses some of the file's records while the client encodes the rest.

copy-binary needs polars, pyarrow, numpy and pgpq before its first tuple can be encoded:
some 0.2 s of imports on one core, while the server, on the other, has nothing to do. And
once it runs, the client's parsing and encoding of a chunk can cost more than the server's
own parsing of the same bytes would (quoted text, timestamps with offsets): a client that is
the slower of the two leaves the server waiting. So when the file's own bytes could go to
COPY (a CSV mapped column for column, `abort` on error), the reader decides chunk by chunk, as
it reads, ahead of the sender: while the encoder has work queued (or is still loading), the
chunk goes as it is, in a CSV COPY statement the server parses; the moment the encoder is
idle, the next few MB are left to it to parse, type and send as binary COPY. Both stay
busy, and the split follows whatever each column type costs each side on this machine. The
chunks are sent in file order, in one transaction; every value reaches the table as
PostgreSQL's own CSV input or as the exactly typed binary form, which the fidelity tests hold
to be the same.

Only for files of WARM_MIN_BYTES or more. A refusal inside a raw part is reported by
running the load again through the parser (core.load.protocols.single turns it into
ParseInstead), which names the row exactly; one in a binary part is named by its row, the
raw parts' records counted.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from core import mapping as mp
from core.events import Phase
from core.first_bad import in_file_order
from core.load.stages import Prefetch, send_prepared
from core.sources.abilities import RawCsvSource
from core.sources.base import Batch, ParseLater, RawChunk, Source
from core.strategies.abilities import WarmStarts

if TYPE_CHECKING:
    from core.load.context import RunContext
    from core.plan import Plan
    from core.strategies.base import Strategy

# Below this size the whole file would go as CSV before the encoder is ready: such a file
# loads as copy-binary always did, every batch typed (the fidelity tests' files among them).
WARM_MIN_BYTES = 32 << 20
# How far the reader may run ahead of the sender, in bytes of the file held (a unit the encoder
# takes counts thrice: its text, its typed columns and its encoded tuples): while the encoder
# works on a unit, the raw chunks read before it keep the server busy, and this covers a unit's
# encoding (some 0.05 s) at the server's CSV pace. It also bounds the memory: with 12 units
# held, 24 MB peaked at 299 MB on the 5M-row mixed load, 12 MB at 255-264 MB (and 2-4% slower).
LOOKAHEAD_BYTES = 12 << 20
UNIT_BYTES = 2 << 20  # what the encoder is handed at a time: a few batches, one parse call
ENCODER_QUEUE = 1  # units with the encoder at once: the next is handed the moment it is idle
# Units handed and not yet sent, at most (each holds its text, columns and tuples). Units wait
# in file order behind the raw chunks read before them, so with 2 the encoder sat idle while
# the server parsed CSV: 12 sent twice the share as binary (1M mixed rows: 2.9 -> 2.4 s; 5M:
# 15.5 -> 10.9 s, peak RSS 287 MB). Where the server is the slower side, the encoded units wait
# for the sender up to this cap: on a machine where psql took 26 s over the 5M rows, 12 peaked at
# 256-313 MB, 8 at 221-252 MB, in the same time (medians of 4 interleaved: 14.70 and 14.69 s).
# Once the encoder was a tenth faster (2026-11-27), more of its units waited: 8 peaked at 265-283
# MB over the 5M rows; 6 at 249-262 in the same time (7.92 s both, 4 interleaved), and 4 at
# 239-243, but on the temporal shape 4 took 8% longer where 6 took what 8 did.
UNITS_HELD = 6
# Raw bytes held ahead of the sender at first, and the step by which that allowance grows when
# the sender had to wait for a unit (the server sat idle) or shrinks when the unit was ready (the
# server is the slower side, and a raw chunk costs it more than the unit it displaced). With the
# whole lookahead open to raw chunks, the server was still parsing 12 MB of CSV queued while
# the encoder loaded long after it was ready: 1M rows keyed by uuid sent 44% as CSV; with 2 MB,
# 32-36%, and in 4 interleaved rounds 1.49 -> 1.28 s (floats 1.87 -> 1.61, quoted 1.49 -> 1.31,
# temporal 1.93 -> 1.85, mixed 3.53 -> 3.43; 5M mixed 14.76 -> 14.77, json 3.43 -> 3.56 within
# the noise).
RAW_AHEAD = 2 << 20


def stream_warm(run: RunContext, strategy: Strategy, plan: Plan) -> None:
    source = plan.source
    assert isinstance(source, RawCsvSource) and isinstance(strategy, WarmStarts)  # the load chose both for it
    ready = strategy.ready
    maps, prepare, batch_rows = plan.maps, strategy.prepare, run.spec.rows_per_batch
    flow = _Flow(LOOKAHEAD_BYTES)
    sent = {"raw": 0, "binary": 0}

    def parse_now() -> bool:  # asked by the reader of each chunk it has read, before it goes anywhere
        return flow.decide(ready.is_set)

    def encode(item: ParseLater | Batch) -> list[tuple[Batch, Any, object]]:  # on the encoder's thread
        try:
            # Refused values (relative date words) are looked for only in a batch that goes as
            # text: one typed exactly holds none (1M mixed rows: the guard was 0.1 of 1.9 CPU-s).
            guard = source.refuse if isinstance(item, ParseLater) else None  # (a Batch was looked at)
            batches = source.parse_later(item, batch_rows, guarded=False) if isinstance(item, ParseLater) else [item]
            out = []
            for batch in batches:
                mapped = mp.apply(batch.frame, maps)
                prepared = prepare(mapped)
                if guard is not None and not strategy.typed(prepared):
                    guard.check(source, batch)
                out.append((batch, mapped, prepared))
            return out
        finally:
            flow.encoded()

    with ThreadPoolExecutor(1, thread_name_prefix="sluice-encoder") as encoder:
        def handed(items: Iterator[RawChunk | ParseLater | Batch]) -> Iterator[tuple[RawChunk | Future[Any], int]]:
            for item in items:  # on the reader's thread: units go to the encoder as soon as they are read
                if isinstance(item, RawChunk):
                    cost = len(item.data)
                    flow.hold(cost)
                    yield item, cost
                else:
                    cost = 3 * (len(item.chunk.data) if isinstance(item, ParseLater)
                                else int(item.frame.estimated_size()))
                    flow.hand_unit(cost)
                    yield encoder.submit(encode, item), cost

        def in_order(items: Iterable[tuple[RawChunk | Future[Any], int]]
                     ) -> Iterator[tuple[RawChunk | Batch, Any, object]]:
            for item, cost in items:
                if isinstance(item, RawChunk):
                    yield item, None, item.records
                    flow.sent(cost)
                else:
                    flow.reached(waited=not item.done())
                    yield from item.result()  # the encoder's error, at its place in the file
                    flow.sent(cost, unit=True)

        try:
            with Prefetch(handed(source.raw_or_parsed(parse_now, batch_rows, UNIT_BYTES)), depth=1 << 10) as items:
                try:
                    _send(run, strategy, source, in_file_order(in_order(items), strategy, reparse=True), sent)
                finally:
                    flow.close()  # a reader waiting for room stops waiting, so the Prefetch can join it
        finally:
            encoder.shutdown(wait=True, cancel_futures=True)
    source.check_unchanged()
    if sent["raw"]:
        total = sent["raw"] + sent["binary"]
        kind = "text (PostgreSQL's format)" if source.format == "pgtext" else "CSV"
        run.on_log(f"copy-binary: {sent['raw']:,} of {total:,} rows went as the file's own {kind}, parsed by the "
                   "server while the client's encoder loaded or was busy (warm start); the rest as binary")


def _send(run: RunContext, strategy: Strategy, source: Source,
          items: Iterable[tuple[RawChunk | Batch, Any, object]], sent: dict[str, int]) -> None:
    assert isinstance(strategy, WarmStarts)
    for item, mapped, prepared in items:
        run.cancel.check()
        source.check_unchanged()
        if isinstance(item, RawChunk):
            assert isinstance(prepared, int)
            strategy.write_warm(item.data, prepared)
            run.rows_read += prepared
            run.rows_loaded += prepared
            sent["raw"] += prepared
            run.bytes_read = item.bytes_read
            run.emit(Phase.LOADING)
        else:
            send_prepared(run, strategy, item, mapped, prepared)
            sent["binary"] += item.frame.height


class _Flow:
    """What the reader holds ahead of the sender, and what the encoder has: the reader asks
    decide() of each chunk it read. The encoder, once ready and idle, gets the next unit at
    once (whatever the reader holds: an idle encoder is the waste this avoids); otherwise the
    chunk goes as it is, when there is room for it and the raw allowance (reached) has some
    left (the reader waits until there is). Units held (handed, not yet sent) are capped, so
    memory stays bounded."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0  # bytes held: raw chunks, and units counted thrice
        self.raw = 0  # of which raw chunks
        self.raw_cap = RAW_AHEAD  # raw bytes held at most (see reached)
        self.busy = 0  # units with the encoder, not encoded yet
        self.units = 0  # units handed and not yet sent
        self.closed = False
        self._cv = threading.Condition()

    def decide(self, ready: Callable[[], bool]) -> bool:
        with self._cv:
            while not self.closed:
                if self.busy < ENCODER_QUEUE and self.units < UNITS_HELD and ready():
                    return True
                if self.used < self.limit and self.raw < self.raw_cap:
                    return False
                self._cv.wait(0.02)  # (the encoder's readiness is polled: its event says nothing here)
            return False

    def hold(self, n: int) -> None:
        with self._cv:
            while self.used and self.used + n > self.limit and not self.closed:
                self._cv.wait(0.1)
            self.used += n
            self.raw += n

    def reached(self, *, waited: bool) -> None:
        """The sender reached a unit: had it to wait for the encoder, the server sat idle, and
        more raw chunks would have kept it busy; was the unit ready, the server is the slower
        side, and each raw chunk costs it more than the unit it displaced. So the raw bytes
        allowed grow or shrink by RAW_AHEAD each time, and settle where both sides keep busy."""
        with self._cv:
            self.raw_cap = min(self.limit, self.raw_cap + RAW_AHEAD) if waited else max(0, self.raw_cap - RAW_AHEAD)
            self._cv.notify_all()

    def hand_unit(self, n: int) -> None:
        with self._cv:
            self.used += n
            self.busy += 1
            self.units += 1

    def encoded(self) -> None:
        with self._cv:
            self.busy -= 1
            self._cv.notify_all()

    def sent(self, n: int, *, unit: bool = False) -> None:
        with self._cv:
            self.used -= n
            self.units -= unit
            if not unit:
                self.raw -= n
            self._cv.notify_all()

    def close(self) -> None:
        with self._cv:
            self.closed = True
            self._cv.notify_all()
