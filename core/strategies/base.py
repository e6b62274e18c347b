"""The one interface every load strategy implements, and the registry of their ids."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

import polars as pl
import psycopg
from psycopg import sql

from core.batch_size import DEFAULT_BATCH_ROWS
from core.cancel import CancelToken
from core.db import TableRef, connect, insert_into


@dataclass
class WriteContext:
    dsn: str
    table: TableRef  # where the rows go: the target, or a staging table
    columns: list[str]  # target column names, in the mapped frame's order
    types: list[str]  # their PostgreSQL types (format_type spelling)
    batch_rows: int = 10_000
    workers: int = 2
    cancel: CancelToken = field(default_factory=CancelToken)
    log: Callable[[str], None] = lambda _msg: None
    copy_options: dict[str, str] = field(default_factory=dict)  # raw CSV pass-through dialect
    # Target columns where the raw pass-through's NULL marker is text (COPY's FORCE_NOT_NULL).
    force_not_null: list[str] = field(default_factory=list)
    # The job's control connection, lent to a one-connection load so that it opens no second
    # one; open() takes it, close() hands it back idle and in autocommit without closing it.
    borrow: psycopg.Connection[Any] | None = None
    # Warm start (core.load.warm_start): the file's first records go as they are while the
    # strategy's encoder loads; copy_options then hold the file's dialect.
    warm: bool = False
    # COPY ... (FREEZE): the load's own transaction created or truncated the table (core.load.protocols.single)
    freeze: bool = False
    # The load's sessions have TimeZone UTC (core.db.session_is_utc): a timestamptz written with no
    # offset is that time in UTC, which the binary encoder can type itself (else the server places it).
    utc: bool = False


class WriteFailed(Exception):
    """A write the server refused; `row` is the failing row's index within the written frame."""

    def __init__(self, error: psycopg.Error, row: int | None = None) -> None:
        self.error = error
        self.row = row
        super().__init__(str(error))


class Strategy(ABC):
    """Opens its connection(s), writes mapped batches, commits or rolls back.

    Transactional strategies leave `conn` inside an open transaction until commit(),
    so the job can truncate, checkpoint or set savepoints in the same transaction.
    """

    id: ClassVar[str]
    title: ClassVar[str]
    summary: ClassVar[str]  # one line, for `strategies` and the window
    lesson: ClassVar[str]  # what the seed measured, in plain words
    seed: ClassVar[str]
    transactional: ClassVar[bool] = True  # False: it commits every row by itself
    multi_connection: ClassVar[bool] = False
    script_only: ClassVar[bool] = False
    streams_raw_csv: ClassVar[bool] = False  # can take the CSV file's own bytes
    # Can send the CSV file's first records as they are while its encoder loads (write_warm,
    # ready, sending_raw: core.strategies.abilities.WarmStarts; core.load.warm_start).
    warms_with_raw_csv: ClassVar[bool] = False
    freezes: ClassVar[bool] = False  # its COPY statements can say FREEZE
    stream_rows: ClassVar[bool] = False  # WriteFailed.row counts from the load's start, not the batch's
    row_per_line: ClassVar[bool] = False  # its COPY stream holds one line (or tuple) per row: "line N" is row N
    # What the settings change on the wire (the Compare lab asks, never by id):
    batch_sized: ClassVar[bool] = True  # False: one statement per row, whatever batch_rows says
    takes_workers: ClassVar[bool] = False  # True: ctx.workers connections load at once
    # Its streams can commit chunk by chunk, each with its checkpoint row (per-batch over N streams).
    chunk_commits: ClassVar[bool] = False

    @classmethod
    def default_batch_rows(cls, width: int) -> int:
        """Rows per batch when the user names none, for rows about `width` bytes wide (0: unknown)."""
        return DEFAULT_BATCH_ROWS

    def __init__(self, ctx: WriteContext) -> None:
        self.ctx = ctx
        self.conn: psycopg.Connection[Any] | None = None
        self._unhook: Callable[[], None] | None = None
        self._write_cur: psycopg.Cursor[Any] | None = None

    def open(self) -> None:
        if self.ctx.borrow is not None:
            self.conn = self.ctx.borrow
            self.conn.autocommit = not self.transactional
        else:
            self.conn = connect(self.ctx.dsn, autocommit=not self.transactional)
        self._hook(self.conn)

    def _hook(self, conn: psycopg.Connection[Any]) -> None:
        self._unhook = self.ctx.cancel.add_hook(conn.cancel_safe)

    @abstractmethod
    def write(self, frame: pl.DataFrame) -> int:
        """Send the rows; return how many the server took. Raise WriteFailed."""

    def prepare(self, frame: pl.DataFrame) -> object:
        """Work on a batch that needs no connection (formatting, encoding), done ahead on the
        reader thread; write_prepared() sends the result. Must not touch the connection."""
        return None

    def write_prepared(self, prepared: object, frame: pl.DataFrame) -> int:
        return self.write(frame)

    def flush(self) -> None:
        """End any statement still streaming (e.g. an open COPY)."""

    def commit(self) -> None:
        self.flush()
        if self.conn is not None and self.transactional:
            self.conn.commit()

    def rollback(self) -> None:
        if self.conn is not None and not self.conn.closed:
            try:
                self.conn.rollback()
            except psycopg.Error:
                pass

    def write_cursor(self) -> psycopg.Cursor[Any]:
        """The cursor every write on `conn` uses; close() closes it."""
        assert self.conn is not None
        if self._write_cur is None or self._write_cur.closed:
            self._write_cur = self.conn.cursor()
        return self._write_cur

    def close(self) -> None:
        if self._unhook:
            self._unhook()
            self._unhook = None
        if self._write_cur is not None:
            self._write_cur.close()
            self._write_cur = None
        if self.conn is None:
            return
        if self.conn is self.ctx.borrow:
            self._hand_back(self.conn)
        else:
            self.conn.close()

    @staticmethod
    def _hand_back(conn: psycopg.Connection[Any]) -> None:
        if conn.closed:
            return
        try:
            if conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
                conn.rollback()
            conn.autocommit = True
        except psycopg.Error:
            pass  # a broken connection: the job's `with` closes it

    # -- shared SQL -------------------------------------------------------------------

    def column_list(self) -> sql.Composable:
        return sql.SQL(", ").join(sql.Identifier(c) for c in self.ctx.columns)

    def insert_sql(self, rows: int = 1) -> sql.Composed:
        one = sql.SQL("({})").format(sql.SQL(", ").join(sql.Placeholder() * len(self.ctx.columns)))
        return sql.SQL("{} VALUES {}").format(
            insert_into(self.ctx.table, self.ctx.columns), sql.SQL(", ").join([one] * rows))


REGISTRY: dict[str, type[Strategy]] = {}


def register(cls: type[Strategy]) -> type[Strategy]:
    REGISTRY[cls.id] = cls
    return cls


def rows_of(frame: pl.DataFrame) -> list[tuple[Any, ...]]:
    return frame.rows()
