"""Replay an INSERT script's statements the ways psql would (seed 004).

The statements are rebuilt from the parsed rows, never sent as the file's text:
values travel as parameters, except in DO blocks, which take no parameters and get
psycopg-quoted literals instead.
"""

from __future__ import annotations

import itertools
from typing import Any

import polars as pl
import psycopg
from psycopg import sql

from core.db import insert_into
from core.strategies.base import Strategy, WriteFailed, register


def statement_groups(frame: pl.DataFrame, lines: list[int] | None) -> list[list[tuple[Any, ...]]]:
    """Rows grouped back into their statements (rows of one statement share a line)."""
    rows = frame.rows()
    if not lines:
        return [[r] for r in rows]
    groups: list[list[tuple[Any, ...]]] = []
    for _, grp in itertools.groupby(zip(lines, rows), key=lambda p: p[0]):
        groups.append([r for _, r in grp])
    return groups


class _Script(Strategy):
    script_only = True
    lines: list[int] | None = None  # set by the job before each write
    on_conflict = False  # the script's INSERTs say ON CONFLICT DO NOTHING: so do the replayed ones

    def _suffix(self) -> sql.Composable:
        return sql.SQL(" ON CONFLICT DO NOTHING") if self.on_conflict else sql.SQL("")

    def _replay(self, frame: pl.DataFrame) -> int:
        assert self.conn is not None
        cur = self.conn.cursor()
        row = inserted = 0
        cache: dict[int, sql.Composed] = {}
        for group in statement_groups(frame, self.lines):
            stmt = cache.get(len(group))
            if stmt is None:
                stmt = cache[len(group)] = self.insert_sql(len(group)) + self._suffix()
            try:
                cur.execute(stmt, [v for r in group for v in r])
            except psycopg.Error as exc:
                raise WriteFailed(exc, row) from exc
            row += len(group)
            inserted += cur.rowcount if cur.rowcount >= 0 else len(group)
            if row % 512 < len(group):
                self.ctx.cancel.check()
        return inserted

    def write(self, frame: pl.DataFrame) -> int:
        return self._replay(frame)


@register
class ScriptAutocommit(_Script):
    id = "script-autocommit"
    title = "Script, autocommit"
    summary = "replay each INSERT statement on its own, committed at once (psql's default)"
    lesson = "Seed 004: 1M INSERT statements took 21 min with psql in autocommit."
    seed = "004"
    batch_sized = False  # statement by statement, as the script has them
    transactional = False


@register
class ScriptTransaction(_Script):
    id = "script-transaction"
    title = "Script, one transaction"
    summary = "replay the INSERT statements inside one transaction (psql -1)"
    lesson = "Seed 004: the same script in one transaction: 73 s."
    seed = "004"
    batch_sized = False  # statement by statement, as the script has them


@register
class ScriptDoBlock(_Script):
    id = "script-do-block"
    title = "Script, DO blocks"
    summary = "wrap a batch of INSERT statements in one DO block: one round trip per batch"
    lesson = "Seed 004: the million INSERTs inside one DO block: 40 s."
    seed = "004"

    def write(self, frame: pl.DataFrame) -> int:
        assert self.conn is not None
        body: list[sql.Composable] = []
        for group in statement_groups(frame, self.lines):
            values = sql.SQL(", ").join(
                sql.SQL("({})").format(sql.SQL(", ").join(sql.Literal(v) for v in r)) for r in group
            )
            body.append(
                sql.SQL("{} VALUES {}{}").format(insert_into(self.ctx.table, self.ctx.columns), values, self._suffix())
            )
        text = "BEGIN\n" + sql.SQL(";\n").join(body).as_string(self.conn) + ";\nEND"
        try:
            self.conn.execute(sql.SQL("DO {}").format(sql.Literal(text)))
        except psycopg.Error as exc:
            raise WriteFailed(exc) from exc
        return frame.height
