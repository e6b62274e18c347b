"""Live throughput chart: rows/s and MB/s over time, redrawn from a timer, not per event."""

from __future__ import annotations

from typing import Any

import pyqtgraph as pg
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QWidget

from core.events import Phase, Progress

WINDOW_S = 2.0  # both rates over the same sliding window: wider than the raw COPY path's ~1.2 s chunks


class ThousandsAxis(pg.AxisItem):  # type: ignore[misc]
    """Tick labels with thousands separators (1,250,000), and decimals only where the spacing needs them."""

    def tickStrings(self, values: list[float], scale: float, spacing: float) -> list[str]:  # noqa: N802
        decimals = 0 if spacing >= 1 else 1 if spacing >= 0.1 else 2
        return [f"{v * scale:,.{decimals}f}" for v in values]


class ThroughputChart(pg.GraphicsLayoutWidget):  # type: ignore[misc]
    """Two stacked plots sharing the time axis; samples buffered, drawn every 100 ms.

    Rates are taken over a sliding window of WINDOW_S seconds while rows are loading; the
    commit and the end of a run add no point (the curve does not fall to 0 at the end), and
    a run that rolls back (counters going down) adds none either (no negative rates).
    """

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setBackground("w")
        self.rows_plot = self._plot(0, "rows/s")
        self.mb_plot = self._plot(1, "MB/s")
        self.mb_plot.setLabel("bottom", "seconds")
        self.mb_plot.setXLink(self.rows_plot)
        self._rows_curve = self.rows_plot.plot(pen=pg.mkPen("#1f77b4", width=2))
        self._mb_curve = self.mb_plot.plot(pen=pg.mkPen("#d62728", width=2))
        self._t: list[float] = []
        self._rows: list[float] = []
        self._mb: list[float] = []
        self._seen: list[Progress] = []  # loading events inside the window
        self._dirty = False
        self._timer = QTimer(self)
        self._timer.setInterval(100)
        self._timer.timeout.connect(self._on_timeout)

    def _plot(self, row: int, label: str) -> Any:
        axes = {"left": ThousandsAxis("left"), "bottom": ThousandsAxis("bottom")}
        plot = self.addPlot(row=row, col=0, axisItems=axes)
        plot.setLabel("left", label)
        plot.showGrid(x=True, y=True, alpha=0.3)
        for side in ("left", "bottom"):
            plot.getAxis(side).enableAutoSIPrefix(False)  # "seconds (x0.001)" reads badly
        plot.getAxis("left").setWidth(64)  # room for 1,250,000 without the label overlapping the ticks
        plot.setLimits(xMin=0, yMin=0)  # rates and time are never negative
        return plot

    def reset(self) -> None:
        self._t, self._rows, self._mb, self._seen = [], [], [], []
        self._dirty = True
        self._on_timeout()
        for plot in (self.rows_plot, self.mb_plot):
            plot.setXRange(0, 1, padding=0)
            plot.setYRange(0, 1, padding=0)
            plot.enableAutoRange()
        self._timer.start()

    def add(self, p: Progress) -> None:
        """The rates over the last WINDOW_S seconds of loading (the cumulative average hides stalls)."""
        if p.phase is not Phase.LOADING:
            return
        seen = self._seen
        if seen and (p.rows_loaded < seen[-1].rows_loaded or p.bytes_read < seen[-1].bytes_read):
            seen.clear()  # counters went back (a reconnect resumed from the last commit): start the window again
        seen.append(p)
        while len(seen) > 2 and p.elapsed - seen[1].elapsed >= WINDOW_S:
            seen.pop(0)
        first = seen[0]
        dt = p.elapsed - first.elapsed
        if dt <= 0:
            return
        self._t.append(p.elapsed)
        self._rows.append((p.rows_loaded - first.rows_loaded) / dt)
        self._mb.append((p.bytes_read - first.bytes_read) / 1e6 / dt)
        self._dirty = True

    def stop(self) -> None:
        self._on_timeout()
        self._timer.stop()

    def points(self) -> tuple[list[float], list[float], list[float]]:
        """What the chart holds: times, rows/s, MB/s."""
        return list(self._t), list(self._rows), list(self._mb)

    def _on_timeout(self) -> None:
        if not self._dirty:
            return
        self._dirty = False
        step = max(1, len(self._t) // 2000)  # downsample long runs
        self._rows_curve.setData(self._t[::step], self._rows[::step])
        self._mb_curve.setData(self._t[::step], self._mb[::step])
