"""The window with many files (issue 26 item 6): a glob typed into the path field, several files
picked in Open…, one table; each file counted in the log; per-file commits from the Commit box."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql
from PySide6.QtWidgets import QFileDialog


def _exports(folder: Path, sizes: list[int]) -> list[Path]:
    folder.mkdir()
    out = []
    for m, rows in enumerate(sizes, start=1):
        p = folder / f"orders-{m:02d}.csv"
        p.write_text("id,day,qty\n" + "".join(f"{m * 1000 + i},2024-{m:02d}-{i % 28 + 1:02d},{i}\n"
                                              for i in range(rows)), encoding="utf-8")
        out.append(p)
    return out


def _count(conn: psycopg.Connection[Any], table: str) -> int:
    row = conn.execute(sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(table))).fetchone()
    return int(row[0]) if row else -1


def test_a_glob_typed_into_the_path_field_loads_every_file_into_one_table(
    qtbot: Any, window: Any, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path
) -> None:
    w = window
    _exports(tmp_path / "exports", [12, 30, 7])
    with qtbot.waitSignal(w.source_ready, timeout=30_000):
        w.path_edit.setText(str(tmp_path / "exports" / "*.csv"))
        w.path_edit.returnPressed.emit()
    status = w.source_status.text()
    assert "3 files (orders-01.csv … orders-03.csv) into one table" in status and "3 columns" in status
    assert w.table_combo.currentText() == "orders"  # the files' common name, not the pattern's
    table = table_name("orders")
    with qtbot.waitSignal(w.mapping_ready, timeout=30_000):
        w.table_combo.setEditText(table)
    w.mode_combo.setCurrentText("create")
    with qtbot.waitSignal(w.run_finished, timeout=60_000):
        w.start_run()
    assert _count(conn, table) == 49
    log = w.log.toPlainText()
    for name, n in (("orders-01.csv", 12), ("orders-02.csv", 30), ("orders-03.csv", 7)):
        assert f"{name}: {n} rows read, {n} loaded" in log
    assert "From 3 files" in w.summary.text()


def test_several_files_picked_in_open_and_committed_per_file(
    qtbot: Any, window: Any, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    w = window
    files = _exports(tmp_path / "picked", [5, 6, 8])
    (files[1]).write_text("id,day,qty\n1,2024-02-01,one\n", encoding="utf-8")  # a bad value in the second
    monkeypatch.setattr(QFileDialog, "exec", lambda self: 1)
    monkeypatch.setattr(QFileDialog, "selectedFiles", lambda self: [str(files[0]), str(files[1])])
    with qtbot.waitSignal(w.source_ready, timeout=30_000):
        w.source_panel.open_btn.click()
    assert "2 files (orders-01.csv, orders-02.csv)" in w.source_status.text()
    table = table_name("picked")
    conn.execute(sql.SQL("CREATE TABLE {} (id int, day date, qty int)").format(sql.Identifier(table)))
    w.refresh_table_list_quietly()
    qtbot.waitUntil(lambda: table in w.targets.db.tables.get("public", []), timeout=30_000)
    with qtbot.waitSignal(w.mapping_ready, timeout=30_000):
        w.table_combo.setEditText(table)
    w.commit_combo.setCurrentText("per-file")
    with qtbot.waitSignal(w.run_failed, timeout=60_000):
        w.start_run()
    assert _count(conn, table) == 5  # the first file committed; the second rolled back alone
    log = w.log.toPlainText()
    assert "orders-01.csv: 5 rows read, 5 loaded" in log
    assert "orders-02.csv: not loaded" in log and "the 1 file before it stay loaded" in log
    summary = w.summary.text()
    assert summary.startswith("Failed at orders-02.csv (") and "orders-02.csv was rolled back; the 1 file committed " \
        "before it stay in the table (5 rows). Resume goes on from orders-02.csv." in summary
    assert not w.run_panel.resume_btn.isHidden() and w.run_panel.resume_btn.isEnabled()
    files[1].write_text("id,day,qty\n1,2024-02-01,1\n", encoding="utf-8")  # fixed
    with qtbot.waitSignal(w.run_finished, timeout=60_000):
        w.run_panel.resume_btn.click()
    assert w.commit_combo.currentText() == "per-file"  # resuming kept per-file commits
    assert _count(conn, table) == 6  # the first file once, the second now
    assert "orders-01.csv: loaded by the earlier run (5 rows); skipped" in w.log.toPlainText()


def test_rejected_rows_of_many_files_name_their_file(
    qtbot: Any, window: Any, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path
) -> None:
    w = window
    files = _exports(tmp_path / "skip", [4, 4])
    files[1].write_text("id,day,qty\n1,2024-02-01,1\n2,2024-02-31,2\n", encoding="utf-8")  # no 31 February
    table = table_name("skipped")
    conn.execute(sql.SQL("CREATE TABLE {} (id int, day date, qty int)").format(sql.Identifier(table)))
    with qtbot.waitSignal(w.source_ready, timeout=30_000):
        w.path_edit.setText(str(tmp_path / "skip"))  # a folder
        w.path_edit.returnPressed.emit()
    w.refresh_table_list_quietly()
    qtbot.waitUntil(lambda: table in w.targets.db.tables.get("public", []), timeout=30_000)
    with qtbot.waitSignal(w.mapping_ready, timeout=30_000):
        w.table_combo.setEditText(table)
    w.strategy_panel.policy_combo.setCurrentText("skip")
    with qtbot.waitSignal(w.run_finished, timeout=60_000):
        w.start_run()
    assert _count(conn, table) == 5
    model = w.rejects
    assert model.headers[:2] == ("File", "Line")
    assert [model.data(model.index(0, c)) for c in range(3)] == ["orders-02.csv", "3", "2"]
    assert "orders-02.csv: 2 rows read, 1 loaded, 1 rejected" in w.log.toPlainText()


def test_file_open_folder_reads_the_folders_files_as_one_source(
    qtbot: Any, window: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    w = window
    _exports(tmp_path / "month", [3, 4])
    (tmp_path / "month" / "notes.md").write_text("not data")
    monkeypatch.setattr(QFileDialog, "exec", lambda self: 1)
    monkeypatch.setattr(QFileDialog, "selectedFiles", lambda self: [str(tmp_path / "month")])
    action = next(a for a in w.menuBar().actions()[0].menu().actions() if a.text() == "Open &folder…")
    with qtbot.waitSignal(w.source_ready, timeout=30_000):
        action.trigger()
    assert w.path_edit.text() == str(tmp_path / "month")
    assert "2 files (orders-01.csv, orders-02.csv) into one table" in w.source_status.text()
    assert w.table_combo.currentText() == "orders"


def test_several_files_dropped_on_the_window_open_as_one_source(qtbot: Any, window: Any, tmp_path: Path) -> None:
    from PySide6.QtCore import QMimeData, QPointF, Qt, QUrl
    from PySide6.QtGui import QDropEvent

    w = window
    files = _exports(tmp_path / "dropped", [2, 3, 4])
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(f)) for f in files[:2]])
    event = QDropEvent(QPointF(10, 10), Qt.DropAction.CopyAction, mime, Qt.MouseButton.LeftButton,
                       Qt.KeyboardModifier.NoModifier)
    with qtbot.waitSignal(w.source_ready, timeout=30_000):
        w.dropEvent(event)
    assert "2 files (orders-01.csv, orders-02.csv) into one table" in w.source_status.text()
