"""The mapping controller: how the window's file maps onto its target table.

It is built again when the file or the table changes: a new table takes the file's columns
and inferred types; an existing one is read on a background worker (its columns and its
size) and matched by name, or by position for a script's unnamed columns. The user's edits
are laid over it (core of that in table_models.MappingModel), and a new table's DDL follows.
It reads the file, the server's tables and the DSN from the shared state (ui/state.py) and keeps
the existing target's size there; it owns the mapping panel and the target panel's table fields.
MainWindow._connect has it follow the state: a file read (source_changed) and a table list that moves
the target (database_changed: the table appeared, went, or is now another server's) build it again.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, Qt, Signal

from core.column_formats import settle
from core.db import TableRef
from core.mapping import match_by_name
from core.preview import DatabaseInfo, SourceInfo, inspect_table, table_size
from core.sources.sqlscript.columns import positional_maps
from core.spec import ColumnMap, LoadMode
from core.target_facts import TableSize
from ui.ddl_box import DdlBox

if TYPE_CHECKING:
    from ui.panels.mapping import MappingPanel
    from ui.panels.target import TargetPanel
    from ui.state import LoadState
    from ui.worker import InBackground


class MappingController(QObject):
    """Builds, watches and resets the mapping of the window's file onto its target table.

    Signals: mapping_ready() (a mapping is shown), size_read(object dsn, object TableRef, object TableSize)
    (the existing target's rows, read with its columns), waiting(str) (a run waits for the table's columns),
    said(str) (a line for the run log), failed(str) (an error for the user).
    """

    mapping_ready = Signal()
    size_read = Signal(object, object, object)
    waiting = Signal(str)
    said = Signal(str)
    failed = Signal(str)

    def __init__(self, state: LoadState, mapping_panel: MappingPanel, target_panel: TargetPanel, parent: QObject,
                 background: InBackground, all_script_tables: Callable[[], bool]) -> None:
        super().__init__(parent)
        self.state = state
        self.m, self.t = mapping_panel, target_panel
        self.mapping = mapping_panel.mapping
        self._background = background
        self._all_script_tables = all_script_tables  # the source panel's: a script's tables all loaded at once
        self._gen = 0  # the newest mapping request; older table look-ups are dropped
        self.pending = False  # the existing table's columns are on their way: a run waits for them
        # A mode the user picked or a profile set: never changed by what the table list suggests.
        self.mode_pinned = False
        self.ddl = DdlBox(target_panel)
        # The columns an opened profile leaves out: said in the plan, but a create need not ask about them.
        self.profile_left_out: set[str] | None = None
        # What the shown mapping was built on: (the DSN, whether the target was in the table list).
        self._built_on: tuple[str | None, bool] | None = None

    def forget_file(self, keep_target: bool) -> None:
        """Another file is opened: edits belong to the file they were made on (and, unless `keep_target`,
        the mode pinned for the last file's table)."""
        self.mapping.reset_edits()
        if not keep_target:
            self.mode_pinned = False  # a new file's table gets the mode its table suggests
        self.ddl.forget_edit()
        self.profile_left_out = None

    def on_source_changed(self, info: SourceInfo | None) -> None:
        """A file was read (LoadState.source_changed): its columns onto the target."""
        if info is not None:
            self.rebuild()

    def on_database_changed(self, info: DatabaseInfo | None) -> None:
        """The server's tables were read (LoadState.database_changed): built again when the target appeared,
        went, or is now another server's (the columns and rows as this server has them)."""
        if info is None:
            self._built_on = None  # another server, its tables not read yet: the next list builds again
        elif self._built_on != (self.state.dsn, self.table_exists()):
            self.rebuild()

    def rebuild(self) -> None:
        state, t = self.state, self.t
        info = state.source_info
        if info is None:
            return
        table = t.table_name()
        exists = self.table_exists()
        self._built_on = (state.dsn, exists)
        samples = {c: (None if info.sample.height == 0 else info.sample[c][0]) for c in info.columns}
        samples = {k: (None if v is None else str(v)) for k, v in samples.items()}
        self._gen += 1
        gen = self._gen
        if not exists:
            self.pending = False
            state.target_size = None
            self.show(new_table_maps(info), samples, info, None)
            if table and not self.mode_pinned:
                # A script's tables load together into tables that exist: append.
                several = self._all_script_tables()
                t.mode_combo.setCurrentText((LoadMode.APPEND if several else LoadMode.CREATE).value)
            return
        # Onto an existing table: by name only (never by position, but for a script's unnamed columns).
        ref, dsn = TableRef(table, t.schema_combo.currentText() or "public"), state.dsn

        def look(*_a: Any) -> tuple[Any, TableSize | None]:
            return inspect_table(dsn, ref), table_size(dsn, ref)

        def on_columns(got: tuple[Any, TableSize | None]) -> None:
            if gen != self._gen or dsn != state.dsn:
                return  # the user moved on to another table, file or server
            cols, state.target_size = got
            self.size_read.emit(dsn, ref, state.target_size)
            self.pending = False
            if cols is None:
                self.show(new_table_maps(info), samples, info, None)
                return
            # A script's INSERTs without a column list fill the table's columns in order, and so
            # do the fields of a file without a header (`\copy t to f` writes none) when there are
            # as many as the table has columns: there are no names to go by.
            headerless = not info.script_tables and info.options.header is False and len(info.columns) == len(cols)
            ordered = positional_maps(info.columns, cols) if info.script_tables or headerless else None
            maps = ordered or settle(
                match_by_name(info.columns, cols), info.sample, None, new_table=False, explicit=False)
            self.show(maps, samples, info, [(c.name, c.type) for c in cols])
            if headerless and ordered:
                self.said.emit(f"the file has no header: its {len(cols)} fields go to {ref.name}'s columns in "
                               "order (the mapping shows which)")

        self.pending = True
        self._background(look, on_columns, self._failed)
        if t.mode_combo.currentText() == LoadMode.CREATE.value and not self.mode_pinned:
            t.mode_combo.setCurrentText(LoadMode.APPEND.value)

    def table_exists(self) -> bool:
        """Whether the target table is in the database's list (as last read from the server)."""
        return self.state.lists_table(self.t.table_name(), self.t.schema_combo.currentText() or "public")

    def missing_script_tables(self) -> list[str]:
        """All of a script's tables picked: those the database's list does not have (empty when not known)."""
        info, db = self.state.source_info, self.state.database
        if info is None or db is None or not self._all_script_tables():
            return []
        missing = []
        for name, _rows in info.script_tables:
            schema, _, table = name.rpartition(".")
            if table not in db.tables.get(schema or "public", []):
                missing.append(name)
        return missing

    def left_out(self) -> list[str]:
        """The file's columns the mapping leaves out (unticked, perhaps to fit another table)."""
        info = self.state.source_info
        if info is None:
            return []
        taken = {m.source for m in self.mapping.maps if m.include and m.source}
        return [c for c in info.columns if c not in taken]

    def table_created(self) -> None:
        """A create-mode load made the target: it is known at once, and the next run appends."""
        t = self.t
        self.mode_pinned = False  # the create asked for is done
        db = self.state.database
        table = t.table_name()
        if db is not None and not self.table_exists():
            db.tables.setdefault(t.schema_combo.currentText() or "public", []).append(table)
            t.show_tables(db.tables[t.schema_combo.currentText() or "public"])
        self.rebuild()  # onto the table now: its columns, its size, and mode append

    def _failed(self, message: str) -> None:
        self.pending = False
        self.failed.emit(message)

    def after(self, action: Any) -> bool:
        """Run `action` once the pending mapping arrives (True), or say there is none pending (False)."""
        if not self.pending:
            return False
        self.waiting.emit("waiting for the table's columns…")
        self.mapping_ready.connect(action, Qt.ConnectionType.SingleShotConnection)
        return True

    def show(
        self, maps: list[ColumnMap], samples: dict[str, str | None], info: SourceInfo | None = None,
        table: list[tuple[str, str]] | None = None,
    ) -> None:
        """Show a mapping (the user's edits laid over it); `table`: the existing target's columns."""
        self.mapping.set_mapping(maps, samples, info.sample if info is not None else None, table)
        self.changed()
        self.mapping_ready.emit()

    def reset(self) -> None:
        """Forget the user's edits: back to what the file and the table suggest."""
        self.mapping.reset_edits()
        self.rebuild()
        self.said.emit("mapping reset to the suggested one")

    def unmatched(self) -> list[ColumnMap]:
        """Included columns the existing table does not have (a run waits until each is matched or skipped)."""
        return self.mapping.unmatched()

    def changed(self, *_args: Any) -> None:
        t, mapping = self.t, self.mapping
        t.ddl_edit.setEnabled(t.mode_combo.currentText() == LoadMode.CREATE.value)  # used in create mode only
        self.m.show_unmatched(mapping.unmatched())
        table = t.table_name()
        if table and mapping.maps and any(m.include for m in mapping.maps):
            self.ddl.follow(TableRef(table, t.schema()), mapping.maps)  # a hand edit is kept


def left_out_text(columns: list[str]) -> str:
    """"columns b, c (unticked in the mapping)": the file's columns a create leaves out."""
    return f"column{'s' if len(columns) != 1 else ''} {', '.join(columns)} (unticked in the mapping)"


def new_table_maps(info: SourceInfo) -> list[ColumnMap]:
    """A new table: the file's columns with the types inferred from its sample."""
    formats = info.formats or [None] * len(info.columns)
    return [ColumnMap(target=c, source=c, type=t, format=f) for c, t, f in zip(info.columns, info.types, formats)]
