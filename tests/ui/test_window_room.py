"""The lists and the mapping get the room (issue 24, item 20): at 1366x768 the rejected rows list showed
one row; at 1920x1080 the extra width went to the charts while the mapping's Sample stayed cut."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

from tests.ui.test_main_window import _open, _run


def _rows_in_sight(view: Any) -> int:
    return view.viewport().height() // view.verticalHeader().defaultSectionSize()


def test_rejected_rows_and_the_sample_have_room(
    qtbot: Any, window: Any, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path
) -> None:
    w = window
    table = table_name("room")
    conn.execute(sql.SQL("CREATE TABLE {} (id int, amount int, note text)").format(sql.Identifier(table)))
    with qtbot.waitSignal(w.database_ready, timeout=30_000):
        w.refresh_database()
    path = tmp_path / "room.csv"
    path.write_text("id,amount,note\n" + "".join(
        f"{i},{'bad' if i % 10 == 0 else i},a note long enough to be cut in a narrow sample column {i}\n"
        for i in range(1, 101)), encoding="utf-8")
    _open(qtbot, w, path)
    with qtbot.waitSignal(w.mapping_ready, timeout=30_000):
        w.table_combo.setEditText(table)
    w.policy_combo.setCurrentText("skip")
    w.resize(1366, 728)  # a 1366x768 screen less the title bar
    w.show()
    qtbot.waitExposed(w)
    result = _run(qtbot, w)
    assert result.rows_rejected == 10 and w.run_tabs.currentIndex() == 1
    rejects = w.run_panel.rejects_view

    def small_screen() -> None:
        assert w.width() == 1366
        assert _rows_in_sight(rejects) >= 5, _rows_in_sight(rejects)  # it was one

    qtbot.waitUntil(small_screen)
    lists, chart = rejects.width(), w.chart.width()
    sample = w.mapping_view.columnWidth(w.mapping.SAMPLE)

    w.resize(1904, 1040)  # a 1920x1080 screen

    def big_screen() -> None:
        assert w.width() == 1904
        grown_lists, grown_chart = rejects.width() - lists, w.chart.width() - chart
        assert grown_lists > grown_chart > 0, (grown_lists, grown_chart)  # the lists first, then the chart
        note = w.mapping_view.sizeHintForColumn(w.mapping.SAMPLE)
        assert w.mapping_view.columnWidth(w.mapping.SAMPLE) >= min(note, 2 * sample), (sample, note)
        assert _rows_in_sight(rejects) >= 8

    qtbot.waitUntil(big_screen)
    w.close()
