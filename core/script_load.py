"""The fast way to load a data script: every selected table through COPY, one transaction.

COPY blocks go to `COPY ... FROM STDIN` as the file holds them (they are COPY text
already); INSERT rows go as CSV converted column-wise. Each table of the script goes
into its own table, in file order, and one commit makes them all visible (or none).
Rows of `INSERT ... ON CONFLICT DO NOTHING` statements are copied into a temporary
table and moved with `INSERT ... SELECT ... ON CONFLICT DO NOTHING` in file order, so a
row whose key is already there is kept and the new one dropped, as psql would; the
dropped rows are counted.

A COPY block of at least SPLIT_BYTES goes over two connections where the server has
two-phase commit, still all or nothing (core/script_split.py). Everything else stays on
the first connection, in file order.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import psycopg
from psycopg import sql

from core import relative_dates
from core.db import TableRef, connect, insert_into, table_columns
from core.diagnose import server_reason
from core.errors import BadRowError, Cancelled, ConfigError, LoadFailed, RefusedValue, RowProblem
from core.events import Phase
from core.script_split import BlockSplit
from core.sources.sql_source import CopyChunk, CsvChunk, ParsedChunk, SqlScriptSource
from core.sources.sqlscript_chunks import Chunk, TableInfo
from core.spec import CommitMode, ErrorPolicy, LoadMode, LoadSpec

if TYPE_CHECKING:
    from core.job import LoadJob, LoadResult
    from core.plan import Plan

_FORMATS = {
    "text": sql.SQL(""),
    "csvq": sql.SQL(" (FORMAT csv, QUOTE '''', NULL 'NULL')"),
    "csv": sql.SQL(" (FORMAT csv)"),
}


def takes_over(spec: LoadSpec, strategy: str, plan: Plan) -> bool:
    """Should this load of a SQL script go through COPY here, rather than the general job?"""
    from core import mapping as mp

    source = plan.source
    if not isinstance(source, SqlScriptSource):
        return False
    simple = (
        strategy == "copy-csv"
        and spec.commit is CommitMode.SINGLE
        and spec.on_error is ErrorPolicy.ABORT
        and spec.target.mode in (LoadMode.APPEND, LoadMode.TRUNCATE)
    )
    if source.several:
        if not simple:
            raise ConfigError(
                f"the {len(source.selected)} tables of this script load together only with strategy auto or "
                "copy-csv, single commit, the abort policy and mode append or truncate; for other settings, "
                "load one table at a time (pick it from the script's tables, or --script-table on the command line)"
            )
        return True
    if simple and mp.is_identity(plan.maps, source.columns()):
        # Its values go to COPY as the script spells them: one spelling a relative date word
        # (core.relative_dates) goes through the parsed rows instead, which refuse it.
        return source.refuse is None or not source.refuse.file_may_hold(source.path)
    if source.on_conflict and not strategy.startswith("script-"):
        if simple:
            raise ConfigError(
                "this script says ON CONFLICT DO NOTHING, which is loaded column for column into the table its rows "
                "name; with another column mapping, load it with a script-* strategy")
        raise ConfigError(
            "this script says ON CONFLICT DO NOTHING, which loads with strategy auto or copy-csv, single commit, "
            "the abort policy and mode append or truncate, or with a script-* strategy"
        )
    return False


def _ahead(chunks: Iterator[Chunk]) -> Iterator[Chunk]:
    """The chunks, each next one's CSV started before this one is sent (conversion overlaps COPY)."""
    held: Chunk | None = None
    try:
        for chunk in chunks:
            if isinstance(chunk, CsvChunk):
                chunk.prepare()
            if held is not None:
                yield held
            held = chunk
        if held is not None:
            yield held
            held = None
    finally:
        if isinstance(held, CsvChunk):
            held.wait()  # a load that stopped early leaves no thread behind


@dataclass
class _Table:
    info: TableInfo
    ref: TableRef
    columns: list[str]
    stage: TableRef | None = None  # ON CONFLICT DO NOTHING: rows wait here
    staged: int = 0
    loaded: int = 0  # rows this load put into the table (the history lists each table's)
    timed: tuple[tuple[str, str], ...] = ()  # (c<k>, column) of its date and time columns (relative_dates)


@dataclass
class _Stream:
    """The COPY being written, and where its records came from (for error lines)."""

    table: _Table
    fmt: str
    copy: Any
    cursor: Any
    manager: Any  # the context manager that opened the COPY; leaving it ends the COPY
    records: int = 0
    origins: list[tuple[int, Chunk]] = field(default_factory=list)  # (first record, chunk)


class ScriptLoad:
    def __init__(self, job: LoadJob, dsn: str, plan: Plan) -> None:
        assert isinstance(plan.source, SqlScriptSource)
        self.job, self.dsn, self.plan, self.source = job, dsn, plan, plan.source
        self.spec = job.spec
        self.tables: dict[tuple[str | None, str], _Table] = {}
        self.stream: _Stream | None = None
        self.dropped = 0
        # Splitting a big COPY block over two branches of a two-phase commit (core/script_split.py):
        self.split = BlockSplit(job, dsn, self.source, self._explain)
        self._unhooks: list[Callable[[], None]] = []

    def run(self) -> LoadResult:
        from core.job import LoadResult

        job, spec = self.job, self.spec
        job._emit(Phase.PREPARING, force=True)
        conn = connect(self.dsn)
        self._unhooks.append(job.cancel.add_hook(conn.cancel_safe))
        try:
            self._prepare(conn)
            job._emit(Phase.LOADING, force=True)
            for chunk in _ahead(self.source.load_chunks()):
                job.cancel.check()
                self.source.check_unchanged()
                self._send(conn, chunk)
                job.rows_read += chunk.rows
                job.bytes_read = chunk.bytes_end
                job._emit(Phase.LOADING)
            self._end_stream()
            job._emit(Phase.FINISHING, force=True)
            for t in self.tables.values():
                self._move(conn, t)
            self._triggers(conn, "ENABLE")
            job.cancel.check()
            self.split.commit(conn)
        except Cancelled:
            self._rollback(conn)
            job._emit(Phase.CANCELLED, force=True)
            raise
        except psycopg.Error as exc:
            error = self._explain(exc)  # before the rollback forgets the stream
            self._rollback(conn)
            if isinstance(exc, psycopg.errors.QueryCanceled) and job.cancel.cancelled:
                job._emit(Phase.CANCELLED, force=True)
                raise Cancelled() from None
            raise error from None
        except BaseException:
            self._rollback(conn)
            raise
        finally:
            for unhook in self._unhooks:
                unhook()
            self.split.unhook()
            conn.close()
            self.split.close()
        job._emit(Phase.DONE, force=True)
        for t in self.tables.values():
            job.on_log(f"{t.info.target.display()} -> {t.ref.display()}: {t.info.rows:,} rows")
        if self.dropped:
            job.on_log(f"{self.dropped:,} rows dropped: their key was already in the table (ON CONFLICT DO NOTHING)")
        return LoadResult(
            spec.strategy, job.rows_read, job.rows_loaded, 0, time.monotonic() - job._t0, job.bytes_read,
            load_seconds=job._load_seconds(), rows_dropped=self.dropped, reason=self.split.reason,
            tables=tuple(t.ref.display() for t in self.tables.values()) if len(self.tables) > 1 else (),
            table_rows=tuple((t.ref.display(), t.loaded) for t in self.tables.values()) if len(self.tables) > 1
            else (),
        )

    # -- set-up -------------------------------------------------------------------------

    def _prepare(self, conn: psycopg.Connection[Any]) -> None:
        override = not self.source.several and bool(self.spec.target.table)
        for info in self.source.selected:
            if override:
                ref = self.plan.target
            else:
                ref = TableRef(info.target.table, self.spec.target.schema or info.target.schema)
            cols = table_columns(conn, ref)
            if cols is None:
                raise ConfigError(f"table {ref.display()} does not exist (the script fills it; create it first)")
            if info.target.columns:
                names = list(info.target.columns)
            else:
                computed = [c.name for c in table_columns(conn, ref, generated=True) or [] if c.generated]
                if computed:
                    # Its rows go to COPY as they are, DEFAULT included; the general load drops the column.
                    raise ConfigError(
                        f"{ref.display()} has generated column{'s' if len(computed) > 1 else ''} "
                        f"({', '.join(computed)}), which this script's INSERTs fill with DEFAULT: load that table "
                        "on its own (pick it from the script's tables, or --script-table), or dump with "
                        "--column-inserts")
                if info.width > len(cols):
                    raise ConfigError(
                        f"table {ref.display()} has {len(cols)} columns; the script's rows have {info.width}"
                    )
                names = [c.name for c in cols[: info.width]]
            types = {c.name: c.type for c in cols}
            timed = tuple((f"c{k}", n) for k, n in enumerate(names) if relative_dates.is_time_type(types.get(n, "")))
            self.tables[info.target.key] = _Table(info, ref, names, timed=timed)
        # Relative date words go to COPY as the script spells them: where a table has a date or time
        # column and the file spells one of the words, each of its chunks is looked at before it goes.
        self.refusing = any(t.timed for t in self.tables.values()) and \
            relative_dates.RelativeDates.file_may_hold(self.source.path)
        self.split.prepare(conn, self.tables, self._utf8)
        self._triggers(conn, "DISABLE")
        if self.spec.target.mode is LoadMode.TRUNCATE:
            # One statement for all: tables whose foreign keys point at each other can only be emptied together.
            conn.execute(sql.SQL("TRUNCATE {}").format(sql.SQL(", ").join(t.ref.ident() for t in self.tables.values())))
        for t in self.tables.values():
            if t.info.on_conflict:
                t.stage = TableRef(f"_sluice_ocdn_{uuid.uuid4().hex[:12]}")
                conn.execute(sql.SQL("CREATE TEMP TABLE {} (LIKE {} INCLUDING DEFAULTS) ON COMMIT DROP").format(
                    t.stage.ident(), t.ref.ident()))
                conn.execute(sql.SQL("ALTER TABLE {} ADD COLUMN _sluice_ord bigint GENERATED ALWAYS AS IDENTITY")
                             .format(t.stage.ident()))

    @property
    def _utf8(self) -> bool:
        return self.source.encoding.replace("_", "-").lower() in ("utf-8", "utf8")

    # -- sending ------------------------------------------------------------------------

    refusing = False  # some chunk may spell a relative date word in a date or time column

    def _refuse(self, t: _Table, chunk: Chunk) -> bytes | None:
        """Raise RefusedValue for the chunk's first row holding a relative date word in a date or
        time column (core.relative_dates); a CsvChunk's CSV, made to look at, is returned to send."""
        rd = relative_dates
        if isinstance(chunk, ParsedChunk):
            self._refused_in(t, chunk.frame, chunk.lines)
            return None
        if isinstance(chunk, CsvChunk):
            data = chunk.data
            if rd.RelativeDates.may_hold(data):
                self._refused_in(t, rd.script_rows(data, "csvq", len(t.columns)), chunk.lines)
            return data
        line = chunk.first_line
        for piece in chunk.pieces(str(self.source.path)):  # a COPY block: a row a line, a megabyte at a time
            if rd.RelativeDates.may_hold(piece):
                text = piece if self._utf8 else piece.decode(self.source.encoding).encode()
                frame = rd.script_rows(text, "text", len(t.columns))
                self._refused_in(t, frame, [line + k for k in range(frame.height)])
            line += piece.count(b"\n")
        return None

    def _refused_in(self, t: _Table, frame: Any, lines: list[int]) -> None:
        found = relative_dates.first_refused(frame, t.timed)
        if found is not None:
            row, column, value = found
            raise RefusedValue(f"column {column!r}, value {value[:60]!r}: {relative_dates.REASON}",
                               path=str(self.source.path), line=lines[row] if row < len(lines) else None)

    def _send(self, conn: psycopg.Connection[Any], chunk: Chunk) -> None:
        t = self.tables[chunk.target.key]
        csv_data = self._refuse(t, chunk) if self.refusing and t.timed else None
        if self.split.takes(chunk) and self.split.send(conn, t, chunk, self._copy_sql(t, "text"), self._end_stream):
            return
        fmt = "text" if isinstance(chunk, CopyChunk) else "csvq" if isinstance(chunk, CsvChunk) else "csv"
        s = self.stream
        if s is None or s.table is not t or s.fmt != fmt:
            self._end_stream()
            cur = conn.cursor()
            manager = cur.copy(self._copy_sql(t, fmt))
            s = self.stream = _Stream(t, fmt, manager.__enter__(), cur, manager)
        s.origins.append((s.records, chunk))
        if isinstance(chunk, CopyChunk):
            if self._utf8:
                for view in chunk.views(str(self.source.path)):  # the file's own bytes, no copy in Python
                    s.copy.write(view)
            else:
                for piece in chunk.pieces(str(self.source.path)):
                    s.copy.write(piece.decode(self.source.encoding).encode())
        elif isinstance(chunk, CsvChunk):
            s.copy.write(csv_data if csv_data is not None else chunk.data)
        else:
            assert isinstance(chunk, ParsedChunk)
            s.copy.write(chunk.frame.write_csv(include_header=False))
        s.records += chunk.rows

    def _copy_sql(self, t: _Table, fmt: str) -> sql.Composed:
        dest = t.stage or t.ref
        cols = sql.SQL(", ").join(sql.Identifier(c) for c in t.columns)
        return sql.SQL("COPY {} ({}) FROM STDIN").format(dest.ident(), cols) + _FORMATS[fmt]

    def _end_stream(self) -> None:
        s, self.stream = self.stream, None
        if s is None:
            return
        try:
            s.manager.__exit__(None, None, None)
        except psycopg.Error:
            self.stream = s  # for _explain
            raise
        n = s.cursor.rowcount if s.cursor.rowcount >= 0 else s.records
        s.cursor.close()
        if s.table.stage is not None:
            s.table.staged += n
        else:
            self.job.rows_loaded += n
            s.table.loaded += n

    def _triggers(self, conn: psycopg.Connection[Any], action: str) -> None:
        """pg_dump --disable-triggers: the script turns a table's triggers off while its rows load and
        on again after, as psql would run it, in the load's own transaction (a superuser's right)."""
        for t in self.tables.values():
            if getattr(t.info, "disable_triggers", False):
                if action == "DISABLE":
                    self.job.on_log(f"the script turns off {t.ref.display()}'s triggers while its rows load "
                                    "(pg_dump --disable-triggers): so does this load, so its foreign keys are not "
                                    "checked for them")
                conn.execute(sql.SQL("ALTER TABLE {} {} TRIGGER ALL").format(t.ref.ident(), sql.SQL(action)))

    # -- the end --------------------------------------------------------------------------

    def _move(self, conn: psycopg.Connection[Any], t: _Table) -> None:
        if t.stage is None:
            return
        cols = sql.SQL(", ").join(sql.Identifier(c) for c in t.columns)
        cur = conn.execute(
            sql.SQL("{} SELECT {} FROM {} ORDER BY _sluice_ord ON CONFLICT DO NOTHING").format(
                insert_into(t.ref, t.columns), cols, t.stage.ident())
        )
        moved = max(cur.rowcount, 0)
        self.job.rows_loaded += moved
        t.loaded += moved
        self.dropped += t.staged - moved
        conn.execute(sql.SQL("DROP TABLE {}").format(t.stage.ident()))

    def _rollback(self, conn: psycopg.Connection[Any]) -> None:
        s, self.stream = self.stream, None
        if s is not None:
            try:
                s.manager.__exit__(RuntimeError, RuntimeError("aborted"), None)
            except (psycopg.Error, RuntimeError):
                pass
        self.split.rollback(conn)

    def _explain(self, exc: psycopg.Error, table: _Table | None = None,
                 locate: Callable[[int], tuple[int, int | None]] | None = None) -> Exception:
        """The error as the user should read it; a refused row with its file line.

        `table` and `locate` (a record of the failed COPY -> its row and file line) describe
        the COPY that failed when it is not the stream (a branch of a split block).
        """
        from core.strategies.copy import copy_error_row

        reason = server_reason(exc)
        if isinstance(exc, psycopg.OperationalError) and not isinstance(exc, psycopg.errors.QueryCanceled):
            return LoadFailed(f"the connection failed during the load: {reason}; nothing was loaded")
        record = copy_error_row(exc)
        s = self.stream
        if table is None and s is not None:
            table, locate = s.table, lambda r: (r, _stream_line(s, r))
        if record is None or table is None or locate is None:
            return LoadFailed(f"{self.source.path}: {reason}; nothing was loaded")
        row, line = locate(record)
        where = f" (table {table.ref.display()})"
        return BadRowError(RowProblem(str(self.source.path), row, line, None, None, reason + where))


def _stream_line(s: _Stream, record: int) -> int | None:
    for first, chunk in reversed(s.origins):
        if first <= record:
            i = record - first
            if isinstance(chunk, CopyChunk):
                return chunk.first_line + i
            return chunk.lines[i] if i < len(chunk.lines) else None
    return None

