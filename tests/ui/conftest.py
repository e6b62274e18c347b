"""GUI tests run the real window offscreen, with settings in a temp dir."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


@pytest.fixture
def window(qtbot, dsn: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[object]:
    monkeypatch.setenv("SLUICE_CONFIG_DIR", str(tmp_path / "config"))
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

    def ask(_parent: object, _title: str, text: str, _yes: str) -> bool:
        messages.append(text)
        return bool(w.answer)  # type: ignore[attr-defined]

    monkeypatch.setattr("ui.dialogs.ask", ask)
    with qtbot.waitSignal(w.database_ready, timeout=30_000):
        w.refresh_database()
    yield w
