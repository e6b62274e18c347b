"""A SQL script that fills several tables: the source panel lists them; load all or the one picked."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

from tests.ui.test_main_window import _count, _open, _run


def _script(path: Path, a: str, b: str) -> Path:
    path.write_text(
        "SET client_encoding = 'UTF8';\n"
        f"COPY public.{a} (k, v) FROM stdin;\n1\tone\n2\ttwo\n\\.\n\n"
        + "".join(f"INSERT INTO public.{b} (k, v) VALUES ({i}, 'it''s {i}');\n" for i in range(5)),
        encoding="utf-8",
    )
    return path


def test_pick_list_loads_all_tables_or_one(
    qtbot: Any, window: Any, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path
) -> None:
    w = window
    a, b = table_name("sa"), table_name("sb")
    for t in (a, b):
        conn.execute(sql.SQL("CREATE TABLE {} (k int, v text)").format(sql.Identifier(t)))
    _open(qtbot, w, _script(tmp_path / "db.sql", a, b))
    combo = w.script_table_combo
    assert [combo.itemText(i) for i in range(combo.count())] == [
        "all 2 tables (7 rows)", f"public.{a} (2 rows)", f"public.{b} (5 rows)",
    ]
    w.mode_combo.setCurrentText("append")
    w.set_strategy("copy-csv")
    result = _run(qtbot, w)
    assert result.rows_loaded == 7 and (_count(conn, a), _count(conn, b)) == (2, 5)
    # The mapping follows the new table on a worker; windows that announce it say so.
    ready = [w.source_ready] + ([w.mapping_ready] if hasattr(w, "mapping_ready") else [])
    with qtbot.waitSignals(ready, timeout=30_000):
        combo.setCurrentIndex(2)
        combo.activated.emit(2)
    assert w.table_combo.currentText() == b and w.preview.rowCount() == 5
    result = _run(qtbot, w)
    assert result.rows_loaded == 5 and (_count(conn, a), _count(conn, b)) == (2, 10)


def test_picked_table_of_an_inserts_dump_is_mapped_by_position(
    qtbot: Any, window: Any, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path
) -> None:
    """pg_dump --inserts names no columns: picking one table maps its rows onto that table's columns in order."""
    w = window
    a, b = table_name("ia"), table_name("ib")
    conn.execute(sql.SQL("CREATE TABLE {} (k int, v text)").format(sql.Identifier(a)))
    conn.execute(sql.SQL("CREATE TABLE {} (id int, flown date, note text, extra int DEFAULT 7)").format(
        sql.Identifier(b)))
    script = tmp_path / "inserts.sql"
    script.write_text(
        "SET client_encoding = 'UTF8';\n"
        + "".join(f"INSERT INTO public.{a} VALUES ({i}, 'a{i}');\n" for i in range(3))
        + "".join(f"INSERT INTO public.{b} VALUES ({i}, '2013-01-0{i + 1}', 'it''s {i}');\n" for i in range(4)),
        encoding="utf-8",
    )
    with qtbot.waitSignal(w.database_ready, timeout=30_000):
        w.refresh_database()  # the two tables are new: the target list must know them
    _open(qtbot, w, script)
    combo = w.script_table_combo
    assert combo.itemText(2) == f"public.{b} (4 rows)"
    # source_ready, then the mapping onto the existing table (its columns come from a worker)
    with qtbot.waitSignals([w.source_ready, w.mapping_ready], order="simple", timeout=30_000):
        combo.setCurrentIndex(2)
        combo.activated.emit(2)
    assert w.table_combo.currentText() == b
    assert [(m.source, m.target, m.include) for m in w.mapping.maps] == [
        ("column_1", "id", True), ("column_2", "flown", True), ("column_3", "note", True),
    ]
    assert w.mapping.unmatched() == []
    w.mode_combo.setCurrentText("append")
    result = _run(qtbot, w)
    assert result.rows_loaded == 4 and _count(conn, a) == 0
    rows = conn.execute(sql.SQL("SELECT id, flown::text, note, extra FROM {} ORDER BY id").format(
        sql.Identifier(b))).fetchall()
    assert rows == [(i, f"2013-01-0{i + 1}", f"it's {i}", 7) for i in range(4)]
