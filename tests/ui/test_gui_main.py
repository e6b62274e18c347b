"""The window's entry point (app/gui.py main): its exit status after a session of loads."""

from __future__ import annotations

import gc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql
from PySide6.QtCore import QEvent, QTimer
from PySide6.QtWidgets import QApplication, QMessageBox

from app import crash_reports, gui


def _main_with(argv: list[str], drive: Callable[[Any], None], monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> int:
    """Run gui.main(argv); `drive(window)` is called once the event loop runs. Dialogs are answered
    without blocking, and the process-wide hooks main() sets are put back."""
    monkeypatch.setenv("SLUICE_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.setattr(crash_reports, "arm", lambda **_k: None)  # pytest's faulthandler stays on
    monkeypatch.setattr(crash_reports, "disarm", lambda: None)
    monkeypatch.setattr(gui, "offer_crash_reports", lambda *_a: None)
    monkeypatch.setattr("sys.excepthook", __import__("sys").excepthook)
    for name in ("warning", "information", "critical"):
        monkeypatch.setattr(QMessageBox, name, lambda *_a, **_k: QMessageBox.StandardButton.Ok)
    monkeypatch.setattr("ui.dialogs.ask", lambda *_a: True)

    def find_window() -> None:
        from ui.main_window import MainWindow

        windows = [w for w in QApplication.topLevelWidgets() if isinstance(w, MainWindow) and w.isVisible()]
        assert len(windows) == 1
        drive(windows[0])

    QTimer.singleShot(0, find_window)
    code = gui.main(argv)
    # main()'s window is no test's widget: free it now, not in a later test's garbage collection.
    for w in QApplication.topLevelWidgets():
        if type(w).__name__ == "MainWindow":
            w.deleteLater()
    QApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete.value)
    gc.collect()
    return code


def _quit(window: Any) -> None:
    """File > Quit, as the user chooses it."""
    quit_action = next(a for a in window.findChildren(type(window.menuBar().actions()[0]))
                       if a.text() == "&Quit")
    QTimer.singleShot(0, quit_action.trigger)


def _bad_file(tmp_path: Path, conn: psycopg.Connection[Any], table_name: Callable[[str], str]) -> tuple[Path, str]:
    table = table_name("exit")
    conn.execute(sql.SQL("CREATE TABLE {} (id int, name text)").format(sql.Identifier(table)))
    path = tmp_path / "bad.csv"
    path.write_text("id,name\n1,a\nx9,b\n", encoding="utf-8")
    return path, table


def test_quit_after_a_failed_load_exits_0(
    qtbot: Any, dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`make run`, a load that fails, then Quit: status 0 (it was 1, and make said `Error 1`)."""
    path, table = _bad_file(tmp_path, conn, table_name)
    failed: list[str] = []

    def drive(w: Any) -> None:
        def start() -> None:
            w.set_strategy("copy-csv")
            w.start_run()

        w.run_failed.connect(lambda m: (failed.append(m), _quit(w)))
        w.source_ready.connect(lambda: QTimer.singleShot(0, start))

    code = _main_with(["--open", str(path), "--table", table, "--dsn", dsn], drive, monkeypatch, tmp_path)
    assert failed and "x9" in failed[0]  # the load did fail
    assert code == 0


def test_a_failed_load_given_with_run_exits_1(
    qtbot: Any, dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    path, table = _bad_file(tmp_path, conn, table_name)

    def drive(w: Any) -> None:
        w.run_failed.connect(lambda _m: _quit(w))

    code = _main_with(["--open", str(path), "--table", table, "--dsn", dsn, "--run"], drive, monkeypatch, tmp_path)
    assert code == 1


def test_run_with_a_screenshot_never_waits_on_a_question(
    qtbot: Any, dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """--run --screenshot into a table with rows: nobody can answer "Append…?", so it is answered no; the
    shot is taken, the table is as it was, and the status says the load did not run (it hung before)."""
    table = table_name("unattended")
    conn.execute(sql.SQL("CREATE TABLE {} (id int, name text)").format(sql.Identifier(table)))
    conn.execute(sql.SQL("INSERT INTO {} VALUES (1, 'kept')").format(sql.Identifier(table)))
    path = tmp_path / "more.csv"
    path.write_text("id,name\n2,b\n3,c\n", encoding="utf-8")
    shot = tmp_path / "shot.png"
    code = _main_with(["--open", str(path), "--table", table, "--dsn", dsn, "--run", "--screenshot", str(shot)],
                      lambda _w: None, monkeypatch, tmp_path)
    assert code == 1 and shot.exists()
    assert conn.execute(sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(table))).fetchone() == (1,)
