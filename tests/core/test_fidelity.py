"""Invariant 2: every strategy stores the same values as parameterised INSERTs do."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

from core.load.job import LoadJob
from core.spec import ColumnMap, LoadSpec, SourceOptions, TargetSpec
from core.strategies.catalogue import all_strategies
from tests.core import tricky

TABLE_STRATEGIES = [c.id for c in all_strategies() if not c.script_only]
SCRIPT_STRATEGIES = [c.id for c in all_strategies() if c.script_only]


def _load(dsn: str, path: Path, table: str, strategy: str, **kw: Any) -> Any:
    spec = LoadSpec(
        source=SourceOptions(path=str(path)),
        target=TargetSpec(table=table),
        strategy=strategy,
        batch_rows=kw.pop("batch_rows", 5),
        dsn=dsn,
        **kw,
    )
    return LoadJob(spec).run()


def _count(conn: psycopg.Connection[Any], table: str) -> int:
    row = conn.execute(sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(table))).fetchone()
    assert row is not None
    return int(row[0])


@pytest.fixture
def reference(conn: psycopg.Connection[Any], table_name: Callable[[str], str]) -> str:
    ref = table_name("ref")
    tricky.fill_reference(conn, ref)
    return ref


@pytest.mark.parametrize("strategy", TABLE_STRATEGIES)
def test_csv_round_trips_through_every_strategy(
    strategy: str, dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], reference: str,
    tmp_path: Path,
) -> None:
    path = tricky.write_csv(tmp_path / "tricky.csv")
    target = table_name("load")
    conn.execute(tricky.create_sql(target))
    result = _load(dsn, path, target, strategy)
    n = len(tricky.rows())
    assert (result.rows_read, result.rows_loaded, result.rows_rejected) == (n, n, 0)
    assert _count(conn, target) == n
    assert tricky.diff_count(conn, reference, target) == (0, 0)


@pytest.mark.parametrize("strategy", ["copy-csv", "parallel-copy", "unnest"])
def test_mapped_csv_takes_the_parsing_path(
    strategy: str, dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], reference: str,
    tmp_path: Path,
) -> None:
    """A renamed, reordered mapping cannot pass the file's bytes through: polars formats the batches."""
    path = tricky.write_plain_csv(tmp_path / "plain.csv")
    target = table_name("mapped")
    conn.execute(tricky.create_sql(target))
    maps = [ColumnMap(target=n, source=n, type=t) for n, t in reversed(tricky.COLUMNS)]
    spec = LoadSpec(
        source=SourceOptions(path=str(path), null="NA"), target=TargetSpec(table=target), strategy=strategy,
        batch_rows=4, dsn=dsn, columns=maps,
    )
    result = LoadJob(spec).run()
    assert result.rows_loaded == len(tricky.rows())
    assert tricky.diff_count(conn, reference, target) == (0, 0)


@pytest.mark.parametrize("strategy", [*SCRIPT_STRATEGIES, "copy-csv", "copy-binary", "unnest"])
def test_insert_script_round_trips(
    strategy: str, dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], reference: str,
    tmp_path: Path,
) -> None:
    target = table_name("script")
    conn.execute(tricky.create_sql(target))
    path = tricky.write_insert_script(tmp_path / "inserts.sql", conn, target)
    result = _load(dsn, path, target, strategy)
    assert result.rows_loaded == len(tricky.rows()) == _count(conn, target)
    assert tricky.diff_count(conn, reference, target) == (0, 0)
