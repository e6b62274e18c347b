"""A window you can trust with a production table: destructive modes ask first, naming the table and its rows
as they are now on the server in use; a wheel never changes a value it only scrolled past; a profile's mode
is never changed by a stale table list."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql
from PySide6.QtCore import QPoint, QPointF, Qt
from PySide6.QtGui import QWheelEvent
from PySide6.QtWidgets import QAbstractSpinBox, QApplication, QComboBox, QScrollArea

from core import profile
from core.spec import LoadMode, LoadSpec, SourceOptions, TargetSpec
from tests.ui.test_main_window import _count, _csv, _open, _run


def _table_with_rows(conn: psycopg.Connection[Any], table: str, rows: int) -> None:
    conn.execute(sql.SQL("CREATE TABLE {} (id int, name text, score float8)").format(sql.Identifier(table)))
    conn.execute(sql.SQL("INSERT INTO {} SELECT i, 'old', 0 FROM generate_series(1, %s) i").format(
        sql.Identifier(table)), (rows,))


def _onto(qtbot: Any, w: Any, table: str) -> None:
    with qtbot.waitSignal(w.database_ready, timeout=30_000):
        w.refresh_database()
    with qtbot.waitSignal(w.mapping_ready, timeout=30_000):
        w.table_combo.setEditText(table)


def _pick_mode(w: Any, mode: str) -> None:
    """As a user picks it from the list (activated), not as the window sets it."""
    combo = w.mode_combo
    combo.setCurrentText(mode)
    combo.activated.emit(combo.currentIndex())


def test_truncate_asks_naming_the_table_its_rows_and_the_files_rows(
    qtbot: Any, window: Any, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path
) -> None:
    w = window
    table = table_name("prod")
    _table_with_rows(conn, table, 2000)
    _open(qtbot, w, _csv(tmp_path / "fresh.csv", 7))
    _onto(qtbot, w, table)
    _pick_mode(w, "truncate")
    w.answer = False
    with qtbot.waitSignal(w.run_refused, timeout=30_000) as asked:
        w.run_btn.click()
    question = asked.args[0]
    assert question.startswith(f"Truncate public.{table}? Its 2,000 rows will be removed, and the file's 7 rows")
    assert _count(conn, table) == 2000 and w._run_job is None
    w.answer = True
    _run(qtbot, w)
    assert _count(conn, table) == 7
    assert "Mode truncate: 2,000 rows that were in the table were removed first." in w.summary.text()
    assert "2,000 rows that were in the table were removed" in w.history.rows[-1][-1]
    # Asked every time, with the rows there now.
    before = len(w.messages)
    _run(qtbot, w)
    assert len(w.messages) == before + 1 and "Its 7 rows will be removed" in w.messages[-1]


def test_upsert_into_a_table_with_rows_asks_every_time(
    qtbot: Any, window: Any, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path
) -> None:
    w = window
    table = table_name("keyed")
    conn.execute(sql.SQL("CREATE TABLE {} (id int PRIMARY KEY, name text, score float8)").format(sql.Identifier(table)))
    conn.execute(sql.SQL("INSERT INTO {} VALUES (1, 'old', 0)").format(sql.Identifier(table)))
    _open(qtbot, w, _csv(tmp_path / "keyed.csv", 3))
    _onto(qtbot, w, table)
    _pick_mode(w, "upsert")
    w.key_edit.setText("id")
    w.answer = False
    with qtbot.waitSignal(w.run_refused, timeout=30_000) as asked:
        w.run_btn.click()
    assert asked.args[0].startswith(f"Upsert 3 rows into public.{table} (1 row)?") and "id" in asked.args[0]
    w.answer = True
    _run(qtbot, w)
    _run(qtbot, w)
    assert sum(m.startswith("Upsert ") for m in w.messages) == 3
    assert _count(conn, table) == 3


def _wheel(widget: Any) -> None:
    """One notch of the wheel over the middle of `widget` (down: the next item, the lower value)."""
    pos = QPointF(widget.width() / 2, widget.height() / 2)
    event = QWheelEvent(pos, widget.mapToGlobal(pos), QPoint(0, 0), QPoint(0, -120), Qt.MouseButton.NoButton,
                        Qt.KeyboardModifier.NoModifier, Qt.ScrollPhase.NoScrollPhase, False)
    QApplication.sendEvent(widget, event)


def test_the_wheel_scrolls_past_combos_and_spin_boxes_without_changing_them(qtbot: Any, window: Any) -> None:
    w = window
    w.show()
    qtbot.waitExposed(w)
    guarded = [c for c in w.findChildren(QComboBox) + w.findChildren(QAbstractSpinBox) if c.isEnabled()]
    assert w.mode_combo in guarded and w.strategy_combo in guarded and w.commit_combo in guarded
    assert any(c.window() is w and not c.isVisible() for c in guarded)  # the Compare tab's too
    w.run_btn.setFocus()
    for c in guarded:
        before = c.currentIndex() if isinstance(c, QComboBox) else c.value()
        _wheel(c)
        assert (c.currentIndex() if isinstance(c, QComboBox) else c.value()) == before, c
        assert c.focusPolicy() == Qt.FocusPolicy.StrongFocus, c  # a wheel never gives it focus
    assert w.mode_combo.currentText() == "append"
    # Focused by a click or Tab, the wheel is the control's own.
    w.mode_combo.setFocus()
    qtbot.waitUntil(w.mode_combo.hasFocus)
    _wheel(w.mode_combo)
    assert w.mode_combo.currentText() == "truncate"


def test_a_wheel_over_a_combo_scrolls_the_form_around_it(qtbot: Any, window: Any) -> None:
    w = window
    w.resize(1024, 560)  # the form column scrolls
    w.show()
    qtbot.waitExposed(w)
    bars = [a.verticalScrollBar() for a in w.findChildren(QScrollArea) if a.isAncestorOf(w.mode_combo)]
    qtbot.waitUntil(lambda: any(bar.maximum() > 0 for bar in bars))
    w.run_btn.setFocus()
    before = [bar.value() for bar in bars]
    _wheel(w.mode_combo)
    assert [bar.value() for bar in bars] > before and w.mode_combo.currentText() == "append"


def _profile(tmp_path: Path, source: Path, table: str, mode: LoadMode, dsn: str) -> Path:
    path = tmp_path / "p.toml"
    profile.save(LoadSpec(SourceOptions(str(source)), TargetSpec(table, mode=mode), strategy="copy-csv", dsn=dsn),
                 str(path))
    return path


def test_a_profiles_mode_survives_a_table_list_read_before_the_table_was_made(
    qtbot: Any, window: Any, dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path
) -> None:
    """The list was read with no such table; the table is made outside; the profile's truncate stays truncate."""
    w = window
    table = table_name("late")
    source = _csv(tmp_path / "late.csv", 5)
    path = _profile(tmp_path, source, table, LoadMode.TRUNCATE, dsn)
    _table_with_rows(conn, table, 40)  # made after the window read its list
    with qtbot.waitSignal(w.source_ready, timeout=30_000):
        w.open_profile(str(path))
    qtbot.waitUntil(lambda: not w._jobs and not w.maps.pending, timeout=30_000)
    assert w.mode_combo.currentText() == "truncate"
    _run(qtbot, w)
    assert _count(conn, table) == 5
    assert any(m.startswith(f"Truncate public.{table}? Its 40 rows") for m in w.messages)


def test_a_profiles_mode_that_cannot_apply_is_refused_not_changed(
    qtbot: Any, window: Any, dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path
) -> None:
    w = window
    table = table_name("gone")
    source = _csv(tmp_path / "gone.csv", 5)
    path = _profile(tmp_path, source, table, LoadMode.TRUNCATE, dsn)
    with qtbot.waitSignal(w.source_ready, timeout=30_000):
        w.open_profile(str(path))
    qtbot.waitUntil(lambda: not w._jobs and not w.maps.pending, timeout=30_000)
    assert w.mode_combo.currentText() == "truncate"  # not turned into create
    with qtbot.waitSignal(w.run_refused, timeout=30_000) as refused:
        w.run_btn.click()
    assert f"public.{table} does not exist" in refused.args[0] and "mode truncate" in refused.args[0]
    assert conn.execute("SELECT to_regclass(%s)", (f"public.{table}",)).fetchone() == (None,)


def test_create_on_a_table_made_since_the_list_was_read_is_refused(
    qtbot: Any, window: Any, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path
) -> None:
    """Run reads the catalog again: a table made outside since is not overwritten, and the list learns of it."""
    w = window
    table = table_name("race")
    _open(qtbot, w, _csv(tmp_path / "race.csv", 5))
    with qtbot.waitSignal(w.mapping_ready, timeout=30_000):
        w.table_combo.setEditText(table)
    assert w.mode_combo.currentText() == "create"
    _table_with_rows(conn, table, 3)
    with qtbot.waitSignal(w.run_refused, timeout=30_000) as refused:
        w.run_btn.click()
    assert "already exists" in refused.args[0] and _count(conn, table) == 3
    qtbot.waitUntil(lambda: w.table_exists() and w.mode_combo.currentText() == "append", timeout=30_000)


def test_facts_about_the_target_belong_to_the_connection_in_use(
    qtbot: Any, window: Any, dsn: str, other_db: str, conn: psycopg.Connection[Any],
    table_name: Callable[[str], str], tmp_path: Path,
) -> None:
    w = window
    table = table_name("where")
    _table_with_rows(conn, table, 500)
    _open(qtbot, w, _csv(tmp_path / "where.csv", 4))
    _onto(qtbot, w, table)
    assert w.target_size is not None and w.target_size.rows == 500
    # Another server, where the table is not: its list and the table's columns are read again there.
    with qtbot.waitSignal(w.database_ready, timeout=30_000):
        w.conn_combo.setEditText(other_db)
        w.conn_combo.lineEdit().editingFinished.emit()
    qtbot.waitUntil(lambda: not w._jobs and not w.maps.pending, timeout=30_000)
    assert w.target_size is None and not w.table_exists() and w.mode_combo.currentText() == "create"
    messages = len(w.messages)
    _run(qtbot, w)  # created there, with no word of the first server's 500 rows
    assert len(w.messages) == messages
    with psycopg.connect(other_db) as other:
        assert _count(other, table) == 4
    assert _count(conn, table) == 500
    # Back on the first server, emptied outside the window: nothing to ask about.
    conn.execute(sql.SQL("TRUNCATE {}").format(sql.Identifier(table)))
    with qtbot.waitSignal(w.database_ready, timeout=30_000):
        w.conn_combo.setEditText(dsn)
        w.conn_combo.lineEdit().editingFinished.emit()
    qtbot.waitUntil(lambda: not w._jobs and not w.maps.pending, timeout=30_000)
    assert w.mode_combo.currentText() == "append"
    messages = len(w.messages)
    _run(qtbot, w)
    assert len(w.messages) == messages and _count(conn, table) == 4
    # And with rows again, the question quotes what is there now.
    conn.execute(sql.SQL("INSERT INTO {} SELECT i, 'x', 0 FROM generate_series(1, 5) i").format(sql.Identifier(table)))
    w.answer = False
    _pick_mode(w, "truncate")
    with qtbot.waitSignal(w.run_refused, timeout=30_000) as asked:
        w.run_btn.click()
    assert "Its 9 rows will be removed" in asked.args[0]


def test_create_after_the_table_was_dropped_asks(
    qtbot: Any, window: Any, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path
) -> None:
    """A table seen with rows on this server and gone now (dropped outside): remade only after a question."""
    w = window
    table = table_name("dropped")
    _table_with_rows(conn, table, 12)
    _open(qtbot, w, _csv(tmp_path / "dropped.csv", 3))
    _onto(qtbot, w, table)
    conn.execute(sql.SQL("DROP TABLE {}").format(sql.Identifier(table)))
    with qtbot.waitSignal(w.database_ready, timeout=30_000):
        w.refresh_database()
    qtbot.waitUntil(lambda: not w._jobs and not w.maps.pending, timeout=30_000)
    assert w.mode_combo.currentText() == "create"
    w.answer = False
    with qtbot.waitSignal(w.run_refused, timeout=30_000) as asked:
        w.run_btn.click()
    assert f"public.{table} held 12 rows" in asked.args[0] and "Create it anew" in asked.args[0]
    w.answer = True
    _run(qtbot, w)
    assert _count(conn, table) == 3


def test_enter_alone_never_empties_a_table(qtbot: Any) -> None:
    """A destructive question defaults to Cancel; a plain one to its yes."""
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QWidget

    from ui import dialogs

    parent = QWidget()
    qtbot.addWidget(parent)

    def enter() -> None:
        box = QApplication.activeModalWidget()
        assert box is not None
        qtbot.keyClick(box, Qt.Key.Key_Return)

    QTimer.singleShot(0, enter)
    assert dialogs.ask(parent, "Truncate", "Truncate t?", "Truncate and load", destructive=True) is False
    QTimer.singleShot(0, enter)
    assert dialogs.ask(parent, "Append", "Append to t?", "Append") is True
