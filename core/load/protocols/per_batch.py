"""`per-batch` commit on one connection: each batch commits with its checkpoint; resume, reconnect."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

import psycopg
from psycopg import sql

from core import checkpoint as ck
from core import mapping as mp
from core.db import TableRef, connect, session_is_utc
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
from core.load.explain import explain
from core.load.protocols.common import connection_lost, ensure_target, move_sql, target_columns
from core.load.rejects import RejectWriter
from core.load.stages import write_or_isolate
from core.plan import Plan
from core.result import LoadResult
from core.sources.many import load_fingerprint
from core.spec import ErrorPolicy, LoadMode
from core.strategies.abilities import TakesLines
from core.strategies.base import Strategy, WriteContext, WriteFailed

if TYPE_CHECKING:
    from core.load.context import RunContext


def open_book(
    run: RunContext, ctl: psycopg.Connection[Any], plan: Plan, earlier: ck.Checkpoint | None
) -> tuple[LoadMode, list[str], dict[str, str], str]:
    """What every committing-as-it-goes run does first: the target made (kept even if the run
    fails, since its commits stay), its columns read, and the checkpoint book ready.

    Returns the mode to load in (an earlier run already created the table), the target
    columns, their types and the load's checkpoint key.
    """
    mode = run.spec.target.mode
    if earlier is not None and mode is LoadMode.CREATE:
        mode = LoadMode.APPEND  # the earlier run made the table
    run.emit(Phase.PREPARING, force=True)
    ensure_target(ctl, plan, mode, run.spec.target.ddl)
    targets, types = target_columns(ctl, plan)
    key = ck.load_key(plan.source.path, plan.target)
    ck.ensure_book(ctl, plan.target)
    return mode, targets, types, key


def run_per_batch(
    run: RunContext, cls: type[Strategy], dsn: str, ctl: psycopg.Connection[Any], plan: Plan,
    earlier: ck.Checkpoint | None,
) -> LoadResult:
    """Commit every batch with its checkpoint; reconnect and go on when the connection drops."""
    spec, ref = run.spec, plan.target
    mode, targets, types, key = open_book(run, ctl, plan, earlier)
    if earlier is None:
        ck.start(ctl, ref, key, str(plan.source.path), load_fingerprint(plan.source.path), cls.id)
    else:
        run.on_log(f"resuming after {earlier.rows_done:,} committed source rows")
    state = earlier or ck.read(ctl, ref, key)
    assert state is not None
    run.resumed_from = earlier.rows_done if earlier else 0
    loaded_before = run.loaded_before = earlier.rows_loaded if earlier else 0
    run.bytes_before = earlier.bytes_done if earlier else 0
    # Upsert goes through a temporary table that each commit empties.
    stage = TableRef(f"_sluice_stage_{uuid.uuid4().hex[:12]}") if mode is LoadMode.UPSERT else None
    ctx = WriteContext(
        dsn=dsn, table=stage or ref, columns=targets, types=[types[t] for t in targets],
        batch_rows=max(1, spec.rows_per_batch), workers=1, cancel=run.cancel, log=run.on_log,
        utc=session_is_utc(ctl),
    )
    if spec.on_error is ErrorPolicy.SKIP:
        run.rejects = RejectWriter(
            spec.reject_file, plan.source, spec.reject_limit, spec.reject_limit_pct,
            resume_at=(state.reject_bytes, state.rows_rejected) if earlier else None,
        )
        run.rejects.outcome = "the batch was rolled back; earlier batches stay committed (--resume continues)"
    attempt = 0
    try:
        while True:
            restore(run, state)
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
                run.emit(Phase.LOADING, force=True)
                commit_batches(run, strategy, plan, key, mode, stage, targets)
                run.emit(Phase.FINISHING, force=True)
                truncate_once(run, strategy.conn, ref, mode)  # an empty source still empties the table
                ck.finish(strategy.conn, ref, key)
                strategy.conn.commit()
                break
            except (WriteFailed, psycopg.OperationalError, ConnectError) as exc:
                error = exc.error if isinstance(exc, WriteFailed) else exc
                if run.cancel.cancelled or not connection_lost(error):
                    strategy.rollback()
                    raise per_batch_error(run, exc, plan, strategy) from None
                if run.rows_read > state.rows_done:
                    attempt = 0  # batches went through since the last failure
                state, attempt = reconnect(run, dsn, ref, key, error, attempt)
            except (psycopg.Error, ck.CheckpointMoved) as exc:
                strategy.rollback()
                raise per_batch_error(run, exc, plan, strategy) from None
            except BaseException:
                strategy.rollback()
                raise
            finally:
                strategy.close()
    except Cancelled:
        run.emit(Phase.CANCELLED, force=True)
        raise
    finally:
        if run.rejects is not None:
            run.rejects.close()
    run.emit(Phase.DONE, force=True)
    reject_file = run.rejects.discard_if_empty() if run.rejects else None
    return run.result(reject_file, resumed_from=run.resumed_from, loaded_before=loaded_before)

def restore(
    run: RunContext, state: ck.Checkpoint) -> None:
    """Counters and the reject file back to what the last commit recorded."""
    run.rows_read, run.rows_loaded, run.rows_rejected = state.rows_done, state.rows_loaded, state.rows_rejected
    run.bytes_read = state.bytes_done
    if run.rejects is not None:
        run.rejects.rewind(state.reject_bytes, state.rows_rejected)

def commit_batches(
    run: RunContext, strategy: Strategy, plan: Plan, key: str, mode: LoadMode, stage: TableRef | None,
    targets: list[str],
) -> None:
    conn = strategy.conn
    assert conn is not None
    ref, rejects = plan.target, run.rejects
    batches = plan.source.load_batches(run.spec.rows_per_batch, skip_rows=run.rows_read,
                                       with_bad=rejects is not None)
    for batch in in_file_order(batches, strategy):
        run.cancel.check()
        plan.source.check_unchanged()
        mapped = mp.apply(batch.frame, plan.maps)
        run.batch_first = run.stream_base = batch.first_row
        run.last_frame = mapped
        if isinstance(strategy, TakesLines):
            strategy.lines = batch.lines
        truncate_once(run, conn, ref, mode)
        done = max([batch.first_row + batch.frame.height] + [b.row + 1 for b in batch.bad])
        loaded, refused = 0, len(batch.bad)
        if rejects is not None:
            for record in batch.bad:  # malformed records: they come before the batch's rows
                rejects.add_bad(record)
            if batch.frame.height:
                conn.execute("SELECT 1")  # open the transaction, so the batch gets a savepoint
                loaded, bad = write_or_isolate(strategy, conn, mapped, batch.first_row)
                for r in bad:
                    rejects.add(r, strategy.ctx.dsn, strategy.ctx.columns, strategy.ctx.types,
                                mapped.row(r.row - batch.first_row))
                refused += len(bad)
            rejects.check_limit(done)
        else:
            loaded = strategy.write(mapped)
            strategy.flush()
        if stage is not None:
            conn.execute(move_sql(stage, ref, targets, LoadMode.UPSERT, run.spec.target.key))
        ck.advance(
            conn, ref, key, rows_done=done, rows_loaded=run.rows_loaded + loaded,
            rows_rejected=run.rows_rejected + refused, bytes_done=batch.bytes_read,
            reject_bytes=rejects.position() if rejects is not None else 0, expect_rows_done=run.rows_read,
        )
        conn.commit()
        run.rows_read, run.bytes_read = done, batch.bytes_read
        run.rows_loaded += loaded
        run.rows_rejected += refused
        run.emit(Phase.LOADING)
    plan.source.check_unchanged()

def truncate_once(
    run: RunContext, conn: psycopg.Connection[Any], ref: TableRef, mode: LoadMode) -> None:
    """Truncate in the transaction of the run's first commit, whatever it holds.

    Until a commit goes through, the checkpoint says no source row is done (rows_read is
    restored from it), so a retry or a --resume of a run that never committed truncates,
    and one that did never truncates again. Keyed on rows done, not on the first batch's
    row: that batch may start after a rejected record, and an empty source has none.
    """
    if mode is LoadMode.TRUNCATE and run.rows_read == 0:
        conn.execute(sql.SQL("TRUNCATE {}").format(ref.ident()))

def reconnect(
    run: RunContext, dsn: str, ref: TableRef, key: str, error: BaseException, attempt: int
) -> tuple[ck.Checkpoint, int]:
    """Wait with back-off, then read what really committed (the checkpoint is the truth)."""
    while True:
        attempt += 1
        reason = server_reason(error) if isinstance(error, psycopg.Error) else str(error)
        if attempt > len(run.retry_backoff_s):
            raise ResumableStop(
                f"the connection failed {len(run.retry_backoff_s)} times in a row ({reason}); "
                f"{run.rows_loaded:,} rows are committed. Run again with --resume to continue "
                f"from source row {run.rows_read + 1:,}"
            )
        delay = run.retry_backoff_s[attempt - 1]
        message = f"connection lost ({reason}); retry {attempt}/{len(run.retry_backoff_s)} in {delay:g} s"
        run.on_log(message)
        run.emit(Phase.LOADING, force=True, message=message)
        if run.cancel.wait(delay):
            raise Cancelled()
        try:
            with connect(dsn, autocommit=True) as c:
                state = ck.read(c, ref, key)
        except (ConnectError, psycopg.OperationalError) as exc:
            error = exc
            continue
        if state is None or state.finished:
            raise LoadFailed("the load's checkpoint vanished or was finished by another process; stopped")
        run.on_log(f"reconnected; continuing after {state.rows_done:,} committed source rows")
        return state, attempt

def per_batch_error(
    run: RunContext, exc: BaseException, plan: Plan, strategy: Strategy) -> BaseException:
    """The failure in words, saying what stayed committed."""
    kept = f"the {run.rows_loaded:,} rows committed before it stay in the table"
    if isinstance(exc, WriteFailed):
        err = explain(run, exc, plan, strategy)
        if isinstance(err, BadRowError):
            return BadRowError(err.problem, committed=run.rows_loaded)
        if isinstance(err, Cancelled):
            return err
        reason = server_reason(exc.error)
    elif isinstance(exc, ck.CheckpointMoved):
        return LoadFailed("another process is loading the same file into the same table; this run stopped")
    elif isinstance(exc, psycopg.errors.QueryCanceled) and run.cancel.cancelled:
        return Cancelled()
    elif isinstance(exc, psycopg.Error):
        reason = server_reason(exc)
    else:
        reason = str(exc)
    return LoadFailed(f"the load stopped: {reason}; the batch was rolled back and {kept}")
