"""Where the main window opens: where the user left it, or, the first time, fitted to the screen."""

from __future__ import annotations

from PySide6.QtCore import QByteArray, QObject, QRect, QSize
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QSplitter, QWidget

from ui.settings import WindowState

# The first start fills the screen (a workbench: the grids and lists want the room), up to this size.
WANTED = QSize(1920, 1200)
# Room left for the window manager's frame and title bar, which Qt does not know before the window shows.
FRAME = QSize(16, 40)


def first_geometry(available: QRect, wanted: QSize = WANTED) -> QRect:
    """`wanted`, cut to the available screen less the frame, centred on it."""
    size = wanted.boundedTo(available.size() - FRAME)
    rect = QRect(0, 0, max(size.width(), 1), max(size.height(), 1))
    rect.moveCenter(available.center())
    return rect


class WindowPlacement(QObject):
    """Restores the window's geometry and its splitters at start; the window calls save() when it closes.

    The first start (nothing saved, or a saved geometry Qt cannot use) fits the window to the
    available screen. A saved geometry from a screen no longer there is moved onto one by Qt.
    Not an event filter on the window: a Python filter called while the window was being destroyed
    crashed the process now and then (seen in the GUI tests).
    """

    def __init__(self, window: QWidget, splitters: dict[str, QSplitter]) -> None:
        super().__init__(window)
        self._window = window
        self.splitters = splitters  # by name, as saved in window.toml
        self.state = WindowState.load()
        self.restore()

    def restore(self, available: QRect | None = None) -> None:
        """`available`: the screen's free area for a first start (by default the window's screen's)."""
        s = self.state
        if not (s.geometry and self._window.restoreGeometry(_bytes(s.geometry))):
            if available is None:
                available = (self._window.screen() or QGuiApplication.primaryScreen()).availableGeometry()
            self._window.setGeometry(first_geometry(available))
        for name, splitter in self.splitters.items():
            if name in s.splitters:
                splitter.restoreState(_bytes(s.splitters[name]))

    def save(self) -> None:
        self.state.geometry = _text(self._window.saveGeometry())
        self.state.splitters = {name: _text(sp.saveState()) for name, sp in self.splitters.items()}
        self.state.save()


def _bytes(text: str) -> QByteArray:
    return QByteArray.fromBase64(QByteArray(text.encode("ascii", "ignore")))


def _text(data: QByteArray) -> str:
    return bytes(data.toBase64().data()).decode("ascii")
