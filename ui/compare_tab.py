"""The Compare tab: strategies side by side on the user's own file, measured off the GUI thread."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Protocol

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import (
    QAbstractTableModel,
    QModelIndex,
    QObject,
    QPersistentModelIndex,
    QSortFilterProxyModel,
    Qt,
    Signal,
)
from PySide6.QtGui import QDoubleValidator, QFontMetrics, QShowEvent
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QFileDialog,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QMessageBox,
    QProgressBar,
    QPushButton,
    QSizePolicy,
    QSpinBox,
    QSplitter,
    QTableView,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from core.compare import CompareReport, CompareResult, CompareSpec, run_compare
from core.spec import CommitMode, ErrorPolicy, LoadSpec
from core.strategies.base import all_strategies
from ui.worker import Job

Index = QModelIndex | QPersistentModelIndex
_DISPLAY = Qt.ItemDataRole.DisplayRole
_SORT = Qt.ItemDataRole.UserRole
RTT_CHOICES = ("0", "1", "5", "20", "100", "320")
DEFAULT_STRATEGIES = ("row-transaction", "executemany", "unnest", "copy-csv", "copy-binary")
DASHES = (Qt.PenStyle.SolidLine, Qt.PenStyle.DashLine, Qt.PenStyle.DotLine, Qt.PenStyle.DashDotLine)
PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
           "#bcbd22", "#17becf")


class CompareHost(Protocol):
    """What the tab needs from the main window."""

    tabs: QTabWidget

    def current_spec(self) -> LoadSpec: ...

    def set_strategy(self, strategy_id: str, batch_rows: int | None = None, workers: int | None = None) -> None: ...


def parse_counts(text: str, what: str) -> list[int]:
    """'1000, 10k, 1.5k, 1_000' -> [1000, 10000, 1500]; ValueError with a readable message."""
    out: list[int] = []
    for part in text.split(","):
        word = part.strip().lower().replace("_", "").replace(" ", "")
        if not word:
            continue
        scale = {"k": 1_000, "m": 1_000_000}.get(word[-1], 1)
        number = word[:-1] if scale > 1 else word
        try:
            value = float(number) * scale
        except ValueError:
            value = -1.0
        if not value.is_integer() or value < 1:
            raise ValueError(f"{what}: {part.strip()!r} is not a positive whole number (1000, 10k, …)")
        out.append(int(value))
    if not out:
        raise ValueError(f"{what}: give at least one number")
    return list(dict.fromkeys(out))


def _label(r: CompareResult) -> str:
    workers = f" ×{r.workers}" if r.strategy == "parallel-copy" else ""
    return f"{r.strategy}{workers} · {r.batch_rows:,}"


class CompareModel(QAbstractTableModel):
    """One row per (strategy, batch rows, workers); UserRole holds raw values for sorting."""

    HEADERS = ("Strategy", "Batch rows", "Workers", "Median rows/s", "Min", "Max", "MB/s", "Ratio to fastest",
               "Note")

    def __init__(self) -> None:
        super().__init__()
        self.results: list[CompareResult] = []

    def set_results(self, results: list[CompareResult]) -> None:
        self.beginResetModel()
        self.results = list(results)
        self.endResetModel()

    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008, N802
        return 0 if parent.isValid() else len(self.results)

    def columnCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008, N802
        return 0 if parent.isValid() else len(self.HEADERS)

    @staticmethod
    def note(r: CompareResult) -> str:
        if r.error:
            return f"error: {r.error}"
        return f"measured on {r.reduced_rows:,} rows" if r.reduced_rows else ""

    def _values(self, r: CompareResult) -> tuple[Any, ...]:
        j = r.to_json()
        ok = bool(r.runs)
        return (r.strategy, r.batch_rows, r.workers, j["median_rows_per_s"] if ok else None,
                j["min_rows_per_s"] if ok else None, j["max_rows_per_s"] if ok else None,
                j["median_mb_per_s"] if ok else None, r.ratio_to_fastest if ok else None, self.note(r))

    def data(self, index: Index, role: int = _DISPLAY) -> Any:
        if not index.isValid() or index.row() >= len(self.results) or index.column() >= len(self.HEADERS):
            return None
        col = index.column()
        value = self._values(self.results[index.row()])[col]
        if role == _SORT:
            return -1.0 if value is None else value
        if role == Qt.ItemDataRole.TextAlignmentRole and 0 < col < 8:
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        if role == Qt.ItemDataRole.ToolTipRole and col == 8:
            return value or None
        if role != _DISPLAY:
            return None
        if value is None:
            return "—"
        if col in (1, 3, 4, 5):
            return f"{value:,.0f}"
        if col == 6:
            return f"{value:.2f}"
        if col == 7:
            return f"{value:.2f}×"
        return str(value)

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = _DISPLAY) -> Any:  # noqa: N802
        if role == _DISPLAY and orientation == Qt.Orientation.Horizontal and section < len(self.HEADERS):
            return self.HEADERS[section]
        return None


class _RateAxis(pg.AxisItem):  # type: ignore[misc]
    """Rows/s as 120,000 rather than 1.2e+05 or a scaled "(x1000)" label."""

    def __init__(self, orientation: str) -> None:
        super().__init__(orientation)
        self.enableAutoSIPrefix(False)

    def tickStrings(self, values: list[float], scale: float, spacing: float) -> list[str]:  # noqa: N802
        if spacing < 1:
            return list(super().tickStrings(values, scale, spacing))
        return [f"{v * scale:,.0f}" for v in values]


class CompareCharts(pg.GraphicsLayoutWidget):  # type: ignore[misc]
    """Median rows/s per combination with min–max whiskers, and rows/s against batch size (log x)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setBackground("w")
        self.bar_plot = self.addPlot(row=0, col=0, title="Median rows/s (whiskers: min–max)",
                                     axisItems={"bottom": _RateAxis("bottom")})
        self.bar_plot.setLabel("bottom", "rows/s")
        self.bar_plot.showGrid(x=True, alpha=0.3)
        self.line_plot = self.addPlot(row=0, col=1, title="Rows/s by batch size", axisItems={"left": _RateAxis("left")})
        self.line_plot.setLabel("left", "rows/s")
        self.line_plot.setLabel("bottom", "batch rows (log scale)")
        self.line_plot.setLogMode(x=True, y=False)
        self.line_plot.showGrid(x=True, y=True, alpha=0.3)
        self.line_plot.getAxis("left").setWidth(64)  # wide enough for "1,000,000" before the first paint
        # The legend sits beside the plot, not over the lines.
        self.legend = pg.LegendItem(labelTextSize="8pt")
        self.addItem(self.legend, row=0, col=2)
        self.ci.layout.setAlignment(self.legend, Qt.AlignmentFlag.AlignTop)
        self.legend.setSizePolicy(QSizePolicy.Policy.Fixed, QSizePolicy.Policy.Fixed)
        self.ci.layout.setColumnStretchFactor(0, 5)
        self.ci.layout.setColumnStretchFactor(1, 5)
        self.bar_item: pg.BarGraphItem | None = None
        self.error_item: pg.ErrorBarItem | None = None

    def clear_charts(self) -> None:
        self.bar_plot.clear()
        self.line_plot.clear()
        self.legend.clear()
        self.bar_item = self.error_item = None
        self.bar_plot.getAxis("left").setTicks(None)
        self.line_plot.getAxis("bottom").setTicks(None)

    def show_report(self, report: CompareReport) -> None:
        self.clear_charts()
        done = [r for r in report.results if r.runs]
        if not done:
            return
        colours = {s: PALETTE[i % len(PALETTE)] for i, s in enumerate(dict.fromkeys(r.strategy for r in done))}
        self._bars(done, colours)
        self._lines(done, colours)

    def _bars(self, done: list[CompareResult], colours: dict[str, str]) -> None:
        # Horizontal bars: the long "strategy · batch" labels read along the left axis, first result on top.
        ys = np.arange(len(done) - 1, -1, -1, dtype=float)
        med = np.array([r.median_rows_per_s for r in done])
        lo = med - np.array([min(r.runs) for r in done])
        hi = np.array([max(r.runs) for r in done]) - med
        self.bar_item = pg.BarGraphItem(x0=0, y=ys, height=0.6, width=med,
                                        brushes=[pg.mkBrush(colours[r.strategy]) for r in done], pen=None)
        self.error_item = pg.ErrorBarItem(x=med, y=ys, left=lo, right=hi, beam=0.25, pen=pg.mkPen("#333", width=1))
        self.bar_plot.addItem(self.bar_item)
        self.bar_plot.addItem(self.error_item)
        labels = [_label(r) for r in done]
        axis = self.bar_plot.getAxis("left")
        axis.setTicks([[(float(y), text) for y, text in zip(ys, labels)]])
        axis.setWidth(max(QFontMetrics(axis.font()).horizontalAdvance(t) for t in labels) + 14)
        self.bar_plot.setYRange(-0.6, len(done) - 0.4, padding=0)
        self.bar_plot.setXRange(0, float((med + hi).max()) * 1.05, padding=0)

    def _lines(self, done: list[CompareResult], colours: dict[str, str]) -> None:
        series: dict[tuple[str, int], list[CompareResult]] = {}
        for r in done:
            series.setdefault((r.strategy, r.workers), []).append(r)
        # parallel-copy with several worker counts: one colour, a dash pattern per count
        counts = sorted(w for s, w in series if s == "parallel-copy")
        for (strategy, workers), rs in series.items():
            rs.sort(key=lambda r: r.batch_rows)
            colour = colours[strategy]
            style = DASHES[counts.index(workers) % len(DASHES)] if strategy == "parallel-copy" else DASHES[0]
            curve = self.line_plot.plot([float(r.batch_rows) for r in rs], [r.median_rows_per_s for r in rs],
                                        pen=pg.mkPen(colour, width=2, style=style), symbol="o", symbolSize=7,
                                        symbolBrush=colour, symbolPen=None)
            self.legend.addItem(curve, f"{strategy} ×{workers}" if strategy == "parallel-copy" else strategy)
        # Ticks at the batch sizes measured; log mode places them at log10(x).
        sizes = sorted({r.batch_rows for r in done})
        self.line_plot.getAxis("bottom").setTicks([[(float(np.log10(b)), f"{b:,}") for b in sizes], []])
        lo, hi = float(np.log10(sizes[0])), float(np.log10(sizes[-1]))
        pad = 0.08 * (hi - lo) if hi > lo else 0.5  # room for the end labels
        self.line_plot.setXRange(lo - pad, hi + pad, padding=0)
        self.line_plot.setYRange(0, max(r.median_rows_per_s for r in done) * 1.08, padding=0)


class _Relay(QObject):
    """Carries run_compare's progress callbacks from the worker thread to the GUI thread."""

    step = Signal(int, str, int, int)  # generation, message, runs done, runs total


class CompareTab(QWidget):
    """Signals: progressed(str message, int done, int total), finished(object CompareReport), failed(str),
    cancelled()."""

    progressed = Signal(str, int, int)
    finished = Signal(object)
    failed = Signal(str)
    cancelled = Signal()

    def __init__(self, window: CompareHost) -> None:
        super().__init__()
        self._window = window
        self._job: Job | None = None
        self._generation = 0  # progress from an older job is ignored
        self._relay = _Relay(self)
        self._relay.step.connect(self._on_step)
        self.report: CompareReport | None = None
        self._build()
        self._set_running(False)

    # -- layout -------------------------------------------------------------------------------

    def _build(self) -> None:
        split = QSplitter(Qt.Orientation.Horizontal)
        split.addWidget(self._setup_panel())
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
        box = QGroupBox("Strategies")
        bl = QVBoxLayout(box)
        self.strategy_list = QListWidget()
        for cls in all_strategies():
            item = QListWidgetItem(cls.id)
            item.setData(Qt.ItemDataRole.UserRole, cls.script_only)
            item.setToolTip(f"{cls.title}: {cls.summary}" + (" (SQL-script sources only)" if cls.script_only else ""))
            item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
            item.setCheckState(Qt.CheckState.Checked if cls.id in DEFAULT_STRATEGIES else Qt.CheckState.Unchecked)
            self.strategy_list.addItem(item)
        bl.addWidget(self.strategy_list)
        lay.addWidget(box, 1)
        lay.addWidget(self._form())
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
        self.status = QLabel("Each run loads a scratch copy of the target table; the table itself is never touched.")
        self.status.setWordWrap(True)
        lay.addWidget(self.status)
        panel.setMinimumWidth(300)
        panel.setMaximumWidth(420)
        return panel

    def _form(self) -> QGroupBox:
        box = QGroupBox("Set-up")
        form = QFormLayout(box)
        self.batch_edit = QLineEdit("1000, 10000, 50000")
        self.batch_edit.setToolTip("Comma-separated batch sizes; 10k means 10000")
        form.addRow("Batch rows", self.batch_edit)
        self.workers_edit = QLineEdit("2")
        self.workers_edit.setToolTip("Connections for parallel-copy, comma-separated")
        form.addRow("Workers", self.workers_edit)
        self.sample_spin = QSpinBox()
        self.sample_spin.setRange(0, 2_000_000_000)
        self.sample_spin.setSingleStep(10_000)
        self.sample_spin.setGroupSeparatorShown(True)
        self.sample_spin.setSpecialValueText("whole file")
        self.sample_spin.setValue(100_000)
        self.sample_spin.setToolTip("Measure on the first N rows (0: the whole file)")
        form.addRow("Sample rows", self.sample_spin)
        self.repeat_spin = QSpinBox()
        self.repeat_spin.setRange(1, 100)
        self.repeat_spin.setValue(3)
        self.repeat_spin.setToolTip("Runs per combination, interleaved; the table shows the median")
        form.addRow("Repeats", self.repeat_spin)
        self.budget_spin = QSpinBox()
        self.budget_spin.setRange(1, 36_000)
        self.budget_spin.setValue(30)
        self.budget_spin.setSuffix(" s")
        self.budget_spin.setToolTip("A slow strategy is measured on fewer rows so that one run fits this time")
        form.addRow("Budget per run", self.budget_spin)
        self.rtt_combo = QComboBox()
        self.rtt_combo.setEditable(True)
        self.rtt_combo.addItems(list(RTT_CHOICES))
        self.rtt_combo.setValidator(QDoubleValidator(0.0, 100_000.0, 3, self))
        self.rtt_combo.setToolTip("Simulated network round trip in ms (0: as the connection is)")
        form.addRow("Round trip (ms)", self.rtt_combo)
        self._inputs: list[QWidget] = [self.strategy_list, self.batch_edit, self.workers_edit, self.sample_spin,
                                       self.repeat_spin, self.budget_spin, self.rtt_combo]
        return box

    def _results_panel(self) -> QWidget:
        panel = QWidget()
        lay = QVBoxLayout(panel)
        lay.setContentsMargins(0, 0, 0, 0)
        self.model = CompareModel()
        self.proxy = QSortFilterProxyModel(self)
        self.proxy.setSourceModel(self.model)
        self.proxy.setSortRole(_SORT)
        self.table = QTableView()
        self.table.setModel(self.proxy)
        self.table.setSortingEnabled(True)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.verticalHeader().setVisible(False)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setStretchLastSection(True)
        self.table.doubleClicked.connect(self._on_table_double_clicked)
        lay.addWidget(self.table)
        row = QHBoxLayout()
        self.apply_btn = QPushButton("Apply to Load tab")
        self.apply_btn.setToolTip("Use the selected strategy, batch size and workers for the load")
        self.apply_btn.clicked.connect(self.apply_selected)
        self.csv_btn = QPushButton("Export CSV…")
        self.csv_btn.clicked.connect(self._on_export_csv_clicked)
        self.png_btn = QPushButton("Export charts PNG…")
        self.png_btn.clicked.connect(self._on_export_png_clicked)
        row.addWidget(self.apply_btn)
        row.addStretch(1)
        row.addWidget(self.csv_btn)
        row.addWidget(self.png_btn)
        lay.addLayout(row)
        return panel

    # -- set-up -------------------------------------------------------------------------------

    def _items(self) -> list[QListWidgetItem]:
        return [self.strategy_list.item(i) for i in range(self.strategy_list.count())]

    def set_strategies(self, ids: list[str]) -> None:
        known = {item.text() for item in self._items()}
        unknown = [s for s in ids if s not in known]
        if unknown:
            raise ValueError(f"unknown strategies: {', '.join(unknown)}")
        for item in self._items():
            item.setCheckState(Qt.CheckState.Checked if item.text() in ids else Qt.CheckState.Unchecked)

    def strategies(self) -> list[str]:
        """The ticked strategies that this source can use."""
        return [i.text() for i in self._items()
                if i.checkState() == Qt.CheckState.Checked and i.flags() & Qt.ItemFlag.ItemIsEnabled]

    def set_batch_sizes(self, sizes: list[int]) -> None:
        self.batch_edit.setText(", ".join(str(s) for s in sizes))

    def set_workers(self, workers: list[int]) -> None:
        self.workers_edit.setText(", ".join(str(w) for w in workers))

    def set_sample(self, rows: int) -> None:
        self.sample_spin.setValue(rows)

    def set_repeat(self, repeat: int) -> None:
        self.repeat_spin.setValue(repeat)

    def set_budget(self, seconds: float) -> None:
        self.budget_spin.setValue(max(1, round(seconds)))

    def set_rtt(self, ms: float) -> None:
        self.rtt_combo.setEditText(f"{ms:g}")

    def _rtt(self) -> float:
        text = self.rtt_combo.currentText().strip().replace(",", ".") or "0"
        try:
            value = float(text)
        except ValueError:
            raise ValueError(f"round trip: {text!r} is not a number of milliseconds") from None
        if not 0 <= value < 100_000:
            raise ValueError(f"round trip: {text} ms is out of range")
        return value

    def compare_settings(self) -> dict[str, Any]:
        """The set-up as plain TOML-ready values; an unreadable entry falls back to its default."""
        def counts(edit: QLineEdit, default: list[int]) -> list[int]:
            try:
                return parse_counts(edit.text(), "")
            except ValueError:
                return default

        try:
            rtt = self._rtt()
        except ValueError:
            rtt = 0.0
        return {
            "strategies": [i.text() for i in self._items() if i.checkState() == Qt.CheckState.Checked],
            "batch_rows": counts(self.batch_edit, [1000, 10_000, 50_000]),
            "workers": counts(self.workers_edit, [2]),
            "sample_rows": self.sample_spin.value(),
            "repeat": self.repeat_spin.value(),
            "budget_s": float(self.budget_spin.value()),
            "rtt_ms": rtt,
        }

    def apply_compare_settings(self, settings: dict[str, Any]) -> None:
        if "strategies" in settings:
            self.set_strategies(list(settings["strategies"]))
        if "batch_rows" in settings:
            self.set_batch_sizes(list(settings["batch_rows"]))
        if "workers" in settings:
            self.set_workers(list(settings["workers"]))
        if "sample_rows" in settings:
            self.set_sample(int(settings["sample_rows"]))
        if "repeat" in settings:
            self.set_repeat(int(settings["repeat"]))
        if "budget_s" in settings:
            self.set_budget(float(settings["budget_s"]))
        if "rtt_ms" in settings:
            self.set_rtt(float(settings["rtt_ms"]))

    def _refresh_availability(self, spec: LoadSpec) -> None:
        """Script strategies replay INSERT files: offer them only for a SQL source."""
        src = spec.source
        is_sql = src.format == "sql" or (src.format is None and src.path.lower().endswith(".sql"))
        for item in self._items():
            if item.data(Qt.ItemDataRole.UserRole):
                flags = item.flags()
                enabled = flags | Qt.ItemFlag.ItemIsEnabled
                item.setFlags(enabled if is_sql else flags & ~Qt.ItemFlag.ItemIsEnabled)

    def showEvent(self, event: QShowEvent) -> None:  # noqa: N802
        self._refresh_availability(self._window.current_spec())
        super().showEvent(event)

    def _compare_spec(self) -> CompareSpec:
        base = self._window.current_spec()
        if not base.source.path or not base.target.table:
            raise ValueError("Open a file and name a target table on the Load tab first.")
        self._refresh_availability(base)
        strategies = self.strategies()
        if not strategies:
            raise ValueError("Tick at least one strategy to compare.")
        sample = self.sample_spin.value()
        return CompareSpec(
            # the CLI's choices: a comparison measures speed, not error handling
            base=replace(base, commit=CommitMode.SINGLE, on_error=ErrorPolicy.ABORT, reject_file=None),
            strategies=strategies, batch_rows=parse_counts(self.batch_edit.text(), "Batch rows"),
            workers=parse_counts(self.workers_edit.text(), "Workers"), sample_rows=sample or None,
            repeat=self.repeat_spin.value(), rtt_ms=self._rtt(), budget_s=float(self.budget_spin.value()),
        )

    # -- running --------------------------------------------------------------------------------

    def start(self) -> None:
        if self._job is not None:
            return
        try:
            spec = self._compare_spec()
        except ValueError as exc:
            QMessageBox.warning(self, "Compare", str(exc))
            return
        self._generation += 1
        gen, relay = self._generation, self._relay
        self.progress.setRange(0, 0)  # busy until the first run reports
        self.progress.setFormat("starting…")
        self.status.setText("Preparing the sample and the scratch table…")
        job = Job(lambda _progress, _log, cancel: run_compare(
            spec, on_progress=lambda msg, done, total: relay.step.emit(gen, msg, done, total), cancel=cancel))
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
        for w in self._inputs:
            w.setEnabled(not running)
        self.run_btn.setEnabled(not running)
        self.stop_btn.setEnabled(running)
        has_results = not running and self.report is not None
        for b in (self.apply_btn, self.csv_btn, self.png_btn):
            b.setEnabled(has_results)

    def _on_step(self, gen: int, message: str, done: int, total: int) -> None:
        if gen != self._generation or self._job is None:
            return
        self.progress.setRange(0, max(total, 1))
        self.progress.setValue(done)
        self.progress.setFormat(f"{done}/{total} runs")
        self.status.setText(message)
        self.progressed.emit(message, done, total)

    def _end(self, job: Job) -> bool:
        """False for a job that is no longer ours (its results are stale)."""
        if job is not self._job:
            return False
        self._job = None
        self.progress.setRange(0, 1)
        return True

    def _on_finished(self, job: Job, report: CompareReport) -> None:
        if not self._end(job):
            return
        self.report = report
        self.progress.setValue(1)
        self.progress.setFormat("done")
        self.model.set_results(report.results)
        self.table.sortByColumn(3, Qt.SortOrder.DescendingOrder)
        self.charts.show_report(report)
        self._set_running(False)
        self.status.setText(self._summary(report))
        self.finished.emit(report)

    @staticmethod
    def _summary(report: CompareReport) -> str:
        done = [r for r in report.results if r.runs]
        failed = len(report.results) - len(done)
        if not done:
            return "No combination finished a run: see the Note column."
        best = max(done, key=lambda r: r.median_rows_per_s)
        text = f"Fastest: {_label(best)} rows per batch ({best.median_rows_per_s:,.0f} rows/s)."
        return text + (f" {failed} combination(s) failed: see the Note column." if failed else "")

    def _on_failed(self, job: Job, message: str) -> None:
        if not self._end(job):
            return
        self.progress.setValue(0)
        self.progress.setFormat("failed")
        self.status.setText("Failed: " + message)
        self._set_running(False)
        self.failed.emit(message)
        QMessageBox.warning(self, "Compare failed", message)

    def _on_cancelled(self, job: Job) -> None:
        if not self._end(job):
            return
        self.progress.setValue(0)
        self.progress.setFormat("stopped")
        self.status.setText("Stopped. The target table was not touched.")
        self._set_running(False)
        self.cancelled.emit()

    # -- results ----------------------------------------------------------------------------------

    def selected_result(self) -> CompareResult | None:
        rows = self.table.selectionModel().selectedRows()
        if not rows:
            return None
        row = self.proxy.mapToSource(rows[0]).row()
        return self.model.results[row] if 0 <= row < len(self.model.results) else None

    def _on_table_double_clicked(self, _index: QModelIndex) -> None:
        self.apply_selected()

    def apply_selected(self) -> None:
        result = self.selected_result()
        if result is None:
            QMessageBox.warning(self, "Compare", "Select a result row to apply.")
            return
        self.apply_result(result)

    def apply_result(self, result: CompareResult) -> None:
        self._window.set_strategy(result.strategy, result.batch_rows,
                                  result.workers if result.strategy == "parallel-copy" else None)
        tabs = self._window.tabs
        titles = [tabs.tabText(i) for i in range(tabs.count())]
        tabs.setCurrentIndex(titles.index("Load") if "Load" in titles else 0)

    def export_csv(self, path: str) -> None:
        if self.report is None:
            raise ValueError("no comparison to export yet")
        self.report.to_csv(path)

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
