"""A hand edit of the New table DDL box is kept (issue 24, item 14)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
from PySide6.QtCore import Qt

from core.db import TableRef
from ui.ddl_box import ddl_renamed


def _open(qtbot: Any, w: Any, path: Path) -> None:
    with qtbot.waitSignal(w.source_ready, timeout=30_000):
        w.open_file(str(path))


def _people(tmp_path: Path, name: str = "people.csv") -> Path:
    path = tmp_path / name
    path.write_text("id,name,city\n1,ann,oslo\n2,bob,rome\n", encoding="utf-8")
    return path


def _type_into_ddl(qtbot: Any, w: Any, old: str, new: str) -> None:
    """A real edit: select the box's text and type it again with `old` replaced by `new`."""
    edit = w.ddl_edit
    edit.setFocus()
    qtbot.keyClick(edit, Qt.Key.Key_A, Qt.KeyboardModifier.ControlModifier)
    text = edit.toPlainText().replace(old, new)
    qtbot.keyClicks(edit, text)
    assert edit.toPlainText() == text


def test_ddl_renamed_renames_only_the_create_table_name() -> None:
    ddl = 'CREATE TABLE "public"."a" ("id" integer PRIMARY KEY, "a" text)'
    assert ddl_renamed(ddl, TableRef("a", "public"), TableRef("b c", "public")) == (
        'CREATE TABLE "public"."b c" ("id" integer PRIMARY KEY, "a" text)')
    assert ddl_renamed("CREATE TABLE a (id int)", TableRef("a", "public"), TableRef("b", "public")) is None


def test_a_hand_edit_survives_a_new_table_name_and_is_used(
    qtbot: Any, window: Any, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path
) -> None:
    w = window
    _open(qtbot, w, _people(tmp_path))
    first, second = table_name("ddl1"), table_name("ddl2")
    w.table_combo.setEditText(first)
    assert w.mode_combo.currentText() == "create" and first in w.ddl_edit.toPlainText()
    _type_into_ddl(qtbot, w, '"id" integer', '"id" integer PRIMARY KEY')
    w.table_combo.setEditText(second)
    text = w.ddl_edit.toPlainText()
    assert "PRIMARY KEY" in text and f'"{second}"' in text and first not in text
    assert not w.target_panel.ddl_note.isVisibleTo(w)
    with qtbot.waitSignal(w.run_finished, timeout=60_000):
        w.start_run()
    row = conn.execute("SELECT count(*) FROM pg_constraint WHERE conrelid = %s::regclass AND contype = 'p'",
                       [f'public."{second}"']).fetchone()
    assert row == (1,)


def test_a_hand_edit_is_not_replaced_when_the_mapping_changes_until_asked(
    qtbot: Any, window: Any, table_name: Callable[[str], str], tmp_path: Path
) -> None:
    w = window
    _open(qtbot, w, _people(tmp_path))
    w.table_combo.setEditText(table_name("ddl3"))
    _type_into_ddl(qtbot, w, '"id" integer', '"id" integer PRIMARY KEY')
    edited = w.ddl_edit.toPlainText()
    include = w.mapping.index(2, w.mapping.INCLUDE)  # untick city: the mapping's DDL changes
    w.mapping.setData(include, Qt.CheckState.Unchecked.value, Qt.ItemDataRole.CheckStateRole)
    assert w.ddl_edit.toPlainText() == edited
    note = w.target_panel.ddl_note
    assert note.isVisibleTo(w) and note.text() == "Edited by hand" and "kept" in note.toolTip()
    qtbot.mouseClick(w.target_panel.ddl_regenerate_btn, Qt.MouseButton.LeftButton)
    text = w.ddl_edit.toPlainText()
    assert "PRIMARY KEY" not in text and '"city"' not in text and not note.isVisibleTo(w)
    # Followed again from then on.
    w.mapping.setData(include, Qt.CheckState.Checked.value, Qt.ItemDataRole.CheckStateRole)
    assert '"city"' in w.ddl_edit.toPlainText()


def test_another_file_takes_its_own_ddl(qtbot: Any, window: Any, table_name: Callable[[str], str],
                                        tmp_path: Path) -> None:
    w = window
    _open(qtbot, w, _people(tmp_path))
    w.table_combo.setEditText(table_name("ddl4"))
    _type_into_ddl(qtbot, w, '"id" integer', '"id" integer PRIMARY KEY')
    other = tmp_path / "towns.csv"
    other.write_text("town,pop\nx,1\n", encoding="utf-8")
    _open(qtbot, w, other)
    assert '"town"' in w.ddl_edit.toPlainText() and "PRIMARY KEY" not in w.ddl_edit.toPlainText()
