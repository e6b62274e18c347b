"""Check before loading (dry run), name-only mapping, preview checks and table sizes."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

from core import preview
from core.db import Column, TableRef
from core.job import LoadJob
from core.mapping import match_by_name, unmatched
from core.preview import first_rows, inspect_source, sample_warnings, table_size
from core.spec import ColumnMap, CommitMode, ErrorPolicy, LoadMode, LoadSpec, SourceOptions, TargetSpec


def _count(conn: psycopg.Connection[Any], table: str) -> int:
    row = conn.execute(sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(table))).fetchone()
    assert row is not None
    return int(row[0])


def _csv(path: Path, body: str) -> str:
    path.write_text(body, encoding="utf-8")
    return str(path)


@pytest.mark.parametrize(
    ("strategy", "commit"),
    [("copy-csv", "single"), ("unnest", "per-batch"), ("row-autocommit", "single"), ("parallel-copy", "single")],
)
@pytest.mark.parametrize("mode", ["append", "truncate"])
def test_dry_run_leaves_the_table_as_it_was(
    dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path,
    strategy: str, commit: str, mode: str,
) -> None:
    table = table_name("dry")
    conn.execute(sql.SQL("CREATE TABLE {} (id integer, name text)").format(sql.Identifier(table)))
    conn.execute(sql.SQL("INSERT INTO {} VALUES (-1, 'old')").format(sql.Identifier(table)))
    src = _csv(tmp_path / "d.csv", "id,name\n" + "".join(f"{i},n{i}\n" for i in range(300)))
    spec = LoadSpec(SourceOptions(src), TargetSpec(table, mode=LoadMode(mode)), strategy=strategy, batch_rows=50,
                    commit=CommitMode(commit), dsn=dsn)
    result = LoadJob(spec, dry_run=True).run()
    assert result.rows_loaded == 300
    assert _count(conn, table) == 1


def test_dry_run_create_and_skip_reports_rejects(
    dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path,
) -> None:
    table = table_name("dryc")
    src = _csv(tmp_path / "b.csv", "id,name\n1,a\nx9,b\n3,c\n")
    spec = LoadSpec(SourceOptions(src), TargetSpec(table, mode=LoadMode.CREATE), strategy="unnest",
                    on_error=ErrorPolicy.SKIP, reject_file=str(tmp_path / "r.csv"), dsn=dsn,
                    columns=[ColumnMap("id", "id", "integer"), ColumnMap("name", "name", "text")])
    result = LoadJob(spec, dry_run=True).run()
    assert (result.rows_loaded, result.rows_rejected) == (2, 1)
    assert "x9" in Path(str(result.reject_file)).read_text()
    assert table_size(dsn, TableRef(table)) is None  # the check made the table and dropped it


def test_match_by_name_ignores_case_and_spaces_never_position() -> None:
    cols = [Column("year", "integer"), Column("dep_time", "integer"), Column("carrier", "text")]
    maps = match_by_name(["Dep Time", "YEAR", "name"], cols)
    assert [(m.source, m.target, m.type) for m in maps] == [
        ("Dep Time", "dep_time", "integer"), ("YEAR", "year", "integer"), ("name", "name", "text")]
    assert [m.source for m in unmatched(maps, cols)] == ["name"]
    maps[2].include = False
    assert unmatched(maps, cols) == []
    assert unmatched(maps, None) == []


def test_preview_keeps_bad_records_and_checks_types(tmp_path: Path) -> None:
    src = _csv(tmp_path / "r.csv", "a,b\n1,x\n2\n3,z\nabc,q\n5,w,6\nx9,e\n")
    info = inspect_source(SourceOptions(src))
    assert info.sample.height == 4
    assert [(b.line, b.reason) for b in info.bad] == [(3, "has 1 field, expected 2"), (6, "has 3 fields, expected 2")]
    assert (info.rows, info.rows_exact) == (6, True)
    notes = sample_warnings(info.sample, [ColumnMap("a", "a", "integer"), ColumnMap("b", "b", "text")])
    assert notes[0].startswith("2 of 4 sample rows not integer") and "'abc'" in notes[0]
    assert notes[1] == ""


def test_row_estimate_for_a_big_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(preview, "EXACT_FILE_BYTES", 100_000)  # files up to it are counted exactly
    src = _csv(tmp_path / "big.csv", "id,name\n" + "".join(f"{i},name {i}\n" for i in range(20_000)))
    info = inspect_source(SourceOptions(src), rows=200)
    assert not info.rows_exact
    assert 10_000 < info.rows < 40_000 and info.rows_text().startswith("about ")


def test_table_size_and_first_rows(dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str]) -> None:
    table = table_name("size")
    conn.execute(sql.SQL("CREATE TABLE {} AS SELECT g AS id, 'v' || g AS v FROM generate_series(1, 1500) g")
                 .format(sql.Identifier(table)))
    size = table_size(dsn, TableRef(table))
    assert size is not None and size.exact and size.rows == 1500 and size.text() == "1,500 rows"
    rows = first_rows(dsn, TableRef(table))
    assert rows.columns == ["id", "v"] and rows.types == ["integer", "text"] and len(rows.rows) == 1000
