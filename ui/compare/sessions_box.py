"""The Compare tab's list of comparisons: tick one to show it, two to set them side by side,
double-click to rename, remove the ones no longer wanted."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QGroupBox, QListWidget, QListWidgetItem, QPushButton, QVBoxLayout

from core.lab.compare import describe
from ui.compare.session import CompareSession

_SESSION = Qt.ItemDataRole.UserRole


class SessionsBox(QGroupBox):
    """Signals: changed(): which sessions are ticked, or a session's name, changed; or one was removed.

    `sessions` holds every comparison of the window, newest last, one list item each.
    """

    changed = Signal()

    def __init__(self, removable: Callable[[CompareSession], bool]) -> None:
        super().__init__("Sessions (tick two to compare; double-click to rename)")
        self._removable = removable  # the running comparison stays
        self.sessions: list[CompareSession] = []
        lay = QVBoxLayout(self)
        self.session_list = QListWidget()
        self.session_list.setMaximumHeight(110)
        self.session_list.itemChanged.connect(self._on_item_changed)
        lay.addWidget(self.session_list)
        self.remove_btn = QPushButton("Remove session")
        self.remove_btn.clicked.connect(self._on_remove_clicked)
        lay.addWidget(self.remove_btn)

    def shown(self) -> list[CompareSession]:
        """The ticked sessions, oldest first."""
        return [s for i, s in enumerate(self.sessions)
                if self.session_list.item(i).checkState() == Qt.CheckState.Checked]

    def show_only(self, sessions: list[CompareSession]) -> None:
        """Tick exactly these sessions."""
        self.session_list.blockSignals(True)
        for i, s in enumerate(self.sessions):
            self.session_list.item(i).setCheckState(
                Qt.CheckState.Checked if any(s is t for t in sessions) else Qt.CheckState.Unchecked)
        self.session_list.blockSignals(False)
        self.changed.emit()

    def add(self, session: CompareSession) -> None:
        """A new comparison, shown alone; tick an older one to set it beside."""
        self.sessions.append(session)
        item = QListWidgetItem(session.title())
        item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable | Qt.ItemFlag.ItemIsEditable)
        item.setData(_SESSION, session.number)
        self.session_list.blockSignals(True)
        self.session_list.addItem(item)
        self.session_list.blockSignals(False)
        self.update_item(session)
        self.show_only([session])

    def update_item(self, session: CompareSession) -> None:
        """The session's title (with its state) and tooltip, redone."""
        item = self.session_list.item(self.sessions.index(session))
        self.session_list.blockSignals(True)
        item.setText(session.title())
        fastest = session.fastest()
        best = f"\nfastest: {describe(fastest)}, {fastest.median_rows_per_s:,.0f} rows/s" if fastest else ""
        item.setToolTip(f"{session.settings_text()}\n{session.source} → {session.table}\n"
                        f"started {session.started:%H:%M:%S}{best}")
        self.session_list.blockSignals(False)

    def _on_item_changed(self, item: QListWidgetItem) -> None:
        session = self.sessions[self.session_list.row(item)]
        text = item.text().strip()
        if text and text != session.title():
            session.name = text.removesuffix(f" ({session.state})")
            self.update_item(session)
        self.changed.emit()

    def _on_remove_clicked(self) -> None:
        row = self.session_list.currentRow()
        if row < 0 or not self._removable(self.sessions[row]):
            return
        del self.sessions[row]
        self.session_list.takeItem(row)
        self.changed.emit()
