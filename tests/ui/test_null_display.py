"""A real NULL and the text 'NULL' look different (grey italics for NULL) in the preview, the
mapping's Sample column and Show table (issue 24, item 9)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import polars as pl
import psycopg
from psycopg import sql
from PySide6.QtCore import QAbstractItemModel, QModelIndex, Qt
from PySide6.QtGui import QColor, QFont

from core.spec import ColumnMap
from tests.ui.test_main_window import _open, _run
from ui.table_models import NULL_COLOR, MappingModel, PreviewModel, RowsModel

FONT, FG = Qt.ItemDataRole.FontRole, Qt.ItemDataRole.ForegroundRole


def _looks(model: QAbstractItemModel, index: QModelIndex) -> tuple[str, bool, QColor | None]:
    """(display text, italic?, text colour) of a cell."""
    font = model.data(index, FONT)
    colour = model.data(index, FG)
    return model.data(index), isinstance(font, QFont) and font.italic(), colour


def _is_null(model: QAbstractItemModel, index: QModelIndex) -> bool:
    return _looks(model, index) == ("NULL", True, NULL_COLOR)


def _is_text_null(model: QAbstractItemModel, index: QModelIndex) -> bool:
    text, italic, colour = _looks(model, index)
    return text == "NULL" and not italic and colour is None


def test_preview_draws_a_real_null_apart_from_the_text() -> None:
    model = PreviewModel()
    model.set_frame(pl.DataFrame({"name": ["NULL", None], "n": [None, 2]}), ["text", "integer"])
    assert _is_text_null(model, model.index(0, 0)) and _is_null(model, model.index(1, 0))
    assert _is_null(model, model.index(0, 1))
    assert model.data(model.index(1, 1), FONT) is None and model.data(model.index(1, 1)) == "2"
    assert "no value" in model.data(model.index(1, 0), Qt.ItemDataRole.ToolTipRole)


def test_show_table_rows_draw_null_apart() -> None:
    model = RowsModel(["a", "b"], ["text", "text"], [("NULL", None)])
    assert _is_text_null(model, model.index(0, 0)) and _is_null(model, model.index(0, 1))


def test_mapping_sample_draws_null_apart() -> None:
    model = MappingModel()
    maps = [ColumnMap(source="a", target="a", type="text"), ColumnMap(source="b", target="b", type="text")]
    model.set_mapping(maps, {"a": "NULL", "b": None})
    assert _is_text_null(model, model.index(0, MappingModel.SAMPLE))
    assert _is_null(model, model.index(1, MappingModel.SAMPLE))
    assert model.data(model.index(1, MappingModel.TARGET)) == "b"  # the rest of the row as before
    assert model.data(model.index(1, MappingModel.TARGET), FONT) is None


def test_the_window_shows_null_apart_in_preview_sample_and_show_table(
    qtbot: Any, window: Any, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path
) -> None:
    """Text NULL in a text column stays text; an empty field in a number column is a real NULL."""
    w = window
    path = tmp_path / "nulls.csv"
    path.write_text("name,amount\nNULL,\nann,3\n", encoding="utf-8")
    _open(qtbot, w, path)
    assert _is_text_null(w.preview, w.preview.index(0, 0)) and _is_null(w.preview, w.preview.index(0, 1))
    assert _is_text_null(w.mapping, w.mapping.index(0, MappingModel.SAMPLE))
    assert _is_null(w.mapping, w.mapping.index(1, MappingModel.SAMPLE))
    table = table_name("nulls")
    w.table_combo.setEditText(table)
    _run(qtbot, w)
    got = conn.execute(sql.SQL("SELECT name, amount FROM {} ORDER BY amount NULLS FIRST").format(sql.Identifier(table)))
    assert got.fetchall() == [("NULL", None), ("ann", 3)]
    with qtbot.waitSignal(w.table_shown, timeout=30_000) as shown:
        w.show_table_btn.click()
    rows = shown.args[0].model
    assert not shown.args[0].view.tabKeyNavigation()  # Tab reaches Close instead of walking 1,000 rows
    first = [r for r in range(rows.rowCount()) if rows.data(rows.index(r, 0)) == "NULL"]
    assert len(first) == 1
    assert _is_text_null(rows, rows.index(first[0], 0)) and _is_null(rows, rows.index(first[0], 1))
    shown.args[0].close()
