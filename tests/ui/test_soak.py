"""Soak: hundreds of loads in one shown window, with the charts live and the real dialogs.

PySide6 6.12.0 on CPython 3.11 aborted such a window ("none_dealloc") within a few dozen
loads: every call of a Python override of a C++ virtual (pyqtgraph's paint, resizeEvent)
dropped a reference to None. This drives the same paths as a user: open a file, Run,
read the error box, Stop, look at the Compare tab, close the window. Waits on signals only.
"""

from __future__ import annotations

import os
import sys
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication, QMessageBox

# success, abort, cancel, skip in turn: 40 in the suite (the crash it guards against came within a
# few dozen loads); SLUICE_SOAK_LOADS=300 or more for a longer soak.
LOADS = int(os.environ.get("SLUICE_SOAK_LOADS", "40"))
assert LOADS % 4 == 0, "SLUICE_SOAK_LOADS: a multiple of 4 (success, abort, cancel, skip in turn)"
GOOD_ROWS, BIG_ROWS = 200, 20_000


def _csv(path: Path, rows: int, tail: str = "") -> str:
    path.write_text("id,name,score\n" + "".join(f"{i},name {i},{i}.5\n" for i in range(rows)) + tail,
                    encoding="utf-8")
    return str(path)


def _count(conn: psycopg.Connection[Any], table: str) -> int:
    row = conn.execute(sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(table))).fetchone()
    assert row is not None
    return int(row[0])


@pytest.fixture
def soak_conn(embedded_dsn: str) -> Iterator[psycopg.Connection[Any]]:
    """The window's behaviour does not depend on the server: the soak runs once, on the embedded one."""
    with psycopg.connect(embedded_dsn, autocommit=True) as c:
        yield c


@pytest.fixture
def shown_window(qtbot: Any, embedded_dsn: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                 soak_conn: psycopg.Connection[Any]) -> Iterator[Any]:
    """A shown window whose message boxes are real (modal, nested event loop) and answered like a user would."""
    monkeypatch.setenv("SLUICE_CONFIG_DIR", str(tmp_path / "config"))
    # The kept history is the test's own (a window lists every run the file holds).
    monkeypatch.setattr("core.history.history_path", lambda: tmp_path / "history.sqlite3")
    from ui.main_window import MainWindow

    w = MainWindow()
    qtbot.addWidget(w)
    w.set_connection_dsn(embedded_dsn)
    w.soak_table = f"soak_{uuid.uuid4().hex[:10]}"
    table = sql.Identifier(w.soak_table)
    soak_conn.execute(sql.SQL("CREATE TABLE {} (id int, name text, score float8)").format(table))
    w.messages = []

    def answer_boxes() -> None:
        box = QApplication.activeModalWidget()
        if isinstance(box, QMessageBox):
            w.messages.append(box.text())
            box.accept()

    answerer = QTimer()
    answerer.setInterval(5)
    answerer.timeout.connect(answer_boxes)
    answerer.start()
    w.show()
    qtbot.waitExposed(w)
    with qtbot.waitSignal(w.database_ready, timeout=30_000):
        w.refresh_database()
    yield w
    answerer.stop()
    soak_conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(table))


# On CPython 3.12+ None is immortal and its count is a constant, so this only bites on 3.11.
def _none_refs() -> int:
    return sys.getrefcount(None)


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_many_loads_in_one_window(qtbot: Any, shown_window: Any, soak_conn: psycopg.Connection[Any],
                                 tmp_path: Path) -> None:
    w = shown_window
    good = _csv(tmp_path / "good.csv", GOOD_ROWS)
    bad = _csv(tmp_path / "bad.csv", GOOD_ROWS, tail="4x,bad id,1.5\n")  # one row an int column refuses
    big = _csv(tmp_path / "big.csv", BIG_ROWS)
    outcomes: Counter[str] = Counter()
    compares = 0

    def open_file(path: str) -> None:
        with qtbot.waitSignal(w.source_ready, timeout=30_000):
            w.open_file(path)
        with qtbot.waitSignal(w.mapping_ready, timeout=30_000):  # the table's columns, looked up on a worker
            w.table_combo.setEditText(w.soak_table)
        w.mode_combo.setCurrentText("append")

    def run(kind: str) -> None:
        if kind == "cancel":
            with qtbot.waitSignal(w.run_cancelled, timeout=60_000):
                with qtbot.waitSignal(w.run_started, timeout=30_000) as started:  # after the table is read again
                    w.start_run()
                job = started.args[0]

                def stop_once_loading(p: Any) -> None:
                    if p.rows_loaded > 0:
                        w.stop_run()

                job.signals.progress.connect(stop_once_loading)
            outcomes["cancelled"] += 1
            return
        expected = w.run_failed if kind == "abort" else w.run_finished
        with qtbot.waitSignal(expected, timeout=60_000) as blocker:
            w.start_run()
        if kind == "abort":
            assert "line 202" in blocker.args[0] and "4x" in blocker.args[0], blocker.args[0]
            outcomes["failed"] += 1
        else:
            result = blocker.args[0]
            assert result.rows_loaded == GOOD_ROWS
            assert result.rows_rejected == (1 if kind == "skip" else 0)
            outcomes["rejected" if kind == "skip" else "loaded"] += 1

    def visit_compare(run_one: bool) -> None:
        nonlocal compares
        w.tabs.setCurrentWidget(w.compare_tab)
        qtbot.waitUntil(lambda: w.compare_tab.charts.isVisible(), timeout=10_000)
        tab = w.compare_tab
        if run_one:
            tab.set_strategies(["copy-csv", "unnest"])
            tab.set_batch_sizes([100])
            tab.set_workers([1])
            tab.set_sample(GOOD_ROWS)
            tab.set_repeat(1)
            tab.set_rtt(0)
            with qtbot.waitSignal(tab.finished, timeout=60_000) as blocker:
                tab.start()
            assert all(len(r.runs) == 1 and r.error is None for r in blocker.args[0].results)
            compares += 1
        w.tabs.setCurrentIndex(0)
        qtbot.waitUntil(lambda: w.chart.isVisible(), timeout=10_000)

    start_refs = None
    steps = (("success", good, "copy-csv", 1000, "abort"), ("abort", bad, "copy-csv", 1000, "abort"),
             ("cancel", big, "executemany", 50, "abort"), ("skip", bad, "copy-csv", 1000, "skip"))
    for i in range(LOADS):
        kind, path, strategy, batch, policy = steps[i % 4]
        open_file(path)
        w.set_strategy(strategy, batch_rows=batch)
        w.policy_combo.setCurrentText(policy)
        run(kind)
        if i == 3:
            start_refs = _none_refs()  # after warm-up (caches, first imports)
        if kind == "success" and i % 40 == 0:
            visit_compare(run_one=i % 80 == 0)

    each = LOADS // 4
    assert outcomes == {"loaded": each, "failed": each, "cancelled": each, "rejected": each}
    assert sum(1 for row in w.history.rows if row[1] == "load") == LOADS  # comparisons are listed too
    # The first append of each file into the table (once it has rows) asked first: bad.csv and big.csv.
    asked = [m for m in w.messages if m.startswith("Append ")]
    errors = [m for m in w.messages if not m.startswith("Append ")]
    assert len(asked) == 2 and all(w.soak_table in m for m in asked), asked
    assert len(errors) == each and all("4x" in m for m in errors)
    assert compares == len(range(0, LOADS, 80))  # a comparison run every 80th load
    # The good loads and the skip loads, 200 rows each; aborts and cancels left nothing behind.
    assert _count(soak_conn, w.soak_table) == 2 * each * GOOD_ROWS
    assert start_refs is not None and _none_refs() > start_refs - 1_000, "None lost references: a binding bug"
    assert w.run_btn.isEnabled() and w._run_job is None
    qtbot.waitUntil(lambda: not w._jobs, timeout=30_000)  # background refreshes have ended
    assert w.close()
    assert not w.isVisible()
