"""The file's own records in COPY's text format where they hold no quote and no backslash: the
same values as CSV stores, the switch to CSV at the first quote, and errors named by their line
on either side of it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

from core.db import TableRef
from core.errors import BadRowError
from core.load.job import LoadJob
from core.spec import CommitMode, LoadMode, LoadSpec, SourceOptions, TargetSpec
from core.strategies.base import WriteContext
from core.strategies.copy import CopyCsv, plain_quote

CSV = {"delimiter": ",", "quote": '"', "null": "", "encoding": "UTF8"}
# More than the reader's first chunks (256 kB, then twice that): the text statement carries
# several chunks before the quoted record.
PLAIN_ROWS = 40_000


@pytest.mark.parametrize(("options", "force_not_null", "quote"), [
    (CSV, [], b'"'),
    ({**CSV, "delimiter": "\t"}, [], b'"'),
    ({**CSV, "delimiter": ";", "quote": "'"}, [], b"'"),
    ({**CSV, "null": "NA"}, [], b'"'),
    ({}, [], None),  # parsed batches, not the file's own bytes
    ({**CSV, "format": "text"}, [], None),  # PostgreSQL's text export: text already
    (CSV, ["note"], None),  # the marker is a value in some columns: FORCE_NOT_NULL is CSV's alone
    ({**CSV, "delimiter": "."}, [], None),  # text format refuses it as a delimiter
    ({**CSV, "null": "\\N"}, [], None),
])
def test_which_loads_may_send_plain_records_as_text(
    options: dict[str, str], force_not_null: list[str], quote: bytes | None,
) -> None:
    ctx = WriteContext(dsn="", table=TableRef("t"), columns=["a"], types=["text"], copy_options=options,
                       force_not_null=force_not_null)
    assert plain_quote(ctx) == quote


def test_the_statement_turns_to_csv_at_the_first_quote_and_stays(
    dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str],
) -> None:
    table = table_name("plain")
    conn.execute(sql.SQL("CREATE TABLE {} (id integer, name text)").format(sql.Identifier(table)))
    ctx = WriteContext(dsn=dsn, table=TableRef(table), columns=["id", "name"], types=["integer", "text"],
                       copy_options=CSV)
    copy = CopyCsv(ctx)
    copy.open()
    formats = []
    try:
        for chunk in (b"1,a b\n2,\n", b"3,\xc3\xa9t\xc3\xa9 \n", b'4,"x, y"\n5,""\n', b"6,c\n"):
            copy.write_raw(chunk)
            formats.append("text" if "FORMAT text" in copy.copy_sql().as_string(conn) else "csv")
        copy.flush()
        copy.commit()
    finally:
        copy.close()
    assert formats == ["text", "text", "csv", "csv"]
    rows = conn.execute(sql.SQL("SELECT id, name FROM {} ORDER BY id").format(sql.Identifier(table))).fetchall()
    assert rows == [(1, "a b"), (2, None), (3, "été "), (4, "x, y"), (5, ""), (6, "c")]
    assert copy.rows_written == 6


def _plain_then_quoted(path: Path, *, bad: dict[int, str] | None = None, null: str = "") -> Path:
    """PLAIN_ROWS records without a quote, then some that quote; `bad` replaces data line N."""
    lines = ["id,name,qty,note"]
    for i in range(1, PLAIN_ROWS + 2_001):
        name = f"name {i}" if i % 7 else null  # NULL: empty, or the file's marker
        note = "" if i % 5 == 0 and not null else f"note {i} \u00e9"
        if i > PLAIN_ROWS and i % 3 == 0:
            name = f'"{name}, quoted ""{i}"""'
        lines.append(f"{i},{name},{i % 100},{note}")
    for n, text in (bad or {}).items():
        lines[n] = text
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _reference(conn: psycopg.Connection[Any], path: Path, table: str, null: str) -> list[tuple[Any, ...]]:
    """What the server stores from the same bytes read as CSV (psql's \\copy ... CSV HEADER)."""
    ref = f"{table}_ref"
    conn.execute(sql.SQL("CREATE TABLE {} (id integer, name text, qty integer, note text)").format(
        sql.Identifier(ref)))
    with conn.cursor().copy(sql.SQL("COPY {} FROM STDIN (FORMAT csv, HEADER, NULL {})").format(
            sql.Identifier(ref), sql.Literal(null))) as copy:
        copy.write(path.read_bytes())
    rows = conn.execute(sql.SQL("SELECT * FROM {} ORDER BY id").format(sql.Identifier(ref))).fetchall()
    conn.execute(sql.SQL("DROP TABLE {}").format(sql.Identifier(ref)))
    return rows


def _statements(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """For each COPY of the file's own records that the load ran, whether it was in text format."""
    ran: list[bool] = []
    real = psycopg.Cursor.copy

    def copy(self: psycopg.Cursor[Any], statement: Any, *args: Any, **kwargs: Any) -> Any:
        text = statement.as_string(self) if isinstance(statement, sql.Composable) else str(statement)
        if "FORMAT binary" not in text and "_ref" not in text:
            ran.append("FORMAT text" in text)
        return real(self, statement, *args, **kwargs)

    monkeypatch.setattr(psycopg.Cursor, "copy", copy)
    return ran


@pytest.mark.parametrize("null", ["", "NA"])
@pytest.mark.parametrize("strategy", ["copy-csv", "auto", "copy-binary warm"])
def test_plain_records_store_what_csv_stores(
    strategy: str, null: str, dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str],
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    if strategy == "copy-binary warm":  # the file's first records go as they are while the encoder loads
        strategy = "copy-binary"
        monkeypatch.setattr("core.load.warm_start.WARM_MIN_BYTES", 0)
        monkeypatch.setattr("core.sources.csv.source.WARM_CHUNK_BYTES", 8 << 10)
        monkeypatch.setattr("core.strategies.copy.encoder_loaded", lambda: False)  # as in a new process
    statements = _statements(monkeypatch)
    path = _plain_then_quoted(tmp_path / "f.csv", null=null)
    table = table_name("plain")
    conn.execute(sql.SQL("CREATE TABLE {} (id integer, name text, qty integer, note text)").format(
        sql.Identifier(table)))
    source = SourceOptions(str(path), null=null or None)
    LoadJob(LoadSpec(source, TargetSpec(table), strategy=strategy, dsn=dsn)).run()
    got = conn.execute(sql.SQL("SELECT * FROM {} ORDER BY id").format(sql.Identifier(table))).fetchall()
    want = _reference(conn, path, table, null)
    assert len(got) == PLAIN_ROWS + 2_000
    assert got == want
    nulls = [i for i in range(1, PLAIN_ROWS + 2_001) if i % 7 == 0 and not (i > PLAIN_ROWS and i % 3 == 0)]
    assert [r[0] for r in got if r[1] is None] == nulls
    assert statements[0] is True  # the plain records went as text
    if strategy == "copy-csv":
        assert statements == [True, False]  # then CSV from the first quote to the end


@pytest.mark.parametrize(("line", "value"), [(1_001, "drei"), (PLAIN_ROWS + 1_501, "zwei")])
def test_a_bad_value_is_named_by_its_line_before_and_after_the_switch(
    line: int, value: str, dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str],
    tmp_path: Path,
) -> None:
    path = _plain_then_quoted(tmp_path / "f.csv", bad={line - 1: f"{value},x,1,y"})
    table = table_name("plain")
    conn.execute(sql.SQL("CREATE TABLE {} (id integer, name text, qty integer, note text)").format(
        sql.Identifier(table)))
    with pytest.raises(BadRowError) as err:
        LoadJob(LoadSpec(SourceOptions(str(path)), TargetSpec(table), strategy="copy-csv", dsn=dsn)).run()
    assert (err.value.problem.line, err.value.problem.column, err.value.problem.value) == (line, "id", value)
    assert conn.execute(sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(table))).fetchone() == (0,)


def test_a_duplicate_after_the_switch_is_named_by_its_line(
    dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path,
) -> None:
    line = PLAIN_ROWS + 1_700
    path = _plain_then_quoted(tmp_path / "f.csv", bad={line - 1: "5,again,1,y"})
    table = table_name("plain")
    conn.execute(sql.SQL("CREATE TABLE {} (id integer PRIMARY KEY, name text, qty integer, note text)").format(
        sql.Identifier(table)))
    with pytest.raises(BadRowError) as err:
        LoadJob(LoadSpec(SourceOptions(str(path)), TargetSpec(table), strategy="copy-csv", dsn=dsn)).run()
    assert err.value.problem.line == line
    assert "duplicate key" in err.value.problem.reason


@pytest.mark.parametrize(("mode", "commit"), [(LoadMode.CREATE, CommitMode.SINGLE),
                                              (LoadMode.APPEND, CommitMode.PER_BATCH)])
def test_parallel_streams_send_plain_ranges_as_text(
    mode: LoadMode, commit: CommitMode, dsn: str, conn: psycopg.Connection[Any],
    table_name: Callable[[str], str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each stream reads its own byte ranges: the plain ones go in text format, the others as CSV,
    and the table holds what CSV stores (several ranges each way, 64 kB apiece)."""
    monkeypatch.setattr("core.load.protocols.parallel_run.CHUNK_MIN", 64 << 10)
    monkeypatch.setattr("core.load.protocols.parallel_run.CHUNK_MAX", 64 << 10)
    statements = _statements(monkeypatch)
    path = _plain_then_quoted(tmp_path / "f.csv")
    table = table_name("plain")
    if mode is LoadMode.APPEND:
        conn.execute(sql.SQL("CREATE TABLE {} (id integer, name text, qty integer, note text)").format(
            sql.Identifier(table)))
    spec = LoadSpec(SourceOptions(str(path)), TargetSpec(table, mode=mode), strategy="parallel-copy", dsn=dsn,
                    workers=2, commit=commit)
    if mode is LoadMode.CREATE:
        spec.columns = None  # the new table's types from the file: integer, text, integer, text
    result = LoadJob(spec).run()
    assert result.rows_loaded == PLAIN_ROWS + 2_000
    got = conn.execute(sql.SQL("SELECT id, name, qty::integer, note FROM {} ORDER BY id").format(
        sql.Identifier(table))).fetchall()
    assert got == _reference(conn, path, table, "")
    assert True in statements and False in statements  # a text statement, and a CSV one
