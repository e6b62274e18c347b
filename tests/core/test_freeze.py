"""COPY ... (FREEZE) where the load's own transaction created or truncated the table (issue 27
item 3): the log says so, and the rows really are frozen. Frozen rows are the one thing an older
snapshot can see: a REPEATABLE READ transaction that began before the load sees them after it
commits, where ordinary rows (a later transaction's) stay invisible to it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

from core.load.job import LoadJob
from core.spec import CommitMode, ErrorPolicy, LoadMode, LoadSpec, SourceOptions, TargetSpec

ROWS = 3000


def _file(tmp_path: Path) -> Path:
    src = tmp_path / "f.csv"
    src.write_text("id,name,day\n" + "".join(f'{i},"n, {i}",2024-01-{1 + i % 28:02d}\n' for i in range(ROWS)),
                   encoding="utf-8")
    return src


def _load(src: Path, table: str, dsn: str, mode: LoadMode, strategy: str, **kw: Any) -> list[str]:
    log: list[str] = []
    spec = LoadSpec(SourceOptions(str(src)), TargetSpec(table, mode=mode), strategy=strategy, dsn=dsn, **kw)
    LoadJob(spec, on_log=log.append).run()
    return log


def _seen_by_an_older_snapshot(dsn: str, table: str, load: Callable[[], list[str]]) -> tuple[int, list[str]]:
    with psycopg.connect(dsn) as old:
        old.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        old.execute("SELECT 1")  # the snapshot is taken here, before the load; the table is not touched
        log = load()
        row = old.execute(sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(table))).fetchone()
        assert row is not None
        return row[0], log


@pytest.mark.parametrize("strategy", ["copy-csv", "copy-binary", "copy-text"])
def test_truncate_mode_writes_frozen_rows(dsn: str, conn: psycopg.Connection[Any],
                                          table_name: Callable[[str], str], tmp_path: Path, strategy: str) -> None:
    table = table_name("frz")
    conn.execute(sql.SQL("CREATE TABLE {} (id bigint, name text, day date)").format(sql.Identifier(table)))
    conn.execute(sql.SQL("INSERT INTO {} VALUES (-1, 'old', '2020-01-01')").format(sql.Identifier(table)))
    src = _file(tmp_path)
    seen, log = _seen_by_an_older_snapshot(dsn, table, lambda: _load(src, table, dsn, LoadMode.TRUNCATE, strategy))
    assert seen == ROWS  # frozen: visible even to a snapshot older than the load
    assert any("COPY ... FREEZE" in line and "truncated" in line for line in log), log


def test_create_mode_writes_frozen_rows(dsn: str, conn: psycopg.Connection[Any],
                                        table_name: Callable[[str], str], tmp_path: Path) -> None:
    table = table_name("frz_new")
    log = _load(_file(tmp_path), table, dsn, LoadMode.CREATE, "copy-binary")
    assert any("COPY ... FREEZE" in line and "created" in line for line in log), log
    got = conn.execute(sql.SQL("SELECT count(*), min(id), max(id) FROM {}").format(sql.Identifier(table))).fetchone()
    assert got == (ROWS, 0, ROWS - 1)


@pytest.mark.parametrize(("mode", "kw"), [
    (LoadMode.APPEND, {}),  # the table existed before the load's transaction
    (LoadMode.TRUNCATE, {"commit": CommitMode.PER_BATCH}),  # the second batch's transaction did not truncate it
    (LoadMode.TRUNCATE, {"on_error": ErrorPolicy.SKIP}),  # savepoints: a subtransaction did not truncate it
])
def test_no_freeze_where_the_transaction_did_not_make_the_table(
        dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path,
        mode: LoadMode, kw: dict[str, Any]) -> None:
    table = table_name("nofrz")
    conn.execute(sql.SQL("CREATE TABLE {} (id bigint, name text, day date)").format(sql.Identifier(table)))
    src = _file(tmp_path)
    seen, log = _seen_by_an_older_snapshot(
        dsn, table, lambda: _load(src, table, dsn, mode, "copy-csv", batch_rows=1000, **kw))
    assert seen == 0  # ordinary rows: the older snapshot does not see them
    assert not any("FREEZE" in line for line in log), log


def test_no_freeze_into_a_partitioned_table(dsn: str, conn: psycopg.Connection[Any],
                                            table_name: Callable[[str], str], tmp_path: Path) -> None:
    """PostgreSQL refuses COPY FREEZE on a partitioned table: the load goes without it."""
    table = table_name("frz_part")
    t = sql.Identifier(table)
    conn.execute(sql.SQL("CREATE TABLE {} (id bigint, name text, day date) PARTITION BY RANGE (id)").format(t))
    conn.execute(sql.SQL("CREATE TABLE {} PARTITION OF {} FOR VALUES FROM (MINVALUE) TO (MAXVALUE)")
                 .format(sql.Identifier(table + "_all"), t))
    try:
        log = _load(_file(tmp_path), table, dsn, LoadMode.TRUNCATE, "copy-csv")
        assert not any("FREEZE" in line for line in log), log
        assert conn.execute(sql.SQL("SELECT count(*) FROM {}").format(t)).fetchone() == (ROWS,)
    finally:
        conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(t))
