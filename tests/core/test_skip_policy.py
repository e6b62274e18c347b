"""The skip policy: bad rows go to the reject file with line and reason; all others load."""

from __future__ import annotations

import csv
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

from core.errors import TooManyRejects
from core.load.job import LoadJob
from core.spec import ErrorPolicy, LoadSpec, SourceOptions, TargetSpec
from core.strategies.catalogue import all_strategies

SKIP_STRATEGIES = [c.id for c in all_strategies() if not c.script_only and not c.multi_connection] + [
    "connection-per-row"
]


def _setup(conn: psycopg.Connection[Any], table: str, tmp_path: Path) -> Path:
    conn.execute(sql.SQL("CREATE TABLE {} (id int PRIMARY KEY, qty int NOT NULL CHECK (qty >= 0), note text)").format(
        sql.Identifier(table)))
    lines = ["id,qty,note"]
    for i in range(1, 41):
        qty = {7: "seven", 13: "-1", 21: "", 30: "5"}.get(i, str(i))
        ident = "12" if i == 30 else str(i)  # row 30 repeats the key of row 12
        lines.append(f'{ident},{qty},"note {i}"')
    path = tmp_path / "dirty.csv"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize("strategy", sorted(set(SKIP_STRATEGIES)))
def test_skip_isolates_bad_rows(
    strategy: str, dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path
) -> None:
    table = table_name("skip")
    path = _setup(conn, table, tmp_path)
    reject_file = tmp_path / "rejects.csv"
    spec = LoadSpec(SourceOptions(str(path)), TargetSpec(table), strategy=strategy, batch_rows=8, dsn=dsn,
                    on_error=ErrorPolicy.SKIP, reject_file=str(reject_file))
    result = LoadJob(spec).run()
    assert (result.rows_read, result.rows_loaded, result.rows_rejected) == (40, 36, 4)
    assert result.rows_read == result.rows_loaded + result.rows_rejected
    count = conn.execute(sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(table))).fetchone()
    assert count == (36,)
    with open(reject_file, encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert [int(r["line"]) for r in rows] == [8, 14, 22, 31]
    by_line = {int(r["line"]): r for r in rows}
    assert by_line[8]["column"] == "qty" and by_line[8]["value"] == "seven" and "integer" in by_line[8]["reason"]
    assert "check" in by_line[14]["reason"]
    assert "null" in by_line[22]["reason"].lower()
    assert "duplicate" in by_line[31]["reason"] and by_line[31]["record"] == '12,5,"note 30"'
    assert result.reject_file == str(reject_file)


def test_reject_limit_aborts_and_leaves_the_table(
    dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path
) -> None:
    table = table_name("limit")
    path = _setup(conn, table, tmp_path)
    spec = LoadSpec(SourceOptions(str(path)), TargetSpec(table), strategy="copy-csv", batch_rows=8, dsn=dsn,
                    on_error=ErrorPolicy.SKIP, reject_file=str(tmp_path / "r.csv"), reject_limit=2)
    with pytest.raises(TooManyRejects):
        LoadJob(spec).run()
    assert conn.execute(sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(table))).fetchone() == (0,)
