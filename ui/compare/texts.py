"""What the Compare tab says in words: each shown session's winner (or tie), and a finished comparison's summary."""

from __future__ import annotations

import html

from core.lab.compare import CompareReport, describe, verdict
from ui.compare.session import CompareSession


def shown_text(shown: list[CompareSession]) -> str:
    """Each shown session's settings and its winner (or tie), so two sessions read apart."""
    if not shown:
        return "No session ticked: tick one or two in Sessions."
    parts = []
    for s in shown:
        said = verdict(s.result_list())
        parts.append(f"<b>{html.escape(s.title())}</b> — {s.settings_text()}"
                     + (f": <b>{html.escape(said)}</b>" if said else ""))
    return "  |  ".join(parts)


def summary(report: CompareReport) -> str:
    done = [r for r in report.results if r.runs]
    failed = len(report.results) - len(done)
    if not done:
        return "No combination finished a run: see the Note column."
    best = max(done, key=lambda r: r.median_rows_per_s)
    # word joiners: a narrow panel must not break "rows/s" at its slash
    text = f"Fastest: {describe(best)} at {best.median_rows_per_s:,.0f}\u00a0rows\u2060/\u2060s."
    if best.tie:
        text += f" A {verdict(report.results)}: as fast as the lab can tell apart."
    text += f" {failed} combination(s) failed: see the Note column." if failed else ""
    return text + (f" Note: {report.note}." if report.note else "")
