"""The window as a daily tool (issue 11): no positional trap, edits that stay, counters that agree,
warnings and bad records in the preview, a check that is rolled back, and the small things."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql
from PySide6.QtCore import Qt

from core.lab.compare import CompareReport, CompareResult


def _write(path: Path, text: str) -> str:
    path.write_text(text, encoding="utf-8")
    return str(path)


def _count(conn: psycopg.Connection[Any], table: str) -> int:
    row = conn.execute(sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(table))).fetchone()
    assert row is not None
    return int(row[0])


def _open(qtbot: Any, w: Any, path: str) -> None:
    with qtbot.waitSignal(w.source_ready, timeout=30_000):
        w.path_edit.setText(path)
        w.path_edit.returnPressed.emit()


def _target(qtbot: Any, w: Any, table: str) -> None:
    """Name an existing table and wait for its mapping (the table is looked up on a worker)."""
    w.refresh_table_list_quietly()
    qtbot.waitUntil(lambda: table in w.targets.db.tables.get("public", []), timeout=30_000)
    with qtbot.waitSignal(w.mapping_ready, timeout=30_000):
        w.table_combo.setEditText(table)


@pytest.fixture
def flights(conn: psycopg.Connection[Any], table_name: Callable[[str], str]) -> str:
    table = table_name("flights")
    conn.execute(sql.SQL("CREATE TABLE {} (year integer, month integer, carrier text)").format(sql.Identifier(table)))
    conn.execute(sql.SQL("INSERT INTO {} VALUES (2013, 1, 'UA'), (2013, 1, 'AA'), (2013, 2, 'B6')")
                 .format(sql.Identifier(table)))
    return table


def test_a_second_file_never_maps_by_position(
    qtbot: Any, window: Any, conn: psycopg.Connection[Any], flights: str, tmp_path: Path
) -> None:
    w = window
    _open(qtbot, w, _write(tmp_path / "people.csv", "id,name\n1,ann\n2,bob\n"))
    assert w.table_combo.currentText() == "people"  # a new file proposes a new table named after it
    _target(qtbot, w, flights)
    assert [m.target for m in w.mapping.maps] == ["id", "name"]
    assert len(w.mapping.unmatched()) == 2 and "not in the table" in w.mapping.warning(0)
    with qtbot.waitSignal(w.run_refused, timeout=10_000) as refused:
        w.run_btn.click()
    assert "'id', 'name'" in refused.args[0] and w._run_job is None
    assert _count(conn, flights) == 3
    # Match one by hand (the target pick-list offers the table's columns), skip the other.
    m = w.mapping
    assert m.setData(m.index(0, m.TARGET), "year")
    assert m.setData(m.index(1, m.INCLUDE), Qt.CheckState.Unchecked.value, Qt.ItemDataRole.CheckStateRole)
    assert m.unmatched() == [] and m.maps[0].type == "integer"
    # The first append into a table with rows asks first; "no" leaves everything as it was.
    w.answer = False
    with qtbot.waitSignal(w.run_refused, timeout=30_000) as asked:
        w.run_btn.click()
    assert asked.args[0] == f"Append 2 rows to public.{flights} (3 rows)?"
    w.answer = True
    with qtbot.waitSignal(w.run_finished, timeout=60_000):
        w.run_btn.click()
    assert _count(conn, flights) == 5
    # Asked once per table: the second append goes straight on.
    asked_before = len(w.messages)
    with qtbot.waitSignal(w.run_finished, timeout=60_000):
        w.run_btn.click()
    assert len(w.messages) == asked_before and _count(conn, flights) == 7


def test_names_match_ignoring_case_and_spaces(qtbot: Any, window: Any, flights: str, tmp_path: Path) -> None:
    w = window
    _open(qtbot, w, _write(tmp_path / "more.csv", "Year,MONTH,Car rier\n2014,3,UA\n"))
    _target(qtbot, w, flights)
    assert [(m.source, m.target) for m in w.mapping.maps] == [
        ("Year", "year"), ("MONTH", "month"), ("Car rier", "carrier")]
    assert w.mapping.unmatched() == []


def test_type_edits_survive_until_reset(qtbot: Any, window: Any, tmp_path: Path) -> None:
    w = window
    _open(qtbot, w, _write(tmp_path / "t.csv", "code,amount\n1,2.5\n2,3.5\n"))
    m = w.mapping
    assert m.maps[0].type == "integer"
    assert m.flags(m.index(0, m.TYPE)) & Qt.ItemFlag.ItemIsEditable
    m.setData(m.index(0, m.TYPE), "text")
    w.table_combo.setEditText("renamed_table")
    w.table_combo.setEditText("renamed_again")
    assert w.mapping.maps[0].type == "text" and "text" in w.ddl_edit.toPlainText()
    with qtbot.waitSignal(w.source_ready, timeout=30_000):
        w._on_refresh_clicked()  # re-reading the file keeps them too
    assert w.mapping.maps[0].type == "text"
    w.reset_mapping()
    assert w.mapping.maps[0].type == "integer"


def test_type_pick_list_is_an_editable_combo(qtbot: Any, window: Any, tmp_path: Path) -> None:
    from PySide6.QtWidgets import QComboBox, QStyleOptionViewItem

    w = window
    _open(qtbot, w, _write(tmp_path / "p.csv", "a\n1\n"))
    view, m = w.mapping_view, w.mapping
    editor = view.itemDelegate().createEditor(view.viewport(), QStyleOptionViewItem(), m.index(0, m.TYPE))
    assert isinstance(editor, QComboBox) and editor.isEditable()
    assert editor.findText("timestamptz") >= 0 and editor.findText("numeric") >= 0
    editor.setEditText("numeric(12,2)")
    view.itemDelegate().setModelData(editor, m, m.index(0, m.TYPE))
    assert m.maps[0].type == "numeric(12,2)"
    editor.deleteLater()


def test_warnings_and_bad_records_in_the_preview(qtbot: Any, window: Any, tmp_path: Path) -> None:
    w = window
    _open(qtbot, w, _write(tmp_path / "r.csv", "n,v\n1,2.5\n2\n3,4.5\n4,5.5,9\n5,6.5\n"))
    assert w.preview.rowCount() == 5 and w.preview.bad_rows() == [1, 3]
    assert "has 1 field, expected 2" in w.preview.data(w.preview.index(1, 0))
    assert w.preview_view.columnSpan(1, 0) == 2
    assert "2 malformed records" in w.source_status.text()
    m = w.mapping
    assert m.warning(0) == "" and m.warning(1) == ""
    m.setData(m.index(1, m.TYPE), "integer")
    assert m.warning(1).startswith("3 of 3 sample rows not integer")
    _open(qtbot, w, _write(tmp_path / "s.csv", "n,v\n1,2\nabc,3\nx9,4\n"))
    m.setData(m.index(0, m.TYPE), "integer")
    assert "'abc'" in m.warning(0) and "'x9'" in m.warning(0)


def test_counters_summary_history_and_log_agree_after_stop_and_abort(
    qtbot: Any, window: Any, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path
) -> None:
    w = window
    table = table_name("agree")
    path = _write(tmp_path / "big.csv", "id,name\n" + "".join(f"{i},n{i}\n" for i in range(200_000)))
    _open(qtbot, w, path)
    w.table_combo.setEditText(table)
    w.set_strategy("row-transaction")
    with qtbot.waitSignal(w.run_cancelled, timeout=60_000):
        w.run_btn.click()
        qtbot.waitUntil(lambda: w._last_progress is not None and w._last_progress.rows_loaded > 0, timeout=30_000)
        w.stop_btn.click()
    assert "loaded           0" in w.counters.text()
    row = w.history.rows[-1]
    h = w.history
    assert (row[h.LOADED], row[h.OUTCOME]) == ("0", "cancelled") and row[h.READ] != "0"
    assert "Nothing was loaded" in w.summary.text() and "cancelled by the user" in w.log.toPlainText()
    assert "— cancelled: read" in w.log.toPlainText() and "loaded 0" in w.log.toPlainText()
    # The chart never shows a negative rate, and its last point is not a fall to 0.
    _t, rows, mb = w.chart.points()
    assert rows and min(rows) >= 0 and min(mb) >= 0
    # An abort: loaded 0, the error in the history and the log.
    _open(qtbot, w, _write(tmp_path / "bad.csv", "id,name\n1,a\n2,b\nx9,c\n"))
    w.table_combo.setEditText(table)
    w.mapping.setData(w.mapping.index(0, 3), "integer")
    w.set_strategy("copy-csv")
    with qtbot.waitSignal(w.run_failed, timeout=60_000):
        w.run_btn.click()
    assert "loaded           0" in w.counters.text() and "read" in w.counters.text()
    row = w.history.rows[-1]
    assert row[h.LOADED] == "0" and row[h.OUTCOME] == "failed" and "x9" in row[h.NOTE]
    assert "error:" in w.log.toPlainText() and "— failed: read" in w.log.toPlainText()
    assert table not in w.targets.db.tables.get("public", [])


def test_check_is_rolled_back_and_lists_the_rejects(
    qtbot: Any, window: Any, conn: psycopg.Connection[Any], flights: str, tmp_path: Path
) -> None:
    w = window
    _open(qtbot, w, _write(tmp_path / "chk.csv", "year,month,carrier\n2014,1,UA\n2014,x,AA\n2014,3,DL\n"))
    _target(qtbot, w, flights)
    with qtbot.waitSignal(w.check_finished, timeout=60_000) as done:
        w.check_btn.click()
    result = done.args[0]
    assert (result.rows_loaded, result.rows_rejected) == (2, 1)
    assert _count(conn, flights) == 3
    assert w.rejects.total == 1 and "x" in w.rejects.rows[0][3]
    assert "would load" in w.summary.text() and "rolled back" in w.summary.text().lower()
    assert w.history.rows[-1][1] == "check" and "loaded           0" in w.counters.text()


def test_profiles_rejects_history_table_and_server(
    qtbot: Any, window: Any, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path
) -> None:
    w = window
    path = _write(tmp_path / "rej.csv", "id,name\n1,a\nx,b\n3,c\n")
    _open(qtbot, w, path)
    assert w.settings.last_folder == str(tmp_path) and w.profiles.start_folder() == str(tmp_path)
    table = table_name("rej")
    w.table_combo.setEditText(table)
    w.mapping.setData(w.mapping.index(0, 3), "integer")
    w.policy_combo.setCurrentText("skip")
    saved = w.save_profile(str(tmp_path / "daily"))
    assert saved.endswith("daily.toml") and Path(saved).exists()
    files = []
    for mode in ("create", "append"):
        w.mode_combo.setCurrentText(mode)
        with qtbot.waitSignal(w.run_finished, timeout=60_000) as done:
            w.run_btn.click()
        files.append(done.args[0].reject_file)
    assert files[0] != files[1] and all(Path(f).exists() for f in files)  # never overwritten
    assert w.history.rows[-1][w.history.REJECTED] == "1"
    report = CompareReport([CompareResult("copy-csv", 1000, 1, rows=3, runs=[1500.0, 1600.0])], 20.0, 3)
    w.compare_tab.finished.emit(report)
    assert w.history.rows[-1][1] == "compare" and "RTT 20 ms" in w.history.rows[-1][w.history.NOTE]
    with qtbot.waitSignal(w.table_shown, timeout=30_000) as shown:
        w.show_table_btn.click()
    assert shown.args[0].model.rowCount() == 4
    shown.args[0].close()
    with qtbot.waitSignal(w.server_info_shown, timeout=30_000) as info:
        w.show_server_info()
    assert "DSN: " in info.args[0] and "psql" in info.args[0]
    bar = w.log.verticalScrollBar()
    assert bar.value() == bar.maximum()  # the log follows its newest line


def test_a_file_without_a_header_fills_the_columns_in_order(
    qtbot: Any, window: Any, conn: psycopg.Connection[Any], flights: str, tmp_path: Path
) -> None:
    """PostgreSQL's own export (`\\copy t to f`) has no header: its fields go to the table's columns in
    order when there are as many, and a run loads them; one field short, nothing is guessed."""
    w = window
    _open(qtbot, w, _write(tmp_path / "export.txt", "2014\t3\tDL\n2014\t4\t\\N\n"))
    _target(qtbot, w, flights)
    assert [(m.source, m.target) for m in w.mapping.maps] == [
        ("column_1", "year"), ("column_2", "month"), ("column_3", "carrier")]
    assert w.mapping.unmatched() == []
    assert "the file has no header" in w.log.toPlainText(), w.log.toPlainText()
    w.answer = True
    with qtbot.waitSignal(w.run_finished, timeout=60_000):
        w.run_btn.click()
    rows = conn.execute(sql.SQL("SELECT year, month, carrier FROM {} WHERE year = 2014 ORDER BY month")
                        .format(sql.Identifier(flights))).fetchall()
    assert rows == [(2014, 3, "DL"), (2014, 4, None)]
    _open(qtbot, w, _write(tmp_path / "short.txt", "2015\t5\n2015\t6\n"))
    _target(qtbot, w, flights)
    assert len(w.mapping.unmatched()) == 2  # two fields, three columns: matched by hand or not at all
