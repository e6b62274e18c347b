"""The window says what the next run will do before it starts: auto's pick, the protocol, and why."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

from core.sources.csv.source import CsvSource


def _open(qtbot: Any, w: Any, path: Path) -> None:
    with qtbot.waitSignal(w.source_ready, timeout=30_000):
        w.path_edit.setText(str(path))
        w.path_edit.returnPressed.emit()


def _plan_after(qtbot: Any, w: Any, change: Callable[[], None], expect: str) -> str:
    """The plan line once it says `expect` (earlier answers, from earlier changes, may come first)."""
    texts: list[str] = []
    w.foresight.updated.connect(texts.append)
    change()
    qtbot.waitUntil(lambda: any(expect in t for t in texts), timeout=30_000)
    text = next(t for t in texts if expect in t)
    assert w.run_panel.plan_label.toolTip() == texts[-1]  # shown above the log
    return text


def _people_into(
    qtbot: Any, w: Any, conn: psycopg.Connection[Any], tmp_path: Path, rows: int, table: str, columns: str, mode: str,
    last: str = "",
) -> Callable[[], None]:
    """Opens a CSV of `rows` people (then the line `last`), makes `table` (fixed test DDL); returns the
    step that picks it in `mode`."""
    path = tmp_path / "people.csv"
    path.write_text("id,name\n" + "".join(f"{i},n{i}\n" for i in range(rows)) + last, encoding="utf-8")
    conn.execute(sql.SQL("CREATE TABLE {} (" + columns + ")").format(sql.Identifier(table)))
    _open(qtbot, w, path)

    def pick() -> None:
        w.table_combo.setEditText(table)
        w.mode_combo.setCurrentText(mode)

    return pick


def test_the_plan_is_shown_before_the_run(
    qtbot: Any, window: Any, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path
) -> None:
    w = window
    table = table_name("plan")
    pick_table = _people_into(qtbot, w, conn, tmp_path, 200, table, "id int, name text", "append")
    text = _plan_after(qtbot, w, pick_table, "auto will pick")
    assert "copy-csv" in text and "commit: single" in text and "own bytes" in text  # auto's reason, before any run
    assert w.history.rowCount() == 0
    text = _plan_after(qtbot, w, lambda: w.set_strategy("parallel-copy", workers=2), "will run parallel-copy")
    assert "2 workers" in text and "commit: " in text and "parallel-copy: " in text  # the protocol and why
    text = _plan_after(qtbot, w, lambda: w.commit_combo.setCurrentText("per-batch"), "chunk-commits")
    assert "checkpoint" in text
    row = conn.execute(sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(table))).fetchone()
    assert row == (0,)  # said without loading anything


def test_a_plan_that_cannot_run_says_why(
    qtbot: Any, window: Any, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path
) -> None:
    w = window
    table = table_name("nokey")
    upsert_without_key = _people_into(qtbot, w, conn, tmp_path, 1, table, "id int PRIMARY KEY, name text", "upsert")
    text = _plan_after(qtbot, w, upsert_without_key, "cannot run")
    assert "upsert needs" in text and "key" in text


def test_a_run_that_failed_before_the_plan_was_said_leaves_the_next_plan_said(
    qtbot: Any, window: Any, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A run started at once (a profile run, Ctrl+R right after picking) is on when the plan's timer
    asks; a successful one refreshes the table list, which asks again, a failed one did not."""
    w = window
    table = table_name("runfirst")
    pick_table = _people_into(qtbot, w, conn, tmp_path, 1, table, "id int, name text", "append", last="seven,b\n")

    # The run reads its file only once the plan's timer has fired (and found the run on).
    asked = threading.Event()
    w.foresight._timer.timeout.connect(asked.set)
    real_chunks = CsvSource.raw_chunks

    def raw_chunks(self: CsvSource, *args: Any, **kwargs: Any) -> Any:
        asked.wait(30)
        return real_chunks(self, *args, **kwargs)

    monkeypatch.setattr(CsvSource, "raw_chunks", raw_chunks)

    def pick_and_run_at_once() -> None:
        pick_table()
        with qtbot.waitSignal(w.run_failed, timeout=60_000):
            w.start_run()
        assert asked.is_set()

    text = _plan_after(qtbot, w, pick_and_run_at_once, "auto will pick")
    assert "copy-csv" in text
    assert "pick a file" not in w.run_panel.plan_label.text()
