"""The target controller: the connection in use, its password for this session, the database's tables.

It owns the target panel's connection and schema fields, reads the server on background workers, and
keeps the database's tables in the shared state (ui/state.py), which reads the DSN from here (dsn()),
fresh each time. The target table's columns (the mapping) are the mapping controller's: it follows
LoadState.database_changed (wired in the window's _connect).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from psycopg.conninfo import make_conninfo
from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QInputDialog, QLineEdit, QWidget

from core.db import TableRef, resolve_dsn, strip_password
from core.embedded import connection_help
from core.preview import DatabaseInfo, TableRows, first_rows, inspect_database, table_size
from core.target_facts import TableSize, TargetFacts
from ui import dialogs
from ui.panels.target import EMBEDDED, TargetPanel

if TYPE_CHECKING:
    from ui.settings import Settings
    from ui.state import LoadState
    from ui.worker import InBackground


class TargetController(QObject):
    """Connects to the chosen server, lists its schemas and tables, shows a table's rows and the server's address.

    Signals: database_ready() (the server's tables read and shown, after LoadState.database_changed),
    table_shown(object TableDialog), server_info_shown(str), said(str) (a line for the run log),
    failed(str) (an error for the user).
    """

    database_ready = Signal()
    table_shown = Signal(object)
    server_info_shown = Signal(str)
    said = Signal(str)
    failed = Signal(str)

    def __init__(self, state: LoadState, panel: TargetPanel, settings: Settings, parent: QWidget,
                 background: InBackground) -> None:
        super().__init__(parent)
        self.state = state
        self.p = panel
        self.settings = settings
        self._parent = parent  # where its dialogs show
        self._background = background
        self.table_dialog: dialogs.TableDialog | None = None
        self._passwords: dict[str, str] = {}  # this session only; never written anywhere
        self._db_dsn: str | None = None  # the connection `db` was read on
        # Table sizes read on each connection (a table seen with rows and gone later was dropped).
        self._seen: dict[tuple[str | None, TableRef], TableSize] = {}
        self.p.connect_btn.clicked.connect(self.refresh_database)
        # Another server: what was read of the last one no longer holds; read this one's catalog.
        self.p.conn_combo.activated.connect(self._on_connection_picked)
        edit = self.p.conn_combo.lineEdit()
        if edit is not None:
            edit.editingFinished.connect(self._on_connection_picked)
        self.p.new_btn.clicked.connect(self._on_new_connection_clicked)
        self.p.schema_combo.currentTextChanged.connect(self._on_schema_changed)
        # The state reads the DSN from here; it says connection_changed after each edit of what makes it:
        # the connection field, a password, a saved connection (below), and before each read of the server.
        self.p.conn_combo.currentTextChanged.connect(self._recheck_dsn)
        state.read_dsn_with(self.dsn)

    @property
    def db(self) -> DatabaseInfo | None:
        """The database's schemas and tables as last read (kept in the shared state)."""
        return self.state.database

    @db.setter
    def db(self, info: DatabaseInfo | None) -> None:
        self.state.database = info

    def _recheck_dsn(self, *_args: object) -> None:
        self.state.recheck_connection()

    def dsn(self) -> str | None:
        """The active DSN; a password typed this session is added in memory, never saved."""
        text = self.p.conn_combo.currentText().strip()
        if not text or text == EMBEDDED:
            return None
        dsn = self.settings.connections.get(text, text)
        password = self._passwords.get(text)
        return make_conninfo(dsn, password=password) if password else dsn

    def schema(self) -> str | None:
        return self.p.schema()

    def table_exists(self) -> bool:
        """Whether the target table is in the database's list (as last read from the server)."""
        return self.state.lists_table(self.p.table_name(), self.p.schema_combo.currentText() or "public")

    def where(self) -> str:
        """The server in words, for questions and refusals."""
        dsn = self.dsn()
        return "the embedded server" if dsn is None else strip_password(dsn)

    def seen_sizes(self) -> dict[TableRef, TableSize]:
        """Sizes read earlier on the connection in use, by table."""
        dsn = self.dsn()
        return {ref: size for (where, ref), size in self._seen.items() if where == dsn}

    def note_size(self, dsn: str | None, ref: TableRef, size: TableSize | None) -> None:
        if size is not None:
            self._seen[(dsn, ref)] = size

    def note_facts(self, facts: TargetFacts) -> None:
        """Fresh facts from a run's start: remembered, and the table list read again if it disagrees."""
        for ref, size in facts.sizes.items():
            self.note_size(facts.dsn, ref, size)
        listed = self.db.tables.get if self.db is not None else None
        if listed is not None and any((size is not None) != (ref.name in listed(ref.schema or "public", []))
                                      for ref, size in facts.sizes.items()):
            self.refresh_table_list_quietly()

    def _on_connection_picked(self, *_args: object) -> None:
        if self.dsn() == self._db_dsn and self.db is not None:
            return  # the same server: nothing to read again
        self.db = None
        self.state.target_size = None
        self.p.show_tables([])
        self.refresh_database()

    def set_connection_dsn(self, dsn: str | None) -> None:
        self.p.conn_combo.setEditText(dsn or EMBEDDED)
        edit = self.p.conn_combo.lineEdit()
        if edit is not None:
            edit.setCursorPosition(0)  # show where it starts (host, port), not the tail of a long DSN

    def _on_new_connection_clicked(self) -> None:
        from ui.connections import ConnectionDialog

        dlg = ConnectionDialog(self._parent)
        if dlg.exec() and dlg.name.text().strip():
            name = dlg.name.text().strip()
            self.settings.connections[name] = dlg.dsn()
            self.settings.save()
            if dlg.password.text():
                self._passwords[name] = dlg.password.text()
            if self.p.conn_combo.findText(name) < 0:
                self.p.conn_combo.addItem(name)
            self.p.conn_combo.setCurrentText(name)
            self._recheck_dsn()  # the same name saved again may name another server, or bring a password
            self.refresh_database()

    # -- the database's schemas and tables ---------------------------------------------------------

    def refresh_database(self) -> None:
        self._recheck_dsn()  # a saved connection edited elsewhere is said before its server is read
        dsn = self.dsn()
        self.p.db_status.setText("connecting…")
        self._background(lambda *_a: inspect_database(dsn), lambda info: self._on_database_inspected(dsn, info),
                         self._on_database_failed)

    def refresh_table_list_quietly(self) -> None:
        self.state.target_size = None  # it has changed: look again before the next first append
        self._recheck_dsn()
        if self.db is not None:
            dsn = self.dsn()
            self._background(lambda *_a: inspect_database(dsn), lambda info: self._on_database_inspected(dsn, info),
                             lambda _m: None)

    def _on_database_failed(self, message: str) -> None:
        self.p.db_status.setText("not connected")
        name = self.p.conn_combo.currentText().strip()
        if "password" in message.lower() and name != EMBEDDED and name not in self._passwords:
            password, ok = QInputDialog.getText(
                self._parent, "Password",
                f"Password for {strip_password(self.dsn() or name)}\n(kept for this session only)",
                QLineEdit.EchoMode.Password)
            if ok and password:
                self._passwords[name] = password
                self._recheck_dsn()
                self.refresh_database()
                return
        self.failed.emit(message)

    def _on_database_inspected(self, dsn: str | None, info: DatabaseInfo) -> None:
        if dsn != self.dsn():
            return  # read on a connection the user has since left
        self._db_dsn = dsn
        where = EMBEDDED if dsn is None else strip_password(dsn)
        self.p.show_database(info, where)
        self.db = info  # database_changed: the mapping (onto a target that appeared, went or moved) and the plan
        self._on_schema_changed(self.p.schema_combo.currentText())
        self.database_ready.emit()

    def _on_schema_changed(self, schema: str) -> None:
        if self.db is not None:
            self.p.show_tables(self.db.tables.get(schema, []))

    def show_table(self) -> None:
        """The first 1,000 rows of the target in a read-only grid, fetched on a worker."""
        table = self.p.table_combo.currentText().strip()
        if not table:
            return
        dsn, ref = self.dsn(), TableRef(table, self.schema())

        def fetch(*_a: Any) -> tuple[TableRows, TableSize | None]:
            return first_rows(dsn, ref), table_size(dsn, ref)

        self._background(fetch, lambda got: self._on_table_rows(ref, *got))

    def _on_table_rows(self, ref: TableRef, rows: TableRows, size: TableSize | None) -> None:
        if self.table_dialog is not None:
            self.table_dialog.close()
        self.table_dialog = dialogs.TableDialog(self._parent, ref.display(), rows, size.text() if size else "?")
        self.table_dialog.show()
        self.table_shown.emit(self.table_dialog)

    # -- how to reach the server ------------------------------------------------------------------

    def show_server_info(self) -> None:
        """A DSN and a psql command for the server in use (the embedded one is started if needed)."""
        dsn = self.dsn()

        def describe(*_a: Any) -> str:
            lines = connection_help(resolve_dsn(dsn))
            return "\n".join([("Embedded PostgreSQL" if dsn is None else "Server") + " — to reach it from outside:",
                              *lines, "", "The same from a terminal: python -m app server status"])

        self._background(describe, self._on_server_info)

    def _on_server_info(self, text: str) -> None:
        self.said.emit(text)
        dialogs.TextDialog(self._parent, "Connection details", text).show()
        self.server_info_shown.emit(text)
