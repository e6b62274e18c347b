"""At start-up the window offers the report a crashed run left, without blocking; once shown it is filed away."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from PySide6.QtWidgets import QMessageBox, QWidget

from app import crash_reports
from app.gui import offer_crash_reports


def _fake_report(root: Path) -> Path:
    path = crash_reports.reports_dir(root) / "crash-20261124-101500-99999999.log"
    path.write_text("Sluice started ...\n" + crash_reports.HEADER_END +
                    "Fatal Python error: none_dealloc: deallocating None\n\n"
                    'Current thread 0x00007f (most recent call first):\n  File "AxisItem.py", line 1 in paint\n')
    return path


def test_the_offer_shows_the_report_and_files_it(qtbot: Any, tmp_path: Path) -> None:
    report = _fake_report(tmp_path)
    parent = QWidget()
    qtbot.addWidget(parent)
    parent.show()
    box = offer_crash_reports(parent, root=tmp_path)
    assert isinstance(box, QMessageBox)
    qtbot.waitUntil(box.isVisible, timeout=5_000)  # open(): window-modal, the event loop keeps running
    assert "closed unexpectedly" in box.text() and str(report) in box.informativeText()
    assert "none_dealloc" in box.detailedText() and "AxisItem.py" in box.detailedText()
    with qtbot.waitSignal(box.finished, timeout=5_000):
        box.button(QMessageBox.StandardButton.Close).click()
    assert crash_reports.pending(tmp_path) == [] and report.with_suffix(".seen").exists()
    assert offer_crash_reports(parent, root=tmp_path) is None  # offered once only


def test_a_running_instance_is_not_taken_for_a_crash(qtbot: Any, tmp_path: Path) -> None:
    """Another window still running has an armed report holding only its header: not offered, not deleted."""
    live = crash_reports.reports_dir(tmp_path) / f"crash-20261124-101500-{os.getpid()}.log"
    live.write_text("Sluice started ...\n" + crash_reports.HEADER_END)
    assert offer_crash_reports(None, root=tmp_path) is None
    assert live.exists()
