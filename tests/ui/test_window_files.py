"""Files as people have them, in the window (issue 26): PostgreSQL's own text export opens as
such, and an empty file says so and loads nothing."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql


def _open(qtbot: Any, w: Any, path: Path) -> None:
    with qtbot.waitSignal(w.source_ready, timeout=30_000):
        w.path_edit.setText(str(path))
        w.path_edit.returnPressed.emit()


def test_a_psql_export_opens_as_pgtext_and_loads_back(
    qtbot: Any, window: Any, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path,
) -> None:
    w = window
    path = tmp_path / "export.txt"
    path.write_bytes(b"1\ttab\\there\t\\N\n2\t\t\\\\N\n")
    _open(qtbot, w, path)
    assert w.format_combo.currentText() == "pgtext" and not w.source_panel.header_check.isChecked()
    assert w.source_panel.preview.rowCount() == 2
    table = table_name("pgexport")
    w.table_combo.setEditText(table)
    with qtbot.waitSignal(w.run_finished, timeout=60_000):
        w.run_btn.click()
    rows = conn.execute(sql.SQL("SELECT * FROM {} ORDER BY 1").format(sql.Identifier(table))).fetchall()
    assert rows == [(1, "tab\there", None), (2, "", "\\N")]


def test_an_empty_file_says_so_and_loads_nothing(
    qtbot: Any, window: Any, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path,
) -> None:
    w = window
    table = table_name("monthly")
    conn.execute(sql.SQL("CREATE TABLE {} (id int, name text)").format(sql.Identifier(table)))
    conn.execute(sql.SQL("INSERT INTO {} VALUES (1, 'kept')").format(sql.Identifier(table)))
    path = tmp_path / "march.csv"
    path.write_bytes(b"")
    _open(qtbot, w, path)
    assert "the file is empty" in w.source_status.text()
    texts: list[str] = []
    w.foresight.updated.connect(texts.append)
    w.refresh_table_list_quietly()
    qtbot.waitUntil(lambda: table in w.targets.db.tables.get("public", []), timeout=30_000)
    w.table_combo.setEditText(table)
    qtbot.waitUntil(lambda: any("the file is empty" in t for t in texts), timeout=30_000)
    assert "0 rows loaded" in w.run_panel.plan_label.text() and "batches" not in w.run_panel.plan_label.text()
    with qtbot.waitSignal(w.run_finished, timeout=60_000) as done:
        w.run_btn.click()
    assert done.args[0].rows_loaded == 0 and "the file is empty" in done.args[0].note
    assert conn.execute(sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(table))).fetchone() == (1,)
