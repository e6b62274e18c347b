"""A script's columns against the table it fills: a column the table lacks is refused (psql refuses
it too), where the load once dropped its values in silence; a generated column, which pg_dump's
`--inserts` write as DEFAULT, takes its place in the order and is computed by the server."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

from core.errors import ConfigError
from core.load.job import run_load
from core.spec import LoadSpec, SourceOptions, TargetSpec

_SHAPES = {
    "plain": "COPY public.{t} (id, a, b) FROM stdin;\n1\tx\ty\n2\tz\tw\n\\.\n",
    "column-inserts": "INSERT INTO public.{t} (id, a, b) VALUES (1, 'x', 'y');\nINSERT INTO public.{t} (id, a, b) "
                      "VALUES (2, 'z', 'w');\n",
    "inserts": "INSERT INTO public.{t} VALUES (1, 'x', 'y');\nINSERT INTO public.{t} VALUES (2, 'z', 'w');\n",
}


@pytest.mark.parametrize("shape", list(_SHAPES))
def test_a_column_the_table_lacks_is_refused_not_dropped(
    shape: str, dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path
) -> None:
    table = table_name("drift")
    conn.execute(sql.SQL("CREATE TABLE {} (id int, a text)").format(sql.Identifier(table)))
    path = tmp_path / "drift.sql"
    path.write_text(_SHAPES[shape].format(t=table), encoding="utf-8")
    with pytest.raises(ConfigError, match="psql refuses such rows too"):
        run_load(LoadSpec(source=SourceOptions(path=str(path)), target=TargetSpec(table=table), dsn=dsn))
    assert conn.execute(sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(table))).fetchone() == (0,)


@pytest.mark.parametrize("shape", list(_SHAPES))
def test_the_same_script_loads_into_a_table_that_has_the_column(
    shape: str, dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path
) -> None:
    table = table_name("drift_ok")
    conn.execute(sql.SQL("CREATE TABLE {} (id int, a text, b text)").format(sql.Identifier(table)))
    path = tmp_path / "drift.sql"
    path.write_text(_SHAPES[shape].format(t=table), encoding="utf-8")
    run_load(LoadSpec(source=SourceOptions(path=str(path)), target=TargetSpec(table=table), dsn=dsn))
    got = conn.execute(sql.SQL("SELECT id, a, b FROM {} ORDER BY id").format(sql.Identifier(table))).fetchall()
    assert got == [(1, "x", "y"), (2, "z", "w")]


def test_a_generated_column_written_as_default_is_left_to_the_server(
    dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path
) -> None:
    """pg_dump --inserts: `INSERT INTO t VALUES (1, 5, DEFAULT)` for `b GENERATED ALWAYS AS (a * 2)`."""
    table = table_name("gen")
    conn.execute(sql.SQL("CREATE TABLE {} (id int, a int, b int GENERATED ALWAYS AS (a * 2) STORED, c text)")
                 .format(sql.Identifier(table)))
    path = tmp_path / "gen.sql"
    path.write_text("".join(f"INSERT INTO public.{table} VALUES ({i}, {i * 10}, DEFAULT, 'r{i}');\n"
                            for i in range(1, 4)), encoding="utf-8")
    run_load(LoadSpec(source=SourceOptions(path=str(path)), target=TargetSpec(table=table), dsn=dsn))
    got = conn.execute(sql.SQL("SELECT id, a, b, c FROM {} ORDER BY id").format(sql.Identifier(table))).fetchall()
    assert got == [(1, 10, 20, "r1"), (2, 20, 40, "r2"), (3, 30, 60, "r3")]


def test_default_for_a_column_that_is_not_generated_is_refused_with_its_line(
    dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path
) -> None:
    from core.errors import SluiceError

    table = table_name("dflt")
    conn.execute(sql.SQL("CREATE TABLE {} (id int, a int DEFAULT 7)").format(sql.Identifier(table)))
    path = tmp_path / "dflt.sql"
    path.write_text(f"INSERT INTO public.{table} VALUES (1, 1);\nINSERT INTO public.{table} VALUES (2, DEFAULT);\n",
                    encoding="utf-8")
    with pytest.raises(SluiceError) as err:
        run_load(LoadSpec(source=SourceOptions(path=str(path)), target=TargetSpec(table=table), dsn=dsn))
    assert "line 2" in str(err.value) and "DEFAULT where a value belongs" in str(err.value)
    assert conn.execute(sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(table))).fetchone() == (0,)


def test_several_tables_one_with_a_generated_column_say_to_load_it_alone(
    dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path
) -> None:
    plain, gen = table_name("plain"), table_name("gen2")
    conn.execute(sql.SQL("CREATE TABLE {} (id int)").format(sql.Identifier(plain)))
    conn.execute(sql.SQL("CREATE TABLE {} (a int, b int GENERATED ALWAYS AS (a + 1) STORED)").format(
        sql.Identifier(gen)))
    path = tmp_path / "two.sql"
    path.write_text(f"INSERT INTO public.{plain} VALUES (1);\nINSERT INTO public.{gen} VALUES (1, DEFAULT);\n",
                    encoding="utf-8")
    with pytest.raises(ConfigError, match="load that table on its own"):
        run_load(LoadSpec(source=SourceOptions(path=str(path)), target=TargetSpec(table=""), dsn=dsn))
    only = LoadSpec(source=SourceOptions(path=str(path), script_table=f"public.{gen}"), target=TargetSpec(table=gen),
                    dsn=dsn)
    run_load(only)
    assert conn.execute(sql.SQL("SELECT a, b FROM {}").format(sql.Identifier(gen))).fetchall() == [(1, 2)]


@pytest.mark.parametrize("shape", ["plain", "inserts"])
def test_a_disable_triggers_dump_loads_with_the_tables_triggers_off_then_on(
    shape: str, dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path
) -> None:
    """pg_dump --disable-triggers: a child row whose parent comes later (or never) loads, as psql
    loads it, and the triggers are on again afterwards."""
    parent, child = table_name("parent"), table_name("child")
    conn.execute(sql.SQL("CREATE TABLE {} (id int PRIMARY KEY)").format(sql.Identifier(parent)))
    conn.execute(sql.SQL("CREATE TABLE {} (id int, p int REFERENCES {})").format(
        sql.Identifier(child), sql.Identifier(parent)))
    rows = "COPY public.{t} (id, p) FROM stdin;\n1\t42\n\\.\n" if shape == "plain" else \
        "INSERT INTO public.{t} VALUES (1, 42);\n"
    path = tmp_path / "child.sql"
    path.write_text(f"ALTER TABLE public.{child} DISABLE TRIGGER ALL;\n\n" + rows.format(t=child)
                    + f"\nALTER TABLE public.{child} ENABLE TRIGGER ALL;\n", encoding="utf-8")
    run_load(LoadSpec(source=SourceOptions(path=str(path)), target=TargetSpec(table=child), dsn=dsn))
    assert conn.execute(sql.SQL("SELECT id, p FROM {}").format(sql.Identifier(child))).fetchall() == [(1, 42)]
    off = conn.execute("SELECT count(*) FROM pg_trigger WHERE tgrelid = %s::regclass AND tgenabled = 'D'",
                       [child]).fetchone()
    assert off == (0,)
    conn.execute(sql.SQL("DROP TABLE {}").format(sql.Identifier(child)))  # before its parent, which it references
