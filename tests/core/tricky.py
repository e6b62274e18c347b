"""One table of values that break naive loaders, and ways to write it out."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

COLUMNS = [
    ("id", "integer"),
    ("t", "text"),
    ("big", "bigint"),
    ("num", "numeric(38,10)"),
    ("f", "double precision"),
    ("d", "date"),
    ("ts", "timestamptz"),
    ("b", "boolean"),
    ("j", "jsonb"),
]

_ROWS: list[list[str | None]] = [
    ["1", None, None, None, None, None, None, None, None],
    ["2", "", "0", "0", "0", "2024-02-29", "2024-01-01T00:00:00Z", "true", "{}"],
    ["3", 'quote " and , delim; semi', "9223372036854775807", "1234567890123456789012345678.0123456789",
     "NaN", "0001-01-01", "2024-03-10 02:30:00+05:30", "false", '{"a": [1, 2, {"b": null}], "s": "x\\"y"}'],
    ["4", "line1\nline2\r\nline3\ttab", "-9223372036854775808", "-0.0000000001", "Infinity", "9999-12-31",
     "1999-12-31 23:59:59.999999-08:00", "t", "[]"],
    ["5", "back\\slash \\N \\\\ end\\", "42", "3.1415926535", "-Infinity", "1970-01-01",
     "2000-06-15 12:00:00+00:00", "f", '"str"'],
    ["6", "café ñ 日本語 🎉 emoji", "-1", "99999999999999999999999999.9999999999", "1e-300", "2000-01-01",
     "2024-07-01 08:15:30.5-03:30", "true", '{"k": "ü🎉"}'],
    ["7", "NULL", "1", "1", "0.1", "1999-01-01", "2024-12-31 23:00:00+14:00", "false", "null"],
    ["8", "\\N", "2", "2", "1.7976931348623157e308", "2020-02-02", "2020-02-02 02:02:02+01:00", "true", "1"],
    ["9", "x" * 100_000, "3", "3", "-0.5", "2021-03-04", "2021-03-04 05:06:07+00:00", "false", "[1, 2]"],
    ["10", " leading and trailing spaces ", "4", "4", "2.5", "2022-05-06", "2022-05-06 00:00:00+09:00", "true",
     '{"nested": {"deep": [true, false]}}'],
    ["11", ",", "5", "5", "5", "2023-01-01", "2023-01-01 00:00:00+00:00", "false", '{"comma": ","}'],
    ["12", '"', "6", "6", "6", "2023-01-02", "2023-01-02 00:00:00+00:00", "true", '{"quote": "\\""}'],
]


def rows() -> list[list[str | None]]:
    return [list(r) for r in _ROWS]


def create_sql(table: str) -> sql.Composed:
    cols = sql.SQL(", ").join(sql.SQL("{} {}").format(sql.Identifier(n), sql.SQL(t)) for n, t in COLUMNS)
    return sql.SQL("CREATE TABLE {} ({})").format(sql.Identifier(table), cols)


def fill_reference(conn: psycopg.Connection[Any], table: str) -> None:
    """Parameterised INSERTs, one per row: never the COPY code under test."""
    conn.execute(create_sql(table))
    stmt = sql.SQL("INSERT INTO {} VALUES ({})").format(
        sql.Identifier(table), sql.SQL(", ").join(sql.Placeholder() * len(COLUMNS))
    )
    for r in _ROWS:
        conn.execute(stmt, r)


def write_csv(path: Path, delimiter: str = ",") -> Path:
    """Every non-NULL value quoted, NULL as an empty unquoted field (PostgreSQL's CSV rule)."""
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.write(delimiter.join(n for n, _ in COLUMNS) + "\n")
        for r in _ROWS:
            f.write(delimiter.join("" if v is None else '"' + v.replace('"', '""') + '"' for v in r) + "\n")
    return path


def write_plain_csv(path: Path) -> Path:
    """Python's own csv module (minimal quoting): NULL and '' both come out empty, so use a marker."""
    with open(path, "w", encoding="utf-8", newline="") as f:
        w = csv.writer(f)
        w.writerow([n for n, _ in COLUMNS])
        for r in _ROWS:
            w.writerow(["NA" if v is None else v for v in r])
    return path


def write_insert_script(path: Path, conn: psycopg.Connection[Any], table: str) -> Path:
    """pg_dump --column-inserts style, values quoted by psycopg."""
    cols = sql.SQL(", ").join(sql.Identifier(n) for n, _ in COLUMNS)
    with open(path, "w", encoding="utf-8") as f:
        f.write("-- test script\nSET client_encoding = 'UTF8';\n")
        for r in _ROWS:
            stmt = sql.SQL("INSERT INTO public.{} ({}) VALUES ({});\n").format(
                sql.Identifier(table), cols, sql.SQL(", ").join(sql.Literal(v) for v in r)
            )
            f.write(stmt.as_string(conn))
    return path


def diff_count(conn: psycopg.Connection[Any], a: str, b: str) -> tuple[int, int]:
    """Rows in a not in b, and in b not in a, as multisets."""
    q = sql.SQL("SELECT count(*) FROM (SELECT * FROM {} EXCEPT ALL SELECT * FROM {}) x")
    one = conn.execute(q.format(sql.Identifier(a), sql.Identifier(b))).fetchone()
    two = conn.execute(q.format(sql.Identifier(b), sql.Identifier(a))).fetchone()
    assert one is not None and two is not None
    return int(one[0]), int(two[0])
