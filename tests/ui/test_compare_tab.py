"""The Compare tab: real comparisons on the embedded server, driven through the tab's API; no sleeps."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

from core import profile
from core.errors import ConfigError
from ui.compare.form import parse_counts
from ui.compare.model import CompareModel
from ui.compare.session import CompareSession, strategy_colour


def _csv(path: Path, rows: int) -> Path:
    path.write_text("id,name,score\n" + "".join(f"{i},name {i},{i}.5\n" for i in range(rows)), encoding="utf-8")
    return path


def _count(conn: psycopg.Connection[Any], table: str) -> int:
    row = conn.execute(sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(table))).fetchone()
    assert row is not None
    return int(row[0])


def _scratch_tables(conn: psycopg.Connection[Any]) -> int:
    row = conn.execute("SELECT count(*) FROM pg_tables WHERE tablename LIKE '\\_sluice\\_cmp\\_%'").fetchone()
    assert row is not None
    return int(row[0])


def _set_up(qtbot: Any, w: Any, conn: psycopg.Connection[Any], table: str, csv_path: Path) -> None:
    """An existing target holding 5 rows, and the CSV opened against it in append mode."""
    conn.execute(sql.SQL("CREATE TABLE {} (id int, name text, score float8)").format(sql.Identifier(table)))
    conn.execute(sql.SQL("INSERT INTO {} SELECT g, 'old', 0 FROM generate_series(1, 5) g").format(
        sql.Identifier(table)))
    with qtbot.waitSignal(w.database_ready, timeout=30_000):
        w.refresh_database()  # the new table becomes known, so the mapping is built against it
    with qtbot.waitSignal(w.source_ready, timeout=30_000):
        w.path_edit.setText(str(csv_path))
        w.path_edit.returnPressed.emit()
    # the mapping is read from the table in the background: let that finish inside the test
    with qtbot.waitSignal(w.mapping.modelReset, timeout=30_000):
        w.table_combo.setEditText(table)
    w.mode_combo.setCurrentText("append")


def test_parse_counts_accepts_k_forms_and_rejects_junk() -> None:
    assert parse_counts("1000, 10k,50_000, 1.5k, 1k", "x") == [1000, 10_000, 50_000, 1500]
    assert parse_counts(" 2 ,", "x") == [2]
    for bad in ("", "abc", "0", "-5", "1.5", "10q"):
        with pytest.raises(ValueError, match="Batch"):
            parse_counts(bad, "Batch")


def test_compare_three_strategies_then_export_and_apply(
    qtbot: Any, qtmodeltester: Any, window: Any, conn: psycopg.Connection[Any],
    table_name: Callable[[str], str], tmp_path: Path,
) -> None:
    w = window
    table = table_name("cmp")
    _set_up(qtbot, w, conn, table, _csv(tmp_path / "small.csv", 3000))
    tab = w.compare_tab
    tab.set_strategies(["row-transaction", "executemany", "copy-csv"])
    tab.set_batch_sizes([100, 1000])
    tab.set_repeat(1)
    tab.set_rtt(0)
    with qtbot.waitSignal(tab.finished, timeout=120_000) as blocker:
        with qtbot.waitSignal(tab.result_added, timeout=120_000) as first:
            tab.start()
            assert not tab.batch_edit.isEnabled() and not tab.strategy_list.isEnabled()
            assert tab.stop_btn.isEnabled() and not tab.run_btn.isEnabled()
        # the first run is in the table before the comparison ends
        assert tab.stop_btn.isEnabled() and tab.report is None
        assert tab.model.rowCount() >= 1 and first.args[1].key in {r.key for r in tab.model.results}
        assert first.args[0] is tab.sessions[-1] and first.args[0].state == "running"
    report = blocker.args[0]
    assert tab.report is report
    assert tab.run_btn.isEnabled() and tab.batch_edit.isEnabled() and not tab.stop_btn.isEnabled()
    combos = {(r.strategy, r.batch_rows, r.workers) for r in report.results}
    # row by row has no batch size: it runs once (reading in the largest batch asked)
    assert combos == {("row-transaction", 1000, 1)} | {(s, b, 1) for s in ("executemany", "copy-csv")
                                                       for b in (100, 1000)}
    assert len(report.results) == 5
    for r in report.results:
        assert r.error is None and len(r.runs) == 1 and r.median_rows_per_s > 0 and r.rows == 3000
    assert max(r.ratio_to_fastest for r in report.results) == pytest.approx(1.0)
    assert _count(conn, table) == 5  # the comparison loaded scratch tables only
    assert _scratch_tables(conn) == 0
    assert w.messages == []

    # table and charts
    assert tab.model.rowCount() == 5
    qtmodeltester.check(tab.model)
    batch_of = {tab.proxy.data(tab.proxy.index(i, CompareModel.COL_STRATEGY)):
                tab.proxy.data(tab.proxy.index(i, CompareModel.COL_BATCH)) for i in range(5)}
    assert batch_of["row-transaction"] == "—"
    assert {tab.proxy.data(tab.proxy.index(i, CompareModel.COL_RTT)) for i in range(5)} == {"0 ms"}
    assert {tab.proxy.data(tab.proxy.index(i, CompareModel.COL_ROWS)) for i in range(5)} == {"3,000"}
    assert len(tab.charts.line_plot.listDataItems()) == 3  # one line per strategy (row by row: flat)
    assert tab.charts.bar_item is not None and len(tab.charts.bar_item.opts["width"]) == 5
    assert tab.charts.error_item is not None
    assert len(tab.charts.value_labels) == 5  # every bar says its rate, even one too short to see
    assert all("," in lab.textItem.toPlainText() or float(lab.textItem.toPlainText()) < 1000
               for lab in tab.charts.value_labels)
    assert "Fastest" in tab.status.text()
    # 3,000 rows against a 100,000-row sample: the label says the rows really used
    assert "round trip 0 ms" in tab.shown_label.text() and "whole file, 3,000 rows" in tab.shown_label.text()

    # exports
    out_csv, out_png = tmp_path / "cmp.csv", tmp_path / "cmp.png"
    tab.export_csv(str(out_csv))
    lines = out_csv.read_text().splitlines()
    assert lines[0].startswith("strategy,") and len(lines) == 6
    assert lines[0].endswith("session,rtt_ms,sample_rows")
    tab.export_png(str(out_png))
    assert out_png.stat().st_size > 1000 and out_png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    # Apply the selected row to the Load tab
    w.tabs.setCurrentWidget(tab)
    rows = [tab.proxy.index(i, 0) for i in range(tab.proxy.rowCount())]
    pick = next(i for i in rows if tab.proxy.data(i.siblingAtColumn(CompareModel.COL_STRATEGY)) == "executemany"
                and tab.proxy.data(i.siblingAtColumn(CompareModel.COL_BATCH)) == "100")
    tab.table.selectRow(pick.row())
    assert tab.selected_result() is not None and tab.selected_result().batch_rows == 100
    tab.apply_btn.click()
    assert w.strategy_combo.currentData() == "executemany"
    assert w.batch_spin.value() == 100
    assert w.tabs.tabText(w.tabs.currentIndex()) == "Load"


def test_two_sessions_side_by_side_at_0_and_20_ms(
    qtbot: Any, window: Any, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path,
) -> None:
    """Each comparison is a session; at 20 ms per round trip row by row cannot pass 50 rows/s while one
    pipelined batch goes far faster; both sessions shown together keep one colour per strategy."""
    w = window
    table = table_name("cmprtt")
    _set_up(qtbot, w, conn, table, _csv(tmp_path / "few.csv", 60))
    tab = w.compare_tab
    tab.set_strategies(["row-transaction", "executemany"])
    tab.set_batch_sizes([60])
    tab.set_repeat(1)
    ended: list[CompareSession] = []
    tab.comparison_finished.connect(ended.append)
    for rtt in (0, 20):
        tab.set_rtt(rtt)
        with qtbot.waitSignal(tab.finished, timeout=120_000) as blocker:
            tab.start()
        assert blocker.args[0].rtt_ms == rtt
    fast, slow = tab.sessions
    assert ended == [fast, slow] and fast.state == slow.state == "done"
    assert (fast.name, slow.name) == ("#1 · 0 ms", "#2 · 20 ms")
    assert slow.settings["rtt_ms"] == 20 and slow.sample_rows == 100_000 and slow.report is tab.report
    assert "round trip 20 ms" in slow.settings_text() and "whole file, 60 rows" in slow.settings_text()  # the rows used
    rates = {r.strategy: r.median_rows_per_s for r in slow.result_list()}
    assert all(r.error is None and r.rows == 60 for r in slow.result_list())
    assert 0 < rates["row-transaction"] <= 1000 / 20 * 1.05  # the relay is really in the path
    assert rates["executemany"] > 5 * rates["row-transaction"]
    assert _count(conn, table) == 5 and _scratch_tables(conn) == 0

    # the newest shows alone; tick the first to put them side by side
    assert tab.shown_sessions() == [slow] and tab.model.rowCount() == 2
    assert tab.table.isColumnHidden(CompareModel.COL_SESSION)
    tab.session_list.item(0).setCheckState(__import__("PySide6").QtCore.Qt.CheckState.Checked)
    assert tab.shown_sessions() == [fast, slow] and tab.model.rowCount() == 4
    assert not tab.table.isColumnHidden(CompareModel.COL_SESSION)
    rtts = sorted(tab.proxy.data(tab.proxy.index(i, CompareModel.COL_RTT)) for i in range(4))
    assert rtts == ["0 ms", "0 ms", "20 ms", "20 ms"]
    assert "#1 · 0 ms" in tab.shown_label.text() and "#2 · 20 ms" in tab.shown_label.text()
    bars = tab.charts.bar_item
    assert bars is not None and len(bars.opts["width"]) == 4
    # bars grouped by combination, one per session; a strategy keeps its colour in both sessions
    colours = [b.color().name() for b in bars.opts["brushes"]]
    assert colours == [strategy_colour("row-transaction")] * 2 + [strategy_colour("executemany")] * 2
    assert bars.opts["brushes"][0].style() != bars.opts["brushes"][1].style()  # sessions differ by pattern
    ticks = [t for _, t in tab.charts.bar_plot.getAxis("left")._tickLevels[0]]
    assert ticks == ["row-transaction", "executemany · 60"]  # one per combination, centred on its bars
    tags = [lab.textItem.toPlainText().split("  ")[-1] for lab in tab.charts.value_labels]
    assert tags == ["#1 · 0 ms", "#2 · 20 ms"] * 2
    assert len(tab.charts.line_plot.listDataItems()) == 4
    legend = [label.text for _, label in tab.charts.legend.items]
    assert legend == ["row-transaction (row by row)", "executemany", "#1 · 0 ms", "#2 · 20 ms"]
    # a log axis for rates that differ a hundredfold; every bar keeps its label
    tab.log_check.setChecked(True)
    assert tab.charts.log_scale and len(tab.charts.value_labels) == 4
    assert tab.charts.bar_plot.getAxis("bottom").logMode
    # renaming a session renames it everywhere
    tab.session_list.item(1).setText("office VPN")
    assert slow.name == "office VPN" and "office VPN" in tab.shown_label.text()
    assert w.messages == []


def test_results_sort_by_median(qtbot: Any, window: Any) -> None:
    from core.lab.compare import CompareReport, CompareResult

    tab = window.compare_tab
    report = CompareReport([CompareResult("copy-csv", 1000, 1, 10, runs=[900.0, 1000.0]),
                            CompareResult("unnest", 1000, 1, 10, runs=[5000.0]),
                            CompareResult("executemany", 1000, 1, 10, error="boom")], 0.0, None)
    tab.model.set_results(report.results)
    tab.table.sortByColumn(CompareModel.COL_MEDIAN, __import__("PySide6").QtCore.Qt.SortOrder.DescendingOrder)
    order = [tab.proxy.data(tab.proxy.index(i, CompareModel.COL_STRATEGY)) for i in range(3)]
    assert order == ["unnest", "copy-csv", "executemany"]
    assert tab.proxy.data(tab.proxy.index(2, CompareModel.COL_NOTE)) == "error: boom"
    tab.charts.show_report(report)
    assert len(tab.charts.line_plot.listDataItems()) == 2  # the failed one has nothing to draw
    assert [lab.textItem.toPlainText().strip() for lab in tab.charts.value_labels] == ["950", "5,000", "✕ failed (see Note)"]


def test_stop_cancels_a_slow_comparison(
    qtbot: Any, window: Any, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path
) -> None:
    w = window
    table = table_name("cmpstop")
    _set_up(qtbot, w, conn, table, _csv(tmp_path / "slow.csv", 20_000))
    tab = w.compare_tab
    tab.set_strategies(["row-autocommit"])
    tab.set_batch_sizes([1000])
    tab.set_sample(0)
    tab.set_repeat(3)
    tab.set_budget(600)
    with qtbot.waitSignal(tab.progressed, timeout=60_000):
        tab.start()
    with qtbot.waitSignal(tab.comparison_finished, timeout=60_000) as ended:
        tab.stop()
    assert tab.report is None
    assert ended.args[0] is tab.sessions[-1] and ended.args[0].state == "stopped"
    assert tab.session_list.item(0).text().endswith("(stopped)")
    assert tab.run_btn.isEnabled() and tab.batch_edit.isEnabled() and not tab.stop_btn.isEnabled()
    assert "Stopped" in tab.status.text()
    assert _count(conn, table) == 5
    assert _scratch_tables(conn) == 0
    assert w.messages == []


def test_bad_set_up_is_a_message_not_a_job(
    qtbot: Any, window: Any, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path
) -> None:
    w = window
    tab = w.compare_tab
    tab.start()  # no file, no table yet
    assert "Open a file" in w.messages[-1] and tab.run_btn.isEnabled()
    _set_up(qtbot, w, conn, table_name("cmpbad"), _csv(tmp_path / "b.csv", 10))
    tab.batch_edit.setText("100, lots")
    tab.start()
    assert "Batch rows" in w.messages[-1] and tab.run_btn.isEnabled()
    tab.set_batch_sizes([100])
    tab.set_strategies(["script-transaction"])  # a CSV source cannot replay INSERT scripts
    tab.start()
    assert "at least one strategy" in w.messages[-1]
    assert not tab.strategy_list.item(
        [tab.strategy_list.item(i).text() for i in range(tab.strategy_list.count())].index("script-transaction")
    ).flags() & __import__("PySide6").QtCore.Qt.ItemFlag.ItemIsEnabled


def test_failure_in_the_worker_is_a_warning(
    qtbot: Any, window: Any, table_name: Callable[[str], str], tmp_path: Path
) -> None:
    w = window
    with qtbot.waitSignal(w.source_ready, timeout=30_000):
        w.path_edit.setText(str(_csv(tmp_path / "f.csv", 10)))
        w.path_edit.returnPressed.emit()
    w.table_combo.setEditText(table_name("nowhere"))
    w.set_connection_dsn("host=127.0.0.1 port=1 dbname=nope connect_timeout=3")  # nothing listens there
    tab = w.compare_tab
    tab.set_strategies(["copy-csv"])
    tab.set_batch_sizes([100])
    tab.set_repeat(1)
    with qtbot.waitSignal(tab.failed, timeout=60_000) as blocker:
        tab.start()
    assert blocker.args[0] and w.messages[-1] == blocker.args[0]
    assert "unexpected" not in blocker.args[0]  # a known kind of error, worded for a person
    assert tab.run_btn.isEnabled() and "Failed" in tab.status.text()


def test_compare_section_round_trips_through_a_profile(
    qtbot: Any, window: Any, dsn: str, table_name: Callable[[str], str], tmp_path: Path
) -> None:
    w = window
    with qtbot.waitSignal(w.source_ready, timeout=30_000):
        w.path_edit.setText(str(_csv(tmp_path / "p.csv", 10)))
        w.path_edit.returnPressed.emit()
    w.table_combo.setEditText(table_name("cmpprof"))
    tab = w.compare_tab
    wanted = {"strategies": ["unnest", "copy-csv", "parallel-copy"], "batch_rows": [500, 5000],
              "workers": [2, 4], "sample_rows": 0, "repeat": 2, "budget_s": 45.0, "rtt_ms": 20.0}
    tab.apply_compare_settings(wanted)
    tab.batch_edit.setText("500, 5k")
    assert tab.compare_settings() == wanted
    path = tmp_path / "with_compare.toml"
    w.save_profile(str(path))
    assert "[compare]" in path.read_text()
    assert profile.load_compare(path) == wanted

    tab.apply_compare_settings({"strategies": ["copy-binary"], "batch_rows": [1], "workers": [1], "sample_rows": 7,
                                "repeat": 9, "budget_s": 5.0, "rtt_ms": 1.0})
    with qtbot.waitSignal(w.source_ready, timeout=30_000):
        w.open_profile(str(path))
    assert tab.compare_settings() == wanted

    # a profile without [compare] has none; a bad one is refused with a message
    plain = tmp_path / "plain.toml"
    profile.save(w.current_spec(), plain)
    assert profile.load_compare(plain) is None
    bad = tmp_path / "bad.toml"
    bad.write_text(path.read_text().replace("[compare]", "[compare]\nspeed = 3"), encoding="utf-8")
    with pytest.raises(ConfigError, match="speed"):
        profile.load_compare(bad)
    w.open_profile(str(bad))
    assert "unknown keys: speed" in w.messages[-1]
    bad.write_text(path.read_text().replace("repeat = 2", 'repeat = "two"'), encoding="utf-8")
    with pytest.raises(ConfigError, match="repeat"):
        profile.load_compare(bad)
