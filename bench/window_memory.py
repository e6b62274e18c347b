"""The window's memory after many stopped loads (issue 24, item 21): RSS of an idle window.

    QT_QPA_PLATFORM=offscreen python -m bench.window_memory [--rows 3000000] [--loads 8] [--dsn DSN]
                                                     [--strategy ID] [--finish]

Generates a CSV of --rows rows (kept in the data directory), then drives the real window offscreen:
each load starts (--strategy, auto by default, into a new table), is stopped once about 40% of the file is read, and
the window is left idle for a moment; VmRSS (/proc/self/status) is printed before the first load
and after each. With --finish, the loads run to the end instead of being stopped.
"""

from __future__ import annotations

import argparse
import gc
import sys
import uuid
from pathlib import Path
from typing import Any

from core.embedded import data_dir


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def big_csv(rows: int) -> Path:
    path = data_dir() / f"window_memory_{rows}.csv"
    if not path.exists():
        import numpy as np
        import polars as pl

        rng = np.random.default_rng(1)
        ids = np.arange(rows)
        pl.DataFrame({
            "id": ids, "name": [f"n{i}" for i in range(rows)], "city": rng.integers(0, 1000, rows).astype(str),
            "amount": rng.random(rows) * 1000,
        }).with_columns((pl.date(2000, 1, 1) + pl.duration(days=pl.col("id") % 3000)).alias("day")).write_csv(path)
    return path


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.window_memory")
    p.add_argument("--rows", type=int, default=3_000_000)
    p.add_argument("--loads", type=int, default=8)
    p.add_argument("--dsn")
    p.add_argument("--finish", action="store_true", help="let each load finish instead of stopping it")
    p.add_argument("--strategy", default="auto")
    args = p.parse_args(argv)
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    from ui.main_window import MainWindow

    path = big_csv(args.rows)
    app = QApplication(sys.argv[:1])
    w = MainWindow()
    w.resize(1366, 740)
    w.show()
    if args.dsn:
        w.set_connection_dsn(args.dsn)
    done = {"n": 0}
    figures: list[float] = []

    def idle_rss() -> float:
        gc.collect()
        return rss_mb()

    def next_load() -> None:
        if done["n"] >= args.loads:
            print(f"after {done['n']} loads, idle: {idle_rss():.0f} MB", flush=True)
            app.quit()
            return
        w.table_combo.setEditText(f"memtest_{uuid.uuid4().hex[:8]}")
        w.set_strategy(args.strategy)
        QTimer.singleShot(400, start)

    def start() -> None:
        w.start_run()

    def started(job: Any) -> None:  # the job starts once the target is read again
        if not args.finish:
            def stop_past_40_percent(pr: Any) -> None:
                if (pr.fraction or 0) > 0.4:
                    w.stop_run()

            job.signals.progress.connect(stop_past_40_percent)

    def ended() -> None:
        done["n"] += 1
        QTimer.singleShot(1500, report)

    def report() -> None:
        figures.append(idle_rss())
        row = w.history.rows[-1]
        h = w.history
        print(f"load {done['n']} ({row[h.OUTCOME]}, {row[h.STRATEGY]}, {row[h.SECONDS]} s): idle {figures[-1]:.0f} MB",
              flush=True)
        next_load()

    def opened() -> None:
        if done.get("opened"):
            return  # the preview read again (a create run makes the table): not a new start
        done["opened"] = 1
        print(f"file open, before any load: {idle_rss():.0f} MB", flush=True)
        next_load()

    w.run_started.connect(started)
    w.run_ended.connect(ended)
    w.source_ready.connect(opened)
    w.database_ready.connect(lambda: w.open_file(str(path)))
    w.refresh_database()
    print(f"window up: {rss_mb():.0f} MB", flush=True)
    app.exec()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
