"""A load job: source -> mapping -> strategy -> PostgreSQL, with progress and cancel.

The job runs a plan (core.plan: the source opened, the target looked at, the mapping
settled; core.auto when the strategy is `auto`) through a commit protocol:

- core.protocols.single: `single` commit. Transactional single-connection strategies write
  straight into the target inside one transaction; strategies that commit by themselves,
  or several connections without two-phase commit, write into a staging table that one
  transaction moves into the target; a new table can be loaded under a private name and
  renamed into place;
- core.protocols.per_batch: `per-batch` on one connection, each batch with its checkpoint;
- core.protocols.parallel_run: chunk commits over several streams (core.protocols.target
  says which protocol a server allows).

The stages (core.stages: read, parse, map and encode ahead of sending; isolate bad rows)
and the explanation of a refused row (core.explain) are functions of the job too. Each is
bound below as a method, so the parts share the job's counters and progress.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import polars as pl
import psycopg
from psycopg import sql

from core import checkpoint as ck
from core import empty_load, explain, janitor, many_files, stages
from core import mapping as mp
from core.auto import AUTO, Choice, choose
from core.batch_size import source_row_width
from core.cancel import CancelToken
from core.db import connect, resolve_dsn, strip_password, table_columns
from core.diagnose import server_reason
from core.errors import (
    ConfigError,
    UnfinishedRun,
)
from core.events import Phase, Progress
from core.plan import Plan, plan_load
from core.protocols import per_batch, single
from core.protocols.common import (  # noqa: F401 - re-exported: callers import them from here
    _connection_lost,
    _drop,
    _is_format_error,
    _ParseInstead,
    _row_values,
    _strip_literals,
    _user_ddl,
    count_records,
    raw_text_columns,
    source_is_csv,
)
from core.rejects import RejectWriter
from core.result import LoadResult as LoadResult  # re-exported: callers import it from here
from core.source_notes import Said, say_source
from core.sources.empty import EmptySource
from core.spec import CommitMode, ErrorPolicy, LoadMode, LoadSpec
from core.strategies.base import Strategy, all_strategies, get_strategy


@dataclass(frozen=True)
class Foresight:
    """What a run of a spec would do (LoadJob.foresee), for the window to show before it starts."""

    strategy: str
    batch_rows: int
    workers: int
    protocol: str  # single, staged, two-phase, create-then-rename, per-batch; none: nothing to send
    reason: str
    auto: bool  # the strategy is auto's pick

    def describe(self) -> str:
        if self.protocol == "none":
            return self.reason  # nothing to send (an empty file): only what will be done instead
        picked = "auto will pick" if self.auto else "will run"
        workers = f", {self.workers} workers" if self.workers > 1 else ""
        head = f"{picked} {self.strategy} (batches of {self.batch_rows:,} rows{workers}; commit: {self.protocol})"
        return f"{head}: {self.reason}" if self.reason else head


PROGRESS_EVERY_S = 0.1
RETRY_BACKOFF_S = (0.5, 1.0, 2.0, 4.0, 8.0)  # per-batch: waits before each reconnect


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
                self.loaded_before,
                self.bytes_before,
            )
        )

    # -- the run ----------------------------------------------------------------------

    chosen: Choice | None = None  # what `auto` picked, and why

    not_loaded: tuple[str, ...] = ()  # the file's columns no target column takes
    said: Said | None = None  # the NULL marker and the value formats, as the log's first lines said them

    def _say_source(self, plan: Plan) -> None:
        self.said = say_source(plan, self.on_log)

    def run(self) -> LoadResult:
        result = many_files.report(self, self._run_job())  # many files: what each one gave
        if self.not_loaded:
            result = replace(result, columns_not_loaded=self.not_loaded)
        if self.said is not None:
            result = replace(result, null_marker=self.said.null_marker, value_formats=self.said.formats)
        reasons = [r for r in (self.chosen.reason if self.chosen else "", result.reason) if r]
        if self.chosen is not None:
            result = replace(result, chosen=self.chosen.to_json(), reason="; ".join(reasons))
        return result

    def foresee(self) -> Foresight:
        """What a run would do, said before it starts: the strategy (auto's pick), batch size,
        workers and transaction protocol, and why. Reads the source and the catalog; writes nothing."""
        with connect(resolve_dsn(self.spec.dsn), autocommit=True) as ctl:
            try:
                _plan, cls = self._settle(ctl)
            except empty_load.EmptyFile as empty:
                return Foresight(self.spec.strategy, self.spec.rows_per_batch, 1, "none",
                                 empty_load.note(self, empty.plan), auto=False)
        if self.protocol is not None:
            protocol = str(self.protocol.protocol.value)
        elif self.spec.commit is CommitMode.PER_BATCH:
            protocol = "per-batch"
        else:
            protocol = "staged" if single.staged_load(cls, self.spec.target.mode, None) else "single"
        reasons = [r for r in (self.chosen.reason if self.chosen else "", self.reason) if r]
        return Foresight(cls.id, self.spec.rows_per_batch, self.spec.workers if cls.takes_workers else 1, protocol,
                         "; ".join(reasons), auto=self.chosen is not None)

    def _settle(self, ctl: psycopg.Connection[Any]) -> tuple[Plan, type[Strategy]]:
        """The plan, the strategy (auto's pick) and the protocol; refuses what cannot work here."""
        spec = self.spec
        cls = None if spec.strategy == AUTO else get_strategy(spec.strategy)
        plan = plan_load(spec, ctl)
        if isinstance(plan.source, EmptySource):
            raise empty_load.EmptyFile(plan)
        many_files.settled(self, plan)  # many files: said before the run; their counts kept for the result
        spec = self.spec
        if cls is None:
            self.chosen = choose(spec, plan, ctl)
            self.spec = spec = replace(spec, strategy=self.chosen.strategy, batch_rows=self.chosen.batch_rows,
                                       workers=self.chosen.workers)
            cls = get_strategy(spec.strategy)
            self.on_log(f"auto chose {cls.id} (batches of {spec.batch_rows:,} rows): {self.chosen.reason}")
        if spec.batch_rows is None:
            self.spec = spec = replace(spec, batch_rows=self._default_batch(cls, plan))
        if cls.script_only and plan.source.format != "sql":
            raise ConfigError(f"{cls.id} replays INSERT scripts; the source is {plan.source.format}")
        self._check_combination(cls)
        self._check_settings(plan)
        self._say_unloaded(plan)
        self._choose_protocol(cls, ctl, plan)  # refuses what cannot work there, before anything is sent
        return plan, cls

    @staticmethod
    def _default_batch(cls: type[Strategy], plan: Plan) -> int:
        """The strategy's own batch size for this file's rows, when the user named none."""
        source = plan.source
        return cls.default_batch_rows(source_row_width(source.path, source.size, source.format))

    def _run_job(self) -> LoadResult:
        self._t0 = time.monotonic()
        self._emit(Phase.CONNECTING, force=True)
        dsn = resolve_dsn(self.spec.dsn)
        with connect(dsn, autocommit=True) as ctl:
            try:
                plan, cls = self._settle(ctl)
            except empty_load.EmptyFile as empty:
                return empty_load.load_nothing(self, ctl, empty.plan)
            spec = self.spec
            source = plan.source
            self.bytes_total = source.size
            size = f" (batches of {spec.rows_per_batch:,} rows)" if cls.batch_sized and not self.chosen else ""
            self.on_log(f"{source.format} source {source.path} -> {plan.target.display()} with {cls.id}{size}")
            self._say_source(plan)
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

    def _say_unloaded(self, plan: Plan) -> None:
        """The file's columns no target column takes: said, never dropped in silence."""
        used = {m.source for m in mp.included(plan.maps) if m.source is not None}
        left = [c for c in plan.source.columns() if c not in used]
        if left and plan.source.format == "sql" and plan.exists and not self.spec.columns \
                and not getattr(plan.source, "several", False):
            generated = {m.source for m in plan.maps if not m.include and m.target in plan.generated}
            left = [c for c in left if c not in generated]  # pg_dump's DEFAULT there: the server computes it
            if left:
                placeholders = getattr(plan.source, "has_column_list", True) is False
                raise ConfigError(
                    f"the script's rows have {len(plan.source.columns())} values and {plan.target.display()} takes "
                    f"{len(plan.source.columns()) - len(left)} (psql refuses such rows too)" if placeholders else
                    f"the script's rows have column{'s' if len(left) > 1 else ''} {', '.join(left)}, which "
                    f"{plan.target.display()} does not have (psql refuses such rows too): add "
                    f"{'them' if len(left) > 1 else 'it'} to the table, or leave {'them' if len(left) > 1 else 'it'} "
                    "out of the mapping")
            return
        if left and plan.source.format != "sql":
            self.not_loaded = tuple(left)
            many = len(left) > 1
            self.on_log(f"not loaded: {len(left)} column{'s' if many else ''} of the file ({', '.join(left)}) "
                        f"{'match' if many else 'matches'} no column of {plan.target.display()} (or left out)")

    def _check_settings(self, plan: Plan) -> None:
        """Settings that would fail the load after rows were sent: refused before anything is."""
        spec = self.spec
        if spec.rows_per_batch < 1 or spec.workers < 1:
            raise ConfigError(f"batch rows and workers must be at least 1 (got {spec.batch_rows} and {spec.workers})")
        if spec.on_error is ErrorPolicy.SKIP:
            path = Path(spec.reject_file or f"{plan.source.path}.rejects.csv")
            folder = path.parent if str(path.parent) else Path(".")
            if not folder.is_dir() or not os.access(folder, os.W_OK):
                raise ConfigError(f"cannot write the reject file {path}: its folder {folder} "
                                  f"{'is not writable' if folder.is_dir() else 'does not exist'}")
            if spec.reject_limit is not None and spec.reject_limit < 0:
                raise ConfigError(f"the reject limit must be 0 or more (got {spec.reject_limit})")
        if spec.target.mode is LoadMode.UPSERT and plan.exists:
            columns = {m.target for m in mp.included(plan.maps)}
            missing = [k for k in spec.target.key if k not in columns]
            if missing:
                raise ConfigError(f"upsert key {', '.join(missing)}: no such column is loaded into "
                                  f"{plan.target.display()} (loaded: {', '.join(sorted(columns))})")

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

        info = getattr(self.chosen, "target", None) or target.inspect(ctl, plan.target)  # auto's, read once
        choice = target.choose(
            multi_connection=cls.multi_connection, chunk_commits=cls.chunk_commits, mode=self.spec.target.mode,
            commit=self.spec.commit, on_error=self.spec.on_error, info=info, dry_run=self.dry_run,
            branches=max(1, self.spec.workers),
        )
        self.protocol, self.target_info = choice, info
        if choice is not None:
            self.reason = f"{cls.id}: {choice.reason}"
            self.on_log(self.reason)

    _rejects: RejectWriter | None = None
    target_info: Any = None  # core.protocols.target.TargetInfo, for multi-connection strategies

    # -- per-batch commits ------------------------------------------------------------

    resumed_from = 0
    loaded_before = 0  # rows and bytes an earlier per-batch run had committed: not this run's work
    bytes_before = 0

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
        # An existing table's columns were read once, by the plan; a new one is read as made.
        types = dict(plan.target_types) if plan.exists else {c.name: c.type for c in table_columns(ctl, ref) or []}
        targets = [m.target for m in mp.included(plan.maps)]
        missing = [t for t in targets if t not in types]
        if missing:
            raise ConfigError(f"table {ref.display()} has no column {', '.join(map(repr, missing))}")
        return targets, types

    _raw = False  # the file's own bytes are going to COPY unparsed
    _no_raw = False  # COPY refused them once: parse instead

    _batch_first = 0
    _stream_base = 0  # source row where the current COPY statement began
    _last_frame: pl.DataFrame | None = None

    def _rollback(self, strategy: Strategy | None) -> None:
        if strategy is not None:
            strategy.rollback()

    # -- the parts, each in its own module (a function taking the job, bound here as a method) --

    # commit protocols
    _run = single.run  # single: one transaction, a staged move, two-phase, or create-then-rename
    _create_private = single.create_private
    _move = single.move
    _move_sql = single.move_sql
    _run_per_batch = per_batch.run_per_batch  # per-batch on one connection, with resume
    _restore = per_batch.restore
    _commit_batches = per_batch.commit_batches
    _truncate_once = per_batch.truncate_once
    _reconnect = per_batch.reconnect
    _per_batch_error = per_batch.per_batch_error
    # stages: read (parse, map and encode ahead), send, isolate bad rows
    _stream_batches = stages.stream_batches
    _read_ahead = stages.read_ahead
    _stream_raw = stages.stream_raw
    _send_raw = stages.send_raw
    _stream_skipping = stages.stream_skipping
    _write_or_isolate = stages.write_or_isolate
    _write_row_commits = stages.write_row_commits
    _replay = stages.replay
    _check_arrived = stages.check_arrived
    # a refused write turned into row, line, column, value and reason
    _explain = explain.explain



def run_load(spec: LoadSpec, **kwargs: Any) -> LoadResult:
    return LoadJob(spec, **kwargs).run()


def describe_dsn(dsn: str | None) -> str:
    return strip_password(dsn) if dsn else "embedded PostgreSQL"
