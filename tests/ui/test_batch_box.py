"""The batch box's "default": no number in the spec, so the strategy sizes its own batches (as the CLI
does without --batch-rows); a number typed is the user's; profiles keep either through the window."""

from __future__ import annotations

import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
from PySide6.QtCore import Qt

from core import profile
from core.batch_size import DEFAULT_BATCH_ROWS, row_width
from core.spec import LoadMode, LoadSpec, SourceOptions, TargetSpec
from core.strategies.catalogue import get_strategy


def _csv(path: Path, rows: int) -> Path:
    path.write_text("id,name,score\n" + "".join(f"{i},name {i},{i}.5\n" for i in range(rows)), encoding="utf-8")
    return path


def _open(qtbot: Any, w: Any, path: Path) -> None:
    with qtbot.waitSignal(w.source_ready, timeout=30_000):
        w.path_edit.setText(str(path))
        w.path_edit.returnPressed.emit()


def _plan_after(qtbot: Any, w: Any, change: Callable[[], None], expect: str) -> str:
    """The plan line once it says `expect` (earlier answers, from earlier changes, may come first)."""
    texts: list[str] = []
    w.foresight.updated.connect(texts.append)
    change()
    qtbot.waitUntil(lambda: any(expect in t for t in texts), timeout=30_000)
    return next(t for t in texts if expect in t)


def _type(qtbot: Any, box: Any, text: str) -> None:
    box.setFocus()
    box.lineEdit().selectAll()
    qtbot.keyClicks(box, text)
    qtbot.keyClick(box, Qt.Key.Key_Return)


def test_the_box_starts_at_default_and_the_plan_says_the_strategys_own_size(
    qtbot: Any, window: Any, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path
) -> None:
    w = window
    assert w.batch_spin.text() == "auto" and w.current_spec().batch_rows is None  # auto picks its own
    w.set_strategy("copy-binary")
    box = w.batch_spin
    assert box.text() == "default" and box.isEnabled() and "8 MB" in box.toolTip()
    assert w.current_spec().batch_rows is None
    path = _csv(tmp_path / "people.csv", 2_000)
    _open(qtbot, w, path)
    own = get_strategy("copy-binary").default_batch_rows(row_width(path, path.stat().st_size))
    assert own != DEFAULT_BATCH_ROWS  # copy-binary's own size, not the old 10,000
    table = table_name("batch")
    text = _plan_after(qtbot, w, lambda: w.table_combo.setEditText(table), "will run copy-binary")
    assert f"batches of {own:,} rows" in text  # the settled size, before the run
    _plan_after(qtbot, w, lambda: _type(qtbot, box, "500"), "batches of 500 rows")
    assert box.text() == "500" and w.current_spec().batch_rows == 500
    text = _plan_after(qtbot, w, lambda: box.stepDown(), f"batches of {own:,} rows")  # 500 - 1000: default
    assert box.text() == "default" and w.current_spec().batch_rows is None
    with qtbot.waitSignal(w.run_finished, timeout=60_000) as blocker:
        w.run_btn.click()
    assert blocker.args[0].rows_loaded == 2_000
    assert f"with copy-binary (batches of {own:,} rows)" in w.log.toPlainText()
    w.set_strategy("unnest")  # the other strategies' own size
    text = _plan_after(qtbot, w, lambda: w.mode_combo.setCurrentText("append"), "will run unnest")
    assert f"batches of {DEFAULT_BATCH_ROWS:,} rows" in text


def test_profiles_with_and_without_batch_rows_round_trip_through_the_window(
    qtbot: Any, window: Any, dsn: str, tmp_path: Path
) -> None:
    w = window
    source = SourceOptions(str(_csv(tmp_path / "p.csv", 10)))

    def through_window(batch_rows: int | None) -> dict[str, Any]:
        """Open a profile with `batch_rows`, save it again from the window: the saved [load] table."""
        path = tmp_path / f"in-{batch_rows}.toml"
        profile.save(LoadSpec(source, TargetSpec("p", mode=LoadMode.CREATE), strategy="copy-csv",
                              batch_rows=batch_rows, dsn=dsn), path)
        with qtbot.waitSignal(w.source_ready, timeout=30_000):
            w.open_profile(str(path))
        assert w.current_spec().batch_rows == batch_rows
        saved = w.save_profile(str(tmp_path / f"out-{batch_rows}"))
        load: dict[str, Any] = tomllib.loads(Path(saved).read_text(encoding="utf-8"))["load"]
        assert profile.load(saved)[0].batch_rows == batch_rows
        return load

    assert through_window(750)["batch_rows"] == 750 and w.batch_spin.text() == "750"
    load = through_window(None)  # after a number: the box goes back to default, not keeps 750
    assert "batch_rows" not in load and load["strategy"] == "copy-csv"
    assert w.batch_spin.text() == "default"
