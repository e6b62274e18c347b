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
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import polars as pl
import psycopg
from psycopg import sql

from core import mapping as mp
from core.cancel import CancelToken
from core.db import TableRef, connect, resolve_dsn, strip_password, supports_two_phase, table_columns
from core.diagnose import bad_column, first_bad_row, server_reason
from core.errors import BadRowError, Cancelled, ConfigError, LoadFailed, RowProblem, SluiceError, TooManyRejects
from core.events import Phase, Progress
from core.rejects import Reject, RejectWriter, isolate
from core.sources.base import Source
from core.sources.factory import open_source
from core.spec import ColumnMap, CommitMode, ErrorPolicy, LoadMode, LoadSpec
from core.strategies.base import Strategy, WriteContext, WriteFailed, get_strategy
from core.strategies.binary_values import BadValue

PROGRESS_EVERY_S = 0.1


@dataclass(frozen=True)
class LoadResult:
    strategy: str
    rows_read: int
    rows_loaded: int
    rows_rejected: int
    seconds: float
    bytes: int
    reject_file: str | None = None

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
    maps = spec.columns or mp.default_mapping(source.columns(), source.sample(500), existing)
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
    ) -> None:
        self.spec = spec
        self.on_progress = on_progress or (lambda _p: None)
        self.on_log = on_log or (lambda _m: None)
        self.cancel = cancel or CancelToken()
        self._t0 = 0.0
        self._last_emit = 0.0
        self.rows_read = self.rows_loaded = self.rows_rejected = 0
        self.bytes_read = 0
        self.bytes_total = 0

    # -- progress -------------------------------------------------------------------

    def _emit(self, phase: Phase, *, force: bool = False, message: str = "") -> None:
        now = time.monotonic()
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

    def run(self) -> LoadResult:
        self._t0 = time.monotonic()
        spec = self.spec
        cls = get_strategy(spec.strategy)
        self._emit(Phase.CONNECTING, force=True)
        dsn = resolve_dsn(spec.dsn)
        with connect(dsn, autocommit=True) as ctl:
            plan = plan_load(spec, ctl)
            source = plan.source
            self.bytes_total = source.size
            if cls.script_only and source.format != "sql":
                raise ConfigError(f"{cls.id} replays INSERT scripts; the source is {source.format}")
            self._check_combination(cls)
            self.on_log(f"{source.format} source {source.path} -> {plan.target.display()} with {cls.id}")
            return self._run(cls, dsn, ctl, plan)

    def _check_combination(self, cls: type[Strategy]) -> None:
        if self.spec.commit is CommitMode.PER_BATCH:
            raise ConfigError("per-batch commits (resumable loads) are not available yet; use --commit single")
        if self.spec.on_error is ErrorPolicy.SKIP and cls.id == "parallel-copy":
            raise ConfigError(f"the skip policy is not available with {cls.id} yet; use copy-csv or another strategy")
        if self.spec.target.mode is LoadMode.UPSERT and not self.spec.target.key:
            raise ConfigError("upsert needs --key: the columns that identify a row")

    def _run(self, cls: type[Strategy], dsn: str, ctl: psycopg.Connection[Any], plan: Plan) -> LoadResult:
        spec, ref, maps = self.spec, plan.target, plan.maps
        mode = spec.target.mode
        created = succeeded = False
        stage: TableRef | None = None
        strategy: Strategy | None = None
        try:
            self._emit(Phase.PREPARING, force=True)
            if mode is LoadMode.CREATE:
                if plan.exists:
                    raise ConfigError(f"table {ref.display()} already exists; choose append, truncate or upsert")
                ddl: sql.SQL | sql.Composed = (
                    _user_ddl(spec.target.ddl) if spec.target.ddl else mp.create_table_sql(ref, maps)
                )
                try:
                    ctl.execute(ddl)
                except psycopg.Error as exc:
                    raise ConfigError(f"cannot create {ref.display()}: {server_reason(exc)}") from None
                created = True
            elif not plan.exists:
                raise ConfigError(f"table {ref.display()} does not exist; use mode create to make it")
            columns = table_columns(ctl, ref) or []
            types = {c.name: c.type for c in columns}
            targets = [m.target for m in mp.included(maps)]
            missing = [t for t in targets if t not in types]
            if missing:
                raise ConfigError(f"table {ref.display()} has no column {', '.join(map(repr, missing))}")
            two_phase = (
                cls.id == "parallel-copy" and mode in (LoadMode.APPEND, LoadMode.CREATE) and supports_two_phase(ctl)
            )
            staged = mode is LoadMode.UPSERT or not cls.transactional or (cls.multi_connection and not two_phase)
            if cls.id == "parallel-copy" and not two_phase:
                self.on_log(
                    "parallel-copy: the server has no two-phase commit (max_prepared_transactions = 0) or the mode "
                    "needs one final step, so workers load a staging table moved into the target in one transaction"
                )
            write_ref = ref
            if staged:
                stage = TableRef(f"_sluice_stage_{uuid.uuid4().hex[:12]}", ref.schema)
                # The target's constraints go along so bad rows fail where their row is known;
                # upsert keeps only defaults: its keys are meant to repeat the target's.
                like = sql.SQL("INCLUDING DEFAULTS" if mode is LoadMode.UPSERT else "INCLUDING ALL")
                ctl.execute(
                    sql.SQL("CREATE UNLOGGED TABLE {} (LIKE {} {})").format(stage.ident(), ref.ident(), like)
                )
                write_ref = stage
            # Bad rows can only be isolated from parsed batches, so `skip` never passes raw bytes.
            raw = (
                cls.streams_raw_csv
                and spec.on_error is ErrorPolicy.ABORT
                and source_is_csv(plan.source)
                and mp.is_identity(maps, plan.source.columns())
            )
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
                ctx.copy_options = {"delimiter": d.delimiter, "quote": d.quote, "null": d.null}
            strategy = cls(ctx)
            if cls.id == "parallel-copy":
                strategy.two_phase = two_phase  # type: ignore[attr-defined]
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
                self._stream_skipping(strategy, plan)
            else:
                self._stream_batches(strategy, plan)
            self._emit(Phase.FINISHING, force=True)
            self.cancel.check()
            strategy.commit()
            if raw:
                self.rows_loaded = self.rows_read = strategy_rows(strategy, self.rows_loaded)
            if staged and stage is not None:
                self._move(ctl, stage, ref, targets, mode)
        except WriteFailed as wf:
            self._rollback(strategy)
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
            created = False  # keep the table: the load succeeded
            succeeded = True
        finally:
            if self._rejects is not None and not succeeded:
                self._rejects.close()  # kept: it explains why the load stopped
            if strategy is not None:
                strategy.close()
            if stage is not None:
                _drop(ctl, stage)
            if created:
                _drop(ctl, ref)
        seconds = time.monotonic() - self._t0
        self._emit(Phase.DONE, force=True)
        reject_file = self._rejects.discard_if_empty() if self._rejects else None
        if reject_file:
            self.on_log(f"{self.rows_rejected} rejected rows written to {reject_file}")
        return LoadResult(
            spec.strategy, self.rows_read, self.rows_loaded, self.rows_rejected, seconds, self.bytes_read, reject_file
        )

    _rejects: RejectWriter | None = None

    def _stream_skipping(self, strategy: Strategy, plan: Plan) -> None:
        """Each batch in its own savepoint; a failed batch is bisected row by row."""
        ctx = strategy.ctx
        conn = strategy.conn
        rejects = self._rejects
        assert rejects is not None
        if conn is not None and strategy.transactional:
            conn.execute("SELECT 1")  # open the transaction, so transaction() below makes savepoints
        for batch in plan.source.batches(self.spec.batch_rows):
            self.cancel.check()
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

    _batch_first = 0
    _last_frame: pl.DataFrame | None = None

    def _stream_batches(self, strategy: Strategy, plan: Plan) -> None:
        maps = plan.maps
        for batch in plan.source.batches(self.spec.batch_rows):
            self.cancel.check()
            mapped = mp.apply(batch.frame, maps)
            self._batch_first, self._last_frame = batch.first_row, mapped
            if hasattr(strategy, "lines"):
                strategy.lines = batch.lines
            self.rows_read += batch.frame.height
            self.rows_loaded += strategy.write(mapped)
            self.bytes_read = batch.bytes_read
            self._emit(Phase.LOADING)
        plan.source.check_unchanged()

    def _stream_raw(self, strategy: Strategy, plan: Plan) -> None:
        write_raw = strategy.write_raw  # type: ignore[attr-defined]
        for chunk in plan.source.raw_chunks():  # type: ignore[attr-defined]
            self.cancel.check()
            write_raw(chunk.data)
            # Newlines count records unless quoted fields hold some; the exact count comes from COPY.
            self.rows_read += chunk.data.count(b"\n")
            self.rows_loaded = self.rows_read
            self.bytes_read = chunk.bytes_read
            self._emit(Phase.LOADING)
        plan.source.check_unchanged()

    def _move(
        self, ctl: psycopg.Connection[Any], stage: TableRef, ref: TableRef, cols: list[str], mode: LoadMode
    ) -> None:
        collist = sql.SQL(", ").join(sql.Identifier(c) for c in cols)
        move = sql.SQL("INSERT INTO {} ({}) SELECT {} FROM {}").format(ref.ident(), collist, collist, stage.ident())
        if mode is LoadMode.UPSERT:
            keys = self.spec.target.key
            rest = [c for c in cols if c not in keys]
            action = (
                sql.SQL("DO UPDATE SET {}").format(
                    sql.SQL(", ").join(sql.SQL("{0} = EXCLUDED.{0}").format(sql.Identifier(c)) for c in rest)
                )
                if rest
                else sql.SQL("DO NOTHING")
            )
            move = sql.SQL("{} ON CONFLICT ({}) {}").format(
                move, sql.SQL(", ").join(sql.Identifier(k) for k in keys), action
            )
        with ctl.transaction():
            if mode is LoadMode.TRUNCATE:
                ctl.execute(sql.SQL("TRUNCATE {}").format(ref.ident()))
            ctl.execute(move)

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
        if wf.row is not None:
            # Row strategies give the row in the batch; COPY gives it in its stream (the whole load).
            row = wf.row if strategy is not None and strategy.stream_rows else self._batch_first + wf.row
        elif ctx is not None and self._last_frame is not None:
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


def strategy_rows(strategy: Strategy, fallback: int) -> int:
    n = getattr(strategy, "rows_written", None)
    return int(n) if isinstance(n, int) and n >= 0 else fallback


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
