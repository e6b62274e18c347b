"""Thin table models: the preview grid, the mapping editor and the run history."""

from __future__ import annotations

from typing import Any

import polars as pl
from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, Qt
from PySide6.QtGui import QColor

from core.pgtypes import value_converts
from core.spec import ColumnMap

Index = QModelIndex | QPersistentModelIndex
_DISPLAY = Qt.ItemDataRole.DisplayRole


class PreviewModel(QAbstractTableModel):
    """The first rows of the source; header shows each column's inferred type."""

    def __init__(self) -> None:
        super().__init__()
        self._frame = pl.DataFrame()
        self._types: list[str] = []

    def set_frame(self, frame: pl.DataFrame, types: list[str]) -> None:
        self.beginResetModel()
        self._frame, self._types = frame, types
        self.endResetModel()

    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008, N802
        return 0 if parent.isValid() else self._frame.height

    def columnCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008, N802
        return 0 if parent.isValid() else self._frame.width

    def data(self, index: Index, role: int = _DISPLAY) -> Any:
        if not index.isValid() or role not in (_DISPLAY, Qt.ItemDataRole.ToolTipRole):
            return None
        if index.row() >= self._frame.height or index.column() >= self._frame.width:
            return None
        v = self._frame[index.row(), index.column()]
        return "NULL" if v is None else str(v)[:200]

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = _DISPLAY) -> Any:  # noqa: N802
        if role != _DISPLAY:
            return None
        if orientation == Qt.Orientation.Vertical:
            return str(section + 1)
        if section >= self._frame.width:
            return None
        t = self._types[section] if section < len(self._types) else ""
        return f"{self._frame.columns[section]}\n{t}"


class MappingModel(QAbstractTableModel):
    """Source column, sample, target column, target type, include, warning."""

    HEADERS = ("Source column", "Sample", "Target column", "Target type", "Include", "Warning")

    def __init__(self) -> None:
        super().__init__()
        self.maps: list[ColumnMap] = []
        self._samples: dict[str, str | None] = {}

    def set_mapping(self, maps: list[ColumnMap], samples: dict[str, str | None]) -> None:
        self.beginResetModel()
        self.maps, self._samples = maps, samples
        self.endResetModel()

    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008, N802
        return 0 if parent.isValid() else len(self.maps)

    def columnCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008, N802
        return 0 if parent.isValid() else len(self.HEADERS)

    def warning(self, row: int) -> str:
        m = self.maps[row]
        sample = self._samples.get(m.source or "")
        if m.include and sample is not None and not value_converts(sample, m.type):
            return f"sample {sample[:30]!r} may not convert to {m.type}"
        return ""

    def data(self, index: Index, role: int = _DISPLAY) -> Any:
        if not index.isValid() or index.row() >= len(self.maps) or index.column() >= len(self.HEADERS):
            return None
        m, col = self.maps[index.row()], index.column()
        if role == Qt.ItemDataRole.CheckStateRole and col == 4:
            return Qt.CheckState.Checked if m.include else Qt.CheckState.Unchecked
        if role == Qt.ItemDataRole.ForegroundRole and col == 5:
            return QColor("#b35900")
        if role not in (_DISPLAY, Qt.ItemDataRole.EditRole):
            return None
        sample = self._samples.get(m.source or "")
        values = (m.source or "(constant)", "NULL" if sample is None else sample[:60], m.target, m.type, None,
                  self.warning(index.row()))
        return values[col]

    def flags(self, index: Index) -> Qt.ItemFlag:
        if not index.isValid():
            return Qt.ItemFlag.NoItemFlags
        base = Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable
        if index.column() in (2, 3):
            return base | Qt.ItemFlag.ItemIsEditable
        if index.column() == 4:
            return base | Qt.ItemFlag.ItemIsUserCheckable
        return base

    def setData(self, index: Index, value: Any, role: int = Qt.ItemDataRole.EditRole) -> bool:  # noqa: N802
        if not index.isValid() or index.row() >= len(self.maps):
            return False
        m = self.maps[index.row()]
        if index.column() == 4 and role == Qt.ItemDataRole.CheckStateRole:
            m.include = Qt.CheckState(value) == Qt.CheckState.Checked
        elif index.column() == 2 and role == Qt.ItemDataRole.EditRole and str(value).strip():
            m.target = str(value).strip()
        elif index.column() == 3 and role == Qt.ItemDataRole.EditRole and str(value).strip():
            m.type = str(value).strip()
        else:
            return False
        self.dataChanged.emit(self.index(index.row(), 0), self.index(index.row(), len(self.HEADERS) - 1))
        return True

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = _DISPLAY) -> Any:  # noqa: N802
        if role == _DISPLAY and orientation == Qt.Orientation.Horizontal and section < len(self.HEADERS):
            return self.HEADERS[section]
        return None


class HistoryModel(QAbstractTableModel):
    """One row per run in this session."""

    HEADERS = ("Time", "File", "Table", "Strategy", "Rows", "Seconds", "Rows/s", "Outcome")

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[tuple[str, ...]] = []

    def add(self, row: tuple[str, ...]) -> None:
        self.beginInsertRows(QModelIndex(), len(self.rows), len(self.rows))
        self.rows.append(row)
        self.endInsertRows()

    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008, N802
        return 0 if parent.isValid() else len(self.rows)

    def columnCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008, N802
        return 0 if parent.isValid() else len(self.HEADERS)

    def data(self, index: Index, role: int = _DISPLAY) -> Any:
        if role != _DISPLAY or not index.isValid() or index.row() >= len(self.rows):
            return None
        return self.rows[index.row()][index.column()] if index.column() < len(self.HEADERS) else None

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = _DISPLAY) -> Any:  # noqa: N802
        if role == _DISPLAY and orientation == Qt.Orientation.Horizontal and section < len(self.HEADERS):
            return self.HEADERS[section]
        return None


class RejectsModel(QAbstractTableModel):
    """The reject file of the last run: line, row, column, value, reason and the original record."""

    HEADERS = ("Line", "Row", "Column", "Value", "Reason", "Record")
    LIMIT = 10_000  # the file holds them all; the view shows the first ones

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[tuple[str, ...]] = []
        self.total = 0
        self.path: str | None = None

    def load(self, path: str | None) -> None:
        import csv
        import itertools

        self.beginResetModel()
        self.rows, self.total, self.path = [], 0, path
        if path:
            try:
                with open(path, newline="", encoding="utf-8") as f:
                    reader = csv.reader(f)
                    next(reader, None)  # header
                    for rec in reader:
                        if len(self.rows) < self.LIMIT:
                            self.rows.append(tuple(itertools.islice(itertools.chain(rec, [""] * 6), 6)))
                        self.total += 1
            except OSError:
                pass
        self.endResetModel()

    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008, N802
        return 0 if parent.isValid() else len(self.rows)

    def columnCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008, N802
        return 0 if parent.isValid() else len(self.HEADERS)

    def data(self, index: Index, role: int = _DISPLAY) -> Any:
        if not index.isValid() or index.row() >= len(self.rows) or index.column() >= len(self.HEADERS):
            return None
        text = self.rows[index.row()][index.column()]
        if role == _DISPLAY:
            return text if len(text) <= 200 else text[:200] + "…"
        if role == Qt.ItemDataRole.ToolTipRole:
            return text[:2000]
        return None

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = _DISPLAY) -> Any:  # noqa: N802
        if role == _DISPLAY and orientation == Qt.Orientation.Horizontal and section < len(self.HEADERS):
            return self.HEADERS[section]
        return None
