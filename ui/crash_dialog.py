"""The offer, at start-up, to show the report a crashed run left behind."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import QMessageBox, QWidget

MAX_SHOWN = 200_000  # characters of the report in the details pane


def crash_report_box(reports: list[Path], parent: QWidget | None = None) -> QMessageBox:
    """A window-modal box; opened with `open()` it never blocks the event loop (tests answer it)."""
    newest = reports[0]
    text = newest.read_text(encoding="utf-8", errors="replace")
    box = QMessageBox(parent)
    box.setObjectName("crashReportBox")
    box.setIcon(QMessageBox.Icon.Warning)
    box.setWindowTitle("Sluice")
    more = f" ({len(reports) - 1} older report(s) in the same folder)" if len(reports) > 1 else ""
    box.setText("Sluice closed unexpectedly last time.")
    box.setInformativeText(f"A crash report was written to {newest}{more}.\n"
                           "Show details to read it; it names where the crash happened.")
    box.setDetailedText(text[-MAX_SHOWN:])
    box.setStandardButtons(QMessageBox.StandardButton.Close)
    return box
