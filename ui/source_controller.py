"""The source controller: the file the user opens, read on a worker and shown with its preview.

A file is opened from the path field, File > Open (one file, several, or a folder), Recent files,
a drop or a profile. It is read on a background worker (core.preview.inspect_source); an answer
older than the newest request is dropped. Once read, the source panel shows it, a new file proposes
a table named after it, and it goes into the shared state (ui/state.py): what follows from a file
read (its mapping, the plan) is wired in MainWindow._connect to LoadState.source_changed, and the
recent files to this one's `opened`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Signal

from core.preview import SourceInfo, inspect_source
from core.sources.many import common_name
from core.spec import LoadMode, SourceOptions
from ui.profile_actions import table_name_for

if TYPE_CHECKING:
    from ui.panels.source import SourcePanel
    from ui.panels.strategy import StrategyPanel
    from ui.panels.target import TargetPanel
    from ui.state import LoadState
    from ui.worker import InBackground


class SourceController(QObject):
    """Opens, reads and shows the source file.

    Signals: file_changed(bool keep_target) (another file is opened, before it is read: what was the last
    file's goes; with keep_target, a profile's, the target's mode stays), opened(str) (a file was read: it is
    a recent file), source_ready() (after LoadState.source_changed and what follows it: all is shown),
    failed(str) (an error for the user).
    """

    file_changed = Signal(bool)
    opened = Signal(str)
    source_ready = Signal()
    failed = Signal(str)

    def __init__(self, state: LoadState, source_panel: SourcePanel, target_panel: TargetPanel,
                 strategy_panel: StrategyPanel, parent: QObject, background: InBackground,
                 pick_file: Callable[..., str]) -> None:
        super().__init__(parent)
        self.state = state
        self.s, self.t, self.g = source_panel, target_panel, strategy_panel
        self._background = background
        self._pick_file = pick_file  # the profile actions' file dialog: it opens in the last folder used
        self._generation = 0  # previews of older generations are ignored
        self._propose_table = False  # the next preview names the target after its file
        self._opened_path = ""
        s = source_panel
        s.path_edit.returnPressed.connect(self._on_path_entered)
        s.open_btn.clicked.connect(self.on_open_clicked)
        s.refresh_btn.clicked.connect(self.refresh)
        s.null_everywhere_btn.clicked.connect(self._on_null_everywhere_clicked)
        s.script_table_combo.activated.connect(self._on_script_table_picked)

    def on_open_clicked(self) -> None:
        path = self._pick_file(
            "Open a data file (or several with the same columns, into one table)",
            "Data files (*.csv *.tsv *.txt *.parquet *.json *.ndjson *.jsonl *.xlsx *.sql *.arrow);;All files (*)",
            many=True,
        )
        if path:
            self.open_file(path)

    def on_open_folder_clicked(self) -> None:
        """A folder of files with the same columns (monthly exports): one table (core.sources.many)."""
        path = self._pick_file("Open a folder of files with the same columns", "", folder=True)
        if path:
            self.open_file(path)

    def _on_path_entered(self) -> None:
        self.open_file(self.s.path_edit.text().strip())

    def open_file(self, path: str, options: SourceOptions | None = None, *, keep_target: bool = False) -> None:
        """Preview a file; a different file proposes a new table named after it (unless `keep_target`)."""
        new_file = path != self._opened_path
        self._opened_path = path
        self.s.path_edit.setText(path)
        self._propose_table = new_file and not keep_target
        if new_file:
            self.file_changed.emit(keep_target)
        self._load_preview(options or SourceOptions(path=path))

    def refresh(self) -> None:
        """Read the file again with the options as the panel says them now."""
        if self.s.path_edit.text().strip():
            self._load_preview(self.options())

    def _on_null_everywhere_clicked(self) -> None:
        """The marker named by the user, not sniffed: it reads as NULL in every column."""
        if self.s.path_edit.text().strip():
            self._load_preview(self.s.options(None))

    def _on_script_table_picked(self, _index: int) -> None:
        combo = self.s.script_table_combo
        picked = combo.currentData()
        self.t.table_combo.setEditText(str(picked or combo.itemData(1)).split(".")[-1])
        self.refresh()

    def _load_preview(self, options: SourceOptions) -> None:
        self._generation += 1
        gen = self._generation
        self.s.source_status.setText("reading…")
        self._background(lambda *_a: inspect_source(options), lambda info: self._on_source_inspected(gen, info),
                         self._on_source_failed)

    def _on_source_failed(self, message: str) -> None:
        self.s.source_status.setText("cannot read this file")
        self.failed.emit(message)

    def _on_source_inspected(self, gen: int, info: SourceInfo) -> None:
        if gen != self._generation:
            return  # a newer preview is on its way
        o = info.options
        self.opened.emit(o.path)  # recent files and the last folder: only files that opened
        self.s.show_info(info)
        several = len(info.script_tables) > 1 and o.script_table is None
        self.t.show_all_tables(info.script_tables if several else None)
        # Several tables load together only in append or truncate.
        self.t.allow_modes({LoadMode.APPEND, LoadMode.TRUNCATE} if several else set(LoadMode))
        if self._propose_table or not self.t.table_combo.currentText():
            # A new file proposes a new table named after it, never the last file's table.
            self._propose_table = False
            first = o.script_table or (info.script_tables[0][0] if info.script_tables else None)
            named = common_name(list(info.files)) if info.files else o.path  # many files: their common name
            self.t.set_table_quietly(first.split(".")[-1] if first else table_name_for(named))
        # Shown and its table named: now the parts that follow a file (the mapping, the plan) read it.
        self.state.source_info = info
        self.g.allow_scripts(o.format == "sql")
        self.source_ready.emit()

    def on_source_counted(self, before: SourceInfo, after: SourceInfo) -> None:
        """A run counted the file's rows (LoadState.source_counted): the source line says that number."""
        status = self.s.source_status
        status.setText(status.text().replace(before.rows_text(), after.rows_text(), 1))

    def options(self) -> SourceOptions:
        """The source's options as the panel says them, with what was sniffed for this file kept."""
        # A sniffed marker keeps to the columns it was sniffed for until the user changes it.
        info = self.state.source_info
        if info is None or info.options.path != self.s.path_edit.text().strip() \
                or info.options.null != self.s.null_edit.text():
            return self.s.options(None)
        # ...and so do the columns where an empty field is NULL beside it.
        return replace(self.s.options(info.options.null_columns),
                       empty_null_columns=info.options.empty_null_columns)

    def rows(self) -> int | None:
        """The opened file's exact row count (None while unknown or only estimated)."""
        info = self.state.source_info
        if info is None or not info.rows_exact or info.options.path != self.s.path_edit.text().strip():
            return None
        return info.rows
