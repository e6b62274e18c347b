"""`per-batch` commit on one connection: each batch commits with its checkpoint; resume, reconnect."""

from __future__ import annotations

import time
import uuid
from typing import TYPE_CHECKING, Any

import psycopg
from psycopg import sql

from core import checkpoint as ck
from core import mapping as mp
from core.db import TableRef, connect
from core.diagnose import server_reason
from core.errors import (
    BadRowError,
    Cancelled,
    ConnectError,
    LoadFailed,
    ResumableStop,
)
from core.events import Phase
from core.first_bad import in_file_order
from core.plan import Plan
from core.protocols.common import (
    _connection_lost,
)
from core.rejects import RejectWriter
from core.result import LoadResult
from core.spec import ErrorPolicy, LoadMode
from core.strategies.base import Strategy, WriteContext, WriteFailed

if TYPE_CHECKING:
    from core.job import LoadJob


def open_book(
    job: LoadJob, ctl: psycopg.Connection[Any], plan: Plan, earlier: ck.Checkpoint | None
) -> tuple[LoadMode, list[str], dict[str, str], str]:
    """What every committing-as-it-goes run does first: the target made (kept even if the run
    fails, since its commits stay), its columns read, and the checkpoint book ready.

    Returns the mode to load in (an earlier run already created the table), the target
    columns, their types and the load's checkpoint key.
    """
    mode = job.spec.target.mode
    if earlier is not None and mode is LoadMode.CREATE:
        mode = LoadMode.APPEND  # the earlier run made the table
    job._emit(Phase.PREPARING, force=True)
    job._ensure_target(ctl, plan, mode)
    targets, types = job._target_columns(ctl, plan)
    key = ck.load_key(plan.source.path, plan.target)
    ck.ensure_book(ctl, plan.target)
    return mode, targets, types, key


def run_per_batch(
    job: LoadJob, cls: type[Strategy], dsn: str, ctl: psycopg.Connection[Any], plan: Plan, earlier: ck.Checkpoint | None
) -> LoadResult:
    """Commit every batch with its checkpoint; reconnect and go on when the connection drops."""
    spec, ref = job.spec, plan.target
    mode, targets, types, key = open_book(job, ctl, plan, earlier)
    if earlier is None:
        ck.start(ctl, ref, key, str(plan.source.path), ck.fingerprint(plan.source.path), cls.id)
    else:
        job.on_log(f"resuming after {earlier.rows_done:,} committed source rows")
    state = earlier or ck.read(ctl, ref, key)
    assert state is not None
    job.resumed_from = earlier.rows_done if earlier else 0
    loaded_before = job.loaded_before = earlier.rows_loaded if earlier else 0
    job.bytes_before = earlier.bytes_done if earlier else 0
    # Upsert goes through a temporary table that each commit empties.
    stage = TableRef(f"_sluice_stage_{uuid.uuid4().hex[:12]}") if mode is LoadMode.UPSERT else None
    ctx = WriteContext(
        dsn=dsn, table=stage or ref, columns=targets, types=[types[t] for t in targets],
        batch_rows=max(1, spec.rows_per_batch), workers=1, cancel=job.cancel, log=job.on_log,
    )
    if spec.on_error is ErrorPolicy.SKIP:
        job._rejects = RejectWriter(
            spec.reject_file, plan.source, spec.reject_limit, spec.reject_limit_pct,
            resume_at=(state.reject_bytes, state.rows_rejected) if earlier else None,
        )
        job._rejects.outcome = "the batch was rolled back; earlier batches stay committed (--resume continues)"
    attempt = 0
    try:
        while True:
            job._restore(state)
            strategy = cls(ctx)
            try:
                strategy.open()
                assert strategy.conn is not None
                if stage is not None:
                    strategy.conn.execute(
                        sql.SQL("CREATE TEMP TABLE {} (LIKE {} INCLUDING DEFAULTS) ON COMMIT DELETE ROWS").format(
                            stage.ident(), ref.ident())
                    )
                    strategy.conn.commit()
                job._emit(Phase.LOADING, force=True)
                job._commit_batches(strategy, plan, key, mode, stage, targets)
                job._emit(Phase.FINISHING, force=True)
                job._truncate_once(strategy.conn, ref, mode)  # an empty source still empties the table
                ck.finish(strategy.conn, ref, key)
                strategy.conn.commit()
                break
            except (WriteFailed, psycopg.OperationalError, ConnectError) as exc:
                error = exc.error if isinstance(exc, WriteFailed) else exc
                if job.cancel.cancelled or not _connection_lost(error):
                    strategy.rollback()
                    raise job._per_batch_error(exc, plan, strategy) from None
                if job.rows_read > state.rows_done:
                    attempt = 0  # batches went through since the last failure
                state, attempt = job._reconnect(dsn, ref, key, error, attempt)
            except (psycopg.Error, ck.CheckpointMoved) as exc:
                strategy.rollback()
                raise job._per_batch_error(exc, plan, strategy) from None
            except BaseException:
                strategy.rollback()
                raise
            finally:
                strategy.close()
    except Cancelled:
        job._emit(Phase.CANCELLED, force=True)
        raise
    finally:
        if job._rejects is not None:
            job._rejects.close()
    job._emit(Phase.DONE, force=True)
    reject_file = job._rejects.discard_if_empty() if job._rejects else None
    return LoadResult(
        spec.strategy, job.rows_read, job.rows_loaded, job.rows_rejected, time.monotonic() - job._t0,
        job.bytes_read, reject_file, job.resumed_from, load_seconds=job._load_seconds(), loaded_before=loaded_before,
    )

def restore(
    job: LoadJob, state: ck.Checkpoint) -> None:
    """Counters and the reject file back to what the last commit recorded."""
    job.rows_read, job.rows_loaded, job.rows_rejected = state.rows_done, state.rows_loaded, state.rows_rejected
    job.bytes_read = state.bytes_done
    if job._rejects is not None:
        job._rejects.rewind(state.reject_bytes, state.rows_rejected)

def commit_batches(
    job: LoadJob, strategy: Strategy, plan: Plan, key: str, mode: LoadMode, stage: TableRef | None, targets: list[str]
) -> None:
    conn = strategy.conn
    assert conn is not None
    ref, rejects = plan.target, job._rejects
    batches = plan.source.load_batches(job.spec.rows_per_batch, skip_rows=job.rows_read,
                                       with_bad=rejects is not None)
    for batch in in_file_order(batches, strategy):
        job.cancel.check()
        plan.source.check_unchanged()
        mapped = mp.apply(batch.frame, plan.maps)
        job._batch_first = job._stream_base = batch.first_row
        job._last_frame = mapped
        if hasattr(strategy, "lines"):
            strategy.lines = batch.lines
        job._truncate_once(conn, ref, mode)
        done = max([batch.first_row + batch.frame.height] + [b.row + 1 for b in batch.bad])
        loaded, refused = 0, len(batch.bad)
        if rejects is not None:
            for record in batch.bad:  # malformed records: they come before the batch's rows
                rejects.add_bad(record)
            if batch.frame.height:
                conn.execute("SELECT 1")  # open the transaction, so the batch gets a savepoint
                loaded, bad = job._write_or_isolate(strategy, conn, mapped, batch.first_row)
                for r in bad:
                    rejects.add(r, strategy.ctx.dsn, strategy.ctx.columns, strategy.ctx.types,
                                mapped.row(r.row - batch.first_row))
                refused += len(bad)
            rejects.check_limit(done)
        else:
            loaded = strategy.write(mapped)
            strategy.flush()
        if stage is not None:
            conn.execute(job._move_sql(stage, ref, targets, LoadMode.UPSERT))
        ck.advance(
            conn, ref, key, rows_done=done, rows_loaded=job.rows_loaded + loaded,
            rows_rejected=job.rows_rejected + refused, bytes_done=batch.bytes_read,
            reject_bytes=rejects.position() if rejects is not None else 0, expect_rows_done=job.rows_read,
        )
        conn.commit()
        job.rows_read, job.bytes_read = done, batch.bytes_read
        job.rows_loaded += loaded
        job.rows_rejected += refused
        job._emit(Phase.LOADING)
    plan.source.check_unchanged()

def truncate_once(
    job: LoadJob, conn: psycopg.Connection[Any], ref: TableRef, mode: LoadMode) -> None:
    """Truncate in the transaction of the run's first commit, whatever it holds.

    Until a commit goes through, the checkpoint says no source row is done (rows_read is
    restored from it), so a retry or a --resume of a run that never committed truncates,
    and one that did never truncates again. Keyed on rows done, not on the first batch's
    row: that batch may start after a rejected record, and an empty source has none.
    """
    if mode is LoadMode.TRUNCATE and job.rows_read == 0:
        conn.execute(sql.SQL("TRUNCATE {}").format(ref.ident()))

def reconnect(
    job: LoadJob, dsn: str, ref: TableRef, key: str, error: BaseException, attempt: int
) -> tuple[ck.Checkpoint, int]:
    """Wait with back-off, then read what really committed (the checkpoint is the truth)."""
    from core import job as jobmod  # its RETRY_BACKOFF_S (tests shorten it there)

    while True:
        attempt += 1
        reason = server_reason(error) if isinstance(error, psycopg.Error) else str(error)
        if attempt > len(jobmod.RETRY_BACKOFF_S):
            raise ResumableStop(
                f"the connection failed {len(jobmod.RETRY_BACKOFF_S)} times in a row ({reason}); "
                f"{job.rows_loaded:,} rows are committed. Run again with --resume to continue "
                f"from source row {job.rows_read + 1:,}"
            )
        delay = jobmod.RETRY_BACKOFF_S[attempt - 1]
        message = f"connection lost ({reason}); retry {attempt}/{len(jobmod.RETRY_BACKOFF_S)} in {delay:g} s"
        job.on_log(message)
        job._emit(Phase.LOADING, force=True, message=message)
        if job.cancel.wait(delay):
            raise Cancelled()
        try:
            with connect(dsn, autocommit=True) as c:
                state = ck.read(c, ref, key)
        except (ConnectError, psycopg.OperationalError) as exc:
            error = exc
            continue
        if state is None or state.finished:
            raise LoadFailed("the load's checkpoint vanished or was finished by another process; stopped")
        job.on_log(f"reconnected; continuing after {state.rows_done:,} committed source rows")
        return state, attempt

def per_batch_error(
    job: LoadJob, exc: BaseException, plan: Plan, strategy: Strategy) -> BaseException:
    """The failure in words, saying what stayed committed."""
    kept = f"the {job.rows_loaded:,} rows committed before it stay in the table"
    if isinstance(exc, WriteFailed):
        err = job._explain(exc, plan, strategy)
        if isinstance(err, BadRowError):
            return BadRowError(err.problem, committed=job.rows_loaded)
        if isinstance(err, Cancelled):
            return err
        reason = server_reason(exc.error)
    elif isinstance(exc, ck.CheckpointMoved):
        return LoadFailed("another process is loading the same file into the same table; this run stopped")
    elif isinstance(exc, psycopg.errors.QueryCanceled) and job.cancel.cancelled:
        return Cancelled()
    elif isinstance(exc, psycopg.Error):
        reason = server_reason(exc)
    else:
        reason = str(exc)
    return LoadFailed(f"the load stopped: {reason}; the batch was rolled back and {kept}")
