"""A table whose key is `GENERATED ALWAYS AS IDENTITY` takes the file's values by every
strategy, as COPY and pg_dump's own `OVERRIDING SYSTEM VALUE` INSERTs put them: INSERT-based
strategies once failed with "cannot insert a non-DEFAULT value into column"."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

from core.load.job import run_load
from core.spec import ErrorPolicy, LoadSpec, SourceOptions, TargetSpec
from core.strategies.catalogue import all_strategies

TABLE_STRATEGIES = [c.id for c in all_strategies() if not c.script_only]
SCRIPT_STRATEGIES = [c.id for c in all_strategies() if c.script_only]


def _identity_table(conn: psycopg.Connection[Any], name: str) -> None:
    conn.execute(sql.SQL("CREATE TABLE {} (id int GENERATED ALWAYS AS IDENTITY PRIMARY KEY, v text)").format(
        sql.Identifier(name)))


def _rows(conn: psycopg.Connection[Any], name: str) -> list[tuple[Any, ...]]:
    return conn.execute(sql.SQL("SELECT id, v FROM {} ORDER BY id").format(sql.Identifier(name))).fetchall()


@pytest.mark.parametrize("strategy", TABLE_STRATEGIES)
@pytest.mark.parametrize("policy", [ErrorPolicy.ABORT, ErrorPolicy.SKIP])
def test_every_strategy_writes_the_files_ids(
    strategy: str, policy: ErrorPolicy, dsn: str, conn: psycopg.Connection[Any],
    table_name: Callable[[str], str], tmp_path: Path,
) -> None:
    path = tmp_path / "ids.csv"
    path.write_text("id,v\n10,a\n20,b\n30,\"c, d\"\n", encoding="utf-8")
    table = table_name("ident")
    _identity_table(conn, table)
    run_load(LoadSpec(source=SourceOptions(path=str(path)), target=TargetSpec(table=table), strategy=strategy,
                      on_error=policy, reject_file=str(tmp_path / "rejects.csv"), dsn=dsn))
    assert _rows(conn, table) == [(10, "a"), (20, "b"), (30, "c, d")]


@pytest.mark.parametrize("strategy", ["auto", *SCRIPT_STRATEGIES])
@pytest.mark.parametrize("on_conflict", [False, True])
def test_pg_dump_inserts_into_an_identity_table(
    strategy: str, on_conflict: bool, dsn: str, conn: psycopg.Connection[Any],
    table_name: Callable[[str], str], tmp_path: Path,
) -> None:
    table = table_name("ident_dump")
    _identity_table(conn, table)
    conn.execute(sql.SQL("INSERT INTO {} (id, v) OVERRIDING SYSTEM VALUE VALUES (20, 'kept')").format(
        sql.Identifier(table)))
    tail = " ON CONFLICT DO NOTHING" if on_conflict else ""
    path = tmp_path / "dump.sql"
    path.write_text("SET client_encoding = 'UTF8';\n" + "".join(
        f"INSERT INTO public.{table} (id, v) OVERRIDING SYSTEM VALUE VALUES ({i}, 'row {i}'){tail};\n"
        for i in (10, 30)), encoding="utf-8")
    run_load(LoadSpec(source=SourceOptions(path=str(path)), target=TargetSpec(table=table), strategy=strategy,
                      dsn=dsn))
    assert _rows(conn, table) == [(10, "row 10"), (20, "kept"), (30, "row 30")]
