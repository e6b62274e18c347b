"""Live throughput chart: rows/s and MB/s over time, redrawn from a timer, not per event."""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QWidget

from core.events import Progress


class ThroughputChart(pg.GraphicsLayoutWidget):  # type: ignore[misc]
    """Two stacked plots sharing the time axis; samples buffered, drawn every 100 ms."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setBackground("w")
        self.rows_plot = self.addPlot(row=0, col=0)
        self.rows_plot.setLabel("left", "rows/s")
        self.rows_plot.showGrid(x=True, y=True, alpha=0.3)
        self.mb_plot = self.addPlot(row=1, col=0)
        self.mb_plot.setLabel("left", "MB/s")
        self.mb_plot.setLabel("bottom", "seconds")
        self.mb_plot.showGrid(x=True, y=True, alpha=0.3)
        self.mb_plot.setXLink(self.rows_plot)
        for plot in (self.rows_plot, self.mb_plot):
            for side in ("left", "bottom"):
                plot.getAxis(side).enableAutoSIPrefix(False)  # "seconds (x0.001)" reads badly
        self._rows_curve = self.rows_plot.plot(pen=pg.mkPen("#1f77b4", width=2))
        self._mb_curve = self.mb_plot.plot(pen=pg.mkPen("#d62728", width=2))
        self._t: list[float] = []
        self._rows: list[float] = []
        self._mb: list[float] = []
        self._last: Progress | None = None
        self._dirty = False
        self._timer = QTimer(self)
        self._timer.setInterval(100)
        self._timer.timeout.connect(self._on_timeout)

    def reset(self) -> None:
        self._t, self._rows, self._mb, self._last = [], [], [], None
        self._dirty = True
        self._on_timeout()
        self._timer.start()

    def add(self, p: Progress) -> None:
        """Instantaneous rates between two events (the cumulative average hides stalls)."""
        last = self._last
        if last is not None and p.elapsed > last.elapsed:
            dt = p.elapsed - last.elapsed
            self._t.append(p.elapsed)
            self._rows.append((p.rows_loaded - last.rows_loaded) / dt)
            self._mb.append((p.bytes_read - last.bytes_read) / 1e6 / dt)
            self._dirty = True
        self._last = p

    def stop(self) -> None:
        self._on_timeout()
        self._timer.stop()

    def _on_timeout(self) -> None:
        if not self._dirty:
            return
        self._dirty = False
        step = max(1, len(self._t) // 2000)  # downsample long runs
        self._rows_curve.setData(self._t[::step], self._rows[::step])
        self._mb_curve.setData(self._t[::step], self._mb[::step])
