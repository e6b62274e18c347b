"""The Compare tab: strategies side by side on the user's own file, measured off the GUI thread.

Each comparison is kept as a named session; ticking two puts them side by side.
"""

from __future__ import annotations

import csv
from typing import Any, Protocol

from PySide6.QtCore import QModelIndex, QObject, QSortFilterProxyModel, Qt, QTimer, Signal
from PySide6.QtGui import QShowEvent
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QFileDialog,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QMessageBox,
    QProgressBar,
    QPushButton,
    QSplitter,
    QTableView,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from core.auto import AUTO
from core.compare import CompareReport, CompareResult, run_compare
from core.spec import LoadSpec
from core.strategies.base import get_strategy
from ui import progress_bar
from ui.compare.charts import CompareCharts
from ui.compare.form import CompareForm, parse_counts
from ui.compare.model import SORT_ROLE, CompareModel
from ui.compare.session import CompareSession, rtt_text
from ui.compare.sessions_box import SessionsBox
from ui.compare.texts import shown_text, summary
from ui.layout import scrolled
from ui.worker import Job


class CompareHost(Protocol):
    """What the tab needs from the main window."""

    tabs: QTabWidget

    def current_spec(self) -> LoadSpec: ...

    def set_strategy(self, strategy_id: str, batch_rows: int | None = None, workers: int | None = None) -> None: ...

    def source_rows(self) -> int | None: ...


IDLE_STATUS = "Each run loads a scratch copy of the target table; the table itself is never touched."


class _Relay(QObject):
    """Carries run_compare's callbacks from the worker thread to the GUI thread."""

    step = Signal(int, str, int, int)  # generation, message, runs done, runs total
    result = Signal(int, object)  # generation, CompareResult (a snapshot after one run)


class CompareTab(QWidget):
    """Signals:

    - progressed(str message, int done, int total): before each run.
    - result_added(object CompareSession, object CompareResult): a run finished; the table and charts show it.
    - finished(object CompareReport): the comparison is done.
    - failed(str), cancelled().
    - comparison_finished(object CompareSession): any comparison ended (done, stopped or failed: see
      `session.state`, `.error`, `.settings`, `.results`); for the History tab. Emitted after the signal above.

    `sessions` holds every comparison of this window, newest last; `report` the last one that finished.
    """

    progressed = Signal(str, int, int)
    result_added = Signal(object, object)
    finished = Signal(object)
    failed = Signal(str)
    cancelled = Signal()
    comparison_finished = Signal(object)

    def __init__(self, window: CompareHost) -> None:
        super().__init__()
        self._window = window
        self._job: Job | None = None
        self._running: CompareSession | None = None
        self._generation = 0  # callbacks from an older job are ignored
        self._relay = _Relay(self)
        self._relay.step.connect(self._on_step)
        self._relay.result.connect(self._on_result)
        self.report: CompareReport | None = None
        # Runs can finish many times a second: the charts redraw at most every 100 ms.
        self._redraw = QTimer(self)
        self._redraw.setSingleShot(True)
        self._redraw.setInterval(100)
        self._redraw.timeout.connect(self._on_redraw_timeout)
        self._build()
        self._set_running(False)

    # -- layout -------------------------------------------------------------------------------

    def _build(self) -> None:
        split = QSplitter(Qt.Orientation.Horizontal)
        split.addWidget(scrolled(self._setup_panel(), vertical_only=True))  # fits a 700 px high window
        right = QSplitter(Qt.Orientation.Vertical)
        right.addWidget(self._results_panel())
        self.charts = CompareCharts()
        right.addWidget(self.charts)
        right.setSizes([330, 470])
        split.addWidget(right)
        split.setStretchFactor(1, 1)
        split.setSizes([340, 1160])
        QVBoxLayout(self).addWidget(split)

    def _setup_panel(self) -> QWidget:
        panel = QWidget()
        lay = QVBoxLayout(panel)
        lay.setContentsMargins(0, 0, 0, 0)
        self.form = CompareForm()
        lay.addWidget(self.form, 1)
        f = self.form  # its widgets, by the names the tab always had
        self.strategy_list, self.batch_edit, self.workers_edit = f.strategy_list, f.batch_edit, f.workers_edit
        self.sample_spin, self.repeat_spin, self.budget_spin = f.sample_spin, f.repeat_spin, f.budget_spin
        self.rtt_combo = f.rtt_combo
        buttons = QHBoxLayout()
        self.run_btn = QPushButton("Run comparison")
        self.run_btn.clicked.connect(self.start)
        self.stop_btn = QPushButton("Stop")
        self.stop_btn.clicked.connect(self.stop)
        buttons.addWidget(self.run_btn)
        buttons.addWidget(self.stop_btn)
        lay.addLayout(buttons)
        self.progress = QProgressBar()
        self.progress.setFormat("idle")
        lay.addWidget(self.progress)
        self.status = QLabel(IDLE_STATUS)
        self.status.setWordWrap(True)
        lay.addWidget(self.status)
        self.sessions_box = SessionsBox(lambda session: session is not self._running)
        self.sessions_box.changed.connect(self._refresh_view)
        self.session_list = self.sessions_box.session_list
        self.remove_btn = self.sessions_box.remove_btn
        lay.addWidget(self.sessions_box)
        panel.setMinimumWidth(300)
        panel.setMaximumWidth(420)
        return panel

    def _results_panel(self) -> QWidget:
        panel = QWidget()
        lay = QVBoxLayout(panel)
        lay.setContentsMargins(0, 0, 0, 0)
        self.shown_label = QLabel("No comparison yet.")
        self.shown_label.setWordWrap(True)
        lay.addWidget(self.shown_label)
        self.model = CompareModel()
        self.proxy = QSortFilterProxyModel(self)
        self.proxy.setSourceModel(self.model)
        self.proxy.setSortRole(SORT_ROLE)
        self.table = QTableView()
        self.table.setModel(self.proxy)
        self.table.setSortingEnabled(True)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.verticalHeader().setVisible(False)
        self.table.setWordWrap(False)
        # A long error keeps its start and its end (file ... line, column); the whole text is the tooltip.
        self.table.setTextElideMode(Qt.TextElideMode.ElideMiddle)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setStretchLastSection(True)
        self.table.doubleClicked.connect(self._on_table_double_clicked)
        lay.addWidget(self.table)
        row = QHBoxLayout()
        self.apply_btn = QPushButton("Apply to Load tab")
        self.apply_btn.setToolTip("Use the selected strategy, batch size and workers for the load")
        self.apply_btn.clicked.connect(self.apply_selected)
        self.log_check = QCheckBox("Log scale")
        self.log_check.setToolTip("Rates on a logarithmic axis, so slow strategies show beside fast ones")
        self.log_check.toggled.connect(self.charts_log_scale)
        self.csv_btn = QPushButton("Export CSV…")
        self.csv_btn.clicked.connect(self._on_export_csv_clicked)
        self.png_btn = QPushButton("Export charts PNG…")
        self.png_btn.clicked.connect(self._on_export_png_clicked)
        row.addWidget(self.apply_btn)
        row.addWidget(self.log_check)
        row.addStretch(1)
        row.addWidget(self.csv_btn)
        row.addWidget(self.png_btn)
        lay.addLayout(row)
        return panel

    # -- the form's API, kept on the tab (profiles, the window and tests use it) ------------------

    def set_strategies(self, ids: list[str]) -> None:
        self.form.set_strategies(ids)

    def strategies(self) -> list[str]:
        return self.form.strategies()

    def set_batch_sizes(self, sizes: list[int]) -> None:
        self.form.set_batch_sizes(sizes)

    def set_workers(self, workers: list[int]) -> None:
        self.form.set_workers(workers)

    def set_sample(self, rows: int) -> None:
        self.form.set_sample(rows)

    def set_repeat(self, repeat: int) -> None:
        self.form.set_repeat(repeat)

    def set_budget(self, seconds: float) -> None:
        self.form.set_budget(seconds)

    def set_rtt(self, ms: float) -> None:
        self.form.set_rtt(ms)

    def compare_settings(self) -> dict[str, Any]:
        """The set-up as plain TOML-ready values (a profile's [compare] section)."""
        return self.form.compare_settings()

    def apply_compare_settings(self, settings: dict[str, Any]) -> None:
        self.form.apply_compare_settings(settings)

    def showEvent(self, event: QShowEvent) -> None:  # noqa: N802
        self.form.refresh_availability(self._window.current_spec())
        super().showEvent(event)

    # -- sessions -----------------------------------------------------------------------------

    @property
    def sessions(self) -> list[CompareSession]:
        """Every comparison of this window, newest last."""
        return self.sessions_box.sessions

    def shown_sessions(self) -> list[CompareSession]:
        """The ticked sessions, oldest first."""
        return self.sessions_box.shown()

    def show_sessions(self, sessions: list[CompareSession]) -> None:
        """Tick exactly these sessions (side by side, in the order they ran)."""
        self.sessions_box.show_only(sessions)

    def _refresh_view(self) -> None:
        if self._status_of is not None and not any(s is self._status_of for s in self.sessions):
            self._show_idle()  # the status spoke of a session that was removed
        shown = self.shown_sessions()
        self.model.set_sessions(shown)
        self.table.setColumnHidden(CompareModel.COL_SESSION, len(shown) < 2)
        self.shown_label.setText(shown_text(shown))
        self._redraw.stop()
        self.charts.show_sessions(shown)
        self._set_buttons()

    _status_of: CompareSession | None = None  # the session the status line and progress bar speak of

    def _show_idle(self) -> None:
        self._status_of = None
        progress_bar.plain_colours(self.progress)
        self.progress.setRange(0, 1)
        self.progress.setValue(0)
        self.progress.setFormat("idle")
        self.status.setText(IDLE_STATUS)

    def _show_failed_bar(self, text: str) -> None:
        progress_bar.show_failed(self.progress, text)

    def _on_redraw_timeout(self) -> None:
        self.charts.show_sessions(self.shown_sessions())

    def charts_log_scale(self, on: bool) -> None:
        self.charts.set_log_scale(on)

    # -- running --------------------------------------------------------------------------------

    def start(self) -> None:
        if self._job is not None:
            return
        base = self._window.current_spec()
        source_rows = self._window.source_rows()
        try:
            spec = self.form.compare_spec(base, source_rows)
            asked = parse_counts(self.batch_edit.text(), "Batch rows")
        except ValueError as exc:
            QMessageBox.warning(self, "Compare", str(exc))
            return
        settings = self.form.compare_settings()
        number = max((s.number for s in self.sessions), default=0) + 1
        session = CompareSession(number, f"#{number} · {rtt_text(spec.rtt_ms)}", settings,
                                 source=base.source.path, table=base.target.table,
                                 rows=self.form.rows_measured(source_rows) if source_rows is not None else None)
        self._running = session
        self._status_of = session
        progress_bar.plain_colours(self.progress)
        self.sessions_box.add(session)
        self._generation += 1
        gen, relay = self._generation, self._relay
        self.progress.setRange(0, 0)  # busy until the first run reports
        self.progress.setFormat("starting…")
        dropped = [b for b in asked if b not in spec.batch_rows]
        self.status.setText("Preparing the sample and the scratch table…" + (
            f" Batch rows {', '.join(f'{b:,}' for b in dropped)} left out: the {session.rows:,} rows measured go "
            f"in one batch already at {min(b for b in spec.batch_rows if b >= (session.rows or 0)):,}."
            if dropped and session.rows else ""))
        job = Job(lambda _progress, _log, cancel: run_compare(
            spec, on_progress=lambda msg, done, total: relay.step.emit(gen, msg, done, total),
            on_result=lambda result: relay.result.emit(gen, result), cancel=cancel))
        job.signals.finished.connect(lambda report, j=job: self._on_finished(j, report))
        job.signals.failed.connect(lambda message, j=job: self._on_failed(j, message))
        job.signals.cancelled.connect(lambda j=job: self._on_cancelled(j))
        self._job = job
        self._set_running(True)
        job.start()

    def stop(self) -> None:
        if self._job is not None:
            self.progress.setFormat("stopping…")
            self.status.setText("Stopping: cancelling the run in flight…")
            self._job.cancel()

    def _set_running(self, running: bool) -> None:
        for w in self.form.inputs():
            w.setEnabled(not running)
        self.run_btn.setEnabled(not running)
        self.stop_btn.setEnabled(running)
        self._set_buttons()

    def _set_buttons(self) -> None:
        has_rows = self.model.rowCount() > 0
        self.apply_btn.setEnabled(has_rows)
        self.csv_btn.setEnabled(has_rows)
        self.png_btn.setEnabled(has_rows)
        self.remove_btn.setEnabled(bool(self.sessions))

    def _on_step(self, gen: int, message: str, done: int, total: int) -> None:
        if gen != self._generation or self._job is None:
            return
        self.progress.setRange(0, max(total, 1))
        self.progress.setValue(done)
        self.progress.setFormat(f"{done}/{total} runs")
        self.status.setText(message)
        self.progressed.emit(message, done, total)

    def _on_result(self, gen: int, result: CompareResult) -> None:
        session = self._running
        if gen != self._generation or self._job is None or session is None:
            return
        session.add(result)
        self.sessions_box.update_item(session)
        if any(s is session for s in self.shown_sessions()):
            self.model.update_result(session, result)
            self._set_buttons()
            if not self._redraw.isActive():
                self._redraw.start()
        self.result_added.emit(session, result)

    def _end(self, job: Job, state: str, error: str | None = None) -> CompareSession | None:
        """The session that ended, or None for a job that is no longer ours (its results are stale)."""
        if job is not self._job:
            return None
        self._job = None
        session, self._running = self._running, None
        self.progress.setRange(0, 1)
        if session is not None:
            session.state, session.error = state, error
        return session

    def _on_finished(self, job: Job, report: CompareReport) -> None:
        session = self._end(job, "done")
        if session is None:
            return
        session.finish(report)
        self.report = report
        failed = sum(1 for r in report.results if not r.runs)
        if report.results and failed == len(report.results):
            self._show_failed_bar("failed: no run finished")
        else:
            self.progress.setValue(1)
            self.progress.setFormat(f"done; {failed} failed" if failed else "done")
        self.sessions_box.update_item(session)
        self._refresh_view()
        self.table.sortByColumn(CompareModel.COL_MEDIAN, Qt.SortOrder.DescendingOrder)
        self._set_running(False)
        self.status.setText(f"{session.name}: {summary(report)}")
        self.finished.emit(report)
        self.comparison_finished.emit(session)

    def _on_failed(self, job: Job, message: str) -> None:
        session = self._end(job, "failed", message)
        if session is None:
            return
        self._show_failed_bar("failed")
        self.status.setText("Failed: " + message)
        self.sessions_box.update_item(session)
        self._refresh_view()
        self._set_running(False)
        self.failed.emit(message)
        self.comparison_finished.emit(session)
        QMessageBox.warning(self, "Compare failed", message)

    def _on_cancelled(self, job: Job) -> None:
        session = self._end(job, "stopped")
        if session is None:
            return
        self.progress.setValue(0)
        self.progress.setFormat("stopped")
        self.status.setText("Stopped. The target table was not touched; the runs that finished are kept.")
        self.sessions_box.update_item(session)
        self._refresh_view()
        self._set_running(False)
        self.cancelled.emit()
        self.comparison_finished.emit(session)

    # -- results ----------------------------------------------------------------------------------

    def selected_result(self) -> CompareResult | None:
        rows = self.table.selectionModel().selectedRows()
        if not rows:
            return None
        row = self.proxy.mapToSource(rows[0]).row()
        return self.model.results[row] if 0 <= row < len(self.model.rows) else None

    def _on_table_double_clicked(self, _index: QModelIndex) -> None:
        self.apply_selected()

    def apply_selected(self) -> None:
        result = self.selected_result()
        if result is None:
            QMessageBox.warning(self, "Compare", "Select a result row to apply.")
            return
        self.apply_result(result)

    def apply_result(self, result: CompareResult) -> None:
        if result.strategy == AUTO:  # auto stays auto: it picks again for the load
            self._window.set_strategy(AUTO)
            self._to_load_tab()
            return
        cls = get_strategy(result.strategy)
        self._window.set_strategy(result.strategy, result.batch_rows if cls.batch_sized else None,
                                  result.workers if cls.takes_workers else None)
        self._to_load_tab()

    def _to_load_tab(self) -> None:
        tabs = self._window.tabs
        titles = [tabs.tabText(i) for i in range(tabs.count())]
        tabs.setCurrentIndex(titles.index("Load") if "Load" in titles else 0)

    def export_csv(self, path: str) -> None:
        """The shown rows, each with its session, round trip and sample size."""
        if not self.model.rows:
            raise ValueError("no comparison to export yet")
        rows = [{**r.to_json(), "session": s.name if s else "", "rtt_ms": s.rtt_ms if s else "",
                 "sample_rows": (s.sample_rows or "") if s else ""} for s, r in self.model.rows]
        with open(path, "w", newline="", encoding="utf-8") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)

    def export_png(self, path: str) -> None:
        if not self.charts.isVisible() and self.charts.width() < 600:
            self.charts.resize(1200, 480)  # never laid out: give the picture a useful size
        if not self.charts.grab().save(path, "PNG"):
            raise OSError(f"cannot write {path}")

    def _on_export_csv_clicked(self) -> None:
        path, _ = QFileDialog.getSaveFileName(self, "Export comparison", "comparison.csv", "CSV (*.csv)")
        if path:
            self._export(self.export_csv, path)

    def _on_export_png_clicked(self) -> None:
        path, _ = QFileDialog.getSaveFileName(self, "Export charts", "comparison.png", "PNG images (*.png)")
        if path:
            self._export(self.export_png, path)

    def _export(self, fn: Any, path: str) -> None:
        try:
            fn(path)
        except (OSError, ValueError) as exc:
            QMessageBox.warning(self, "Export failed", str(exc))

