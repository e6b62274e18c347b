"""The history store (core/history.py): kept across processes, shared by writers, cleared on request."""

from __future__ import annotations

import datetime as dt
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

from core.history import SCHEMA_VERSION, Entry, History, HistoryError, from_result, record
from core.job import LoadJob
from core.spec import LoadMode, LoadSpec, SourceOptions, TargetSpec

ROOT = Path(__file__).resolve().parents[2]


def _entry(n: int = 1, **kw: Any) -> Entry:
    base: dict[str, Any] = dict(kind="load", source=f"/data/f{n}.csv", target=f"public.t{n}", mode="append",
                                strategy="auto → copy-csv", outcome="loaded", rows_read=n, rows_loaded=n,
                                rows_rejected=0, seconds=0.5, rows_per_s=2.0 * n)
    base.update(kw)
    return Entry(**base)


def test_runs_are_kept_in_a_file_and_read_back_by_another_store(tmp_path: Path) -> None:
    path = tmp_path / "h.sqlite3"
    first = History(path).add(_entry(1, tables=(("public.a", 2), ("public.b", 5)), note="x"))
    History(path).add(_entry(2, outcome="failed", note="line 3: bad value", rows_loaded=0, origin="cli"))
    got = History(path).entries()  # a new store on the same file: what a restarted window reads
    assert [e.id for e in got] == [first.id, first.id + 1]  # type: ignore[operator]
    assert got[0].tables == (("public.a", 2), ("public.b", 5)) and got[0].strategy == "auto → copy-csv"
    assert (got[1].outcome, got[1].note, got[1].origin, got[1].mode) == ("failed", "line 3: bad value", "cli", "append")
    assert isinstance(got[0].at, dt.datetime)
    assert sqlite3.connect(path).execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION


def test_newest_first_limit_and_after(tmp_path: Path) -> None:
    h = History(tmp_path / "h.sqlite3")
    assert h.entries() == [] and h.clear() == 0  # no file yet: nothing, and nothing made
    ids = [h.add(_entry(i)).id for i in range(5)]
    assert [e.id for e in h.entries(limit=2)] == ids[-2:]  # the newest two, oldest first
    assert [e.id for e in h.entries(after=ids[2])] == ids[3:]


def test_clear_forgets_every_run(tmp_path: Path) -> None:
    h = History(tmp_path / "h.sqlite3")
    for i in range(3):
        h.add(_entry(i))
    assert h.clear() == 3
    assert h.entries() == []
    assert h.add(_entry(9)).id is not None  # and keeps working after


def test_writers_at_once_lose_nothing(tmp_path: Path) -> None:
    """A window and CLI runs writing together: threads here, and processes of their own."""
    path = tmp_path / "h.sqlite3"
    History(path).add(_entry(0))
    child = ("import sys; from pathlib import Path; from core.history import History, Entry\n"
             "for i in range(40): History(Path(sys.argv[1])).add(Entry('load', 'f', 't', 'append', 'copy-csv',"
             " 'loaded', origin='cli', note=sys.argv[2]))")
    procs = [subprocess.Popen([sys.executable, "-c", child, str(path), f"p{n}"], cwd=ROOT) for n in range(2)]
    errors: list[BaseException] = []

    def write(n: int) -> None:
        try:
            for i in range(40):
                History(path).add(_entry(i, note=f"t{n}"))
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(n,)) for n in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [p.wait(timeout=120) for p in procs] == [0, 0]
    assert not errors
    notes = [e.note for e in History(path).entries()]
    assert len(notes) == 1 + 4 * 40
    assert {n: notes.count(n) for n in ("t0", "t1", "p0", "p1")} == dict.fromkeys(("t0", "t1", "p0", "p1"), 40)
    assert sqlite3.connect(path).execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_a_newer_file_is_read_but_not_written_and_a_broken_one_is_said(tmp_path: Path) -> None:
    path = tmp_path / "h.sqlite3"
    History(path).add(_entry(1))
    with sqlite3.connect(path) as db:
        db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    assert len(History(path).entries()) == 1
    with pytest.raises(HistoryError, match="newer Sluice"):
        History(path).add(_entry(2))
    assert "newer Sluice" in (record(_entry(2), History(path)) or "")  # the caller goes on
    broken = tmp_path / "broken.sqlite3"
    broken.write_bytes(b"not a database at all" * 100)
    with pytest.raises(HistoryError, match="cannot be used"):
        History(broken).entries()
    # The next run's write puts the broken file aside and starts a new history.
    assert History(broken).add(_entry(3)).id == 1 and len(History(broken).entries()) == 1
    assert [p.name for p in tmp_path.glob("broken.sqlite3.broken-*")]


def test_a_two_table_script_lists_each_table_and_its_rows(
    dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path
) -> None:
    a, b = table_name("ha"), table_name("hb")
    for t in (a, b):
        conn.execute(sql.SQL("CREATE TABLE {} (k int, v text)").format(sql.Identifier(t)))
    script = tmp_path / "two.sql"
    script.write_text(f"COPY public.{a} (k, v) FROM stdin;\n1\tone\n2\ttwo\n\\.\n\n"
                      + "".join(f"INSERT INTO public.{b} (k, v) VALUES ({i}, 'v');\n" for i in range(5)),
                      encoding="utf-8")
    spec = LoadSpec(SourceOptions(str(script)), TargetSpec("", mode=LoadMode.APPEND), dsn=dsn)
    result = LoadJob(spec).run()
    assert result.table_rows == ((f"public.{a}", 2), (f"public.{b}", 5))
    entry = from_result(spec, result)
    assert entry.target == f"public.{a}, public.{b}" and entry.tables == result.table_rows
    assert entry.strategy.startswith("auto → ") and entry.strategy != "auto → auto"
