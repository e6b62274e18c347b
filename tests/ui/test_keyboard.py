"""A whole load with the keyboard only (issue 24, item 12): Tab walks the controls in reading order,
once each (source, mapping, target, strategy, run); arrows move inside the grids."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication, QComboBox, QWidget


def _focused() -> QWidget:
    """The control that has the focus (an editable combo box's line edit counts as the combo)."""
    widget = QApplication.focusWidget()
    assert widget is not None
    parent = widget.parentWidget()
    return parent if isinstance(parent, QComboBox) and parent.lineEdit() is widget else widget


def _key(qtbot: Any, key: Qt.Key, modifier: Qt.KeyboardModifier = Qt.KeyboardModifier.NoModifier) -> None:
    qtbot.keyClick(QApplication.focusWidget(), key, modifier)


def _tab_to(qtbot: Any, target: QWidget, limit: int = 40) -> list[QWidget]:
    """Press Tab until `target` has the focus; the controls passed on the way, `target` last."""
    stops: list[QWidget] = []
    while _focused() is not target:
        assert len(stops) < limit, f"Tab never reached {type(target).__name__}: {[type(s).__name__ for s in stops]}"
        _key(qtbot, Qt.Key.Key_Tab)
        stops.append(_focused())
    return stops


def _type(qtbot: Any, text: str) -> None:
    qtbot.keyClicks(QApplication.focusWidget(), text)


def test_a_whole_load_with_the_keyboard_only(
    qtbot: Any, window: Any, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path
) -> None:
    w = window
    path = tmp_path / "keys.csv"
    path.write_text("id,name,score\n" + "".join(f"{i},n{i},{i}.5\n" for i in range(300)) + "x,bad,1\n",
                    encoding="utf-8")
    w.show()
    qtbot.waitExposed(w)
    w.activateWindow()
    qtbot.waitUntil(w.isActiveWindow)
    assert _focused() is w.path_edit  # a new window starts at the file

    with qtbot.waitSignal(w.source_ready, timeout=30_000):
        _type(qtbot, str(path))
        _key(qtbot, Qt.Key.Key_Return)
    # Into the preview: the arrows move inside it, and Tab leaves it (it walked 200 rows cell by cell).
    stops = _tab_to(qtbot, w.preview_view)
    s = w.source_panel
    assert stops == [s.open_btn, s.format_combo, s.encoding_edit, s.header_check, s.delim_edit, s.quote_edit,
                     s.null_edit, s.refresh_btn, w.preview_view]
    w.preview_view.setCurrentIndex(w.preview.index(0, 0))
    _key(qtbot, Qt.Key.Key_Right)
    _key(qtbot, Qt.Key.Key_Down)
    assert _focused() is w.preview_view
    assert (w.preview_view.currentIndex().row(), w.preview_view.currentIndex().column()) == (1, 1)
    # The mapping: arrows to a cell, F2 edits it, Space ticks and unticks.
    assert _tab_to(qtbot, w.mapping_view) == [w.mapping_view]
    m = w.mapping
    assert w.mapping_view.currentIndex() == m.index(0, m.SOURCE)
    _key(qtbot, Qt.Key.Key_Right)
    _key(qtbot, Qt.Key.Key_F2)
    _key(qtbot, Qt.Key.Key_A, Qt.KeyboardModifier.ControlModifier)
    _type(qtbot, "ident")
    _key(qtbot, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: m.maps[0].target == "ident" and _focused() is w.mapping_view)  # Qt commits queued
    for _ in range(3):  # past Type and Format
        _key(qtbot, Qt.Key.Key_Right)
    assert w.mapping_view.currentIndex() == m.index(0, m.INCLUDE)
    _key(qtbot, Qt.Key.Key_Space)
    assert not m.maps[0].include
    _key(qtbot, Qt.Key.Key_Space)
    assert m.maps[0].include
    # Tab leaves the grids at once (the mapping's wrapped inside it), on to the target's fields.
    t = w.target_panel
    assert _tab_to(qtbot, w.table_combo) == [w.mapping_panel.reset_btn, t.conn_combo, t.connect_btn, t.new_btn,
                                             t.schema_combo, w.table_combo]
    table = table_name("keys")
    with qtbot.waitSignal(w.mapping_ready, timeout=30_000):
        _key(qtbot, Qt.Key.Key_A, Qt.KeyboardModifier.ControlModifier)
        _type(qtbot, table)
    assert w.table_combo.currentText() == table
    assert _tab_to(qtbot, w.mode_combo) == [w.mode_combo]
    _type(qtbot, "c")  # the closed list picks by its first letters
    assert w.mode_combo.currentText() == "create"
    g = w.strategy_panel
    assert _tab_to(qtbot, w.strategy_combo) == [w.key_edit, w.ddl_edit, w.strategy_combo]  # Tab left the DDL
    _type(qtbot, "copy-c")
    assert w.strategy_combo.currentData() == "copy-csv"
    assert _tab_to(qtbot, w.policy_combo) == [g.batch_spin, g.commit_combo, w.policy_combo]  # workers: disabled
    _type(qtbot, "s")
    assert w.policy_combo.currentText() == "skip"
    # Under skip the reject limit and folder apply: Tab passes them on its way to Run.
    assert _tab_to(qtbot, w.run_btn) == [g.reject_limit_spin, g.reject_folder_edit, g.reject_browse_btn,
                                          g.reject_open_btn, w.run_btn]
    stops_seen: list[QWidget] = []
    w.run_started.connect(lambda _job: stops_seen.append(_focused()))  # the run has started (after its checks)
    with qtbot.waitSignal(w.run_finished, timeout=60_000) as done:
        _key(qtbot, Qt.Key.Key_Return)  # Enter presses the focused button, like Space
    assert stops_seen == [w.stop_btn]  # while it runs, the focus is on Stop (Space or Enter stops it)
    assert _focused() is w.run_btn  # and back on Run once it ended
    result = done.args[0]
    assert (result.rows_loaded, result.rows_rejected) == (300, 1)
    got = conn.execute(sql.SQL("SELECT count(*), sum(ident) FROM {}").format(sql.Identifier(table))).fetchone()
    assert got == (300, sum(range(300)))
    # On past the run panel's buttons to the lists, and round to the start again.
    r = w.run_panel
    assert _tab_to(qtbot, r.rejects_view) == [r.check_btn, r.show_table_btn, r.run_tabs.tabBar(),
                                                     r.rejects_view]
    assert w.run_tabs.currentIndex() == 1  # the rejected rows are shown after a run with rejects
    _tab_to(qtbot, w.path_edit)
    w.close()
