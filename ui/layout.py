"""Layout helpers shared by the tabs: a window that fits small screens (1366x768, and 1024x700 scrolling)."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFrame, QScrollArea, QWidget


def scrolled(widget: QWidget, *, vertical_only: bool = False) -> QScrollArea:
    """`widget` filling a frameless scroll area: scroll bars appear only below its minimum size.

    `vertical_only`: the area keeps the widget's minimum width (a form cut on the right is no use).
    """
    area = QScrollArea()
    area.setWidget(widget)
    area.setWidgetResizable(True)
    area.setFrameShape(QFrame.Shape.NoFrame)
    if vertical_only:
        area.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        area.setMinimumWidth(widget.minimumSizeHint().width() + area.verticalScrollBar().sizeHint().width())
    return area
