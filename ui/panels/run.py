"""The run panel: Run, Stop, Check, Resume, Show table, progress, counters, summary, log, rejects, charts."""

from __future__ import annotations

import html

from PySide6.QtCore import Qt
from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import (
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPlainTextEdit,
    QProgressBar,
    QPushButton,
    QSplitter,
    QTableView,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from core.events import Progress, human_seconds
from ui import progress_bar
from ui.charts import ThroughputChart
from ui.elided_label import ElidedLabel
from ui.table_models import RejectsModel

NO_PLAN = "Plan: pick a file and a table, and the plan for the run shows here."


class RunPanel(QGroupBox):
    """Widgets and how a run shows; the run controller decides what to show."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Run", parent)
        lay = QHBoxLayout(self)
        left = QVBoxLayout()
        buttons = QHBoxLayout()
        self.run_btn = QPushButton("Run  (Ctrl+R)")
        self.stop_btn = QPushButton("Stop  (Esc)")
        self.stop_btn.setEnabled(False)
        # Shown when a per-batch run stopped midway (or an earlier one did): go on, or start over.
        self.resume_btn = QPushButton("Resume")
        self.resume_btn.setToolTip("Continue the interrupted per-batch load after its last committed batch")
        self.restart_btn = QPushButton("Start over")
        self.restart_btn.setToolTip("Load every row again; rows the earlier run committed stay in the table")
        self.check_btn = QPushButton("Check")
        self.check_btn.setToolTip("Run the load with these settings inside a transaction that is rolled back: "
                                  "see which rows would be rejected, and the rate, without changing the table")
        self.show_table_btn = QPushButton("Show table")
        self.show_table_btn.setToolTip("The first 1,000 rows of the target table (read-only)")
        self.show_table_btn.setEnabled(False)
        for b in (self.run_btn, self.stop_btn, self.check_btn, self.resume_btn, self.restart_btn,
                  self.show_table_btn):
            buttons.addWidget(b)
        self.set_resumable(False)
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
        self.show_counters(0, 0, 0)
        left.addWidget(self.counters)
        # What the next run will do (ui.foresight fills it in): auto's pick, the protocol, why.
        self.plan_label = QLabel(NO_PLAN)
        self.plan_label.setWordWrap(True)
        self.plan_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        # Three lines at least, even in a 700 px high window (the log gives way); the tooltip has it all.
        self.plan_label.setMinimumHeight(3 * self.plan_label.fontMetrics().lineSpacing() + 4)
        self.plan_label.setAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop)
        left.addWidget(self.plan_label)
        self.summary = QLabel("")
        self.summary.setWordWrap(True)
        left.addWidget(self.summary)
        self.log = QPlainTextEdit()
        self.log.setReadOnly(True)
        self.log.setMaximumBlockCount(20_000)
        self.log.setMinimumHeight(48)
        self.log.setTabChangesFocus(True)  # Tab moves on, as everywhere else
        self.run_tabs = QTabWidget()
        self.run_tabs.addTab(self.log, "Log")
        self.run_tabs.addTab(self._rejects_page(), "Rejected rows")
        left.addStretch(1)
        holder = QWidget()
        holder.setLayout(left)
        holder.setMinimumWidth(480)
        holder.setMaximumWidth(560)
        lay.addWidget(holder)
        # The lists beside the controls, as high as the panel (below them, at 1366x768 the rejected rows
        # showed one row); extra width goes to the lists first, then the chart. The user can move the split.
        self.chart = ThroughputChart()
        self.chart.setMinimumWidth(260)
        self.chart.setFocusPolicy(Qt.FocusPolicy.NoFocus)  # nothing to do there with the keyboard
        self.lists_split = QSplitter(Qt.Orientation.Horizontal)
        self.lists_split.setChildrenCollapsible(False)
        self.lists_split.addWidget(self.run_tabs)
        self.lists_split.addWidget(self.chart)
        self.lists_split.setStretchFactor(0, 3)
        self.lists_split.setStretchFactor(1, 2)
        self.lists_split.setSizes([560, 420])
        lay.addWidget(self.lists_split, 1)

    def _rejects_page(self) -> QWidget:
        rejected = QWidget()
        rl = QVBoxLayout(rejected)
        rl.setContentsMargins(0, 0, 0, 0)
        self.rejects = RejectsModel()
        self.rejects_view = QTableView()
        self.rejects_view.setModel(self.rejects)
        self.rejects_view.setTabKeyNavigation(False)  # Tab leaves the list; arrows move inside it
        self.rejects_view.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        self.rejects_view.horizontalHeader().setStretchLastSection(True)
        self.rejects_view.setWordWrap(False)
        self.rejects_view.verticalHeader().setVisible(False)
        self.rejects_view.verticalHeader().setDefaultSectionSize(22)
        for col, width in enumerate((44, 44, 64, 64, 320)):
            self.rejects_view.setColumnWidth(col, width)
        rl.addWidget(self.rejects_view)
        # The file's path stays in sight: where no application opens .csv files, Open does nothing there.
        file_row = QHBoxLayout()
        self.reject_path_label = ElidedLabel("", mode=Qt.TextElideMode.ElideMiddle)
        self.open_rejects_btn = QPushButton("Open")
        self.open_rejects_btn.setToolTip("Open the reject file with the application set for .csv files")
        self.show_rejects_btn = QPushButton("Show in folder")
        self.show_rejects_btn.setToolTip("Open the folder that holds the reject file")
        self.copy_rejects_btn = QPushButton("Copy path")
        self.copy_rejects_btn.setToolTip("Copy the reject file's path to the clipboard")
        file_row.addWidget(self.reject_path_label, 1)
        for b in (self.open_rejects_btn, self.show_rejects_btn, self.copy_rejects_btn):
            b.setEnabled(False)
            file_row.addWidget(b)
        rl.addLayout(file_row)
        return rejected

    def focus_order(self) -> list[QWidget]:
        """The panel's controls in reading order, for the window's Tab chain."""
        return [self.run_btn, self.stop_btn, self.check_btn, self.resume_btn, self.restart_btn,
                self.show_table_btn, self.run_tabs, self.log, self.rejects_view, self.open_rejects_btn,
                self.show_rejects_btn, self.copy_rejects_btn]

    def log_line(self, text: str) -> None:
        """Append to the log and follow its newest line."""
        self.log.appendPlainText(text)
        bar = self.log.verticalScrollBar()
        bar.setValue(bar.maximum())

    def show_counters(self, read: int, loaded: int, rejected: int, rate: str = "") -> None:
        """Fixed-width fields (monospace font): the layout stays put while the numbers grow.

        The rate has a line and a label of its own ("rate"), its number under the counters' numbers:
        it reads as a second row, not as a line that wrapped.
        """
        self.counters.setText(f"read {read:>11,}  loaded {loaded:>11,}  rejected {rejected:>9,}" + (
            f"\nrate {rate}" if rate else "\n"))

    def show_progress(self, p: Progress) -> None:
        self.chart.add(p)
        frac = p.fraction
        if frac is not None:
            self.progress.setValue(int(frac * 1000))
        # Short text on the bar (the fill passes under it); the ETA goes beside the rate, never under the fill.
        self.progress.setFormat(f"{p.phase.value} {frac * 100 if frac else 0:.0f}%")
        self.show_counters(p.rows_read, p.rows_loaded, p.rows_rejected,
                           f"{p.rows_per_s:>11,.0f} rows/s  {p.mb_per_s:>6,.1f} MB/s  ETA {human_seconds(p.eta_s)}")

    def show_rejects(self, path: str | None) -> None:
        self.rejects.load(path)
        self.reject_path_label.setText(path or "")
        for b in (self.open_rejects_btn, self.show_rejects_btn, self.copy_rejects_btn):
            b.setEnabled(bool(path))
        self.run_tabs.setTabText(1, f"Rejected rows ({self.rejects.total:,})" if path else "Rejected rows")
        if path:
            self.run_tabs.setCurrentIndex(1)

    def show_plan(self, text: str) -> None:
        self.plan_label.setText(f"<b>Plan:</b> {html.escape(text)}")
        self.plan_label.setToolTip(text)

    def clear_plan(self, text: str = NO_PLAN) -> None:
        """No plan to show (yet): never the plan of another file, table or server."""
        self.plan_label.setText(text)
        self.plan_label.setToolTip("")

    def show_failed(self, text: str) -> None:
        """A run that failed: an empty bar saying so in red, never a full "done"-looking one."""
        progress_bar.show_failed(self.progress, text)

    def clear_result(self) -> None:
        """Another file: the last file's result (bar, counters, summary, chart, rejects, Resume) goes."""
        progress_bar.plain_colours(self.progress)
        self.progress.setValue(0)
        self.progress.setFormat("idle")
        self.summary.setText("")
        self.show_counters(0, 0, 0)
        self.chart.reset()
        self.chart.stop()
        self.set_resumable(False)
        self.show_rejects(None)

    def clear_for_run(self) -> None:
        progress_bar.plain_colours(self.progress)
        self.progress.setValue(0)
        self.progress.setFormat("starting…")
        self.summary.setText("")
        self.show_counters(0, 0, 0)
        self.chart.reset()
        self.set_resumable(False)
        self.show_rejects(None)

    def set_running(self, running: bool) -> None:
        # The keyboard's place follows the button that can be pressed: Run (or Check) -> Stop -> Run. Left to
        # Qt, a disabled button hands the focus on down the Tab chain, into the lists.
        now, then = (self.stop_btn, (self.run_btn, self.check_btn)) if running else (self.run_btn, (self.stop_btn,))
        now.setEnabled(True)
        if any(b.hasFocus() for b in then):
            now.setFocus(Qt.FocusReason.OtherFocusReason)
        self.run_btn.setEnabled(not running)
        self.check_btn.setEnabled(not running)
        self.stop_btn.setEnabled(running)
        if not running:
            self.chart.stop()
            self.show_table_btn.setEnabled(True)

    def set_resumable(self, on: bool, *, restart: bool = False) -> None:
        self.resume_btn.setVisible(on)
        self.resume_btn.setEnabled(on)
        self.restart_btn.setVisible(on and restart)
        self.restart_btn.setEnabled(on and restart)
