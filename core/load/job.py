"""A load job: source -> mapping -> strategy -> PostgreSQL, with progress and cancel.

The job settles a plan (core.plan: the source opened, the target looked at, the mapping
settled; core.auto when the strategy is `auto`), refuses what cannot work, and dispatches
to a commit protocol:

- core.load.protocols.single: `single` commit. Transactional single-connection strategies
  write straight into the target inside one transaction; strategies that commit by
  themselves, or several connections without two-phase commit, write into a staging table
  that one transaction moves into the target; a new table can be loaded under a private
  name and renamed into place;
- core.load.protocols.per_batch: `per-batch` on one connection, each batch with its checkpoint;
- core.load.protocols.parallel_run: chunk commits over several streams (core.server says
  which protocol a server allows);
- core.load.protocols.script: a data script through COPY.

The parts share the run's counters, progress, cursor and rejects through a RunContext
(core.load.context), which the job makes; none of them imports this module.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import psycopg

from core import checkpoint as ck
from core import janitor
from core import mapping as mp
from core.auto import AUTO, Choice, choose
from core.batch_size import source_row_width
from core.cancel import CancelToken
from core.db import connect, resolve_dsn, strip_password
from core.errors import (
    BadRowError,
    ConfigError,
    ParseInstead,
    UnfinishedRun,
)
from core.events import Phase, Progress
from core.load import empty as empty_load
from core.load import many as load_many
from core.load.context import RunContext
from core.load.protocols import per_batch, single
from core.pgtypes import widened_type
from core.plan import Plan, plan_load
from core.result import LoadResult as LoadResult  # re-exported: callers import it from here
from core.source_notes import Said, say_source
from core.sources.abilities import InsertScript
from core.sources.empty import EmptySource
from core.sources.many import ManySource, load_fingerprint
from core.spec import ColumnMap, CommitMode, ErrorPolicy, LoadMode, LoadSpec
from core.strategies.base import Strategy
from core.strategies.catalogue import all_strategies, get_strategy


@dataclass(frozen=True)
class Foresight:
    """What a run of a spec would do (LoadJob.foresee), for the window to show before it starts."""

    strategy: str
    batch_rows: int
    workers: int
    protocol: str  # single, staged, two-phase, create-then-rename, per-batch; none: nothing to send
    reason: str
    auto: bool  # the strategy is auto's pick
    writes_twice: bool = False  # several streams through a staging table (core.server.Choice.writes_twice)

    def describe(self) -> str:
        if self.protocol == "none":
            return self.reason  # nothing to send (an empty file): only what will be done instead
        picked = "auto will pick" if self.auto else "will run"
        workers = f", {self.workers} workers" if self.workers > 1 else ""
        # In the head, so a plan line cut short to fit still says it; the reason says why and what writes once.
        twice = ", every row written twice" if self.writes_twice else ""
        head = (f"{picked} {self.strategy} (batches of {self.batch_rows:,} rows{workers}; "
                f"commit: {self.protocol}{twice})")
        return f"{head}: {self.reason}" if self.reason else head


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
        self.resume = resume  # continue an unfinished per-batch run of this load
        self.restart = restart  # start again from row 1 although an earlier run is unfinished
        # What the run's parts share; a check (dry_run) is the whole load in one transaction
        # that is rolled back at the end, in single commit.
        self.ctx = RunContext(replace(spec, commit=CommitMode.SINGLE) if dry_run else spec,
                              on_progress=on_progress, on_log=on_log, cancel=cancel, dry_run=dry_run)
        self.on_log = self.ctx.on_log
        self.cancel = self.ctx.cancel

    @property
    def spec(self) -> LoadSpec:
        """The spec as settled so far (auto's pick and the batch size filled in)."""
        return self.ctx.spec

    @spec.setter
    def spec(self, spec: LoadSpec) -> None:
        self.ctx.spec = spec

    @property
    def dry_run(self) -> bool:
        return self.ctx.dry_run

    @property
    def rows_read(self) -> int:
        """Source rows read so far (a failed run's history says how far it got; EachFileJob's too)."""
        return self.ctx.rows_read

    # -- the run ----------------------------------------------------------------------

    chosen: Choice | None = None  # what `auto` picked, and why

    not_loaded: tuple[str, ...] = ()  # the file's columns no target column takes
    many: ManySource | None = None  # many files read as one source (core.sources.many)
    said: Said | None = None  # the NULL marker and the value formats, as the log's first lines said them

    def _say_source(self, plan: Plan) -> None:
        self.said = say_source(plan, self.on_log)

    def run(self) -> LoadResult:
        result = self._run_widening()
        result = load_many.report(self.many, self.on_log, result)  # many files: what each one gave
        if self.not_loaded:
            result = replace(result, columns_not_loaded=self.not_loaded)
        if self.said is not None:
            result = replace(result, null_marker=self.said.null_marker, value_formats=self.said.formats)
        reasons = [r for r in (self.chosen.reason if self.chosen else "", result.reason) if r]
        if self.chosen is not None:
            result = replace(result, chosen=self.chosen.to_json(), reason="; ".join(reasons))
        if self.writes_twice:
            result = replace(result, writes_twice=True)
        return result

    # Each retry widens one column (integer -> numeric -> text at most): a bound, not a budget.
    WIDEN_LIMIT = 32

    def _run_widening(self) -> LoadResult:
        """The load; in create mode, a value that the type inferred from the file's first rows
        refuses (a decimal among integers at line 1,167) widens that column and starts again:
        the table was made in the load's own transaction, so the failed run left nothing."""
        widenable = (self.spec.target.mode is LoadMode.CREATE and self.spec.commit is CommitMode.SINGLE
                     and not self.spec.columns and not self.spec.target.ddl and not self.dry_run)
        for _ in range(self.WIDEN_LIMIT):
            try:
                return self._run_job()
            except BadRowError as bad:
                maps = self._widened(bad) if widenable else None
                if maps is None:
                    raise
                self.spec = replace(self.spec, columns=maps)
                self.ctx.reset_counters()
        return self._run_job()

    def _widened(self, bad: BadRowError) -> list[ColumnMap] | None:
        """The plan's mapping with the refusing column's type widened, or None."""
        p = bad.problem
        plan = self.plan
        if bad.committed is not None or plan is None or p.column is None:
            return None
        at = next((i for i, m in enumerate(plan.maps) if m.include and m.target == p.column), None)
        if at is None:
            return None
        m = plan.maps[at]
        wider = widened_type(m.type, p.value)
        if wider is None:
            return None
        self.on_log(f"column {m.target!r}: {p.value!r} at line {p.line or p.row + 1:,} does not fit {m.type}, "
                    f"which the file's first rows suggested; the new table takes {wider} instead, and the "
                    "load starts again")
        maps = list(plan.maps)
        maps[at] = replace(m, type=wider, format=None if wider == "text" else m.format)
        return maps

    plan: Plan | None = None  # the last settled plan (its mapping, for _widened)

    @property
    def writes_twice(self) -> bool:
        """Several streams through a staging table: every row written twice (said before the run)."""
        return self.ctx.protocol is not None and self.ctx.protocol.writes_twice

    def foresee(self) -> Foresight:
        """What a run would do, said before it starts: the strategy (auto's pick), batch size,
        workers and transaction protocol, and why. Reads the source and the catalog; writes nothing."""
        with connect(resolve_dsn(self.spec.dsn), autocommit=True) as ctl:
            try:
                _plan, cls = self._settle(ctl)
            except empty_load.EmptyFile as empty:
                return Foresight(self.spec.strategy, self.spec.rows_per_batch, 1, "none",
                                 empty_load.note(self.ctx, empty.plan), auto=False)
        if self.ctx.protocol is not None:
            protocol = str(self.ctx.protocol.protocol.value)
        elif self.spec.commit is CommitMode.PER_BATCH:
            protocol = "per-batch"
        else:
            protocol = "staged" if single.staged_load(cls, self.spec.target.mode, None) else "single"
        reasons = [r for r in (self.chosen.reason if self.chosen else "", self.ctx.reason) if r]
        return Foresight(cls.id, self.spec.rows_per_batch, self.spec.workers if cls.takes_workers else 1, protocol,
                         "; ".join(reasons), auto=self.chosen is not None, writes_twice=self.writes_twice)

    def _settle(self, ctl: psycopg.Connection[Any]) -> tuple[Plan, type[Strategy]]:
        """The plan, the strategy (auto's pick) and the protocol; refuses what cannot work here."""
        spec = self.spec
        cls = None if spec.strategy == AUTO else get_strategy(spec.strategy)
        plan = self.plan = plan_load(spec, ctl)
        if isinstance(plan.source, EmptySource):
            raise empty_load.EmptyFile(plan)
        self.many = load_many.settled(self.ctx, plan)  # many files: said before the run; counted after it
        spec = self.spec
        if cls is None:
            self.chosen = choose(spec, plan, ctl, dry_run=self.dry_run)
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
        ctx = self.ctx
        ctx.start()
        ctx.emit(Phase.CONNECTING, force=True)
        dsn = resolve_dsn(self.spec.dsn)
        with connect(dsn, autocommit=True) as ctl:
            try:
                plan, cls = self._settle(ctl)
            except empty_load.EmptyFile as empty:
                return empty_load.load_nothing(ctx, ctl, empty.plan)
            spec = self.spec
            source = plan.source
            ctx.bytes_total = source.size
            size = f" (batches of {spec.rows_per_batch:,} rows)" if cls.batch_sized and not self.chosen else ""
            self.on_log(f"{source.format} source {source.path} -> {plan.target.display()} with {cls.id}{size}")
            self._say_source(plan)
            for cleaned in janitor.sweep(ctl):
                self.on_log(cleaned)
            if source.format == "sql":
                from core.load.protocols import script as script_load

                if script_load.takes_over(spec, cls.id, plan):
                    if self.dry_run:
                        raise ConfigError("a check is not available for a script that fills several tables")
                    return script_load.ScriptLoad(ctx, dsn, plan).run()
            earlier = None if self.dry_run else self._earlier_run(ctl, plan)
            if self.spec.commit is CommitMode.PER_BATCH:
                if cls.chunk_commits:
                    from core.load.protocols import parallel_run

                    return parallel_run.run_per_batch(ctx, cls, dsn, ctl, plan, earlier)
                return per_batch.run_per_batch(ctx, cls, dsn, ctl, plan, earlier)
            try:
                return single.run_single(ctx, cls, dsn, ctl, plan)
            except ParseInstead as retry:
                # COPY reads one line-ending style per file and no ragged rows; the parser
                # takes mixed endings and names a malformed record by its line.
                self.on_log(f"COPY refused the file's bytes ({retry}); loading through the parser instead")
                ctx.no_raw = True
                ctx.reset_counters()
                return single.run_single(ctx, cls, dsn, ctl, plan)

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
        if load_fingerprint(plan.source.path) != earlier.fingerprint:
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
                and not (isinstance(plan.source, InsertScript) and plan.source.several):
            generated = {m.source for m in plan.maps if not m.include and m.target in plan.generated}
            left = [c for c in left if c not in generated]  # pg_dump's DEFAULT there: the server computes it
            if left:
                placeholders = isinstance(plan.source, InsertScript) and plan.source.has_column_list is False
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

    def _choose_protocol(self, cls: type[Strategy], ctl: psycopg.Connection[Any], plan: Plan) -> None:
        if not cls.multi_connection:
            return
        from core import server  # read only for several connections

        info = self.chosen.target if self.chosen is not None and self.chosen.target is not None \
            else server.inspect(ctl, plan.target)  # auto's, read once
        choice = server.choose(
            multi_connection=cls.multi_connection, chunk_commits=cls.chunk_commits, mode=self.spec.target.mode,
            commit=self.spec.commit, on_error=self.spec.on_error, info=info, dry_run=self.dry_run,
            branches=max(1, self.spec.workers),
        )
        self.ctx.protocol, self.ctx.target_info = choice, info
        if choice is not None:
            self.ctx.reason = f"{cls.id}: {choice.reason}"
            self.on_log(self.ctx.reason)


def run_load(spec: LoadSpec, **kwargs: Any) -> LoadResult:
    return LoadJob(spec, **kwargs).run()


def describe_dsn(dsn: str | None) -> str:
    return strip_password(dsn) if dsn else "embedded PostgreSQL"
