"""`python -m app [--open FILE] [--profile P.toml] [--run] [--dsn DSN] [--table T] [--screenshot OUT.png]`."""

from __future__ import annotations

import argparse
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

from app import crash_reports

if TYPE_CHECKING:
    from PySide6.QtWidgets import QMessageBox, QWidget


def _parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m app", description="The Sluice workbench window.")
    p.add_argument("--open", metavar="FILE")
    p.add_argument("--profile", metavar="P.toml")
    p.add_argument("--run", action="store_true", help="start the load once the file is read")
    p.add_argument("--dsn")
    p.add_argument("--table")
    p.add_argument("--screenshot", metavar="OUT.png", help="render the window to a PNG and exit")
    return p.parse_args(argv)


def _install_excepthook() -> None:
    """Unexpected errors: a dialog and a crash log, never a silent death or a bare traceback."""
    from core.embedded import data_dir

    def hook(kind: type[BaseException], exc: BaseException, tb: TracebackType | None) -> None:
        text = "".join(traceback.format_exception(kind, exc, tb))
        log = data_dir() / "crash.log"
        with open(log, "a", encoding="utf-8") as f:
            f.write(text + "\n")
        from PySide6.QtWidgets import QApplication, QMessageBox

        if QApplication.instance() is not None:
            QMessageBox.critical(None, "Sluice", f"Something went wrong: {exc}\n\nDetails were written to {log}.")

    sys.excepthook = hook


def _versions() -> dict[str, str]:
    import pyqtgraph
    import PySide6

    return {"PySide6": PySide6.__version__, "pyqtgraph": pyqtgraph.__version__}


def offer_crash_reports(parent: QWidget | None = None, root: Path | None = None) -> QMessageBox | None:
    """If an earlier run crashed, offer its report (without blocking); offered reports are filed as seen."""
    from ui.crash_dialog import crash_report_box

    reports = crash_reports.pending(root)
    if not reports:
        return None
    box = crash_report_box(reports, parent)
    box.finished.connect(lambda _r: crash_reports.mark_seen(reports))
    box.open()
    return box


def main(argv: list[str]) -> int:
    args = _parse(argv)
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    from ui.main_window import MainWindow

    app = QApplication.instance() or QApplication(sys.argv[:1])
    assert isinstance(app, QApplication)
    app.setApplicationName("Sluice")
    _install_excepthook()
    # A hard crash (segfault, abort in a C extension) leaves its traceback here; a clean exit removes it.
    crash_reports.arm(versions=_versions())
    window = MainWindow()
    outcome = {"code": 0}
    if args.dsn:
        window.set_connection_dsn(args.dsn)
    window.refresh_database()

    def later(ms: int, fn: Callable[[], object]) -> None:
        """`fn` after `ms` on a timer the window owns: it goes with the window, never outlives it."""
        timer = QTimer(window)
        timer.setSingleShot(True)
        timer.timeout.connect(fn)
        timer.timeout.connect(timer.deleteLater)
        timer.start(ms)

    def shoot() -> None:
        if args.screenshot and not outcome.get("shot"):
            outcome["shot"] = 1
            window.grab().save(args.screenshot)
            window.close()  # as Quit does: the window stops its timers and workers, then the app ends

    def after_run(code: int) -> None:
        if outcome.get("ran"):
            return  # the --run load's outcome is the exit status, not a later one's
        outcome["ran"] = 1
        outcome["code"] = code
        if args.screenshot:
            # Once the plan for the next run is said again (or after 5 s), so the shot shows it.
            window.foresight.updated.connect(lambda _t: later(100, shoot))
            later(5000, shoot)

    if args.run:
        # The exit status tells a script how the --run load went; loads the user starts by hand
        # are the user's to read in the window, and a normal Quit after them exits 0.
        window.run_finished.connect(lambda _r: after_run(0))
        window.run_failed.connect(lambda _m: after_run(1))
        window.run_cancelled.connect(lambda: after_run(1))
        window.run_refused.connect(lambda _m: after_run(1))
    if args.screenshot:
        window.runs.unattended = True  # nobody is there to answer a question: it is answered no

    def on_ready() -> None:
        if args.table:
            window.table_combo.setEditText(args.table)
        if args.run:
            later(200, window.start_run)
        elif args.screenshot:
            # Once the plan for the run is shown (or after 5 s, when there is none to show).
            window.foresight.updated.connect(lambda _t: later(100, shoot))
            later(5000, shoot)

    if args.open or args.profile:
        window.source_ready.connect(on_ready)
        if args.profile:
            window.open_profile(args.profile)
        else:
            window.open_file(args.open)
    elif args.screenshot:
        window.database_ready.connect(lambda: later(300, shoot))
    window.show()
    if not args.screenshot:
        later(0, lambda: offer_crash_reports(window))
    code = app.exec()
    crash_reports.disarm()
    return outcome["code"] or code
