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
from core.job import run_load
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
