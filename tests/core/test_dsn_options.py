"""A DSN's own `options` (datestyle, timezone) hold on every connection a load opens.

They decide how the server reads a date like 01/02/2024; parallel-copy's streams once
replaced them with their own lock timeout, and stored 2024-01-02 where every other
strategy stored 2024-02-01.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import make_conninfo

from core.db import connect
from core.load.job import run_load
from core.spec import CommitMode, LoadSpec, SourceOptions, TargetSpec


@pytest.mark.parametrize(("strategy", "commit"), [
    ("copy-csv", CommitMode.SINGLE), ("copy-binary", CommitMode.SINGLE), ("executemany", CommitMode.SINGLE),
    ("parallel-copy", CommitMode.SINGLE), ("parallel-copy", CommitMode.PER_BATCH),
])
def test_the_dsns_datestyle_and_timezone_reach_every_stream(
    strategy: str, commit: CommitMode, dsn: str, conn: psycopg.Connection[Any],
    table_name: Callable[[str], str], tmp_path: Path,
) -> None:
    path = tmp_path / "dmy.csv"
    path.write_text("id,d,ts\n" + "".join(f"{i},01/02/2024,2024-01-02 03:04:05\n" for i in range(1, 2001)),
                    encoding="utf-8")
    table = table_name("dmy")
    conn.execute(sql.SQL("CREATE TABLE {} (id int, d date, ts timestamptz)").format(sql.Identifier(table)))
    ours = make_conninfo(dsn, options="-c datestyle=ISO,DMY -c timezone=America/New_York")
    result = run_load(LoadSpec(source=SourceOptions(path=str(path)), target=TargetSpec(table=table),
                               strategy=strategy, batch_rows=500, workers=2, commit=commit, dsn=ours))
    assert result.rows_loaded == 2000
    got = conn.execute(sql.SQL("SELECT DISTINCT d::text, (ts AT TIME ZONE 'UTC')::text FROM {}").format(
        sql.Identifier(table))).fetchall()
    assert got == [("2024-02-01", "2024-01-02 08:04:05")]  # day first; New York's 03:04 is 08:04 UTC


def test_connect_puts_its_options_after_the_dsns(dsn: str) -> None:
    ours = make_conninfo(dsn, options="-c datestyle=ISO,DMY")
    with connect(ours, options="-c lock_timeout=7s") as c:
        assert c.execute("SHOW datestyle").fetchone() == ("ISO, DMY",)
        assert c.execute("SHOW lock_timeout").fetchone() == ("7s",)
