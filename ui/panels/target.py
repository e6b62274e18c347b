"""The target panel: connection, schema, table, mode, key and the new table's DDL."""

from __future__ import annotations

from PySide6.QtWidgets import (
    QComboBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QWidget,
)

from core.preview import DatabaseInfo
from core.spec import LoadMode
from ui.elided_label import ElidedLabel

EMBEDDED = "Local (embedded)"


class TargetPanel(QGroupBox):
    """Widgets only: the window's TargetController wires connect_btn, new_btn and the schema
    combo; the window the other combos."""

    def __init__(self, connections: list[str], parent: QWidget | None = None) -> None:
        super().__init__("Target", parent)
        form = QFormLayout(self)
        conn_row = QHBoxLayout()
        self.conn_combo = QComboBox()
        self.conn_combo.setEditable(True)
        self.conn_combo.addItem(EMBEDDED)
        for name in connections:
            self.conn_combo.addItem(name)
        # A long DSN must not widen the window: the combo asks for a few characters, shows what fits.
        self.conn_combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.conn_combo.setMinimumContentsLength(12)
        self.conn_combo.setToolTip("Local (embedded) needs nothing; or type a DSN such as host=db user=me dbname=dw")
        self.connect_btn = QPushButton("Connect")
        self.new_btn = QPushButton("New…")
        self.new_btn.setToolTip("Save a connection (host, port, database, user, SSL mode); passwords are never saved")
        # The buttons sit beside the status line, not the combo: the column stays narrow.
        form.addRow("Connection", self.conn_combo)
        # A long server banner must not widen the whole column: elided, whole text in the tooltip.
        self.db_status = ElidedLabel("not connected")
        conn_row.addWidget(self.db_status, 1)
        conn_row.addWidget(self.connect_btn)
        conn_row.addWidget(self.new_btn)
        form.addRow("", conn_row)
        self.schema_combo = QComboBox()
        self.schema_combo.setEditable(True)
        self.schema_combo.addItem("public")
        form.addRow("Schema", self.schema_combo)
        self.table_combo = QComboBox()
        self.table_combo.setEditable(True)
        self.table_combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.table_combo.setMinimumContentsLength(12)
        # A script's tables loaded all at once: said in words instead of one table's name.
        self.tables_note = ElidedLabel()
        self.tables_note.setVisible(False)
        table_row = QHBoxLayout()
        table_row.addWidget(self.table_combo, 1)
        table_row.addWidget(self.tables_note, 1)
        form.addRow("Table", table_row)
        self.mode_combo = QComboBox()
        self.mode_combo.addItems([m.value for m in LoadMode])
        self.key_edit = QLineEdit()
        self.key_edit.setPlaceholderText("key columns for upsert")
        self.key_edit.setToolTip("Key columns for upsert, comma-separated")
        mode_row = QHBoxLayout()  # one row for both: the column is shorter
        mode_row.addWidget(self.mode_combo)
        mode_row.addWidget(QLabel("Key"))
        mode_row.addWidget(self.key_edit, 1)
        form.addRow("Mode", mode_row)
        self.ddl_edit = QPlainTextEdit()
        self.ddl_edit.setMaximumHeight(70)
        self.ddl_edit.setMinimumHeight(40)
        self.ddl_edit.setToolTip("CREATE TABLE used in mode 'create'; edit it freely")
        self.ddl_edit.setTabChangesFocus(True)  # Tab moves on to the strategy; DDL needs no tab characters
        form.addRow("New table DDL", self.ddl_edit)
        # Shown when the box holds a hand edit that no longer follows the mapping (ui/ddl_box.py).
        self.ddl_note = ElidedLabel()  # a few words; the whole reason in its tooltip
        self.ddl_regenerate_btn = QPushButton("Use the mapping's DDL")
        self.ddl_regenerate_btn.setToolTip("Replace the hand-edited DDL by the one made from the mapping")
        note_row = QHBoxLayout()
        note_row.addWidget(self.ddl_note, 1)
        note_row.addWidget(self.ddl_regenerate_btn)
        form.addRow("", note_row)
        self.ddl_note.setVisible(False)
        self.ddl_regenerate_btn.setVisible(False)

    def focus_order(self) -> list[QWidget]:
        """The panel's controls in reading order, for the window's Tab chain."""
        return [self.conn_combo, self.connect_btn, self.new_btn, self.schema_combo, self.table_combo,
                self.mode_combo, self.key_edit, self.ddl_edit]

    def table_name(self) -> str:
        return self.table_combo.currentText().strip()

    def schema(self) -> str | None:
        """The schema typed or picked (None: the server's default)."""
        return self.schema_combo.currentText().strip() or None

    def show_database(self, info: DatabaseInfo, where: str) -> None:
        """The server's banner and its schemas (the schema typed so far is kept)."""
        self.db_status.setText(f"connected: PostgreSQL {info.version} ({where})")
        self.db_status.setToolTip(self.db_status.text())
        current = self.schema_combo.currentText()
        self.schema_combo.blockSignals(True)
        self.schema_combo.clear()
        self.schema_combo.addItems(info.schemas)
        self.schema_combo.setEditText(current or "public")
        self.schema_combo.blockSignals(False)

    def show_tables(self, tables: list[str]) -> None:
        """The schema's tables in the pick-list; the name typed so far stays (no change signal)."""
        text = self.table_combo.currentText()
        self.table_combo.blockSignals(True)
        self.table_combo.clear()
        self.table_combo.addItems(tables)
        self.table_combo.setEditText(text)
        self.table_combo.blockSignals(False)

    def set_table_quietly(self, name: str) -> None:
        self.table_combo.blockSignals(True)
        self.table_combo.setEditText(name)
        self.table_combo.blockSignals(False)

    def show_all_tables(self, tables: list[tuple[str, int]] | None) -> None:
        """A script's tables all loaded at once (each into its own): the note replaces the table field."""
        several = bool(tables) and len(tables or []) > 1
        self.table_combo.setVisible(not several)
        self.tables_note.setVisible(several)
        if tables and several:
            self.tables_note.setText(f"{len(tables)} tables: " + ", ".join(f"{n} ({r:,} rows)" for n, r in tables))

    def allow_modes(self, allowed: set[LoadMode]) -> None:
        """Only these modes can be picked (several tables: append or truncate); the others stay listed, greyed."""
        model = self.mode_combo.model()
        for i in range(self.mode_combo.count()):
            item = model.item(i)  # type: ignore[attr-defined]
            item.setEnabled(LoadMode(self.mode_combo.itemText(i)) in allowed)
        if LoadMode(self.mode_combo.currentText()) not in allowed:
            self.mode_combo.setCurrentText(LoadMode.APPEND.value)
