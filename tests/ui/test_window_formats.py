"""Value formats in the window: the preview and the mapping's Format column show what was
inferred, the user changes or clears it (a new table's type follows), and the load uses it."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql
from PySide6.QtCore import Qt

from tests.ui.test_main_window import _open, _run
from tests.ui.test_window_modes_and_fit import _existing


def _column(w: Any, source: str) -> int:
    return next(i for i, m in enumerate(w.mapping.maps) if m.source == source)


def test_formats_are_shown_changed_cleared_and_loaded(
    qtbot: Any, window: Any, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path
) -> None:
    w = window
    path = tmp_path / "sheet.csv"
    path.write_text("id;day;amount;ambiguous\n1;15.03.2024;1.234,50;03/04/2024\n2;01.12.2023;-7,25;05/06/2024\n"
                    "3;29.02.2024;1.000.000;12/11/2024\n", encoding="utf-8")
    _open(qtbot, w, path)
    header = w.preview.headerData(1, Qt.Orientation.Horizontal)
    assert header.endswith("date\nDD.MM.YYYY"), header
    table = table_name("sheet")
    with qtbot.waitSignal(w.mapping_ready, timeout=30_000):
        w.table_combo.setEditText(table)
    m = w.mapping
    day, amount, amb = _column(w, "day"), _column(w, "amount"), _column(w, "ambiguous")
    assert m.data(m.index(day, m.FORMAT)) == "DD.MM.YYYY" and m.data(m.index(day, m.TYPE)) == "date"
    assert m.data(m.index(amount, m.FORMAT)) == "1.234,56" and m.data(m.index(amount, m.TYPE)) == "numeric"
    assert m.data(m.index(amb, m.FORMAT)) == "" and m.data(m.index(amb, m.TYPE)) == "text"  # March or April?
    assert m.flags(m.index(amb, m.FORMAT)) & Qt.ItemFlag.ItemIsEditable
    # The user says day first; clears the amount's format (its type goes back to text); a typo is refused.
    assert m.setData(m.index(amb, m.FORMAT), "DD/MM/YYYY")
    assert m.data(m.index(amb, m.TYPE)) == "date"
    assert m.setData(m.index(amount, m.FORMAT), "")
    assert m.data(m.index(amount, m.TYPE)) == "text"
    assert not m.setData(m.index(day, m.FORMAT), "DD.MM.YY")
    # A format the values do not fit is warned of in the mapping, before any run.
    assert m.setData(m.index(day, m.FORMAT), "MM/DD/YYYY")
    assert m.data(m.index(day, m.WARNING)) == "3 of 3 sample rows not MM/DD/YYYY: '15.03.2024', '01.12.2023', '29.02.2024'"
    assert m.setData(m.index(day, m.FORMAT), "DD.MM.YYYY") and m.data(m.index(day, m.WARNING)) == ""
    assert "CREATE TABLE" in w.ddl_edit.toPlainText() and '"ambiguous" date' in w.ddl_edit.toPlainText()
    result = _run(qtbot, w)
    assert result.rows_loaded == 3
    got = conn.execute(sql.SQL("SELECT day, amount, ambiguous FROM {} ORDER BY id").format(
        sql.Identifier(table))).fetchall()
    assert got == [(dt.date(2024, 3, 15), "1.234,50", dt.date(2024, 4, 3)),
                   (dt.date(2023, 12, 1), "-7,25", dt.date(2024, 6, 5)),
                   (dt.date(2024, 2, 29), "1.000.000", dt.date(2024, 11, 12))]


def test_an_existing_date_column_fed_a_spreadsheet_date(
    qtbot: Any, window: Any, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path
) -> None:
    """Onto an existing table: the date column gets the format its values prove; a text column none."""
    w = window
    path = tmp_path / "eu.csv"
    path.write_text("id;name;score\n1;15.03.2024;1,5\n2;01.12.2023;2,25\n", encoding="utf-8")
    table = table_name("eu")
    _existing(qtbot, w, conn, table, path)  # (id int, name text, score float8)
    m = w.mapping
    assert m.data(m.index(_column(w, "name"), m.FORMAT)) == ""  # text takes the values as written
    assert m.data(m.index(_column(w, "score"), m.FORMAT)) == "1234,56"
    _run(qtbot, w)
    got = conn.execute(sql.SQL("SELECT name, score FROM {} ORDER BY id").format(sql.Identifier(table))).fetchall()
    assert got == [("15.03.2024", 1.5), ("01.12.2023", 2.25)]


def test_a_marker_kept_as_text_is_said_and_can_apply_everywhere(
    qtbot: Any, window: Any, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path
) -> None:
    """R's NA among numbers is NULL, as a tail number it is text: the panel says so in full, with
    counts, and NULL everywhere reads it as NULL there too (as --null NA does)."""
    w = window
    path = tmp_path / "flights.csv"
    path.write_text("dep_time,tailnum\n" + "".join(f"{'NA' if i % 4 == 0 else i},{'NA' if i % 3 == 0 else f'N{i}X'}\n"
                                                     for i in range(40)), encoding="utf-8")
    _open(qtbot, w, path)
    s = w.source_panel
    assert s.null_label.isVisibleTo(w) and s.null_everywhere_btn.isVisibleTo(w)
    assert "kept as text in tailnum (14×)" in s.null_label.text() and "read as NULL in 1 column" in s.null_label.text()
    with qtbot.waitSignal(w.source_ready, timeout=30_000):
        s.null_everywhere_btn.click()
    assert not s.null_label.isVisibleTo(w) and not s.null_everywhere_btn.isVisibleTo(w)
    table = table_name("fl")
    with qtbot.waitSignal(w.mapping_ready, timeout=30_000):
        w.table_combo.setEditText(table)
    _run(qtbot, w)
    got = conn.execute(sql.SQL("SELECT count(*) FILTER (WHERE dep_time IS NULL), count(*) FILTER (WHERE tailnum "
                               "IS NULL) FROM {}").format(sql.Identifier(table))).fetchone()
    assert got == (10, 14)


def test_a_space_delimiter_shows_as_space_and_reads_back(qtbot: Any, window: Any, tmp_path: Path) -> None:
    """A table R wrote with single spaces: the delimiter box says `space` (a bare space cannot be
    seen), and the options it gives back split at spaces."""
    from tests.core.test_defaults import _r_write_table

    w = window
    _open(qtbot, w, _r_write_table(tmp_path / "anes.txt"))
    assert w.source_panel.delim_edit.text() == "space"
    assert w.sources.options().delimiter == " "
