"""COPY FROM STDIN in text, CSV and binary form: one statement streams the whole load."""

from __future__ import annotations

import re
import sys
import threading
import types
from contextlib import ExitStack
from typing import Any, ClassVar

import polars as pl
import psycopg
from psycopg import sql

from core.batch_size import DEFAULT_BATCH_ROWS, byte_sized
from core.sources.csv.records import is_plain
from core.strategies.arrow_binary import ArrowEncoder, arrow_columns, untypable
from core.strategies.base import Strategy, WriteContext, WriteFailed, register

_LINE = re.compile(r"COPY [^,]*, line (\d+)")


def copy_error_row(exc: psycopg.Error) -> int | None:
    """0-based row of the COPY stream the server complained about (from its CONTEXT)."""
    ctx = exc.diag.context or ""
    m = _LINE.search(ctx)
    return int(m.group(1)) - 1 if m else None


def csv_copy_sql(strategy: Strategy, *, plain: bool = False) -> sql.Composed:
    """COPY ... (FORMAT csv), with the source file's own dialect when its bytes pass through.
    `plain`: the file's own records that hold no quote and no backslash, in COPY's text format
    (see plain_quote)."""
    opts = strategy.ctx.copy_options or {}
    text = opts.get("format") == "text" or plain  # (also PostgreSQL's text format passing through: core.sources.pgtext)
    parts: list[sql.Composable] = [sql.SQL("FORMAT text" if text else "FORMAT csv")]
    # COPY options take literals, not parameters.
    for key, word in (("delimiter", "DELIMITER"), ("quote", "QUOTE"), ("null", "NULL")):
        if key in opts and not (text and key == "quote") and not (plain and key == "null"):
            parts.append(sql.SQL("{} {}").format(sql.SQL(word), sql.Literal(opts[key])))
    if plain:  # text format's own NULL is \N; a CSV field's is the empty one, or the file's marker
        parts.append(sql.SQL("NULL {}").format(sql.Literal(opts.get("null") or "")))
    if opts.get("encoding"):
        parts.append(sql.SQL("ENCODING {}").format(sql.Literal(opts["encoding"])))
    if strategy.ctx.force_not_null:
        parts.append(sql.SQL("FORCE_NOT_NULL ({})").format(
            sql.SQL(", ").join(sql.Identifier(c) for c in strategy.ctx.force_not_null)))
    if strategy.ctx.freeze:
        parts.append(sql.SQL("FREEZE"))
    return sql.SQL("COPY {} ({}) FROM STDIN ({})").format(
        strategy.ctx.table.ident(), strategy.column_list(), sql.SQL(", ").join(parts)
    )


# Characters COPY refuses as a text-format delimiter (its escapes and the line ends).
_TEXT_REFUSED_DELIMITERS = "\\.abcdefghijklmnopqrstuvwxyz0123456789\r\n"


def plain_quote(ctx: WriteContext) -> bytes | None:
    """The file's quote character, when its own records may go in COPY's text format wherever
    they hold neither it nor a backslash; None when they must always go as CSV.

    Such records read the same either way: the same bytes in every field, NULL where the field
    is empty (or the file's marker), and CSV's quoting never comes into play. The server's text
    reader skips that quoting: over the 1M-row corpus files, read by the server from its own
    disk, text took 0.88-0.97 of CSV's time (numeric 0.59 -> 0.53 s, temporal 1.24 -> 1.15,
    wide_text 1.59 -> 1.40, narrow 0.30 -> 0.30). Not where some columns keep the marker as a
    value (FORCE_NOT_NULL has no text-format form), nor with a delimiter text format refuses."""
    opts = ctx.copy_options
    if not opts or opts.get("format") == "text" or ctx.force_not_null:
        return None
    delimiter, quote, null = opts.get("delimiter", ","), opts.get("quote", '"'), opts.get("null") or ""
    if len(delimiter.encode()) != 1 or delimiter in _TEXT_REFUSED_DELIMITERS or len(quote.encode()) != 1 \
            or "\\" in null or delimiter in null or quote in null:
        return None
    return quote.encode()


class _CopyStrategy(Strategy):
    """Keeps one COPY open across batches; flush() ends it and surfaces server errors."""

    stream_rows = True
    freezes = True

    @classmethod
    def default_batch_rows(cls, width: int) -> int:
        # One COPY statement whatever the batch: a batch is a unit of work, sized in bytes.
        return byte_sized(width, stages=cls.batch_stages) if width > 0 else DEFAULT_BATCH_ROWS

    batch_stages: ClassVar[int] = 1  # stages that hold a batch at once (core.batch_size.byte_sized)
    first_format: ClassVar[str] = "text"  # the format of the stream's first statement (see _switch)

    def open(self) -> None:
        # Set before connecting: rollback() and close() run when the connection is refused too.
        self._format = self.first_format
        self._plain: bytes | None = None  # the quote byte while the file's own records may go plain
        self._stack: ExitStack | None = None
        self._copy: psycopg.Copy | None = None
        self._cur: psycopg.Cursor[Any] | None = None
        self._sent = 0
        self._base = 0  # rows of the stream's earlier COPY statements (see CopyBinary)
        self.rows_written = 0
        super().open()

    def copy_sql(self) -> sql.Composed:
        freeze = sql.SQL(" (FREEZE)" if self.ctx.freeze else "")
        return sql.SQL("COPY {} ({}) FROM STDIN{}").format(self.ctx.table.ident(), self.column_list(), freeze)

    def _ensure_copy(self) -> psycopg.Copy:
        if self._copy is None:
            assert self.conn is not None
            self._stack = ExitStack()
            cur = self._cur = self.conn.cursor()  # closed after rowcount is read, in flush()
            self._copy = self._stack.enter_context(cur.copy(self.copy_sql()))
            self._prepare(self._copy, cur)
            self._sent = 0
        return self._copy

    def _prepare(self, copy: psycopg.Copy, cur: psycopg.Cursor[Any]) -> None:
        """Per-format set-up once the COPY is open."""

    def _switch(self, fmt: str) -> None:
        """Send what follows in `fmt`: the open statement, if in another format, ends (its rows
        count towards the stream's) and the next one opens in `fmt`, in the same transaction."""
        if fmt == self._format:
            return
        if self._copy is not None:
            self._end_copy()
        self._format = fmt

    def _raw_format(self, data: bytes) -> str:
        """The statement for the file's own records `data`: text format ("plain") while they hold
        no quote and no backslash (plain_quote), CSV from the first that do (a file that quotes
        once is taken to quote again, so the statements do not flip back and forth)."""
        if self._plain is not None and not is_plain(data, self._plain):
            self._plain = None
        return "plain" if self._plain is not None else "csv"

    def _write(self, data: bytes | memoryview) -> None:
        """Bytes as they are into the open statement (opened if none is): the file's own records,
        or a batch already formatted or encoded."""
        copy = self._ensure_copy()
        try:
            copy.write(data)
        except psycopg.Error as exc:
            self._stack = self._copy = None
            raise WriteFailed(exc, self._error_row(exc)) from exc

    def _error_row(self, exc: psycopg.Error) -> int | None:
        row = copy_error_row(exc)
        return None if row is None else self._base + row

    def flush(self) -> None:
        try:
            self._end_copy()
        finally:
            self._base = 0

    def _end_copy(self) -> None:
        """End the open COPY statement, if any; its rows count towards the stream's."""
        if self._stack is None:
            return
        stack, self._stack, self._copy = self._stack, None, None
        try:
            stack.close()
        except psycopg.Error as exc:
            raise WriteFailed(exc, self._error_row(exc)) from exc
        self._base += self._sent
        self._sent = 0
        if self._cur is not None:
            if self._cur.rowcount >= 0:
                self.rows_written += self._cur.rowcount
            self._cur.close()
            self._cur = None

    def abort(self) -> None:
        self._base = 0
        if self._stack is not None:
            stack, self._stack, self._copy = self._stack, None, None
            try:
                stack.__exit__(RuntimeError, RuntimeError("aborted"), None)
            except (psycopg.Error, RuntimeError):
                pass
        self._close_cursor()

    def _close_cursor(self) -> None:
        if self._cur is not None:
            self._cur.close()
            self._cur = None

    def close(self) -> None:
        self._close_cursor()  # a COPY that failed leaves its cursor
        super().close()

    def rollback(self) -> None:
        self.abort()
        super().rollback()

    def write(self, frame: pl.DataFrame) -> int:
        copy = self._ensure_copy()
        try:
            self._send(copy, frame)
        except psycopg.Error as exc:
            self._stack = self._copy = None
            raise WriteFailed(exc, self._error_row(exc)) from exc
        self._sent += frame.height
        return frame.height

    def _send(self, copy: psycopg.Copy, frame: pl.DataFrame) -> None:
        raise NotImplementedError


_TEXT_ESCAPES = (("\\", "\\\\"), ("\t", "\\t"), ("\n", "\\n"), ("\r", "\\r"))


def text_copy_rows(frame: pl.DataFrame) -> bytes:
    """Mapped text batches in COPY's text format, formatted column-wise by polars.

    Each value is PostgreSQL input text already: only the backslash, tab, newline and
    carriage return are escaped, and NULL is written `\\N`. One row per line, so COPY's
    "line N" is row N (a CSV stream's quoted newlines would shift it).
    """
    escaped = []
    for name in frame.columns:
        col = pl.col(name).cast(pl.String)
        for raw, escape in _TEXT_ESCAPES:
            col = col.str.replace_all(raw, escape, literal=True)
        escaped.append(col)
    return frame.select(escaped).write_csv(
        include_header=False, separator="\t", quote_style="never", null_value="\\N", line_terminator="\n"
    ).encode()


@register
class CopyText(_CopyStrategy):
    id = "copy-text"
    row_per_line = True
    title = "COPY (text, row by row)"
    summary = "COPY FROM STDIN in text format, each row formatted by the driver"
    lesson = "Seed 001: streaming rows into COPY instead of INSERTs: 25 s -> 5 s for 10k wide rows, memory flat."
    seed = "001"

    def _send(self, copy: psycopg.Copy, frame: pl.DataFrame) -> None:
        for row in frame.iter_rows():
            copy.write_row(row)


@register
class CopyCsv(_CopyStrategy):
    id = "copy-csv"
    title = "COPY (CSV, column-wise)"
    summary = "COPY FROM STDIN (FORMAT csv), batches formatted column-wise by polars, or the file's own bytes"
    lesson = "Seed 003: 1M rows in 36 s row by row, 23.7 s batched, 1.7 s with COPY."
    seed = "003, 004"
    streams_raw_csv = True

    first_format = "csv"

    def open(self) -> None:
        super().open()
        self._plain = plain_quote(self.ctx)

    def copy_sql(self) -> sql.Composed:
        return csv_copy_sql(self, plain=self._format == "plain")

    def _send(self, copy: psycopg.Copy, frame: pl.DataFrame) -> None:
        copy.write(frame.write_csv(include_header=False))

    def prepare(self, frame: pl.DataFrame) -> object:
        return frame.write_csv(include_header=False).encode()

    def write_prepared(self, prepared: object, frame: pl.DataFrame) -> int:
        assert isinstance(prepared, bytes)
        self._write(prepared)
        self._sent += frame.height
        return frame.height

    def write_raw(self, data: bytes, lines: int = -1) -> None:
        """The file's own records, in text format or CSV (_raw_format). COPY counts an error's
        line within its statement: the text statement's lines are kept for the CSV one after it."""
        self._switch(self._raw_format(data))
        self._write(data)
        if self._format == "plain":
            self._sent += lines if lines >= 0 else data.count(b"\n")


@register
class CopyBinary(_CopyStrategy):
    """Typed batches as binary COPY; a batch that cannot be typed exactly goes as text COPY.

    The server parses the text batches itself, so a value polars would read differently
    (24:00, year 0000, 1e400, `infinity`) is stored, or refused, exactly as PostgreSQL's
    own input would. Switching format ends one COPY statement and starts the next, in the
    same transaction; `_base` keeps the rows of the earlier statements, so an error's row
    is still counted from the start of the stream.

    Warm start (`ctx.warm`, core.load.warm_start): the encoder (polars, pyarrow, numpy and pgpq,
    some 0.2 s of imports) is built on a thread while the file's first records go as they
    are, in a CSV COPY statement, so the server works from the first moment.
    """

    id = "copy-binary"
    row_per_line = True  # text COPY also holds one row per line: newlines are escaped
    title = "COPY (binary)"
    summary = "COPY FROM STDIN (FORMAT binary): values sent in PostgreSQL's binary form"
    lesson = "Seed 002: binary transfer cut client CPU for 1M rows from 162 s (text) to about 8 s."
    seed = "002"
    batch_stages = 4  # text, typed columns and encoded bytes at once: a 1 GB file stays under 300 MB
    warms_with_raw_csv = True

    def copy_sql(self) -> sql.Composed:
        if self._format in ("csv", "plain"):
            return csv_copy_sql(self, plain=self._format == "plain")
        if self._format == "text":
            return super().copy_sql()
        freeze = sql.SQL(", FREEZE" if self.ctx.freeze else "")
        return sql.SQL("COPY {} ({}) FROM STDIN (FORMAT binary{})").format(
            self.ctx.table.ident(), self.column_list(), freeze)

    first_format = "binary"

    def open(self) -> None:
        self._told = False
        self._arrow: ArrowEncoder | None = None
        self._arrow_error: BaseException | None = None
        self.ready = threading.Event()  # the encoder is built
        self._warming: threading.Thread | None = None
        super().open()
        self._plain = plain_quote(self.ctx) if self.ctx.warm else None
        if not self.ctx.warm or encoder_loaded():
            self._build_encoder()
            if self._arrow_error is not None:
                raise self._arrow_error

    def _warm_up(self) -> None:
        """Build the encoder on a thread (once). Started after the first raw chunk is on its way:
        loading polars' library holds the GIL for tens of milliseconds, which the first read,
        the COPY's start and the first write would otherwise wait for."""
        if self._warming is None and not self.ready.is_set():
            self._warming = threading.Thread(target=self._build_encoder, name="sluice-warm-up", daemon=True)
            self._warming.start()

    def _build_encoder(self) -> None:
        try:
            import polars

            polars.DataFrame  # noqa: B018 - loads a deferred polars here, before anyone else parses
            columns = arrow_columns(self.ctx.columns, self.ctx.types, self.ctx.utc)
            self._arrow = ArrowEncoder(columns) if columns is not None else None
            if self._arrow is not None:
                warm_binary_typing()
            else:
                which = ", ".join(f"{c!r} ({t})" for c, t in untypable(self.ctx.columns, self.ctx.types))
                self.ctx.log(f"copy-binary: no exact binary form here for {which} (unconstrained numeric keeps "
                             "each value's own scale; arrays, enums, domains...): rows go as text COPY, which "
                             "the server parses")
        except BaseException as exc:  # noqa: BLE001 - raised where the encoder is first needed
            self._arrow_error = exc
        finally:
            self.ready.set()

    def close(self) -> None:
        # A load that failed early (a bad value in the raw part, then parsed again) must not
        # leave the warm-up importing polars while the rerun's reader imports it too: the
        # rerun saw a half-loaded module ("no attribute 'DataFrame'"), found by a QA pass.
        warming = getattr(self, "_warming", None)  # (close() runs after a failed open() too)
        if warming is not None:
            warming.join()
        super().close()

    def _encoder(self) -> ArrowEncoder | None:
        self._warm_up()
        self.ready.wait()
        if self._arrow_error is not None:
            raise self._arrow_error
        return self._arrow

    def _prepare(self, copy: psycopg.Copy, cur: psycopg.Cursor[Any]) -> None:
        if self._format == "binary":
            arrow = self._encoder()
            assert arrow is not None
            copy.write(arrow.header())  # psycopg then leaves the header (and trailer) to us

    def prepare(self, frame: pl.DataFrame) -> object:
        """Binary tuples (a memoryview), or the batch in COPY's text format (bytes) when some
        value cannot be typed exactly here. Runs on the encoding stage's thread."""
        arrow = self._encoder()
        binary = arrow.encode(frame) if arrow is not None else None
        return binary if binary is not None else text_copy_rows(frame)

    @staticmethod
    def typed(prepared: object) -> bool:
        """What prepare() made is binary: every value was typed exactly, none of them a relative
        date word (core.relative_dates), which no exact date or time form takes."""
        return isinstance(prepared, memoryview)

    def write(self, frame: pl.DataFrame) -> int:
        return self.write_prepared(self.prepare(frame), frame)

    def write_prepared(self, prepared: object, frame: pl.DataFrame) -> int:
        assert isinstance(prepared, (memoryview, bytes))
        self._switch("text" if isinstance(prepared, bytes) else "binary")
        if isinstance(prepared, bytes):
            self._tell_once()
        self._write(prepared)
        self._sent += frame.height
        return frame.height

    def write_warm(self, data: bytes, records: int) -> None:
        """The file's own records (warm start), in text format or CSV (_raw_format)."""
        self._switch(self._raw_format(data))
        self._write(data)
        self._sent += records
        self._warm_up()

    @property
    def sending_raw(self) -> bool:
        """The statement now open (or the one that failed) carries the file's own bytes."""
        return self._format in ("csv", "plain")

    def _tell_once(self) -> None:
        if self._arrow is not None and not self._told:
            self._told = True
            column, value = self._arrow.untyped or ("", "")
            which = f"column {column!r} holds {value!r}, which is" if column else "a batch holds values"
            self.ctx.log(f"copy-binary: {which} not typed here exactly as PostgreSQL reads it (e.g. infinity, "
                         "24:00, a decimal to round); such batches go as text COPY, which the server parses")

    def _end_copy(self) -> None:
        if self._copy is not None and self._format == "binary":
            try:
                self._copy.write(_BINARY_TRAILER)
            except psycopg.Error as exc:
                self._stack = self._copy = None
                raise WriteFailed(exc, self._error_row(exc)) from exc
        super()._end_copy()


def encoder_loaded() -> bool:
    """polars (not the CLI's deferred stand-in), pyarrow, numpy and pgpq are imported already
    (the window, a second load in one process): a warm start has nothing to hide then, and
    every batch goes typed from the first."""
    return all(type(sys.modules.get(name)) is types.ModuleType for name in ("polars", "pyarrow", "numpy", "pgpq"))


def warm_binary_typing() -> None:
    """Import what typing dates and timestamps needs (numpy), on the warm-up thread, and lend
    numpy to the CSV cutter, whose counts then leave the GIL to the other stages."""
    from core.relative_dates import polars_loaded
    from core.sources.csv.records import lend_numpy
    from core.strategies import fixed_width_times  # noqa: F401

    lend_numpy()
    polars_loaded()  # (the encoder was built with it: polars is imported whole)


_BINARY_TRAILER = b"\xff\xff"
