"""The Load tab's shared state (ui/state.py) carries its changes: the window's parts follow LoadState's
signals (wired in MainWindow._connect), and the DSN a run uses is the connection as it is now, however
it was edited."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg

from core.target_facts import TableSize
from tests.ui.test_main_window import _count, _csv, _open, _run
from ui.panels.run import NO_PLAN
from ui.worker import Job


def _planned(qtbot: Any, w: Any, texts: list[str]) -> None:
    qtbot.waitUntil(lambda: any("auto will pick" in t for t in texts), timeout=60_000)


def test_the_plan_line_and_the_run_buttons_follow_the_state(
    qtbot: Any, window: Any, table_name: Callable[[str], str], tmp_path: Path
) -> None:
    w = window
    texts: list[str] = []
    w.foresight.updated.connect(texts.append)
    _open(qtbot, w, _csv(tmp_path / "state.csv", 20))
    w.table_combo.setEditText(table_name("stateplan"))
    _planned(qtbot, w, texts)
    plan, info = w.run_panel.plan_label, w.state.source_info
    # Each change below goes through the state object only.
    w.state.source_info = None  # no file, as far as the state knows: no plan
    qtbot.waitUntil(lambda: plan.text() == NO_PLAN, timeout=10_000)
    del texts[:]
    w.state.source_info = info  # the file again: the plan is said again
    _planned(qtbot, w, texts)
    assert "auto will pick" in plan.text()
    plan.setText("stale")
    del texts[:]
    w.state.target_size = TableSize(rows=7, exact=True)  # the target's size read: the plan is asked again
    _planned(qtbot, w, texts)
    assert "auto will pick" in plan.text()
    # A job in the state (never started): the buttons are Stop's, and no second run starts.
    w.state.job = Job(lambda *_a: None)
    assert not w.run_btn.isEnabled() and not w.check_btn.isEnabled() and w.stop_btn.isEnabled()
    with qtbot.assertNotEmitted(w.run_started):
        w.start_run()
    del texts[:]
    w.state.job = None  # it ended: Run and Check again, and the plan for the next run
    assert w.run_btn.isEnabled() and w.check_btn.isEnabled() and not w.stop_btn.isEnabled()
    _planned(qtbot, w, texts)


def test_a_run_uses_the_saved_connection_as_edited_now(
    qtbot: Any, window: Any, dsn: str, other_db: str, conn: psycopg.Connection[Any],
    table_name: Callable[[str], str], tmp_path: Path,
) -> None:
    """A saved connection edited another way than the window's own dialog (here, the settings themselves):
    the run goes to the server it names now, not to the one the window knew when it was picked."""
    w = window
    said: list[object] = []
    w.state.connection_changed.connect(said.append)
    w.settings.connections["work"] = dsn
    w.conn_combo.addItem("work")
    w.conn_combo.setCurrentText("work")  # the same server as the DSN typed before
    assert w.state.dsn == dsn
    w.settings.connections["work"] = other_db  # edited elsewhere: no signal of the window's says so
    assert w.state.dsn == other_db
    table = table_name("edited")
    _open(qtbot, w, _csv(tmp_path / "edited.csv", 6))
    w.table_combo.setEditText(table)
    result = _run(qtbot, w)
    assert result.rows_loaded == 6 and w.runs.spec.dsn == other_db
    with psycopg.connect(other_db) as other:
        assert _count(other, table) == 6
    row = conn.execute("SELECT to_regclass(%s)", (table,)).fetchone()
    assert row is not None and row[0] is None  # nothing on the server it named before
    # The table list read again after the load says the connection changed (the plan follows it).
    qtbot.waitUntil(lambda: other_db in said, timeout=10_000)
