"""The Compare tab: failed runs drawn as failures, batch sizes that mean the same run
merged, labels with the rows really used, and a status that forgets removed sessions."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql
from PySide6.QtCore import Qt

from core.lab.compare import CompareReport, CompareResult
from tests.ui.test_compare_tab import _csv, _set_up
from ui.compare.charts import CompareCharts
from ui.compare.model import CompareModel
from ui.compare.tab import IDLE_STATUS


def test_failed_combinations_get_no_bar_and_no_made_up_axes(qtbot: Any) -> None:
    """A failed run is a label, not a full bar; with nothing measured the axes show no range."""
    charts = CompareCharts()
    qtbot.addWidget(charts)
    failed = [CompareResult("copy-csv", b, 1, error="bad value at line 4") for b in (100, 1000)]
    charts.show_report(CompareReport([*failed, CompareResult("unnest", 100, 1, error="boom")], 0.0, None))
    assert charts.bar_item is not None and list(charts.bar_item.opts["width"]) == [0.0, 0.0, 0.0]
    assert all("failed" in lab.textItem.toPlainText() for lab in charts.value_labels)
    assert not charts.bar_plot.getAxis("bottom").style["showValues"]
    assert not charts.line_plot.getAxis("left").style["showValues"]
    ok = CompareResult("unnest", 100, 1, rows=10, runs=[500.0])
    charts.show_report(CompareReport([failed[0], ok], 0.0, None))
    assert list(charts.bar_item.opts["width"]) == [0.0, 500.0]
    assert charts.line_plot.getAxis("left").style["showValues"]


def test_batch_size_labels_never_run_into_each_other(qtbot: Any) -> None:
    """5,000 and 6,000 side by side on a narrow chart: one label, not "5,0006,000"."""
    charts = CompareCharts()  # not given to qtbot: pyqtgraph's close() of a shown view crashes offscreen
    try:
        charts.resize(800, 300)
        charts.show()
        qtbot.waitExposed(charts)
        results = [CompareResult("copy-csv", b, 1, rows=10, runs=[float(b)]) for b in (500, 5000, 6000)]
        charts.show_report(CompareReport(results, 0.0, None))
        labels = dict(charts.batch_ticks)
        assert labels[500] == "500" and [labels[5000], labels[6000]].count("") == 1
        charts.resize(2400, 300)  # room for every label again once laid out
        qtbot.waitUntil(lambda: all(text for _, text in charts.batch_ticks), timeout=5_000)
    finally:
        charts.hide()
        charts.deleteLater()


def test_a_comparison_where_every_run_failed_does_not_look_done(
    qtbot: Any, window: Any, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path
) -> None:
    """An empty red bar and a readable Note (middle elided, whole error in the tooltip)."""
    w, table = window, table_name("cmpbad")
    bad = tmp_path / "bad.csv"
    bad.write_text("id,name,score\n1,a,1\nnot a number,b,2\n", encoding="utf-8")
    _set_up(qtbot, w, conn, table, bad)
    tab = w.compare_tab
    tab.set_strategies(["copy-csv"])
    tab.set_batch_sizes([100])
    tab.set_repeat(1)
    with qtbot.waitSignals([tab.comparison_finished], timeout=120_000):
        tab.start()
    assert tab.sessions[-1].state == "done", (tab.status.text(), w.messages)
    assert tab.progress.value() == 0 and "failed" in tab.progress.format()
    assert tab.table.textElideMode() == Qt.TextElideMode.ElideMiddle
    note = tab.model.index(0, CompareModel.COL_NOTE)
    assert "not a number" in tab.model.data(note, Qt.ItemDataRole.ToolTipRole)


def test_batch_sizes_beyond_the_rows_merge_and_labels_say_the_rows_used(
    qtbot: Any, window: Any, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path
) -> None:
    """50 rows with batch sizes 10, 1,000 and 10,000 (sample 100,000): two runs, "50 rows" said,
    and removing the session clears the status."""
    w, table = window, table_name("cmpdup")
    _set_up(qtbot, w, conn, table, _csv(tmp_path / "fifty.csv", 50))
    tab = w.compare_tab
    tab.set_strategies(["copy-csv"])
    tab.set_batch_sizes([10, 1000, 10_000])
    tab.set_repeat(1)
    with qtbot.waitSignal(tab.finished, timeout=120_000) as done:
        tab.start()
        assert "10,000 left out" in tab.status.text()
    assert sorted(r.batch_rows for r in done.args[0].results) == [10, 1000]
    session = tab.sessions[-1]
    assert "whole file, 50 rows" in session.settings_text() and "100,000" not in tab.shown_label.text()
    assert "whole file, 50 rows" in w.history.rows[-1][-1]
    tab.session_list.setCurrentRow(0)
    tab.remove_btn.click()
    assert tab.status.text() == IDLE_STATUS and tab.progress.format() == "idle"
    assert _count_rows(conn, table) == 5


def _count_rows(conn: psycopg.Connection[Any], table: str) -> int:
    row = conn.execute(sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(table))).fetchone()
    assert row is not None
    return int(row[0])
