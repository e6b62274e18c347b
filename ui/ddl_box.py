"""The "New table DDL" box follows the mapping until the user edits it; then the edit is theirs.

A hand edit (an added PRIMARY KEY, a column default) survives a change of the table's name: the
name in its CREATE TABLE is renamed, where it stands exactly as the box wrote it. Where that cannot
be done safely (the mapping itself changed, or the name was retyped), the edit stays and a note under
the box says so, with a button that replaces it by the mapping's DDL: nothing replaces it unasked.
"""

from __future__ import annotations

from PySide6.QtCore import QObject

from core.db import TableRef
from core.preview import ddl_preview, ddl_renamed
from core.spec import ColumnMap
from ui.panels.target import TargetPanel


class DdlBox(QObject):
    """Fills the target panel's DDL box from the mapping, and keeps the user's own edit of it."""

    def __init__(self, panel: TargetPanel) -> None:
        super().__init__(panel)
        self.p = panel
        self.hand_edited = False
        self._generated: str | None = None  # the mapping's DDL the box last followed
        self._ref: TableRef | None = None
        self._maps: list[ColumnMap] = []
        self._setting = False
        panel.ddl_edit.textChanged.connect(self._on_text_changed)
        panel.ddl_regenerate_btn.clicked.connect(self.use_mapping)

    def _on_text_changed(self) -> None:
        if not self._setting:
            self.hand_edited = True

    def _set(self, text: str) -> None:
        self._setting = True
        try:
            self.p.ddl_edit.setPlainText(text)
        finally:
            self._setting = False

    def _note(self, why: str) -> None:
        tip = f"Your edit of the DDL is kept; {why}." if why else ""
        self.p.ddl_note.setText("Edited by hand" if why else "")
        self.p.ddl_note.setToolTip(tip)
        self.p.ddl_regenerate_btn.setToolTip(tip + "\nClick to replace it by the DDL made from the mapping.")
        self.p.ddl_note.setVisible(bool(why))
        self.p.ddl_regenerate_btn.setVisible(bool(why))

    def follow(self, ref: TableRef, maps: list[ColumnMap]) -> None:
        """The mapping or the table changed: show its DDL, unless the box holds the user's edit."""
        try:
            generated = ddl_preview(ref, maps)
        except Exception as exc:  # noqa: BLE001 - a bad type name typed by the user
            generated = f"-- {exc}"
        old_ref, old_generated = self._ref, self._generated
        self._ref, self._maps, self._generated = ref, list(maps), generated
        if not self.hand_edited or not self.p.ddl_edit.toPlainText().strip():
            self.hand_edited = False
            self._set(generated)
            self._note("")
            return
        if generated == old_generated:
            return  # nothing the box would show differently: the edit stays as it is
        same_columns = old_ref is not None and old_ref != ref and _safe_ddl(old_ref, maps) == old_generated
        renamed = ddl_renamed(self.p.ddl_edit.toPlainText(), old_ref, ref) if same_columns and old_ref else None
        if renamed is not None:
            self._set(renamed)  # still the user's edit, under the new name
            return
        self._note(f"its table name is not {ref.display()}" if same_columns
                   else "the mapping's changes since are not in it")

    def use_mapping(self) -> None:
        """Replace the hand edit by the mapping's DDL (the note's button)."""
        self.hand_edited = False
        if self._ref is not None:
            self.follow(self._ref, self._maps)

    def forget_edit(self) -> None:
        """Another file: an edit made for the last file's columns does not apply."""
        self.hand_edited = False
        self._generated = None
        self._note("")


def _safe_ddl(ref: TableRef, maps: list[ColumnMap]) -> str | None:
    try:
        return ddl_preview(ref, maps)
    except Exception:  # noqa: BLE001 - a bad type name typed by the user
        return None
