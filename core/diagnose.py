"""Find the bad row of a failed batch and explain it: row, column, value, reason."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import psycopg
from psycopg import sql

from core.db import TableRef, connect, insert_into


def server_reason(exc: psycopg.Error) -> str:
    """The server's message, first line, with its detail when it helps."""
    lines = str(exc).strip().splitlines()
    text = exc.diag.message_primary or (lines[0] if lines else type(exc).__name__)
    if text.startswith("invalid byte sequence") and text.endswith(": 0x00"):
        # Sources never send a NUL byte (CSV readers refuse one): this is a script's DEFAULT
        # (lexer.DEFAULT_VALUE) in a column that is not generated, where only a value can go.
        return ("DEFAULT where a value belongs: a script may say DEFAULT only for a generated column; "
                "Sluice writes the script's values, not a column's default")
    detail = exc.diag.message_detail
    return f"{text} ({detail})" if detail else text


def first_bad_row(dsn: str, table: TableRef, columns: Sequence[str], rows: Sequence[tuple[Any, ...]]) -> int | None:
    """Bisect inside savepoints of a transaction that is rolled back: O(log n) statements.

    Rows that pass are kept until the end, so a row that clashes with an earlier row
    of the same batch (a duplicate key) is found too.
    """
    return first_bad_row_in(dsn, table, columns, [(0, rows)])


def first_bad_row_in(
    dsn: str, table: TableRef, columns: Sequence[str], batches: Iterable[tuple[int, Sequence[tuple[Any, ...]]]]
) -> int | None:
    """The first row the server refuses, replaying batches (first row, rows) in one rolled-back transaction.

    Each batch goes in by COPY inside a savepoint; the one that fails is bisected with
    INSERTs. Earlier batches stay in until the end, so keys clashing with earlier rows,
    and foreign keys checked only at the end of a COPY, are pinned to their row.
    """
    cols = sql.SQL(", ").join(sql.Identifier(c) for c in columns)
    insert = sql.SQL("{} VALUES ({})").format(
        insert_into(table, columns), sql.SQL(", ").join(sql.Placeholder() * len(columns)))
    copy = sql.SQL("COPY {} ({}) FROM STDIN").format(table.ident(), cols)
    with connect(dsn) as conn:
        cur = conn.cursor()
        # Open the outer transaction first: transaction() blocks then become savepoints
        # instead of committing on their own.
        cur.execute("SELECT 1")

        def ok(part: Sequence[tuple[Any, ...]], *, by_copy: bool = False) -> bool:
            try:
                with conn.transaction():
                    if by_copy:
                        with cur.copy(copy) as cp:
                            for r in part:
                                cp.write_row(r)
                    else:
                        cur.executemany(insert, part)
            except psycopg.Error:
                return False
            return True

        try:
            for first, rows in batches:
                if ok(rows, by_copy=len(rows) > 1):
                    continue
                lo, hi = 0, len(rows)
                while hi - lo > 1:
                    mid = (lo + hi) // 2
                    if ok(rows[lo:mid]):
                        lo = mid
                    else:
                        hi = mid
                return first + lo
            return None
        finally:
            conn.rollback()


def bad_column(
    dsn: str, columns: Sequence[str], types: Sequence[str], values: Sequence[Any], exc: psycopg.Error | None
) -> tuple[str | None, Any]:
    """The column (and its value) the server could not take, when one can be named."""
    if exc is not None and exc.diag.column_name and exc.diag.column_name in columns:
        i = list(columns).index(exc.diag.column_name)
        return columns[i], values[i] if i < len(values) else None
    with connect(dsn, autocommit=True) as conn:
        for name, pg_type, value in zip(columns, types, values):
            if value is None:
                continue
            try:
                conn.execute(sql.SQL("SELECT %s::{}").format(sql.SQL(pg_type)), (value,))
            except psycopg.Error:
                return name, value
    return None, None
