"""The fast way to load a data script: every selected table through COPY, one transaction.

COPY blocks go to `COPY ... FROM STDIN` as the file holds them (they are COPY text
already); INSERT rows go as CSV converted column-wise. Each table of the script goes
into its own table, in file order, and one commit makes them all visible (or none).
Rows of `INSERT ... ON CONFLICT DO NOTHING` statements are copied into a temporary
table and moved with `INSERT ... SELECT ... ON CONFLICT DO NOTHING` in file order, so a
row whose key is already there is kept and the new one dropped, as psql would; the
dropped rows are counted.

A COPY block of at least SPLIT_BYTES goes over two connections where the server has
two-phase commit: each streams its own rows of the block with its own COPY (so the server
parses the block on two cores), both branches of one two-phase transaction
(core/protocols/two_phase.py), still all or nothing. Everything else stays on the first
connection, in file order.
"""

from __future__ import annotations

import mmap
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import psycopg
from psycopg import sql

from core import janitor
from core.db import TableRef, connect, table_columns
from core.diagnose import server_reason
from core.errors import BadRowError, Cancelled, ConfigError, LoadFailed, RowProblem
from core.events import Phase
from core.protocols.two_phase import LOCK_TIMEOUT, LOCK_WAIT, TwoPhaseGroup
from core.sources.sql_source import CACHE_LIMIT, CopyChunk, CsvChunk, ParsedChunk, SqlScriptSource
from core.sources.sqlscript_parser import Chunk, TableInfo
from core.spec import CommitMode, ErrorPolicy, LoadMode, LoadSpec

if TYPE_CHECKING:
    from core.job import LoadJob, LoadResult
    from core.plan import Plan

SPLIT_BYTES = 8 << 20
"""A COPY block this big or bigger is cut in two and sent over two branches of a two-phase commit
(where that is allowed). The split costs about 12 ms (a second connection, the lock connection,
PREPARE and COMMIT PREPARED twice, the decision's rows). Measured on the 2-core machine against
the embedded PostgreSQL 18, loads of the bench's flights rows, one connection vs split (in fixed
halves, before PIECE_BYTES), medians of 5: idle, 1 MB 0.034 vs 0.039 s, 2 MB 0.059 vs 0.054 s,
4 MB 0.107 vs 0.082 s, 8 MB 0.205 vs 0.147 s, 45 MB 1.02 vs 0.65 s; with another load taking most
of a core, 4 MB 0.127 vs 0.138 s (a loss), 8 MB 0.212 vs 0.191 s. From 8 MB the split wins in both."""
PIECE_BYTES = 256 << 10
"""The split block goes out in pieces of whole rows about this big: each branch takes the next
piece of its half, then the last ones of the other's, so both COPYs end within a piece of each
other (with fixed halves one ended 75 ms after the other on the bench's 45 MB block: the rows of
the first half cost the server more). 256 KB, 1 MB and 4 MB pieces measured the same within
noise on the whole load (0.61-0.63 s); the smallest leaves the shortest tail. Progress and Cancel
act between pieces."""

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
                f"loading the {len(source.selected)} tables of this script in one run uses copy-csv with "
                "--commit single, --on-error abort and mode append or truncate; pick one table "
                "(--script-table) for other settings"
            )
        return True
    if simple and mp.is_identity(plan.maps, source.columns()):
        return True
    if source.on_conflict and not strategy.startswith("script-"):
        raise ConfigError(
            "this script says ON CONFLICT DO NOTHING: load it with copy-csv, --commit single, --on-error abort "
            "and mode append or truncate, or with a script-* strategy"
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


class _Halted(Exception):
    """The other branch failed: this branch's COPY ends with an error too."""


class _Pieces:
    """A split block's rows, handed out in pieces of whole rows to two branches.

    Branch i takes pieces from the front of its own half; when that is used up, from the back
    of the other's, so neither waits while the other has rows left. COPY text ends every row
    with a raw newline (newlines in values are escaped), so a piece starts after one.
    """

    def __init__(self, mm: mmap.mmap, lo: int, cut: int, hi: int, size: int) -> None:
        self.mm, self.size = mm, size
        self.left = [[lo, cut], [cut, hi]]  # each half's rows not yet taken
        self._lock = threading.Lock()

    def take(self, i: int) -> tuple[int, int] | None:
        with self._lock:
            own, other = self.left[i], self.left[1 - i]
            if own[0] < own[1]:
                lo = own[0]
                at = self.mm.find(b"\n", lo + self.size - 1, own[1]) if lo + self.size < own[1] else -1
                own[0] = at + 1 if at >= 0 else own[1]
                return lo, own[0]
            if other[0] < other[1]:
                hi = other[1]
                at = self.mm.rfind(b"\n", other[0], hi - self.size) if hi - self.size > other[0] else -1
                other[1] = at + 1 if at >= 0 else other[0]
                return other[1], hi
            return None


@dataclass
class _Branch:
    """One branch's share of a split block, and what its connection did with it."""

    index: int
    conn: psycopg.Connection[Any] | None  # branch 1 connects on its own thread, at its first split
    sent: int = 0  # bytes written so far (read by the main thread for progress)
    pieces: list[tuple[int, int]] = field(default_factory=list)  # in the order its COPY got them
    rows: int = 0  # rows the server took, once its COPY ended
    error: BaseException | None = None


class ScriptLoad:
    def __init__(self, job: LoadJob, dsn: str, plan: Plan) -> None:
        assert isinstance(plan.source, SqlScriptSource)
        self.job, self.dsn, self.plan, self.source = job, dsn, plan, plan.source
        self.spec = job.spec
        self.tables: dict[tuple[str | None, str], _Table] = {}
        self.stream: _Stream | None = None
        self.dropped = 0
        # Splitting a big COPY block over two branches of a two-phase commit (SPLIT_BYTES):
        self.splittable: set[tuple[str | None, str]] = set()  # tables whose big blocks may be split
        self.group: TwoPhaseGroup | None = None
        self.other: psycopg.Connection[Any] | None = None  # branch 1, opened at the first split
        self.halt = threading.Event()  # one half failed (or Cancel): the other stops writing
        self.splits: list[str] = []  # what went over two branches, for the log and --json reason
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
            job.cancel.check()
            if self.group is not None:
                self.group.commit()
            else:
                conn.commit()
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
            conn.close()
            if self.other is not None:
                self.other.close()
            if self.group is not None:
                self.group.close()
        job._emit(Phase.DONE, force=True)
        for t in self.tables.values():
            job.on_log(f"{t.info.target.display()} -> {t.ref.display()}: {t.info.rows:,} rows")
        if self.dropped:
            job.on_log(f"{self.dropped:,} rows dropped: their key was already in the table (ON CONFLICT DO NOTHING)")
        return LoadResult(
            spec.strategy, job.rows_read, job.rows_loaded, 0, time.monotonic() - job._t0, job.bytes_read,
            load_seconds=job._load_seconds(), rows_dropped=self.dropped, reason="; ".join(self.splits),
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
                if info.width > len(cols):
                    raise ConfigError(
                        f"table {ref.display()} has {len(cols)} columns; the script's rows have {info.width}"
                    )
                names = [c.name for c in cols[: info.width]]
            self.tables[info.target.key] = _Table(info, ref, names)
        self.splittable = self._splittable(conn)
        if self.splittable:
            conn.rollback()  # only catalog reads so far: the branch starts before anything is written
            self.group = TwoPhaseGroup(self.dsn, next(iter(self.tables.values())).ref.schema, 2)
            self.group.join(conn)
        for t in self.tables.values():
            if self.spec.target.mode is LoadMode.TRUNCATE:
                conn.execute(sql.SQL("TRUNCATE {}").format(t.ref.ident()))
            if t.info.on_conflict:
                t.stage = TableRef(f"_sluice_ocdn_{uuid.uuid4().hex[:12]}")
                conn.execute(sql.SQL("CREATE TEMP TABLE {} (LIKE {} INCLUDING DEFAULTS) ON COMMIT DROP").format(
                    t.stage.ident(), t.ref.ident()))
                conn.execute(sql.SQL("ALTER TABLE {} ADD COLUMN _sluice_ord bigint GENERATED ALWAYS AS IDENTITY")
                             .format(t.stage.ident()))

    def _splittable(self, conn: psycopg.Connection[Any]) -> set[tuple[str | None, str]]:
        """The tables whose COPY blocks of SPLIT_BYTES or more may go over two branches.

        None when a block must stay on one connection: other commit or error settings; truncate
        (its lock would keep the second branch out) or ON CONFLICT (staged on this connection);
        a script decoded from another encoding; a server without client two-phase commit, or
        Citus. Nor a table with a foreign key (a branch cannot see rows the other one wrote),
        or one that a table of this script references (its checks would not see the other
        branch's rows).
        """
        from core.protocols.target import inspect

        spec, source = self.spec, self.source
        if (spec.commit is not CommitMode.SINGLE or spec.on_error is not ErrorPolicy.ABORT
                or spec.target.mode is not LoadMode.APPEND or source.on_conflict or not self._utf8):
            return set()
        if source.size <= CACHE_LIMIT:  # the source holds its chunks: the sizes are known
            big = {c.target.key for c in source.load_chunks() if isinstance(c, CopyChunk) and c.length >= SPLIT_BYTES}
        else:
            big = {t.target.key for t in source.selected if t.kind == "copy"}
        if not big:
            return set()
        server = inspect(conn, self.tables[next(iter(big))].ref)
        if not server.two_phase or server.citus:
            return set()
        # The commit decision is written beside the first table (janitor.DECISIONS) between the
        # two phases: a user who may not write it there loads on one connection.
        schema = next(iter(self.tables.values())).ref.schema
        book = TableRef(janitor.DECISIONS, schema).ident().as_string(conn)
        row = conn.execute(
            "SELECT COALESCE(has_table_privilege(to_regclass(%s), 'INSERT') AND has_table_privilege(to_regclass(%s), "
            "'DELETE'), has_schema_privilege(COALESCE(%s, current_schema()), 'CREATE'))", [book, book, schema]
        ).fetchone()
        if not (row and row[0]):
            return set()
        oids: dict[tuple[str | None, str], int | None] = {}
        for key, t in self.tables.items():
            row = conn.execute("SELECT to_regclass(%s)::oid", [t.ref.ident().as_string(conn)]).fetchone()
            oids[key] = row[0] if row else None
        mine = [o for o in oids.values() if o is not None]
        fks = conn.execute(
            "SELECT conrelid, confrelid FROM pg_constraint WHERE contype = 'f'"
            " AND (conrelid = ANY(%s::oid[]) OR confrelid = ANY(%s::oid[]))", [mine, mine]
        ).fetchall()
        tied = {child for child, _parent in fks} | {parent for child, parent in fks if child in mine}
        return {key for key in big if oids.get(key) is not None and oids[key] not in tied}

    @property
    def _utf8(self) -> bool:
        return self.source.encoding.replace("_", "-").lower() in ("utf-8", "utf8")

    # -- sending ------------------------------------------------------------------------

    def _send(self, conn: psycopg.Connection[Any], chunk: Chunk) -> None:
        t = self.tables[chunk.target.key]
        if (isinstance(chunk, CopyChunk) and chunk.length >= SPLIT_BYTES and chunk.target.key in self.splittable
                and self._split(conn, t, chunk)):
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
            s.copy.write(chunk.data)
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

    # -- a big COPY block over two branches -----------------------------------------------

    def _split(self, conn: psycopg.Connection[Any], t: _Table, chunk: CopyChunk) -> bool:
        """The block sent over both branches at once, branch 1 on a thread; False: no row to cut at."""
        job, path = self.job, str(self.source.path)
        end = chunk.offset + chunk.length
        with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            at = mm.find(b"\n", chunk.offset + chunk.length // 2, end)
            if at < 0 or at + 1 >= end:
                return False
            self._end_stream()
            pieces = _Pieces(mm, chunk.offset, at + 1, end, PIECE_BYTES)
            mine, theirs = _Branch(0, conn), _Branch(1, self.other)
            stmt = self._copy_sql(t, "text")
            rows0, bytes0 = job.rows_read, job.bytes_read

            def progress(check: bool = True) -> None:
                if check:
                    job.cancel.check()
                sent = mine.sent + theirs.sent
                job.rows_read = rows0 + chunk.rows * sent // max(1, chunk.length)  # exact once both have ended
                job.bytes_read = max(bytes0, chunk.offset + sent)
                job._emit(Phase.LOADING)

            worker = threading.Thread(target=self._branch, args=(stmt, pieces, theirs), name="sluice-script-half",
                                      daemon=True)
            # Both branches hold their rows until the end: a key in both would wait forever.
            conn.execute("SELECT set_config('lock_timeout', %s, true)", [LOCK_WAIT])
            self.halt.clear()
            worker.start()  # connecting (at the first split) and starting its COPY overlap with ours
            try:
                self._branch(stmt, pieces, mine, progress)
            finally:
                if mine.error is not None:
                    self.halt.set()
                    if self.other is not None:
                        self.other.cancel_safe()  # the other branch stops now, not at its next piece
                while worker.is_alive():
                    worker.join(0.1)
                    if mine.error is None and theirs.error is None:
                        progress(check=False)  # Cancel: the hooks cancel both connections
        job.rows_read = rows0  # the caller adds the block's rows
        if mine.error is not None or theirs.error is not None:
            raise self._split_error(t, chunk, mine, theirs)
        conn.execute("SET LOCAL lock_timeout TO DEFAULT")
        job.rows_loaded += mine.rows + theirs.rows
        what = (f"{t.ref.display()}: its COPY block of {chunk.length / 1e6:.0f} MB went over two branches of a "
                "two-phase commit (two connections, one transaction)")
        self.splits.append(what)
        job.on_log(what)
        return True

    def _branch(self, stmt: sql.Composed, pieces: _Pieces, b: _Branch,
                progress: Callable[[], None] | None = None) -> None:
        """One branch's COPY of the pieces it takes; an error is kept in `b` (and stops the other branch)."""
        try:
            if b.conn is None:
                b.conn = self._connect_other()
            with b.conn.cursor() as cur:
                with cur.copy(stmt) as cp, memoryview(pieces.mm) as whole:
                    while (piece := pieces.take(b.index)) is not None:
                        if self.halt.is_set():
                            raise _Halted()  # leaving the COPY with it makes the server abort it
                        b.pieces.append(piece)
                        with whole[piece[0] : piece[1]] as view:  # the file's own bytes, no copy in Python
                            cp.write(view)
                        b.sent += piece[1] - piece[0]
                        if progress is not None:
                            progress()
                b.rows = cur.rowcount if cur.rowcount >= 0 else 0
        except BaseException as exc:  # noqa: BLE001 - kept for _split_error, which reports the cause
            b.error = exc
            self.halt.set()

    def _connect_other(self) -> psycopg.Connection[Any]:
        """Branch 1's connection, kept for the script's later big blocks (on branch 1's thread)."""
        from core.protocols.chunked import _with_options

        other = connect(self.dsn, **_with_options(self.dsn, LOCK_TIMEOUT))
        self.other = other  # closed by run() whatever happens next
        self._unhooks.append(self.job.cancel.add_hook(other.cancel_safe))
        if self.job.cancel.cancelled:
            raise Cancelled()  # cancelled before the hook was there to cancel it
        assert self.group is not None
        self.group.join(other)
        return other

    def _split_error(self, t: _Table, chunk: CopyChunk, mine: _Branch, theirs: _Branch) -> BaseException:
        if self.job.cancel.cancelled:
            return Cancelled()
        # Branch 0's own error first (it may only have stopped because branch 1 failed).
        b = mine if mine.error is not None and not isinstance(mine.error, _Halted) else theirs
        error = b.error
        assert error is not None
        if isinstance(error, psycopg.errors.LockNotAvailable):
            return LoadFailed(
                f"the two branches loading the COPY block of {t.ref.display()} waited on each other: a key of a "
                f"unique index is in both, and each branch holds its rows until the end ({server_reason(error)}); "
                "nothing was loaded"
            )
        if not isinstance(error, psycopg.Error):
            return error
        path = str(self.source.path)

        def locate(record: int) -> tuple[int, int | None]:
            """The block's row and the file's line of the branch's `record` (counted only now)."""
            seen = 0
            for lo, hi in b.pieces:
                n = _rows_between(path, lo, hi)
                if record < seen + n:
                    row = _rows_between(path, chunk.offset, lo) + record - seen
                    return row, chunk.first_line + row
                seen += n
            return record, None

        return self._explain(error, t, locate)

    # -- the end --------------------------------------------------------------------------

    def _move(self, conn: psycopg.Connection[Any], t: _Table) -> None:
        if t.stage is None:
            return
        cols = sql.SQL(", ").join(sql.Identifier(c) for c in t.columns)
        cur = conn.execute(
            sql.SQL("INSERT INTO {} ({}) SELECT {} FROM {} ORDER BY _sluice_ord ON CONFLICT DO NOTHING").format(
                t.ref.ident(), cols, cols, t.stage.ident())
        )
        moved = max(cur.rowcount, 0)
        self.job.rows_loaded += moved
        self.dropped += t.staged - moved
        conn.execute(sql.SQL("DROP TABLE {}").format(t.stage.ident()))

    def _rollback(self, conn: psycopg.Connection[Any]) -> None:
        s, self.stream = self.stream, None
        if s is not None:
            try:
                s.manager.__exit__(RuntimeError, RuntimeError("aborted"), None)
            except (psycopg.Error, RuntimeError):
                pass
        if self.group is not None:
            self.group.rollback()  # every branch, prepared or not
            return
        try:
            conn.rollback()
        except psycopg.Error:
            pass

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


def _rows_between(path: str, lo: int, hi: int) -> int:
    """Rows (newlines) in bytes lo .. hi - 1 of the file: only asked for an error's line."""
    rows = 0
    with open(path, "rb") as f:
        f.seek(lo)
        left = hi - lo
        while left > 0:
            data = f.read(min(left, 1 << 20))
            if not data:
                break
            rows += data.count(b"\n")
            left -= len(data)
    return rows
