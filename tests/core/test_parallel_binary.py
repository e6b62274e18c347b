"""parallel-copy's streams send parsed batches as binary COPY where every value can be typed
exactly, as CSV where not, and load the same rows either way (issue 10, item 4)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from pathlib import Path
from typing import Any

import polars as pl
import psycopg
import pytest
from psycopg import sql

from core.errors import BadRowError
from core.load.job import LoadJob
from core.spec import CommitMode, LoadMode, LoadSpec, SourceOptions, TargetSpec
from core.strategies.binary_frames import BinaryFrames

ROWS = 3_000


def _days(bad: dict[int, str]) -> list[str]:
    return [bad.get(i, (dt.date(2024, 1, 1) + dt.timedelta(days=i % 400)).isoformat()) for i in range(ROWS)]


def _parquet(path: Path, bad: dict[int, str] | None = None) -> Path:
    """Typed columns, plus a text column of dates: 'infinity' there has no exact binary form here."""
    pl.DataFrame({
        "id": list(range(ROWS)),
        "qty": [i % 1000 for i in range(ROWS)],
        "price": [i / 8 for i in range(ROWS)],
        "name": [None if i % 17 == 0 else f"name\t{i}, \"q\"\n" for i in range(ROWS)],
        "seen": [dt.datetime(2024, 1, 1) + dt.timedelta(seconds=97 * i) for i in range(ROWS)],
        "day": _days(bad or {}),
    }).write_parquet(path)
    return path


def _table(conn: psycopg.Connection[Any], name: str) -> None:
    conn.execute(sql.SQL("CREATE TABLE {} (id bigint, qty int, price float8, name text, seen timestamp, day date)")
                 .format(sql.Identifier(name)))


def _spec(path: Path, table: str, dsn: str, commit: CommitMode, workers: int = 2) -> LoadSpec:
    return LoadSpec(SourceOptions(str(path)), TargetSpec(table, mode=LoadMode.APPEND), strategy="parallel-copy",
                    dsn=dsn, workers=workers, batch_rows=250, commit=commit)


@pytest.fixture
def binary_batches(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Rows of each batch a stream encoded as binary tuples (either protocol)."""
    sent: list[int] = []
    real_tuples, real_statement = BinaryFrames.tuples, BinaryFrames.statement

    def tuples(self: BinaryFrames, frame: pl.DataFrame) -> Any:
        got = real_tuples(self, frame)
        if got is not None:
            sent.append(frame.height)
        return got

    def statement(self: BinaryFrames, frame: pl.DataFrame) -> Any:
        got = real_statement(self, frame)
        if got is not None:
            sent.append(frame.height)
        return got

    monkeypatch.setattr(BinaryFrames, "tuples", tuples)
    monkeypatch.setattr(BinaryFrames, "statement", statement)
    return sent


def _rows(conn: psycopg.Connection[Any], table: str) -> list[tuple[Any, ...]]:
    return conn.execute(sql.SQL("SELECT id, qty, price, name, seen, day::text FROM {} ORDER BY id")
                        .format(sql.Identifier(table))).fetchall()


@pytest.mark.parametrize("commit", [CommitMode.SINGLE, CommitMode.PER_BATCH])
def test_typed_batches_go_as_binary_and_the_rest_as_csv_with_the_same_rows(
    commit: CommitMode, dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path,
    binary_batches: list[int],
) -> None:
    infinity_at = 1_234  # its batch of 250 rows goes as CSV, which PostgreSQL's own input reads
    path = _parquet(tmp_path / "typed.parquet", {infinity_at: "infinity"})
    table, reference = table_name("bin"), table_name("ref")
    _table(conn, table)
    _table(conn, reference)
    result = LoadJob(_spec(path, table, dsn, commit)).run()
    assert result.rows_loaded == ROWS
    assert sum(binary_batches) == ROWS - 250  # every batch but the one holding 'infinity'
    # The reference: the same rows as PostgreSQL reads them from a CSV file.
    pl.read_parquet(path).write_csv(tmp_path / "typed.csv")
    copy = sql.SQL("COPY {} FROM STDIN (FORMAT csv, HEADER)").format(sql.Identifier(reference))
    with conn.cursor() as cur, cur.copy(copy) as cp:
        cp.write((tmp_path / "typed.csv").read_bytes())
    got = _rows(conn, table)
    assert got == _rows(conn, reference)
    assert got[infinity_at][5] == "infinity"


def test_a_refused_row_after_a_change_of_format_is_named_by_its_source_row(
    dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path,
    binary_batches: list[int],
) -> None:
    """One stream: a binary statement (rows 0-249), then a CSV one (the 'infinity' batch, then
    the bad date's): the server's line in the second statement is counted after the first's rows."""
    path = _parquet(tmp_path / "bad.parquet", {300: "infinity", 600: "2024-02-30"})
    table = table_name("badbin")
    _table(conn, table)
    with pytest.raises(BadRowError) as got:
        LoadJob(_spec(path, table, dsn, CommitMode.SINGLE, workers=1)).run()
    problem = got.value.problem
    assert (problem.row, problem.column) == (600, "day")
    assert binary_batches[:1] == [250]
    count = conn.execute(sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(table))).fetchone()
    assert count == (0,)  # single commit: nothing stays


@pytest.mark.parametrize("commit", [CommitMode.SINGLE, CommitMode.PER_BATCH])
def test_binary_streams_into_a_citus_distributed_table(
    commit: CommitMode, tmp_path: Path, binary_batches: list[int],
) -> None:
    import os
    import uuid

    dsn = os.environ.get("SLUICE_TEST_CITUS_DSN")
    if not dsn:
        pytest.skip("SLUICE_TEST_CITUS_DSN names no Citus coordinator")
    path = _parquet(tmp_path / "cit.parquet", {1_234: "infinity"})
    table, reference = f"citbin_{uuid.uuid4().hex[:8]}", f"citref_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(dsn, autocommit=True) as c:
        try:
            for t in (table, reference):
                _table(c, t)
                c.execute("SELECT create_distributed_table(%s, 'id')", [t])
            result = LoadJob(_spec(path, table, dsn, commit, workers=4)).run()
            assert result.rows_loaded == ROWS
            assert sum(binary_batches) == ROWS - 250
            pl.read_parquet(path).write_csv(tmp_path / "cit.csv")
            copy = sql.SQL("COPY {} FROM STDIN (FORMAT csv, HEADER)").format(sql.Identifier(reference))
            with c.cursor() as cur, cur.copy(copy) as cp:
                cp.write((tmp_path / "cit.csv").read_bytes())
            assert _rows(c, table) == _rows(c, reference)
        finally:
            for t in (table, reference):
                c.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(sql.Identifier(t)))
