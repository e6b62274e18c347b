"""Nothing left behind: compare's temporary folders, a relay whose connection failed, cursors."""

from __future__ import annotations

import sys
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

from core.errors import ConnectError
from core.lab.compare import CompareSpec, run_compare
from core.load.job import LoadJob
from core.spec import ErrorPolicy, LoadSpec, SourceOptions, TargetSpec
from core.strategies.catalogue import all_strategies


def _ours() -> set[str]:
    return {p.name for p in Path(tempfile.gettempdir()).iterdir() if p.name.startswith("sluice-")}


def test_compare_removes_its_temporary_folders(
    dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path
) -> None:
    src = tmp_path / "c.csv"
    src.write_text("id,name\n" + "".join(f"{i},n{i}\n" for i in range(3000)), encoding="utf-8")
    table = table_name("cmpleak")
    conn.execute(sql.SQL("CREATE TABLE {} (id int, name text)").format(sql.Identifier(table)))
    before = _ours()
    # A budget this small makes every combination probe, then run on fewer rows (a second sample).
    spec = CompareSpec(LoadSpec(SourceOptions(str(src)), TargetSpec(table), dsn=dsn), ["row-transaction", "copy-csv"],
                       repeat=2, sample_rows=2500, budget_s=0.001)
    report = run_compare(spec)
    assert any(r.reduced_rows for r in report.results)
    assert _ours() - before == set()


def test_relay_stops_when_connecting_through_it_fails(tmp_path: Path, dsn: str) -> None:
    src = tmp_path / "c.csv"
    src.write_text("id\n1\n", encoding="utf-8")
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed once the block ends: connecting is refused
    bad = f"host=127.0.0.1 port={port} user=postgres dbname=postgres connect_timeout=5"
    spec = CompareSpec(LoadSpec(SourceOptions(str(src)), TargetSpec("t"), dsn=bad), ["copy-csv"], rtt_ms=5)
    with pytest.raises(ConnectError):
        run_compare(spec)
    assert [t.name for t in threading.enumerate() if t.name == "sluice-relay"] == []


@pytest.mark.parametrize("strategy", [c.id for c in all_strategies() if not c.script_only])
@pytest.mark.parametrize("policy", list(ErrorPolicy))
def test_cursors_a_strategy_makes_are_closed(
    strategy: str, policy: ErrorPolicy, dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str],
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    src = tmp_path / "c.csv"
    src.write_text("id,name\n" + "".join(f"{i},n{i}\n" for i in range(50)) + "x,bad\n", encoding="utf-8")
    table = table_name("cur")
    conn.execute(sql.SQL("CREATE TABLE {} (id int, name text)").format(sql.Identifier(table)))
    made: list[psycopg.Cursor[Any]] = []
    real = psycopg.Connection.cursor

    def cursor(self: psycopg.Connection[Any], *args: Any, **kwargs: Any) -> Any:
        cur = real(self, *args, **kwargs)
        caller = sys._getframe(1).f_code.co_filename
        if "core" in Path(caller).parts and "strategies" in Path(caller).parts:
            made.append(cur)
        return cur

    monkeypatch.setattr(psycopg.Connection, "cursor", cursor)
    spec = LoadSpec(SourceOptions(str(src)), TargetSpec(table), strategy=strategy, batch_rows=10, dsn=dsn,
                    on_error=policy, reject_file=str(tmp_path / "rej.csv"))
    try:
        LoadJob(spec).run()
    except Exception:  # noqa: BLE001 - abort refuses the bad row; the cursors are what is checked
        pass
    assert [c for c in made if not c.closed] == []
