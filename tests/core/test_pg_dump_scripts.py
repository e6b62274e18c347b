"""pg_dump's data shapes, dumped by the real pg_dump, loaded with no options and compared exactly."""

from __future__ import annotations

import subprocess
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

from core.load.job import LoadJob, LoadResult
from core.spec import LoadMode, LoadSpec, SourceOptions, TargetSpec

SHAPES = {
    "plain": [],
    "inserts": ["--inserts"],
    "column-inserts": ["--column-inserts"],
    "rows-per-insert": ["--inserts", "--rows-per-insert=7"],
    "on-conflict": ["--column-inserts", "--on-conflict-do-nothing"],
    "rows-per-insert-on-conflict": ["--inserts", "--rows-per-insert=5", "--on-conflict-do-nothing"],
}

DDL = """CREATE TABLE {t} (id integer PRIMARY KEY, t text, d date, ts timestamptz, n numeric, f float8,
    b boolean, bits bit(3), j jsonb, v varchar(20))"""
# Values that trip parsers: quotes, ", " and "),\n\t(" inside strings, ";\n", comments and
# dollar quotes inside strings, backslashes, tabs, emoji, NULL vs '', NaN and infinities.
FILL = r"""INSERT INTO {t}
SELECT i,
  CASE i % 12 WHEN 0 THEN NULL WHEN 1 THEN '' WHEN 2 THEN 'it''s, a '', b' WHEN 3 THEN E'line\nnext;\nINSERT INTO x VALUES (1);'
    WHEN 4 THEN E'tab\there \\ back\\slash' WHEN 5 THEN 'x),' || E'\n\t' || '(y' WHEN 6 THEN '-- not a comment /* nor this'
    WHEN 7 THEN '$$dollar$$ ''q''' WHEN 8 THEN 'émoji 🎉 ünïcode' WHEN 9 THEN 'NULL' WHEN 10 THEN repeat('long ', 2000)
    ELSE 'plain ' || i END,
  CASE WHEN i % 7 = 0 THEN NULL ELSE date '2020-02-28' + i END,
  timestamptz '2021-03-01 12:00:00+00' + i * interval '1 hour 7 seconds',
  CASE i % 5 WHEN 0 THEN 'NaN' WHEN 1 THEN NULL ELSE (i * 1.25)::numeric END,
  CASE i % 6 WHEN 0 THEN 'Infinity' WHEN 1 THEN '-Infinity' WHEN 2 THEN -1.5e-300 ELSE i / 3.0 END,
  CASE WHEN i % 4 = 0 THEN NULL ELSE i % 2 = 0 END,
  CASE WHEN i % 9 = 0 THEN NULL ELSE (i % 8)::bit(3) END,
  CASE WHEN i % 3 = 0 THEN NULL ELSE jsonb_build_object('k', i, 's', 'a''b, c') END,
  'v' || (i % 100)
FROM generate_series(1, {n}) AS i"""


def make_source(conn: psycopg.Connection[Any], name: str, rows: int) -> None:
    conn.execute(sql.SQL(DDL).format(t=sql.Identifier(name)))  # type: ignore[arg-type]
    conn.execute(sql.SQL(FILL).format(t=sql.Identifier(name), n=sql.Literal(rows)))  # type: ignore[arg-type]


def pg_dump(dsn: str, tables: list[str], args: list[str]) -> bytes:
    cmd = ["pg_dump", f"--dbname={dsn}", "--data-only", *[f"--table={t}" for t in tables], *args]
    return subprocess.run(cmd, check=True, capture_output=True).stdout


@pytest.fixture(scope="module")
def dumps(dump_server: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, bytes]]:
    """Each shape of a dump of one 300-row table named `src_x`, as bytes."""
    name = f"sluice_dump_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(dump_server, autocommit=True) as c:
        make_source(c, name, 300)
        try:
            yield {shape: pg_dump(dump_server, [name], args).replace(name.encode(), b"src_x")
                   for shape, args in SHAPES.items()}
        finally:
            c.execute(sql.SQL("DROP TABLE {}").format(sql.Identifier(name)))


def load(dsn: str, path: Path, strategy: str = "copy-csv", table: str | None = None,
         script_table: str | None = None) -> LoadResult:
    spec = LoadSpec(SourceOptions(str(path), script_table=script_table), TargetSpec(table or "src_x"),
                    strategy=strategy, dsn=dsn)
    return LoadJob(spec).run()


def differences(conn: psycopg.Connection[Any], a: str, b: str) -> int:
    q = sql.SQL("SELECT (SELECT count(*) FROM (TABLE {a} EXCEPT ALL TABLE {b}) x) "
                "+ (SELECT count(*) FROM (TABLE {b} EXCEPT ALL TABLE {a}) y)").format(
        a=sql.Identifier(a), b=sql.Identifier(b))
    row = conn.execute(q).fetchone()
    assert row is not None
    return int(row[0])


@pytest.fixture
def pair(conn: psycopg.Connection[Any], table_name: Callable[[str], str]) -> tuple[str, str]:
    """(reference table filled by SQL, empty target) in the server under test."""
    ref, target = table_name("ref"), table_name("tgt")
    make_source(conn, ref, 300)
    conn.execute(sql.SQL(DDL).format(t=sql.Identifier(target)))  # type: ignore[arg-type]
    return ref, target


def _write(tmp_path: Path, data: bytes, target: str, name: str = "dump.sql") -> Path:
    p = tmp_path / name
    p.write_bytes(data.replace(b"public.src_x", b"public." + target.encode()))
    return p


@pytest.mark.parametrize("shape", list(SHAPES))
def test_every_shape_loads_exactly_with_no_options(
    shape: str, dumps: dict[str, bytes], dsn: str, conn: psycopg.Connection[Any], pair: tuple[str, str],
    tmp_path: Path,
) -> None:
    ref, target = pair
    path = _write(tmp_path, dumps[shape], target)
    result = load(dsn, path, table=target)
    assert (result.rows_read, result.rows_loaded, result.rows_dropped) == (300, 300, 0)
    assert differences(conn, ref, target) == 0


@pytest.mark.parametrize("strategy", ["script-autocommit", "script-transaction", "script-do-block"])
@pytest.mark.parametrize("shape", ["plain", "rows-per-insert", "on-conflict"])
def test_script_strategies_on_every_shape(
    shape: str, strategy: str, dumps: dict[str, bytes], dsn: str, conn: psycopg.Connection[Any],
    pair: tuple[str, str], tmp_path: Path,
) -> None:
    ref, target = pair
    path = _write(tmp_path, dumps[shape], target)
    result = load(dsn, path, strategy=strategy, table=target)
    assert result.rows_loaded == 300
    assert differences(conn, ref, target) == 0


@pytest.mark.parametrize("shape", ["on-conflict", "rows-per-insert-on-conflict"])
def test_on_conflict_keeps_existing_rows_and_counts_the_dropped(
    shape: str, dumps: dict[str, bytes], dsn: str, conn: psycopg.Connection[Any], pair: tuple[str, str],
    tmp_path: Path,
) -> None:
    ref, target = pair
    conn.execute(sql.SQL("INSERT INTO {} (id, t) SELECT i, 'kept' FROM generate_series(1, 300, 3) i").format(
        sql.Identifier(target)))
    path = _write(tmp_path, dumps[shape], target)
    result = load(dsn, path, table=target)
    assert (result.rows_read, result.rows_loaded, result.rows_dropped) == (300, 200, 100)
    kept = conn.execute(sql.SQL("SELECT count(*) FROM {} WHERE t = 'kept'").format(sql.Identifier(target))).fetchone()
    assert kept == (100,)
    # Every other row is exactly the dump's.
    q = sql.SQL("SELECT count(*) FROM (SELECT * FROM {r} WHERE id % 3 <> 1 EXCEPT ALL "
                "SELECT * FROM {t} WHERE t IS DISTINCT FROM 'kept') x").format(
        r=sql.Identifier(ref), t=sql.Identifier(target))
    assert conn.execute(q).fetchone() == (0,)


def test_whole_database_dump_lists_tables_and_loads_all_or_one(
    dump_server: str, dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path,
) -> None:
    from core.sources.sqlscript.source import SqlScriptSource

    a, b = f"sluice_a_{uuid.uuid4().hex[:6]}", f"sluice_b_{uuid.uuid4().hex[:6]}"
    with psycopg.connect(dump_server, autocommit=True) as c:
        make_source(c, a, 40)
        make_source(c, b, 25)
        try:
            plain = pg_dump(dump_server, [a, b], [])
            inserts = pg_dump(dump_server, [a, b], ["--inserts"])
        finally:
            c.execute(sql.SQL("DROP TABLE {}, {}").format(sql.Identifier(a), sql.Identifier(b)))
    ta, tb = table_name("ta"), table_name("tb")
    ref_a, ref_b = table_name("ra"), table_name("rb")
    make_source(conn, ref_a, 40)
    make_source(conn, ref_b, 25)
    for t in (ta, tb):
        conn.execute(sql.SQL(DDL).format(t=sql.Identifier(t)))  # type: ignore[arg-type]
    for n, data in enumerate((plain, inserts)):
        path = tmp_path / f"db{n}.sql"
        path.write_bytes(data.replace(a.encode(), ta.encode()).replace(b.encode(), tb.encode()))
        source = SqlScriptSource(SourceOptions(str(path)))
        assert sorted((t.target.table, t.rows) for t in source.tables) == sorted([(ta, 40), (tb, 25)])
        result = load(dsn, path, table=source.target.table)
        assert result.rows_loaded == 65
        assert differences(conn, ref_a, ta) == 0 and differences(conn, ref_b, tb) == 0
        # One table only, by name; the other is left alone.
        conn.execute(sql.SQL("TRUNCATE {}, {}").format(sql.Identifier(ta), sql.Identifier(tb)))
        result = load(dsn, path, table=tb, script_table=f"public.{tb}")
        assert result.rows_loaded == 25
        assert differences(conn, ref_b, tb) == 0
        assert conn.execute(sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(ta))).fetchone() == (0,)
        conn.execute(sql.SQL("TRUNCATE {}").format(sql.Identifier(tb)))


def test_all_or_nothing_across_tables(
    dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path
) -> None:
    """A bad row in the second table rolls back the first; the error names the line."""
    ta, tb = table_name("ta"), table_name("tb")
    conn.execute(sql.SQL("CREATE TABLE {} (a int)").format(sql.Identifier(ta)))
    conn.execute(sql.SQL("CREATE TABLE {} (a int)").format(sql.Identifier(tb)))
    path = tmp_path / "two.sql"
    path.write_text(
        f"SET statement_timeout = 0;\nCOPY public.{ta} (a) FROM stdin;\n1\n2\n\\.\n\n"
        f"INSERT INTO public.{tb} VALUES (1);\nINSERT INTO public.{tb} VALUES ('x');\n"
    )
    from core.errors import BadRowError

    with pytest.raises(BadRowError) as err:
        load(dsn, path, table=ta)
    assert err.value.problem.line == 8
    for t in (ta, tb):
        assert conn.execute(sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(t))).fetchone() == (0,)


@pytest.mark.parametrize("shape", ["plain", "rows-per-insert", "on-conflict"])
def test_compare_lab_runs_the_script_strategies_on_a_real_dump(
    shape: str, dumps: dict[str, bytes], dsn: str, conn: psycopg.Connection[Any], pair: tuple[str, str],
    tmp_path: Path,
) -> None:
    """Seed 004's comparison on a pg_dump file: every script strategy and COPY, target untouched."""
    from core.lab.compare import CompareSpec, run_compare

    _ref, target = pair
    path = _write(tmp_path, dumps[shape], target)
    base = LoadSpec(SourceOptions(str(path)), TargetSpec(target), dsn=dsn)
    strategies = ["script-autocommit", "script-transaction", "script-do-block", "copy-csv"]
    report = run_compare(CompareSpec(base, strategies, batch_rows=[100], repeat=1, sample_rows=120))
    assert sorted(r.strategy for r in report.results) == sorted(strategies)
    for r in report.results:
        assert r.error is None and r.rows == 120, (r.strategy, r.error)
    assert conn.execute(sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(target))).fetchone() == (0,)


def test_cli_table_on_a_script_of_several_tables_needs_a_pick(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from app.cli import main

    path = tmp_path / "two.sql"
    path.write_text("COPY public.a (k) FROM stdin;\n1\n\\.\nINSERT INTO public.b VALUES (1);\n")
    assert main(["load", str(path), "--table", "x", "--dsn", "host=127.0.0.1 port=1"]) == 2
    err = capsys.readouterr().err
    assert "fills 2 tables" in err and "public.a (1 rows)" in err and "--script-table" in err


def test_truncate_empties_tables_linked_by_a_foreign_key_together(
    dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path
) -> None:
    """Mode truncate on a script of two tables, one referencing the other: one TRUNCATE for both, in the load's
    transaction (a TRUNCATE of the referenced table alone is refused by the server)."""
    parent, child = table_name("parent"), table_name("child")
    conn.execute(sql.SQL("CREATE TABLE {} (id int PRIMARY KEY, name text)").format(sql.Identifier(parent)))
    conn.execute(sql.SQL("CREATE TABLE {} (id int PRIMARY KEY, parent_id int REFERENCES {})").format(
        sql.Identifier(child), sql.Identifier(parent)))
    conn.execute(sql.SQL("INSERT INTO {} VALUES (1, 'old'), (2, 'old')").format(sql.Identifier(parent)))
    conn.execute(sql.SQL("INSERT INTO {} VALUES (10, 1), (11, 2)").format(sql.Identifier(child)))
    path = tmp_path / "linked.sql"
    path.write_text(
        f"SET statement_timeout = 0;\nCOPY public.{parent} (id, name) FROM stdin;\n5\tnew\n6\tnew\n7\tnew\n\\.\n\n"
        f"COPY public.{child} (id, parent_id) FROM stdin;\n20\t5\n21\t7\n\\.\n\n"
    )
    spec = LoadSpec(SourceOptions(str(path)), TargetSpec(parent, mode=LoadMode.TRUNCATE), strategy="auto", dsn=dsn)
    result = LoadJob(spec).run()
    assert result.rows_loaded == 5
    assert conn.execute(sql.SQL("SELECT array_agg(id ORDER BY id) FROM {}").format(
        sql.Identifier(parent))).fetchone() == ([5, 6, 7],)
    assert conn.execute(sql.SQL("SELECT array_agg(id ORDER BY id) FROM {}").format(
        sql.Identifier(child))).fetchone() == ([20, 21],)
