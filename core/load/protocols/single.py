"""`single` commit: one transaction, or a staging table moved in one, or two-phase across streams."""

from __future__ import annotations

import uuid
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import psycopg
from psycopg import sql

from core import janitor
from core import mapping as mp
from core.db import TableRef, session_is_utc
from core.diagnose import server_reason
from core.errors import (
    BadRowError,
    Cancelled,
    ConfigError,
    LoadFailed,
    ParseInstead,
    SluiceError,
    TooManyRejects,
)
from core.events import Phase
from core.load import stages, warm_start
from core.load.explain import explain
from core.load.protocols.common import (
    drop_table,
    ensure_target,
    is_format_error,
    move_sql,
    raw_copy_options,
    raw_text_columns,
    rollback,
    target_columns,
    user_ddl,
)
from core.load.rejects import RejectWriter
from core.plan import Plan
from core.result import LoadResult
from core.sources.abilities import InsertScript, RawCsvChunks, RawCsvSource, copy_reads_raw
from core.spec import ErrorPolicy, LoadMode
from core.strategies.abilities import ReplaysOnConflict, TwoPhaseCommits, WarmStarts
from core.strategies.base import Strategy, WriteContext, WriteFailed

if TYPE_CHECKING:
    from core.load.context import RunContext
    from core.load.protocols.parallel_run import SkipStreams
    from core.server import Choice


def run_single(
    run: RunContext, cls: type[Strategy], dsn: str, ctl: psycopg.Connection[Any], plan: Plan) -> LoadResult:
    spec, ref = run.spec, plan.target
    mode = spec.target.mode
    created = succeeded = False
    stage: TableRef | None = None
    private: TableRef | None = None  # create-then-rename: the new table under its private name
    strategy: Strategy | None = None
    skip_streams: SkipStreams | None = None  # `skip` over N streams: they take the source themselves
    proto = run.protocol.protocol if run.protocol is not None else None
    moving = False  # the staging table's rows are being moved into the target
    # Bad rows can only be isolated from parsed batches, so `skip` never passes raw bytes.
    bytes_fit = (
        spec.on_error is ErrorPolicy.ABORT
        and copy_reads_raw(plan.source)
        and mp.is_identity(plan.maps, plan.source.columns())
        and not run.no_raw
    )
    raw = cls.streams_raw_csv and bytes_fit
    warm = (cls.warms_with_raw_csv and bytes_fit and isinstance(plan.source, RawCsvSource)
            and plan.source.size >= warm_start.WARM_MIN_BYTES)
    run.raw = raw
    ahead = None
    try:
        run.emit(Phase.PREPARING, force=True)
        if not raw and not warm and spec.on_error is ErrorPolicy.ABORT:
            ahead = stages.read_ahead(run, plan)  # parsing starts now, beside the set-up below
        if proto is not None and proto.value == "create-then-rename":
            private = create_private(run, ctl, plan)
            targets, types = target_columns(ctl, replace(plan, target=private))
        else:
            created = ensure_target(ctl, plan, mode, spec.target.ddl)
            targets, types = target_columns(ctl, plan)
        two_phase = proto is not None and proto.value == "two-phase"
        staged = staged_load(cls, mode, run.protocol)
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
            if run.target_info is not None and run.target_info.distributed:
                from core import server as tgt

                # Co-located with the target: the final INSERT ... SELECT runs on the workers.
                tgt.distribute_like(ctl, stage, ref, run.target_info)
            write_ref = stage
        ctx = WriteContext(
            dsn=dsn,
            table=write_ref,
            columns=targets,
            types=[types[t] for t in targets],
            batch_rows=max(1, spec.rows_per_batch),
            workers=max(1, spec.workers),
            cancel=run.cancel,
            log=run.on_log,
            # One stream straight into an existing table: the control connection carries it.
            # (A table made here is dropped on failure through ctl, so it keeps its own.)
            borrow=ctl if not (created or staged or private or two_phase or cls.multi_connection) else None,
            warm=warm,
            utc=session_is_utc(ctl),
        )
        if (raw or warm) and isinstance(plan.source, RawCsvChunks):
            ctx.copy_options = raw_copy_options(plan.source)
            ctx.force_not_null = raw_text_columns(plan)
        if cls.chunk_commits and spec.on_error is ErrorPolicy.SKIP:
            # parallel_run is imported where it is used: a one-connection load never starts it up.
            from core.load.protocols.parallel_run import SkipStreams

            strategy = skip_streams = SkipStreams(ctx)  # bad rows isolated chunk by chunk on every stream
        else:
            strategy = cls(ctx)
        if isinstance(plan.source, InsertScript) and plan.source.on_conflict \
                and isinstance(strategy, ReplaysOnConflict):
            strategy.on_conflict = True  # a script's INSERT ... ON CONFLICT DO NOTHING, replayed as such
        if isinstance(strategy, TwoPhaseCommits):
            strategy.two_phase = two_phase
        strategy.open()
        if mode is LoadMode.TRUNCATE and not staged:
            assert strategy.conn is not None
            strategy.conn.execute(sql.SQL("TRUNCATE {}").format(ref.ident()))
        if _freezes(run, cls, ctl, ref, created=created, truncated=mode is LoadMode.TRUNCATE and not staged,
                    own_table=not (staged or private or two_phase)):
            assert strategy.conn is not None
            if created:
                # Made a moment ago by the control connection, and empty: truncated again here, in
                # the load's transaction, so that COPY may write its rows frozen.
                strategy.conn.execute(sql.SQL("TRUNCATE {}").format(ref.ident()))
            ctx.freeze = True
            run.on_log(f"COPY ... FREEZE: {ref.display()} was {'created' if created else 'truncated'} in this "
                       "load's transaction, so its rows are written already frozen (no later VACUUM has to "
                       "rewrite them to freeze them)")
        run.emit(Phase.LOADING, force=True)
        run.cancel.check()
        if raw and cls.multi_connection:
            from core.load.protocols.parallel_run import feed_byte_ranges

            feed_byte_ranges(run, strategy, plan)  # streams read their own byte ranges
        elif raw:
            stages.stream_raw(run, strategy, plan)
        elif warm:
            warm_start.stream_warm(run, strategy, plan)
        elif spec.on_error is ErrorPolicy.SKIP:
            run.rejects = RejectWriter(spec.reject_file, plan.source, spec.reject_limit, spec.reject_limit_pct)
            if skip_streams is not None:
                skip_streams.feed(run, plan, run.rejects)
            else:
                stages.stream_skipping(run, strategy, plan)
        else:
            stages.stream_batches(run, strategy, plan, ahead)
        run.emit(Phase.FINISHING, force=True)
        run.cancel.check()
        strategy.flush()
        if spec.on_error is ErrorPolicy.ABORT:
            stages.check_arrived(run, strategy)
        if run.dry_run and not staged:
            strategy.rollback()  # a check: nothing stays
        else:
            if not staged and private is None and not cls.multi_connection:
                run.mark_file(strategy.conn)  # per-file commits: the file's mark in its own commit
            strategy.commit()  # a check commits only into the scratch stage, whose move is rolled back
        if staged and stage is not None:
            moving = True
            move(run, ctl, stage, ref, targets, mode)
            moving = False
        if private is not None and not run.dry_run:
            from core import server as tgt

            tgt.rename_into_place(ctl, private, ref)
            private = None  # it is the target now
    except WriteFailed as wf:
        rollback(strategy)
        if warm and isinstance(strategy, WarmStarts) and strategy.sending_raw:
            # The file's own bytes were refused (a value, or their shape): the parser names the row.
            raise ParseInstead(server_reason(wf.error)) from None
        if run.raw and is_format_error(wf.error):
            raise ParseInstead(server_reason(wf.error)) from None
        raise _in_targets_names(explain(run, wf, plan, strategy), stage, private, ref) from None
    except Cancelled:
        rollback(strategy)
        run.emit(Phase.CANCELLED, force=True)
        raise
    except TooManyRejects:
        rollback(strategy)
        raise
    except psycopg.OperationalError as exc:
        rollback(strategy)
        raise LoadFailed(
            f"the connection failed during the load: {server_reason(exc)}; nothing was loaded"
        ) from None
    except psycopg.Error as exc:
        rollback(strategy)
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
        rollback(strategy)
        raise
    else:
        created = created and run.dry_run  # keep the table: the load succeeded (a check drops it)
        succeeded = True
    finally:
        if ahead is not None:
            ahead.close()  # a load that failed before its batches were sent
        if run.rejects is not None and not succeeded:
            run.rejects.close()  # kept: it explains why the load stopped
        if strategy is not None:
            strategy.close()
        if stage is not None:
            drop_table(ctl, stage)
        if private is not None:
            drop_table(ctl, private)
        if created:
            drop_table(ctl, ref)
    seconds = run.seconds()
    run.emit(Phase.DONE, force=True)
    reject_file = run.rejects.discard_if_empty() if run.rejects else None
    if reject_file:
        run.on_log(f"{run.rows_rejected} rejected rows written to {reject_file}")
    return run.result(reject_file, seconds=seconds, reason=run.reason)


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


def staged_load(cls: type[Strategy], mode: LoadMode, choice: Choice | None) -> bool:
    """Whether a single-commit load goes through a staging table moved in one transaction:
    upsert, a strategy that commits by itself, or a multi-connection protocol that says so.
    Not a new table loaded under a private name: nobody sees it before its rename anyway."""
    protocol = choice.protocol.value if choice is not None else None
    if protocol == "create-then-rename":
        return False
    return mode is LoadMode.UPSERT or not cls.transactional or protocol == "staged"


def create_private(
    run: RunContext, ctl: psycopg.Connection[Any], plan: Plan) -> TableRef:
    """Create mode over N streams: the new table under a private name, renamed at the end."""
    ref = plan.target
    if plan.exists:
        raise ConfigError(f"table {ref.display()} already exists; choose append, truncate or upsert")
    private = TableRef(f"_sluice_stage_new_{uuid.uuid4().hex[:12]}", ref.schema)
    janitor.hold(ctl, private.name)  # a janitor drops it if this process dies
    try:
        with ctl.transaction():
            if run.spec.target.ddl:  # the edited DDL names the target: renamed before anyone sees it
                ctl.execute(user_ddl(run.spec.target.ddl))
                ctl.execute(sql.SQL("ALTER TABLE {} RENAME TO {}").format(ref.ident(),
                                                                          sql.Identifier(private.name)))
            else:
                ctl.execute(mp.create_table_sql(private, plan.maps))
    except psycopg.Error as exc:
        raise ConfigError(f"cannot create {ref.display()}: {server_reason(exc)}") from None
    return private

def move(
    run: RunContext, ctl: psycopg.Connection[Any], stage: TableRef, ref: TableRef, cols: list[str], mode: LoadMode
) -> None:
    with ctl.transaction():
        if mode is LoadMode.TRUNCATE:
            ctl.execute(sql.SQL("TRUNCATE {}").format(ref.ident()))
        ctl.execute(move_sql(stage, ref, cols, mode, run.spec.target.key))
        if run.dry_run:
            raise psycopg.Rollback()
        run.mark_file(ctl)  # per-file commits: the file's mark in the move's commit


def _freezes(run: RunContext, cls: type[Strategy], ctl: psycopg.Connection[Any], ref: TableRef, *,
             created: bool, truncated: bool, own_table: bool) -> bool:
    """COPY may say FREEZE: the rows go straight into the target, in one transaction (no
    savepoints, no staging table) that created or truncated it, and the target is a plain table
    (not partitioned, foreign, or under Citus, which refuse it or were not measured)."""
    if not (cls.freezes and not cls.multi_connection and own_table and (created or truncated)):
        return False
    if run.spec.on_error is not ErrorPolicy.ABORT or run.dry_run:
        return False
    row = ctl.execute(
        "SELECT c.relkind = 'r' AND NOT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus')"
        " FROM pg_class c WHERE c.oid = to_regclass(%s)", [ref.ident().as_string(ctl)]).fetchone()
    return bool(row and row[0])
