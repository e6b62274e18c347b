"""The Compare tab's results table: one row per (session, strategy, batch rows, workers)."""

from __future__ import annotations

import statistics
from typing import Any

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, Qt

from core.auto import AUTO
from core.lab.compare import TIE, CompareResult, describe
from ui.compare.form import swatch
from ui.compare.session import CompareSession, rtt_text, strategy_colour

Index = QModelIndex | QPersistentModelIndex
_DISPLAY = Qt.ItemDataRole.DisplayRole
SORT_ROLE = Qt.ItemDataRole.UserRole


class CompareModel(QAbstractTableModel):
    """Rows of the shown sessions, filled in run by run; SORT_ROLE holds raw values for sorting.

    A row's ratio is to the fastest of its own session, so two sessions (0 ms and 20 ms) read apart.
    """

    HEADERS = ("Session", "Strategy", "Batch rows", "Workers", "Round trip", "Rows", "Median rows/s", "Min",
               "Max", "MB/s", "× fastest", "Note")
    (COL_SESSION, COL_STRATEGY, COL_BATCH, COL_WORKERS, COL_RTT, COL_ROWS, COL_MEDIAN, COL_MIN, COL_MAX, COL_MB,
     COL_RATIO, COL_NOTE) = range(12)
    _RIGHT = frozenset({COL_BATCH, COL_WORKERS, COL_RTT, COL_ROWS, COL_MEDIAN, COL_MIN, COL_MAX, COL_MB, COL_RATIO})

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[tuple[CompareSession | None, CompareResult]] = []

    @property
    def results(self) -> list[CompareResult]:
        return [r for _, r in self.rows]

    def set_sessions(self, sessions: list[CompareSession]) -> None:
        self.beginResetModel()
        self.rows = [(s, r) for s in sessions for r in s.result_list()]
        self.endResetModel()

    def set_results(self, results: list[CompareResult]) -> None:
        """Results outside any session (round trip and session columns stay empty)."""
        self.beginResetModel()
        self.rows = [(None, r) for r in results]
        self.endResetModel()

    def update_result(self, session: CompareSession, result: CompareResult) -> None:
        """A run of a shown session finished: add its row or refresh it (and its session's ratios)."""
        for i, (s, r) in enumerate(self.rows):
            if s is session and r.key == result.key:
                self.rows[i] = (session, result)
                break
        else:
            at = len(self.rows)
            self.beginInsertRows(QModelIndex(), at, at)
            self.rows.append((session, result))
            self.endInsertRows()
        if self.rows:
            self.dataChanged.emit(self.index(0, 0), self.index(len(self.rows) - 1, len(self.HEADERS) - 1))

    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008, N802
        return 0 if parent.isValid() else len(self.rows)

    def columnCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008, N802
        return 0 if parent.isValid() else len(self.HEADERS)

    @staticmethod
    def note(r: CompareResult) -> str:
        if r.error:
            return f"error: {r.error}"
        notes = [f"tie for first: median within {TIE:.0%} of the fastest, or ranges overlap"] if r.tie else []
        if r.reduced_rows:
            notes.append(f"measured on {r.reduced_rows:,} rows")
        return "; ".join(notes)

    def _values(self, session: CompareSession | None, r: CompareResult) -> tuple[Any, ...]:
        ok = bool(r.runs)  # raw values, as the charts label them (not the JSON's rounding)
        # auto says what it picked ("auto → copy-csv · 100,000"); the others their id.
        strategy = describe(r) if r.strategy == AUTO else r.strategy
        return (session.name if session else "", strategy, r.batch_rows if r.batch_sized else None, r.workers,
                session.rtt_ms if session else None, r.rows if ok else None,
                r.median_rows_per_s if ok else None, min(r.runs) if ok else None, max(r.runs) if ok else None,
                statistics.median(r.mb_runs) if r.mb_runs else None, r.ratio_to_fastest if ok else None,
                self.note(r))

    def data(self, index: Index, role: int = _DISPLAY) -> Any:
        if not index.isValid() or index.row() >= len(self.rows) or index.column() >= len(self.HEADERS):
            return None
        col = index.column()
        session, result = self.rows[index.row()]
        value = self._values(session, result)[col]
        if col == self.COL_WORKERS and result.strategy == AUTO:
            value = None  # its own pick, said in the Strategy column
        if role == SORT_ROLE:
            return -1.0 if value is None else value
        if role == Qt.ItemDataRole.TextAlignmentRole and col in self._RIGHT:
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        if role == Qt.ItemDataRole.DecorationRole and col == self.COL_STRATEGY:
            return swatch(strategy_colour(result.strategy))
        if role == Qt.ItemDataRole.ToolTipRole:
            return self._tooltip(session, result, col, value)
        if role != _DISPLAY:
            return None
        return self._text(col, value)

    def _tooltip(self, session: CompareSession | None, r: CompareResult, col: int, value: Any) -> str | None:
        if col == self.COL_NOTE:
            return str(value) or None
        if col == self.COL_SESSION and session is not None:
            return session.settings_text()
        if col in (self.COL_BATCH, self.COL_WORKERS, self.COL_STRATEGY) and r.strategy == AUTO:
            return "auto picks its own strategy, batch size and workers, as a load would: " + (r.picked or "not yet")
        if col == self.COL_BATCH and not r.batch_sized:
            return "Row by row: the batch size changes nothing on the wire, so it ran once"
        return None

    def _text(self, col: int, value: Any) -> str:
        if value is None:
            return "—"
        if col == self.COL_RTT:
            return rtt_text(float(value))
        if col in (self.COL_BATCH, self.COL_ROWS, self.COL_MEDIAN, self.COL_MIN, self.COL_MAX):
            return f"{value:,.0f}"
        if col == self.COL_MB:
            return f"{value:,.2f}"
        if col == self.COL_RATIO:
            return f"{value:.2f}×"
        return str(value)

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = _DISPLAY) -> Any:  # noqa: N802
        if role == _DISPLAY and orientation == Qt.Orientation.Horizontal and 0 <= section < len(self.HEADERS):
            return self.HEADERS[section]
        return None
