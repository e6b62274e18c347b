"""The Compare tab's verdicts (issue 24, item 22): auto as a contestant, ties, each session's winner."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt

from core.compare import CompareResult, rank
from ui.compare.model import CompareModel
from ui.compare.session import CompareSession
from ui.compare.texts import shown_text


def _open(qtbot: Any, w: Any, path: Path, table: str) -> None:
    with qtbot.waitSignal(w.source_ready, timeout=30_000):
        w.open_file(str(path))
    w.table_combo.setEditText(table)


def test_auto_competes_says_its_pick_and_each_session_says_its_winner(
    qtbot: Any, window: Any, table_name: Callable[[str], str], tmp_path: Path
) -> None:
    w = window
    src = tmp_path / "c.csv"
    src.write_text("id,name\n" + "".join(f"{i},n{i}\n" for i in range(400)), encoding="utf-8")
    _open(qtbot, w, src, table_name("cmpv"))
    tab = w.compare_tab
    items = [tab.strategy_list.item(i) for i in range(tab.strategy_list.count())]
    auto_item = next(i for i in items if i.text() == "auto")
    assert "picked" in auto_item.toolTip()
    tab.set_strategies(["auto", "row-transaction"])
    tab.set_batch_sizes([400])
    tab.set_repeat(2)
    for _ in range(2):
        with qtbot.waitSignal(tab.finished, timeout=120_000):
            tab.start()
    first, second = tab.sessions
    rows = {tab.model.data(tab.model.index(i, CompareModel.COL_STRATEGY)) for i in range(tab.model.rowCount())}
    assert any(r.startswith("auto → copy-") for r in rows), rows  # what auto picked, in the table
    auto_row = next(i for i in range(tab.model.rowCount()) if tab.model.rows[i][1].strategy == "auto")
    assert tab.model.data(tab.model.index(auto_row, CompareModel.COL_WORKERS)) == "—"
    assert "picks its own" in tab.model.data(tab.model.index(auto_row, CompareModel.COL_BATCH),
                                             Qt.ItemDataRole.ToolTipRole)
    legend = [label.text for _, label in tab.charts.legend.items]
    assert "auto (its own batch size)" in legend and not any("auto (row by row)" in t for t in legend)
    # Both sessions side by side: the line above the table says who wins in each.
    tab.session_list.item(0).setCheckState(Qt.CheckState.Checked)
    assert tab.shown_sessions() == [first, second]
    label = tab.shown_label.text()
    assert label.count("wins") + label.count("tie:") == 2, label
    assert "#1 · 0 ms" in label and "#2 · 0 ms" in label
    # Apply auto's row: the Load tab runs auto (it picks again), not the id of one run's pick.
    w.set_strategy("copy-text")
    tab.apply_result(tab.model.rows[auto_row][1])
    assert w.strategy_combo.currentData() == "auto"
    assert w.messages == []


def test_a_tie_is_marked_in_the_note_and_said(qtbot: Any, window: Any) -> None:
    tab = window.compare_tab
    a = CompareResult("copy-csv", 1000, 1, 10, runs=[900.0, 1000.0, 1100.0])
    b = CompareResult("copy-binary", 1000, 1, 10, runs=[800.0, 950.0, 960.0])
    c = CompareResult("executemany", 1000, 1, 10, runs=[100.0])
    rank([a, b, c])
    tab.model.set_results([a, b, c])
    notes = [tab.model.data(tab.model.index(i, CompareModel.COL_NOTE)) for i in range(3)]
    assert notes[0].startswith("tie") and notes[1].startswith("tie") and notes[2] == ""
    session = CompareSession(1, "#1 · 0 ms", {"repeat": 3})
    for r in (a, b, c):
        session.add(r)
    assert "tie: copy-csv · 1,000 and copy-binary · 1,000" in shown_text([session])
