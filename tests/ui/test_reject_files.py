"""Rejects in the window: one folder (never beside the data file unasked), a reject limit, and a reject
file whose path shows, with Show in folder and Copy path where no application opens .csv files."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql
from PySide6.QtGui import QDesktopServices, QGuiApplication

from core import profile
from core.embedded import data_dir
from tests.ui.test_main_window import _count, _open
from ui.settings import Settings


def _skip_run(qtbot: Any, w: Any) -> Any:
    with qtbot.waitSignal(w.run_finished, timeout=60_000) as done:
        w.run_btn.click()
    return done.args[0]


@pytest.fixture
def bad_file(qtbot: Any, window: Any, conn: psycopg.Connection[Any], table_name: Callable[[str], str],
             tmp_path: Path) -> tuple[Path, str]:
    """A file with one bad row opened onto an empty table, On error = skip."""
    src = tmp_path / "src"
    src.mkdir()
    path = src / "rows.csv"
    path.write_text("id,name\n1,a\nx9,b\n3,c\n", encoding="utf-8")
    table = table_name("rej")
    conn.execute(sql.SQL("CREATE TABLE {} (id int, name text)").format(sql.Identifier(table)))
    w = window
    with qtbot.waitSignal(w.database_ready, timeout=30_000):
        w.refresh_database()  # the window lists the new table
    _open(qtbot, w, path)
    with qtbot.waitSignal(w.mapping_ready, timeout=30_000):
        w.table_combo.setEditText(table)
    assert w.mode_combo.currentText() == "append"
    w.set_strategy("copy-csv")
    w.policy_combo.setCurrentText("skip")
    return path, table


def test_reject_files_go_to_one_folder_never_beside_the_source(
    qtbot: Any, window: Any, bad_file: tuple[Path, str], tmp_path: Path
) -> None:
    w = window
    path, _table = bad_file
    assert w.strategy_panel.reject_folder_edit.placeholderText() == str(data_dir() / "rejects")
    first = _skip_run(qtbot, w).reject_file
    assert Path(first).parent == data_dir() / "rejects" and Path(first).name.startswith("rows.csv.rejects-")
    assert [p.name for p in path.parent.iterdir()] == ["rows.csv"]  # nothing piled up beside the source
    # A folder of the user's: used, and kept for the next session.
    mine = tmp_path / "my rejects"
    w.runs.reject_files.set_folder(str(mine))
    second = _skip_run(qtbot, w).reject_file
    assert Path(second).parent == mine and Path(second).exists()
    assert Settings.load().reject_folder == str(mine)
    assert [p.name for p in path.parent.iterdir()] == ["rows.csv"]


def test_reject_limit_stops_the_run_and_is_saved_in_profiles(
    qtbot: Any, window: Any, bad_file: tuple[Path, str], conn: psycopg.Connection[Any], tmp_path: Path
) -> None:
    w = window
    _path, table = bad_file
    g = w.strategy_panel
    assert g.reject_limit_spin.text() == "no limit" and g.reject_limit_spin.isEnabled()
    g.reject_limit_spin.setValue(0)
    with qtbot.waitSignal(w.run_failed, timeout=60_000) as failed:
        w.run_btn.click()
    assert "more than the limit of 0" in failed.args[0]
    assert _count(conn, table) == 0  # rolled back
    saved = w.save_profile(str(tmp_path / "limit.toml"))
    assert profile.load(saved)[0].reject_limit == 0
    g.reject_limit_spin.setValue(-1)
    with qtbot.waitSignal(w.source_ready, timeout=30_000):
        w.open_profile(saved)
    assert g.reject_limit() == 0 and not g.reject_pct_label.isVisibleTo(g)
    # A percentage limit (a profile key with no flag) is said beside the box and kept when saved again.
    spec, _rest = profile.load(saved)
    spec.reject_limit_pct = 5.0
    profile.save(spec, saved)
    with qtbot.waitSignal(w.source_ready, timeout=30_000):
        w.open_profile(saved)
    assert g.reject_pct_label.isVisibleTo(g) and "5%" in g.reject_pct_label.text()
    assert profile.load(w.save_profile(str(tmp_path / "again.toml")))[0].reject_limit_pct == 5.0
    w.policy_combo.setCurrentText("abort")
    assert not g.reject_limit_spin.isEnabled() and not g.reject_folder_edit.isEnabled()


def test_open_reject_file_without_an_application_says_where_it_is(
    qtbot: Any, window: Any, bad_file: tuple[Path, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    w = window
    reject = _skip_run(qtbot, w).reject_file
    p = w.run_panel
    assert p.reject_path_label.text() == reject and p.reject_path_label.toolTip() == reject
    opened: list[str] = []
    # No application for .csv and no file manager (as under a bare X server): openUrl says no.
    monkeypatch.setattr(QDesktopServices, "openUrl", lambda url: opened.append(url.toLocalFile()) and False)
    p.open_rejects_btn.click()
    assert opened == [reject] and reject in w.messages[-1] and "Show in folder" in w.messages[-1]
    p.show_rejects_btn.click()
    assert opened[-1] == str(Path(reject).parent) and reject in w.messages[-1]
    p.copy_rejects_btn.click()
    assert QGuiApplication.clipboard().text() == reject
