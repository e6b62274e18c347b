"""The run controller: a load's or a check's life (start, confirm, stop, resume, end), into the history.

It owns the run panel and the job (in the shared state, ui/state.py), asks the mapping and the target
controller through the Protocols below, and speaks through its signals (wired in MainWindow._connect).
A run's end is written in one place (`_end_run`): counters, summary, History row and log agree.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QMessageBox, QWidget

from core.db import TableRef
from core.errors import ConfigError, UnfinishedRun
from core.events import Progress
from core.history import Entry, strategy_used, target_of
from core.load.job import LoadJob, LoadResult
from core.many_files import EachFileJob, make_job
from core.preview import committed
from core.spec import ColumnMap, CommitMode, ErrorPolicy, LoadMode, LoadSpec
from core.target_facts import TableSize, TargetFacts, read_target_facts
from ui import dialogs
from ui.check_texts import check_summary, first_bad
from ui.mapping_controller import left_out_text
from ui.reject_files import RejectFiles, check_file
from ui.run_guard import judge
from ui.run_texts import load_summary, truncate_said
from ui.worker import Job

if TYPE_CHECKING:
    from ui.panels.run import RunPanel
    from ui.panels.strategy import StrategyPanel
    from ui.run_history import RunHistory
    from ui.settings import Settings
    from ui.state import LoadState
    from ui.worker import InBackground


class MappingQueries(Protocol):
    """What a run asks of the mapping (ui.mapping_controller.MappingController)."""

    profile_left_out: set[str] | None

    def after(self, action: Any) -> bool: ...
    def unmatched(self) -> list[ColumnMap]: ...
    def left_out(self) -> list[str]: ...
    def table_exists(self) -> bool: ...


class ServerQueries(Protocol):
    """What a run asks of the target controller (ui.target_controller.TargetController)."""

    def seen_sizes(self) -> dict[TableRef, TableSize]: ...
    def where(self) -> str: ...


class RunController(QObject):
    """Starts, stops and ends runs of the window's current set-up; each run goes into the history.

    Signals: run_started(object Job), run_finished(object LoadResult), run_failed(str), run_cancelled(),
    run_refused(str), run_ended(), check_finished(object LoadResult) (as MainWindow's, which they feed);
    facts_read(object TargetFacts) (the target tables read just before a run), tables_changed() (a load wrote
    to the server's tables), table_created() (after tables_changed: a create made the target), failed(str).
    The job itself is the state's (LoadState.job_changed: the Run, Check and Stop buttons follow it).
    """

    run_started = Signal(object)
    run_finished = Signal(object)
    run_failed = Signal(str)
    run_cancelled = Signal()
    run_refused = Signal(str)
    run_ended = Signal()
    check_finished = Signal(object)
    facts_read = Signal(object)
    tables_changed = Signal()
    table_created = Signal()
    failed = Signal(str)

    def __init__(self, state: LoadState, run_panel: RunPanel, strategy_panel: StrategyPanel, settings: Settings,
                 parent: QWidget, *, spec: Callable[[], LoadSpec], mapping: MappingQueries, server: ServerQueries,
                 background: InBackground, all_script_tables: Callable[[], bool], history: RunHistory) -> None:
        super().__init__(parent)
        self.state = state
        self.p = run_panel
        self.g = strategy_panel
        self._parent = parent  # where its questions and messages show
        self._spec = spec  # the set-up as the panels say it now
        self._maps = mapping
        self._server = server
        self._background = background
        self._all_script_tables = all_script_tables  # the source panel's: a script's tables all loaded at once
        self._history = history  # each run goes into it
        # the running load's engine: what auto picked, even if it then failed (per-file: a job per file)
        self.engine: LoadJob | EachFileJob | None = None
        self.spec: LoadSpec | None = None
        self.kind = "load"  # or "check"
        self.check_aborts = False  # the check runs with skip to list every bad row; the run would abort
        self.last_progress: Progress | None = None
        self.starting = False  # waiting for the table's size or the user's yes
        # (connection, file, tables) whose append the user said yes to: asked once, on that server only
        self._confirmed: set[tuple[str | None, str, tuple[TableRef, ...]]] = set()
        self.removed = 0  # rows the running load's truncate takes out (said in its summary and History)
        self.resuming = False
        self.unattended = False  # --screenshot: a question is answered no (a modal dialog would wait forever)
        self.reject_files = RejectFiles(strategy_panel, run_panel, settings, parent)  # their folder and buttons
        p = self.p
        p.run_btn.clicked.connect(lambda: self.start_run())
        p.stop_btn.clicked.connect(self.stop_run)
        p.check_btn.clicked.connect(self.check_run)
        p.resume_btn.clicked.connect(lambda: self.start_run(resume=True))
        p.restart_btn.clicked.connect(lambda: self.start_run(restart=True))

    @property
    def job(self) -> Job | None:
        """The load or check running (kept in the shared state)."""
        return self.state.job

    @job.setter
    def job(self, job: Job | None) -> None:
        self.state.job = job

    def on_job_changed(self, job: Job | None) -> None:
        """A run began or ended (LoadState.job_changed): Run and Check, or Stop, can be pressed."""
        self.p.set_running(job is not None)

    def forget_result(self, *_args: object) -> None:
        """Another file: the last file's result is not this one's (kept while a run is on)."""
        if self.job is None and not self.starting:
            self.p.clear_result()
            self.g.forget_choice()

    # -- starting --------------------------------------------------------------------------------
    def start_run(self, *, resume: bool = False, restart: bool = False) -> None:
        """Run the load as set up; `resume` continues an interrupted per-batch run, `restart` ignores it.

        Refused while a column is unmatched. The target tables are read again on a worker first (on the
        connection the run will use), and the run is refused when its mode cannot apply, or asked first
        when it would truncate, overwrite or add to rows that are there (ui/run_guard.py).
        """
        if self.job is not None or self.starting:
            return
        if self._maps.after(lambda: self.start_run(resume=resume, restart=restart)):
            return
        spec = self._spec()
        if resume and spec.commit not in (CommitMode.PER_BATCH, CommitMode.PER_FILE):
            spec.commit = CommitMode.PER_BATCH  # only per-batch runs leave something to resume
            self.g.commit_combo.setCurrentText(CommitMode.PER_BATCH.value)
        if not self._runnable(spec):
            return
        self.starting = True
        self.p.progress.setFormat("looking at the table…")
        refs = self._target_refs(spec)
        dsn = spec.dsn
        path = spec.source.path
        self._background(lambda *_a: read_target_facts(dsn, refs, path),
                         lambda facts: self._on_target_facts(spec, facts, resume, restart), self._on_size_failed)

    def _target_refs(self, spec: LoadSpec) -> list[TableRef]:
        """The tables the run writes to: the target, or each of a script's tables loaded together."""
        info = self.state.source_info
        if info is not None and len(info.script_tables) > 1 and self._all_script_tables():
            refs = []
            for name, _rows in info.script_tables:
                schema, _, table = name.rpartition(".")
                refs.append(TableRef(table, spec.target.schema or schema or "public"))
            return refs
        return [TableRef(spec.target.table, spec.target.schema or "public")]

    def _on_target_facts(self, spec: LoadSpec, facts: TargetFacts, resume: bool, restart: bool) -> None:
        if not self.starting:
            return  # stopped before it started
        self.starting = False
        self.p.progress.setFormat("idle")
        if facts.dsn != self.state.dsn:
            self.p.log_line("not started: the connection changed while the table was read; press Run again")
            return
        seen = self._server.seen_sizes()
        self.facts_read.emit(facts)
        info = self.state.source_info
        several = len(facts.sizes) > 1
        asked = (spec.dsn, spec.source.path, tuple(facts.sizes)) in self._confirmed
        each = ", ".join(f"{name}: {n:,}" for name, n in info.script_tables) if info is not None else ""
        verdict = judge(spec, facts, info.rows_text() if info is not None else "rows", several=several,
                        asked_append=asked, seen=seen, resume=resume, restart=restart, where=self._server.where(),
                        script_rows=each)
        if verdict.refusal:
            self._refuse(verdict.refusal)
            return
        if verdict.question:
            question = verdict.question
            if info is not None and not info.rows_exact:
                question += "\n\nThe file's row count is an estimate from its first rows."
            if self.unattended:
                self.p.log_line(f"not started: nobody to answer: {question.splitlines()[0]}")
                self.run_refused.emit(question)
                return
            if not dialogs.ask(self._parent, verdict.title, question, verdict.yes, destructive=verdict.destructive):
                self.p.log_line(f"not started: the user said no to: {question.splitlines()[0]}")
                self.run_refused.emit(question)
                return
        if spec.target.mode is LoadMode.APPEND:
            self._confirmed.add((spec.dsn, spec.source.path, tuple(facts.sizes)))
        self.removed = verdict.removed
        self._launch(spec, resume=resume, restart=restart)

    def check_run(self) -> None:
        """Check before loading: the load with these settings, rolled back at the end.

        Bad rows are collected (policy skip, where the strategy allows it) so the check lists every
        row that would be rejected; under On error = abort it says where the run would stop. The
        table is left as it was.
        """
        if self.job is not None or self.starting:
            return
        if self._maps.after(self.check_run):
            return
        spec = self._spec()
        if not self._runnable(spec):
            return
        chosen = self.g.current()
        self.check_aborts = spec.on_error is ErrorPolicy.ABORT
        if chosen is None or not chosen.multi_connection:  # parallel-copy has no skip yet
            spec.on_error = ErrorPolicy.SKIP
        spec.reject_file = check_file(spec)
        self._launch(spec, dry_run=True)

    def stop_run(self) -> None:
        if self.starting:
            self.starting = False
            self.p.progress.setFormat("idle")
            self.p.log_line("not started: stopped before the run began")
            return
        if self.job is not None:
            self.p.progress.setFormat("stopping…")
            self.job.cancel()

    def _runnable(self, spec: LoadSpec) -> bool:
        if not spec.source.path or not spec.target.table:
            self._refuse("Open a file and name a target table first.")
            return False
        left = self._maps.unmatched()
        if left:
            names = ", ".join(repr(m.source or m.target) for m in left)
            where = TableRef(spec.target.table, spec.target.schema).display()
            self._refuse(f"{len(left)} column{'s' if len(left) != 1 else ''} of the file ({names}) "
                         f"{'are' if len(left) != 1 else 'is'} not in {where}."
                         "\n\nPick a target column for each in the mapping, or untick it to skip it.")
            return False
        return True

    def _refuse(self, message: str) -> None:
        self.p.log_line("not started: " + message.replace("\n\n", " "))
        self.run_refused.emit(message)
        QMessageBox.information(self._parent, "Sluice", message)

    def _on_size_failed(self, message: str) -> None:
        self.starting = False
        self.p.progress.setFormat("idle")
        self.failed.emit(message)

    def _left_out_refused(self, spec: LoadSpec) -> bool:
        """A create that leaves out columns of the file asks first (True: the user said no)."""
        maps = self._maps
        left = maps.left_out() if spec.target.mode is LoadMode.CREATE and not maps.table_exists() else []
        if not left or set(left) == maps.profile_left_out:
            return False  # none left out, or just those the opened profile leaves out (the plan says which)
        info = self.state.source_info
        total = len(info.columns) if info is not None else len(left)
        ref = TableRef(spec.target.table, spec.target.schema or "public").display()
        question = (f"Create {ref} without the file's {left_out_text(left)}?\n\nThe new table gets "
                    f"{total - len(left)} of the file's {total} columns; tick a column in the mapping to keep it.")
        if dialogs.ask(self._parent, "Create a table that leaves out columns", question, "Create without them"):
            return False
        self.p.log_line(f"not started: the user did not create {ref} without {', '.join(left)}")
        self.run_refused.emit(question)
        return True

    def _launch(self, spec: LoadSpec, *, resume: bool = False, restart: bool = False, dry_run: bool = False) -> None:
        if not dry_run and not resume and self._left_out_refused(spec):
            return
        if spec.on_error is ErrorPolicy.SKIP and spec.reject_file is None:
            spec.reject_file = self.reject_files.file_for(spec, resume)  # never beside the data file unasked
        self.kind = "check" if dry_run else "load"
        self.resuming = resume
        if dry_run:
            self.removed = 0
        self.last_progress = None
        self.p.clear_for_run()
        self.g.forget_choice()  # the last run's pick; this run's is said when it ends
        verb = "check (rolled back)" if dry_run else "resuming" if resume else "starting over" if restart else "run"
        self.p.log_line(
            f"— {dt.datetime.now():%H:%M:%S} {verb}: {spec.strategy} into {spec.target.table} ({spec.commit.value})")
        job = Job(lambda on_progress, on_log, cancel: self._engine(make_job(  # per-file: a job per file
            spec, on_progress=on_progress, on_log=on_log, cancel=cancel, resume=resume, restart=restart,
            dry_run=dry_run)).run())
        self.spec = spec
        self.job = job  # job_changed: the buttons are Stop (wired in MainWindow._connect)
        job.signals.progress.connect(self._on_progress)
        job.signals.log.connect(self.p.log_line)
        job.signals.finished.connect(self._on_finished)
        job.signals.failed.connect(self._on_failed)
        job.signals.cancelled.connect(self._on_cancelled)
        job.start()
        self.run_started.emit(job)

    def _engine(self, engine: LoadJob | EachFileJob) -> LoadJob | EachFileJob:
        """Keep the engine of the run (set on its worker before it runs; read here once it ended)."""
        self.engine = engine
        return engine

    # -- while it runs and when it ends -----------------------------------------------------------
    def _on_progress(self, p: Progress) -> None:
        self.last_progress = p
        self.p.show_progress(p)

    def _end_run(self, outcome: str, read: int, loaded: int, rejected: int, *, seconds: float | None = None,
                 note: str = "", result: LoadResult | None = None, loaded_before: int = 0) -> None:
        """The one place a run's end is shown: counters, summary (set by the caller), history and log agree.

        `loaded_before`: of `loaded`, the rows an earlier run committed (a resumed run): not in the rate.
        """
        spec = self.spec
        assert spec is not None
        if seconds is None and self.last_progress is not None:
            seconds = self.last_progress.elapsed  # a run that stopped: how long it went
        own = loaded - loaded_before  # this run's rows in this run's seconds, as the summary says
        rate = f"{own / seconds:,.0f}" if seconds and own > 0 else ""
        self.p.show_counters(read, loaded, rejected, f"{rate:>11} rows/s" if rate else "")
        own_rate = own / seconds if seconds and own > 0 else None
        self._remember(spec, outcome, (read, loaded, rejected), seconds, own_rate, note, result)
        self.p.log_line(f"— {outcome}: read {read:,}, loaded {loaded:,}, rejected {rejected:,}. "
                        f"{self.p.summary.text()}")
        self.job = None  # job_changed: the buttons are Run and Check again
        self.engine = None  # read above; kept, it would hold the run's source, plan and counters till the next
        self.run_ended.emit()

    def _remember(self, spec: LoadSpec, outcome: str, counts: tuple[int, int, int], seconds: float | None,
                  rate: float | None, note: str, result: LoadResult | None) -> None:
        """The run into the kept history: mode, auto's pick (also of a run that failed), each table's rows."""
        read, loaded, rejected = counts
        engine = self.engine
        chosen = result.strategy if result is not None else (
            engine.chosen.strategy if engine is not None and engine.chosen is not None else None)
        tables = result.tables if result is not None else ()
        info = self.state.source_info
        if not tables and info is not None and self._all_script_tables():
            tables = tuple(name for name, _rows in info.script_tables)  # the tables a failed script was to fill
        self._history.add_run(Entry(
            kind=self.kind, source=spec.source.path, target=target_of(spec, tables), mode=spec.target.mode.value,
            strategy=strategy_used(spec.strategy, chosen), outcome=outcome, rows_read=read, rows_loaded=loaded,
            rows_rejected=rejected, seconds=seconds, rows_per_s=rate,
            note=note, tables=result.table_rows if result is not None else (),
            reject_file=result.reject_file if result is not None else None))

    def _count_rows(self, result: LoadResult) -> None:
        """A run or a check that read the file through has counted its rows: from now on the
        source line and the questions (SourceInfo.rows_text) say that number, not an estimate."""
        spec, info = self.spec, self.state.source_info
        if info is None or spec is None or info.rows_exact or info.options.path != spec.source.path:
            return
        self.state.count_source_rows(result.rows_read)

    def _on_finished(self, result: LoadResult) -> None:
        self._count_rows(result)
        p = self.p
        p.progress.setValue(1000)
        check = self.kind == "check"
        mode_said = truncate_said(self.spec, self.removed, resuming=self.resuming)  # for the summary and History
        p.progress.setFormat("checked: rolled back" if check else "done")
        rate = f"{result.rows_per_s:,.0f} rows/s"
        if result.load_seconds:
            own = result.rows_loaded - result.loaded_before  # a resumed run's earlier rows took none of it
            rate += f"; {own / result.load_seconds:,.0f} rows/s while loading"
        if result.reject_file:
            p.show_rejects(result.reject_file)
        # A check collects every bad row; under abort the run would stop at the first of them.
        stop = first_bad(p.rejects.rows) if check and self.check_aborts and p.rejects.rows else None
        if check:
            p.summary.setText(check_summary(result, rate, stop))
            if stop is not None:
                p.progress.setFormat("checked: the run would stop")
        else:
            p.summary.setText(load_summary(result, rate) + mode_said)
        if result.chosen:
            self.g.show_choice(result.strategy, int(result.chosen["batch_rows"]), result.reason)
        loaded = 0 if check else result.rows_loaded  # "loaded" is what the table holds
        note = f"would load {result.rows_loaded:,}; rolled back" if check else "; ".join(
            n for n in (mode_said.strip(), result.reject_file or "") if n)
        if stop is not None:
            note = f"would stop at {stop}; rolled back"
        self._end_run("checked" if check else "loaded", result.rows_read, loaded, result.rows_rejected,
                      seconds=result.seconds, note=note, result=result,
                      loaded_before=0 if check else result.loaded_before)
        if check:
            self.check_finished.emit(result)
            return
        self.tables_changed.emit()
        if self.spec is not None and self.spec.target.mode is LoadMode.CREATE:
            self.table_created.emit()
        self.run_finished.emit(result)

    def _stopped_read(self) -> int:  # rows read when the run stopped (the last progress event)
        return self.last_progress.rows_read if self.last_progress is not None else 0

    def _on_failed(self, message: str) -> None:
        p, spec, parent = self.p, self.spec, self._parent
        assert spec is not None
        error = self.job.signals.error if self.job is not None else None
        if isinstance(error, UnfinishedRun):
            # Not a failure of this run: ask what to do with the earlier one.
            unit = "file" if spec.commit is CommitMode.PER_FILE else "batch"  # per-file: many files, one table
            message = (f"{error.described}.\n\nResume continues it after the last committed {unit}; "
                       "Start over loads every row again (rows it committed stay in the table).")
            p.progress.setFormat("earlier run unfinished")
            p.summary.setText("An earlier run of this load is unfinished: Resume or Start over.")
            self._end_run("not started", 0, 0, 0, note=error.described)
            p.set_resumable(True, restart=True)
            self.run_failed.emit(message)
            QMessageBox.information(parent, "Unfinished load", message)
            return
        self.state.last_error = message
        p.show_failed("check failed" if self.kind == "check" else "failed")
        p.log_line("error: " + message)
        if self._files_kept(error, "Failed", "failed", message):
            self.run_failed.emit(message)
            QMessageBox.warning(parent, "Load failed", message)
            return
        if spec.commit is CommitMode.PER_BATCH and not isinstance(error, ConfigError):
            p.set_resumable(True, restart=True)

            def then() -> None:
                self.run_failed.emit(message)
                QMessageBox.warning(parent, "Load failed", message)

            self._end_after_commits("failed", message, then)
            return
        nothing = "The check was rolled back" if self.kind == "check" else "Nothing was loaded"
        p.summary.setText(f"Failed: {message}" if "nothing was loaded" in message.lower()
                          else f"Failed: {message}. {nothing}: the table is as it was.")
        self._end_run("failed", self._stopped_read(), 0, 0, note=message)
        self.run_failed.emit(message)
        QMessageBox.warning(parent, "Load failed", message)

    def _on_cancelled(self) -> None:
        p, spec = self.p, self.spec
        assert spec is not None
        p.progress.setFormat("cancelled")
        p.log_line("cancelled by the user")
        error = self.job.signals.error if self.job is not None else None
        if self._files_kept(error, "Stopped", "cancelled", "stopped by the user"):
            self.run_cancelled.emit()
            return
        if spec.commit is CommitMode.PER_BATCH:
            p.set_resumable(True, restart=True)
            self._end_after_commits("cancelled", "stopped by the user", self.run_cancelled.emit)
            return
        p.summary.setText("Stopped. Nothing was loaded: the table is as it was.")
        self._end_run("cancelled", self._stopped_read(), 0, 0, note="stopped by the user; rolled back")
        self.run_cancelled.emit()

    def _files_kept(self, error: object, head: str, outcome: str, note: str) -> bool:
        """Per-file commits over many files (core.many_files): the files committed before the one that
        failed or was stopped stay in the table; Resume goes on from that file. False: not such a run."""
        kept = getattr(error, "files_kept", None)
        if kept is None:
            return False
        files, rows, name, why = kept
        s = "" if files == 1 else "s"
        self.p.summary.setText(f"{head} at {name} ({why}): {name} was rolled back; the {files:,} file{s} committed "
                               f"before it stay in the table ({rows:,} rows). Resume goes on from {name}.")
        self._end_run(outcome, self._stopped_read(), rows, 0, note=note)
        self.p.set_resumable(files > 0, restart=True)
        return True

    def _end_after_commits(self, outcome: str, note: str, then: Any) -> None:
        """Per-batch: what stays is what the checkpoint says was committed, read on a worker; then `then()`."""
        spec = self.spec
        assert spec is not None
        self.p.summary.setText("Stopped; reading what was committed…")
        dsn, path, ref = spec.dsn, spec.source.path, TableRef(spec.target.table, spec.target.schema)

        def done(state: tuple[int, int, int] | None) -> None:
            read, loaded, rejected = state or (0, 0, 0)
            self.p.summary.setText(
                f"{'Failed' if outcome == 'failed' else 'Stopped'}. {loaded:,} rows from the batches committed "
                f"so far stay in the table ({read:,} source rows done); Resume continues.")
            before = self.last_progress.loaded_before if self.last_progress is not None else 0
            self._end_run(outcome, read, loaded, rejected, note=note, loaded_before=min(before, loaded))
            then()

        def failed(message: str) -> None:
            self.p.summary.setText(f"Stopped; what was committed is unknown ({message}).")
            self._end_run(outcome, 0, 0, 0, note=note)
            then()

        self._background(lambda *_a: committed(dsn, path, ref), done, failed)
