"""COPY streams that commit chunk by chunk: per-batch parallel loads with exact resume.

One reader cuts the source into chunks (the file's own CSV records, or parsed and mapped
batches) and N streams, one connection each, take them from a bounded queue. A chunk is
the source rows lo .. hi - 1; in per-batch mode its rows and its checkpoint row (the
range, counts and its rejects) commit in one transaction on the stream that loaded it, so
chunks finish in any order and the chunk book is always exactly what the table holds.
`--resume` reads the book and loads only the ranges it lacks.

The same streams hold one transaction each (savepoint per chunk) for `--commit single`
with the `skip` policy: bad rows are isolated chunk by chunk as on one connection, into a
table that one final step makes visible (staging move or rename).

`Piece` (a chunk) and the cutting of the file's own bytes into chunks are in byte_ranges.py.
"""

from __future__ import annotations

import contextlib
import csv
import io
import os
import queue
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import psycopg
from psycopg import sql

from core import checkpoint as ck
from core import mapping as mp
from core.cancel import CancelToken
from core.db import TableRef, connect
from core.diagnose import server_reason
from core.errors import (
    Cancelled,
    ConnectError,
    LoadFailed,
    ParseInstead,
    ResumableStop,
    SluiceError,
    TooManyRejects,
)
from core.events import Phase
from core.load.rejects import bad_record_fields, isolate, reject_fields
from core.load.stages import Prefetch
from core.sources.base import Source
from core.sources.csv.byte_ranges import Piece, Ranges, read_bytes, read_records
from core.sources.csv.records import count_records
from core.strategies.base import WriteContext

if TYPE_CHECKING:
    import polars as pl

    from core.load.context import RunContext
    from core.strategies.binary_frames import BinaryFrames

_STOP = object()

STREAM_LOCK_TIMEOUT = "-c lock_timeout=5s"  # see _Stream.connect


class ChunkFailed(Exception):
    """A stream's chunk failed for a reason no retry fixes (the server refused a row, ...)."""

    def __init__(self, error: BaseException, piece: Piece | None) -> None:
        super().__init__(str(error))
        self.error, self.piece = error, piece


def parsed_pieces(
    source: Source, maps: list[Any], batch_rows: int, with_bad: bool, done: Ranges
) -> Iterator[Piece]:
    """Mapped batches; of a batch partly committed, only the missing rows."""
    start = 0
    for batch in source.load_batches(batch_rows, with_bad=with_bad):
        end = batch.first_row + batch.frame.height
        for lo, hi in done.gaps(start, end):
            bad = tuple(b for b in batch.bad if lo <= b.row < hi)
            f_lo = max(lo, batch.first_row)
            frame = batch.frame.slice(f_lo - batch.first_row, max(0, hi - f_lo))
            yield Piece(lo, hi, batch.bytes_read, frame=mp.apply(frame, maps), first=f_lo, bad=bad)
        start = end


@dataclass
class StreamPlan:
    """What every stream needs: where rows go, how COPY reads them, where chunks are booked."""

    ctx: WriteContext
    raw_copy: sql.Composed | None  # COPY for the file's own bytes
    parsed_copy: sql.Composed  # COPY for mapped batches (polars CSV)
    source: Source
    skip: bool
    book: tuple[TableRef, str] | None = None  # (target, load key): per-batch commits
    reject_limit: int | None = None
    reject_limit_pct: float | None = None
    retry_backoff: tuple[float, ...] = ()
    truncate: TableRef | None = None  # emptied in the first chunk's commit (nothing committed yet)
    options: str = ""  # each stream's session settings (libpq `options`), beside the DSN's own
    path: str = ""  # the file byte-range pieces are read from
    quote: bytes = b'"'  # its quote, for counting the records of a range
    binary: bool = False  # parsed batches go as binary COPY where every value can be typed
    plain_copy: sql.Composed | None = None  # COPY (text format) for byte ranges with no quote and no backslash


class _Stream(threading.Thread):
    def __init__(self, owner: ChunkStreams, index: int) -> None:
        super().__init__(name=f"sluice-chunks-{index}", daemon=True)
        self.owner, self.index = owner, index
        self.conn: psycopg.Connection[Any] | None = None
        self._unhook: Callable[[], None] | None = None
        self._fd = -1  # the source file, for byte-range pieces
        self._binary: BinaryFrames | None = None  # this stream's encoder (made at its first batch)
        self._binary_asked = False

    def connect(self) -> psycopg.Connection[Any]:
        if self.conn is None or self.conn.closed:
            single = self.owner.plan.book is None
            # In one run-long transaction per stream, a key repeated in two chunks makes one
            # stream wait on another's open transaction, which waits on us: a wait no server
            # sees as a deadlock. A lock timeout turns it into an error.
            ours = " ".join(o for o in (STREAM_LOCK_TIMEOUT if single else "", self.owner.plan.options) if o)
            self.conn = connect(self.owner.plan.ctx.dsn, options=ours)
            self._unhook = self.owner.cancel.add_hook(self.conn.cancel_safe)
            if single:
                self.conn.execute("SELECT 1")  # one transaction for the run: each chunk gets a savepoint
        return self.conn

    def drop(self) -> None:
        if self._unhook is not None:
            self._unhook()
            self._unhook = None
        if self.conn is not None:
            self.conn.close()

    def run(self) -> None:
        try:
            if self.owner.plan.book is not None:
                # Connect now rather than on the first chunk: the server's start-up of this
                # session overlaps the search for the chunk's end (later streams waited on both).
                # A failure here is met again, with its retries, when the chunk is loaded.
                with contextlib.suppress(psycopg.OperationalError, ConnectError):
                    self.connect()
            self._take()
        finally:
            if self._fd >= 0:
                os.close(self._fd)

    def _take(self) -> None:
        q = self.owner.queue
        while True:
            piece = q.get()
            if piece is _STOP:
                return
            if self.owner.failed.is_set():
                continue  # keep taking chunks so the reader never waits on a full queue
            try:
                self._load(piece)
            except BaseException as exc:  # noqa: BLE001 - any death fails the load, with its cause
                self.owner.fail(exc, piece)

    def _load(self, piece: Piece) -> None:
        plan = self.owner.plan
        attempt = 0
        while True:
            try:
                conn = self.connect()
                if attempt and plan.book is not None:
                    # The connection dropped: maybe during COMMIT, after the chunk went through.
                    got = ck.chunk_committed(conn, plan.book[0], plan.book[1], piece.lo)
                    conn.commit()
                    if got is not None:
                        self.owner.done(piece, got.rows_loaded, got.rows_rejected, got.rejects)
                        return
                with conn.transaction():
                    if plan.truncate is not None and self.owner.pieces_done == 0:
                        # The first commit empties the table: a run that commits nothing leaves it as it was.
                        conn.execute(sql.SQL("TRUNCATE {}").format(plan.truncate.ident()))
                    loaded, rejects, n_rejected = self._send(conn, piece)
                    self.owner.check_limit(n_rejected, piece)
                    if plan.book is not None:
                        self._book(conn, piece, loaded, n_rejected, rejects)
                self.owner.done(piece, loaded, n_rejected, rejects)
                return
            except (psycopg.OperationalError, ConnectError) as exc:
                if isinstance(exc, psycopg.errors.QueryCanceled) or plan.book is None or self.owner.cancel.cancelled:
                    raise
                self.drop()
                attempt += 1
                if attempt > len(plan.retry_backoff):
                    raise ResumableStop(
                        f"a stream's connection failed {len(plan.retry_backoff)} times in a row ({_reason(exc)}); "
                        "the chunks committed so far stay in the table. Run again with --resume to load the "
                        "missing ones"
                    ) from None
                delay = plan.retry_backoff[attempt - 1]
                self.owner.log(f"stream {self.index + 1}: connection lost ({_reason(exc)}); retry "
                               f"{attempt}/{len(plan.retry_backoff)} in {delay:g} s")
                if self.owner.cancel.wait(delay):
                    raise Cancelled() from None

    def _book(self, conn: psycopg.Connection[Any], piece: Piece, loaded: int, n_rejected: int, rejects: str) -> None:
        book = self.owner.plan.book
        assert book is not None
        try:
            ck.add_chunk(conn, book[0], book[1], ck.Chunk(piece.lo, piece.hi, loaded, n_rejected, piece.bytes_end,
                                                          rejects, piece.by_bytes))
        except psycopg.errors.UniqueViolation:
            raise LoadFailed("another process is loading the same file into the same table; this run "
                             "stopped") from None

    def _send(self, conn: psycopg.Connection[Any], piece: Piece) -> tuple[int, str, int]:
        plan = self.owner.plan
        if piece.by_bytes:
            assert plan.raw_copy is not None
            if self._fd < 0:
                self._fd = os.open(plan.path, os.O_RDONLY)
            sent = max(0, piece.records)  # counted by the reader that cut the range, as it read it
            stmt = plan.plain_copy if piece.plain and plan.plain_copy is not None else plan.raw_copy
            with conn.cursor() as cur:
                with cur.copy(stmt) as cp:
                    if piece.records >= 0:
                        for block in read_bytes(self._fd, piece.lo, piece.hi):
                            cp.write(block)
                            self.owner.bytes_sent += len(block)  # for progress only: streams may race on it
                    else:  # part of an earlier run's chunk: counted here, slice by slice
                        for part in read_records(self._fd, piece.lo, piece.hi, quote=plan.quote):
                            sent += count_records(bytes(part), plan.quote)
                            cp.write(part)
                            self.owner.bytes_sent += len(part)
                if cur.rowcount != sent:
                    # Before the chunk's commit: a range the server did not wholly get is never booked as done.
                    raise LoadFailed(f"a stream sent {sent:,} rows of bytes {piece.lo:,}-{piece.hi:,} but the server "
                                     f"took {cur.rowcount:,}; that chunk was rolled back")
                return cur.rowcount, "", 0
        if piece.data is not None:
            assert plan.raw_copy is not None
            return self._copy(conn, plan.raw_copy, piece.data), "", 0
        frame = piece.frame
        assert frame is not None
        fields = [bad_record_fields(b, plan.source) for b in piece.bad]
        loaded = 0
        if frame.height:
            stmt, data = self._encode(frame)
            if not plan.skip:
                loaded = self._copy(conn, stmt, data)
            else:
                try:
                    with conn.transaction():
                        loaded = self._copy(conn, stmt, data)
                except psycopg.Error as exc:
                    if _lost(exc):
                        raise
                    ctx = plan.ctx
                    loaded, bad = isolate(conn, ctx.table, ctx.columns, frame.rows(), piece.first)
                    with self.owner.lock:  # the source rescans the file to quote a record
                        fields += [reject_fields(plan.source, r, ctx.dsn, ctx.columns, ctx.types,
                                                 frame.row(r.row - piece.first)) for r in bad]
        return loaded, _csv_lines(fields), len(fields)

    def _encode(self, frame: pl.DataFrame) -> tuple[sql.Composed, list[bytes | memoryview]]:
        """A batch as one binary COPY when it can be typed exactly, else as CSV."""
        plan = self.owner.plan
        if plan.binary and not self._binary_asked:
            from core.strategies.binary_frames import BinaryFrames  # pyarrow: parsed batches only

            ctx = plan.ctx
            self._binary, self._binary_asked = BinaryFrames.for_target(ctx.table, ctx.columns, ctx.types, ctx.utc), True
        parts = self._binary.statement(frame) if self._binary is not None else None
        if self._binary is not None and parts is not None:
            return self._binary.copy_sql, parts
        return plan.parsed_copy, [frame.write_csv(include_header=False).encode()]

    def _copy(self, conn: psycopg.Connection[Any], stmt: sql.Composed, data: bytes | list[bytes | memoryview]) -> int:
        with conn.cursor() as cur:
            with cur.copy(stmt) as cp:
                for part in [data] if isinstance(data, bytes) else data:
                    cp.write(memoryview(part))  # psycopg sends it in slices: views, not copies
            return cur.rowcount


class ChunkStreams:
    """N streams fed from one reader; see the module's docstring."""

    def __init__(self, plan: StreamPlan, workers: int, cancel: CancelToken, log: Callable[[str], None],
                 on_progress: Callable[[], None]) -> None:
        self.plan = plan
        self.cancel, self.log, self.on_progress = cancel, log, on_progress
        self.queue: queue.Queue[Any] = queue.Queue(maxsize=2 * max(1, workers))
        self.failed = threading.Event()
        self.lock = threading.Lock()
        self.error: tuple[BaseException, Piece | None] | None = None
        self.rows_done = self.loaded = self.rejected = self.bytes_end = 0
        self.bytes_sent = 0  # byte-range pieces: file bytes written to COPY so far (committed or not)
        self.pieces_done = 0
        self.rejects: list[tuple[int, str]] = []  # (lo, lines) for the reject file
        self.streams = [_Stream(self, i) for i in range(max(1, workers))]

    def connect_all(self) -> None:
        """Open every stream's connection now (one transaction each, when not booking chunks)."""
        for s in self.streams:
            s.connect()

    def fail(self, error: BaseException, piece: Piece | None) -> None:
        with self.lock:
            if self.error is None:
                self.error = (error, piece)  # the cause; later failures are often its consequences
        self.failed.set()

    def check_limit(self, n_rejected: int, piece: Piece) -> None:
        if not n_rejected:
            return
        plan = self.plan
        with self.lock:
            count, rows = self.rejected + n_rejected, self.rows_done + piece.hi - piece.lo
        if plan.reject_limit is not None and count > plan.reject_limit:
            raise TooManyRejects(f"{count} rows rejected, more than the limit of {plan.reject_limit}")
        if plan.reject_limit_pct is not None and rows and count * 100 / rows > plan.reject_limit_pct:
            raise TooManyRejects(f"{count} of {rows} rows rejected, more than {plan.reject_limit_pct}%")

    def done(self, piece: Piece, loaded: int, rejected: int, rejects: str) -> None:
        with self.lock:
            self.rows_done += piece.rows(loaded, rejected)
            self.loaded += loaded
            self.rejected += rejected
            self.bytes_end = max(self.bytes_end, piece.bytes_end)
            self.pieces_done += 1
            if rejects:
                self.rejects.append((piece.lo, rejects))

    def run(self, pieces: Iterator[Piece]) -> None:
        """Feed every piece to the streams and wait for them; raise the first failure."""
        for s in self.streams:
            s.start()
        try:
            with Prefetch(pieces, name="sluice-chunk-reader") as feed:
                for piece in feed:
                    self._put(piece)
                    if self.plan.truncate is not None:
                        self._first_alone()
        except BaseException as exc:  # noqa: BLE001 - the reader's error (or cancel) fails the load, raised below
            self.fail(exc, None)
        finally:
            self._stop()
        if self.error is not None:
            self._raise()

    def _first_alone(self) -> None:
        """Truncate mode: the first chunk commits (with the TRUNCATE) before the others start."""
        while self.pieces_done == 0 and not self.failed.is_set():
            self.cancel.check()
            time.sleep(0.01)
            self.on_progress()

    def _put(self, piece: Piece) -> None:
        while True:
            if self.failed.is_set():
                return
            self.cancel.check()
            try:
                self.queue.put(piece, timeout=0.1)
                self.on_progress()
                return
            except queue.Full:
                self.on_progress()

    def _stop(self) -> None:
        for _ in self.streams:
            while any(s.is_alive() for s in self.streams):
                try:
                    self.queue.put(_STOP, timeout=0.1)
                    break
                except queue.Full:
                    continue
        for s in self.streams:
            while s.is_alive():
                s.join(0.1)
                self.on_progress()

    def _raise(self) -> None:
        assert self.error is not None
        error, piece = self.error
        if self.cancel.cancelled or isinstance(error, psycopg.errors.QueryCanceled):
            raise Cancelled() from None
        if isinstance(error, ParseInstead):  # the reader's: the file's bytes cannot go as they are
            raise error
        if isinstance(error, psycopg.errors.BadCopyFileFormat) and piece is not None and (
                piece.data is not None or piece.by_bytes):
            raise ParseInstead(server_reason(error))
        if isinstance(error, psycopg.Error):
            raise ChunkFailed(error, piece)
        if isinstance(error, SluiceError):
            raise error
        where = "the chunks committed so far stay; --resume loads the missing ones" if self.plan.book else \
            "nothing was loaded"
        raise LoadFailed(f"a COPY stream failed ({type(error).__name__}: {error}); {where}") from error

    def commit(self) -> None:
        for s in self.streams:
            if s.conn is not None:
                s.conn.commit()

    def rollback(self) -> None:
        for s in self.streams:  # end statements in flight first: a stream's thread may hold its connection
            if s.conn is not None and not s.conn.closed:
                s.conn.cancel_safe()
        for s in self.streams:
            if s.conn is not None and not s.conn.closed:
                try:
                    s.conn.rollback()
                except psycopg.Error:
                    pass

    def close(self) -> None:
        for s in self.streams:
            s.drop()

    def reject_text(self) -> tuple[str, int]:
        """This run's rejects in source order, and how many."""
        return "".join(t for _, t in sorted(self.rejects)), self.rejected


def _csv_lines(fields: list[tuple[Any, ...]]) -> str:
    if not fields:
        return ""
    out = io.StringIO()
    w = csv.writer(out)
    for f in fields:
        w.writerow(f)
    return out.getvalue()


def _lost(exc: BaseException) -> bool:
    return isinstance(exc, psycopg.OperationalError) and not isinstance(exc, psycopg.errors.QueryCanceled)


def _reason(exc: BaseException) -> str:
    return server_reason(exc) if isinstance(exc, psycopg.Error) else str(exc)


def frame_of(source: Source, maps: list[Any], lo: int, hi: int) -> pl.DataFrame | None:
    """Source rows lo .. hi - 1, mapped: what a raw chunk held, to find its bad row."""
    for batch in source.batches(max(1, hi - lo), skip_rows=lo):
        return mp.apply(batch.frame, maps)
    return None


def progress(run: RunContext, streams: ChunkStreams, base: tuple[int, int, int],
             bytes_base: int | None = None) -> Callable[[], None]:
    """The run's counters from the streams'; with `bytes_base` (the bytes an earlier run committed
    and the header), bytes sent move the progress on between large chunks' commits."""
    def emit() -> None:
        run.rows_read = base[0] + streams.rows_done
        run.rows_loaded = base[1] + streams.loaded
        run.rows_rejected = base[2] + streams.rejected
        sent = bytes_base + streams.bytes_sent if bytes_base is not None else 0
        sent = min(sent, run.bytes_total) if run.bytes_total else sent  # a retried chunk is sent twice
        run.bytes_read = max(run.bytes_read, streams.bytes_end if bytes_base is None else 0, sent)
        run.emit(Phase.LOADING)

    return emit
