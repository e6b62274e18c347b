"""Check under each error policy, and the file's row count once a run or a check has counted it (issue 24)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

from core import preview


def _open(qtbot: Any, w: Any, path: Path) -> None:
    with qtbot.waitSignal(w.source_ready, timeout=30_000):
        w.path_edit.setText(str(path))
        w.path_edit.returnPressed.emit()


def _target(qtbot: Any, w: Any, table: str) -> None:
    """Name an existing table and wait for its mapping (the table is looked up on a worker)."""
    w.refresh_table_list_quietly()
    qtbot.waitUntil(lambda: table in w.targets.db.tables.get("public", []), timeout=30_000)
    with qtbot.waitSignal(w.mapping_ready, timeout=30_000):
        w.table_combo.setEditText(table)


@pytest.fixture
def people(conn: psycopg.Connection[Any], table_name: Callable[[str], str]) -> str:
    """A table with 5 rows (so an append asks first)."""
    table = table_name("people")
    conn.execute(sql.SQL("CREATE TABLE {} (id integer, name text)").format(sql.Identifier(table)))
    conn.execute(sql.SQL("INSERT INTO {} SELECT g, 'p' || g FROM generate_series(1, 5) g").format(
        sql.Identifier(table)))
    return table


def test_the_append_question_says_the_rows_a_check_counted(
    qtbot: Any, window: Any, people: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(preview, "EXACT_FILE_BYTES", 0)  # as if too big to count before: an estimate
    w = window
    path = tmp_path / "many.csv"
    path.write_text("id,name\n" + "".join(f"{i},name number {i}\n" for i in range(2000)), encoding="utf-8")
    _open(qtbot, w, path)
    assert "about " in w.source_status.text()
    _target(qtbot, w, people)
    with qtbot.waitSignal(w.check_finished, timeout=60_000):
        w.check_btn.click()
    assert "2,000 rows" in w.source_status.text() and "about " not in w.source_status.text()
    w.answer = False
    with qtbot.waitSignal(w.run_refused, timeout=30_000) as asked:
        w.run_btn.click()
    question = asked.args[0]
    assert f"2,000 rows to public.{people}" in question
    assert "about" not in question and "estimate" not in question


def _bad_rows_file(path: Path) -> Path:
    """2,000 rows, 18 of them bad (a word where the table takes an integer), the first on line 7."""
    path.write_text("id,name\n" + "".join(f"{'x' if i % 111 == 5 else i},n{i}\n" for i in range(2000)),
                    encoding="utf-8")
    return path


def test_check_under_abort_says_where_the_run_would_stop(
    qtbot: Any, window: Any, conn: psycopg.Connection[Any], people: str, tmp_path: Path
) -> None:
    """It said "1,982 of 2,000 rows would load" where the run, with the same settings, stopped at
    the first bad row and loaded nothing."""
    w = window
    _open(qtbot, w, _bad_rows_file(tmp_path / "bad.csv"))
    _target(qtbot, w, people)
    assert w.policy_combo.currentText() == "abort"
    with qtbot.waitSignal(w.check_finished, timeout=60_000):
        w.check_btn.click()
    summary = w.summary.text()
    assert "would stop at line 7 (column 'id', value 'x': " in summary and "load nothing" in summary
    assert "17 more bad rows under Rejected rows (with skip, 1,982 of 2,000 rows would load)" in summary and "abort" in summary
    assert w.rejects.total == 18  # every other bad row is still listed
    assert w.history.rows[-1][w.history.NOTE].startswith("would stop at line 7")
    # The run with those settings does what the check said.
    w.answer = True
    with qtbot.waitSignal(w.run_failed, timeout=60_000) as failed:
        w.run_btn.click()
    assert "line 7" in failed.args[0]
    row = conn.execute(sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(people))).fetchone()
    assert row == (5,)


def test_check_under_skip_says_what_would_load(qtbot: Any, window: Any, people: str, tmp_path: Path) -> None:
    w = window
    _open(qtbot, w, _bad_rows_file(tmp_path / "bad.csv"))
    _target(qtbot, w, people)
    w.policy_combo.setCurrentText("skip")
    with qtbot.waitSignal(w.check_finished, timeout=60_000):
        w.check_btn.click()
    assert "Check: 1,982 of 2,000 rows would load and 18 would be rejected" in w.summary.text()
    assert "stop" not in w.summary.text()
