"""Small dialogs: a yes/no question, a read-only look at a table, copyable text."""

from __future__ import annotations

from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QHeaderView,
    QLabel,
    QMessageBox,
    QPlainTextEdit,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from core.preview import TableRows
from ui.table_models import RowsModel


def ask(parent: QWidget, title: str, text: str, yes: str, *, destructive: bool = False) -> bool:
    """A question with a named yes button and Cancel; True when the user said yes.

    `accept()` (Enter on the default button) counts as yes, like a click on it. A `destructive` question
    (rows removed or overwritten) has Cancel as its default: Enter alone never empties a table.
    """
    icon = QMessageBox.Icon.Warning if destructive else QMessageBox.Icon.Question
    box = QMessageBox(icon, title, text, QMessageBox.StandardButton.Cancel, parent)
    yes_btn = box.addButton(yes, QMessageBox.ButtonRole.AcceptRole)
    if destructive:
        box.setDefaultButton(QMessageBox.StandardButton.Cancel)
    else:
        box.setDefaultButton(yes_btn)
    box.exec()
    clicked = box.clickedButton()
    return clicked is yes_btn or (clicked is None and box.result() == QDialog.DialogCode.Accepted.value)


class TableDialog(QDialog):
    """The first rows of a table in a read-only grid."""

    def __init__(self, parent: QWidget, title: str, rows: TableRows, total: str) -> None:
        super().__init__(parent)
        self.setWindowTitle(title)
        self.resize(1000, 600)
        lay = QVBoxLayout(self)
        lay.addWidget(QLabel(f"{title}: first {len(rows.rows):,} rows of {total} (read-only)"))
        self.model = RowsModel(rows.columns, rows.types, rows.rows)
        view = QTableView()
        view.setModel(self.model)
        view.setEditTriggers(QTableView.EditTrigger.NoEditTriggers)
        view.setTabKeyNavigation(False)  # Tab goes to Close; arrows move inside the rows
        view.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        view.horizontalHeader().setDefaultSectionSize(120)
        view.verticalHeader().setDefaultSectionSize(22)
        view.resizeColumnsToContents()
        for col in range(self.model.columnCount()):
            view.setColumnWidth(col, min(max(view.columnWidth(col), 80), 320))
        lay.addWidget(view)
        self.view = view
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        lay.addWidget(buttons)


class TextDialog(QDialog):
    """Text to read and copy (a DSN, a psql command)."""

    def __init__(self, parent: QWidget, title: str, text: str) -> None:
        super().__init__(parent)
        self.setWindowTitle(title)
        self.resize(760, 180)
        lay = QVBoxLayout(self)
        self.text = QPlainTextEdit(text)
        self.text.setReadOnly(True)
        lay.addWidget(self.text)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        lay.addWidget(buttons)
