"""GUI tests run the real window offscreen, with settings in a temp dir."""

from __future__ import annotations

import gc
import os
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

# Said by the offscreen platform plugin itself, not by Sluice.
QT_NOISE = ("This plugin does not support propagateSizeHints", "This plugin does not support raise()",
            "This plugin does not support grabbing the keyboard")


# Process-wide executors that live on purpose between loads (core/sources/sqlscript/reader.py).
SHARED_POOLS = ("sluice-sql-csv",)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every GUI test fails on a Qt warning (or worse) that Qt logs while it runs."""
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.qt_log_level_fail("WARNING"))
            item.add_marker(pytest.mark.qt_log_ignore(*QT_NOISE))


@pytest.fixture(autouse=True)
def _no_leaks(qtbot: Any) -> Iterator[None]:
    """A GUI test must not leave worker jobs, Python threads, windows or running timers behind.

    Runs after pytest-qt has closed the test's widgets: what is still alive then has leaked.
    """
    from PySide6.QtCore import QCoreApplication, QEvent, QThreadPool, QTimer
    from PySide6.QtWidgets import QApplication

    threads_before = {t.ident for t in threading.enumerate()}
    yield
    pool = QThreadPool.globalInstance()
    assert pool.waitForDone(30_000), f"{pool.activeThreadCount()} worker job(s) still running after the test"
    QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete.value)

    def new_threads() -> list[str]:
        # Qt's pool threads show up as dummy entries once they ran Python; the pool was checked above.
        return [t.name for t in threading.enumerate() if t.ident not in threads_before and t.is_alive()
                and not isinstance(t, threading._DummyThread) and not t.name.startswith(SHARED_POOLS)]

    try:
        qtbot.waitUntil(lambda: not new_threads(), timeout=10_000)  # a thread ending with its job may take a moment
    except qtbot.TimeoutError:
        pytest.fail(f"Python threads left running: {new_threads()}")
    # Widgets of earlier tests held in reference cycles are freed now, not in the middle of the walk
    # below: a collection there deleted widgets (and Qt's own timers in them) whose wrappers the walk
    # still held, and the next isActive() read freed memory (a segfault seen in full GUI runs).
    gc.collect()
    QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete.value)
    gc.disable()
    try:
        windows = [w for w in QApplication.topLevelWidgets() if w.isVisible()]
        timers = [t for w in QApplication.allWidgets() for t in w.findChildren(QTimer) if t.isActive()]
        timers += [t for t in QCoreApplication.instance().findChildren(QTimer) if t.isActive()]
    finally:
        gc.enable()
    assert not windows, f"windows left open: {[w.windowTitle() or type(w).__name__ for w in windows]}"
    assert not timers, f"timers still running: {[(t.parent().__class__.__name__, t.interval()) for t in timers]}"


@pytest.fixture
def dsn(embedded_dsn: str) -> str:
    """The window's tests run against the embedded server, the window's own default: what they
    prove is the window's (its questions, its wiring, its texts). The engine's tests, which the
    window calls, run on every server (tests/conftest.py), so the suite stays inside its time."""
    return embedded_dsn


@pytest.fixture
def window(qtbot, dsn: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[object]:
    monkeypatch.setenv("SLUICE_CONFIG_DIR", str(tmp_path / "config"))
    # The kept history is the test's own (a window lists every run the file holds).
    monkeypatch.setattr("core.history.history_path", lambda: tmp_path / "history.sqlite3")
    from ui.main_window import MainWindow

    w = MainWindow()
    qtbot.addWidget(w)
    w.set_connection_dsn(dsn)
    messages: list[str] = []
    # Dialogs would block an offscreen test: record what the user would have read.
    from PySide6.QtWidgets import QMessageBox

    monkeypatch.setattr(QMessageBox, "warning", lambda *a, **k: messages.append(str(a[2])))
    monkeypatch.setattr(QMessageBox, "information", lambda *a, **k: messages.append(str(a[2])))
    w.messages = messages  # type: ignore[attr-defined]
    # Questions (append to a table with rows?) are answered yes unless a test says otherwise.
    w.answer = True  # type: ignore[attr-defined]

    def ask(_parent: object, _title: str, text: str, _yes: str, **_kw: object) -> bool:
        messages.append(text)
        return bool(w.answer)  # type: ignore[attr-defined]

    monkeypatch.setattr("ui.dialogs.ask", ask)
    with qtbot.waitSignal(w.database_ready, timeout=30_000):
        w.refresh_database()
    yield w


@pytest.fixture
def other_db(dsn: str, conn: Any) -> Iterator[str]:
    """A second database on the same server: another connection with its own tables."""
    from psycopg import sql
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    name = f"sluice_other_{uuid.uuid4().hex[:8]}"
    conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    params = conninfo_to_dict(dsn)
    params["dbname"] = name
    yield make_conninfo(**params)
    conn.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))
