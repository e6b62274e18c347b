"""The Compare tab's set-up: which strategies, batch sizes, workers, sample, repeats, budget and round trip."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QDoubleValidator, QIcon, QPixmap
from PySide6.QtWidgets import (
    QComboBox,
    QFormLayout,
    QGroupBox,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from core.auto import AUTO
from core.compare import CompareSpec
from core.spec import CommitMode, ErrorPolicy, LoadSpec
from core.strategies.base import all_strategies
from ui.compare.session import strategy_colour

RTT_CHOICES = ("0", "1", "5", "20", "100", "320")
DEFAULT_STRATEGIES = ("row-transaction", "executemany", "unnest", "copy-csv", "copy-binary")
DEFAULT_BATCHES = [1000, 10_000, 50_000]


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


def merge_batches(sizes: list[int], rows: int | None) -> tuple[list[int], list[int]]:
    """(kept, dropped): every size at or above the rows measured sends them in one batch, so only the
    smallest of those is kept (10,000 and 50,000 on 5,000 rows were the same run twice)."""
    if not rows:
        return sizes, []
    whole = [b for b in sizes if b >= rows]
    dropped = sorted(whole)[1:]
    return [b for b in sizes if b not in dropped], dropped


def swatch(colour: str) -> QIcon:
    """A small square of the strategy's chart colour, for lists and tables."""
    pix = QPixmap(10, 10)
    pix.fill(QColor(colour))
    return QIcon(pix)


class CompareForm(QWidget):
    """The set-up widgets; reads them into a CompareSpec or plain TOML-ready settings. No signals."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        box = QGroupBox("Strategies")
        bl = QVBoxLayout(box)
        self.strategy_list = QListWidget()
        # auto as a contestant: it picks as a load would, and the results say what it picked.
        auto = QListWidgetItem(AUTO)
        auto.setData(Qt.ItemDataRole.UserRole, False)
        auto.setIcon(swatch(strategy_colour(AUTO)))
        auto.setToolTip("auto: picks the strategy, batch size and workers as a load would; the results say which "
                        "it picked, so you can see whether its pick is the fastest")
        auto.setFlags(auto.flags() | Qt.ItemFlag.ItemIsUserCheckable)
        auto.setCheckState(Qt.CheckState.Checked if AUTO in DEFAULT_STRATEGIES else Qt.CheckState.Unchecked)
        self.strategy_list.addItem(auto)
        for cls in all_strategies():
            item = QListWidgetItem(cls.id)
            item.setData(Qt.ItemDataRole.UserRole, cls.script_only)
            item.setIcon(swatch(strategy_colour(cls.id)))  # the colour it has in the charts
            once = "" if cls.batch_sized else " Runs once: it sends row by row, whatever the batch size."
            item.setToolTip(f"{cls.title}: {cls.summary}." + once
                            + (" (SQL-script sources only)" if cls.script_only else ""))
            item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
            item.setCheckState(Qt.CheckState.Checked if cls.id in DEFAULT_STRATEGIES else Qt.CheckState.Unchecked)
            self.strategy_list.addItem(item)
        bl.addWidget(self.strategy_list)
        lay.addWidget(box, 1)
        lay.addWidget(self._set_up_box())

    def _set_up_box(self) -> QGroupBox:
        box = QGroupBox("Set-up")
        form = QFormLayout(box)
        self.batch_edit = QLineEdit(", ".join(str(b) for b in DEFAULT_BATCHES))
        self.batch_edit.setToolTip("Comma-separated batch sizes; 10k means 10000. Row-by-row strategies run once.")
        form.addRow("Batch rows", self.batch_edit)
        self.workers_edit = QLineEdit("2")
        self.workers_edit.setToolTip("Connections for parallel-copy, comma-separated; the others use one")
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
        return box

    def inputs(self) -> list[QWidget]:
        """What is locked while a comparison runs."""
        return [self.strategy_list, self.batch_edit, self.workers_edit, self.sample_spin, self.repeat_spin,
                self.budget_spin, self.rtt_combo]

    # -- values ------------------------------------------------------------------------------

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

    def rtt(self) -> float:
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
            rtt = self.rtt()
        except ValueError:
            rtt = 0.0
        return {
            "strategies": [i.text() for i in self._items() if i.checkState() == Qt.CheckState.Checked],
            "batch_rows": counts(self.batch_edit, list(DEFAULT_BATCHES)),
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

    def refresh_availability(self, spec: LoadSpec) -> None:
        """Script strategies replay INSERT files: offer them only for a SQL source."""
        src = spec.source
        is_sql = src.format == "sql" or (src.format is None and src.path.lower().endswith(".sql"))
        for item in self._items():
            if item.data(Qt.ItemDataRole.UserRole):
                flags = item.flags()
                enabled = flags | Qt.ItemFlag.ItemIsEnabled
                item.setFlags(enabled if is_sql else flags & ~Qt.ItemFlag.ItemIsEnabled)

    def rows_measured(self, source_rows: int | None) -> int | None:
        """Rows each run loads: the sample, or fewer when the file is shorter (None: not known)."""
        sample = self.sample_spin.value()
        if source_rows is None:
            return sample or None
        return min(sample, source_rows) if sample else source_rows

    def compare_spec(self, base: LoadSpec, source_rows: int | None = None) -> CompareSpec:
        """The comparison of `base` (the Load tab's spec) that the form describes; ValueError says what is wrong.

        `source_rows`: the file's exact row count when known; batch sizes that all mean one batch are merged.
        """
        if not base.source.path or not base.target.table:
            raise ValueError("Open a file and name a target table on the Load tab first.")
        self.refresh_availability(base)
        strategies = self.strategies()
        if not strategies:
            raise ValueError("Tick at least one strategy to compare.")
        sample = self.sample_spin.value()
        return CompareSpec(
            # the CLI's choices: a comparison measures speed, not error handling
            base=replace(base, commit=CommitMode.SINGLE, on_error=ErrorPolicy.ABORT, reject_file=None),
            strategies=strategies,
            batch_rows=merge_batches(parse_counts(self.batch_edit.text(), "Batch rows"), source_rows and
                                     self.rows_measured(source_rows))[0],
            workers=parse_counts(self.workers_edit.text(), "Workers"), sample_rows=sample or None,
            repeat=self.repeat_spin.value(), rtt_ms=self.rtt(), budget_s=float(self.budget_spin.value()),
        )
