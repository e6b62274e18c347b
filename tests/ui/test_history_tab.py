"""The History tab lasts: runs of this window, of an earlier one and of the command line, until cleared."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

from tests.ui.test_main_window import _open, _run
from tests.ui.test_script_tables import _script


def _new_window(qtbot: Any) -> Any:
    """Another window, as after a restart (same data directory)."""
    from ui.main_window import MainWindow

    w2 = MainWindow()
    qtbot.addWidget(w2)
    return w2


def _menu_action(w: Any, text: str) -> Any:
    from PySide6.QtGui import QAction

    return next(a for a in w.findChildren(QAction) if a.text() == text)


def test_runs_show_in_a_new_window_with_mode_and_autos_pick_of_a_failed_run(
    qtbot: Any, window: Any, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path
) -> None:
    w = window
    path = tmp_path / "people.csv"
    path.write_text("id,name\n1,a\n2,b\n", encoding="utf-8")
    _open(qtbot, w, path)
    table = table_name("hist")
    w.table_combo.setEditText(table)
    assert w.mode_combo.currentText() == "create" and w.strategy_combo.currentData() == "auto"
    _run(qtbot, w)
    # A failed run: auto logged its pick before the server refused a row.
    bad = tmp_path / "bad.csv"
    bad.write_text("id,name\n3,c\nx9,d\n", encoding="utf-8")
    _open(qtbot, w, bad)
    w.table_combo.setEditText(table)
    w.mode_combo.setCurrentText("append")
    with qtbot.waitSignal(w.run_failed, timeout=60_000):
        w.run_btn.click()
    assert "auto chose" in w.log.toPlainText()
    h = w.history
    assert h.HEADERS[h.MODE] == "Mode"
    assert [r[h.MODE] for r in h.rows] == ["create", "append"]
    assert h.rows[-1][h.OUTCOME] == "failed" and "x9" in h.rows[-1][h.NOTE]
    assert h.rows[-1][h.STRATEGY].startswith("auto → ") and h.rows[-1][h.STRATEGY] != "auto → auto"
    w.close()
    # The next window (a restart) lists both, as they were.
    w2 = _new_window(qtbot)
    assert w2.history.rows == h.rows
    assert w2.history.rows[0][h.LOADED] == "2" and w2.history.rows[0][3] == f"public.{table}"


def test_a_two_table_script_lists_each_table_and_its_rows(
    qtbot: Any, window: Any, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path
) -> None:
    w = window
    a, b = table_name("sa"), table_name("sb")
    for t in (a, b):
        conn.execute(sql.SQL("CREATE TABLE {} (k int, v text)").format(sql.Identifier(t)))
    _open(qtbot, w, _script(tmp_path / "db.sql", a, b))
    w.mode_combo.setCurrentText("append")
    _run(qtbot, w)
    row = w.history.rows[-1]
    assert row[3] == f"public.{a}, public.{b}"
    assert f"public.{a}: 2 rows; public.{b}: 5 rows" in row[w.history.NOTE]


def test_a_headless_load_shows_in_the_window_and_clear_asks_first(
    qtbot: Any, window: Any, dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str],
    tmp_path: Path, capsys: Any,
) -> None:
    from app.cli import main as cli_main

    w = window
    path = tmp_path / "cli.csv"
    path.write_text("id,name\n1,a\n2,b\n3,c\n", encoding="utf-8")
    table = table_name("cli")
    assert w.history.rowCount() == 0
    assert cli_main(["load", str(path), "--table", table, "--mode", "create", "--dsn", dsn]) == 0
    # Opening the History tab shows what the command line did meanwhile.
    w.tabs.setCurrentWidget(w.history_view)
    h = w.history
    assert h.rowCount() == 1
    row = h.rows[0]
    assert (row[1], row[2], row[h.MODE], row[h.LOADED], row[h.OUTCOME]) == ("load (CLI)", "cli.csv", "create", "3",
                                                                             "loaded")
    assert row[h.STRATEGY].startswith("auto → ")
    # Clear asks, naming how many; no keeps them.
    w.answer = False
    _menu_action(w, "C&lear history…").trigger()
    assert "Forget all 1 run in the history" in w.messages[-1]
    assert h.rowCount() == 1 and h.store.count() == 1
    w.answer = True
    _menu_action(w, "C&lear history…").trigger()
    assert h.rowCount() == 0 and h.store.count() == 0 and h.store.entries() == []  # the file too
    # Export as CSV still works, with the Mode column.
    out = tmp_path / "h.csv"
    assert cli_main(["load", str(path), "--table", table, "--dsn", dsn]) == 0
    w.tabs.setCurrentIndex(0)
    w.tabs.setCurrentWidget(w.history_view)
    w.export_history(str(out))
    lines = out.read_text(encoding="utf-8").splitlines()
    assert lines[0].startswith("Time,Kind,File,Table,Mode,Strategy,Read,Loaded") and ",append,auto → " in lines[1]


def test_a_run_of_the_window_comes_after_a_headless_one_kept_meanwhile(qtbot: Any, tmp_path: Path) -> None:
    from core.history import Entry, History
    from ui.history_model import HistoryModel

    path = tmp_path / "h.sqlite3"
    model = HistoryModel(History(path))
    assert model.rowCount() == 0
    History(path).add(Entry("load", "/d/cli.csv", "public.t", "append", "copy-csv", "loaded", origin="cli"))
    model.add(Entry("load", "/d/win.csv", "public.t", "truncate", "copy-csv", "loaded"))
    assert [r[2] for r in model.rows] == ["cli.csv", "win.csv"]  # neither lost, in the order they ran
    model.refresh()
    assert model.rowCount() == 2
    # A history file that cannot be written: the run still shows, and why it is not kept is said.
    broken = tmp_path / "broken.sqlite3"
    broken.write_bytes(b"not a database" * 100)
    model = HistoryModel(History(broken))
    assert "cannot be used" in model.problem
    model.add(Entry("load", "/d/x.csv", "public.t", "append", "copy-csv", "loaded"))
    assert model.rows[-1][2] == "x.csv"
