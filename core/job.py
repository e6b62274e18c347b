"""A load job: source -> mapping -> strategy -> PostgreSQL, with progress and cancel.

The job owns the transaction plan. Transactional single-connection strategies write
straight into the target inside one transaction. Strategies that commit by
themselves (per row) or over several connections without two-phase commit write
into an unlogged staging table, and one transaction moves the rows into the target,
so `single` mode stays all or nothing whatever the strategy.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, replace
from typing import Any

import polars as pl
import psycopg
from psycopg import sql

from core import checkpoint as ck
from core import janitor
from core import mapping as mp
from core.auto import AUTO, Choice, choose
from core.cancel import CancelToken
from core.db import TableRef, connect, resolve_dsn, strip_password, table_columns
from core.diagnose import bad_column, first_bad_row, first_bad_row_in, server_reason
from core.errors import (
    BadRowError,
    Cancelled,
    ConfigError,
    ConnectError,
    LoadFailed,
    ResumableStop,
    RowProblem,
    SluiceError,
    SourceError,
    TooManyRejects,
    UnfinishedRun,
)
from core.events import Phase, Progress
from core.rejects import Reject, RejectWriter, isolate
from core.sources.base import Batch, RawChunk, Source
from core.sources.factory import open_source
from core.spec import ColumnMap, CommitMode, ErrorPolicy, LoadMode, LoadSpec
from core.stages import Prefetch
from core.strategies.base import Strategy, WriteContext, WriteFailed, all_strategies, get_strategy
from core.strategies.binary_values import BadValue

PROGRESS_EVERY_S = 0.1
RETRY_BACKOFF_S = (0.5, 1.0, 2.0, 4.0, 8.0)  # per-batch: waits before each reconnect


@dataclass(frozen=True)
class LoadResult:
    strategy: str
    rows_read: int
    rows_loaded: int
    rows_rejected: int
    seconds: float
    bytes: int
    reject_file: str | None = None
    resumed_from: int = 0  # source rows an earlier per-batch run had committed
    load_seconds: float = 0.0  # from the first batch to the commit: no start-up, connecting or planning
    chosen: dict[str, Any] | None = None  # with --strategy auto: the strategy, batch_rows and workers picked
    reason: str = ""  # why auto chose it, and why several streams take their protocol (said before the run)
    rows_dropped: int = 0  # script rows ON CONFLICT DO NOTHING dropped: their key was already there

    @property
    def rows_per_s(self) -> float:
        return self.rows_loaded / self.seconds if self.seconds > 0 else 0.0

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["rows_per_s"] = round(self.rows_per_s, 1)
        d["seconds"] = round(self.seconds, 4)
        return d


@dataclass
class Plan:
    """What the job resolved before sending anything; the window shows it too."""

    source: Source
    target: TableRef
    maps: list[ColumnMap]
    exists: bool
    target_types: dict[str, str]


def plan_load(spec: LoadSpec, conn: psycopg.Connection[Any] | None = None) -> Plan:
    """Open the source, look at the target and settle the mapping (no writes)."""
    source = open_source(spec.source)
    ref = TableRef(spec.target.table, spec.target.schema)
    existing = table_columns(conn, ref) if conn is not None else None
    # Only a new table needs a sample (for its column types): an existing one has its own.
    maps = spec.columns or mp.default_mapping(source.columns(), None if existing else source.sample(500), existing)
    mp.validate(maps, source.columns())
    types = {c.name: c.type for c in existing} if existing else {m.target: m.type for m in mp.included(maps)}
    return Plan(source, ref, maps, existing is not None, types)


class LoadJob:
    def __init__(
        self,
        spec: LoadSpec,
        *,
        on_progress: Callable[[Progress], None] | None = None,
        on_log: Callable[[str], None] | None = None,
        cancel: CancelToken | None = None,
        resume: bool = False,
        restart: bool = False,
        dry_run: bool = False,
    ) -> None:
        # A check: the whole load in one transaction that is rolled back at the end.
        self.dry_run = dry_run
        self.spec = replace(spec, commit=CommitMode.SINGLE) if dry_run else spec
        self.resume = resume  # continue an unfinished per-batch run of this load
        self.restart = restart  # start again from row 1 although an earlier run is unfinished
        self.on_progress = on_progress or (lambda _p: None)
        self.on_log = on_log or (lambda _m: None)
        self.cancel = cancel or CancelToken()
        self._t0 = 0.0
        self._last_emit = 0.0
        self.rows_read = self.rows_loaded = self.rows_rejected = 0
        self.bytes_read = 0
        self.bytes_total = 0

    # -- progress -------------------------------------------------------------------

    _load_t0 = 0.0

    def _load_seconds(self) -> float:
        return time.monotonic() - (self._load_t0 or self._t0)

    def _emit(self, phase: Phase, *, force: bool = False, message: str = "") -> None:
        now = time.monotonic()
        if phase is Phase.LOADING and not self._load_t0:
            self._load_t0 = now
        if not force and now - self._last_emit < PROGRESS_EVERY_S:
            return
        self._last_emit = now
        self.on_progress(
            Progress(
                phase,
                self.rows_read,
                self.rows_loaded,
                self.rows_rejected,
                self.bytes_read,
                self.bytes_total,
                now - self._t0,
                message,
            )
        )

    # -- the run ----------------------------------------------------------------------

    chosen: Choice | None = None  # what `auto` picked, and why

    def run(self) -> LoadResult:
        result = self._run_job()
        reasons = [r for r in (self.chosen.reason if self.chosen else "", result.reason) if r]
        if self.chosen is not None:
            result = replace(result, chosen=self.chosen.to_json(), reason="; ".join(reasons))
        return result

    def _run_job(self) -> LoadResult:
        self._t0 = time.monotonic()
        spec = self.spec
        cls = None if spec.strategy == AUTO else get_strategy(spec.strategy)
        self._emit(Phase.CONNECTING, force=True)
        dsn = resolve_dsn(spec.dsn)
        with connect(dsn, autocommit=True) as ctl:
            plan = plan_load(spec, ctl)
            if cls is None:
                self.chosen = choose(spec, plan, ctl)
                self.spec = spec = replace(spec, strategy=self.chosen.strategy, batch_rows=self.chosen.batch_rows,
                                           workers=self.chosen.workers)
                cls = get_strategy(spec.strategy)
                self.on_log(f"auto chose {cls.id} (batches of {spec.batch_rows:,} rows): {self.chosen.reason}")
            source = plan.source
            self.bytes_total = source.size
            if cls.script_only and source.format != "sql":
                raise ConfigError(f"{cls.id} replays INSERT scripts; the source is {source.format}")
            self._check_combination(cls)
            self._choose_protocol(cls, ctl, plan)  # refuses what cannot work there, before anything is sent
            self.on_log(f"{source.format} source {source.path} -> {plan.target.display()} with {cls.id}")
            for cleaned in janitor.sweep(ctl):
                self.on_log(cleaned)
            if source.format == "sql":
                from core import script_load

                if script_load.takes_over(spec, cls.id, plan):
                    if self.dry_run:
                        raise ConfigError("a check is not available for a script that fills several tables")
                    return script_load.ScriptLoad(self, dsn, plan).run()
            earlier = None if self.dry_run else self._earlier_run(ctl, plan)
            if self.spec.commit is CommitMode.PER_BATCH:
                if cls.chunk_commits:
                    from core.protocols import parallel_run

                    return parallel_run.run_per_batch(self, cls, dsn, ctl, plan, earlier)
                return self._run_per_batch(cls, dsn, ctl, plan, earlier)
            try:
                return self._run(cls, dsn, ctl, plan)
            except _ParseInstead as retry:
                # COPY reads one line-ending style per file and no ragged rows; the parser
                # takes mixed endings and names a malformed record by its line.
                self.on_log(f"COPY refused the file's bytes ({retry}); loading through the parser instead")
                self._no_raw = True
                self.rows_read = self.rows_loaded = self.rows_rejected = self.bytes_read = 0
                return self._run(cls, dsn, ctl, plan)

    def _earlier_run(self, ctl: psycopg.Connection[Any], plan: Plan) -> ck.Checkpoint | None:
        """An unfinished per-batch run of this same load: resume it, restart, or say so."""
        key = ck.load_key(plan.source.path, plan.target)
        earlier = ck.read(ctl, plan.target, key)
        if earlier is None or earlier.finished:
            if self.resume:
                self.on_log("nothing to resume: no unfinished run of this load; starting from the first row")
            return None
        if self.restart:
            self.on_log(f"{earlier.describe()}; starting again from the first row as asked")
            ck.forget(ctl, plan.target, key)
            return None
        if not self.resume:
            raise UnfinishedRun(
                f"{earlier.describe()}. Run again with --resume to continue it, or --restart to load every row "
                "again (rows it committed stay in the table)",
                described=earlier.describe(),
                rows_done=earlier.rows_done,
            )
        if self.spec.commit is not CommitMode.PER_BATCH:
            raise ConfigError("--resume continues per-batch loads; choose --commit per-batch")
        if ck.fingerprint(plan.source.path) != earlier.fingerprint:
            raise ConfigError(
                f"{plan.source.path} changed since the earlier run (size, time or content differ), so its "
                "committed rows can no longer be matched; use --restart to load the file from the first row"
            )
        return earlier

    def _check_combination(self, cls: type[Strategy]) -> None:
        if self.spec.commit is CommitMode.PER_BATCH and not cls.chunk_commits and (
            not cls.transactional or cls.multi_connection or cls.script_only
        ):
            usable = ", ".join(c.id for c in all_strategies() if c.chunk_commits or (
                c.transactional and not c.multi_connection and not c.script_only))
            raise ConfigError(
                f"per-batch commits need a strategy that writes each batch in one transaction on one "
                f"connection, or commits chunk by chunk on each stream ({usable}); {cls.id} does not"
            )
        if self.spec.target.mode is LoadMode.UPSERT and not self.spec.target.key:
            raise ConfigError("upsert needs --key: the columns that identify a row")

    protocol: Any = None  # core.protocols.target.Choice for a multi-connection strategy
    reason = ""  # why the load takes the protocol it takes (said before the run; --json `reason`)

    def _choose_protocol(self, cls: type[Strategy], ctl: psycopg.Connection[Any], plan: Plan) -> None:
        if not cls.multi_connection:
            return
        from core.protocols import target

        info = target.inspect(ctl, plan.target)
        choice = target.choose(
            multi_connection=cls.multi_connection, chunk_commits=cls.chunk_commits, mode=self.spec.target.mode,
            commit=self.spec.commit, on_error=self.spec.on_error, info=info, dry_run=self.dry_run,
        )
        self.protocol, self.target_info = choice, info
        if choice is not None:
            self.reason = f"{cls.id}: {choice.reason}"
            self.on_log(self.reason)

    def _run(self, cls: type[Strategy], dsn: str, ctl: psycopg.Connection[Any], plan: Plan) -> LoadResult:
        spec, ref = self.spec, plan.target
        mode = spec.target.mode
        created = succeeded = False
        stage: TableRef | None = None
        private: TableRef | None = None  # create-then-rename: the new table under its private name
        strategy: Strategy | None = None
        proto = self.protocol.protocol if self.protocol is not None else None
        try:
            self._emit(Phase.PREPARING, force=True)
            if proto is not None and proto.value == "create-then-rename":
                private = self._create_private(ctl, plan)
                targets, types = self._target_columns(ctl, replace(plan, target=private))
            else:
                created = self._ensure_target(ctl, plan, mode)
                targets, types = self._target_columns(ctl, plan)
            two_phase = proto is not None and proto.value == "two-phase"
            staged = mode is LoadMode.UPSERT or not cls.transactional or (proto is not None and proto.value == "staged")
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
                if self.target_info is not None and self.target_info.distributed:
                    from core.protocols import target as tgt

                    # Co-located with the target: the final INSERT ... SELECT runs on the workers.
                    tgt.distribute_like(ctl, stage, ref, self.target_info)
                write_ref = stage
            # Bad rows can only be isolated from parsed batches, so `skip` never passes raw bytes.
            raw = (
                cls.streams_raw_csv
                and spec.on_error is ErrorPolicy.ABORT
                and source_is_csv(plan.source)
                and mp.is_identity(plan.maps, plan.source.columns())
                and not self._no_raw
            )
            self._raw = raw
            ctx = WriteContext(
                dsn=dsn,
                table=write_ref,
                columns=targets,
                types=[types[t] for t in targets],
                batch_rows=max(1, spec.batch_rows),
                workers=max(1, spec.workers),
                cancel=self.cancel,
                log=self.on_log,
            )
            if raw:
                d = plan.source.dialect  # type: ignore[attr-defined]
                # The reader hands COPY UTF-8 whatever the file's encoding: say so, so the
                # server converts to the database's encoding (or refuses what it cannot store).
                ctx.copy_options = {"delimiter": d.delimiter, "quote": d.quote, "null": d.null, "encoding": "UTF8"}
                ctx.force_not_null = raw_text_columns(plan)
            if cls.multi_connection and spec.on_error is ErrorPolicy.SKIP:
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
            self._emit(Phase.LOADING, force=True)
            self.cancel.check()
            if raw:
                self._stream_raw(strategy, plan)
            elif spec.on_error is ErrorPolicy.SKIP:
                self._rejects = RejectWriter(spec.reject_file, plan.source, spec.reject_limit, spec.reject_limit_pct)
                if getattr(strategy, "feeds_itself", False):
                    strategy.feed(self, plan, self._rejects)  # type: ignore[attr-defined]
                else:
                    self._stream_skipping(strategy, plan)
            else:
                self._stream_batches(strategy, plan)
            self._emit(Phase.FINISHING, force=True)
            self.cancel.check()
            strategy.flush()
            if spec.on_error is ErrorPolicy.ABORT:
                self._check_arrived(strategy)
            if self.dry_run and not staged:
                strategy.rollback()  # a check: nothing stays
            else:
                strategy.commit()  # a check commits only into the scratch stage, whose move is rolled back
            if staged and stage is not None:
                self._move(ctl, stage, ref, targets, mode)
            if private is not None and not self.dry_run:
                from core.protocols import target as tgt

                tgt.rename_into_place(ctl, private, ref)
                private = None  # it is the target now
        except WriteFailed as wf:
            self._rollback(strategy)
            if self._raw and _is_format_error(wf.error):
                raise _ParseInstead(server_reason(wf.error)) from None
            raise self._explain(wf, plan, strategy) from None
        except BadValue as bv:
            self._rollback(strategy)
            row = self._batch_first + bv.row
            line, _ = plan.source.locate(row)
            raise BadRowError(RowProblem(str(plan.source.path), row, line, bv.column, bv.value, bv.reason)) from None
        except Cancelled:
            self._rollback(strategy)
            self._emit(Phase.CANCELLED, force=True)
            raise
        except TooManyRejects:
            self._rollback(strategy)
            raise
        except psycopg.OperationalError as exc:
            self._rollback(strategy)
            raise LoadFailed(
                f"the connection failed during the load: {server_reason(exc)}; nothing was loaded"
            ) from None
        except psycopg.Error as exc:
            self._rollback(strategy)
            raise LoadFailed(f"the server refused the load: {server_reason(exc)}; nothing was loaded") from None
        except BaseException:
            self._rollback(strategy)
            raise
        else:
            created = created and self.dry_run  # keep the table: the load succeeded (a check drops it)
            succeeded = True
        finally:
            if self._rejects is not None and not succeeded:
                self._rejects.close()  # kept: it explains why the load stopped
            if strategy is not None:
                strategy.close()
            if stage is not None:
                _drop(ctl, stage)
            if private is not None:
                _drop(ctl, private)
            if created:
                _drop(ctl, ref)
        seconds = time.monotonic() - self._t0
        self._emit(Phase.DONE, force=True)
        reject_file = self._rejects.discard_if_empty() if self._rejects else None
        if reject_file:
            self.on_log(f"{self.rows_rejected} rejected rows written to {reject_file}")
        return LoadResult(
            spec.strategy, self.rows_read, self.rows_loaded, self.rows_rejected, seconds, self.bytes_read, reject_file,
            load_seconds=self._load_seconds(), reason=self.reason,
        )

    _rejects: RejectWriter | None = None
    target_info: Any = None  # core.protocols.target.TargetInfo, for multi-connection strategies

    def _create_private(self, ctl: psycopg.Connection[Any], plan: Plan) -> TableRef:
        """Create mode over N streams: the new table under a private name, renamed at the end."""
        ref = plan.target
        if plan.exists:
            raise ConfigError(f"table {ref.display()} already exists; choose append, truncate or upsert")
        private = TableRef(f"_sluice_stage_new_{uuid.uuid4().hex[:12]}", ref.schema)
        janitor.hold(ctl, private.name)  # a janitor drops it if this process dies
        try:
            with ctl.transaction():
                if self.spec.target.ddl:  # the edited DDL names the target: renamed before anyone sees it
                    ctl.execute(_user_ddl(self.spec.target.ddl))
                    ctl.execute(sql.SQL("ALTER TABLE {} RENAME TO {}").format(ref.ident(),
                                                                              sql.Identifier(private.name)))
                else:
                    ctl.execute(mp.create_table_sql(private, plan.maps))
        except psycopg.Error as exc:
            raise ConfigError(f"cannot create {ref.display()}: {server_reason(exc)}") from None
        return private

    # -- per-batch commits ------------------------------------------------------------

    def _run_per_batch(
        self, cls: type[Strategy], dsn: str, ctl: psycopg.Connection[Any], plan: Plan, earlier: ck.Checkpoint | None
    ) -> LoadResult:
        """Commit every batch with its checkpoint; reconnect and go on when the connection drops."""
        spec, ref = self.spec, plan.target
        mode = spec.target.mode
        if earlier is not None and mode is LoadMode.CREATE:
            mode = LoadMode.APPEND  # the earlier run made the table
        self._emit(Phase.PREPARING, force=True)
        self._ensure_target(ctl, plan, mode)  # kept even if this run fails: its batches are committed
        targets, types = self._target_columns(ctl, plan)
        key = ck.load_key(plan.source.path, ref)
        ck.ensure_book(ctl, ref)
        if earlier is None:
            ck.start(ctl, ref, key, str(plan.source.path), ck.fingerprint(plan.source.path), cls.id)
        else:
            self.on_log(f"resuming after {earlier.rows_done:,} committed source rows")
        state = earlier or ck.read(ctl, ref, key)
        assert state is not None
        self.resumed_from = earlier.rows_done if earlier else 0
        # Upsert goes through a temporary table that each commit empties.
        stage = TableRef(f"_sluice_stage_{uuid.uuid4().hex[:12]}") if mode is LoadMode.UPSERT else None
        ctx = WriteContext(
            dsn=dsn, table=stage or ref, columns=targets, types=[types[t] for t in targets],
            batch_rows=max(1, spec.batch_rows), workers=1, cancel=self.cancel, log=self.on_log,
        )
        if spec.on_error is ErrorPolicy.SKIP:
            self._rejects = RejectWriter(
                spec.reject_file, plan.source, spec.reject_limit, spec.reject_limit_pct,
                resume_at=(state.reject_bytes, state.rows_rejected) if earlier else None,
            )
            self._rejects.outcome = "the batch was rolled back; earlier batches stay committed (--resume continues)"
        attempt = 0
        try:
            while True:
                self._restore(state)
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
                    self._emit(Phase.LOADING, force=True)
                    self._commit_batches(strategy, plan, key, mode, stage, targets)
                    self._emit(Phase.FINISHING, force=True)
                    self._truncate_once(strategy.conn, ref, mode)  # an empty source still empties the table
                    ck.finish(strategy.conn, ref, key)
                    strategy.conn.commit()
                    break
                except (WriteFailed, psycopg.OperationalError, ConnectError) as exc:
                    error = exc.error if isinstance(exc, WriteFailed) else exc
                    if self.cancel.cancelled or not _connection_lost(error):
                        strategy.rollback()
                        raise self._per_batch_error(exc, plan, strategy) from None
                    if self.rows_read > state.rows_done:
                        attempt = 0  # batches went through since the last failure
                    state, attempt = self._reconnect(dsn, ref, key, error, attempt)
                except (BadValue, psycopg.Error, ck.CheckpointMoved) as exc:
                    strategy.rollback()
                    raise self._per_batch_error(exc, plan, strategy) from None
                except BaseException:
                    strategy.rollback()
                    raise
                finally:
                    strategy.close()
        except Cancelled:
            self._emit(Phase.CANCELLED, force=True)
            raise
        finally:
            if self._rejects is not None:
                self._rejects.close()
        self._emit(Phase.DONE, force=True)
        reject_file = self._rejects.discard_if_empty() if self._rejects else None
        return LoadResult(
            spec.strategy, self.rows_read, self.rows_loaded, self.rows_rejected, time.monotonic() - self._t0,
            self.bytes_read, reject_file, self.resumed_from, load_seconds=self._load_seconds(),
        )

    resumed_from = 0

    def _restore(self, state: ck.Checkpoint) -> None:
        """Counters and the reject file back to what the last commit recorded."""
        self.rows_read, self.rows_loaded, self.rows_rejected = state.rows_done, state.rows_loaded, state.rows_rejected
        self.bytes_read = state.bytes_done
        if self._rejects is not None:
            self._rejects.rewind(state.reject_bytes, state.rows_rejected)

    def _commit_batches(
        self, strategy: Strategy, plan: Plan, key: str, mode: LoadMode, stage: TableRef | None, targets: list[str]
    ) -> None:
        conn = strategy.conn
        assert conn is not None
        ref, rejects = plan.target, self._rejects
        batches = plan.source.batches_with_bad if rejects is not None else plan.source.batches
        for batch in batches(self.spec.batch_rows, skip_rows=self.rows_read):
            self.cancel.check()
            plan.source.check_unchanged()
            mapped = mp.apply(batch.frame, plan.maps)
            self._batch_first = self._stream_base = batch.first_row
            self._last_frame = mapped
            if hasattr(strategy, "lines"):
                strategy.lines = batch.lines
            self._truncate_once(conn, ref, mode)
            done = max([batch.first_row + batch.frame.height] + [b.row + 1 for b in batch.bad])
            loaded, refused = 0, len(batch.bad)
            if rejects is not None:
                for record in batch.bad:  # malformed records: they come before the batch's rows
                    rejects.add_bad(record)
                if batch.frame.height:
                    conn.execute("SELECT 1")  # open the transaction, so the batch gets a savepoint
                    loaded, bad = self._write_or_isolate(strategy, conn, mapped, batch.first_row)
                    for r in bad:
                        rejects.add(r, strategy.ctx.dsn, strategy.ctx.columns, strategy.ctx.types,
                                    mapped.row(r.row - batch.first_row))
                    refused += len(bad)
                rejects.check_limit(done)
            else:
                loaded = strategy.write(mapped)
                strategy.flush()
            if stage is not None:
                conn.execute(self._move_sql(stage, ref, targets, LoadMode.UPSERT))
            ck.advance(
                conn, ref, key, rows_done=done, rows_loaded=self.rows_loaded + loaded,
                rows_rejected=self.rows_rejected + refused, bytes_done=batch.bytes_read,
                reject_bytes=rejects.position() if rejects is not None else 0, expect_rows_done=self.rows_read,
            )
            conn.commit()
            self.rows_read, self.bytes_read = done, batch.bytes_read
            self.rows_loaded += loaded
            self.rows_rejected += refused
            self._emit(Phase.LOADING)
        plan.source.check_unchanged()

    def _truncate_once(self, conn: psycopg.Connection[Any], ref: TableRef, mode: LoadMode) -> None:
        """Truncate in the transaction of the run's first commit, whatever it holds.

        Until a commit goes through, the checkpoint says no source row is done (rows_read is
        restored from it), so a retry or a --resume of a run that never committed truncates,
        and one that did never truncates again. Keyed on rows done, not on the first batch's
        row: that batch may start after a rejected record, and an empty source has none.
        """
        if mode is LoadMode.TRUNCATE and self.rows_read == 0:
            conn.execute(sql.SQL("TRUNCATE {}").format(ref.ident()))

    def _reconnect(
        self, dsn: str, ref: TableRef, key: str, error: BaseException, attempt: int
    ) -> tuple[ck.Checkpoint, int]:
        """Wait with back-off, then read what really committed (the checkpoint is the truth)."""
        while True:
            attempt += 1
            reason = server_reason(error) if isinstance(error, psycopg.Error) else str(error)
            if attempt > len(RETRY_BACKOFF_S):
                raise ResumableStop(
                    f"the connection failed {len(RETRY_BACKOFF_S)} times in a row ({reason}); "
                    f"{self.rows_loaded:,} rows are committed. Run again with --resume to continue "
                    f"from source row {self.rows_read + 1:,}"
                )
            delay = RETRY_BACKOFF_S[attempt - 1]
            message = f"connection lost ({reason}); retry {attempt}/{len(RETRY_BACKOFF_S)} in {delay:g} s"
            self.on_log(message)
            self._emit(Phase.LOADING, force=True, message=message)
            if self.cancel.wait(delay):
                raise Cancelled()
            try:
                with connect(dsn, autocommit=True) as c:
                    state = ck.read(c, ref, key)
            except (ConnectError, psycopg.OperationalError) as exc:
                error = exc
                continue
            if state is None or state.finished:
                raise LoadFailed("the load's checkpoint vanished or was finished by another process; stopped")
            self.on_log(f"reconnected; continuing after {state.rows_done:,} committed source rows")
            return state, attempt

    def _per_batch_error(self, exc: BaseException, plan: Plan, strategy: Strategy) -> BaseException:
        """The failure in words, saying what stayed committed."""
        kept = f"the {self.rows_loaded:,} rows committed before it stay in the table"
        if isinstance(exc, WriteFailed):
            err = self._explain(exc, plan, strategy)
            if isinstance(err, BadRowError):
                return BadRowError(err.problem, committed=self.rows_loaded)
            if isinstance(err, Cancelled):
                return err
            reason = server_reason(exc.error)
        elif isinstance(exc, BadValue):
            row = self._batch_first + exc.row
            line, _ = plan.source.locate(row)
            problem = RowProblem(str(plan.source.path), row, line, exc.column, exc.value, exc.reason)
            return BadRowError(problem, committed=self.rows_loaded)
        elif isinstance(exc, ck.CheckpointMoved):
            return LoadFailed("another process is loading the same file into the same table; this run stopped")
        elif isinstance(exc, psycopg.errors.QueryCanceled) and self.cancel.cancelled:
            return Cancelled()
        elif isinstance(exc, psycopg.Error):
            reason = server_reason(exc)
        else:
            reason = str(exc)
        return LoadFailed(f"the load stopped: {reason}; the batch was rolled back and {kept}")

    def _ensure_target(self, ctl: psycopg.Connection[Any], plan: Plan, mode: LoadMode) -> bool:
        """Create the table for mode create (True when made here), or check that it exists."""
        ref = plan.target
        if mode is LoadMode.CREATE:
            if plan.exists:
                raise ConfigError(f"table {ref.display()} already exists; choose append, truncate or upsert")
            ddl: sql.SQL | sql.Composed = (
                _user_ddl(self.spec.target.ddl) if self.spec.target.ddl else mp.create_table_sql(ref, plan.maps)
            )
            try:
                ctl.execute(ddl)
            except psycopg.Error as exc:
                raise ConfigError(f"cannot create {ref.display()}: {server_reason(exc)}") from None
            return True
        if not plan.exists:
            raise ConfigError(f"table {ref.display()} does not exist; use mode create to make it")
        return False

    def _target_columns(self, ctl: psycopg.Connection[Any], plan: Plan) -> tuple[list[str], dict[str, str]]:
        """The mapped target columns, and every column's type as the table has it."""
        ref = plan.target
        types = {c.name: c.type for c in table_columns(ctl, ref) or []}
        targets = [m.target for m in mp.included(plan.maps)]
        missing = [t for t in targets if t not in types]
        if missing:
            raise ConfigError(f"table {ref.display()} has no column {', '.join(map(repr, missing))}")
        return targets, types

    def _stream_skipping(self, strategy: Strategy, plan: Plan) -> None:
        """Each batch in its own savepoint; a failed batch is bisected row by row."""
        ctx = strategy.ctx
        conn = strategy.conn
        rejects = self._rejects
        assert rejects is not None
        if conn is not None and strategy.transactional:
            conn.execute("SELECT 1")  # open the transaction, so transaction() below makes savepoints
        for batch in plan.source.batches_with_bad(self.spec.batch_rows):
            self.cancel.check()
            plan.source.check_unchanged()
            # Malformed records (ragged, undecodable, ...) come before the batch's rows.
            for record in batch.bad:
                rejects.add_bad(record)
            self.rows_read += len(batch.bad)
            self.rows_rejected += len(batch.bad)
            if batch.frame.height:
                mapped = mp.apply(batch.frame, plan.maps)
                self._batch_first, self._last_frame = batch.first_row, mapped
                if hasattr(strategy, "lines"):
                    strategy.lines = batch.lines
                self.rows_read += batch.frame.height
                if conn is not None and strategy.transactional:
                    loaded, bad = self._write_or_isolate(strategy, conn, mapped, batch.first_row)
                else:
                    loaded, bad = self._write_row_commits(strategy, mapped, batch.first_row)
                self.rows_loaded += loaded
                for r in bad:
                    rejects.add(r, ctx.dsn, ctx.columns, ctx.types, mapped.row(r.row - batch.first_row))
                self.rows_rejected += len(bad)
            rejects.check_limit(self.rows_read)
            self.bytes_read = batch.bytes_read
            self._emit(Phase.LOADING)
        plan.source.check_unchanged()

    def _write_or_isolate(
        self, strategy: Strategy, conn: psycopg.Connection[Any], mapped: pl.DataFrame, first_row: int
    ) -> tuple[int, list[Reject]]:
        try:
            with conn.transaction():
                try:
                    n = strategy.write(mapped)
                    strategy.flush()
                except (WriteFailed, BadValue):
                    # End an open COPY before the savepoint is rolled back, or the server waits for it.
                    abort = getattr(strategy, "abort", None)
                    if abort is not None:
                        abort()
                    raise
            return n, []
        except (WriteFailed, BadValue):
            pass
        return isolate(conn, strategy.ctx.table, strategy.ctx.columns, mapped.rows(), first_row)

    def _write_row_commits(self, strategy: Strategy, mapped: pl.DataFrame, first_row: int) -> tuple[int, list[Reject]]:
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

    _raw = False  # the file's own bytes are going to COPY unparsed
    _no_raw = False  # COPY refused them once: parse instead

    def _replay(self, plan: Plan) -> Iterator[tuple[int, list[tuple[Any, ...]]]]:
        try:
            for batch in plan.source.batches(max(1, self.spec.batch_rows)):
                self.cancel.check()
                yield batch.first_row, mp.apply(batch.frame, plan.maps).rows()
        except SourceError:
            return

    _batch_first = 0
    _stream_base = 0  # source row where the current COPY statement began
    _last_frame: pl.DataFrame | None = None

    def _stream_batches(self, strategy: Strategy, plan: Plan) -> None:
        maps = plan.maps
        prepare = strategy.prepare

        def read() -> Iterator[tuple[Batch, pl.DataFrame, object]]:
            # On the reader thread: parse, map and encode the next batches while this
            # thread sends the current one (polars and file reads release the GIL).
            for batch in plan.source.batches(self.spec.batch_rows):
                mapped = mp.apply(batch.frame, maps)
                yield batch, mapped, prepare(mapped)

        with Prefetch(read()) as batches:
            for batch, mapped, prepared in batches:
                self.cancel.check()
                plan.source.check_unchanged()  # a stat per batch: cheap next to the batch itself
                self._batch_first, self._last_frame = batch.first_row, mapped
                if hasattr(strategy, "lines"):
                    strategy.lines = batch.lines
                self.rows_read += batch.frame.height
                self.rows_loaded += strategy.write_prepared(prepared, mapped)
                self.bytes_read = batch.bytes_read
                self._emit(Phase.LOADING)
        plan.source.check_unchanged()

    def _stream_raw(self, strategy: Strategy, plan: Plan) -> None:
        with Prefetch(plan.source.raw_chunks()) as chunks:  # type: ignore[attr-defined]
            self._send_raw(strategy, plan, chunks)
        plan.source.check_unchanged()

    def _send_raw(self, strategy: Strategy, plan: Plan, chunks: Iterable[RawChunk]) -> None:
        write_raw = strategy.write_raw  # type: ignore[attr-defined]
        for chunk in chunks:
            self.cancel.check()
            plan.source.check_unchanged()
            if chunk.odd:
                # COPY would let that quote open a quoted value; the parser keeps it as written.
                raise _ParseInstead("a quote inside an unquoted field, which COPY would read differently")
            write_raw(chunk.data)
            self.rows_read += count_records(chunk.data, plan.source.dialect.quote.encode())  # type: ignore[attr-defined]
            self.rows_loaded = self.rows_read
            self.bytes_read = chunk.bytes_read
            self._emit(Phase.LOADING)

    def _check_arrived(self, strategy: Strategy) -> None:
        """Before committing: the server took every row sent, or the load is rolled back.

        A stream that lost a chunk (a worker gone, a COPY ended early) would otherwise commit
        fewer rows than the source holds, and say it loaded them all.
        """
        took = getattr(strategy, "rows_written", None)
        if isinstance(took, int) and took != self.rows_loaded:
            raise LoadFailed(
                f"{self.rows_loaded:,} rows were sent but the server took {took:,}; rolled back, nothing was loaded"
            )

    def _move(
        self, ctl: psycopg.Connection[Any], stage: TableRef, ref: TableRef, cols: list[str], mode: LoadMode
    ) -> None:
        with ctl.transaction():
            if mode is LoadMode.TRUNCATE:
                ctl.execute(sql.SQL("TRUNCATE {}").format(ref.ident()))
            ctl.execute(self._move_sql(stage, ref, cols, mode))
            if self.dry_run:
                raise psycopg.Rollback()

    def _move_sql(self, stage: TableRef, ref: TableRef, cols: list[str], mode: LoadMode) -> sql.Composed:
        """INSERT ... SELECT from the staging table; ON CONFLICT on the key for upsert."""
        collist = sql.SQL(", ").join(sql.Identifier(c) for c in cols)
        move = sql.SQL("INSERT INTO {} ({}) SELECT {} FROM {}").format(ref.ident(), collist, collist, stage.ident())
        if mode is not LoadMode.UPSERT:
            return move
        keys = self.spec.target.key
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

    def _rollback(self, strategy: Strategy | None) -> None:
        if strategy is not None:
            strategy.rollback()

    def _explain(self, wf: WriteFailed, plan: Plan, strategy: Strategy | None) -> SluiceError:
        ctx = strategy.ctx if strategy is not None else None
        reason = server_reason(wf.error)
        if isinstance(wf.error, psycopg.OperationalError) and not isinstance(wf.error, psycopg.errors.QueryCanceled):
            return LoadFailed(f"the connection failed during the load: {reason}; nothing was loaded")
        if isinstance(wf.error, psycopg.errors.QueryCanceled) and self.cancel.cancelled:
            self._emit(Phase.CANCELLED, force=True)
            return Cancelled()
        source = plan.source
        row: int | None = None
        streamed = strategy is not None and strategy.stream_rows
        if wf.row is not None and not streamed:
            row = self._batch_first + wf.row  # row strategies: the row in the batch
        elif wf.row is not None and self._raw and strategy is not None and not strategy.multi_connection:
            # The file's own bytes went to one COPY, whose "line N" counts lines of the data.
            row = source.row_at_data_line(wf.row + 1) if hasattr(source, "row_at_data_line") else None
        elif wf.row is not None and strategy is not None and strategy.row_per_line:
            row = self._stream_base + wf.row  # one line (or tuple) per row in these streams
        # Otherwise (a CSV stream, where quoted newlines shift COPY's count, or several
        # streams at once) the row is found by replaying the source below.
        if row is None and ctx is not None:
            if streamed and self.spec.commit is CommitMode.SINGLE:
                # One COPY spanned every batch: replay the source up to the refused row.
                row = first_bad_row_in(ctx.dsn, ctx.table, ctx.columns, self._replay(plan))
            elif self._last_frame is not None:
                idx = first_bad_row(ctx.dsn, ctx.table, ctx.columns, self._last_frame.rows())
                row = None if idx is None else self._batch_first + idx
        if row is None:
            return LoadFailed(f"{source.path}: {reason}; nothing was loaded")
        line, _raw = source.locate(row)
        column, value = None, None
        if ctx is not None:
            values = _row_values(source, row, plan.maps)
            if values is not None:
                column, value = bad_column(ctx.dsn, ctx.columns, ctx.types, values, wf.error)
        return BadRowError(RowProblem(str(source.path), row, line, column, value, reason))


class _ParseInstead(Exception):
    """The raw pass-through was refused for the file's shape; the load runs again parsed."""


def _is_format_error(error: psycopg.Error) -> bool:
    """COPY refused the shape of the data (line endings, field count), not a value."""
    return isinstance(error, psycopg.errors.BadCopyFileFormat)


def _connection_lost(error: BaseException) -> bool:
    """A dropped or refused connection (worth a retry), as opposed to a refused statement."""
    if isinstance(error, ConnectError):
        return True
    if isinstance(error, psycopg.errors.QueryCanceled):
        return False
    return isinstance(error, psycopg.OperationalError)


def count_records(data: bytes, quote: bytes) -> int:
    """CSV records in `data` (whole records): newlines outside quoted fields, in linear time.

    Only quotes and newlines matter; a run of quotes counts by its parity (a doubled quote
    changes nothing), so what is left alternates outside/inside a quoted field.
    """
    if not quote or quote not in data:
        return data.count(b"\n")
    if len(quote) == 1:
        keep = b"\n" + quote
        data = data.translate(None, bytes(b for b in range(256) if b not in keep))
        data = data.replace(quote + quote, b"")
    return sum(part.count(b"\n") for part in data.split(quote)[::2])


def raw_text_columns(plan: Plan) -> list[str]:
    """Target columns where the file's null marker is a value: COPY must not read it as NULL."""
    nulls = getattr(plan.source, "null_columns", None)
    if nulls is None:
        return []
    keep = set(nulls)
    return [m.target for m, s in zip(mp.included(plan.maps), plan.source.columns()) if s not in keep]


def source_is_csv(source: Source) -> bool:
    return source.format in ("csv", "tsv") and hasattr(source, "raw_chunks")


def _row_values(source: Source, row: int, maps: list[ColumnMap]) -> list[Any] | None:
    try:
        for batch in source.batches(1, skip_rows=row):
            return list(mp.apply(batch.frame, maps).row(0))
    except SluiceError:
        return None
    return None


def _user_ddl(text: str) -> sql.SQL:
    """The edited CREATE TABLE runs as written, so it must be one CREATE TABLE statement."""
    import re

    body = text.strip().rstrip(";").strip()
    if not re.match(r"(?is)^CREATE\s+(UNLOGGED\s+)?TABLE\b", body) or ";" in _strip_literals(body):
        raise ConfigError("the new-table DDL must be a single CREATE TABLE statement")
    return sql.SQL(body)


def _strip_literals(text: str) -> str:
    import re

    return re.sub(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"", "", text)


def _drop(ctl: psycopg.Connection[Any], ref: TableRef) -> None:
    try:
        ctl.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(ref.ident()))
    except psycopg.Error:
        pass


def run_load(spec: LoadSpec, **kwargs: Any) -> LoadResult:
    return LoadJob(spec, **kwargs).run()


def describe_dsn(dsn: str | None) -> str:
    return strip_password(dsn) if dsn else "embedded PostgreSQL"
