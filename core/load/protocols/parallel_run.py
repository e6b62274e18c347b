"""The job's side of chunked streams: per-batch runs with resume, and `single` with `skip`."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import psycopg
from psycopg import sql

from core import checkpoint as ck
from core import mapping as mp
from core.db import connect, session_is_utc
from core.errors import Cancelled, ConfigError, LoadFailed, ParseInstead, SourceError
from core.events import Phase
from core.first_bad import as_bad_record
from core.load import stages
from core.load.protocols import common
from core.load.protocols.chunked import ChunkFailed, ChunkStreams, StreamPlan, frame_of, parsed_pieces, progress
from core.load.protocols.per_batch import open_book, per_batch_error
from core.load.rejects import RejectWriter
from core.sources.abilities import RawCsvChunks, RawCsvSource, copy_reads_as_is
from core.sources.csv.byte_ranges import Ranges, byte_pieces, raw_pieces
from core.sources.csv.records import EndsInQuote, after_lines, first_record_end, lend_numpy, record_cuts
from core.sources.many import load_fingerprint
from core.spec import ErrorPolicy, LoadMode
from core.strategies.abilities import ReadsByteRanges
from core.strategies.base import Strategy, WriteContext, WriteFailed
from core.strategies.copy import csv_copy_sql, plain_quote

if TYPE_CHECKING:
    import polars as pl

    from core.load.context import RunContext
    from core.plan import Plan
    from core.result import LoadResult
    from core.server import TargetInfo


def _copies(cls: type[Strategy], ctx: WriteContext, raw_options: dict[str, str] | None,
            force_not_null: list[str]) -> tuple[sql.Composed | None, sql.Composed | None, sql.Composed, Strategy]:
    """COPY for the file's own bytes (its dialect), for those of them with no quote and no
    backslash in text format where the load allows it (plain_quote), and for polars-written batches."""
    parsed = cls(ctx)
    raw_stmt = plain_stmt = None
    if raw_options is not None:
        raw_ctx = WriteContext(**{**ctx.__dict__, "copy_options": raw_options, "force_not_null": force_not_null})
        raw_stmt = csv_copy_sql(cls(raw_ctx))
        if plain_quote(raw_ctx) is not None:
            plain_stmt = csv_copy_sql(cls(raw_ctx), plain=True)
    return raw_stmt, plain_stmt, csv_copy_sql(parsed), parsed


def run_per_batch(
    run: RunContext, cls: type[Strategy], dsn: str, ctl: psycopg.Connection[Any], plan: Plan,
    earlier: ck.Checkpoint | None,
) -> LoadResult:
    """Every stream commits its chunks one by one, each with its checkpoint row."""
    spec, ref = run.spec, plan.target
    mode, targets, types, key = open_book(run, ctl, plan, earlier)
    ck.ensure_chunks(ctl, ref)
    if earlier is None:
        with ctl.transaction():  # the run starts, and truncate empties the table, in one commit
            ck.start(ctl, ref, key, str(plan.source.path), load_fingerprint(plan.source.path), cls.id)
            ck.clear_chunks(ctl, ref, key)
    else:
        run.on_log(f"resuming: {earlier.rows_done:,} source rows are committed; loading the chunks that are missing")
    run.resumed_from = earlier.rows_done if earlier else 0
    loaded_before = run.loaded_before = earlier.rows_loaded if earlier else 0
    run.bytes_before = earlier.bytes_done if earlier else 0
    skip = spec.on_error is ErrorPolicy.SKIP
    ctx = WriteContext(dsn=dsn, table=ref, columns=targets, types=[types[t] for t in targets],
                       batch_rows=max(1, spec.rows_per_batch), workers=max(1, spec.workers), cancel=run.cancel,
                       log=run.on_log, utc=session_is_utc(ctl))
    raw = (cls.streams_raw_csv and not skip and copy_reads_as_is(plan.source)
           and mp.is_identity(plan.maps, plan.source.columns()) and not run.no_raw)
    raw_options = None
    if raw:
        d = _csv(plan).dialect
        raw_options = {"delimiter": d.delimiter, "quote": d.quote, "null": d.null, "encoding": "UTF8"}
    quote = (plan.source.quote if isinstance(plan.source, RawCsvSource) else '"').encode()
    raw_stmt, plain_stmt, parsed_stmt, proto = _copies(cls, ctx, raw_options, common.raw_text_columns(plan))
    span = data_span(plan) if raw else None
    run.emit(Phase.LOADING, force=True)
    while True:
        done = ck.done_chunks(ctl, ref, key)
        by_bytes = raw and span is not None and all(c.by_bytes for c in done)  # a book of rows goes on in rows
        if not by_bytes and any(c.by_bytes for c in done):
            done = _as_rows(ctl, plan, ref, key, done)
        base = (sum(c.rows_loaded + c.rows_rejected if c.by_bytes else c.hi - c.lo for c in done),
                sum(c.rows_loaded for c in done), sum(c.rows_rejected for c in done))
        ranges = Ranges([(c.lo, c.hi) for c in done])
        truncate = ref if mode is LoadMode.TRUNCATE and not done else None
        splan = StreamPlan(ctx, raw_stmt, parsed_stmt, plan.source, skip, (ref, key), spec.reject_limit,
                           spec.reject_limit_pct, run.retry_backoff_s, truncate, _session_options(run),
                           str(plan.source.path), quote, binary=True, plain_copy=plain_stmt)
        streams = ChunkStreams(splan, ctx.workers, run.cancel, run.on_log, lambda: None)
        bytes_base = span[0] + sum(c.hi - c.lo for c in done) if by_bytes and span is not None else None
        streams.on_progress = progress(run, streams, base, bytes_base)
        if by_bytes and span is not None:
            cuts = byte_cuts(_csv(plan), span, ctx.workers, run.target_info, truncate is not None)
            pieces = byte_pieces(cuts, ranges)
        elif raw:
            pieces = raw_pieces(_csv(plan), ranges, _record_counter(plan))
        else:
            pieces = parsed_pieces(plan.source, plan.maps, ctx.batch_rows, skip, ranges)
        try:
            streams.run(pieces)
            plan.source.check_unchanged()
            run.cancel.check()  # asked to stop: the committed chunks stay, --resume finishes the run
            break
        except ParseInstead as why:
            if not raw:
                raise LoadFailed(f"the load stopped: {why}") from None
            run.on_log(f"COPY refused the file's bytes ({why}); loading the missing chunks through the parser")
            raw = False
        except Cancelled:
            run.emit(Phase.CANCELLED, force=True)
            raise
        except SourceError as exc:
            raise (as_bad_record(exc) if exc.line is not None else exc) from None  # the data, not the arguments
        except ChunkFailed as cf:
            run.rows_loaded = base[1] + streams.loaded  # committed: the chunks that went through stay
            raise _explain(run, plan, proto, cf) from None
        finally:
            streams.close()
    run.emit(Phase.FINISHING, force=True)
    # A fresh connection: the one that planned the load may have been dropped meanwhile.
    with connect(dsn, autocommit=True) as fin:
        reject_file = _write_rejects(run, plan, ck.done_chunks(fin, ref, key)) if skip else None
        with fin.transaction():
            if mode is LoadMode.TRUNCATE and not ck.done_chunks(fin, ref, key):
                fin.execute(sql.SQL("TRUNCATE {}").format(ref.ident()))  # an empty source still empties it
            ck.finish_chunks(fin, ref, key)
        state = ck.read(fin, ref, key)
    assert state is not None
    run.rows_read, run.rows_loaded, run.rows_rejected = state.rows_done, state.rows_loaded, state.rows_rejected
    run.bytes_read = max(run.bytes_read, state.bytes_done)
    run.emit(Phase.DONE, force=True)
    return run.result(reject_file, resumed_from=run.resumed_from, reason=run.reason, loaded_before=loaded_before)


# Byte-range chunks: few and large, since each pays a commit (and its checkpoint row); about
# four per stream keeps the streams busy to the end. On Citus a commit is a distributed one
# across the workers (its own two-phase commit), dearer still: two chunks per stream.
# The cutter reads a chunk whole to find its end (quote parity needs every byte): at 64 MB,
# a 5M-row per-batch load peaked at 350 MB; at 16 MB, 253 MB, and no slower (10.4 -> 10.0 s:
# the streams' first chunks come sooner; a chunk's commit costs a few ms).
CHUNK_MIN, CHUNK_MAX = 4 << 20, 16 << 20
CHUNKS_PER_STREAM = 4
CHUNKS_PER_STREAM_DISTRIBUTED = 2
DISTRIBUTED_CHUNK_MAX = 256 << 20
FIRST_ALONE_BYTES = 1 << 20
# Each stream's first chunk is small: a chunk's end is found by reading and scanning it (about
# 2 ms a MB), so with full-size first chunks the second stream waited for two cuts (some 80 ms
# on 19 MB chunks) before its first byte went out.
RAMP_BYTES = 4 << 20


# A file this large has its cuts, bare quotes and records counted with numpy (whose loops let go
# of the GIL, which the cutter and the streams otherwise queue for): 5M mixed rows per-batch,
# client CPU 3.8 -> 2.7 s, 10.1-12.1 -> 9.1-9.3 s, peak 176 -> 231-233 MB. Its import (50 ms)
# is not worth it below.
NUMPY_SPAN_BYTES = 64 << 20


# Citus keeps one connection per worker open after a transaction (max_cached_conns_per_worker
# = 1) and a COPY into a distributed table opens up to max_adaptive_executor_pool_size (16)
# per worker: without more cached, every chunk's transaction connected to the workers afresh
# (measured, 4 streams: 4 chunks a stream took 6.5-7.7 s, 1 took 3.5-4.0; cached, 4.2 and 3.1).
CITUS_CACHED_CONNS = 16


def _session_options(run: RunContext) -> str:
    info = run.target_info
    if info is not None and info.distributed:
        return f"-c citus.max_cached_conns_per_worker={CITUS_CACHED_CONNS}"
    return ""


def _csv(plan: Plan) -> RawCsvChunks:
    """The source of a load that sends the file's own bytes, which only a raw CSV source does."""
    assert isinstance(plan.source, RawCsvChunks)
    return plan.source


def data_span(plan: Plan) -> tuple[int, int] | None:
    """(first data byte, file size) when streams can read the file's bytes themselves: UTF-8 as
    it is (COPY is told UTF8), LF or CRLF line ends, a one-byte quote. None: the reader's path."""
    if not isinstance(plan.source, RawCsvChunks):
        return None
    if not os.path.isfile(plan.source.path):  # many files read as one (core.sources.many): the reader's path
        return None
    d = plan.source.dialect
    if d.encoding.lower().replace("_", "-") not in ("utf-8", "utf8", "utf-8-sig") \
            or d.newline != "\n" or len(d.quote.encode()) != 1 or len(d.delimiter.encode()) != 1:
        return None
    path = str(plan.source.path)
    size = os.path.getsize(path)
    start = d.bom_bytes
    if d.header:
        with open(path, "rb") as f:
            f.seek(start)
            head = f.read(1 << 20)
        notes = after_lines(head, d.skip_lines) if d.skip_lines else 0  # notes above the table
        cut = first_record_end(head[notes:], d.quote.encode())
        if not cut or (d.skip_lines and not notes):
            return None  # a header longer than 1 MB (or the whole file): the reader's path copes
        start += notes + cut
    return start, size


def byte_cuts(source: RawCsvChunks, span: tuple[int, int], workers: int, info: TargetInfo | None,
              first_alone: bool = False) -> Iterator[int]:
    """Chunk boundaries, found as the streams go (see core.sources.csv.records.record_cuts). A first chunk
    that commits alone (with truncate's TRUNCATE) is small: the other streams wait for it. So are
    the streams' first chunks, so that every stream starts as soon as it is connected."""
    start, end = span
    if end - start >= NUMPY_SPAN_BYTES:
        lend_numpy()
    distributed = info is not None and info.distributed
    per, top = (CHUNKS_PER_STREAM_DISTRIBUTED, DISTRIBUTED_CHUNK_MAX) if distributed else (CHUNKS_PER_STREAM, CHUNK_MAX)
    every = min(top, max(CHUNK_MIN, (end - start) // (max(1, workers) * per) + 1))
    d = source.dialect
    # Not on Citus, where a chunk's commit is a distributed one that costs more than the wait.
    ramp = 0 if distributed else max(1, workers)
    first = tuple(min(every, size) for size in ((FIRST_ALONE_BYTES,) if first_alone else ()) + (RAMP_BYTES,) * ramp)
    fd = os.open(str(source.path), os.O_RDONLY)
    try:  # bare quotes are looked for here, ahead of the streams: see record_cuts
        yield from record_cuts(fd, start, end, d.quote.encode(), every, delimiter=d.delimiter.encode(),
                               first=first, taper=2 * max(1, workers), look=_look(source))
    finally:
        os.close(fd)


def _look(source: RawCsvChunks) -> Callable[[bytes], int]:
    """What the cutter does with each chunk's bytes as it holds them, before any stream gets the
    chunk: refuses one whose quote swallowed whole records (core.sources.csv.swallowed), or that
    holds a value the client refuses (core.relative_dates), sending the load through the parser,
    which names the line; and counts its records, once (the streams read a chunk only to send it:
    reading it again to count, and the guard's own read, took a core's third on 5M rows)."""
    from core.sources.csv import swallowed  # (polars: only for the loads that cut the file)

    d = source.dialect
    delimiter, quote = d.delimiter.encode(), d.quote.encode()
    columns = getattr(source, "columns", None)  # (a bare stand-in for the source has neither)
    width = len(columns()) if columns is not None else 0
    refuse = getattr(source, "refuse", None)

    def look(chunk: bytes) -> int:
        counted = swallowed.counted(chunk, delimiter, quote, width)
        if counted.likely and swallowed.first_found(chunk, delimiter, quote, width, 1) is not None:
            raise ParseInstead("a quoted field holds whole records (a quote that never closes?)")
        if refuse is not None and refuse.raw_refused(source, chunk):
            raise ParseInstead("a relative date word (now, today, ...) in a date or time column")
        return counted.records

    return look


def _records(fd: int, lo: int, hi: int, quote: bytes) -> int:
    """Records in the file bytes lo .. hi - 1 (whole records), read 16 MB at a time."""
    from core.sources.csv.records import count_records

    cuts = list(record_cuts(fd, lo, hi, quote, 16 << 20))
    return sum(count_records(os.pread(fd, b - a, a), quote) for a, b in zip(cuts, cuts[1:]))


def _rows_of(plan: Plan, lo: int, hi: int) -> tuple[int, int]:
    """The source rows a byte range holds (a refused chunk's, to find its bad row): counted from
    the data's start, which lies before any bare quote (record_cuts stops there)."""
    span = data_span(plan)
    assert span is not None  # the range came from it
    quote = _csv(plan).dialect.quote.encode()
    fd = os.open(str(plan.source.path), os.O_RDONLY)
    try:
        first = _records(fd, span[0], lo, quote)
        return first, first + _records(fd, lo, hi, quote)
    finally:
        os.close(fd)


def _as_rows(ctl: psycopg.Connection[Any], plan: Plan, ref: Any, key: str, done: list[ck.Chunk]) -> list[ck.Chunk]:
    """The book's byte-range chunks relabelled as the source rows they hold, for a run that goes
    on through the parser (which counts rows): records counted from the data's start."""
    span = data_span(plan)
    if span is None:
        raise LoadFailed("the earlier run loaded the file's bytes as they are, which this run's source options "
                         "do not allow; run again with the same options, or with --restart")
    quote = _csv(plan).dialect.quote.encode()
    rows: list[tuple[int, int, int]] = []
    row = 0
    fd = os.open(str(plan.source.path), os.O_RDONLY)
    try:
        at = span[0]
        for c in sorted(done, key=lambda c: c.lo):
            row += _records(fd, at, c.lo, quote) if c.lo > at else 0  # between the committed chunks
            n = c.rows_loaded + c.rows_rejected
            rows.append((c.lo, row, row + n))
            row += n
            at = c.hi
    except EndsInQuote:
        raise LoadFailed("the earlier run's chunks no longer match the file") from None
    finally:
        os.close(fd)
    with ctl.transaction():
        ck.relabel_as_rows(ctl, ref, key, rows)
    return ck.done_chunks(ctl, ref, key)


def feed_byte_ranges(run: RunContext, strategy: Strategy, plan: Plan) -> None:
    """`single` with parallel-copy and the file's own bytes: its streams read whole-record byte
    ranges of the file themselves, cut here as the per-batch chunks are; the reader's path
    (core.load.stages) when the file's bytes cannot be cut so (its encoding, line ends, quote)."""
    span = data_span(plan)
    if span is None or not isinstance(strategy, ReadsByteRanges):
        stages.stream_raw(run, strategy, plan)
        return
    size = plan.source.size

    def progress(records: int, sent: int) -> None:
        # What the streams read and sent so far; at the end the run checks it against what the
        # server took.
        run.rows_read = run.rows_loaded = records
        run.bytes_read = min(size, span[0] + sent)
        run.emit(Phase.LOADING)

    source = _csv(plan)
    cuts = byte_cuts(source, span, max(1, strategy.ctx.workers), run.target_info)
    ranges = ((p.lo, p.hi, p.records, p.plain) for p in byte_pieces(cuts, Ranges([])))
    strategy.feed_raw(ranges, str(source.path), progress)
    plan.source.check_unchanged()


def _record_counter(plan: Plan) -> Callable[[bytes], int]:
    from core.sources.csv.records import count_records

    quote = _csv(plan).dialect.quote.encode()
    return lambda data: count_records(data, quote)


def _write_rejects(run: RunContext, plan: Plan, chunks: list[ck.Chunk]) -> str | None:
    """The reject file from the committed chunks' rows, in source order (rewritten whole)."""
    spec = run.spec
    writer = RejectWriter(spec.reject_file, plan.source, None, None)
    for c in chunks:
        if c.rejects:
            writer.add_lines(c.rejects, c.rows_rejected)
    path = writer.discard_if_empty()
    if path:
        run.on_log(f"{writer.count} rejected rows written to {path}")
    return path


def _explain(run: RunContext, plan: Plan, proto: Strategy, cf: ChunkFailed) -> BaseException:
    """A refused chunk in words: the bad row (found by bisecting the chunk's rows) and what stayed."""
    piece = cf.piece
    if piece is not None:
        frame: pl.DataFrame | None = piece.frame
        first = piece.first
        if frame is None:
            lo, hi = _rows_of(plan, piece.lo, piece.hi) if piece.by_bytes else (piece.lo, piece.hi)
            frame, first = frame_of(plan.source, plan.maps, lo, hi), lo
        run.last_frame, run.batch_first = frame, first
    assert isinstance(cf.error, psycopg.Error)
    return per_batch_error(run, WriteFailed(cf.error), plan, proto)  # says the rows loaded so far stay committed


class SkipStreams(Strategy):
    """`--commit single` with `skip` over N connections: one transaction per stream, a savepoint
    per chunk, bad rows isolated chunk by chunk. The job makes it all-or-nothing by loading a
    staging (or new, renamed) table that one final step moves into place."""

    id = "parallel-copy"
    title = summary = lesson = seed = ""
    multi_connection = True

    def open(self) -> None:
        self.parsed_stmt = csv_copy_sql(self)
        self._streams: ChunkStreams | None = None

    def feed(self, run: RunContext, plan: Plan, rejects: RejectWriter) -> None:
        splan = StreamPlan(self.ctx, None, self.parsed_stmt, plan.source, True, None, rejects.limit,
                           rejects.limit_pct, binary=True)
        streams = self._streams = ChunkStreams(splan, self.ctx.workers, run.cancel, run.on_log, lambda: None)
        streams.on_progress = progress(run, streams, (0, 0, 0))
        streams.connect_all()
        try:
            streams.run(parsed_pieces(plan.source, plan.maps, self.ctx.batch_rows, True, Ranges([])))
        except ChunkFailed as cf:
            if isinstance(cf.error, psycopg.Error):
                raise WriteFailed(cf.error) from None
            raise
        text, count = streams.reject_text()
        rejects.add_lines(text, count)
        run.rows_read, run.rows_loaded, run.rows_rejected = streams.rows_done, streams.loaded, streams.rejected
        plan.source.check_unchanged()

    def write(self, frame: pl.DataFrame) -> int:
        raise ConfigError("the skip streams take the source themselves")

    def commit(self) -> None:
        if self._streams is not None:
            self._streams.commit()

    def rollback(self) -> None:
        if self._streams is not None:
            self._streams.rollback()

    def close(self) -> None:
        if self._streams is not None:
            self._streams.close()
