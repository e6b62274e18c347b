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
    QSizePolicy,
    QWidget,
)

from core.preview import DatabaseInfo
from core.spec import LoadMode

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
        self.conn_combo.setToolTip("Local (embedded) needs nothing; or type a DSN such as host=db user=me dbname=dw")
        self.connect_btn = QPushButton("Connect")
        self.new_btn = QPushButton("New…")
        self.new_btn.setToolTip("Save a connection (host, port, database, user, SSL mode); passwords are never saved")
        conn_row.addWidget(self.conn_combo, 1)
        conn_row.addWidget(self.connect_btn)
        conn_row.addWidget(self.new_btn)
        form.addRow("Connection", conn_row)
        self.db_status = QLabel("not connected")
        # A long server banner must not widen the whole column: cut it, whole text in the tooltip.
        self.db_status.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        form.addRow("", self.db_status)
        self.schema_combo = QComboBox()
        self.schema_combo.setEditable(True)
        self.schema_combo.addItem("public")
        form.addRow("Schema", self.schema_combo)
        self.table_combo = QComboBox()
        self.table_combo.setEditable(True)
        form.addRow("Table", self.table_combo)
        self.mode_combo = QComboBox()
        self.mode_combo.addItems([m.value for m in LoadMode])
        form.addRow("Mode", self.mode_combo)
        self.key_edit = QLineEdit()
        self.key_edit.setPlaceholderText("key columns for upsert, comma-separated")
        form.addRow("Key", self.key_edit)
        self.ddl_edit = QPlainTextEdit()
        self.ddl_edit.setMaximumHeight(70)
        self.ddl_edit.setToolTip("CREATE TABLE used in mode 'create'; edit it freely")
        form.addRow("New table DDL", self.ddl_edit)

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
