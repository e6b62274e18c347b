"""The Load tab: modes that cannot work are said before Run, only files that opened
are remembered, a failed run does not look done, and the window fits a 1366x768 screen."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

from tests.ui.test_main_window import _count, _csv, _open, _run
from tests.ui.test_script_tables import _script


def _existing(qtbot: Any, w: Any, conn: psycopg.Connection[Any], table: str, path: Path) -> None:
    """An existing (id int, name text, score float8) table, the file opened and mapped onto it."""
    conn.execute(sql.SQL("CREATE TABLE {} (id int, name text, score float8)").format(sql.Identifier(table)))
    with qtbot.waitSignal(w.database_ready, timeout=30_000):
        w.refresh_database()
    _open(qtbot, w, path)
    with qtbot.waitSignal(w.mapping_ready, timeout=30_000):
        w.table_combo.setEditText(table)


def test_a_missing_file_is_not_remembered(qtbot: Any, window: Any, tmp_path: Path) -> None:
    """Only files that opened go into Recent files and the last folder."""
    w = window
    w.path_edit.setText(str(tmp_path / "nodir" / "missing.csv"))
    w.path_edit.returnPressed.emit()
    qtbot.waitUntil(lambda: bool(w.messages), timeout=30_000)
    assert w.settings.recent_files == [] and w.settings.last_folder == ""
    assert not w.recent_menu.isEnabled()
    path = _csv(tmp_path / "there.csv", 3)
    _open(qtbot, w, path)
    assert w.settings.recent_files == [str(path)] and w.settings.last_folder == str(tmp_path)


def test_after_create_the_next_run_appends(
    qtbot: Any, window: Any, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path
) -> None:
    """A create that succeeded leaves mode append and the new table in the list."""
    w = window
    _open(qtbot, w, _csv(tmp_path / "made.csv", 20))
    table = table_name("made")
    w.table_combo.setEditText(table)
    assert w.mode_combo.currentText() == "create"
    _run(qtbot, w)
    assert w.mode_combo.currentText() == "append"
    assert table in [w.table_combo.itemText(i) for i in range(w.table_combo.count())]
    _run(qtbot, w)  # the append question is answered yes
    assert _count(conn, table) == 40 and any("Append 20 rows" in m for m in w.messages)


def test_create_onto_an_existing_table_is_said_and_refused(
    qtbot: Any, window: Any, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path
) -> None:
    """Mode create for a table that exists: the plan line says so and Run refuses up front."""
    w = window
    table = table_name("there")
    _existing(qtbot, w, conn, table, _csv(tmp_path / "there.csv", 5))
    with qtbot.waitSignal(w.foresight.updated, timeout=30_000,
                          check_params_cb=lambda text: "already exists" in text):
        w.mode_combo.setCurrentText("create")
    assert "choose append" in w.run_panel.plan_label.text()
    with qtbot.waitSignal(w.run_refused, timeout=10_000) as refused:
        w.run_btn.click()
    assert "already exists" in refused.args[0] and _count(conn, table) == 0


def test_all_tables_of_a_script_offer_append_or_truncate(
    qtbot: Any, window: Any, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path
) -> None:
    """Several tables: no create or upsert, no single table name, the question counts every table."""
    w = window
    a, b = table_name("qa"), table_name("qb")
    for t in (a, b):
        conn.execute(sql.SQL("CREATE TABLE {} (k int, v text)").format(sql.Identifier(t)))
    conn.execute(sql.SQL("INSERT INTO {} VALUES (9, 'old')").format(sql.Identifier(a)))
    with qtbot.waitSignal(w.database_ready, timeout=30_000):
        w.refresh_database()
    _open(qtbot, w, _script(tmp_path / "two.sql", a, b))
    model = w.mode_combo.model()
    enabled = {w.mode_combo.itemText(i): model.item(i).isEnabled() for i in range(w.mode_combo.count())}
    assert enabled == {"append": True, "truncate": True, "create": False, "upsert": False}
    assert w.mode_combo.currentText() == "append"
    assert w.table_combo.isHidden() and "2 tables" in w.target_panel.tables_note.text()
    assert "2 tables, 7 rows" in w.source_status.text()
    conn.execute(sql.SQL("ALTER TABLE {} RENAME TO {}").format(sql.Identifier(b), sql.Identifier(b + "x")))
    with qtbot.waitSignal(w.foresight.updated, timeout=30_000, check_params_cb=lambda t: "not exist" in t):
        w.refresh_database()  # a table the script fills is missing: the plan says so before Run
    conn.execute(sql.SQL("ALTER TABLE {} RENAME TO {}").format(sql.Identifier(b + "x"), sql.Identifier(b)))
    with qtbot.waitSignal(w.database_ready, timeout=30_000):
        w.refresh_database()
    result = _run(qtbot, w)
    assert result.rows_loaded == 7 and (_count(conn, a), _count(conn, b)) == (3, 5)
    assert any(f"to the script's 2 tables (public.{a}: 2, public.{b}: 5)" in m for m in w.messages)
    with qtbot.waitSignal(w.source_ready, timeout=30_000):  # one table picked: every mode again
        w.script_table_combo.setCurrentIndex(2)
        w.script_table_combo.activated.emit(2)
    assert model.item(w.mode_combo.findText("create")).isEnabled() and not w.table_combo.isHidden()


def test_wording_and_a_failed_run(
    qtbot: Any, window: Any, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path
) -> None:
    """One row (not "1 rows"), auto's pick in History, "auto" in the batch box, a failed bar empty."""
    w = window
    assert w.batch_spin.text() == "auto" and not w.batch_spin.isEnabled() and "auto picks" in w.batch_spin.toolTip()
    path = tmp_path / "one_bad.csv"
    path.write_text("id,name,score\n1,a,1\nx,b,2\n3,c,3\n", encoding="utf-8")
    table = table_name("word")
    _existing(qtbot, w, conn, table, path)
    w.policy_combo.setCurrentText("skip")
    _run(qtbot, w)
    assert "1 row was rejected" in w.summary.text()
    used = w.history.rows[-1][w.history.STRATEGY]
    assert used.startswith("auto → ") and used != "auto → auto"
    w.policy_combo.setCurrentText("abort")
    with qtbot.waitSignal(w.run_failed, timeout=60_000):
        w.run_btn.click()
    assert w.progress.value() == 0 and w.progress.format() == "failed"
    w.set_strategy("unnest", 500)
    assert w.batch_spin.text() == "500" and w.batch_spin.isEnabled()


def test_the_window_fits_a_small_screen(qtbot: Any, window: Any, tmp_path: Path) -> None:
    """Fits 1366x768 and 1024x700, even after a file with a long status line opened."""
    w = window
    wide = tmp_path / "a_file_with_rather_long_column_names.csv"
    names = [f"column_with_a_long_name_{i}" for i in range(30)]
    wide.write_text(",".join(names) + "\n" + ",".join("NA" if i % 3 else str(i) for i in range(30)) + "\n",
                    encoding="utf-8")
    _open(qtbot, w, wide)
    hint = w.minimumSizeHint()
    assert hint.width() <= 1024 and hint.height() <= 700, hint
    w.resize(1366, 740)
    w.show()
    qtbot.waitExposed(w)
    assert w.width() == 1366
    view, header = w.mapping_view, w.mapping_view.horizontalHeader()
    for col in (w.mapping.TARGET, w.mapping.TYPE, w.mapping.INCLUDE):  # in sight without scrolling
        assert header.sectionViewportPosition(col) + header.sectionSize(col) <= view.viewport().width(), col
    assert w.source_status.toolTip() == w.source_status.text()
    w.resize(1024, 700)
    qtbot.waitUntil(lambda: w.width() == 1024 and w.height() == 700)


def test_a_file_that_writes_null_two_ways_loads_from_the_window(
    qtbot: Any, window: Any, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path
) -> None:
    """NULL among the numbers and nothing in a boolean column: the window passes the sniffed marker
    back with where empty fields are NULL too, so its default load works (it once failed on '')."""
    w = window
    path = tmp_path / "both.csv"
    path.write_text('code,amount,flag\n00123,12.5,true\n01234,NULL,\n00007,3,false\n', encoding="utf-8")
    _open(qtbot, w, path)
    assert "empty fields are NULL too in flag" in w.source_status.toolTip() + w.source_status.text()
    table = table_name("both")
    w.table_combo.setEditText(table)
    _run(qtbot, w)
    got = conn.execute(sql.SQL("SELECT code, amount, flag FROM {} ORDER BY code").format(
        sql.Identifier(table))).fetchall()
    assert got == [("00007", 3.0, False), ("00123", 12.5, True), ("01234", None, None)]


def test_narrow_mapping_titles_read_from_their_start(window: Any) -> None:
    """Centred, a title wider than its column showed its middle ("ource colum", seen at 1366x768):
    it is left-aligned and elided at the right, and its tooltip holds it whole."""
    from PySide6.QtCore import Qt

    header = window.mapping_view.horizontalHeader()
    assert header.defaultAlignment() & Qt.AlignmentFlag.AlignLeft
    assert header.textElideMode() == Qt.TextElideMode.ElideRight
    model = window.mapping
    tips = [model.headerData(c, Qt.Orientation.Horizontal, Qt.ItemDataRole.ToolTipRole) for c in range(model.columnCount())]
    assert tips == list(model.HEADERS)
