"""Strategies that send one INSERT per row, in the ways the seeds measured."""

from __future__ import annotations

import polars as pl
import psycopg

from core.db import connect
from core.strategies.base import Strategy, WriteFailed, register


@register
class ConnectionPerRow(Strategy):
    id = "connection-per-row"
    title = "Connection per row"
    summary = "connect, INSERT one row, commit, disconnect - for every row"
    lesson = "Seed 000: a new connection per row took 7.16 s for 1,000 rows; one connection took 0.144 s."
    seed = "000"
    batch_sized = False
    transactional = False
    multi_connection = True

    def open(self) -> None:
        self._sql = self.insert_sql()

    def write(self, frame: pl.DataFrame) -> int:
        for i, row in enumerate(frame.iter_rows()):
            self.ctx.cancel.check()
            conn = connect(self.ctx.dsn, autocommit=True)
            unhook = self.ctx.cancel.add_hook(conn.cancel_safe)
            try:
                conn.execute(self._sql, row)
            except psycopg.Error as exc:
                raise WriteFailed(exc, i) from exc
            finally:
                unhook()
                conn.close()
        return frame.height


@register
class RowAutocommit(Strategy):
    id = "row-autocommit"
    title = "Row by row, autocommit"
    summary = "one connection, one INSERT per row, each its own transaction"
    lesson = "Seed 001: committing every row took 268 s for 10k wide rows; seed 004: 21 min for 1M INSERTs in psql."
    seed = "001, 004"
    batch_sized = False
    transactional = False

    def open(self) -> None:
        super().open()
        self._sql = self.insert_sql()

    def write(self, frame: pl.DataFrame) -> int:
        cur = self.write_cursor()
        for i, row in enumerate(frame.iter_rows()):
            try:
                cur.execute(self._sql, row)
            except psycopg.Error as exc:
                raise WriteFailed(exc, i) from exc
            if i % 256 == 0:
                self.ctx.cancel.check()
        return frame.height


@register
class RowTransaction(Strategy):
    id = "row-transaction"
    title = "Row by row, one transaction"
    summary = "one connection, one INSERT per row, all in one transaction"
    lesson = "Seed 001: one transaction instead of a commit per row: 268 s -> 25 s; seed 004: 21 min -> 73 s."
    seed = "000, 001, 004"
    batch_sized = False

    def open(self) -> None:
        super().open()
        self._sql = self.insert_sql()

    def write(self, frame: pl.DataFrame) -> int:
        cur = self.write_cursor()
        for i, row in enumerate(frame.iter_rows()):
            try:
                cur.execute(self._sql, row)
            except psycopg.Error as exc:
                raise WriteFailed(exc, i) from exc
        return frame.height


@register
class ExecuteMany(Strategy):
    id = "executemany"
    title = "executemany"
    summary = "cursor.executemany per batch (psycopg pipelines the INSERTs)"
    lesson = "Seed 003: batching statements hides round trips; psycopg 3 pipelines executemany for you."
    seed = "001, 003"

    def open(self) -> None:
        super().open()
        self._sql = self.insert_sql()

    def write(self, frame: pl.DataFrame) -> int:
        try:
            self.write_cursor().executemany(self._sql, frame.rows())
        except psycopg.Error as exc:
            raise WriteFailed(exc) from exc
        return frame.height


@register
class Pipeline(Strategy):
    id = "pipeline"
    title = "Pipeline mode"
    summary = "libpq pipeline mode: many INSERTs in flight, one sync per batch"
    lesson = "Seed 003: 500 inserts at 320 ms RTT took 167 s one by one and 1.2 s pipelined."
    seed = "003"

    def open(self) -> None:
        super().open()
        self._sql = self.insert_sql()

    def write(self, frame: pl.DataFrame) -> int:
        assert self.conn is not None
        cur = self.write_cursor()
        try:
            with self.conn.pipeline():
                for row in frame.iter_rows():
                    cur.execute(self._sql, row, prepare=True)
        except psycopg.Error as exc:
            raise WriteFailed(exc) from exc
        return frame.height
