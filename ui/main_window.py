"""The workbench window: source, mapping, target, strategy and a live run, side by side.

The panels (ui/panels/) hold the widgets; the run controller (ui/run_controller.py) runs loads
and checks and keeps the history; the target controller (ui/target_controller.py) keeps the
connection and the database's tables; profile actions (ui/profile_actions.py) open and save
profiles. This module wires them: the file and its preview, the target table and its mapping,
and the public methods the tests and the Compare tab drive.
"""

from __future__ import annotations

from dataclasses import replace
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
from core.preview import SourceInfo, inspect_source
from core.sources.many import common_name, join_paths
from core.spec import ColumnMap, CommitMode, ErrorPolicy, LoadMode, LoadSpec, SourceOptions, TargetSpec
from core.target_facts import TableSize
from ui.compare.tab import CompareTab
from ui.foresight import Foresight
from ui.layout import scrolled
from ui.mapping_controller import MappingController
from ui.menus import build_menus
from ui.panels.mapping import MappingPanel
from ui.panels.run import RunPanel
from ui.panels.source import SourcePanel
from ui.panels.strategy import StrategyPanel
from ui.panels.target import TargetPanel
from ui.profile_actions import ProfileActions, table_name_for
from ui.run_controller import RunController
from ui.settings import Settings
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
        self._generation = 0  # previews of older generations are ignored
        self._bg = Background(self, self.on_background_failed)
        self.source_info: SourceInfo | None = None
        self.target_size: TableSize | None = None  # the existing target's rows, looked up with its columns
        self.last_error = ""
        self._build()
        self.runs = RunController(self)
        self.history = self.runs.history
        self.history_view.setModel(self.history)
        self.profiles = ProfileActions(self)
        self.targets = TargetController(self)
        self.maps = MappingController(self)
        self._wire()
        build_menus(self)
        self.foresight = Foresight(self)  # the plan for the next run, said before it starts
        self.wheel_guard = guard_wheel(self)  # a wheel scrolls the forms; it changes no unfocused value

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
        self.compare_tab = CompareTab(self)
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

    def _wire(self) -> None:
        s, t = self.source_panel, self.target_panel
        s.path_edit.returnPressed.connect(self._on_path_entered)
        s.open_btn.clicked.connect(self._on_open_clicked)
        s.refresh_btn.clicked.connect(self._on_refresh_clicked)
        s.null_everywhere_btn.clicked.connect(self._on_null_everywhere_clicked)
        s.script_table_combo.activated.connect(self._on_script_table_picked)
        self.mapping.dataChanged.connect(self._on_mapping_changed)
        self.mapping_panel.reset_btn.clicked.connect(self.reset_mapping)
        t.table_combo.currentTextChanged.connect(self._on_table_changed)
        t.mode_combo.currentTextChanged.connect(self._on_mapping_changed)
        t.mode_combo.activated.connect(self._on_mode_picked)
        self.run_panel.show_table_btn.clicked.connect(self.targets.show_table)
        self.compare_tab.finished.connect(self.runs.add_comparison)
        # What a finished or stopped run held goes back to the system once the window has shown its end.
        self.run_ended.connect(self._release_memory)
        self.compare_tab.comparison_finished.connect(self._release_memory)
        self.tabs.currentChanged.connect(self._on_tab_changed)

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
        self.last_error = message
        self.run_panel.log_line("error: " + message)
        QMessageBox.warning(self, "Sluice", message)

    # -- source ----------------------------------------------------------------------------

    def _on_open_clicked(self) -> None:
        path = self.profiles.file_dialog(
            "Open a data file (or several with the same columns, into one table)",
            "Data files (*.csv *.tsv *.txt *.parquet *.json *.ndjson *.jsonl *.xlsx *.sql *.arrow);;All files (*)",
            many=True,
        )
        if path:
            self.open_file(path)

    def _on_open_folder_clicked(self) -> None:
        """A folder of files with the same columns (monthly exports): one table (core.sources.many)."""
        path = self.profiles.file_dialog("Open a folder of files with the same columns", "", folder=True)
        if path:
            self.open_file(path)

    def _on_path_entered(self) -> None:
        self.open_file(self.path_edit.text().strip())

    def open_file(self, path: str, options: SourceOptions | None = None, *, keep_target: bool = False) -> None:
        """Preview a file; a different file proposes a new table named after it (unless `keep_target`)."""
        new_file = path != self._opened_path
        self._opened_path = path
        self.path_edit.setText(path)
        self._propose_table = new_file and not keep_target
        if new_file:
            self.mapping.reset_edits()  # edits belong to the file they were made on
            if not keep_target:
                self.maps.mode_pinned = False  # a new file's table gets the mode its table suggests
            self.maps.ddl.forget_edit()
            self.maps.profile_left_out = None
            if self.runs.job is None and not self.runs.starting:
                self.run_panel.clear_result()  # the last file's result is not this one's
                self.strategy_panel.forget_choice()
        self._load_preview(options or SourceOptions(path=path))

    recent_menu: QMenu  # File > Recent files and Recent profiles (ui/menus.py makes them)
    recent_profiles_menu: QMenu
    _propose_table = False  # the next preview names the target after its file
    _opened_path = ""

    def _on_refresh_clicked(self) -> None:
        if self.path_edit.text().strip():
            self._load_preview(self._source_options())

    def _on_null_everywhere_clicked(self) -> None:
        """The marker named by the user, not sniffed: it reads as NULL in every column."""
        if self.path_edit.text().strip():
            self._load_preview(self.source_panel.options(None))

    def _on_script_table_picked(self, _index: int) -> None:
        combo = self.script_table_combo
        picked = combo.currentData()
        self.table_combo.setEditText(str(picked or combo.itemData(1)).split(".")[-1])
        self._on_refresh_clicked()

    def _load_preview(self, options: SourceOptions) -> None:
        self._generation += 1
        gen = self._generation
        self.source_status.setText("reading…")
        self.background(lambda *_a: inspect_source(options), lambda info: self._on_source_inspected(gen, info),
                        self._on_source_failed)

    def _on_source_failed(self, message: str) -> None:
        self.source_status.setText("cannot read this file")
        self.on_background_failed(message)

    def _on_source_inspected(self, gen: int, info: SourceInfo) -> None:
        if gen != self._generation:
            return  # a newer preview is on its way
        self.source_info = info
        o = info.options
        self._remember_opened(o.path)
        self.source_panel.show_info(info)
        several = len(info.script_tables) > 1 and o.script_table is None
        self.target_panel.show_all_tables(info.script_tables if several else None)
        # Several tables load together only in append or truncate.
        self.target_panel.allow_modes({LoadMode.APPEND, LoadMode.TRUNCATE} if several else set(LoadMode))
        if self._propose_table or not self.table_combo.currentText():
            # A new file proposes a new table named after it, never the last file's table.
            self._propose_table = False
            first = o.script_table or (info.script_tables[0][0] if info.script_tables else None)
            named = common_name(list(info.files)) if info.files else o.path  # many files: their common name
            self.target_panel.set_table_quietly(first.split(".")[-1] if first else table_name_for(named))
        self.maps.rebuild()
        self.strategy_panel.allow_scripts(o.format == "sql")
        self.source_ready.emit()

    def _remember_opened(self, path: str) -> None:
        """Recent files and the last folder: only files that opened (a mistyped path is not kept)."""
        self.settings.remember("recent_files", path)
        self.profiles.remember_folder(path)
        self.profiles.refresh_recent()

    def _source_options(self) -> SourceOptions:
        # A sniffed marker keeps to the columns it was sniffed for until the user changes it.
        info = self.source_info
        if info is None or info.options.path != self.path_edit.text().strip() \
                or info.options.null != self.null_edit.text():
            return self.source_panel.options(None)
        # ...and so do the columns where an empty field is NULL beside it.
        return replace(self.source_panel.options(info.options.null_columns),
                       empty_null_columns=info.options.empty_null_columns)

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
        info = self.source_info
        if info is None or not info.rows_exact or info.options.path != self.path_edit.text().strip():
            return None
        return info.rows

    def current_spec(self) -> LoadSpec:
        mode = LoadMode(self.mode_combo.currentText())
        ddl = self.ddl_edit.toPlainText().strip() if mode is LoadMode.CREATE else None
        return LoadSpec(
            source=self._source_options(),
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
            info = self.source_info
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
