"""The workbench window: source, mapping, target, strategy and a live run, side by side.

The panels (ui/panels/) hold the widgets; the run controller (ui/run_controller.py) runs loads
and checks; the target controller (ui/target_controller.py) keeps the connection and the database's
tables; the mapping controller (ui/mapping_controller.py) maps the file onto its table; profile
actions (ui/profile_actions.py) open and save profiles; the foresight (ui/foresight.py) says the plan.
They share the Load tab's state (ui/state.py) and never import this module: each gets the state,
its panels and narrow interfaces, and `_connect` wires them to one another, in one place. This
module also reads the file and its preview, and keeps the public methods the tests, app/gui.py and
the Compare tab drive.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QCloseEvent, QDragEnterEvent, QDropEvent
from PySide6.QtWidgets import (
    QHeaderView,
    QMainWindow,
    QMenu,
    QMessageBox,
    QPushButton,
    QSplitter,
    QTableView,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from core import memory
from core.preview import SourceInfo
from core.sources.many import join_paths
from core.spec import ColumnMap, CommitMode, ErrorPolicy, LoadMode, LoadSpec, SourceOptions, TargetSpec
from core.target_facts import TableSize
from ui.compare.tab import CompareTab
from ui.foresight import Foresight
from ui.layout import scrolled
from ui.mapping_controller import MappingController
from ui.menus import MenuSlots, build_menus
from ui.panels.mapping import MappingPanel
from ui.panels.run import RunPanel
from ui.panels.source import SourcePanel
from ui.panels.strategy import StrategyPanel
from ui.panels.target import TargetPanel
from ui.profile_actions import ProfileActions
from ui.run_controller import RunController
from ui.run_history import RunHistory
from ui.settings import Settings
from ui.source_controller import SourceController
from ui.state import LoadState
from ui.target_controller import TargetController
from ui.wheel_guard import guard_wheel
from ui.window_state import WindowPlacement
from ui.worker import Background, Job

FORM_WIDTH = 440  # the target and strategy forms at their first start; more width goes to the grids


class MainWindow(QMainWindow):
    """Signals: source_ready(), database_ready(), mapping_ready(), run_started(object Job: a load or check
    began, after its questions), run_finished(object LoadResult),
    run_failed(str), run_cancelled(), run_refused(str), run_ended() (counters, summary, history and log
    final), check_finished(object LoadResult), table_shown(object TableDialog), server_info_shown(str).
    """

    source_ready = Signal()
    database_ready = Signal()
    mapping_ready = Signal()
    run_started = Signal(object)
    run_finished = Signal(object)
    run_failed = Signal(str)
    run_cancelled = Signal()
    run_refused = Signal(str)
    run_ended = Signal()
    check_finished = Signal(object)
    table_shown = Signal(object)
    server_info_shown = Signal(str)

    def __init__(self, settings: Settings | None = None) -> None:
        super().__init__()
        memory.limit_arenas()  # before the loads' threads: each would keep an arena of its own (core/memory.py)
        self.settings = settings or Settings.load()
        self.setWindowTitle("Sluice")
        self.setAcceptDrops(True)
        self._bg = Background(self, self.on_background_failed)
        self.state = LoadState(self)  # the file, the server, the target's size, the run: shared by the parts
        self._build()
        s, t, g, r = self.source_panel, self.target_panel, self.strategy_panel, self.run_panel
        state, spec, bg = self.state, self.current_spec, self.background
        self.kept = RunHistory(self, spec)  # runs and comparisons into the History tab
        self.profiles = ProfileActions(self.settings, self.kept.model, self.compare_tab, self, spec=spec,
                                       table_name=t.table_name)
        self.sources = SourceController(state, s, t, g, self, bg, self.profiles.file_dialog)
        self.history = self.kept.model
        self.history_view.setModel(self.history)
        self.targets = TargetController(state, t, self.settings, self, bg)
        self.maps = MappingController(state, self.mapping_panel, t, self, bg, s.all_script_tables)
        self.runs = RunController(state, r, g, self.settings, self, spec=spec, mapping=self.maps, server=self.targets,
                                  background=bg, all_script_tables=s.all_script_tables, history=self.kept)
        # The plan for the next run, said before it starts.
        self.foresight = Foresight(state, t, g, r, self, spec=spec, mapping=self.maps, background=bg)
        self._connect()
        self.wheel_guard = guard_wheel(self)  # a wheel scrolls the forms; it changes no unfocused value

    # The shared state under the window's old names (tests read them).
    @property
    def source_info(self) -> SourceInfo | None:
        return self.state.source_info

    @property
    def target_size(self) -> TableSize | None:
        return self.state.target_size  # the existing target's rows, looked up with its columns

    @property
    def last_error(self) -> str:
        return self.state.last_error

    # -- layout ---------------------------------------------------------------------------

    def _build(self) -> None:
        self.source_panel = SourcePanel()
        self.mapping_panel = MappingPanel()
        self.target_panel = TargetPanel(list(self.settings.connections))
        self.strategy_panel = StrategyPanel()
        self.run_panel = RunPanel()
        self._alias_widgets()
        tabs = QTabWidget()
        self.setCentralWidget(tabs)
        top = QSplitter(Qt.Orientation.Horizontal)
        top.setChildrenCollapsible(False)  # a panel dragged narrow stays readable, never vanishes
        top.addWidget(self.source_panel)
        top.addWidget(self.mapping_panel)
        # A short screen scrolls the forms, not the window.
        top.addWidget(scrolled(self._form_column(), vertical_only=True))
        for i, stretch in enumerate((2, 4, 0)):  # the form keeps its width; more or less goes to the grids
            top.setStretchFactor(i, stretch)
        vsplit = QSplitter(Qt.Orientation.Vertical)
        vsplit.setChildrenCollapsible(False)
        vsplit.addWidget(top)
        vsplit.addWidget(self.run_panel)
        vsplit.setSizes([560, 340])  # the forms above get the height first
        vsplit.setStretchFactor(0, 3)  # a taller window: more rows in the grids above and the lists below
        vsplit.setStretchFactor(1, 2)
        # Below the panels' smallest sizes (1024x700) the Load tab scrolls instead of growing the window.
        tabs.addTab(scrolled(vsplit), "Load")
        self.compare_tab: CompareTab = CompareTab(self)
        tabs.addTab(self.compare_tab, "Compare")
        hist: QTableView = QTableView()
        hist.setWordWrap(False)
        hist.setTabKeyNavigation(False)
        header = hist.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setResizeContentsPrecision(0)  # sized to the rows in sight: a long kept history opens at once
        header.setStretchLastSection(True)  # the error text gets the rest; whole text in the tooltip
        self.history_view: QTableView = hist
        tabs.addTab(hist, "History")
        self.tabs = tabs
        self._set_tab_order()
        # Where the user left the window and its splitters; the first time, fitted to the screen.
        splitters = {"panels": top, "run": vsplit, "run_lists": self.run_panel.lists_split}
        splitters |= {f"compare_{i}": sp for i, sp in enumerate(self.compare_tab.findChildren(QSplitter))}
        self.placement = WindowPlacement(self, splitters)
        if "panels" not in self.placement.state.splitters:  # first start: the form its width, the grids the rest
            rest = max(self.width() - FORM_WIDTH, 600)
            top.setSizes([rest * 2 // 5, rest * 3 // 5, FORM_WIDTH])

    def _set_tab_order(self) -> None:
        """Tab walks the controls in reading order (source, mapping, target, strategy, run), once each;
        inside a grid the arrows move (the grids leave Tab alone), and Enter presses a focused button."""
        chain: list[QWidget] = [self.tabs.tabBar()]
        for panel in (self.source_panel, self.mapping_panel, self.target_panel, self.strategy_panel,
                      self.run_panel):
            chain += panel.focus_order()
        for first, second in zip(chain, chain[1:], strict=False):
            QWidget.setTabOrder(first, second)
        for button in chain:
            if isinstance(button, QPushButton):
                button.setAutoDefault(True)
        self.source_panel.path_edit.setFocus()  # a new window starts at the file

    def _form_column(self) -> QWidget:
        right = QWidget()
        rl = QVBoxLayout(right)
        rl.setContentsMargins(0, 0, 0, 0)
        rl.addWidget(self.target_panel)
        rl.addWidget(self.strategy_panel)
        rl.addStretch(1)
        return right

    def _alias_widgets(self) -> None:
        """The panels' widgets under the window's names (tests, profiles and the Compare tab use them)."""
        s, m, t, g, r = self.source_panel, self.mapping_panel, self.target_panel, self.strategy_panel, self.run_panel
        self.path_edit, self.format_combo, self.null_edit = s.path_edit, s.format_combo, s.null_edit
        self.script_table_combo, self.preview, self.preview_view = s.script_table_combo, s.preview, s.preview_view
        self.source_status = s.source_status
        self.mapping, self.mapping_view = m.mapping, m.mapping_view
        self.conn_combo, self.db_status, self.schema_combo = t.conn_combo, t.db_status, t.schema_combo
        self.table_combo, self.mode_combo = t.table_combo, t.mode_combo
        self.key_edit, self.ddl_edit = t.key_edit, t.ddl_edit
        self.strategy_combo, self.batch_spin, self.workers_spin = g.strategy_combo, g.batch_spin, g.workers_spin
        self.commit_combo, self.policy_combo = g.commit_combo, g.policy_combo
        self.run_btn, self.stop_btn, self.check_btn = r.run_btn, r.stop_btn, r.check_btn
        self.resume_btn, self.restart_btn, self.show_table_btn = r.resume_btn, r.restart_btn, r.show_table_btn
        self.progress, self.counters, self.summary, self.log = r.progress, r.counters, r.summary, r.log
        self.run_tabs, self.rejects, self.chart = r.run_tabs, r.rejects, r.chart
        self.open_rejects_btn = r.open_rejects_btn

    def _connect(self) -> None:
        """Every connection between the window's parts, here and nowhere else: the panels to the window's
        slots, the controllers to one another (their signals to each other's slots), and their signals to
        the window's, which tests, app/gui.py and the Compare tab listen to. The order is the order the
        slots of one signal run in."""
        t, g, r = self.target_panel, self.strategy_panel, self.run_panel
        runs, maps, targets, profiles, plan = self.runs, self.maps, self.targets, self.profiles, self.foresight
        sources = self.sources
        # The controllers' signals are the window's.
        for mine, theirs in ((runs.run_started, self.run_started), (runs.run_finished, self.run_finished),
                             (runs.run_failed, self.run_failed), (runs.run_cancelled, self.run_cancelled),
                             (runs.run_refused, self.run_refused), (runs.run_ended, self.run_ended),
                             (runs.check_finished, self.check_finished), (maps.mapping_ready, self.mapping_ready),
                             (targets.database_ready, self.database_ready), (targets.table_shown, self.table_shown),
                             (targets.server_info_shown, self.server_info_shown),
                             (sources.source_ready, self.source_ready)):
            mine.connect(theirs)
        # The target table, the mode and the mapping's edits.
        self.mapping.dataChanged.connect(self._on_mapping_changed)
        self.mapping_panel.reset_btn.clicked.connect(self.reset_mapping)
        t.table_combo.currentTextChanged.connect(self._on_table_changed)
        t.mode_combo.currentTextChanged.connect(self._on_mapping_changed)
        t.mode_combo.activated.connect(self._on_mode_picked)
        r.show_table_btn.clicked.connect(targets.show_table)
        self.compare_tab.finished.connect(self.kept.add_comparison)
        # What a finished or stopped run held goes back to the system once the window has shown its end.
        self.run_ended.connect(self._release_memory)
        self.compare_tab.comparison_finished.connect(self._release_memory)
        self.tabs.currentChanged.connect(self._on_tab_changed)
        # The shared state's changes: whoever follows one connects to the state, not to the part that made it.
        state = self.state
        state.source_changed.connect(maps.on_source_changed)  # the file's columns onto the target
        state.source_counted.connect(sources.on_source_counted)  # the source line says the rows a run counted
        state.database_changed.connect(maps.on_database_changed)  # a target that appeared, went or moved server
        state.job_changed.connect(runs.on_job_changed)  # Run and Check, or Stop
        # Controller to controller: events that are not a change of the state.
        sources.file_changed.connect(maps.forget_file)  # edits belong to the file they were made on
        sources.file_changed.connect(runs.forget_result)  # the last file's result is not this one's
        sources.opened.connect(profiles.remember_opened)
        maps.size_read.connect(targets.note_size)  # sizes remembered per server and table
        runs.facts_read.connect(targets.note_facts)  # a table list that disagrees is read again
        runs.tables_changed.connect(targets.refresh_table_list_quietly)
        runs.table_created.connect(maps.table_created)  # the next run appends
        maps.waiting.connect(r.progress.setFormat)
        profiles.profile_opened.connect(self.apply_spec)
        profiles.file_chosen.connect(self.open_file)
        for speaker in (targets, maps, profiles, self.kept):
            speaker.said.connect(r.log_line)
        for failing in (sources, targets, maps, runs, profiles):
            failing.failed.connect(self.on_background_failed)
        recent = build_menus(self, MenuSlots(
            open_file=sources.on_open_clicked, open_folder=sources.on_open_folder_clicked,
            open_profile=profiles.on_open_profile, save_profile=profiles.on_save_profile,
            export_history=profiles.on_export_history, clear_history=self.kept.clear, reset_mapping=self.reset_mapping,
            start_run=self.start_run, check_run=self.check_run, stop_run=self.stop_run,
            show_table=targets.show_table, server_info=targets.show_server_info))
        self.recent_menu, self.recent_profiles_menu = recent
        profiles.set_recent_menus(*recent)
        # The plan line asks again after each change of the set-up (a moment after the last one): the panels'
        # fields, the mapping, and the state's source, connection, table list and target size.
        for signal in (g.strategy_combo.currentIndexChanged, g.commit_combo.currentIndexChanged,
                       g.policy_combo.currentIndexChanged, g.batch_spin.valueChanged, g.workers_spin.valueChanged,
                       t.mode_combo.currentIndexChanged, t.table_combo.currentTextChanged,
                       t.schema_combo.currentTextChanged, self.mapping.modelReset, self.mapping.dataChanged,
                       state.source_changed, state.connection_changed, state.database_changed,
                       state.target_size_changed):
            signal.connect(plan.schedule)
        # What auto chose for the last run is stale once the user changes the settings, the table or the
        # server (not the mapping or mode a create run switches by itself: the note stays after that run).
        for signal in (g.commit_combo.currentIndexChanged, g.policy_combo.currentIndexChanged,
                       g.batch_spin.valueChanged, g.workers_spin.valueChanged, t.table_combo.currentTextChanged,
                       t.schema_combo.currentTextChanged, state.connection_changed):
            signal.connect(plan.on_setup_changed)
        # A plan belongs to one server: a switch clears it at once, and the new server's table list asks again.
        state.connection_changed.connect(plan.on_connection_changed)
        # Once a run ends, the plan for the next one (LoadState.job_changed to None).
        state.job_changed.connect(plan.on_job_changed)

    def _on_tab_changed(self, index: int) -> None:
        if self.tabs.widget(index) is self.history_view:
            self.history.refresh()  # runs of the command line since the last look
            self.history_view.scrollToBottom()  # the newest run

    def _release_memory(self, *_args: Any) -> None:
        QTimer.singleShot(0, memory.release)

    # -- background work -------------------------------------------------------------------

    def background(self, fn: Any, on_done: Any, on_fail: Any | None = None) -> Job:
        """Run `fn` on a worker; `on_done(result)` / `on_fail(message)` on the GUI thread while the window lives."""
        return self._bg.start(fn, on_done, on_fail)

    @property
    def _jobs(self) -> set[Job]:
        return self._bg.jobs

    def on_background_failed(self, message: str) -> None:
        self.state.last_error = message
        self.run_panel.log_line("error: " + message)
        QMessageBox.warning(self, "Sluice", message)

    # -- source (ui/source_controller.py reads it) -----------------------------------------------

    recent_menu: QMenu  # File > Recent files and Recent profiles (ui/menus.py makes them)
    recent_profiles_menu: QMenu

    def open_file(self, path: str, options: SourceOptions | None = None, *, keep_target: bool = False) -> None:
        """Preview a file; a different file proposes a new table named after it (unless `keep_target`)."""
        self.sources.open_file(path, options, keep_target=keep_target)

    def _on_refresh_clicked(self) -> None:
        self.sources.refresh()

    # -- target table and mapping ------------------------------------------------------------

    def _on_mode_picked(self, _index: int) -> None:
        self.maps.mode_pinned = True  # the user's choice: no table list changes it

    def _on_table_changed(self, _text: str) -> None:
        self.maps.rebuild()

    def table_exists(self) -> bool:
        return self.maps.table_exists()

    def missing_script_tables(self) -> list[str]:
        return self.maps.missing_script_tables()

    def table_created(self) -> None:
        self.maps.table_created()

    def after_mapping(self, action: Any) -> bool:
        return self.maps.after(action)

    def reset_mapping(self) -> None:
        self.maps.reset()

    def _on_mapping_changed(self, *_args: Any) -> None:
        self.maps.changed()

    # -- the load spec ------------------------------------------------------------------------

    def set_strategy(self, strategy_id: str, batch_rows: int | None = None, workers: int | None = None) -> None:
        self.strategy_panel.set_strategy(strategy_id, batch_rows, workers)

    def source_rows(self) -> int | None:
        """The opened file's exact row count (None while unknown or only estimated)."""
        return self.sources.rows()

    def current_spec(self) -> LoadSpec:
        mode = LoadMode(self.mode_combo.currentText())
        ddl = self.ddl_edit.toPlainText().strip() if mode is LoadMode.CREATE else None
        return LoadSpec(
            source=self.sources.options(),
            target=TargetSpec(
                table=self.table_combo.currentText().strip(), schema=self.targets.schema(), mode=mode,
                key=[k.strip() for k in self.key_edit.text().split(",") if k.strip()],
                ddl=ddl if ddl and not ddl.startswith("--") else None,
            ),
            strategy=str(self.strategy_combo.currentData()),
            batch_rows=self.strategy_panel.batch_rows(),  # None at "default": the strategy's own size
            workers=self.workers_spin.value(),
            commit=CommitMode(self.commit_combo.currentText()),
            on_error=ErrorPolicy(self.policy_combo.currentText()),
            reject_limit=self.strategy_panel.reject_limit(),
            reject_limit_pct=self.strategy_panel.reject_limit_pct(),
            columns=[ColumnMap(**vars(m)) for m in self.mapping.maps] or None,
            dsn=self.targets.dsn(),
        )

    def apply_spec(self, spec: LoadSpec) -> None:
        """A profile's set-up; its mode stays as saved (a run refuses it, saying why, if it cannot apply)."""
        self.targets.set_connection_dsn(spec.dsn)
        self.targets.refresh_database()  # the tables as the server has them now, not as last read
        self.schema_combo.setEditText(spec.target.schema or "public")
        self.table_combo.setEditText(spec.target.table)
        self.mode_combo.setCurrentText(spec.target.mode.value)
        self.maps.mode_pinned = True
        self.key_edit.setText(", ".join(spec.target.key))
        self.set_strategy(spec.strategy, workers=spec.workers)
        self.strategy_panel.set_batch_rows(spec.batch_rows)  # none in the profile: back to "default"
        self.commit_combo.setCurrentText(spec.commit.value)
        self.policy_combo.setCurrentText(spec.on_error.value)
        self.strategy_panel.set_reject_limit(spec.reject_limit, spec.reject_limit_pct)
        self._pending_columns = spec.columns
        self.source_ready.connect(self._on_profile_source_ready, Qt.ConnectionType.SingleShotConnection)
        self.open_file(spec.source.path, spec.source, keep_target=True)

    _pending_columns: list[ColumnMap] | None = None

    def _on_profile_source_ready(self) -> None:
        cols = self._pending_columns
        if cols:
            info = self.state.source_info
            samples = {} if info is None or info.sample.height == 0 else {
                c: (None if info.sample[c][0] is None else str(info.sample[c][0])) for c in info.columns}
            self.mapping.reset_edits()
            self.mapping.adopt_edits(cols)  # the profile's choices are the user's: they survive a rebuild
            self.maps.profile_left_out = {c.source for c in cols if c.source and not c.include}
            self.maps.show([ColumnMap(**vars(c)) for c in cols], samples, info, self.mapping.table())

    # -- public actions (tests, menus and the Compare tab use these) ------------------------------

    def open_profile(self, path: str) -> None:
        self.profiles.open_profile(path)

    def save_profile(self, path: str) -> str:
        return self.profiles.save_profile(path)

    def export_history(self, path: str) -> None:
        self.profiles.export_history(path)

    def start_run(self, *, resume: bool = False, restart: bool = False) -> None:
        self.runs.start_run(resume=resume, restart=restart)

    def check_run(self) -> None:
        self.runs.check_run()

    def stop_run(self) -> None:
        self.runs.stop_run()

    def set_connection_dsn(self, dsn: str | None) -> None:
        self.targets.set_connection_dsn(dsn)

    def refresh_database(self) -> None:
        self.targets.refresh_database()

    def refresh_table_list_quietly(self) -> None:
        self.targets.refresh_table_list_quietly()

    def show_server_info(self) -> None:
        self.targets.show_server_info()

    @property
    def _run_job(self) -> Job | None:
        return self.runs.job

    @property
    def _last_progress(self) -> Any:
        return self.runs.last_progress

    # -- window events -------------------------------------------------------------------------

    def dragEnterEvent(self, event: QDragEnterEvent) -> None:  # noqa: N802
        if event.mimeData().hasUrls():
            event.acceptProposedAction()

    def dropEvent(self, event: QDropEvent) -> None:  # noqa: N802
        paths = [u.toLocalFile() for u in event.mimeData().urls() if u.isLocalFile()]
        if paths:  # several files dropped: one source of them all, into one table (core.sources.many)
            self.open_file(join_paths(paths))

    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: N802
        if self.runs.job is not None:
            self.runs.job.cancel()
        self.compare_tab.stop()
        self.foresight.stop()
        self.settings.save()
        self.placement.save()  # the window's size and splitters, for the next start
        super().closeEvent(event)
