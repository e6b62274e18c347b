"""Invariant 3 (abort leaves the table as it was, naming line and column), load modes, sources."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import polars as pl
import psycopg
import pytest
from psycopg import sql

from core.errors import BadRowError, ConfigError
from core.load.job import LoadJob
from core.spec import ColumnMap, LoadMode, LoadSpec, SourceOptions, TargetSpec
from core.strategies.catalogue import all_strategies

TABLE_STRATEGIES = [c.id for c in all_strategies() if not c.script_only]


def _rows(conn: psycopg.Connection[Any], table: str) -> list[tuple[Any, ...]]:
    return conn.execute(sql.SQL("SELECT * FROM {} ORDER BY 1").format(sql.Identifier(table))).fetchall()


@pytest.mark.parametrize("strategy", TABLE_STRATEGIES)
def test_bad_row_aborts_and_names_line_column_value(
    strategy: str, dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path
) -> None:
    path = tmp_path / "bad.csv"
    path.write_text('a,b,c\n1,x,"multi\nline"\n2,y,z\n3,"q",w\n4x,r,s\n5,t,u\n', encoding="utf-8")
    table = table_name("abort")
    conn.execute(sql.SQL("CREATE TABLE {} (a int, b text, c text)").format(sql.Identifier(table)))
    conn.execute(sql.SQL("INSERT INTO {} VALUES (99, 'keep', 'me')").format(sql.Identifier(table)))
    spec = LoadSpec(SourceOptions(str(path)), TargetSpec(table), strategy=strategy, batch_rows=2, dsn=dsn)
    with pytest.raises(BadRowError) as err:
        LoadJob(spec).run()
    p = err.value.problem
    assert (p.line, p.column, p.value) == (6, "a", "4x")
    assert "integer" in p.reason and str(path) in str(err.value)
    assert _rows(conn, table) == [(99, "keep", "me")]


@pytest.mark.parametrize("strategy", ["copy-csv", "row-autocommit", "parallel-copy", "unnest"])
def test_load_modes(
    strategy: str, dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path
) -> None:
    path = tmp_path / "m.csv"
    path.write_text("id,name,score\n1,a,1.5\n2,b,2.5\n3,c,\n", encoding="utf-8")
    table = table_name("Mixed \"Case\".name")  # quotes, dot and space are part of the name
    ident = sql.Identifier(table)

    def load(mode: LoadMode, file: Path = path) -> int:
        spec = LoadSpec(SourceOptions(str(file)), TargetSpec(table, mode=mode, key=["id"]), strategy=strategy, dsn=dsn)
        return LoadJob(spec).run().rows_loaded

    assert load(LoadMode.CREATE) == 3
    types = dict(conn.execute(
        "SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = to_regclass(%s)"
        " AND attnum > 0", (ident.as_string(conn),)).fetchall())
    assert types == {"id": "integer", "name": "text", "score": "numeric"}  # numeric keeps decimals as written
    with pytest.raises(ConfigError):
        load(LoadMode.CREATE)
    load(LoadMode.APPEND)
    assert len(_rows(conn, table)) == 6
    load(LoadMode.TRUNCATE)
    assert _rows(conn, table) == [(1, "a", 1.5), (2, "b", 2.5), (3, "c", None)]
    conn.execute(sql.SQL("ALTER TABLE {} ADD PRIMARY KEY (id)").format(ident))
    upd = tmp_path / "u.csv"
    upd.write_text("id,name,score\n2,B,20\n4,d,4\n", encoding="utf-8")
    load(LoadMode.UPSERT, upd)
    assert _rows(conn, table) == [(1, "a", 1.5), (2, "B", 20.0), (3, "c", None), (4, "d", 4.0)]


def test_create_failure_drops_the_new_table(
    dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path
) -> None:
    path = tmp_path / "late.csv"
    path.write_text("n\n" + "\n".join(str(i) for i in range(1000)) + "\nnot-a-number\n", encoding="utf-8")
    table = table_name("late")
    # The user's own type for the column (an inferred one would widen to text and load): the last
    # row breaks the load, which must leave no table.
    spec = LoadSpec(SourceOptions(str(path)), TargetSpec(table, mode=LoadMode.CREATE), strategy="copy-csv", dsn=dsn,
                    columns=[ColumnMap("n", "n", "integer")])
    with pytest.raises(BadRowError):
        LoadJob(spec).run()
    assert conn.execute("SELECT to_regclass(%s)", (table,)).fetchone() == (None,)


@pytest.mark.parametrize("fmt", ["parquet", "ndjson", "json", "excel", "tsv"])
def test_each_source_format(
    fmt: str, dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path
) -> None:
    df = pl.DataFrame({"id": [1, 2, 3], "name": ["a", None, "c é"], "price": [1.5, 2.0, None], "ok": [True, False, None]})
    path = tmp_path / f"data.{ {'excel': 'xlsx', 'tsv': 'tsv'}.get(fmt, fmt)}"
    if fmt == "parquet":
        df.write_parquet(path)
    elif fmt == "ndjson":
        df.write_ndjson(path)
    elif fmt == "json":
        df.write_json(path)
    elif fmt == "excel":
        df.write_excel(path)
    else:
        df.write_csv(path, separator="\t")
    table = table_name(fmt)
    spec = LoadSpec(SourceOptions(str(path)), TargetSpec(table, mode=LoadMode.CREATE), strategy="copy-csv", dsn=dsn)
    assert LoadJob(spec).run().rows_loaded == 3
    got = conn.execute(sql.SQL("SELECT id, name, price, ok FROM {} ORDER BY id").format(sql.Identifier(table)))
    rows = got.fetchall()
    assert [r[0] for r in rows] == [1, 2, 3]
    assert rows[1][1] is None and rows[2][1] == "c é"
    assert rows[0][2] == 1.5 and rows[2][2] is None
    assert rows[0][3] is True and rows[1][3] is False


@pytest.mark.parametrize("strategy", ["row-transaction", "copy-csv", "parallel-copy", "row-autocommit"])
def test_cancel_midway_leaves_the_table_unchanged(
    strategy: str, dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import core.load.context
    import core.sources.csv.source
    from core.cancel import CancelToken
    from core.errors import Cancelled
    from core.events import Phase, Progress

    path = tmp_path / "many.csv"
    path.write_text("n,s\n" + "".join(f"{i},row {i}\n" for i in range(200_000)), encoding="utf-8")
    table = table_name("cancel")
    conn.execute(sql.SQL("CREATE TABLE {} (n int, s text)").format(sql.Identifier(table)))
    # Small chunks and unthrottled events, so "midway" is reached deterministically.
    monkeypatch.setattr(core.sources.csv.source, "CHUNK_BYTES", 64 * 1024)
    monkeypatch.setattr(core.load.context, "PROGRESS_EVERY_S", 0.0)
    token = CancelToken()
    seen: list[Progress] = []

    def on_progress(p: Progress) -> None:
        seen.append(p)
        if p.phase is Phase.LOADING and p.rows_read > 0:
            token.cancel()

    spec = LoadSpec(SourceOptions(str(path)), TargetSpec(table), strategy=strategy, batch_rows=1000, dsn=dsn)
    with pytest.raises(Cancelled):
        LoadJob(spec, on_progress=on_progress, cancel=token).run()
    assert _rows(conn, table) == []
    assert seen[-1].phase is Phase.CANCELLED
    leftovers = conn.execute("SELECT count(*) FROM pg_class WHERE relname LIKE '\\_sluice\\_stage\\_%'").fetchone()
    assert leftovers == (0,)


@pytest.mark.parametrize("strategy", ["copy-csv", "executemany"])
def test_an_upsert_file_giving_one_key_twice_says_which_key(
    strategy: str, dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path
) -> None:
    """The server says only "ON CONFLICT DO UPDATE command cannot affect row a second time"
    (found by a QA pass); the message names the key, and the table is left as it was."""
    from core.errors import SluiceError

    src = tmp_path / "up.csv"
    src.write_text("id,v\n1,one\n7,first\n7,second\n", encoding="utf-8")
    table = table_name("updup")
    conn.execute(sql.SQL("CREATE TABLE {} (id int PRIMARY KEY, v text)").format(sql.Identifier(table)))
    conn.execute(sql.SQL("INSERT INTO {} VALUES (1, 'kept')").format(sql.Identifier(table)))
    spec = LoadSpec(source=SourceOptions(path=str(src)), target=TargetSpec(table=table, mode=LoadMode.UPSERT,
                                                                            key=["id"]), strategy=strategy, dsn=dsn)
    with pytest.raises(SluiceError) as err:
        LoadJob(spec).run()
    assert "the key (id = 7) comes 2 times in the file" in str(err.value)
    assert _rows(conn, table) == [(1, "kept")]
