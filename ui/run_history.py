"""The window's kept history: each run and comparison added to it, and clearing it (after a question).

The History tab shows the model (ui/history_model.py over core/history.py); this is what adds to it
and forgets it. The run controller hands it each run's entry; the window's _connect hands it each
comparison of the Compare tab.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QMessageBox, QWidget

from core.history import Entry, target_of
from core.spec import LoadSpec
from ui import dialogs
from ui.history_model import HistoryModel
from ui.run_texts import rows_text


class RunHistory(QObject):
    """Adds runs and comparisons to the kept history, and clears it. Signals: said(str) (a line for the run log)."""

    said = Signal(str)

    def __init__(self, parent: QWidget, spec: Callable[[], LoadSpec]) -> None:
        super().__init__(parent)
        self._parent = parent  # where its question and message show
        self._spec = spec  # the set-up as the panels say it now: a comparison's source and target
        self.model = HistoryModel()  # the runs kept in the data directory, this window's and headless ones

    def add_run(self, entry: Entry) -> None:
        """A run into the history; if the history cannot be kept on disk, the log says so (once)."""
        self.model.add(entry)
        if self.model.problem:
            self.said.emit(f"note: the history is kept for this session only: {self.model.problem}")
            self.model.problem = ""

    def clear(self) -> None:
        """Forget every run kept (after a question naming how many); tables and files are not touched."""
        self.model.refresh()
        n = self.model.kept()
        if n == 0:
            QMessageBox.information(self._parent, "Sluice", "The history is empty.")
            return
        question = (f"Forget all {rows_text(n).replace('row', 'run')} in the history, those of the command line "
                    f"too?\n\nTables, data files and reject files are not touched. The history is kept in "
                    f"{self.model.store.path}.")
        if not dialogs.ask(self._parent, "Clear history", question, "Clear history", destructive=True):
            return
        self.model.clear()
        self.said.emit(f"history cleared: {rows_text(n).replace('row', 'run')} forgotten")

    def add_comparison(self, report: Any) -> None:
        """A comparison goes into the history: its fastest result, round trip and sample size."""
        results = [r for r in getattr(report, "results", []) if not getattr(r, "error", None)]
        best = max(results, key=lambda r: statistics.median(r.runs) if r.runs else 0.0, default=None)
        spec = self._spec()
        rtt = getattr(report, "rtt_ms", 0.0)
        sample = getattr(report, "sample_rows", None)
        # The rows a run really loaded: a file shorter than the sample is the whole file.
        used = next((r.rows for r in results if r.runs and not r.reduced_rows), None)
        rows = (f"whole file, {used:,} rows" if used is not None and (not sample or used < sample)
                else f"sample {sample:,} rows" if sample else "whole file")
        note = f"{len(results)} results, RTT {rtt:g} ms, {rows}"
        rate = statistics.median(best.runs) if best is not None and best.runs else None
        # Into scratch tables shaped like the target: no mode of the target's applies.
        self.model.add(Entry(
            kind="compare", source=spec.source.path, target=target_of(spec), mode="",
            strategy=f"fastest: {best.strategy}" if best is not None else "", outcome="compared", rows_per_s=rate,
            note=note))
