"""The source panel: file, format options, the script's table pick-list and the preview grid."""

from __future__ import annotations

from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from core.preview import SourceInfo
from core.spec import SourceOptions
from ui.elided_label import ElidedLabel
from ui.table_models import PreviewModel

FORMATS = ["(auto)", "csv", "tsv", "parquet", "json", "ndjson", "excel", "sql", "arrow", "pgtext"]
MANY_TIP = ("A file; or many files with the same columns into one table: pick several in Open…, open a folder, "
            "or type a pattern such as /data/exports/*.csv and press Enter. Commit single loads them all in "
            "one transaction, per-file commits each file on its own")
NULL_EVERYWHERE_TIP = ("The NULL marker was kept as text in columns of free text, where the same word can be a "
                       "value; this reads it as NULL in every column (the command line's --null does the same)")
NULL_TIP = "Text that means NULL, e.g. NA or \\N (empty: an empty unquoted field is NULL, \"\" is empty text)"


class SourcePanel(QGroupBox):
    """Widgets only; the window wires open_btn, path_edit, refresh_btn and script_table_combo."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Source", parent)
        lay = QVBoxLayout(self)
        row = QHBoxLayout()
        self.path_edit = QLineEdit()
        self.path_edit.setPlaceholderText("Open or drop a CSV, Parquet, JSON, Excel or SQL file (or several, or a "
                                          "folder), or type a pattern: exports/*.csv")
        self.path_edit.setToolTip(MANY_TIP)
        self.open_btn = QPushButton("Open…")
        row.addWidget(self.path_edit)
        row.addWidget(self.open_btn)
        lay.addLayout(row)
        self.format_combo = QComboBox()
        self.format_combo.addItems(FORMATS)
        self.delim_edit = QLineEdit()
        self.delim_edit.setMaximumWidth(52)
        self.delim_edit.setToolTip("Field delimiter (\\t for tab, space for a space); sniffed from the file")
        self.quote_edit = QLineEdit()
        self.quote_edit.setMaximumWidth(30)
        self.header_check = QCheckBox("Header")
        self.header_check.setChecked(True)
        self.encoding_edit = QLineEdit()
        self.encoding_edit.setMinimumWidth(70)
        self.encoding_edit.setMaximumWidth(90)
        self.null_edit = QLineEdit()
        self.null_edit.setMaximumWidth(60)
        self.null_edit.setToolTip(NULL_TIP)
        # Short rows rather than one long one: the panel stays narrow and the mapping gets the width
        # (the window must fit a 1366x768 screen).
        dialect = QHBoxLayout()
        for label, w in (("Format", self.format_combo), ("Encoding", self.encoding_edit)):
            dialect.addWidget(QLabel(label))
            dialect.addWidget(w)
        dialect.addWidget(self.header_check)
        dialect.addStretch(1)
        lay.addLayout(dialect)
        form = QHBoxLayout()
        for label, w in (("Delim", self.delim_edit), ("Quote", self.quote_edit), ("NULL", self.null_edit)):
            form.addWidget(QLabel(label))
            form.addWidget(w)
        self.refresh_btn = QPushButton("Apply")
        self.refresh_btn.setToolTip("Re-read the preview with these options")
        # Shown when a sniffed marker is kept as text in columns of free text (core.source_notes).
        self.null_everywhere_btn = QPushButton("NULL everywhere")
        self.null_everywhere_btn.setToolTip(NULL_EVERYWHERE_TIP)
        self.null_everywhere_btn.setVisible(False)
        form.addStretch(1)
        form.addWidget(self.null_everywhere_btn)
        form.addWidget(self.refresh_btn)
        lay.addLayout(form)
        tables = QHBoxLayout()
        self.script_table_label = QLabel("Table")
        self.script_table_combo = QComboBox()
        self.script_table_combo.setToolTip(
            "This SQL script fills several tables: load all of them (each into its own table, in one "
            "transaction) or pick one"
        )
        self.script_table_combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.script_table_combo.setMinimumContentsLength(16)
        tables.addWidget(self.script_table_label)
        tables.addWidget(self.script_table_combo, 1)
        lay.addLayout(tables)
        self.show_script_tables([], None)
        self.preview = PreviewModel()
        view = QTableView()
        view.setModel(self.preview)
        view.horizontalHeader().setDefaultSectionSize(110)
        view.verticalHeader().setDefaultSectionSize(22)
        view.setWordWrap(False)
        view.setTabKeyNavigation(False)  # Tab leaves the grid (it walked 200 rows cell by cell); arrows move inside
        self.preview_view = view
        lay.addWidget(view)
        self.source_status = ElidedLabel("No file yet.")  # a long status must not widen the window
        lay.addWidget(self.source_status)
        # A marker kept as text somewhere is said in full, not elided away at the status line's end.
        self.null_label = QLabel()
        self.null_label.setWordWrap(True)
        self.null_label.setStyleSheet("color: #8a4b00")
        self.null_label.setVisible(False)
        lay.addWidget(self.null_label)

    def focus_order(self) -> list[QWidget]:
        """The panel's controls in reading order, for the window's Tab chain."""
        return [self.path_edit, self.open_btn, self.format_combo, self.encoding_edit, self.header_check,
                self.delim_edit, self.quote_edit, self.null_edit, self.refresh_btn, self.script_table_combo,
                self.preview_view]

    def show_script_tables(self, tables: list[tuple[str, int]], picked: str | None) -> None:
        """The pick-list of a script's tables; hidden unless it fills several."""
        combo = self.script_table_combo
        combo.blockSignals(True)
        combo.clear()
        if len(tables) > 1:
            combo.addItem(f"all {len(tables)} tables ({sum(n for _, n in tables):,} rows)", None)
            for name, rows in tables:
                combo.addItem(f"{name} ({rows:,} rows)", name)
            combo.setCurrentIndex(max(combo.findData(picked), 0) if picked else 0)
        combo.blockSignals(False)
        combo.setVisible(len(tables) > 1)
        self.script_table_label.setVisible(len(tables) > 1)

    def show_info(self, info: SourceInfo) -> None:
        """The sniffed options, the preview (malformed records spanning their row) and a status line."""
        o = info.options
        self.format_combo.setCurrentText(o.format or "(auto)")
        delimiter = o.delimiter or ""
        self.delim_edit.setText({"\t": "\\t", " ": "space"}.get(delimiter, delimiter))
        self.quote_edit.setText(o.quote or "")
        self.header_check.setChecked(o.header is not False)
        self.encoding_edit.setText(o.encoding or "")
        self.null_edit.setText(o.null or "")
        shown = [f"{t}\n{f}" if f else t for t, f in zip(info.types, info.formats or [None] * len(info.types))]
        self.preview.set_frame(info.sample, shown, info.bad)
        self.preview_view.clearSpans()
        for row in self.preview.bad_rows():
            self.preview_view.setSpan(row, 0, 1, max(1, len(info.columns)))
        note = info.null_note()
        bad = f" and {len(info.bad)} malformed record{'s' if len(info.bad) != 1 else ''} (marked ⚠)" if info.bad else ""
        what = f"{len(info.columns)} columns, {info.rows_text()}; showing {info.sample.height} rows"
        if not info.columns and info.rows_exact and not info.rows:
            what = "the file is empty (a load of it loads 0 rows)"
        if len(info.script_tables) > 1 and o.script_table is None:
            # All of a script's tables: the preview is the first one's, not the whole load.
            first, first_rows = info.script_tables[0]
            what = (f"{len(info.script_tables)} tables, {info.rows_text()}; preview of the first, {first} "
                    f"({len(info.columns)} columns, {first_rows:,} rows)")
        if info.files:  # many files, one table: how many, which, read as one
            names = [f.rsplit("/", 1)[-1] for f in info.files]
            listed = ", ".join(names) if len(names) <= 2 else f"{names[0]} … {names[-1]}"
            what = f"{len(names)} files ({listed}) into one table, {info.rows_text()}, {len(info.columns)} columns"
        self.source_status.setText(f"{o.format}: {what}{bad}" + (f"; {note}" if note else ""))
        if info.files:
            self.source_status.setToolTip(self.source_status.text() + "\n\n" + "\n".join(info.files))
        self.null_edit.setToolTip(f"{NULL_TIP}\nSniffed: {note}" if note else NULL_TIP)
        kept = o.null_columns is not None and bool(o.null) and len(o.null_columns) < len(info.columns)
        self.null_everywhere_btn.setVisible(kept)
        self.null_label.setText(info.null_kept_note() if kept else "")
        self.null_label.setVisible(kept)
        self.show_script_tables(info.script_tables, o.script_table)

    def all_script_tables(self) -> bool:
        """A script of several tables with none picked: the run loads each into its own table."""
        return self.script_table_combo.count() > 1 and self.script_table_combo.currentData() is None

    def options(self, null_columns: list[str] | None) -> SourceOptions:
        """The options as set; `null_columns`: where a sniffed NULL marker applies (None: every column)."""
        fmt = self.format_combo.currentText()
        delim = self.delim_edit.text()
        return SourceOptions(
            path=self.path_edit.text().strip(),
            format=None if fmt == "(auto)" else fmt,
            delimiter={"\\t": "\t", "tab": "\t", "space": " "}.get(delim, delim) or None,
            quote=self.quote_edit.text() or None,
            header=self.header_check.isChecked(),
            encoding=self.encoding_edit.text() or None,
            null=self.null_edit.text(),
            null_columns=null_columns,
            script_table=self.script_table_combo.currentData() if self.script_table_combo.count() > 1 else None,
        )
