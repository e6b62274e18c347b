"""Dates in the window (issue 24, item 11): the Warning column says which value made a column text,
an impossible or relative date is warned of, and the load refuses relative dates."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql


def test_warnings_name_the_value_and_the_load_refuses_relative_dates(
    qtbot: Any, window: Any, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path
) -> None:
    w = window
    path = tmp_path / "visits.csv"
    path.write_text("id,day,seen\n1,2024-01-05,2024-01-05\n2,2024-01-06,yesterday\n3,2024-02-30,2024-01-07\n"
                    "4,2024-01-08,epoch\n5,2024-01-09,today\n", encoding="utf-8")
    with qtbot.waitSignal(w.source_ready, timeout=30_000):
        w.path_edit.setText(str(path))
        w.path_edit.returnPressed.emit()
    m = w.mapping
    assert [x.type for x in m.maps] == ["integer", "text", "text"]
    assert m.warning(1) == "'2024-02-30' made it text; the other 4 sample values are dates"
    assert m.warning(2).startswith("'yesterday', 'today' made it text (relative date words are not dates)")
    for row in (1, 2):
        assert m.setData(m.index(row, m.TYPE), "date")
    assert m.warning(1) == "1 of 5 sample rows not date: '2024-02-30'"
    assert m.warning(2).startswith("2 of 5 sample rows not date: 'yesterday', 'today'; relative date words")
    assert "CREATE TABLE" in w.ddl_edit.toPlainText() and '"seen" date' in w.ddl_edit.toPlainText()
    table = table_name("visits")
    w.table_combo.setEditText(table)
    w.mode_combo.setCurrentText("create")
    w.policy_combo.setCurrentText("skip")
    with qtbot.waitSignal(w.run_finished, timeout=60_000) as done:
        w.run_btn.click()
    result = done.args[0]
    assert (result.rows_loaded, result.rows_rejected) == (2, 3)
    rows = conn.execute(sql.SQL("SELECT id, day::text, seen::text FROM {} ORDER BY id").format(
        sql.Identifier(table))).fetchall()
    assert rows == [(1, "2024-01-05", "2024-01-05"), (4, "2024-01-08", "1970-01-01")]
    listed = [(r[0], r[2], r[3]) for r in w.rejects.rows]  # line, column, value
    assert listed == [("3", "seen", "yesterday"), ("4", "day", "2024-02-30"), ("6", "seen", "today")]
    assert w.rejects.rows[0][4].startswith("a relative date word")


def test_an_existing_text_column_is_not_said_to_be_made_text(
    qtbot: Any, window: Any, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path
) -> None:
    """The table's own text column: no value made it text, so the Warning column says nothing."""
    w = window
    table = table_name("codes")
    conn.execute(sql.SQL("CREATE TABLE {} (code text)").format(sql.Identifier(table)))
    path = tmp_path / "codes.csv"
    path.write_text("code\n1\n2\nx9\n4\n", encoding="utf-8")
    with qtbot.waitSignal(w.source_ready, timeout=30_000):
        w.path_edit.setText(str(path))
        w.path_edit.returnPressed.emit()
    assert w.mapping.warning(0).startswith("'x9' made it text")  # a new table's inferred type
    w.refresh_table_list_quietly()
    qtbot.waitUntil(lambda: table in w.targets.db.tables.get("public", []), timeout=30_000)
    with qtbot.waitSignal(w.mapping_ready, timeout=30_000):
        w.table_combo.setEditText(table)
    assert w.mapping.maps[0].type == "text" and w.mapping.warning(0) == ""
