"""The History tab's model: the runs kept in the data directory, the window's and the command line's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, Qt
from PySide6.QtGui import QColor

from core.history import Entry, History, HistoryError

Index = QModelIndex | QPersistentModelIndex
_DISPLAY = Qt.ItemDataRole.DisplayRole
SHOWN = 2000  # the newest runs shown; the file keeps them all until cleared


def _n(v: int | None) -> str:
    return "" if v is None else f"{v:,}"


def cells(e: Entry) -> tuple[str, ...]:
    """One run as the History tab (and its CSV export) shows it, in HistoryModel.HEADERS order."""
    each = "; ".join(f"{t}: {n:,} rows" for t, n in e.tables)  # a script that filled several tables
    note = " — ".join(x for x in (each, e.note) if x)
    return (
        f"{e.at:%Y-%m-%d %H:%M:%S}", e.kind if e.origin == "window" else f"{e.kind} ({e.origin.upper()})",
        Path(e.source).name, e.target, e.mode, e.strategy, _n(e.rows_read), _n(e.rows_loaded), _n(e.rows_rejected),
        f"{e.seconds:.2f}" if e.seconds else "", f"{e.rows_per_s:,.0f}" if e.rows_per_s else "", e.outcome, note,
    )


class HistoryModel(QAbstractTableModel):
    """One row per load, check or comparison, kept across sessions (core/history.py); oldest first.

    `problem` holds why the history file could not be read or written (the rows still show for
    this session).
    """

    HEADERS = ("Time", "Kind", "File", "Table", "Mode", "Strategy", "Read", "Loaded", "Rejected", "Seconds",
               "Rows/s", "Outcome", "Error / note")
    MODE, STRATEGY, READ, LOADED, REJECTED, SECONDS, RATE, OUTCOME, NOTE = range(4, 13)

    def __init__(self, store: History | None = None) -> None:
        super().__init__()
        self.store = store or History()
        self.entries: list[Entry] = []
        self.rows: list[tuple[str, ...]] = []
        self.problem = ""
        self.refresh()

    def _guard(self, fn: Any) -> Any:
        try:
            return fn()
        except HistoryError as exc:
            self.problem = str(exc)
            return None

    def refresh(self) -> None:
        """Show runs kept since the last look (a headless load while the window was open)."""
        last = max((e.id for e in self.entries if e.id is not None), default=0)
        new = self._guard(lambda: self.store.entries(after=last, limit=SHOWN)) or []
        if new:
            self._append(new)

    def add(self, entry: Entry) -> None:
        """Keep a run of this window and show it, after any the command line kept since the last look."""
        if self._guard(lambda: self.store.add(entry)) is None:
            self._append([entry])  # this session only; `problem` says why
            return
        self.refresh()

    def kept(self) -> int:
        """How many runs the file holds (at least those shown)."""
        return max(len(self.rows), self._guard(self.store.count) or 0)

    def clear(self) -> int:
        """Forget every run, here and in the file; returns how many the file held."""
        n = self._guard(self.store.clear) or 0
        self.beginResetModel()
        self.entries, self.rows = [], []
        self.endResetModel()
        return n

    def _append(self, entries: list[Entry]) -> None:
        self.beginInsertRows(QModelIndex(), len(self.rows), len(self.rows) + len(entries) - 1)
        self.entries.extend(entries)
        self.rows.extend(cells(e) for e in entries)
        self.endInsertRows()

    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008, N802
        return 0 if parent.isValid() else len(self.rows)

    def columnCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008, N802
        return 0 if parent.isValid() else len(self.HEADERS)

    def data(self, index: Index, role: int = _DISPLAY) -> Any:
        if not index.isValid() or index.row() >= len(self.rows) or index.column() >= len(self.HEADERS):
            return None
        text = self.rows[index.row()][index.column()]
        if role == _DISPLAY:
            return text
        if role == Qt.ItemDataRole.ToolTipRole:
            if index.column() == 2:
                return self.entries[index.row()].source  # the whole path
            return text or None
        if role == Qt.ItemDataRole.TextAlignmentRole and self.READ <= index.column() <= self.RATE:
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        if role == Qt.ItemDataRole.ForegroundRole and index.column() == self.OUTCOME and text in ("failed",
                                                                                                   "cancelled"):
            return QColor("#b00020")
        return None

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = _DISPLAY) -> Any:  # noqa: N802
        if role == _DISPLAY and orientation == Qt.Orientation.Horizontal and section < len(self.HEADERS):
            return self.HEADERS[section]
        return None
