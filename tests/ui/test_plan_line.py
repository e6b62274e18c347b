"""The plan line on the embedded server, and after a switch of server (issue 24, item 6)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from ui.panels.run import NO_PLAN
from ui.panels.target import EMBEDDED


def _people(tmp_path: Path) -> Path:
    path = tmp_path / "people.csv"
    path.write_text("id,name\n" + "".join(f"{i},n{i}\n" for i in range(50)), encoding="utf-8")
    return path


def _open(qtbot: Any, w: Any, path: Path) -> None:
    with qtbot.waitSignal(w.source_ready, timeout=30_000):
        w.open_file(str(path))


def _connect(qtbot: Any, w: Any, dsn: str | None) -> None:
    w.set_connection_dsn(dsn)
    with qtbot.waitSignal(w.database_ready, timeout=60_000):
        w.refresh_database()


def test_the_plan_shows_on_the_embedded_server(
    qtbot: Any, window: Any, table_name: Callable[[str], str], tmp_path: Path
) -> None:
    w = window
    _connect(qtbot, w, None)  # "Local (embedded)": no DSN at all
    assert w.conn_combo.currentText() == EMBEDDED
    texts: list[str] = []
    w.foresight.updated.connect(texts.append)
    _open(qtbot, w, _people(tmp_path))
    w.table_combo.setEditText(table_name("embplan"))
    qtbot.waitUntil(lambda: any("auto will pick" in t for t in texts), timeout=60_000)
    assert "pick a file" not in w.run_panel.plan_label.text()
    assert "create" in texts[-1] or "copy" in texts[-1]


def test_a_switch_of_server_clears_the_plan_and_asks_again(
    qtbot: Any, window: Any, table_name: Callable[[str], str], tmp_path: Path
) -> None:
    w = window  # connected by DSN (another server, as far as the window knows)
    texts: list[str] = []
    w.foresight.updated.connect(texts.append)
    _open(qtbot, w, _people(tmp_path))
    w.table_combo.setEditText(table_name("switchplan"))
    qtbot.waitUntil(lambda: any("auto will pick" in t for t in texts), timeout=60_000)
    before = len(texts)
    w.set_connection_dsn(None)  # to the embedded server
    assert "auto will pick" not in w.run_panel.plan_label.text()  # that server's plan is gone at once
    qtbot.waitUntil(lambda: any("auto will pick" in t for t in texts[before:]), timeout=60_000)
    assert "auto will pick" in w.run_panel.plan_label.text()  # and this one's is said


def test_no_table_means_no_plan(qtbot: Any, window: Any, table_name: Callable[[str], str], tmp_path: Path) -> None:
    w = window
    texts: list[str] = []
    w.foresight.updated.connect(texts.append)
    _open(qtbot, w, _people(tmp_path))
    w.table_combo.setEditText(table_name("noplan"))
    qtbot.waitUntil(lambda: bool(texts), timeout=60_000)
    w.table_combo.setEditText("")  # the plan was for a table no longer named
    qtbot.waitUntil(lambda: w.run_panel.plan_label.text() == NO_PLAN, timeout=10_000)
