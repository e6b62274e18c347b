"""The mapping panel: the column mapping editor, its hint line and Reset mapping."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QGroupBox, QHBoxLayout, QHeaderView, QLabel, QPushButton, QTableView, QVBoxLayout, QWidget

from core.spec import ColumnMap
from ui.mapping_delegate import MappingDelegate
from ui.table_models import MappingModel

MIN_WIDTH = 300  # source, target, type and include in view (with the frame and a scroll bar)
HINT = "Edit target names, types and formats (your edits are kept); untick a column to skip it."


class MappingPanel(QGroupBox):
    """Widgets only; the window wires reset_btn and the model's dataChanged."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Mapping", parent)
        lay = QVBoxLayout(self)
        self.mapping = MappingModel()
        view = QTableView()
        view.setModel(self.mapping)
        view.setItemDelegate(MappingDelegate(view))
        view.setWordWrap(False)
        view.setTabKeyNavigation(False)  # Tab leaves the grid (it wrapped inside it); arrows move inside
        view.verticalHeader().setVisible(False)
        view.verticalHeader().setDefaultSectionSize(22)
        header = view.horizontalHeader()
        # Fixed widths: a long sample or name must not push the target type and warning out of sight.
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        for col, width in enumerate((80, 64, 80, 90, 84, 50)):
            header.resizeSection(col, width)
        header.setMinimumSectionSize(30)
        # What the user edits comes first on screen (source, target, type, include), the sample after:
        # a narrow panel still shows them. The model's column numbers stay as they are.
        header.moveSection(MappingModel.SAMPLE, MappingModel.INCLUDE)
        header.setStretchLastSection(True)
        # A wider panel widens the sample with the warning (at 64 px, a wide window still cut it).
        header.setSectionResizeMode(MappingModel.SAMPLE, QHeaderView.ResizeMode.Stretch)
        # Centred, a title wider than its column lost both ends ("ource colum"): left-aligned and
        # elided at the right it reads from its start, and its tooltip has it whole.
        header.setDefaultAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter)
        header.setTextElideMode(Qt.TextElideMode.ElideRight)
        view.setTextElideMode(Qt.TextElideMode.ElideRight)
        self.mapping_view = view
        # A new mapping starts at its first column (it was left scrolled to where the last one was).
        self.mapping.modelReset.connect(lambda: view.horizontalScrollBar().setValue(0))
        lay.addWidget(view)
        self.setMinimumWidth(MIN_WIDTH)
        row = QHBoxLayout()
        self.mapping_hint = QLabel(HINT)
        self.mapping_hint.setWordWrap(True)
        self.mapping_hint.setMinimumWidth(150)  # wrapped in a few lines, not one word a line
        self.reset_btn = QPushButton("Reset mapping")
        self.reset_btn.setToolTip("Forget your edits of names, types and ticks: back to what file and table suggest")
        row.addWidget(self.mapping_hint, 1)
        row.addWidget(self.reset_btn)
        lay.addLayout(row)

    def focus_order(self) -> list[QWidget]:
        """The panel's controls in reading order, for the window's Tab chain."""
        return [self.mapping_view, self.reset_btn]

    def show_unmatched(self, left: list[ColumnMap]) -> None:
        """Name the columns the existing table does not have; Run waits for them."""
        if not left:
            self.mapping_hint.setText(HINT)
            return
        names = ", ".join(m.source or m.target for m in left[:4]) + (", …" if len(left) > 4 else "")
        self.mapping_hint.setText(
            f"<span style='color:#b00020'><b>{len(left)} column{'s' if len(left) != 1 else ''} not in the table"
            f"</b> ({names}): pick a target column or untick; Run waits until then.</span>")
