"""COPY over N connections at once (seed 004's four COPY streams): each stream reads its own
byte ranges of the file, or one reader feeds them parsed batches."""

from __future__ import annotations

import os
import queue
import threading
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, NamedTuple, NoReturn

import polars as pl
import psycopg

from core.db import connect
from core.errors import LoadFailed, ParseInstead
from core.strategies.base import Strategy, WriteFailed, register
from core.strategies.binary_frames import TRAILER
from core.strategies.copy import copy_error_row, csv_copy_sql, plain_quote
from core.two_phase import LOCK_TIMEOUT, TwoPhaseGroup

if TYPE_CHECKING:
    from core.strategies.binary_frames import BinaryFrames

_STOP = object()


class _Span(NamedTuple):
    """File bytes lo .. hi - 1 (whole records) that a worker reads itself, their records, which
    the cutter counted as it looked at them, and whether they hold no quote and no backslash."""

    lo: int
    hi: int
    records: int
    plain: bool


def _kind(item: object, plain: bool) -> str:
    """The COPY statement an item goes in: a batch's binary tuples (a view), a plain byte range
    in text format (where the load allows it: `plain`), the rest as CSV."""
    if isinstance(item, _Span):
        return "plain" if plain and item.plain else "csv"
    return "binary" if isinstance(item, tuple) and isinstance(item[0], memoryview) else "csv"


class _Worker(threading.Thread):
    def __init__(self, owner: ParallelCopy, index: int, conn: psycopg.Connection[Any]) -> None:
        super().__init__(name=f"sluice-copy-{index}", daemon=True)
        self.owner, self.index, self.conn = owner, index, conn
        self.error: BaseException | None = None
        self.rows = 0
        self.records = 0  # records of the byte ranges this stream read and sent, counted by us
        self.bytes_sent = 0  # of those ranges, for progress
        self.sent: list[tuple[int, int]] = []  # (first source row, rows) of each chunk, in stream order
        self._statement_row = 0  # rows this stream sent before its current COPY statement
        self._fd = -1  # the source file, for byte ranges read here

    def run(self) -> None:
        from core.sources.csv.byte_ranges import read_bytes

        q = self.owner.queue
        item = q.get()
        try:
            with self.conn.cursor() as cur:
                # One COPY statement per run of items in one format: batches typed exactly go as
                # binary, others (and the file's own bytes) as CSV, in the same transaction.
                plain = self.owner.plain_stmt is not None
                while item is not _STOP:
                    kind = _kind(item, plain)
                    binary = self.owner.binary if kind == "binary" else None
                    self._statement_row = sum(n for _, n in self.sent)  # rows before this statement
                    stmt = binary.copy_sql if binary else self.owner.plain_stmt if kind == "plain" else \
                        self.owner.copy_stmt
                    assert stmt is not None
                    with cur.copy(stmt) as cp:
                        if binary:
                            cp.write(binary.header)
                        while item is not _STOP and _kind(item, plain) == kind:
                            if isinstance(item, _Span):
                                # Counted, and looked at for swallowed records, by the cutter
                                # (parallel_run._look), apart from the server's count (a lost
                                # part must fail the load): read here only to be sent.
                                self.records += item.records
                                for block in read_bytes(self._file(), item.lo, item.hi):
                                    if b"\x00" in block:
                                        # COPY would refuse it as an encoding error; the parser names its line.
                                        raise ParseInstead("a NUL byte")
                                    cp.write(block)
                                    self.bytes_sent += len(block)
                            else:
                                data, first_row, rows = item
                                self.sent.append((first_row, rows))
                                cp.write(data)
                            item = q.get()
                        if binary:
                            cp.write(TRAILER)
                    self.rows += cur.rowcount if cur.rowcount >= 0 else sum(n for _, n in self.sent) - \
                        self._statement_row
        except psycopg.Error as exc:
            row = copy_error_row(exc)
            self._failed(WriteFailed(exc, self._source_row(None if row is None else self._statement_row + row)),
                         item is _STOP)
        except BaseException as exc:  # noqa: BLE001 - any death must fail the load, or its chunks are lost
            self._failed(exc, item is _STOP)
        finally:
            if self._fd >= 0:
                os.close(self._fd)

    def _file(self) -> int:
        if self._fd < 0:
            self._fd = os.open(self.owner.path, os.O_RDONLY)
        return self._fd

    def _failed(self, error: BaseException, stopped: bool) -> None:
        self.error = error
        self.owner.worker_failed(error)
        if not stopped:
            self._drain(self.owner.queue)

    def _source_row(self, stream_row: int | None) -> int | None:
        if stream_row is None:
            return None
        seen = 0
        for first, n in self.sent:
            if stream_row < seen + n:
                return first + stream_row - seen
            seen += n
        return None

    def _drain(self, q: queue.Queue[Any]) -> None:
        # Keep the reader from blocking on a full queue; stop at our own sentinel.
        while True:
            if q.get() is _STOP:
                return


@register
class ParallelCopy(Strategy):
    id = "parallel-copy"
    title = "Parallel COPY"
    summary = ("COPY over N connections at once: each stream reads its own byte ranges of a CSV file, or "
               "takes parsed batches, sent as binary where every value can be typed exactly")
    lesson = "Seed 004: a distributed PostgreSQL loaded in 59 s with one COPY stream and 39 s with four."
    seed = "004"
    multi_connection = True
    takes_workers = True
    streams_raw_csv = True
    stream_rows = True
    chunk_commits = True

    two_phase = False  # set by the job: all-or-nothing across connections via PREPARE TRANSACTION

    def open(self) -> None:
        n = max(1, self.ctx.workers)
        self.queue: queue.Queue[Any] = queue.Queue(maxsize=2 * n)
        self.failed = threading.Event()
        self._fail_lock = threading.Lock()
        self._first_error: BaseException | None = None
        self.copy_stmt = csv_copy_sql(self)
        # The file's byte ranges with no quote and no backslash, in COPY's text format (copy.plain_quote).
        self.plain_stmt = csv_copy_sql(self, plain=True) if plain_quote(self.ctx) is not None else None
        if not self.ctx.copy_options:  # parsed batches (the file's own bytes are CSV as they are)
            from core.strategies.binary_frames import BinaryFrames

            self.binary = BinaryFrames.for_target(self.ctx.table, self.ctx.columns, self.ctx.types,
                                                   self.ctx.utc)
        # Everything rollback() and close() look at exists before the first connection is tried,
        # so a refused one is reported as it is and closes the ones opened before it.
        self.conns: list[psycopg.Connection[Any]] = []
        self._unhooks: list[Callable[[], None]] = []
        self._group = TwoPhaseGroup(self.ctx.dsn, self.ctx.table.schema, n) if self.two_phase else None
        self.workers: list[_Worker] = []
        self._finished = True  # no worker to stop yet
        self._row = 0
        try:
            for _ in range(n):
                # One open transaction per stream for the whole run: a key repeated across
                # streams would wait forever (see chunked.STREAM_LOCK_TIMEOUT).
                c = connect(self.ctx.dsn, options=LOCK_TIMEOUT)
                self.conns.append(c)
                self._unhooks.append(self.ctx.cancel.add_hook(c.cancel_safe))
            self.conn = self.conns[0]
            if self._group is not None:
                for c in self.conns:
                    self._group.join(c)
        except BaseException:
            self.close()
            raise
        self.workers = [_Worker(self, i, c) for i, c in enumerate(self.conns)]
        self._finished = False
        for w in self.workers:
            w.start()

    def worker_failed(self, error: BaseException) -> None:
        with self._fail_lock:
            if self._first_error is None:
                self._first_error = error  # the cause; later failures are often its consequences
        self.failed.set()

    def _put(self, data: bytes | memoryview, first_row: int, rows: int) -> None:
        self._put_item((data, first_row, rows))

    def _put_item(self, item: Any) -> None:
        while True:
            if self.failed.is_set():
                self._raise_first()
            self.ctx.cancel.check()
            if not any(w.is_alive() for w in self.workers):
                self._raise_first()  # nobody left to take the chunk
            try:
                self.queue.put(item, timeout=0.2)
                return
            except queue.Full:
                continue

    binary: BinaryFrames | None = None  # set by open() for parsed batches, when every column has a binary form

    def prepare(self, frame: pl.DataFrame) -> object:
        """On the encoding stage's thread: the batch's binary tuples when every value can be typed
        exactly, else the batch as CSV."""
        tuples = self.binary.tuples(frame) if self.binary is not None else None
        return tuples if tuples is not None else frame.write_csv(include_header=False).encode()

    def write_prepared(self, prepared: object, frame: pl.DataFrame) -> int:
        self._put(prepared, self._row, frame.height)  # type: ignore[arg-type]
        self._row += frame.height
        return frame.height

    def write(self, frame: pl.DataFrame) -> int:
        return self.write_prepared(self.prepare(frame), frame)

    path = ""  # feed_raw: the file the workers read

    def feed_raw(self, ranges: Iterable[tuple[int, int, int, bool]], path: str,
                 progress: Callable[[int, int], None]) -> None:
        """The file's own bytes with no reader in between: each worker reads whole-record byte
        ranges itself (cut by the protocol, by quote parity, as parallel_run's per-batch chunks
        are), so the one Python thread that read, cut and counted every chunk no longer takes a
        core's share. Each range comes with its records, which the cutter counted as it looked at
        them (parallel_run._look, which refuses a range whose quote swallowed records).
        `progress(records, bytes)`: what the streams read and sent so far."""
        self.path = path

        def report() -> None:
            progress(sum(w.records for w in self.workers), sum(w.bytes_sent for w in self.workers))

        for lo, hi, records, plain in ranges:
            self._put_item(_Span(lo, hi, records, plain))
            report()
        self._send_stops()
        # The last ranges: progress and cancel still work. join() returns as soon as its worker
        # ends (waiting on `failed` for 0.1 s at a time left every load idle ~50 ms at the end).
        while not self.failed.is_set() and (alive := [w for w in self.workers if w.is_alive()]):
            alive[0].join(0.1)
            self.ctx.cancel.check()
            report()
        self.flush()  # every COPY has ended: errors surface here
        report()

    def write_raw(self, data: bytes, lines: int = -1) -> None:
        # Exact unless quoted fields hold newlines; used for error lines only.
        rows = lines if lines >= 0 else data.count(b"\n")
        self._put(data, self._row, rows)
        self._row += rows

    def set_first_row(self, row: int) -> None:
        self._row = row

    def _stop_workers(self) -> None:
        if self._finished:
            return
        self._finished = True
        self._send_stops()
        for w in self.workers:
            w.join()

    def _send_stops(self) -> None:
        for _ in self.workers:
            # A worker that is gone takes no sentinel: never wait on a full queue for it.
            while any(w.is_alive() for w in self.workers):
                try:
                    self.queue.put(_STOP, timeout=0.2)
                    break
                except queue.Full:
                    continue

    def _raise_first(self) -> NoReturn:
        error = self._first_error or next((w.error for w in self.workers if w.error is not None), None)
        if isinstance(error, (WriteFailed, ParseInstead)):
            raise error
        if error is None:
            raise LoadFailed("the COPY workers stopped without a word; nothing was loaded")
        raise LoadFailed(f"a COPY worker failed ({type(error).__name__}: {error}); nothing was loaded") from error

    def flush(self) -> None:
        self._stop_workers()
        if any(w.error for w in self.workers):
            self._raise_first()

    @property
    def rows_written(self) -> int:
        return sum(w.rows for w in self.workers)

    def commit(self) -> None:
        self.flush()
        if self._group is not None:
            self._group.commit()
        else:
            for c in self.conns:
                c.commit()

    def rollback(self) -> None:
        if not self._finished:
            self.failed.set()
            for c in self.conns:
                c.cancel_safe()
            self._stop_workers()
        if self._group is not None:
            self._group.rollback()
            return
        for c in self.conns:
            if c.closed:
                continue
            try:
                c.rollback()
            except psycopg.Error:
                pass

    def close(self) -> None:
        unhooks, self._unhooks = self._unhooks, []
        for u in unhooks:
            u()
        for c in self.conns:
            c.close()
        if self._group is not None:
            self._group.close()
