"""A create that leaves out columns of the file says which, in the plan and in a question (issue 24, item 15)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql
from PySide6.QtCore import Qt


def _untick(w: Any, row: int) -> None:
    w.mapping.setData(w.mapping.index(row, w.mapping.INCLUDE), Qt.CheckState.Unchecked.value,
                      Qt.ItemDataRole.CheckStateRole)


def test_unticks_made_for_one_table_are_said_before_creating_the_next(
    qtbot: Any, window: Any, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path
) -> None:
    w = window
    narrow, new = table_name("narrow"), table_name("wide")
    conn.execute(sql.SQL("CREATE TABLE {} (id int)").format(sql.Identifier(narrow)))
    path = tmp_path / "people.csv"
    path.write_text("id,name,city\n1,ann,oslo\n2,bob,rome\n", encoding="utf-8")
    with qtbot.waitSignal(w.source_ready, timeout=30_000):
        w.open_file(str(path))
    w.refresh_table_list_quietly()
    qtbot.waitUntil(lambda: narrow in [w.table_combo.itemText(i) for i in range(w.table_combo.count())],
                    timeout=30_000)
    with qtbot.waitSignal(w.mapping_ready, timeout=30_000):
        w.table_combo.setEditText(narrow)
    _untick(w, 1)
    _untick(w, 2)  # to fit the one-column table
    with qtbot.waitSignal(w.run_finished, timeout=60_000):
        w.start_run()
    # Another, new table: the unticks carry over, and the plan says so.
    texts: list[str] = []
    w.foresight.updated.connect(texts.append)
    w.table_combo.setEditText(new)
    assert w.mode_combo.currentText() == "create"
    qtbot.waitUntil(lambda: any("auto will pick" in t for t in texts), timeout=60_000)
    plan = next(t for t in texts if "auto will pick" in t)
    assert plan.startswith("creates the table without the file's columns name, city (unticked in the mapping)")
    # Run asks first, naming them; no means no table.
    w.answer = False
    asked = len(w.messages)
    with qtbot.waitSignal(w.run_refused, timeout=10_000):
        w.start_run()
    question = w.messages[asked]
    assert "without the file's columns name, city" in question and "1 of the file's 3 columns" in question
    assert conn.execute("SELECT to_regclass(%s)", [f'public."{new}"']).fetchone() == (None,)
    # Ticked again: no question, all three columns.
    w.mapping.setData(w.mapping.index(1, w.mapping.INCLUDE), Qt.CheckState.Checked.value,
                      Qt.ItemDataRole.CheckStateRole)
    w.mapping.setData(w.mapping.index(2, w.mapping.INCLUDE), Qt.CheckState.Checked.value,
                      Qt.ItemDataRole.CheckStateRole)
    asked = len(w.messages)
    with qtbot.waitSignal(w.run_finished, timeout=60_000):
        w.start_run()
    assert len(w.messages) == asked
    row = conn.execute("SELECT count(*) FROM information_schema.columns WHERE table_name = %s", [new]).fetchone()
    assert row == (3,)


def test_a_profile_that_leaves_out_columns_creates_without_asking_again(
    qtbot: Any, window: Any, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path
) -> None:
    """Its unticks were chosen when it was saved: the plan says them, Run does not ask about them."""
    w = window
    path = tmp_path / "towns.csv"
    path.write_text("id,name,city\n1,ann,oslo\n", encoding="utf-8")
    with qtbot.waitSignal(w.source_ready, timeout=30_000):
        w.open_file(str(path))
    table = table_name("prof")
    w.table_combo.setEditText(table)
    _untick(w, 2)
    saved = w.save_profile(str(tmp_path / "towns.toml"))
    other = tmp_path / "other.csv"
    other.write_text("a\n1\n", encoding="utf-8")
    with qtbot.waitSignal(w.source_ready, timeout=30_000):
        w.open_file(str(other))
    with qtbot.waitSignal(w.source_ready, timeout=30_000):
        w.open_profile(saved)
    assert w.mode_combo.currentText() == "create" and w.maps.left_out() == ["city"]
    asked = len(w.messages)
    with qtbot.waitSignal(w.run_finished, timeout=60_000):
        w.start_run()
    assert len(w.messages) == asked
    row = conn.execute("SELECT count(*) FROM information_schema.columns WHERE table_name = %s", [table]).fetchone()
    assert row == (2,)
