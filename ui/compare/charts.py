"""The Compare tab's charts: median rows/s per combination (bars, min–max whiskers) and rows/s by batch size.

A strategy has one colour everywhere (session.strategy_colour); sessions shown side by side differ by
bar pattern and line style. Every bar carries its value, so a bar too short to see still reads.
"""

from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QBrush, QColor, QFont, QFontMetrics, QResizeEvent
from PySide6.QtWidgets import QSizePolicy, QWidget

from core.auto import AUTO
from core.compare import CompareReport, CompareResult, describe
from ui.compare.session import CompareSession, strategy_colour

DASHES = (Qt.PenStyle.SolidLine, Qt.PenStyle.DashLine, Qt.PenStyle.DotLine, Qt.PenStyle.DashDotLine)
PATTERNS = (Qt.BrushStyle.SolidPattern, Qt.BrushStyle.BDiagPattern, Qt.BrushStyle.Dense4Pattern,
            Qt.BrushStyle.CrossPattern)
SYMBOLS = ("o", "s", "t", "d")
STACK_BELOW_PX = 760  # narrower than this, the two charts go one above the other

Shown = list[tuple[CompareSession | None, list[CompareResult]]]


def _rate(v: float) -> str:
    return f"{v:,.0f}" if v >= 10 else f"{v:,.1f}"


def _short(name: str, width: int = 16) -> str:
    return name if len(name) <= width else name[: width - 1] + "…"


class RateAxis(pg.AxisItem):  # type: ignore[misc]
    """Rows/s as 120,000 rather than 1.2e+05 or a scaled "(x1000)" label; in log mode 1,000 / 2,000 / 5,000."""

    def __init__(self, orientation: str) -> None:
        super().__init__(orientation)
        self.enableAutoSIPrefix(False)

    def tickStrings(self, values: list[float], scale: float, spacing: float) -> list[str]:  # noqa: N802
        if self.logMode:
            out = []
            for v in values:
                lead = 10 ** (v - math.floor(v + 1e-9))
                keep = spacing is not None or any(abs(lead - d) < 1e-3 for d in (2.0, 5.0))
                out.append(_rate(10**v) if keep else "")
            return out
        if spacing < 1:
            return list(super().tickStrings(values, scale, spacing))
        return [f"{v * scale:,.0f}" for v in values]


class CompareCharts(pg.GraphicsLayoutWidget):  # type: ignore[misc]
    """Bars of median rows/s with min–max whiskers, and rows/s against batch size (log x); a heading names
    each shown session's round trip and sample. set_log_scale() puts the rates on a log axis."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setBackground("w")
        self.heading = self.addLabel("", row=0, col=0, colspan=3, color="#333", size="9pt")
        # Units live in the titles, not in rotated axis labels that collide with the ticks.
        self.bar_plot = self.addPlot(row=1, col=0, title="Median rows/s (whiskers: min–max)",
                                     axisItems={"bottom": RateAxis("bottom")})
        self.bar_plot.showGrid(x=True, alpha=0.3)
        self.line_plot = self.addPlot(row=1, col=1, title="Median rows/s by batch size",
                                      axisItems={"left": RateAxis("left")})
        self.line_plot.setLabel("bottom", "batch rows (log scale)")
        self.line_plot.setLogMode(x=True, y=False)
        self.line_plot.showGrid(x=True, y=True, alpha=0.3)
        left = self.line_plot.getAxis("left")
        left.setWidth(QFontMetrics(left.font()).horizontalAdvance("10,000,000") + 12)  # no jump at first paint
        # The legend sits beside the plot, not over the lines.
        self.legend = pg.LegendItem(labelTextSize="8pt")
        self.addItem(self.legend, row=1, col=2)
        self.ci.layout.setAlignment(self.legend, Qt.AlignmentFlag.AlignTop)
        self.legend.setSizePolicy(QSizePolicy.Policy.Fixed, QSizePolicy.Policy.Fixed)
        self.ci.layout.setColumnStretchFactor(0, 5)
        self.ci.layout.setColumnStretchFactor(1, 5)
        self.bar_item: pg.BarGraphItem | None = None
        self.error_item: pg.ErrorBarItem | None = None
        self.value_labels: list[pg.TextItem] = []
        self.log_scale = False
        self._shown: Shown = []
        self.batch_ticks: list[tuple[int, str]] = []  # (batch size, label shown: "" where it would overlap)
        self._bar_span: tuple[float, float, list[tuple[float, int]]] | None = None  # x0, top, (end, label px)

    # -- entry points -----------------------------------------------------------------------

    def set_log_scale(self, on: bool) -> None:
        self.log_scale = on
        self._draw()

    def show_sessions(self, sessions: list[CompareSession]) -> None:
        self._shown = [(s, s.result_list()) for s in sessions]
        self._draw()

    def show_report(self, report: CompareReport) -> None:
        """One report outside any session."""
        self._shown = [(None, list(report.results))]
        self._draw()

    def clear_charts(self) -> None:
        self.bar_plot.clear()
        self.line_plot.clear()
        self.legend.clear()
        self.bar_item = self.error_item = None
        self.value_labels = []
        self._bar_span = None
        self._batch_span = None
        self.bar_plot.getAxis("left").setTicks(None)
        self.line_plot.getAxis("bottom").setTicks(None)
        self.batch_ticks = []
        for plot, axes in ((self.bar_plot, ("bottom",)), (self.line_plot, ("left", "bottom"))):
            for name in axes:
                plot.getAxis(name).setStyle(showValues=True)

    # -- drawing --------------------------------------------------------------------------------

    def _draw(self) -> None:
        self.clear_charts()
        named = [s for s, _ in self._shown if s is not None]
        self.heading.setText("   |   ".join(f"<b>{s.name}</b>: {s.settings_text()}" for s in named))
        self.bar_plot.setLogMode(x=self.log_scale, y=False)
        self.line_plot.setLogMode(x=True, y=self.log_scale)
        bars = [(k, s, r) for k, (s, rs) in enumerate(self._shown) for r in rs]
        if not bars:
            return
        self._bars(bars, multi=len(self._shown) > 1)
        done = [(k, s, r) for k, s, r in bars if r.runs]
        if done:
            self._lines(done, multi=len(self._shown) > 1)
        else:
            self._nothing_finished()

    def _nothing_finished(self) -> None:
        """No run finished: the rate axes would show a made-up 0..1 range; say so instead."""
        self.bar_plot.getAxis("bottom").setStyle(showValues=False)
        for name in ("left", "bottom"):
            self.line_plot.getAxis(name).setStyle(showValues=False)
        self.line_plot.setXRange(0, 1, padding=0)
        self.line_plot.setYRange(0, 1, padding=0)
        note = pg.TextItem("no run finished: see the Note column", color="#c00", anchor=(0.5, 0.5))
        note.setPos(0.5, 0.5)
        self.line_plot.addItem(note)

    def _fit_bar_range(self) -> None:
        """The bar chart's x range, wide enough that every bar's label fits beside it at this width."""
        span = getattr(self, "_bar_span", None)  # resized once by the base class, before __init__ ends
        if span is None:
            return
        x0, top, labels = span
        plot_px = max(float(self.bar_plot.vb.width()), 200.0)
        right = top
        for end, px in labels:
            share = min(px / plot_px, 0.6)  # never more than 60% of the plot for text
            # end + share * (right - x0) <= right  <=>  right >= (end - share * x0) / (1 - share)
            right = max(right, (end - share * x0) / (1 - share))
        self.bar_plot.setXRange(x0, right + (right - x0) * 0.02 + 1e-9, padding=0)

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802
        super().resizeEvent(event)
        self._arrange(stacked=self.width() < STACK_BELOW_PX)
        self._fit_bar_range()
        self._fit_batch_ticks()

    _batch_span: tuple[float, float, list[int]] | None = None  # the line chart's x range and batch sizes
    stacked = False  # the line chart under the bars (a narrow window), not beside them

    def _arrange(self, *, stacked: bool) -> None:
        """Side by side, or one above the other when the window is narrow (1024 px wide)."""
        if stacked == self.stacked or not hasattr(self, "legend"):
            return  # (resized once by the base class, before __init__ ends)
        self.stacked = stacked
        layout = self.ci.layout
        for item in (self.line_plot, self.legend):
            self.ci.removeItem(item)
        row, col = (2, 0) if stacked else (1, 1)
        self.ci.addItem(self.line_plot, row=row, col=col)
        self.ci.addItem(self.legend, row=row, col=col + 1 if stacked else 2)
        layout.setAlignment(self.legend, Qt.AlignmentFlag.AlignTop)
        layout.setColumnStretchFactor(1, 0 if stacked else 5)

    def _fit_batch_ticks(self) -> None:
        """Ticks at the batch sizes measured (log10 x); a label that would run into its neighbour at this
        width is left blank rather than drawn over it ("5,00010,000")."""
        span = self._batch_span
        if span is None:
            return
        left, right, sizes = span
        axis = self.line_plot.getAxis("bottom")
        px_per_unit = max(float(self.line_plot.vb.width()), 200.0) / max(right - left, 1e-9)
        metrics = QFontMetrics(axis.font())
        shown: list[tuple[int, str]] = []
        last_end = -math.inf
        for b in sizes:
            text = f"{b:,}"
            half = metrics.horizontalAdvance(text) / 2
            at = (math.log10(b) - left) * px_per_unit
            keep = at - half >= last_end + 6
            shown.append((b, text if keep else ""))
            if keep:
                last_end = at + half
        self.batch_ticks = shown
        axis.setTicks([[(math.log10(b), text) for b, text in shown], []])

    def _x(self, v: float, floor: float) -> float:
        """A rate's place on the bar chart's x axis (log10 in log mode, where bars start at `floor`)."""
        return math.log10(max(v, floor)) if self.log_scale else v

    def _bars(self, bars: list[tuple[int, CompareSession | None, CompareResult]], multi: bool) -> None:
        # Horizontal bars, grouped by combination with one bar per session, first on top.
        order = list(dict.fromkeys(r.key for _, _, r in bars))
        bars = sorted(bars, key=lambda b: (order.index(b[2].key), b[0]))
        ys: list[float] = []
        y = 0.0
        for i, (_, _, r) in enumerate(bars):
            if i and multi and r.key != bars[i - 1][2].key:
                y -= 0.5  # a gap between groups
            ys.append(y)
            y -= 1.0
        ok = [r.runs for _, _, r in bars if r.runs]
        lows = [min(runs) for runs in ok if min(runs) > 0] or [1.0]
        floor = 10 ** math.floor(math.log10(min(lows)))
        x0 = self._x(floor, floor) if self.log_scale else 0.0
        # A failed or unfinished combination gets no bar at all, only its label.
        med = [self._x(r.median_rows_per_s, floor) if r.runs else x0 for _, _, r in bars]
        lo = [self._x(min(r.runs), floor) if r.runs else x0 for _, _, r in bars]
        hi = [self._x(max(r.runs), floor) if r.runs else x0 for _, _, r in bars]
        colours = [QColor(strategy_colour(r.strategy)) for _, _, r in bars]
        brushes = [QBrush(c, PATTERNS[k % len(PATTERNS)]) for c, (k, _, _) in zip(colours, bars)]
        pens = [pg.mkPen(c, width=1) for c in colours]
        self.bar_item = pg.BarGraphItem(x0=x0, y=np.array(ys), height=0.8 if multi else 0.7, width=np.array(med) - x0,
                                        brushes=brushes, pens=pens)
        measured = [i for i, (_, _, r) in enumerate(bars) if r.runs]  # no whisker where nothing was measured
        self.error_item = pg.ErrorBarItem(x=np.array([med[i] for i in measured]), y=np.array([ys[i] for i in measured]),
                                          left=np.array([med[i] - lo[i] for i in measured]),
                                          right=np.array([hi[i] - med[i] for i in measured]), beam=0.25,
                                          pen=pg.mkPen("#333", width=1))
        self.bar_plot.addItem(self.bar_item)
        self.bar_plot.addItem(self.error_item)
        font = QFont()
        font.setPointSize(8)
        for (_, s, r), yy, right in zip(bars, ys, hi):
            text = _rate(r.median_rows_per_s) if r.runs else ("✕ failed (see Note)" if r.error else "…")
            if multi and s is not None:
                text += "  " + _short(s.name)  # which session: its bar pattern, said in words
            label = pg.TextItem(" " + text, color="#c00" if r.error else "#222", anchor=(0, 0.5))
            label.setFont(font)
            label.setPos(right, yy)
            self.bar_plot.addItem(label)
            self.value_labels.append(label)
        # One tick per combination, centred on its group of bars (one bar per session).
        groups: dict[tuple[str, int, int], list[float]] = {}
        for (_, _, r), yy in zip(bars, ys):
            groups.setdefault(r.key, []).append(yy)
        names = {r.key: describe(r) for _, _, r in bars}
        axis = self.bar_plot.getAxis("left")
        labels = [names[key] for key in groups]
        axis.setTicks([[(sum(at) / len(at), names[key]) for key, at in groups.items()]])
        axis.setWidth(max(QFontMetrics(axis.font()).horizontalAdvance(t) for t in labels) + 14)
        self.bar_plot.setYRange(min(ys) - 0.6, 0.6, padding=0)
        metrics = QFontMetrics(font)
        # room on the right for the value (and session) beside the bars, in pixels: kept on resize
        self._bar_span = (x0, max(hi), [(h, metrics.horizontalAdvance(lab.textItem.toPlainText()) + 12)
                                        for h, lab in zip(hi, self.value_labels)])
        self._fit_bar_range()

    def _lines(self, done: list[tuple[int, CompareSession | None, CompareResult]], multi: bool) -> None:
        """One line per (session, strategy, workers): colour = strategy, line style = session, symbol = workers.

        The legend names each strategy once and, with several sessions, each session's line style once.
        """
        series: dict[tuple[int, str, int], list[CompareResult]] = {}
        for k, _, r in done:
            series.setdefault((k, r.strategy, r.workers), []).append(r)
        sized = sorted({r.batch_rows for _, _, r in done if r.batch_sized} or {r.batch_rows for _, _, r in done})
        workers = sorted({r.workers for _, _, r in done})
        keyed: dict[str, pg.PlotDataItem] = {}
        for (k, strategy, n), rs in series.items():
            rs.sort(key=lambda r: r.batch_rows)
            colour = strategy_colour(strategy)
            style = DASHES[k % len(DASHES)]
            name = strategy + (f" ×{n}" if n > 1 else "")
            if rs[0].batch_sized:
                symbol = SYMBOLS[workers.index(n) % len(SYMBOLS)]
                curve = self.line_plot.plot([float(r.batch_rows) for r in rs], [r.median_rows_per_s for r in rs],
                                            pen=pg.mkPen(colour, width=2, style=style), symbol=symbol,
                                            symbolSize=7, symbolBrush=colour, symbolPen=None)
                sample = dict(pen=pg.mkPen(colour, width=2), symbol=symbol, symbolSize=7,
                              symbolBrush=pg.mkBrush(colour), symbolPen=pg.mkPen(colour))
            else:
                # row by row (or auto, which sizes its own batches): one rate whatever the batch size asked,
                # drawn flat across the sizes measured
                curve = self.line_plot.plot([float(sized[0]), float(sized[-1])], [rs[0].median_rows_per_s] * 2,
                                            pen=pg.mkPen(colour, width=2, style=style))
                sample = dict(pen=pg.mkPen(colour, width=2))
                name += " (its own batch size)" if strategy == AUTO else " (row by row)"
            if name not in keyed:
                # a sample off the plot (one point, so its symbol takes the colour) stands for every session
                keyed[name] = curve if not multi else pg.PlotDataItem([0.0], [0.0], **sample)
        for name, item in keyed.items():
            self.legend.addItem(item, name)
        if multi:
            for k, s, _ in {k: (k, s, r) for k, s, r in done}.values():
                self.legend.addItem(pg.PlotDataItem(pen=pg.mkPen("#555", width=2, style=DASHES[k % len(DASHES)])),
                                    _short(s.name, 24) if s is not None else f"#{k + 1}")
        lo, hi = float(np.log10(sized[0])), float(np.log10(sized[-1]))
        pad = 0.12 * (hi - lo) if hi > lo else 0.5  # room for the end labels
        self.line_plot.setXRange(lo - pad, hi + pad, padding=0)
        self._batch_span = (lo - pad, hi + pad, sized)
        self._fit_batch_ticks()
        rates = [r.median_rows_per_s for _, _, r in done]
        if self.log_scale:
            low = math.log10(max(min(rates), 1e-3))
            high = math.log10(max(max(rates), 1e-3))
            span = max(high - low, 0.5)
            self.line_plot.setYRange(low - 0.1 * span, high + 0.1 * span, padding=0)
        else:
            self.line_plot.setYRange(0, max(rates) * 1.08, padding=0)
