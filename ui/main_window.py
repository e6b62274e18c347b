"""The workbench window: source, mapping, target, strategy and a live run, side by side."""

from __future__ import annotations

import csv
import datetime as dt
import statistics
from pathlib import Path
from typing import Any

import shiboken6
from psycopg.conninfo import make_conninfo
from PySide6.QtCore import Qt, QUrl, Signal
from PySide6.QtGui import (
    QAction,
    QCloseEvent,
    QDesktopServices,
    QDragEnterEvent,
    QDropEvent,
    QFontDatabase,
    QKeySequence,
)
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFileDialog,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QInputDialog,
    QLabel,
    QLineEdit,
    QMainWindow,
    QMessageBox,
    QPlainTextEdit,
    QProgressBar,
    QPushButton,
    QSizePolicy,
    QSpinBox,
    QSplitter,
    QTableView,
    QTabWidget,
    QTreeView,
    QVBoxLayout,
    QWidget,
)

from core import profile
from core.db import TableRef, resolve_dsn, strip_password
from core.embedded import connection_help, data_dir
from core.errors import ConfigError, UnfinishedRun
from core.events import Progress, human_seconds
from core.job import LoadJob, LoadResult
from core.mapping import match_by_name
from core.preview import (
    DatabaseInfo,
    SourceInfo,
    TableRows,
    TableSize,
    committed,
    ddl_preview,
    first_rows,
    inspect_database,
    inspect_source,
    inspect_table,
    table_size,
)
from core.spec import ColumnMap, CommitMode, ErrorPolicy, LoadMode, LoadSpec, SourceOptions, TargetSpec
from core.strategies.base import all_strategies
from ui import dialogs
from ui.charts import ThroughputChart
from ui.compare_tab import CompareTab
from ui.mapping_delegate import MappingDelegate
from ui.settings import Settings
from ui.table_models import HistoryModel, MappingModel, PreviewModel, RejectsModel
from ui.worker import Job

EMBEDDED = "Local (embedded)"
FORMATS = ["(auto)", "csv", "tsv", "parquet", "json", "ndjson", "excel", "sql", "arrow"]


NULL_TIP = "Text that means NULL, e.g. NA or \\N (empty: an empty unquoted field is NULL, \"\" is empty text)"

class MainWindow(QMainWindow):
    """Signals: source_ready(), database_ready(), mapping_ready(), run_finished(object LoadResult),
    run_failed(str), run_cancelled(), run_refused(str), run_ended() (counters, summary, history and log
    final), check_finished(object LoadResult), table_shown(object TableDialog), server_info_shown(str).
    """

    source_ready = Signal()
    database_ready = Signal()
    mapping_ready = Signal()
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
        self.settings = settings or Settings.load()
        self.setWindowTitle("Sluice")
        self.setAcceptDrops(True)
        self.resize(1500, 940)
        self._generation = 0  # jobs of older generations are ignored
        self._run_job: Job | None = None
        self._jobs: set[Job] = set()
        self._info: SourceInfo | None = None
        self._mapping_gen = 0  # the newest mapping request; older table look-ups are dropped
        self._confirmed: set[tuple[str, str | None, str]] = set()  # (file, schema, table) appends the user allowed
        self._reject_files: dict[tuple[str, str], str] = {}  # (file, table) -> reject file of its last run
        self._last_progress: Progress | None = None
        self._run_kind = "load"  # or "check"
        self.table_dialog: dialogs.TableDialog | None = None
        self.last_error = ""
        self._passwords: dict[str, str] = {}  # this session only; never written anywhere
        self._build()
        self._build_menus()
        self._on_strategy_changed()

    # -- layout ---------------------------------------------------------------------------

    def _build(self) -> None:
        tabs = QTabWidget()
        self.setCentralWidget(tabs)
        load = QWidget()
        tabs.addTab(load, "Load")
        outer = QVBoxLayout(load)
        top = QSplitter(Qt.Orientation.Horizontal)
        top.addWidget(self._source_panel())
        top.addWidget(self._mapping_panel())
        right = QWidget()
        rl = QVBoxLayout(right)
        rl.setContentsMargins(0, 0, 0, 0)
        rl.addWidget(self._target_panel())
        rl.addWidget(self._strategy_panel())
        top.addWidget(right)
        top.setSizes([420, 640, 440])
        self._top_split = top
        for i, stretch in enumerate((3, 3, 2)):  # extra width goes to the tables, not the form
            top.setStretchFactor(i, stretch)
        vsplit = QSplitter(Qt.Orientation.Vertical)
        vsplit.addWidget(top)
        vsplit.addWidget(self._run_panel())
        vsplit.setSizes([480, 420])
        outer.addWidget(vsplit)
        self.compare_tab = CompareTab(self)
        tabs.addTab(self.compare_tab, "Compare")
        self.compare_tab.finished.connect(self._on_compare_finished)
        self.history = HistoryModel()
        hist = QTableView()
        hist.setModel(self.history)
        hist.setWordWrap(False)
        header = hist.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setStretchLastSection(True)  # the error text gets the rest; whole text in the tooltip
        self.history_view = hist
        tabs.addTab(hist, "History")
        self.tabs = tabs

    def _source_panel(self) -> QGroupBox:
        box = QGroupBox("Source")
        lay = QVBoxLayout(box)
        row = QHBoxLayout()
        self.path_edit = QLineEdit()
        self.path_edit.setPlaceholderText("Open a CSV, Parquet, JSON, Excel or SQL file (or drop it here)")
        self.path_edit.returnPressed.connect(self._on_path_entered)
        open_btn = QPushButton("Open…")
        open_btn.clicked.connect(self._on_open_clicked)
        row.addWidget(self.path_edit)
        row.addWidget(open_btn)
        lay.addLayout(row)
        form = QHBoxLayout()
        self.format_combo = QComboBox()
        self.format_combo.addItems(FORMATS)
        self.delim_edit = QLineEdit()
        self.delim_edit.setMaximumWidth(40)
        self.delim_edit.setToolTip("Field delimiter (\\t for tab); sniffed from the file")
        self.quote_edit = QLineEdit()
        self.quote_edit.setMaximumWidth(30)
        self.header_check = QCheckBox("Header")
        self.header_check.setChecked(True)
        self.encoding_edit = QLineEdit()
        self.encoding_edit.setMinimumWidth(70)
        self.encoding_edit.setMaximumWidth(90)
        self.null_edit = QLineEdit()
        self.null_edit.setMaximumWidth(60)
        self.null_edit.setToolTip(NULL_TIP)
        # Two short rows rather than one long one: the panel stays narrow and the mapping gets the width.
        dialect = QHBoxLayout()
        for label, w in (("Format", self.format_combo), ("Delim", self.delim_edit), ("Quote", self.quote_edit),
                         ("Encoding", self.encoding_edit)):
            dialect.addWidget(QLabel(label))
            dialect.addWidget(w)
        dialect.addStretch(1)
        lay.addLayout(dialect)
        form.addWidget(QLabel("NULL"))
        form.addWidget(self.null_edit)
        form.addWidget(self.header_check)
        self.script_table_label = QLabel("Table")
        self.script_table_combo = QComboBox()
        self.script_table_combo.setToolTip(
            "This SQL script fills several tables: load all of them (each into its own table, in one "
            "transaction) or pick one"
        )
        self.script_table_combo.activated.connect(self._on_script_table_picked)
        form.addWidget(self.script_table_label)
        form.addWidget(self.script_table_combo)
        self._show_script_tables([], None)
        refresh = QPushButton("Apply")
        refresh.setToolTip("Re-read the preview with these options")
        refresh.clicked.connect(self._on_refresh_clicked)
        form.addStretch(1)
        form.addWidget(refresh)
        lay.addLayout(form)
        self.preview = PreviewModel()
        view = QTableView()
        view.setModel(self.preview)
        view.horizontalHeader().setDefaultSectionSize(110)
        view.verticalHeader().setDefaultSectionSize(22)
        view.setWordWrap(False)
        self.preview_view = view
        lay.addWidget(view)
        self.source_status = QLabel("No file yet.")
        lay.addWidget(self.source_status)
        return box

    def _mapping_panel(self) -> QGroupBox:
        box = QGroupBox("Mapping")
        lay = QVBoxLayout(box)
        self.mapping = MappingModel()
        self.mapping.dataChanged.connect(self._on_mapping_changed)
        view = QTableView()
        view.setModel(self.mapping)
        view.setItemDelegate(MappingDelegate(view))
        view.setWordWrap(False)
        view.verticalHeader().setVisible(False)
        view.verticalHeader().setDefaultSectionSize(22)
        header = view.horizontalHeader()
        # Fixed widths: a long sample or name must not push the target type and warning out of sight.
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        for col, width in enumerate((96, 64, 96, 112, 50)):
            header.resizeSection(col, width)
        header.setMinimumSectionSize(30)
        header.setStretchLastSection(True)
        view.setTextElideMode(Qt.TextElideMode.ElideRight)
        self.mapping_view = view
        lay.addWidget(view)
        row = QHBoxLayout()
        self.mapping_hint = QLabel("Edit target names and types (your edits are kept); untick a column to skip it.")
        self.mapping_hint.setWordWrap(True)
        reset = QPushButton("Reset mapping")
        reset.setToolTip("Forget your edits of names, types and ticks: back to what the file and table suggest")
        reset.clicked.connect(self.reset_mapping)
        row.addWidget(self.mapping_hint, 1)
        row.addWidget(reset)
        lay.addLayout(row)
        return box

    def _target_panel(self) -> QGroupBox:
        box = QGroupBox("Target")
        form = QFormLayout(box)
        conn_row = QHBoxLayout()
        self.conn_combo = QComboBox()
        self.conn_combo.setEditable(True)
        self.conn_combo.addItem(EMBEDDED)
        for name in self.settings.connections:
            self.conn_combo.addItem(name)
        self.conn_combo.setToolTip("Local (embedded) needs nothing; or type a DSN such as host=db user=me dbname=dw")
        test_btn = QPushButton("Connect")
        test_btn.clicked.connect(self._on_connect_clicked)
        add_btn = QPushButton("New…")
        add_btn.setToolTip("Save a connection (host, port, database, user, SSL mode); passwords are never saved")
        add_btn.clicked.connect(self._on_new_connection_clicked)
        conn_row.addWidget(self.conn_combo, 1)
        conn_row.addWidget(test_btn)
        conn_row.addWidget(add_btn)
        form.addRow("Connection", conn_row)
        self.db_status = QLabel("not connected")
        # A long server banner must not widen the whole column: cut it, whole text in the tooltip.
        self.db_status.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        form.addRow("", self.db_status)
        self.schema_combo = QComboBox()
        self.schema_combo.setEditable(True)
        self.schema_combo.addItem("public")
        self.schema_combo.currentTextChanged.connect(self._on_schema_changed)
        form.addRow("Schema", self.schema_combo)
        self.table_combo = QComboBox()
        self.table_combo.setEditable(True)
        self.table_combo.currentTextChanged.connect(self._on_table_changed)
        form.addRow("Table", self.table_combo)
        self.mode_combo = QComboBox()
        self.mode_combo.addItems([m.value for m in LoadMode])
        self.mode_combo.currentTextChanged.connect(self._on_mapping_changed)
        form.addRow("Mode", self.mode_combo)
        self.key_edit = QLineEdit()
        self.key_edit.setPlaceholderText("key columns for upsert, comma-separated")
        form.addRow("Key", self.key_edit)
        self.ddl_edit = QPlainTextEdit()
        self.ddl_edit.setMaximumHeight(70)
        self.ddl_edit.setToolTip("CREATE TABLE used in mode 'create'; edit it freely")
        form.addRow("New table DDL", self.ddl_edit)
        return box

    def _strategy_panel(self) -> QGroupBox:
        box = QGroupBox("Strategy")
        form = QFormLayout(box)
        self.strategy_combo = QComboBox()
        self._strategies = all_strategies()
        for cls in self._strategies:
            self.strategy_combo.addItem(f"{cls.id} — {cls.title}", cls.id)
        self.strategy_combo.setCurrentIndex([c.id for c in self._strategies].index("copy-csv"))
        self.strategy_combo.currentIndexChanged.connect(self._on_strategy_changed)
        form.addRow("Strategy", self.strategy_combo)
        self.strategy_help = QLabel()
        self.strategy_help.setWordWrap(True)
        form.addRow("", self.strategy_help)
        self.batch_spin = QSpinBox()
        self.batch_spin.setRange(1, 10_000_000)
        self.batch_spin.setValue(10_000)
        self.batch_spin.setSingleStep(1000)
        self.workers_spin = QSpinBox()
        self.workers_spin.setRange(1, 32)
        self.workers_spin.setValue(2)
        row = QHBoxLayout()
        row.addWidget(QLabel("Batch rows"))
        row.addWidget(self.batch_spin)
        row.addWidget(QLabel("Workers"))
        row.addWidget(self.workers_spin)
        form.addRow(row)
        self.commit_combo = QComboBox()
        self.commit_combo.addItems([m.value for m in CommitMode])
        self.policy_combo = QComboBox()
        self.policy_combo.addItems([m.value for m in ErrorPolicy])
        row2 = QHBoxLayout()
        row2.addWidget(QLabel("Commit"))
        row2.addWidget(self.commit_combo)
        row2.addWidget(QLabel("On error"))
        row2.addWidget(self.policy_combo)
        form.addRow(row2)
        return box

    def _run_panel(self) -> QGroupBox:
        box = QGroupBox("Run")
        lay = QHBoxLayout(box)
        left = QVBoxLayout()
        buttons = QHBoxLayout()
        self.run_btn = QPushButton("Run  (Ctrl+R)")
        self.run_btn.clicked.connect(self.start_run)
        self.stop_btn = QPushButton("Stop  (Esc)")
        self.stop_btn.setEnabled(False)
        self.stop_btn.clicked.connect(self.stop_run)
        # Shown when a per-batch run stopped midway (or an earlier one did): go on, or start over.
        self.resume_btn = QPushButton("Resume")
        self.resume_btn.setToolTip("Continue the interrupted per-batch load after its last committed batch")
        self.resume_btn.clicked.connect(lambda: self.start_run(resume=True))
        self.restart_btn = QPushButton("Start over")
        self.restart_btn.setToolTip("Load every row again; rows the earlier run committed stay in the table")
        self.restart_btn.clicked.connect(lambda: self.start_run(restart=True))
        self.check_btn = QPushButton("Check")
        self.check_btn.setToolTip("Run the load with these settings inside a transaction that is rolled back: "
                                  "see which rows would be rejected, and the rate, without changing the table")
        self.check_btn.clicked.connect(self.check_run)
        self.show_table_btn = QPushButton("Show table")
        self.show_table_btn.setToolTip("The first 1,000 rows of the target table (read-only)")
        self.show_table_btn.setEnabled(False)
        self.show_table_btn.clicked.connect(self.show_table)
        buttons.addWidget(self.run_btn)
        buttons.addWidget(self.stop_btn)
        buttons.addWidget(self.check_btn)
        buttons.addWidget(self.resume_btn)
        buttons.addWidget(self.restart_btn)
        buttons.addWidget(self.show_table_btn)
        self._set_resumable(False)
        left.addLayout(buttons)
        self.progress = QProgressBar()
        self.progress.setRange(0, 1000)
        self.progress.setFormat("idle")
        left.addWidget(self.progress)
        self.counters = QLabel()
        # Fixed-width digits in fixed-width fields: the layout does not shift while the numbers grow.
        mono = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)
        mono.setPointSize(10)
        mono.setBold(True)
        self.counters.setFont(mono)
        self._show_counters(0, 0, 0)
        left.addWidget(self.counters)
        self.summary = QLabel("")
        self.summary.setWordWrap(True)
        left.addWidget(self.summary)
        self.log = QPlainTextEdit()
        self.log.setReadOnly(True)
        self.log.setMaximumBlockCount(20_000)
        self.run_tabs = QTabWidget()
        self.run_tabs.addTab(self.log, "Log")
        rejected = QWidget()
        rl = QVBoxLayout(rejected)
        rl.setContentsMargins(0, 0, 0, 0)
        self.rejects = RejectsModel()
        self.rejects_view = QTableView()
        self.rejects_view.setModel(self.rejects)
        self.rejects_view.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        self.rejects_view.horizontalHeader().setStretchLastSection(True)
        self.rejects_view.setWordWrap(False)
        self.rejects_view.verticalHeader().setVisible(False)
        self.rejects_view.verticalHeader().setDefaultSectionSize(22)
        for col, width in enumerate((44, 44, 64, 64, 320)):
            self.rejects_view.setColumnWidth(col, width)
        rl.addWidget(self.rejects_view)
        self.open_rejects_btn = QPushButton("Open reject file")
        self.open_rejects_btn.setEnabled(False)
        self.open_rejects_btn.clicked.connect(self._open_reject_file)
        rl.addWidget(self.open_rejects_btn)
        self.run_tabs.addTab(rejected, "Rejected rows")
        left.addWidget(self.run_tabs)
        holder = QWidget()
        holder.setLayout(left)
        holder.setMinimumWidth(480)
        holder.setMaximumWidth(620)
        lay.addWidget(holder)
        self.chart = ThroughputChart()
        lay.addWidget(self.chart, 1)
        return box

    def _build_menus(self) -> None:
        file_menu = self.menuBar().addMenu("&File")
        self._action(file_menu, "&Open file…", QKeySequence.StandardKey.Open, self._on_open_clicked)
        self.recent_menu = file_menu.addMenu("Recent files")
        file_menu.addSeparator()
        self._action(file_menu, "Open &profile…", "Ctrl+Shift+O", self._on_open_profile)
        self._action(file_menu, "&Save profile…", QKeySequence.StandardKey.Save, self._on_save_profile)
        self.recent_profiles_menu = file_menu.addMenu("Recent profiles")
        self._action(file_menu, "Export &history as CSV…", None, self._on_export_history)
        file_menu.addSeparator()
        self._action(file_menu, "&Quit", QKeySequence.StandardKey.Quit, self.close)
        map_menu = self.menuBar().addMenu("&Mapping")
        self._action(map_menu, "&Reset mapping", None, self.reset_mapping)
        run_menu = self.menuBar().addMenu("&Run")
        self._action(run_menu, "&Run load", "Ctrl+R", self.start_run)
        self.addAction(self._action(run_menu, "Run (F5)", "F5", self.start_run))
        self._action(run_menu, "&Check before loading (rolled back)", "Ctrl+K", self.check_run)
        self._action(run_menu, "&Stop", "Esc", self.stop_run)
        self._action(run_menu, "Show &table", "Ctrl+T", self.show_table)
        server_menu = self.menuBar().addMenu("&Server")
        self._action(server_menu, "&Connection details (DSN, psql)…", None, self.show_server_info)
        self._refresh_recent()

    def _action(self, menu: Any, text: str, shortcut: Any, slot: Any) -> QAction:
        act = QAction(text, self)
        if shortcut is not None:
            act.setShortcut(QKeySequence(shortcut))
        act.triggered.connect(slot)
        menu.addAction(act)
        return act

    def _refresh_recent(self) -> None:
        for menu, items, opener in (
            (self.recent_menu, self.settings.recent_files, self.open_file),
            (self.recent_profiles_menu, self.settings.recent_profiles, self.open_profile),
        ):
            menu.clear()
            for path in items:
                act = menu.addAction(path)
                act.triggered.connect(lambda _=False, p=path, o=opener: o(p))
            menu.setEnabled(bool(items))

    # -- background work -------------------------------------------------------------------

    def _start(self, fn: Any, on_done: Any, on_fail: Any | None = None) -> Job:
        job = Job(fn)
        self._jobs.add(job)
        job.signals.finished.connect(self._while_alive(on_done))
        job.signals.failed.connect(self._while_alive(on_fail or self._on_background_failed))
        for sig in (job.signals.finished, job.signals.failed, job.signals.cancelled):
            sig.connect(lambda *_a, j=job: self._jobs.discard(j))
        return job.start()

    def _while_alive(self, fn: Any) -> Any:
        """A background result may arrive after the window is gone (closed, or a test ended): drop it."""

        def call(*args: Any) -> None:
            if shiboken6.isValid(self):
                fn(*args)

        return call

    def _on_background_failed(self, message: str) -> None:
        self.last_error = message
        self._log("error: " + message)
        QMessageBox.warning(self, "Sluice", message)

    def _log(self, text: str) -> None:
        """Append to the log and follow its newest line."""
        self.log.appendPlainText(text)
        bar = self.log.verticalScrollBar()
        bar.setValue(bar.maximum())

    # -- source ----------------------------------------------------------------------------

    def _start_folder(self) -> str:
        """The last folder a file was opened from or saved to, else home."""
        folder = self.settings.last_folder
        return folder if folder and Path(folder).is_dir() else str(Path.home())

    def _file_dialog(self, title: str, filters: str, *, save: bool = False, name: str = "") -> str:
        dlg = QFileDialog(self, title, self._start_folder(), filters)
        dlg.setAcceptMode(QFileDialog.AcceptMode.AcceptSave if save else QFileDialog.AcceptMode.AcceptOpen)
        dlg.setFileMode(QFileDialog.FileMode.AnyFile if save else QFileDialog.FileMode.ExistingFile)
        dlg.setViewMode(QFileDialog.ViewMode.Detail)
        if save and "*." in filters:
            dlg.setDefaultSuffix(filters.split("*.")[1].split(")")[0].split()[0])  # and asks before overwriting
        if name:
            dlg.selectFile(name)
        dlg.setOption(QFileDialog.Option.DontUseNativeDialog, True)  # the same readable dialog everywhere
        dlg.resize(960, 560)
        for view in dlg.findChildren(QTreeView):
            # Readable columns: names not cut at 150 px, sizes and dates not elided ("629...tes").
            for col, width in enumerate((330, 90, 110, 170)):
                view.header().resizeSection(col, width)
        if not dlg.exec() or not dlg.selectedFiles():
            return ""
        path = dlg.selectedFiles()[0]
        self._remember_folder(path)
        return path

    def _remember_folder(self, path: str) -> None:
        self.settings.last_folder = str(Path(path).parent)
        self.settings.save()

    def _on_open_clicked(self) -> None:
        path = self._file_dialog(
            "Open a data file",
            "Data files (*.csv *.tsv *.txt *.parquet *.json *.ndjson *.jsonl *.xlsx *.sql *.arrow);;All files (*)",
        )
        if path:
            self.open_file(path)

    def _on_path_entered(self) -> None:
        self.open_file(self.path_edit.text().strip())

    def open_file(self, path: str, options: SourceOptions | None = None, *, keep_target: bool = False) -> None:
        """Preview a file; a different file proposes a new table named after it (unless `keep_target`)."""
        new_file = path != self._opened_path
        self._opened_path = path
        self.path_edit.setText(path)
        self.settings.remember("recent_files", path)
        self._remember_folder(path)
        self._refresh_recent()
        self._propose_table = new_file and not keep_target
        if new_file:
            self.mapping.reset_edits()  # edits belong to the file they were made on
        self._load_preview(options or SourceOptions(path=path))

    _propose_table = False  # the next preview names the target after its file
    _opened_path = ""

    def _on_refresh_clicked(self) -> None:
        if self.path_edit.text().strip():
            self._load_preview(self._source_options())

    def _show_script_tables(self, tables: list[tuple[str, int]], picked: str | None) -> None:
        """The pick-list of a script's tables; hidden unless it fills several."""
        combo = self.script_table_combo
        combo.blockSignals(True)
        combo.clear()
        if len(tables) > 1:
            combo.addItem(f"all {len(tables)} tables ({sum(n for _, n in tables):,} rows)", None)
            for name, rows in tables:
                combo.addItem(f"{name} ({rows:,} rows)", name)
            combo.setCurrentIndex(max(combo.findData(picked), 0) if picked else 0)
        combo.blockSignals(False)
        combo.setVisible(len(tables) > 1)
        self.script_table_label.setVisible(len(tables) > 1)

    def _on_script_table_picked(self, _index: int) -> None:
        picked = self.script_table_combo.currentData()
        self.table_combo.setEditText(str(picked or self.script_table_combo.itemData(1)).split(".")[-1])
        self._on_refresh_clicked()

    def _load_preview(self, options: SourceOptions) -> None:
        self._generation += 1
        gen = self._generation
        self.source_status.setText("reading…")
        self._start(lambda *_a: inspect_source(options), lambda info: self._on_source_inspected(gen, info),
                    self._on_source_failed)

    def _on_source_failed(self, message: str) -> None:
        self.source_status.setText("cannot read this file")
        self._on_background_failed(message)

    def _on_source_inspected(self, gen: int, info: SourceInfo) -> None:
        if gen != self._generation:
            return  # a newer preview is on its way
        self._info = info
        o = info.options
        self.format_combo.setCurrentText(o.format or "(auto)")
        self.delim_edit.setText("\\t" if o.delimiter == "\t" else (o.delimiter or ""))
        self.quote_edit.setText(o.quote or "")
        self.header_check.setChecked(o.header is not False)
        self.encoding_edit.setText(o.encoding or "")
        self.null_edit.setText(o.null or "")
        self.preview.set_frame(info.sample, info.types, info.bad)
        self.preview_view.clearSpans()
        for row in self.preview.bad_rows():
            self.preview_view.setSpan(row, 0, 1, max(1, len(info.columns)))
        note = info.null_note()
        bad = f" and {len(info.bad)} malformed record{'s' if len(info.bad) != 1 else ''} (marked ⚠)" if info.bad else ""
        self.source_status.setText(
            f"{o.format}: {len(info.columns)} columns, {info.rows_text()}; showing {info.sample.height} rows{bad}"
            + (f"; {note}" if note else ""))
        self.null_edit.setToolTip(f"{NULL_TIP}\nSniffed: {note}" if note else NULL_TIP)
        self._show_script_tables(info.script_tables, o.script_table)
        if self._propose_table or not self.table_combo.currentText():
            # A new file proposes a new table named after it, never the last file's table.
            self._propose_table = False
            first = o.script_table or (info.script_tables[0][0] if info.script_tables else None)
            self.table_combo.blockSignals(True)
            self.table_combo.setEditText(first.split(".")[-1] if first else _table_name_for(o.path))
            self.table_combo.blockSignals(False)
        self._rebuild_mapping()
        is_sql = o.format == "sql"
        for i, cls in enumerate(self._strategies):
            item = self.strategy_combo.model().item(i)  # type: ignore[attr-defined]
            item.setEnabled(is_sql or not cls.script_only)
        self.source_status.setText(self.source_status.text())
        self.source_ready.emit()

    def _sniffed_null_columns(self) -> list[str] | None:
        info = self._info
        if info is None or info.options.path != self.path_edit.text().strip():
            return None
        return info.options.null_columns if info.options.null == self.null_edit.text() else None

    def _source_options(self) -> SourceOptions:
        fmt = self.format_combo.currentText()
        delim = self.delim_edit.text()
        return SourceOptions(
            path=self.path_edit.text().strip(),
            format=None if fmt == "(auto)" else fmt,
            delimiter=("\t" if delim in ("\\t", "tab") else delim) or None,
            quote=self.quote_edit.text() or None,
            header=self.header_check.isChecked(),
            encoding=self.encoding_edit.text() or None,
            null=self.null_edit.text(),
            # A sniffed marker keeps to the columns it was sniffed for until the user changes it.
            null_columns=self._sniffed_null_columns(),
            script_table=self.script_table_combo.currentData() if self.script_table_combo.count() > 1 else None,
        )

    # -- target and mapping ------------------------------------------------------------------

    def dsn(self) -> str | None:
        """The active DSN; a password typed this session is added in memory, never saved."""
        text = self.conn_combo.currentText().strip()
        if not text or text == EMBEDDED:
            return None
        dsn = self.settings.connections.get(text, text)
        password = self._passwords.get(text)
        return make_conninfo(dsn, password=password) if password else dsn

    def _on_new_connection_clicked(self) -> None:
        from ui.connections import ConnectionDialog

        dlg = ConnectionDialog(self)
        if dlg.exec() and dlg.name.text().strip():
            name = dlg.name.text().strip()
            self.settings.connections[name] = dlg.dsn()
            self.settings.save()
            if dlg.password.text():
                self._passwords[name] = dlg.password.text()
            if self.conn_combo.findText(name) < 0:
                self.conn_combo.addItem(name)
            self.conn_combo.setCurrentText(name)
            self.refresh_database()

    def set_connection_dsn(self, dsn: str | None) -> None:
        self.conn_combo.setEditText(dsn or EMBEDDED)
        edit = self.conn_combo.lineEdit()
        if edit is not None:
            edit.setCursorPosition(0)  # show where it starts (host, port), not the tail of a long DSN

    def _on_connect_clicked(self) -> None:
        self.refresh_database()

    def refresh_database(self) -> None:
        dsn = self.dsn()
        self.db_status.setText("connecting…")
        self._start(lambda *_a: inspect_database(dsn), self._on_database_inspected, self._on_database_failed)

    def _on_database_failed(self, message: str) -> None:
        self.db_status.setText("not connected")
        name = self.conn_combo.currentText().strip()
        if "password" in message.lower() and name != EMBEDDED and name not in self._passwords:
            password, ok = QInputDialog.getText(
                self, "Password", f"Password for {strip_password(self.dsn() or name)}\n(kept for this session only)",
                QLineEdit.EchoMode.Password)
            if ok and password:
                self._passwords[name] = password
                self.refresh_database()
                return
        self._on_background_failed(message)

    def _on_database_inspected(self, info: DatabaseInfo) -> None:
        self._db = info
        where = EMBEDDED if self.dsn() is None else strip_password(self.dsn() or "")
        self.db_status.setText(f"connected: PostgreSQL {info.version} ({where})")
        self.db_status.setToolTip(self.db_status.text())
        current = self.schema_combo.currentText()
        self.schema_combo.blockSignals(True)
        self.schema_combo.clear()
        self.schema_combo.addItems(info.schemas)
        self.schema_combo.setEditText(current or "public")
        self.schema_combo.blockSignals(False)
        self._on_schema_changed(self.schema_combo.currentText())
        self.database_ready.emit()

    def _on_schema_changed(self, schema: str) -> None:
        db = getattr(self, "_db", None)
        if db is None:
            return
        text = self.table_combo.currentText()
        self.table_combo.blockSignals(True)
        self.table_combo.clear()
        self.table_combo.addItems(db.tables.get(schema, []))
        self.table_combo.setEditText(text)
        self.table_combo.blockSignals(False)

    def _on_table_changed(self, _text: str) -> None:
        self._rebuild_mapping()

    def _rebuild_mapping(self) -> None:
        info = self._info
        if info is None:
            return
        table = self.table_combo.currentText().strip()
        db = getattr(self, "_db", None)
        exists = bool(db and table in db.tables.get(self.schema_combo.currentText(), []))
        samples = {c: (None if info.sample.height == 0 else info.sample[c][0]) for c in info.columns}
        samples = {k: (None if v is None else str(v)) for k, v in samples.items()}
        self._mapping_gen += 1
        gen = self._mapping_gen
        if exists:
            # Onto an existing table: by name only (never by position); the rest shows as unmatched.
            ref = TableRef(table, self.schema_combo.currentText() or None)
            dsn = self.dsn()

            def look(*_a: Any) -> tuple[Any, TableSize | None]:
                return inspect_table(dsn, ref), table_size(dsn, ref)

            def on_columns(got: tuple[Any, TableSize | None]) -> None:
                if gen != self._mapping_gen:
                    return  # the user moved on to another table or file
                cols, self._target_size = got
                self._mapping_pending = False
                if cols is None:
                    self._set_mapping(self._new_table_maps(info), samples, info, None)
                    return
                table_cols = [(c.name, c.type) for c in cols]
                self._set_mapping(match_by_name(info.columns, cols), samples, info, table_cols)

            self._mapping_pending = True
            self._start(look, on_columns, self._on_mapping_failed)
            self.mode_combo.setCurrentText(LoadMode.APPEND.value if self.mode_combo.currentText() == "create"
                                           else self.mode_combo.currentText())
        else:
            self._mapping_pending = False
            self._target_size = None
            self._set_mapping(self._new_table_maps(info), samples, info, None)
            if table:
                self.mode_combo.setCurrentText(LoadMode.CREATE.value)

    _mapping_pending = False  # the existing table's columns are on their way: a run waits for them
    _target_size: TableSize | None = None  # the existing target's rows, looked up with its columns

    def _on_mapping_failed(self, message: str) -> None:
        self._mapping_pending = False
        self._on_background_failed(message)

    def _after_mapping(self, action: Any) -> bool:
        """Run `action` once the pending mapping arrives (True), or say there is none pending (False)."""
        if not self._mapping_pending:
            return False
        self.progress.setFormat("waiting for the table's columns…")
        self.mapping_ready.connect(action, Qt.ConnectionType.SingleShotConnection)
        return True

    @staticmethod
    def _new_table_maps(info: SourceInfo) -> list[ColumnMap]:
        return [ColumnMap(target=c, source=c, type=t) for c, t in zip(info.columns, info.types)]

    def _set_mapping(
        self, maps: list[ColumnMap], samples: dict[str, str | None], info: SourceInfo | None = None,
        table: list[tuple[str, str]] | None = None,
    ) -> None:
        """Show a mapping (the user's edits laid over it); `table`: the existing target's columns."""
        self.mapping.set_mapping(maps, samples, info.sample if info is not None else None, table)
        self._on_mapping_changed()
        self.mapping_ready.emit()

    def reset_mapping(self) -> None:
        """Forget the user's edits: back to what the file and the table suggest."""
        self.mapping.reset_edits()
        self._rebuild_mapping()
        self._log("mapping reset to the suggested one")

    def _on_mapping_changed(self, *_args: Any) -> None:
        self.ddl_edit.setEnabled(self.mode_combo.currentText() == LoadMode.CREATE.value)  # used in create mode only
        left = self.mapping.unmatched()
        self.mapping_hint.setText(
            f"<span style='color:#b00020'><b>{len(left)} column{'s' if len(left) != 1 else ''} not in the table"
            f"</b> ({', '.join(m.source or m.target for m in left[:4])}{', …' if len(left) > 4 else ''}): "
            "pick a target column or untick; Run waits until then.</span>" if left else
            "Edit target names and types (your edits are kept); untick a column to skip it.")
        table = self.table_combo.currentText().strip()
        if table and self.mapping.maps and any(m.include for m in self.mapping.maps):
            try:
                self.ddl_edit.setPlainText(ddl_preview(TableRef(table, self._schema()), self.mapping.maps))
            except Exception as exc:  # noqa: BLE001 - a bad type name typed by the user
                self.ddl_edit.setPlainText(f"-- {exc}")

    def _schema(self) -> str | None:
        return self.schema_combo.currentText().strip() or None

    # -- strategy ---------------------------------------------------------------------------

    def _on_strategy_changed(self, *_args: Any) -> None:
        cls = self._strategies[self.strategy_combo.currentIndex()]
        self.strategy_help.setText(f"<b>{cls.summary}.</b><br><i>{cls.lesson}</i>")
        self.workers_spin.setEnabled(cls.id == "parallel-copy")

    def set_strategy(self, strategy_id: str, batch_rows: int | None = None, workers: int | None = None) -> None:
        ids = [c.id for c in self._strategies]
        if strategy_id in ids:
            self.strategy_combo.setCurrentIndex(ids.index(strategy_id))
        if batch_rows:
            self.batch_spin.setValue(batch_rows)
        if workers:
            self.workers_spin.setValue(workers)

    # -- the load spec and profiles ------------------------------------------------------------

    def current_spec(self) -> LoadSpec:
        mode = LoadMode(self.mode_combo.currentText())
        ddl = self.ddl_edit.toPlainText().strip() if mode is LoadMode.CREATE else None
        return LoadSpec(
            source=self._source_options(),
            target=TargetSpec(
                table=self.table_combo.currentText().strip(), schema=self._schema(), mode=mode,
                key=[k.strip() for k in self.key_edit.text().split(",") if k.strip()],
                ddl=ddl if ddl and not ddl.startswith("--") else None,
            ),
            strategy=str(self.strategy_combo.currentData()),
            batch_rows=self.batch_spin.value(),
            workers=self.workers_spin.value(),
            commit=CommitMode(self.commit_combo.currentText()),
            on_error=ErrorPolicy(self.policy_combo.currentText()),
            columns=[ColumnMap(**vars(m)) for m in self.mapping.maps] or None,
            dsn=self.dsn(),
        )

    def apply_spec(self, spec: LoadSpec) -> None:
        self.set_connection_dsn(spec.dsn)
        self.schema_combo.setEditText(spec.target.schema or "public")
        self.table_combo.setEditText(spec.target.table)
        self.mode_combo.setCurrentText(spec.target.mode.value)
        self.key_edit.setText(", ".join(spec.target.key))
        self.set_strategy(spec.strategy, spec.batch_rows, spec.workers)
        self.commit_combo.setCurrentText(spec.commit.value)
        self.policy_combo.setCurrentText(spec.on_error.value)
        self._pending_columns = spec.columns
        self.source_ready.connect(self._on_profile_source_ready, Qt.ConnectionType.SingleShotConnection)
        self.open_file(spec.source.path, spec.source, keep_target=True)

    def _on_profile_source_ready(self) -> None:
        cols = getattr(self, "_pending_columns", None)
        if cols:
            info = self._info
            samples = {} if info is None or info.sample.height == 0 else {
                c: (None if info.sample[c][0] is None else str(info.sample[c][0])) for c in info.columns}
            self.mapping.reset_edits()
            self.mapping.adopt_edits(cols)  # the profile's choices are the user's: they survive a rebuild
            self._set_mapping([ColumnMap(**vars(c)) for c in cols], samples, info, self.mapping.table())

    def _on_open_profile(self) -> None:
        path = self._file_dialog("Open profile", "Profiles (*.toml)")
        if path:
            self.open_profile(path)

    def open_profile(self, path: str) -> None:
        try:
            spec, rest = profile.load(path)
            compare = profile.compare_section(rest)
        except Exception as exc:  # noqa: BLE001 - ConfigError and OS errors alike
            self._on_background_failed(str(exc))
            return
        self.settings.remember("recent_profiles", path)
        self.settings.save()
        self._refresh_recent()
        if compare is not None:
            self.compare_tab.apply_compare_settings(compare)
        self.apply_spec(spec)

    def _on_save_profile(self) -> None:
        name = _table_name_for(self.table_combo.currentText().strip() or "profile") + ".toml"
        path = self._file_dialog("Save profile", "Profiles (*.toml)", save=True, name=name)
        if path:
            self.save_profile(path)

    def save_profile(self, path: str) -> str:
        """Save the set-up as a profile; `.toml` is added when the name has no extension. Returns the path."""
        if not Path(path).suffix:
            path += ".toml"
        profile.save(self.current_spec(), path, extra={"compare": self.compare_tab.compare_settings()})
        self.settings.remember("recent_profiles", path)
        self.settings.save()
        self._refresh_recent()
        self._log(f"saved profile {path}")
        return path

    def _on_export_history(self) -> None:
        path = self._file_dialog("Export history", "CSV (*.csv)", save=True, name="sluice-history.csv")
        if path:
            self.export_history(path)

    def export_history(self, path: str) -> None:
        with open(path, "w", newline="", encoding="utf-8") as f:
            w = csv.writer(f)
            w.writerow(HistoryModel.HEADERS)
            w.writerows(self.history.rows)

    # -- run -------------------------------------------------------------------------------------

    def start_run(self, *, resume: bool = False, restart: bool = False) -> None:
        """Run the load as set up; `resume` continues an interrupted per-batch run, `restart` ignores it.

        Refused while a column is unmatched; before the first append into a table that has rows the
        user is asked (the table's size is fetched on a worker first).
        """
        if self._run_job is not None or self._starting:
            return
        if self._after_mapping(lambda: self.start_run(resume=resume, restart=restart)):
            return
        spec = self.current_spec()
        if resume and spec.commit is not CommitMode.PER_BATCH:
            spec.commit = CommitMode.PER_BATCH  # only per-batch runs leave something to resume
            self.commit_combo.setCurrentText(CommitMode.PER_BATCH.value)
        if not self._runnable(spec):
            return
        key = (spec.source.path, spec.target.schema, spec.target.table)
        if spec.target.mode not in (LoadMode.APPEND, LoadMode.UPSERT) or resume or key in self._confirmed:
            self._launch(spec, resume=resume, restart=restart)
            return
        if self._target_size is not None:  # looked up with the table's columns: ask now
            self._starting = True
            self._confirm_append(spec, self._target_size, restart)
            return
        self._starting = True
        self.progress.setFormat("looking at the table…")
        dsn, ref = spec.dsn, TableRef(spec.target.table, spec.target.schema)
        self._start(lambda *_a: table_size(dsn, ref),
                    lambda size: self._confirm_append(spec, size, restart),
                    self._on_size_failed)

    _starting = False  # a run is waiting for the table's size or the user's yes

    def _runnable(self, spec: LoadSpec) -> bool:
        if not spec.source.path or not spec.target.table:
            self._refuse("Open a file and name a target table first.")
            return False
        left = self.mapping.unmatched()
        if left:
            names = ", ".join(repr(m.source or m.target) for m in left)
            where = TableRef(spec.target.table, spec.target.schema).display()
            self._refuse(f"{len(left)} column{'s' if len(left) != 1 else ''} of the file ({names}) "
                         f"{'are' if len(left) != 1 else 'is'} not in {where}."
                         "\n\nPick a target column for each in the mapping, or untick it to skip it.")
            return False
        return True

    def _refuse(self, message: str) -> None:
        self._log("not started: " + message.replace("\n\n", " "))
        self.run_refused.emit(message)
        QMessageBox.information(self, "Sluice", message)

    def _on_size_failed(self, message: str) -> None:
        self._starting = False
        self.progress.setFormat("idle")
        self._on_background_failed(message)

    def _confirm_append(self, spec: LoadSpec, size: TableSize | None, restart: bool) -> None:
        if not self._starting:
            return  # stopped before it started
        self._starting = False
        self.progress.setFormat("idle")
        info = self._info
        if size is not None and size.rows > 0:
            ref = TableRef(spec.target.table, spec.target.schema or "public").display()
            rows = info.rows_text() if info is not None else "the file's rows"
            verb = "Append" if spec.target.mode is LoadMode.APPEND else "Upsert"
            question = f"{verb} {rows} to {ref} ({size.text()})?"
            if info is not None and not info.rows_exact:
                question += "\n\nThe file's row count is an estimate from its first rows."
            if not dialogs.ask(self, f"{verb} to a table that has rows", question, verb):
                self._log(f"not started: the user did not {verb.lower()} to {ref}")
                self.run_refused.emit(question)
                return
        self._confirmed.add((spec.source.path, spec.target.schema, spec.target.table))
        self._launch(spec, restart=restart)

    def check_run(self) -> None:
        """Check before loading: the load with these settings, rolled back at the end.

        Bad rows are collected (policy skip, where the strategy allows it) so the check lists every
        row that would be rejected; the table is left as it was.
        """
        if self._run_job is not None or self._starting:
            return
        if self._after_mapping(self.check_run):
            return
        spec = self.current_spec()
        if not self._runnable(spec):
            return
        cls = next(c for c in self._strategies if c.id == spec.strategy)
        if not cls.multi_connection:  # parallel-copy has no skip policy yet: its check stops at the first bad row
            spec.on_error = ErrorPolicy.SKIP
        folder = data_dir() / "checks"  # the would-be rejects of the last checks (the newest 20 kept)
        folder.mkdir(exist_ok=True)
        for old in sorted(folder.glob("*.csv"), key=lambda p: p.stat().st_mtime)[:-19]:
            old.unlink(missing_ok=True)
        spec.reject_file = str(folder / f"{Path(spec.source.path).stem}-{dt.datetime.now():%Y%m%d-%H%M%S-%f}.csv")
        self._launch(spec, dry_run=True)

    def _launch(self, spec: LoadSpec, *, resume: bool = False, restart: bool = False, dry_run: bool = False) -> None:
        if spec.on_error is ErrorPolicy.SKIP and spec.reject_file is None:
            spec.reject_file = self._reject_file_for(spec, resume)
        self._generation += 1
        self._run_kind = "check" if dry_run else "load"
        self._last_progress = None
        self.progress.setValue(0)
        self.progress.setFormat("starting…")
        self.summary.setText("")
        self._show_counters(0, 0, 0)
        self.chart.reset()
        self._set_resumable(False)
        self.rejects.load(None)
        self.open_rejects_btn.setEnabled(False)
        self.run_tabs.setTabText(1, "Rejected rows")
        verb = "check (rolled back)" if dry_run else "resuming" if resume else "starting over" if restart else "run"
        self._log(
            f"— {dt.datetime.now():%H:%M:%S} {verb}: {spec.strategy} into {spec.target.table} ({spec.commit.value})")
        job = Job(lambda on_progress, on_log, cancel: LoadJob(
            spec, on_progress=on_progress, on_log=on_log, cancel=cancel, resume=resume, restart=restart,
            dry_run=dry_run).run())
        self._run_job, self._run_spec = job, spec
        job.signals.progress.connect(self._on_run_progress)
        job.signals.log.connect(self._log)
        job.signals.finished.connect(self._on_run_finished)
        job.signals.failed.connect(self._on_run_failed)
        job.signals.cancelled.connect(self._on_run_cancelled)
        self.run_btn.setEnabled(False)
        self.check_btn.setEnabled(False)
        self.stop_btn.setEnabled(True)
        job.start()

    def _reject_file_for(self, spec: LoadSpec, resume: bool) -> str:
        """A new reject file per run (never overwriting an earlier one); a resumed run goes on in its own."""
        key = (spec.source.path, spec.target.table)
        if resume and key in self._reject_files:
            return self._reject_files[key]
        src = Path(spec.source.path)
        stamp = f"{dt.datetime.now():%Y%m%d-%H%M%S}"
        path = src.with_name(f"{src.name}.rejects-{stamp}.csv")
        n = 2
        while path.exists():
            path = src.with_name(f"{src.name}.rejects-{stamp}-{n}.csv")
            n += 1
        self._reject_files[key] = str(path)
        return str(path)

    def stop_run(self) -> None:
        if self._starting:
            self._starting = False
            self.progress.setFormat("idle")
            self._log("not started: stopped before the run began")
            return
        if self._run_job is not None:
            self.progress.setFormat("stopping…")
            self._run_job.cancel()

    def _show_counters(self, read: int, loaded: int, rejected: int, rate: str = "") -> None:
        """Fixed-width fields (monospace font): the layout stays put while the numbers grow."""
        self.counters.setText(f"read {read:>11,}  loaded {loaded:>11,}  rejected {rejected:>9,}" + (
            f"\n{rate}" if rate else "\n"))

    def _on_run_progress(self, p: Progress) -> None:
        self._last_progress = p
        self.chart.add(p)
        frac = p.fraction
        if frac is not None:
            self.progress.setValue(int(frac * 1000))
        eta = human_seconds(p.eta_s)
        self.progress.setFormat(f"{p.phase.value} {frac * 100 if frac else 0:.0f}%  ETA {eta}")
        self._show_counters(p.rows_read, p.rows_loaded, p.rows_rejected,
                            f"{p.rows_per_s:>11,.0f} rows/s  {p.mb_per_s:>8,.1f} MB/s (average)")

    def _end_run(self, outcome: str, read: int, loaded: int, rejected: int, *, seconds: float | None = None,
                 note: str = "") -> None:
        """The one place a run's end is shown: counters, summary (set by the caller), history and log agree."""
        self.chart.stop()
        self.run_btn.setEnabled(True)
        self.check_btn.setEnabled(True)
        self.stop_btn.setEnabled(False)
        spec = self._run_spec
        if seconds is None and self._last_progress is not None:
            seconds = self._last_progress.elapsed  # a run that stopped: how long it went
        rate = f"{loaded / seconds:,.0f}" if seconds and loaded else ""
        self._show_counters(read, loaded, rejected, f"{rate:>11} rows/s" if rate else "")
        self.history.add((
            f"{dt.datetime.now():%H:%M:%S}", self._run_kind, Path(spec.source.path).name, spec.target.table,
            spec.strategy, f"{read:,}", f"{loaded:,}", f"{rejected:,}", f"{seconds:.2f}" if seconds else "", rate,
            outcome, note,
        ))
        self._log(f"— {outcome}: read {read:,}, loaded {loaded:,}, rejected {rejected:,}. {self.summary.text()}")
        self._run_job = None
        self.show_table_btn.setEnabled(True)
        self.run_ended.emit()

    def _on_run_finished(self, result: LoadResult) -> None:
        self.progress.setValue(1000)
        check = self._run_kind == "check"
        self.progress.setFormat("checked: rolled back" if check else "done")
        rate = f"{result.rows_per_s:,.0f} rows/s"
        if result.load_seconds:
            rate += f"; {result.rows_loaded / result.load_seconds:,.0f} rows/s while loading"
        if check:
            bad = (f"{result.rows_rejected:,} would be rejected (listed under Rejected rows)"
                   if result.rows_rejected else "none would be rejected")
            self.summary.setText(f"Check: {result.rows_loaded:,} of {result.rows_read:,} rows would load and {bad}; "
                                 f"{rate} with {result.strategy}. Rolled back: the table is as it was.")
        else:
            rejected = (f" {result.rows_rejected:,} rows were rejected: see {result.reject_file}."
                        if result.rows_rejected else "")
            resumed = f" Resumed after {result.resumed_from:,} rows committed earlier." if result.resumed_from else ""
            self.summary.setText(f"Loaded {result.rows_loaded:,} rows in {result.seconds:.2f} s "
                                 f"({rate}) with {result.strategy}.{rejected}{resumed}")
        if result.reject_file:
            self.rejects.load(result.reject_file)
            self.open_rejects_btn.setEnabled(True)
            self.run_tabs.setTabText(1, f"Rejected rows ({self.rejects.total:,})")
            self.run_tabs.setCurrentIndex(1)
        loaded = 0 if check else result.rows_loaded
        note = f"would load {result.rows_loaded:,}; rolled back" if check else (result.reject_file or "")
        self._end_run("checked" if check else "loaded", result.rows_read, loaded, result.rows_rejected,
                      seconds=result.seconds, note=note)
        if check:
            self.check_finished.emit(result)
            return
        self.refresh_table_list_quietly()
        self.run_finished.emit(result)

    def refresh_table_list_quietly(self) -> None:
        self._target_size = None  # it has changed: look again before the next first append
        db = getattr(self, "_db", None)
        if db is not None:
            dsn = self.dsn()
            self._start(lambda *_a: inspect_database(dsn), self._on_database_inspected, lambda _m: None)

    def _stopped_counts(self) -> tuple[int, int]:
        """Rows read and rejected when the run stopped (the last progress event)."""
        p = self._last_progress
        return (p.rows_read, p.rows_rejected) if p is not None else (0, 0)

    def _on_run_failed(self, message: str) -> None:
        error = self._run_job.signals.error if self._run_job is not None else None
        per_batch = self._run_spec.commit is CommitMode.PER_BATCH
        if isinstance(error, UnfinishedRun):
            # Not a failure of this run: ask what to do with the earlier one.
            message = (f"{error.described}.\n\nResume continues it after the last committed batch; "
                       "Start over loads every row again (rows it committed stay in the table).")
            self.progress.setFormat("earlier run unfinished")
            self.summary.setText("An earlier run of this load is unfinished: Resume or Start over.")
            self._end_run("not started", 0, 0, 0, note=error.described)
            self._set_resumable(True, restart=True)
            self.run_failed.emit(message)
            QMessageBox.information(self, "Unfinished load", message)
            return
        self.last_error = message
        self.progress.setFormat("check failed" if self._run_kind == "check" else "failed")
        self._log("error: " + message)
        if per_batch and not isinstance(error, ConfigError):
            self._set_resumable(True, restart=True)

            def then() -> None:
                self.run_failed.emit(message)
                QMessageBox.warning(self, "Load failed", message)

            self._end_after_commits("failed", message, then)
            return
        read, _rejected = self._stopped_counts()
        nothing = "The check was rolled back" if self._run_kind == "check" else "Nothing was loaded"
        self.summary.setText(f"Failed: {message}" if "nothing was loaded" in message.lower()
                             else f"Failed: {message}. {nothing}: the table is as it was.")
        self._end_run("failed", read, 0, 0, note=message)
        self.run_failed.emit(message)
        QMessageBox.warning(self, "Load failed", message)

    def _on_run_cancelled(self) -> None:
        self.progress.setFormat("cancelled")
        self._log("cancelled by the user")
        if self._run_spec.commit is CommitMode.PER_BATCH:
            self._set_resumable(True, restart=True)
            self._end_after_commits("cancelled", "stopped by the user", self.run_cancelled.emit)
            return
        read, _rejected = self._stopped_counts()
        self.summary.setText("Stopped. Nothing was loaded: the table is as it was.")
        self._end_run("cancelled", read, 0, 0, note="stopped by the user; rolled back")
        self.run_cancelled.emit()

    def _end_after_commits(self, outcome: str, note: str, then: Any) -> None:
        """Per-batch: what stays is what the checkpoint says was committed, read on a worker; then `then()`."""
        spec = self._run_spec
        self.summary.setText("Stopped; reading what was committed…")
        dsn, path, ref = spec.dsn, spec.source.path, TableRef(spec.target.table, spec.target.schema)

        def done(state: tuple[int, int, int] | None) -> None:
            read, loaded, rejected = state or (0, 0, 0)
            self.summary.setText(
                f"{'Failed' if outcome == 'failed' else 'Stopped'}. {loaded:,} rows from the batches committed "
                f"so far stay in the table ({read:,} source rows done); Resume continues.")
            self._end_run(outcome, read, loaded, rejected, note=note)
            then()

        def failed(message: str) -> None:
            self.summary.setText(f"Stopped; what was committed is unknown ({message}).")
            self._end_run(outcome, 0, 0, 0, note=note)
            then()

        self._start(lambda *_a: committed(dsn, path, ref), done, failed)

    def _set_resumable(self, on: bool, *, restart: bool = False) -> None:
        self.resume_btn.setVisible(on)
        self.resume_btn.setEnabled(on)
        self.restart_btn.setVisible(on and restart)
        self.restart_btn.setEnabled(on and restart)

    # -- looking at the result ------------------------------------------------------------------

    def show_table(self) -> None:
        """The first 1,000 rows of the target in a read-only grid, fetched on a worker."""
        table = self.table_combo.currentText().strip()
        if not table:
            return
        dsn, ref = self.dsn(), TableRef(table, self._schema())

        def fetch(*_a: Any) -> tuple[TableRows, TableSize | None]:
            return first_rows(dsn, ref), table_size(dsn, ref)

        self._start(fetch, lambda got: self._on_table_rows(ref, *got))

    def _on_table_rows(self, ref: TableRef, rows: TableRows, size: TableSize | None) -> None:
        if self.table_dialog is not None:
            self.table_dialog.close()
        self.table_dialog = dialogs.TableDialog(self, ref.display(), rows, size.text() if size else "?")
        self.table_dialog.show()
        self.table_shown.emit(self.table_dialog)

    def show_server_info(self) -> None:
        """A DSN and a psql command for the server in use (the embedded one is started if needed)."""
        dsn = self.dsn()

        def describe(*_a: Any) -> str:
            lines = connection_help(resolve_dsn(dsn))
            return "\n".join([("Embedded PostgreSQL" if dsn is None else "Server") + " — to reach it from outside:",
                              *lines, "", "The same from a terminal: python -m app server status"])

        self._start(describe, self._on_server_info)

    def _on_server_info(self, text: str) -> None:
        self._log(text)
        dialogs.TextDialog(self, "Connection details", text).show()
        self.server_info_shown.emit(text)

    def _on_compare_finished(self, report: Any) -> None:
        """A comparison goes into the history: its fastest result, round trip and sample size."""
        results = [r for r in getattr(report, "results", []) if not getattr(r, "error", None)]
        best = max(results, key=lambda r: statistics.median(r.runs) if r.runs else 0.0, default=None)
        spec = self.current_spec()
        rtt = getattr(report, "rtt_ms", 0.0)
        sample = getattr(report, "sample_rows", None)
        note = (f"{len(results)} results, RTT {rtt:g} ms, sample {sample:,} rows" if sample
                else f"{len(results)} results, RTT {rtt:g} ms, whole file")
        rate = f"{statistics.median(best.runs):,.0f}" if best is not None and best.runs else ""
        self.history.add((
            f"{dt.datetime.now():%H:%M:%S}", "compare", Path(spec.source.path).name, spec.target.table,
            f"fastest: {best.strategy}" if best is not None else "", "", "", "", "", rate, "compared", note,
        ))

    def _open_reject_file(self) -> None:
        if self.rejects.path:
            QDesktopServices.openUrl(QUrl.fromLocalFile(self.rejects.path))

    # -- window events -------------------------------------------------------------------------

    def dragEnterEvent(self, event: QDragEnterEvent) -> None:  # noqa: N802
        if event.mimeData().hasUrls():
            event.acceptProposedAction()

    def dropEvent(self, event: QDropEvent) -> None:  # noqa: N802
        urls = event.mimeData().urls()
        if urls and urls[0].isLocalFile():
            self.open_file(urls[0].toLocalFile())

    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: N802
        if self._run_job is not None:
            self._run_job.cancel()
        self.compare_tab.stop()
        self.settings.save()
        super().closeEvent(event)


def _table_name_for(path: str) -> str:
    stem = Path(path).stem.lower()
    return "".join(c if c.isalnum() else "_" for c in stem).strip("_") or "imported"
