"""What a finished, failed or stopped run held is released (issue 24, item 21).

The figures (bench/window_memory.py, eight stopped 3M-row loads): an idle window grew from 267 to
465 MB before, and stays at about 305 MB now. These tests are the cheap parts of that.
"""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import weakref
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

from core import memory
from core.job import LoadJob

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def jobs(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[weakref.ref[LoadJob]]]:
    """Weak references to every LoadJob that runs while the test runs (not the plans' foresee)."""
    ran: list[weakref.ref[LoadJob]] = []
    real = LoadJob.run

    def run(self: LoadJob) -> Any:
        ran.append(weakref.ref(self))
        return real(self)

    monkeypatch.setattr(LoadJob, "run", run)
    yield ran


def _open(qtbot: Any, w: Any, path: Path) -> None:
    with qtbot.waitSignal(w.source_ready, timeout=30_000):
        w.open_file(str(path))


def test_a_failed_runs_job_and_its_batches_are_released_without_waiting_for_the_gc(
    qtbot: Any, window: Any, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path,
    jobs: list[weakref.ref[LoadJob]],
) -> None:
    w = window
    table = table_name("memfail")
    conn.execute(sql.SQL("CREATE TABLE {} (id int, name text)").format(sql.Identifier(table)))
    path = tmp_path / "bad.csv"
    path.write_text("id,name\n" + "".join(f"{i},n{i}\n" for i in range(5000)) + "seven,x\n", encoding="utf-8")
    _open(qtbot, w, path)
    w.refresh_table_list_quietly()
    qtbot.waitUntil(lambda: table in w.targets.db.tables.get("public", []), timeout=30_000)
    with qtbot.waitSignal(w.mapping_ready, timeout=30_000):
        w.table_combo.setEditText(table)
    w.set_strategy("copy-csv")
    gc.collect()
    gc.disable()  # only reference counts free things now: a cycle would keep the job for good
    try:
        before = len(jobs)
        with qtbot.waitSignal(w.run_failed, timeout=60_000):
            w.start_run()
        assert len(jobs) == before + 1
        run_job = jobs[before]
        qtbot.waitUntil(lambda: run_job() is None, timeout=10_000)
    finally:
        gc.enable()
    assert w.runs.job is None and "seven" in w.last_error


def test_the_window_gives_memory_back_when_a_run_ends(
    qtbot: Any, window: Any, table_name: Callable[[str], str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    jobs: list[weakref.ref[LoadJob]],
) -> None:
    w = window
    released: list[bool] = []
    real = memory.release
    monkeypatch.setattr(memory, "release", lambda: released.append(real()) or True)
    path = tmp_path / "ok.csv"
    path.write_text("id,name\n" + "".join(f"{i},n{i}\n" for i in range(30_000)), encoding="utf-8")
    _open(qtbot, w, path)
    w.table_combo.setEditText(table_name("memok"))
    w.set_strategy("executemany", batch_rows=100)
    w.commit_combo.setCurrentText("single")

    def stop_once_loading(p: Any) -> None:
        if p.rows_loaded >= 500:
            w.stop_run()

    before = len(jobs)
    with qtbot.waitSignal(w.run_ended, timeout=60_000):
        with qtbot.waitSignal(w.run_started, timeout=30_000) as started:  # after the table is read again
            w.start_run()
        started.args[0].signals.progress.connect(stop_once_loading)
    assert w.history.rows[-1][w.history.OUTCOME] == "cancelled"
    qtbot.waitUntil(lambda: len(released) == 1, timeout=10_000)
    assert released == [sys.platform.startswith("linux")]  # glibc's free pages went back
    assert len(jobs) == before + 1 and jobs[before]() is None  # the stopped run's job and what it read are gone
    assert w.runs.job is None


@pytest.mark.skipif(memory.arena_count() is None, reason="glibc only")
def test_the_window_caps_glibcs_arenas_so_each_runs_threads_do_not_keep_their_own(tmp_path: Path) -> None:
    """Twelve threads alive at once would make twelve more arenas; after the window starts, at most four."""
    code = """
import threading
from PySide6.QtWidgets import QApplication
from core import memory
from ui.main_window import MainWindow
app = QApplication([])
window = MainWindow()
gate = threading.Barrier(12)
def work():
    held = [bytearray(200_000) for _ in range(5)]
    gate.wait()
threads = [threading.Thread(target=work) for _ in range(12)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(memory.arena_count())
"""
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "SLUICE_CONFIG_DIR": str(tmp_path / "cfg")}
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-800:]
    assert int(r.stdout.strip().splitlines()[-1]) <= memory.ARENAS
