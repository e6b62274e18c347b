"""Overlapped stages: a reader thread runs ahead of the sender through a bounded queue.

Reading and parsing (polars, file reads) and encoding (polars casts) release the GIL, so
they run while the main thread sends the previous batch and the server digests it. The
queue is bounded, so memory stays at a few batches whatever the file's size.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import psycopg

from core import mapping as mp
from core.diagnose import server_reason
from core.errors import LoadFailed, ParseInstead, SourceError
from core.events import Phase
from core.first_bad import in_file_order
from core.load.rejects import Reject, isolate
from core.plan import Plan
from core.sources.abilities import RawCsvChunks
from core.sources.base import Batch, RawChunk
from core.sources.csv.records import count_records
from core.strategies.abilities import Abortable, CountsRows, TakesLines, TakesRawCsv
from core.strategies.base import Strategy, WriteFailed

if TYPE_CHECKING:
    import polars as pl

    from core.load.context import RunContext


T = TypeVar("T")

_DONE = object()


class Prefetch(Generic[T]):
    """Iterate `items` on a worker thread, `depth` items ahead of the consumer.

    The producer's exceptions reach the consumer at the item where they happened. Leaving
    the loop early (break, cancel, an error while sending) stops and joins the thread:
    use it as a context manager.
    """

    def __init__(self, items: Iterator[T], depth: int = 2, name: str = "sluice-reader") -> None:
        self._items = items
        self._queue: queue.Queue[object] = queue.Queue(maxsize=max(1, depth))
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def __enter__(self) -> Prefetch[T]:
        return self.start()

    def start(self) -> Prefetch[T]:
        """Start reading ahead (once: a Prefetch started early may be entered later)."""
        if self._thread.ident is None:
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _put(self, item: object) -> bool:
        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def _run(self) -> None:
        try:
            for item in self._items:
                if not self._put(item):
                    return
        except BaseException as exc:  # noqa: BLE001 - handed to the consumer, raised there
            self._put(_Raised(exc))
            return
        self._put(_DONE)

    def __iter__(self) -> Iterator[T]:
        while True:
            item = self._queue.get()
            if item is _DONE:
                return
            if isinstance(item, _Raised):
                raise item.exc
            yield item  # type: ignore[misc]

    def close(self) -> None:
        self._stop.set()
        while True:  # unblock a producer waiting on a full queue
            try:
                self._queue.get_nowait()
            except queue.Empty:
                break
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join()
        close = getattr(self._items, "close", None)
        if close is not None and not self._thread.is_alive():
            try:
                close()  # finish the generator (closes its file) on this side
            except (RuntimeError, ValueError):
                pass


class _Raised:
    def __init__(self, exc: BaseException) -> None:
        self.exc = exc


def stream_skipping(
    run: RunContext, strategy: Strategy, plan: Plan) -> None:
    """Each batch in its own savepoint; a failed batch is bisected row by row."""
    ctx = strategy.ctx
    conn = strategy.conn
    rejects = run.rejects
    assert rejects is not None
    if conn is not None and strategy.transactional:
        conn.execute("SELECT 1")  # open the transaction, so transaction() below makes savepoints
    for batch in plan.source.load_batches(run.spec.rows_per_batch, with_bad=True):
        run.cancel.check()
        plan.source.check_unchanged()
        # Malformed records (ragged, undecodable, ...) come before the batch's rows.
        for record in batch.bad:
            rejects.add_bad(record)
        run.rows_read += len(batch.bad)
        run.rows_rejected += len(batch.bad)
        if batch.frame.height:
            mapped = mp.apply(batch.frame, plan.maps)
            run.batch_first, run.last_frame = batch.first_row, mapped
            if isinstance(strategy, TakesLines):
                strategy.lines = batch.lines
            run.rows_read += batch.frame.height
            if conn is not None and strategy.transactional:
                loaded, bad = write_or_isolate(strategy, conn, mapped, batch.first_row)
            else:
                loaded, bad = write_row_commits(strategy, mapped, batch.first_row)
            run.rows_loaded += loaded
            for r in bad:
                rejects.add(r, ctx.dsn, ctx.columns, ctx.types, mapped.row(r.row - batch.first_row))
            run.rows_rejected += len(bad)
        rejects.check_limit(run.rows_read)
        run.bytes_read = batch.bytes_read
        run.emit(Phase.LOADING)
    plan.source.check_unchanged()

def write_or_isolate(
    strategy: Strategy, conn: psycopg.Connection[Any], mapped: pl.DataFrame, first_row: int
) -> tuple[int, list[Reject]]:
    try:
        with conn.transaction():
            try:
                n = strategy.write(mapped)
                strategy.flush()
            except WriteFailed:
                # End an open COPY before the savepoint is rolled back, or the server waits for it.
                if isinstance(strategy, Abortable):
                    strategy.abort()
                raise
        return n, []
    except WriteFailed:
        pass
    return isolate(conn, strategy.ctx.table, strategy.ctx.columns, mapped.rows(), first_row)

def write_row_commits(
    strategy: Strategy, mapped: pl.DataFrame, first_row: int
) -> tuple[int, list[Reject]]:
    """Strategies that commit every row: skip the refused row and go on after it."""
    loaded, bad, start = 0, [], 0
    while start < mapped.height:
        try:
            loaded += strategy.write(mapped.slice(start))
            break
        except WriteFailed as wf:
            i = start + (wf.row or 0)
            loaded += wf.row or 0
            bad.append(Reject(first_row + i, server_reason(wf.error)))
            start = i + 1
    return loaded, bad

def replay(
    run: RunContext, plan: Plan) -> Iterator[tuple[int, list[tuple[Any, ...]]]]:
    try:
        for batch in plan.source.batches(max(1, run.spec.rows_per_batch)):
            run.cancel.check()
            yield batch.first_row, mp.apply(batch.frame, plan.maps).rows()
    except SourceError:
        return

def read_ahead(run: RunContext, plan: Plan) -> Prefetch[Batch]:
    """The source's batches, parsed from now on: the reader starts while the strategy still
    opens (pyarrow's and numpy's imports, its COPY), so the server's first batch comes sooner."""
    import polars

    # The CLI defers polars' import to its first use (app/lazy_imports.py), which must not
    # happen on two threads at once: the reader's and this one's. Load it here, first.
    polars.DataFrame  # noqa: B018 - the attribute access is what loads it
    return Prefetch(plan.source.load_batches(run.spec.rows_per_batch)).start()


def stream_batches(
    run: RunContext, strategy: Strategy, plan: Plan, ahead: Prefetch[Batch] | None = None) -> None:
    maps = plan.maps
    prepare = strategy.prepare

    def encode(batches: Iterator[Batch]) -> Iterator[tuple[Batch, pl.DataFrame, object]]:
        for batch in batches:
            mapped = mp.apply(batch.frame, maps)
            yield batch, mapped, prepare(mapped)

    # Three stages at once: a reader thread parses the next batches, an encoder thread maps
    # and encodes the ones before, and this thread sends (polars, pgpq's buffers and socket
    # writes release the GIL, so each stage takes a core when the server leaves one).
    with ahead or Prefetch(plan.source.load_batches(run.spec.rows_per_batch)) as parsed, \
            Prefetch(encode(iter(parsed)), name="sluice-encoder") as batches:
        for batch, mapped, prepared in in_file_order(batches, strategy):
            run.cancel.check()
            plan.source.check_unchanged()  # a stat per batch: cheap next to the batch itself
            send_prepared(run, strategy, batch, mapped, prepared)
    plan.source.check_unchanged()


def send_prepared(run: RunContext, strategy: Strategy, batch: Batch, mapped: pl.DataFrame, prepared: object) -> None:
    """Send one mapped and encoded batch, and count it (also core.load.warm_start's parsed part)."""
    run.batch_first, run.last_frame = batch.first_row, mapped
    if isinstance(strategy, TakesLines):
        strategy.lines = batch.lines
    run.rows_read += batch.frame.height
    run.rows_loaded += strategy.write_prepared(prepared, mapped)
    run.bytes_read = batch.bytes_read
    run.emit(Phase.LOADING)

def stream_raw(
    run: RunContext, strategy: Strategy, plan: Plan) -> None:
    """The CSV file's own bytes to a strategy that takes them (the load chose it for both)."""
    source = plan.source
    assert isinstance(source, RawCsvChunks) and isinstance(strategy, TakesRawCsv)
    with Prefetch(source.raw_chunks()) as chunks:
        send_raw(run, strategy, plan, chunks)
    source.check_unchanged()

def send_raw(
    run: RunContext, strategy: TakesRawCsv, plan: Plan, chunks: Iterable[RawChunk]) -> None:
    assert isinstance(plan.source, RawCsvChunks)
    write_raw = strategy.write_raw
    quote = plan.source.dialect.quote.encode()
    for chunk in in_file_order(chunks, strategy, reparse=True):
        run.cancel.check()
        plan.source.check_unchanged()
        if chunk.odd:
            # COPY would let that quote open a quoted value; the parser keeps it as written.
            raise ParseInstead("a quote inside an unquoted field, which COPY would read differently")
        if chunk.refused:
            # COPY would store it as a date of the day of the load; the parser refuses its row.
            raise ParseInstead("a relative date word (now, today, ...) in a date or time column")
        write_raw(chunk.data, chunk.lines)
        run.rows_read += chunk.records if chunk.records >= 0 else count_records(chunk.data, quote)
        run.rows_loaded = run.rows_read
        run.bytes_read = chunk.bytes_read
        run.emit(Phase.LOADING)

def check_arrived(
    run: RunContext, strategy: Strategy) -> None:
    """Before committing: the server took every row sent, or the load is rolled back.

    A stream that lost a chunk (a worker gone, a COPY ended early) would otherwise commit
    fewer rows than the source holds, and say it loaded them all.
    """
    took = strategy.rows_written if isinstance(strategy, CountsRows) else None
    if took is not None and took != run.rows_loaded:
        raise LoadFailed(
            f"{run.rows_loaded:,} rows were sent but the server took {took:,}; rolled back, nothing was loaded"
        )
