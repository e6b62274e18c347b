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
