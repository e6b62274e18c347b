"""The mouse wheel scrolls the form; it changes a combo box or spin box only once that has keyboard focus.

Qt's default lets a wheel notch over a combo change its value while the user was only scrolling
past it (one notch turned mode append into truncate). `guard_wheel(root)` filters every combo and
spin box under `root` (a window's both tabs, a dialog): an unfocused one hands the wheel to the
scroll area around it, which scrolls; a click or Tab gives it focus, and then the wheel is its own.
The filter sits on those widgets only, not on the application, so other events never pass
through Python.
"""

from __future__ import annotations

from PySide6.QtCore import QCoreApplication, QEvent, QObject, Qt
from PySide6.QtWidgets import QAbstractScrollArea, QAbstractSpinBox, QComboBox, QWidget


class WheelGuard(QObject):
    """The filter; one per window or dialog, its child."""

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt's name
        if event.type() != QEvent.Type.Wheel or not isinstance(watched, QWidget) or watched.hasFocus():
            return False
        area = _scrollable_around(watched)
        if area is not None:
            QCoreApplication.sendEvent(area.viewport(), event)  # the form around it scrolls instead
        return True


def guard_wheel(root: QWidget) -> WheelGuard:
    """Guard every combo and spin box under `root` (built before this is called)."""
    guard = WheelGuard(root)
    for widget in root.findChildren(QComboBox) + root.findChildren(QAbstractSpinBox):
        guard_one(guard, widget)
    return guard


def guard_one(guard: WheelGuard, widget: QWidget) -> None:
    # Focus by click or Tab, never by the wheel (Qt's default for both is WheelFocus).
    widget.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
    widget.installEventFilter(guard)


def _scrollable_around(widget: QWidget) -> QAbstractScrollArea | None:
    """The nearest scroll area around `widget` that can scroll (a form, a grid, the tab)."""
    parent = widget.parentWidget()
    while parent is not None:
        if isinstance(parent, QAbstractScrollArea) and (
                parent.verticalScrollBar().maximum() > 0 or parent.horizontalScrollBar().maximum() > 0):
            return parent
        parent = parent.parentWidget()
    return None
