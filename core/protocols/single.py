"""`single` commit: one transaction, or a staging table moved in one, or two-phase across streams."""

from __future__ import annotations

import time
import uuid
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import psycopg
from psycopg import sql

from core import janitor, many_files, warm_start
from core import mapping as mp
from core.db import TableRef, insert_into
from core.diagnose import server_reason
from core.errors import (
    BadRowError,
    Cancelled,
    ConfigError,
    LoadFailed,
    SluiceError,
    TooManyRejects,
)
from core.events import Phase
from core.plan import Plan
from core.protocols.common import (
    _drop,
    _is_format_error,
    _ParseInstead,
    _user_ddl,
    raw_copy_options,
    raw_text_columns,
    source_takes_raw,
)
from core.rejects import RejectWriter
from core.result import LoadResult
from core.spec import ErrorPolicy, LoadMode
from core.strategies.base import Strategy, WriteContext, WriteFailed

if TYPE_CHECKING:
    from core.job import LoadJob


def run(
    job: LoadJob, cls: type[Strategy], dsn: str, ctl: psycopg.Connection[Any], plan: Plan) -> LoadResult:
    spec, ref = job.spec, plan.target
    mode = spec.target.mode
    created = succeeded = False
    stage: TableRef | None = None
    private: TableRef | None = None  # create-then-rename: the new table under its private name
    strategy: Strategy | None = None
    proto = job.protocol.protocol if job.protocol is not None else None
    moving = False  # the staging table's rows are being moved into the target
    # Bad rows can only be isolated from parsed batches, so `skip` never passes raw bytes.
    bytes_fit = (
        spec.on_error is ErrorPolicy.ABORT
        and source_takes_raw(plan.source)
        and mp.is_identity(plan.maps, plan.source.columns())
        and not job._no_raw
    )
    raw = cls.streams_raw_csv and bytes_fit
    warm = (cls.warms_with_raw_csv and bytes_fit and hasattr(plan.source, "raw_then_batches")
            and plan.source.size >= warm_start.WARM_MIN_BYTES)
    job._raw = raw
    ahead = None
    try:
        job._emit(Phase.PREPARING, force=True)
        if not raw and not warm and spec.on_error is ErrorPolicy.ABORT:
            ahead = job._read_ahead(plan)  # parsing starts now, beside the set-up below
        if proto is not None and proto.value == "create-then-rename":
            private = job._create_private(ctl, plan)
            targets, types = job._target_columns(ctl, replace(plan, target=private))
        else:
            created = job._ensure_target(ctl, plan, mode)
            targets, types = job._target_columns(ctl, plan)
        two_phase = proto is not None and proto.value == "two-phase"
        staged = staged_load(cls, mode, job.protocol)
        write_ref = private or ref
        if staged:
            stage = TableRef(f"_sluice_stage_{uuid.uuid4().hex[:12]}", ref.schema)
            # The target's constraints go along so bad rows fail where their row is known;
            # upsert keeps only defaults: its keys are meant to repeat the target's.
            like = sql.SQL("INCLUDING DEFAULTS" if mode is LoadMode.UPSERT else "INCLUDING ALL")
            janitor.hold(ctl, stage.name)  # ours while this session lives; a janitor drops it after
            ctl.execute(
                sql.SQL("CREATE UNLOGGED TABLE {} (LIKE {} {})").format(stage.ident(), ref.ident(), like)
            )
            if job.target_info is not None and job.target_info.distributed:
                from core.protocols import target as tgt

                # Co-located with the target: the final INSERT ... SELECT runs on the workers.
                tgt.distribute_like(ctl, stage, ref, job.target_info)
            write_ref = stage
        ctx = WriteContext(
            dsn=dsn,
            table=write_ref,
            columns=targets,
            types=[types[t] for t in targets],
            batch_rows=max(1, spec.rows_per_batch),
            workers=max(1, spec.workers),
            cancel=job.cancel,
            log=job.on_log,
            # One stream straight into an existing table: the control connection carries it.
            # (A table made here is dropped on failure through ctl, so it keeps its own.)
            borrow=ctl if not (created or staged or private or two_phase or cls.multi_connection) else None,
            warm=warm,
        )
        if raw or warm:
            ctx.copy_options = raw_copy_options(plan.source)
            ctx.force_not_null = raw_text_columns(plan)
        if cls.chunk_commits and spec.on_error is ErrorPolicy.SKIP:
            from core.protocols.parallel_run import SkipStreams

            strategy = SkipStreams(ctx)  # bad rows isolated chunk by chunk on every stream
        else:
            strategy = cls(ctx)
        if getattr(plan.source, "on_conflict", False) and hasattr(strategy, "on_conflict"):
            strategy.on_conflict = True  # a script's INSERT ... ON CONFLICT DO NOTHING, replayed as such
        if hasattr(strategy, "two_phase"):
            strategy.two_phase = two_phase
        strategy.open()
        if mode is LoadMode.TRUNCATE and not staged:
            assert strategy.conn is not None
            strategy.conn.execute(sql.SQL("TRUNCATE {}").format(ref.ident()))
        job._emit(Phase.LOADING, force=True)
        job.cancel.check()
        if raw and getattr(strategy, "feed_raw", None) is not None:
            strategy.feed_raw(job, plan)  # type: ignore[attr-defined]  # streams read their own byte ranges
        elif raw:
            job._stream_raw(strategy, plan)
        elif warm:
            warm_start.stream_warm(job, strategy, plan)
        elif spec.on_error is ErrorPolicy.SKIP:
            job._rejects = RejectWriter(spec.reject_file, plan.source, spec.reject_limit, spec.reject_limit_pct)
            if getattr(strategy, "feeds_itself", False):
                strategy.feed(job, plan, job._rejects)  # type: ignore[attr-defined]
            else:
                job._stream_skipping(strategy, plan)
        else:
            job._stream_batches(strategy, plan, ahead)
        job._emit(Phase.FINISHING, force=True)
        job.cancel.check()
        strategy.flush()
        if spec.on_error is ErrorPolicy.ABORT:
            job._check_arrived(strategy)
        if job.dry_run and not staged:
            strategy.rollback()  # a check: nothing stays
        else:
            if not staged and private is None and not cls.multi_connection:
                many_files.in_commit(job, strategy.conn)  # per-file commits: the file's mark in its own commit
            strategy.commit()  # a check commits only into the scratch stage, whose move is rolled back
        if staged and stage is not None:
            moving = True
            job._move(ctl, stage, ref, targets, mode)
            moving = False
        if private is not None and not job.dry_run:
            from core.protocols import target as tgt

            tgt.rename_into_place(ctl, private, ref)
            private = None  # it is the target now
    except WriteFailed as wf:
        job._rollback(strategy)
        if warm and getattr(strategy, "sending_raw", False):
            # The file's own bytes were refused (a value, or their shape): the parser names the row.
            raise _ParseInstead(server_reason(wf.error)) from None
        if job._raw and _is_format_error(wf.error):
            raise _ParseInstead(server_reason(wf.error)) from None
        raise _in_targets_names(job._explain(wf, plan, strategy), stage, private, ref) from None
    except Cancelled:
        job._rollback(strategy)
        job._emit(Phase.CANCELLED, force=True)
        raise
    except TooManyRejects:
        job._rollback(strategy)
        raise
    except psycopg.OperationalError as exc:
        job._rollback(strategy)
        raise LoadFailed(
            f"the connection failed during the load: {server_reason(exc)}; nothing was loaded"
        ) from None
    except psycopg.Error as exc:
        job._rollback(strategy)
        why = server_reason(exc)
        if moving and isinstance(exc, psycopg.errors.CardinalityViolation) and stage is not None:
            why = _repeated_key(ctl, stage, spec.target.key) or why
        elif moving and isinstance(exc, psycopg.errors.UniqueViolation):
            why += ("; the streams' rows meet the table's own rows only when they are moved from the staging table, "
                    "all in one statement, so that row cannot be named or set aside: commit per batch (bad rows "
                    "named and set aside), or load with one stream (copy-csv)")
        error = LoadFailed(f"the server refused the load: {why}; nothing was loaded")
        raise _in_targets_names(error, stage, private, ref) from None
    except BaseException:
        job._rollback(strategy)
        raise
    else:
        created = created and job.dry_run  # keep the table: the load succeeded (a check drops it)
        succeeded = True
    finally:
        if ahead is not None:
            ahead.close()  # a load that failed before its batches were sent
        if job._rejects is not None and not succeeded:
            job._rejects.close()  # kept: it explains why the load stopped
        if strategy is not None:
            strategy.close()
        if stage is not None:
            _drop(ctl, stage)
        if private is not None:
            _drop(ctl, private)
        if created:
            _drop(ctl, ref)
    seconds = time.monotonic() - job._t0
    job._emit(Phase.DONE, force=True)
    reject_file = job._rejects.discard_if_empty() if job._rejects else None
    if reject_file:
        job.on_log(f"{job.rows_rejected} rejected rows written to {reject_file}")
    return LoadResult(
        spec.strategy, job.rows_read, job.rows_loaded, job.rows_rejected, seconds, job.bytes_read, reject_file,
        load_seconds=job._load_seconds(), reason=job.reason,
    )

def _repeated_key(ctl: psycopg.Connection[Any], stage: TableRef, keys: list[str]) -> str | None:
    """An upsert whose file gives one key twice: which key (ON CONFLICT DO UPDATE sets a row once)."""
    if not keys:
        return None
    cols = sql.SQL(", ").join(sql.Identifier(k) for k in keys)
    try:
        row = ctl.execute(sql.SQL("SELECT {}, count(*) FROM {} GROUP BY {} HAVING count(*) > 1 LIMIT 1").format(
            cols, stage.ident(), cols)).fetchone()
    except psycopg.Error:
        return None
    if row is None:
        return None
    *values, times = row
    key = ", ".join(f"{k} = {v!r}" for k, v in zip(keys, values))
    return (f"the key ({key}) comes {times} times in the file, and an upsert sets each row of the table once: "
            "keep one row per key in the file")


def _in_targets_names(error: SluiceError, stage: TableRef | None, private: TableRef | None,
                      ref: TableRef) -> SluiceError:
    """The server names the staging table (and its constraints, `<stage>_pkey`): say the
    target's name, which is the one the user knows."""
    names = [t.name for t in (stage, private) if t is not None]
    text = str(error)
    for name in names:
        text = text.replace(name, ref.name)
    if text == str(error):
        return error
    error.args = (text, *error.args[1:])
    if isinstance(error, BadRowError):
        reason = error.problem.reason
        for name in names:
            reason = reason.replace(name, ref.name)
        error.problem = replace(error.problem, reason=reason)
    return error


def staged_load(cls: type[Strategy], mode: LoadMode, choice: Any) -> bool:
    """Whether a single-commit load goes through a staging table moved in one transaction:
    upsert, a strategy that commits by itself, or a multi-connection protocol that says so.
    Not a new table loaded under a private name: nobody sees it before its rename anyway."""
    protocol = choice.protocol.value if choice is not None else None
    if protocol == "create-then-rename":
        return False
    return mode is LoadMode.UPSERT or not cls.transactional or protocol == "staged"


def create_private(
    job: LoadJob, ctl: psycopg.Connection[Any], plan: Plan) -> TableRef:
    """Create mode over N streams: the new table under a private name, renamed at the end."""
    ref = plan.target
    if plan.exists:
        raise ConfigError(f"table {ref.display()} already exists; choose append, truncate or upsert")
    private = TableRef(f"_sluice_stage_new_{uuid.uuid4().hex[:12]}", ref.schema)
    janitor.hold(ctl, private.name)  # a janitor drops it if this process dies
    try:
        with ctl.transaction():
            if job.spec.target.ddl:  # the edited DDL names the target: renamed before anyone sees it
                ctl.execute(_user_ddl(job.spec.target.ddl))
                ctl.execute(sql.SQL("ALTER TABLE {} RENAME TO {}").format(ref.ident(),
                                                                          sql.Identifier(private.name)))
            else:
                ctl.execute(mp.create_table_sql(private, plan.maps))
    except psycopg.Error as exc:
        raise ConfigError(f"cannot create {ref.display()}: {server_reason(exc)}") from None
    return private

def move(
    job: LoadJob, ctl: psycopg.Connection[Any], stage: TableRef, ref: TableRef, cols: list[str], mode: LoadMode
) -> None:
    with ctl.transaction():
        if mode is LoadMode.TRUNCATE:
            ctl.execute(sql.SQL("TRUNCATE {}").format(ref.ident()))
        ctl.execute(job._move_sql(stage, ref, cols, mode))
        if job.dry_run:
            raise psycopg.Rollback()
        many_files.in_commit(job, ctl)  # per-file commits: the file's mark in the move's commit

def move_sql(
    job: LoadJob, stage: TableRef, ref: TableRef, cols: list[str], mode: LoadMode) -> sql.Composed:
    """INSERT ... SELECT from the staging table; ON CONFLICT on the key for upsert."""
    collist = sql.SQL(", ").join(sql.Identifier(c) for c in cols)
    move = sql.SQL("{} SELECT {} FROM {}").format(insert_into(ref, cols), collist, stage.ident())
    if mode is not LoadMode.UPSERT:
        return move
    keys = job.spec.target.key
    rest = [c for c in cols if c not in keys]
    action = (
        sql.SQL("DO UPDATE SET {}").format(
            sql.SQL(", ").join(sql.SQL("{0} = EXCLUDED.{0}").format(sql.Identifier(c)) for c in rest)
        )
        if rest
        else sql.SQL("DO NOTHING")
    )
    return sql.SQL("{} ON CONFLICT ({}) {}").format(
        move, sql.SQL(", ").join(sql.Identifier(k) for k in keys), action
    )
