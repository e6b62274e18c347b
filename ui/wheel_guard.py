"""The mouse wheel scrolls the form; it changes a combo box or spin box only once that has keyboard focus.

Qt's default lets a wheel notch over a combo change its value while the user was only scrolling
past it (one notch turned mode append into truncate). One application-wide filter covers every
form of every tab and dialog: an unfocused combo or spin box hands the wheel to its parent, so
the scroll area around it scrolls; a click or Tab gives it focus, and then the wheel is its own.
"""

from __future__ import annotations

from PySide6.QtCore import QCoreApplication, QEvent, QObject, Qt
from PySide6.QtWidgets import QAbstractScrollArea, QAbstractSpinBox, QComboBox, QWidget

GUARDED = (QComboBox, QAbstractSpinBox)


class WheelGuard(QObject):
    """Install once per window: `WheelGuard(window)`; it removes itself when the window goes."""

    def __init__(self, parent: QObject) -> None:
        super().__init__(parent)
        app = QCoreApplication.instance()
        if app is not None:
            app.installEventFilter(self)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt's name
        if event.type() == QEvent.Type.Wheel and isinstance(watched, GUARDED) and not watched.hasFocus():
            area = _scrollable_around(watched)
            if area is not None:
                QCoreApplication.sendEvent(area.viewport(), event)  # the form around it scrolls instead
            return True
        if event.type() == QEvent.Type.Polish and isinstance(watched, GUARDED):
            # Focus by click or Tab, never by the wheel (Qt's default for both is WheelFocus).
            widget: QWidget = watched
            widget.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        return False


def _scrollable_around(widget: QWidget) -> QAbstractScrollArea | None:
    """The nearest scroll area around `widget` that can scroll (a form, a grid, the tab)."""
    parent = widget.parentWidget()
    while parent is not None:
        if isinstance(parent, QAbstractScrollArea) and (
                parent.verticalScrollBar().maximum() > 0 or parent.horizontalScrollBar().maximum() > 0):
            return parent
        parent = parent.parentWidget()
    return None
