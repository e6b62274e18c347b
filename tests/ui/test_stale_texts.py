"""No stale texts (issue 24, item 8): auto's note, the last file's result, the ETA and a resumed run's rate."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

from core.events import Phase, Progress


def _csv(path: Path, rows: int) -> Path:
    path.write_text("id,name\n" + "".join(f"{i},n{i}\n" for i in range(rows)), encoding="utf-8")
    return path


def _open(qtbot: Any, w: Any, path: Path) -> None:
    with qtbot.waitSignal(w.source_ready, timeout=30_000):
        w.open_file(str(path))


def _run(qtbot: Any, w: Any) -> Any:
    with qtbot.waitSignal(w.run_finished, timeout=120_000) as done:
        w.start_run()
    return done.args[0]


def _count(conn: psycopg.Connection[Any], table: str) -> int:
    row = conn.execute(sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(table))).fetchone()
    assert row is not None
    return int(row[0])


def test_a_resumed_runs_progress_counts_only_its_own_rows_and_bytes() -> None:
    p = Progress(Phase.LOADING, rows_read=900, rows_loaded=900, bytes_read=900, bytes_total=1000, elapsed=2.0,
                 loaded_before=700, bytes_before=700)
    assert p.rows_per_s == 100.0  # 200 rows in 2 s, not 900
    assert p.mb_per_s == 200 / 1e6 / 2.0
    assert p.eta_s == 1.0  # 100 bytes left at 100 bytes/s


def test_auto_s_note_about_the_last_run_goes_when_the_set_up_changes(
    qtbot: Any, window: Any, table_name: Callable[[str], str], tmp_path: Path
) -> None:
    w = window
    _open(qtbot, w, _csv(tmp_path / "a.csv", 50))
    w.table_combo.setEditText(table_name("note"))
    _run(qtbot, w)
    help_label = w.strategy_panel.strategy_help
    assert "auto chose" in help_label.text() and "for the last run" in help_label.text()
    w.commit_combo.setCurrentText("per-batch")  # the next run is another run: the note is stale
    assert "auto chose" not in help_label.text() and "auto picks" in help_label.text()
    # A run that stops or fails says nothing of its pick here: the earlier run's note goes when it starts.
    w.commit_combo.setCurrentText("single")
    _run(qtbot, w)
    assert "auto chose" in help_label.text()
    w.table_combo.setEditText(w.table_combo.currentText())  # no change: the note stays
    assert "auto chose" in help_label.text()
    with qtbot.waitSignal(w.run_ended, timeout=60_000):
        with qtbot.waitSignal(w.run_started, timeout=30_000):  # after the table is read again
            w.start_run()
        w.stop_run()
    assert "auto chose" not in help_label.text()
    # A run of another strategy, then auto again: still no note about an earlier auto run.
    w.set_strategy("copy-csv")
    _run(qtbot, w)
    w.set_strategy("auto")
    assert "auto chose" not in help_label.text()


def test_another_file_clears_the_last_file_s_result(
    qtbot: Any, window: Any, table_name: Callable[[str], str], tmp_path: Path
) -> None:
    w = window
    _open(qtbot, w, _csv(tmp_path / "first.csv", 40))
    w.table_combo.setEditText(table_name("first"))
    _run(qtbot, w)
    assert "Loaded 40 rows" in w.summary.text() and "40" in w.counters.text()
    _open(qtbot, w, _csv(tmp_path / "second.csv", 7))
    assert w.summary.text() == ""
    assert "loaded           0" in w.counters.text() and "40" not in w.counters.text()
    assert w.progress.format() == "idle" and w.progress.value() == 0
    assert "auto chose" not in w.strategy_panel.strategy_help.text()


def test_the_eta_is_beside_the_rate_not_under_the_bar_s_fill(
    qtbot: Any, window: Any, table_name: Callable[[str], str], tmp_path: Path
) -> None:
    w = window
    _open(qtbot, w, _csv(tmp_path / "eta.csv", 20_000))
    w.table_combo.setEditText(table_name("eta"))
    w.set_strategy("executemany", batch_rows=1000)
    seen: list[tuple[str, str]] = []

    def on_progress(_p: Any) -> None:
        seen.append((w.progress.format(), w.counters.text()))

    with qtbot.waitSignal(w.run_finished, timeout=120_000):
        with qtbot.waitSignal(w.run_started, timeout=30_000) as started:  # after the table is read again
            w.start_run()
        started.args[0].signals.progress.connect(on_progress)
    loading = [(bar, counters) for bar, counters in seen if bar.startswith("loading")]
    assert loading
    for bar, counters in loading:
        assert "ETA" not in bar  # the fill passes under the bar's text: the ETA is not there
        lines = counters.split("\n")
        assert lines[1].startswith("rate ") and "rows/s" in lines[1] and "ETA" in lines[1]
        # The rate's number stands under the counters' numbers: a row of its own, not a wrapped line.
        assert lines[0].index("read ") == lines[1].index("rate ") == 0


def test_a_resumed_runs_rate_is_the_same_in_counters_summary_and_history(
    qtbot: Any, window: Any, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path
) -> None:
    w = window
    _open(qtbot, w, _csv(tmp_path / "resume.csv", 30_000))
    table = table_name("rate")
    w.table_combo.setEditText(table)
    w.set_strategy("executemany", batch_rows=500)
    w.commit_combo.setCurrentText("per-batch")

    def stop_once_loading(p: Any) -> None:
        if p.rows_loaded >= 10_000:
            w.stop_run()

    with qtbot.waitSignal(w.run_cancelled, timeout=60_000):
        with qtbot.waitSignal(w.run_started, timeout=30_000) as started:  # after the table is read again
            w.start_run()
        started.args[0].signals.progress.connect(stop_once_loading)
    committed = _count(conn, table)
    assert committed >= 10_000
    rates: list[float] = []
    with qtbot.waitSignal(w.run_finished, timeout=120_000) as done:
        with qtbot.waitSignal(w.run_started, timeout=30_000) as started:  # after the table is read again
            w.resume_btn.click()
        started.args[0].signals.progress.connect(lambda p: rates.append((p.rows_per_s, p.rows_loaded, p.elapsed)))
    result = done.args[0]
    assert result.loaded_before == committed
    own = f"{(30_000 - committed) / result.seconds:,.0f}"
    assert f"{result.rows_per_s:,.0f}" == own
    assert f"({own} rows/s" in w.summary.text()
    assert f"rate {own:>11} rows/s" in w.counters.text()
    assert w.history.rows[-1][w.history.RATE] == own
    # While it ran, too: this run's rows only.
    loading = [(r, n, e) for r, n, e in rates if n > committed and e > 0]
    assert loading and all(abs(r - (n - committed) / e) < 1e-6 for r, n, e in loading), (committed, rates)
