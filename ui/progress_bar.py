"""How a progress bar says that a run failed, shared by the Load and Compare tabs."""

from __future__ import annotations

from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QProgressBar

FAILED_COLOUR = "#b00020"  # the red of every failure in the window


def show_failed(bar: QProgressBar, text: str) -> None:
    """An empty bar saying what failed in red: never a full "done"-looking one."""
    bar.setValue(0)
    bar.setFormat(text)
    pal = bar.palette()
    for role in (QPalette.ColorRole.Text, QPalette.ColorRole.WindowText):
        pal.setColor(role, QColor(FAILED_COLOUR))
    bar.setPalette(pal)


def plain_colours(bar: QProgressBar) -> None:
    """Back to the style's colours after a failure."""
    bar.setPalette(QPalette())
