"""A corpus of broken files: under `skip` exactly the broken rows are rejected, with their
line, and the rest loads (rows_read == loaded + rejected); under `abort` the load stops
with an error naming the file and the line, and the table stays as it was.
"""

from __future__ import annotations

import csv
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl
import psycopg
import pytest
from psycopg import sql

from core.errors import SluiceError, SourceError
from core.load.job import LoadJob
from core.sources.base import BadRecord, rebatch_parts
from core.sources.csv import source as csv_source
from core.spec import ErrorPolicy, LoadSpec, SourceOptions, TargetSpec

HEAD = b"id,name,qty\n"
# COPY's "line N" counts newlines inside quoted fields (not quite all of them), and the
# job reads it as a row number: rows after a multi-line field are placed wrongly.
BOM = b"\xef\xbb\xbf"

# Target tables: column DDL and one row that is there before the load.
STD = ("id integer PRIMARY KEY, name text, qty integer", (1000, "keep", 0))
TYPES = ("id integer PRIMARY KEY, d date, n numeric(6,2), b boolean, j jsonb", (1000, "2000-01-01", 1, True, "{}"))
CONS = ("id integer PRIMARY KEY, name text NOT NULL, qty integer CHECK (qty >= 0)", (1000, "keep", 0))
FK = ("id integer PRIMARY KEY, name text, pid integer REFERENCES {parent} (id)", (1000, "keep", 1))
ONE = ("v text", ("keep",))


def row(i: int, name: str | None = None, qty: str | None = None, end: str = "\n") -> bytes:
    return f"{i},{name if name is not None else f'name {i}'},{qty if qty is not None else i}{end}".encode()


def rows(*ids: int) -> bytes:
    return b"".join(row(i) for i in ids)


def typed(i: int, **bad: str) -> bytes:
    f = {"d": f"2024-01-{i:02d}", "n": f"{i}.50", "b": "true", "j": f'"{{""k"": {i}}}"'} | bad
    return f"{i},{f['d']},{f['n']},{f['b']},{f['j']}\n".encode()


TYPES_HEAD = b"id,d,n,b,j\n"
BIG_FIELD = ("x" * 99 + "\n") * 100_000  # 10 MB in one quoted field, 100,000 lines of it


def _sink() -> bytes:
    """Thirty rows, several kinds of trouble, across batches of four."""
    out = [HEAD]
    for i in range(1, 31):
        if i == 5:
            out.append(f"{i},name {i}\n".encode())  # short
        elif i == 9:
            out.append(row(i, "na\x00me"))
        elif i == 12:
            out.append(row(i, qty="twelve"))
        elif i == 14:
            out.append(b"\n")
        elif i == 17:
            out.append(row(i, '"two\nlines"'))  # fine, but shifts the lines below by one
        elif i == 20:
            out.append(row(3))  # repeats id 3
        elif i == 23:
            out.append(f"{i},caf\xe9,{i}\n".encode("latin-1"))
        elif i == 27:
            out.append(row(i, qty="1,2"))  # long
        else:
            out.append(row(i))
    return b"".join(out)


@dataclass(frozen=True)
class Case:
    id: str
    data: Callable[[], bytes]
    loaded: int | None  # None: the whole file is refused under both policies
    rejected: int = 0
    lines: tuple[int, ...] = ()  # lines of the rejects under skip; abort stops at the first
    reason: str = ""  # in the first reject's reason (or, for a refused file, in the error)
    table: tuple[str, tuple[Any, ...]] = STD
    options: dict[str, Any] = field(default_factory=dict)
    check: tuple[str, Any] | None = None  # query on {t} (after skip) and its single value
    error_line: int | None = None  # for a refused file: the line its error names
    batch_rows: int = 4
    record_limit: int | None = None  # MAX_RECORD_BYTES for this case
    more: bool = False  # also run with executemany and row-transaction


CASES = [
    Case("clean", lambda: HEAD + rows(1, 2, 3, 4, 5), 5),
    # -- truncated ----------------------------------------------------------------------
    Case("truncated mid-field", lambda: HEAD + rows(1, 2, 3, 4) + b"5,na", 4, 1, (6,), "has 2 fields, expected 3"),
    Case("truncated mid-quote", lambda: HEAD + rows(1, 2, 3, 4) + b'5,"na', 4, 1, (6,), "never closes", more=True),
    Case("truncated, no final newline", lambda: HEAD + rows(1, 2, 3, 4, 5)[:-1], 5),
    Case("truncated mid-character", lambda: HEAD + rows(1, 2, 3, 4) + b"5,caf\xc3", 4, 1, (6,), "not valid UTF-8"),
    # -- encodings ----------------------------------------------------------------------
    Case("latin-1 byte in a file declared UTF-8", lambda: HEAD + rows(1, 2) + b"3,caf\xe9,3\n" + rows(4, 5), 4, 1,
         (4,), "not valid UTF-8 at byte offset 39", options={"encoding": "utf-8"}, more=True),
    Case("latin-1 byte after the sniffed sample", lambda: HEAD + rows(*(i for i in range(1, 20002) if i != 1000))
         + b"30001,caf\xe9,1\n" + rows(30002, 30003), 20002, 1, (20002,), "not valid UTF-8", batch_rows=5000),
    Case("latin-1 file", lambda: HEAD + "1,a,1\n2,b,2\n3,café,3\n".encode("latin-1"), 3,
         check=("SELECT name FROM {t} WHERE id = 3", "café")),
    Case("UTF-8 BOM starting a row", lambda: HEAD + rows(1, 2) + BOM + rows(3, 4, 5), 4, 1, (4,), "integer"),
    Case("two files concatenated (BOM, header again)", lambda: BOM + HEAD + rows(1, 2, 3) + BOM + HEAD
         + rows(4, 5, 6), 6, 1, (5,), "integer"),
    Case("UTF-16 file declared UTF-8", lambda: (HEAD + rows(1, 2)).decode().encode("utf-16"), None,
         reason="NUL bytes", options={"encoding": "utf-8"}, error_line=1),
    Case("UTF-16 file with its BOM", lambda: (HEAD + rows(1, 2, 3)).decode().encode("utf-16"), 3),
    # -- ragged -------------------------------------------------------------------------
    Case("too few fields", lambda: HEAD + rows(1, 2) + b"3,name 3\n" + rows(4, 5), 4, 1, (4,),
         "has 2 fields, expected 3", more=True),
    Case("too few fields, with a NULL marker", lambda: HEAD + b"1,NA,1\n2,name 2,2\n3,name 3\n4,NA,4\n", 3, 1, (4,),
         "has 2 fields, expected 3", options={"null": "NA"}),
    Case("too many fields", lambda: HEAD + rows(1) + b"2,name 2,2,extra\n" + rows(3, 4, 5), 4, 1, (3,),
         "has 4 fields, expected 3"),
    Case("every other row ragged", lambda: HEAD + b"".join(
        row(i) if i % 2 else (f"{i},x\n" if i % 4 else f"{i},x,{i},y\n").encode() for i in range(1, 11)),
        5, 5, (3, 5, 7, 9, 11), "has 2 fields"),
    Case("ragged among quoted delimiters", lambda: HEAD + b'1,"a, b, c",1\n2,"x,y"\n3,"p,q",3\n4,"r,s,t",4,5\n'
         + rows(5), 3, 2, (3, 5), "has 2 fields"),
    Case("short row that quoted commas would hide", lambda: HEAD + b'1,"a,b",1\n2,name 2\n', 1, 1, (3,),
         "has 2 fields"),
    Case("blank lines", lambda: HEAD + rows(1, 2) + b"\n" + rows(3, 4) + b"\r\n" + rows(5), 5, 2, (4, 7),
         "blank line", more=True),
    Case("trailing blank lines", lambda: HEAD + rows(1, 2, 3) + b"\n\n", 3, 2, (5, 6), "blank line"),
    Case("line of spaces", lambda: HEAD + rows(1, 2) + b"   \n" + rows(3), 3, 1, (4,), "has 1 field, expected 3"),
    Case("blank line in a one-column file is NULL", lambda: b"v\na\n\nc\n", 3, table=ONE,
         check=("SELECT count(*) FROM {t} WHERE v IS NULL", 1)),
    # -- NUL bytes ----------------------------------------------------------------------
    Case("NUL byte", lambda: HEAD + rows(1, 2) + row(3, "na\x00me") + rows(4, 5), 4, 1, (4,), "NUL byte",
         more=True),
    Case("NUL bytes in several rows", lambda: HEAD + row(1) + row(2, "\x00") + row(3) + row(4, "a\x00")
         + row(5, qty="5\x00") + row(6), 3, 3, (3, 5, 6), "NUL byte"),
    # -- quotes -------------------------------------------------------------------------
    Case("unbalanced quote swallows the rest", lambda: HEAD + rows(1, 2) + b'3,"name 3,3\n' + rows(4, 5), 2, 1,
         (4,), "quoted field opened at line 4 never closes", more=True),
    Case("unbalanced quote past the record limit", lambda: HEAD + rows(1, 2) + b'3,"name 3,3\n'
         + rows(*range(4, 150_000)), None, reason="quoted field opened at line 4 never closes", error_line=4,
         record_limit=1 << 20),
    Case("multi-line records before a bad row", lambda: HEAD + b'1,"two\nlines",1\n2,"three\nli\nnes",2\n'
         + b"3,name 3\n" + rows(4), 3, 1, (7,), "has 2 fields", more=True),
    Case("CRLF inside a quoted field", lambda: HEAD + rows(1, 2) + b'3,"a\r\nb",3\n' + rows(4), 4,
         check=("SELECT name FROM {t} WHERE id = 3", "a\r\nb")),
    Case("CRLF throughout", lambda: b"id,name,qty\r\n" + b"".join(row(i, end="\r\n") for i in range(1, 6)), 5,
         check=("SELECT count(*) FROM {t} WHERE name LIKE '%\r%'", 0)),
    Case("CRLF and LF mixed", lambda: b"id,name,qty\r\n" + b"".join(row(i, end="\r\n" if i % 2 else "\n")
                                                                      for i in range(1, 7)), 6),
    Case("10 MB single field", lambda: HEAD + rows(1) + b'2,"' + BIG_FIELD.encode() + b'",2\n' + rows(3), 3,
         check=("SELECT length(name) FROM {t} WHERE id = 2", len(BIG_FIELD)), batch_rows=1000),
    Case("ragged row after a 10 MB field", lambda: HEAD + rows(1) + b'2,"' + BIG_FIELD.encode() + b'",2\n'
         + rows(3) + b"4,name 4\n", 3, 1, (100_005,), "has 2 fields", batch_rows=1000),
    # -- wrong types --------------------------------------------------------------------
    Case("wrong integer", lambda: HEAD + rows(1, 2) + row(3, qty="seven") + rows(4, 5), 4, 1, (4,), "integer",
         more=True),
    Case("wrong date", lambda: TYPES_HEAD + typed(1) + typed(2, d="2024-02-30") + typed(3), 2, 1, (3,), "date",
         table=TYPES),
    Case("wrong numeric", lambda: TYPES_HEAD + typed(1) + typed(2) + typed(3, n="12345.678"), 2, 1, (4,),
         "numeric", table=TYPES),
    Case("wrong boolean", lambda: TYPES_HEAD + typed(1, b="maybe") + typed(2) + typed(3), 2, 1, (2,), "boolean",
         table=TYPES),
    Case("wrong json", lambda: TYPES_HEAD + typed(1) + typed(2, j='"{""k"": "') + typed(3), 2, 1, (3,), "json",
         table=TYPES),
    # -- constraints --------------------------------------------------------------------
    Case("NOT NULL", lambda: HEAD + rows(1, 2) + b"3,,3\n" + rows(4), 3, 1, (4,), "null", table=CONS),
    Case("CHECK", lambda: HEAD + rows(1) + row(2, qty="-1") + rows(3, 4), 3, 1, (3,), "check", table=CONS),
    Case("UNIQUE within the file", lambda: HEAD + rows(1, 2, 3, 2, 5), 4, 1, (5,), "duplicate", more=True),
    Case("UNIQUE against rows already there", lambda: HEAD + rows(1, 2, 1000, 4), 3, 1, (4,), "duplicate"),
    Case("foreign key", lambda: b"id,name,pid\n" + b"".join(row(i, qty=str(p)) for i, p in
                                                           [(1, 1), (2, 2), (3, 9), (4, 3), (5, 8)]),
         3, 2, (4, 6), "foreign key", table=FK, more=True),
    # -- shape --------------------------------------------------------------------------
    # An empty file loads 0 rows, as psql and pgloader do (issue 26 item 4; the note: test_first_bad.py).
    Case("empty file", lambda: b"", 0),
    Case("only blank lines", lambda: b"\n\r\n\n", 0),
    Case("old Mac line endings (CR only)", lambda: HEAD.replace(b"\n", b"\r") + rows(1, 2).replace(b"\n", b"\r"),
         2),
    Case("header only", lambda: HEAD, 0),
    Case("header only, no newline", lambda: HEAD.rstrip(), 0),
    Case("duplicate header names", lambda: b"id,name,name\n" + rows(1, 2, 3), 3,
         check=("SELECT count(*) FROM {t} WHERE qty IS NULL AND name = 'name 2'", 1)),
    Case("kitchen sink across batches", _sink, 23, 7, (6, 10, 13, 15, 22, 25, 29), "has 2 fields",
         options={"encoding": "utf-8"}, more=True),
]

FAST = "copy-csv"
MORE = ("executemany", "row-transaction")
RUNS = [pytest.param(c, FAST, id=f"{c.id}-{FAST}") for c in CASES] + [
    pytest.param(c, s, id=f"{c.id}-{s}") for c in CASES if c.more for s in MORE
]
# Under abort, copy-csv sends the file's own bytes: COPY's line numbers, its refusal of mixed
# line endings (the load then goes through the parser) and end-of-COPY foreign keys are covered.
ABORT_RUNS = RUNS


def _table(conn: psycopg.Connection[Any], table_name: Callable[[str], str], case: Case) -> str:
    t = table_name("broken")
    ddl, seed = case.table
    names: dict[str, sql.Composable] = {"t": sql.Identifier(t)}
    if "{parent}" in ddl:
        parent = table_name("parent")
        conn.execute(sql.SQL("CREATE TABLE {} (id integer PRIMARY KEY)").format(sql.Identifier(parent)))
        conn.execute(sql.SQL("INSERT INTO {} SELECT generate_series(1, 3)").format(sql.Identifier(parent)))
        names["parent"] = sql.Identifier(parent)
    conn.execute(sql.SQL("CREATE TABLE {t} (" + ddl + ")").format(**names))
    conn.execute(sql.SQL("INSERT INTO {} VALUES ({})").format(
        sql.Identifier(t), sql.SQL(", ").join(sql.Placeholder() * len(seed))), seed)
    return t


def _snapshot(conn: psycopg.Connection[Any], t: str) -> list[tuple[Any, ...]]:
    return conn.execute(sql.SQL("SELECT x::text FROM {} AS x ORDER BY 1").format(sql.Identifier(t))).fetchall()


def _spec(case: Case, path: Path, t: str, strategy: str, dsn: str, policy: ErrorPolicy, rejects: Path) -> LoadSpec:
    return LoadSpec(SourceOptions(str(path), **case.options), TargetSpec(t), strategy=strategy,
                    batch_rows=case.batch_rows, dsn=dsn, on_error=policy, reject_file=str(rejects))


@pytest.mark.parametrize(("case", "strategy"), RUNS)
def test_skip(
    case: Case, strategy: str, dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str],
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    if case.record_limit:
        monkeypatch.setattr(csv_source, "MAX_RECORD_BYTES", case.record_limit)
        monkeypatch.setattr(csv_source, "CHUNK_BYTES", case.record_limit // 4)  # the file spans several chunks
    path = tmp_path / "broken.csv"
    path.write_bytes(case.data())
    t = _table(conn, table_name, case)
    before = _snapshot(conn, t)
    rejects = tmp_path / "rejects.csv"
    spec = _spec(case, path, t, strategy, dsn, ErrorPolicy.SKIP, rejects)
    if case.loaded is None:
        with pytest.raises(SourceError) as err:
            LoadJob(spec).run()
        _names_file_and_line(str(err.value), path, case.error_line)
        assert case.reason in str(err.value)
        assert _snapshot(conn, t) == before
        return
    result = LoadJob(spec).run()
    assert (result.rows_loaded, result.rows_rejected) == (case.loaded, case.rejected)
    assert result.rows_read == result.rows_loaded + result.rows_rejected
    assert len(_snapshot(conn, t)) == len(before) + case.loaded
    if case.rejected:
        with open(rejects, encoding="utf-8", newline="") as f:
            found = list(csv.DictReader(f))
        assert len(found) == case.rejected
        assert tuple(int(r["line"]) for r in found) == case.lines
        assert case.reason.lower() in found[0]["reason"].lower()
    else:
        assert result.reject_file is None and not rejects.exists()
    if case.check is not None:
        query, expected = case.check
        value = conn.execute(sql.SQL(query).format(t=sql.Identifier(t))).fetchone()
        assert value is not None and value[0] == expected


@pytest.mark.parametrize(("case", "strategy"), ABORT_RUNS)
def test_abort(
    case: Case, strategy: str, dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str],
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    if case.record_limit:
        monkeypatch.setattr(csv_source, "MAX_RECORD_BYTES", case.record_limit)
        monkeypatch.setattr(csv_source, "CHUNK_BYTES", case.record_limit // 4)  # the file spans several chunks
    path = tmp_path / "broken.csv"
    path.write_bytes(case.data())
    t = _table(conn, table_name, case)
    before = _snapshot(conn, t)
    spec = _spec(case, path, t, strategy, dsn, ErrorPolicy.ABORT, tmp_path / "rejects.csv")
    if case.loaded is not None and not case.rejected:
        result = LoadJob(spec).run()
        assert (result.rows_read, result.rows_loaded, result.rows_rejected) == (case.loaded, case.loaded, 0)
        return
    with pytest.raises(SluiceError) as err:
        LoadJob(spec).run()
    line = case.error_line if case.loaded is None else case.lines[0]
    _names_file_and_line(str(err.value), path, line)
    if case.loaded is None:
        assert isinstance(err.value, SourceError) and case.reason in str(err.value)
    assert _snapshot(conn, t) == before


def _names_file_and_line(message: str, path: Path, line: int | None) -> None:
    assert str(path) in message, message
    if line is not None:
        assert f"line {line}:" in message or f"line {line}," in message, message


def test_rebatch_keeps_row_numbers_around_bad_records() -> None:
    """Any mix of good and bad rows, cut into parts, re-sliced from any skip point."""
    rng = random.Random(7)
    for _ in range(500):
        n = rng.randint(0, 30)
        bad_rows = {i for i in range(n) if rng.random() < 0.3}
        bounds = [0, *sorted(rng.sample(range(1, n), min(4, n - 1))), n] if n > 1 else [0, n]
        parts = [
            (pl.DataFrame({"v": pl.Series([str(i) for i in range(a, b) if i not in bad_rows], dtype=pl.String)}), b,
             [BadRecord(i, i + 2, "", "bad") for i in range(a, b) if i in bad_rows])
            for a, b in zip(bounds, bounds[1:], strict=False)
        ]
        batch_rows, skip = rng.randint(1, 6), rng.randint(0, n + 1)
        seen: list[int] = []
        for batch in rebatch_parts(iter(parts), batch_rows, skip):
            good = [int(v) for v in batch.frame["v"]]
            assert good == list(range(batch.first_row, batch.first_row + batch.frame.height))
            assert len(good) <= batch_rows and all(b.row < batch.first_row for b in batch.bad)
            seen += [b.row for b in batch.bad] + good
        assert seen == list(range(skip, n))
