"""Thin table models: the preview grid, the mapping editor, the rejected rows and a table's rows."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import polars as pl
from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, Qt
from PySide6.QtGui import QColor, QFont

from core.mapping import unmatched
from core.preview import sample_warnings
from core.sources.base import BadRecord
from core.spec import ColumnMap

Index = QModelIndex | QPersistentModelIndex
_DISPLAY = Qt.ItemDataRole.DisplayRole
_TOOLTIP = Qt.ItemDataRole.ToolTipRole

# A real NULL is drawn apart from the text "NULL" (grey italics, as DBeaver and pgAdmin draw it).
NULL_TEXT = "NULL"
NULL_COLOR = QColor("#8a8a8a")
NULL_TIP = "NULL: no value (not the text 'NULL')"


def null_data(role: int) -> Any:
    """What a cell holding a real NULL answers for `role` (None for roles it does not serve)."""
    if role == _DISPLAY:
        return NULL_TEXT
    if role == _TOOLTIP:
        return NULL_TIP
    if role == Qt.ItemDataRole.ForegroundRole:
        return NULL_COLOR
    if role == Qt.ItemDataRole.FontRole:
        font = QFont()
        font.setItalic(True)
        return font
    return None

FORMAT_TIP = ("How the file writes this column's dates, times or numbers (e.g. MM/DD/YYYY, DD.MM.YYYY HH:MM, "
              "1.234,56); they load as the target type. Empty: loaded as written.")


class PreviewModel(QAbstractTableModel):
    """The first rows of the source, malformed records in place (marked, with their reason).

    The header shows each column's inferred type; a malformed record's text and reason stand
    in its first column (the view spans it across the row).
    """

    BAD_COLOR = QColor("#fde2e1")

    def __init__(self) -> None:
        super().__init__()
        self._frame = pl.DataFrame()
        self._types: list[str] = []
        self._rows: list[int | BadRecord] = []  # per shown row: the frame's row, or a malformed record

    def set_frame(self, frame: pl.DataFrame, types: list[str], bad: Sequence[BadRecord] = ()) -> None:
        self.beginResetModel()
        self._frame, self._types = frame, types
        # Bad records hold source row numbers like good ones: the good rows fill the gaps, in order.
        by_row = {b.row: b for b in bad}
        rows: list[int | BadRecord] = []
        good = 0
        for r in range(frame.height + len(by_row)):
            if r in by_row:
                rows.append(by_row[r])
            elif good < frame.height:
                rows.append(good)
                good += 1
        self._rows = rows
        self.endResetModel()

    def bad_rows(self) -> list[int]:
        """Shown rows that are malformed records."""
        return [i for i, r in enumerate(self._rows) if isinstance(r, BadRecord)]

    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008, N802
        return 0 if parent.isValid() else len(self._rows)

    def columnCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008, N802
        return 0 if parent.isValid() else self._frame.width

    def data(self, index: Index, role: int = _DISPLAY) -> Any:
        if not index.isValid() or index.row() >= len(self._rows) or index.column() >= self._frame.width:
            return None
        row = self._rows[index.row()]
        if isinstance(row, BadRecord):
            if role == Qt.ItemDataRole.BackgroundRole:
                return self.BAD_COLOR
            if role == _DISPLAY and index.column() == 0:
                return f"⚠ line {row.line}: {row.reason} — {row.record[:150]}"
            if role == Qt.ItemDataRole.ToolTipRole:
                return f"Line {row.line}: this record {row.reason}; it is not a row.\n{row.record[:1000]}"
            return None
        v = self._frame[row, index.column()]
        if v is None:
            return null_data(role)
        return str(v)[:200] if role in (_DISPLAY, _TOOLTIP) else None

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = _DISPLAY) -> Any:  # noqa: N802
        if role != _DISPLAY:
            return None
        if orientation == Qt.Orientation.Vertical:
            if section < len(self._rows) and isinstance(self._rows[section], BadRecord):
                return "⚠"
            return str(section + 1)
        if section >= self._frame.width:
            return None
        t = self._types[section] if section < len(self._types) else ""
        return f"{self._frame.columns[section]}\n{t}"


class MappingModel(QAbstractTableModel):
    """Source column, sample, target column, target type, value format, include, warning.

    The user's edits (target name, type, include) are kept per source column and laid over
    every new mapping (another table name, another file with that column) until `reset_edits`.
    Onto an existing table the table's types hold, and a column it does not have is unmatched.
    """

    HEADERS = ("Source column", "Sample", "Target column", "Target type", "Format", "Include", "Warning")
    SOURCE, SAMPLE, TARGET, TYPE, FORMAT, INCLUDE, WARNING = range(7)

    def __init__(self) -> None:
        super().__init__()
        self.maps: list[ColumnMap] = []
        self._samples: dict[str, str | None] = {}
        self._sample = pl.DataFrame()
        self.table_columns: list[str] | None = None  # the existing table's columns; None for a new table
        self._table_types: dict[str, str] = {}
        self.edits: dict[str, dict[str, Any]] = {}  # source column -> {"target"/"type"/"format"/"include": value}
        self._notes: list[str] = []

    def set_mapping(
        self, maps: list[ColumnMap], samples: dict[str, str | None], sample: pl.DataFrame | None = None,
        table: Sequence[tuple[str, str]] | None = None,
    ) -> None:
        """`table`: the existing target's (name, type) columns, or None for a new table."""
        self.beginResetModel()
        self._samples = samples
        if sample is not None:
            self._sample = sample
        self.table_columns = None if table is None else [n for n, _ in table]
        self._table_types = dict(table or [])
        for m in maps:
            self._lay_edits(m)
        self.maps = maps
        self._recheck()
        self.endResetModel()

    def table(self) -> list[tuple[str, str]] | None:
        """The existing target's (name, type) columns; None for a new table."""
        return None if self.table_columns is None else list(self._table_types.items())

    def adopt_edits(self, maps: Sequence[ColumnMap]) -> None:
        """Take a mapping (from a profile) as the user's own edits."""
        for m in maps:
            if m.source is not None:
                self.edits[m.source] = {"target": m.target, "type": m.type, "include": m.include, "format": m.format}

    def reset_edits(self) -> None:
        self.edits.clear()

    def _lay_edits(self, m: ColumnMap) -> None:
        e = self.edits.get(m.source or "")
        if not e:
            return
        m.target = e.get("target", m.target)
        m.include = e.get("include", m.include)
        m.format = e.get("format", m.format)
        if self.table_columns is None:
            m.type = e.get("type", m.type)
        elif m.target in self._table_types:
            m.type = self._table_types[m.target]

    def unmatched(self) -> list[ColumnMap]:
        """Included columns the existing table does not have: the run waits until each is matched or skipped."""
        if self.table_columns is None:
            return []
        from core.db import Column

        return unmatched(self.maps, [Column(n, t) for n, t in self._table_types.items()])

    def _recheck(self) -> None:
        self._notes = (sample_warnings(self._sample, self.maps, new_table=self.table_columns is None)
                       if self._sample.width else [""] * len(self.maps))
        missing = {id(m) for m in self.unmatched()}
        for i, m in enumerate(self.maps):
            if id(m) in missing:
                self._notes[i] = f"not in the table ({m.target!r}): pick a column or untick"

    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008, N802
        return 0 if parent.isValid() else len(self.maps)

    def columnCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008, N802
        return 0 if parent.isValid() else len(self.HEADERS)

    def warning(self, row: int) -> str:
        return self._notes[row] if row < len(self._notes) else ""

    def data(self, index: Index, role: int = _DISPLAY) -> Any:
        if not index.isValid() or index.row() >= len(self.maps) or index.column() >= len(self.HEADERS):
            return None
        m, col = self.maps[index.row()], index.column()
        if col == self.SAMPLE and m.source is not None and self._samples.get(m.source, "") is None:
            return null_data(role)  # the first row's value is a real NULL
        if role == Qt.ItemDataRole.CheckStateRole and col == self.INCLUDE:
            return Qt.CheckState.Checked if m.include else Qt.CheckState.Unchecked
        if role == Qt.ItemDataRole.ForegroundRole and col == self.WARNING:
            return QColor("#b35900")
        if role == Qt.ItemDataRole.ForegroundRole and col in (2, 3, self.FORMAT) and m.source in self.edits:
            return QColor("#1f4fb3")  # the user's own choice
        unmatched_row = self.warning(index.row()).startswith("not in the table")
        if role == Qt.ItemDataRole.BackgroundRole and col == 2 and unmatched_row:
            return QColor("#fde2e1")
        if role == Qt.ItemDataRole.ToolTipRole and col == self.FORMAT:
            return f"{m.format}\n\n{FORMAT_TIP}" if m.format else FORMAT_TIP
        if role == Qt.ItemDataRole.ToolTipRole and col in (1, self.WARNING):
            text = self.warning(index.row()) if col == self.WARNING else self._samples.get(m.source or "")
            return text or None
        if role not in (_DISPLAY, Qt.ItemDataRole.EditRole):
            return None
        sample = self._samples.get(m.source or "")
        values = (m.source or "(constant)", "" if sample is None else sample[:60], m.target, m.type,
                  m.format or "", None, self.warning(index.row()))
        return values[col]

    def flags(self, index: Index) -> Qt.ItemFlag:
        if not index.isValid():
            return Qt.ItemFlag.NoItemFlags
        base = Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable
        if index.column() == 2 or (index.column() == 3 and self.table_columns is None):
            return base | Qt.ItemFlag.ItemIsEditable  # an existing table's types are the table's
        if index.column() == self.FORMAT and self.maps[index.row()].source is not None:
            return base | Qt.ItemFlag.ItemIsEditable
        if index.column() == self.INCLUDE:
            return base | Qt.ItemFlag.ItemIsUserCheckable
        return base

    def setData(self, index: Index, value: Any, role: int = Qt.ItemDataRole.EditRole) -> bool:  # noqa: N802
        if not index.isValid() or index.row() >= len(self.maps):
            return False
        m = self.maps[index.row()]
        edit = self.edits.setdefault(m.source or "", {})
        if index.column() == self.INCLUDE and role == Qt.ItemDataRole.CheckStateRole:
            m.include = edit["include"] = Qt.CheckState(value) == Qt.CheckState.Checked
        elif index.column() == 2 and role == Qt.ItemDataRole.EditRole and str(value).strip():
            m.target = edit["target"] = str(value).strip()
            if m.target in self._table_types:
                m.type = self._table_types[m.target]
        elif index.column() == 3 and role == Qt.ItemDataRole.EditRole and str(value).strip():
            m.type = edit["type"] = str(value).strip()
        elif index.column() == self.FORMAT and role == Qt.ItemDataRole.EditRole:
            if not self._set_format(m, edit, str(value)):
                return False
        else:
            if not edit:
                del self.edits[m.source or ""]
            return False
        self._recheck()
        self.dataChanged.emit(self.index(index.row(), 0), self.index(index.row(), len(self.HEADERS) - 1))
        return True

    def _set_format(self, m: ColumnMap, edit: dict[str, Any], text: str) -> bool:
        """A format typed or picked (empty: none); a new table's type follows it. False if not a format."""
        from core.column_formats import settle
        from core.errors import ConfigError

        try:
            settle([m], self._sample if m.source in self._sample.columns else None, {m.source or "": text.strip()},
                   new_table=self.table_columns is None, explicit=True)
        except ConfigError:
            return False
        edit["format"] = m.format
        if self.table_columns is None:
            edit["type"] = m.type
        return True

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = _DISPLAY) -> Any:  # noqa: N802
        shown = role in (_DISPLAY, Qt.ItemDataRole.ToolTipRole)  # the tooltip: a narrow column elides it
        if shown and orientation == Qt.Orientation.Horizontal and section < len(self.HEADERS):
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
        self.headers: tuple[str, ...] = self.HEADERS

    def load(self, path: str | None) -> None:
        import csv
        import itertools

        self.beginResetModel()
        self.rows, self.total, self.path, self.headers = [], 0, path, self.HEADERS
        if path:
            try:
                with open(path, newline="", encoding="utf-8") as f:
                    reader = csv.reader(f)
                    head = next(reader, None) or []
                    named = len(head) > 6 and head[6] == "file"  # many files into one table: the file first
                    if named:
                        self.headers = ("File", *self.HEADERS)
                    for rec in reader:
                        if len(self.rows) < self.LIMIT:
                            row = tuple(itertools.islice(itertools.chain(rec, [""] * 6), 6))
                            self.rows.append(((rec[6].rsplit("/", 1)[-1] if len(rec) > 6 else ""), *row) if named
                                             else row)
                        self.total += 1
            except OSError:
                pass
        self.endResetModel()

    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008, N802
        return 0 if parent.isValid() else len(self.rows)

    def columnCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008, N802
        return 0 if parent.isValid() else len(self.headers)

    def data(self, index: Index, role: int = _DISPLAY) -> Any:
        if not index.isValid() or index.row() >= len(self.rows) or index.column() >= len(self.headers):
            return None
        text = self.rows[index.row()][index.column()]
        if role == _DISPLAY:
            return text if len(text) <= 200 else text[:200] + "…"
        if role == Qt.ItemDataRole.ToolTipRole:
            return text[:2000]
        return None

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = _DISPLAY) -> Any:  # noqa: N802
        if role == _DISPLAY and orientation == Qt.Orientation.Horizontal and section < len(self.headers):
            return self.headers[section]
        return None


class RowsModel(QAbstractTableModel):
    """Read-only rows of a table (a first look after a load), headed by column name and type."""

    def __init__(self, columns: list[str], types: list[str], rows: list[tuple[Any, ...]]) -> None:
        super().__init__()
        self._columns, self._types, self._rows = columns, types, rows

    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008, N802
        return 0 if parent.isValid() else len(self._rows)

    def columnCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008, N802
        return 0 if parent.isValid() else len(self._columns)

    def data(self, index: Index, role: int = _DISPLAY) -> Any:
        if not index.isValid() or index.row() >= len(self._rows) or index.column() >= len(self._columns):
            return None
        v = self._rows[index.row()][index.column()]
        if v is None:
            return null_data(role)
        if role not in (_DISPLAY, _TOOLTIP):
            return None
        return str(v)[:200 if role == _DISPLAY else 2000]

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = _DISPLAY) -> Any:  # noqa: N802
        if role != _DISPLAY:
            return None
        if orientation == Qt.Orientation.Vertical:
            return str(section + 1)
        if section >= len(self._columns):
            return None
        return f"{self._columns[section]}\n{self._types[section]}"
