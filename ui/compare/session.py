"""A comparison kept as a named session, and the colour each strategy wears everywhere. No Qt here."""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from core.compare import CompareReport, CompareResult, rank

# One colour per strategy id, the same in every chart, session and run of the app.
_COLOURS = {
    "connection-per-row": "#8c564b", "row-autocommit": "#e377c2", "row-transaction": "#d62728",
    "executemany": "#ff7f0e", "pipeline": "#bcbd22", "multirow-values": "#8c6d31", "unnest": "#2ca02c",
    "copy-text": "#17becf", "copy-csv": "#1f77b4", "copy-binary": "#9467bd", "parallel-copy": "#393b79",
    "auto": "#000000", "script-autocommit": "#e7969c", "script-transaction": "#ad494a", "script-do-block": "#637939",
}
_SPARE = ("#7f7f7f", "#5254a3", "#b5cf6b", "#e6550d", "#31a354", "#de9ed6", "#3182bd", "#843c39")


def strategy_colour(strategy_id: str) -> str:
    """A fixed colour for a strategy; one the catalogue does not know gets a spare chosen by its name."""
    return _COLOURS.get(strategy_id) or _SPARE[zlib.crc32(strategy_id.encode()) % len(_SPARE)]


def rtt_text(ms: float) -> str:
    return f"{ms:,g} ms" if ms else "0 ms"


@dataclass
class CompareSession:
    """One comparison: its settings (as CompareTab.compare_settings() gave them), its results so far, its state.

    `state` is "running", then "done", "stopped" or "failed" (with `error`). Results arrive one run at a
    time (`add`); `report` is the engine's final report once the comparison is done.
    """

    number: int
    name: str
    settings: dict[str, Any]
    source: str = ""
    table: str = ""
    started: datetime = field(default_factory=datetime.now)
    results: dict[tuple[str, int, int], CompareResult] = field(default_factory=dict)
    state: str = "running"
    error: str | None = None
    report: CompareReport | None = None
    rows: int | None = None  # rows each full run loads (a short file: fewer than the sample); None: not known

    @property
    def rtt_ms(self) -> float:
        return float(self.settings.get("rtt_ms", 0.0))

    @property
    def sample_rows(self) -> int | None:
        return int(self.settings.get("sample_rows") or 0) or None

    def add(self, result: CompareResult) -> None:
        """A run finished: keep its result (the newest snapshot wins) and re-rank the session."""
        self.results[result.key] = result
        if result.runs and not result.reduced_rows:
            self.rows = result.rows  # what a run really loaded: the label says that, not the sample asked
        rank(list(self.results.values()))

    def finish(self, report: CompareReport) -> None:
        self.report = report
        self.results = {r.key: r for r in report.results}
        self.rows = next((r.rows for r in report.results if r.runs and not r.reduced_rows), self.rows)
        self.state = "done"

    def result_list(self) -> list[CompareResult]:
        return list(self.results.values())

    def fastest(self) -> CompareResult | None:
        done = [r for r in self.results.values() if r.runs]
        return max(done, key=lambda r: r.median_rows_per_s) if done else None

    def settings_text(self) -> str:
        """'round trip 20 ms · first 100,000 rows · 3 runs each'; a file shorter than the sample: 'whole file,
        5,000 rows'."""
        sample = f"first {self.sample_rows:,} rows" if self.sample_rows else "whole file"
        if self.rows is not None and (not self.sample_rows or self.rows < self.sample_rows):
            sample = f"whole file, {self.rows:,} row{'' if self.rows == 1 else 's'}"
        repeat = int(self.settings.get("repeat", 1))
        return f"round trip {rtt_text(self.rtt_ms)} · {sample} · {repeat} run{'s' if repeat != 1 else ''} each"

    def title(self) -> str:
        """The name, with the state while it is not done."""
        return self.name if self.state == "done" else f"{self.name} ({self.state})"
