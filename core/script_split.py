"""A big COPY block of a data script over two branches of a two-phase commit (core/script_load.py).

A COPY block of at least SPLIT_BYTES goes over two connections where the server has
two-phase commit: each streams its own rows of the block with its own COPY (so the server
parses the block on two cores), both branches of one two-phase transaction
(core/protocols/two_phase.py), still all or nothing. Everything else stays on the first
connection, in file order: ScriptLoad sends it and owns a BlockSplit, which decides the
tables whose blocks may be split, sends such a block, and ends the transaction (the group's
branches, or the first connection alone).
"""

from __future__ import annotations

import mmap
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeGuard

import psycopg
from psycopg import sql

from core.db import connect
from core.diagnose import server_reason
from core.errors import Cancelled, LoadFailed
from core.events import Phase
from core.protocols.two_phase import LOCK_TIMEOUT, LOCK_WAIT, TwoPhaseGroup
from core.sources.sql_source import CACHE_LIMIT, CopyChunk, SqlScriptSource
from core.sources.sqlscript_chunks import Chunk
from core.spec import CommitMode, ErrorPolicy, LoadMode

if TYPE_CHECKING:
    from core.job import LoadJob
    from core.script_load import _Table

    Locate = Callable[[int], tuple[int, int | None]]
    Explain = Callable[[psycopg.Error, _Table, Locate], Exception]

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


class BlockSplit:
    """The split of a script's big COPY blocks, for one ScriptLoad; `explain` is its error reader."""

    def __init__(self, job: LoadJob, dsn: str, source: SqlScriptSource, explain: Explain) -> None:
        self.job, self.dsn, self.source, self.explain = job, dsn, source, explain
        self.splittable: set[tuple[str | None, str]] = set()  # tables whose big blocks may be split
        self.group: TwoPhaseGroup | None = None
        self.other: psycopg.Connection[Any] | None = None  # branch 1, opened at the first split
        self.halt = threading.Event()  # one half failed (or Cancel): the other stops writing
        self.splits: list[str] = []  # what went over two branches, for the log and --json reason
        self._unhooks: list[Callable[[], None]] = []

    # -- set-up -------------------------------------------------------------------------

    def prepare(self, conn: psycopg.Connection[Any], tables: dict[tuple[str | None, str], _Table],
                utf8: bool) -> None:
        """Decide the splittable tables on the control connection `conn` (before anything is
        written), which joins the two-phase group when there is any."""
        self.splittable = self._splittable(conn, tables, utf8)
        if self.splittable:
            conn.rollback()  # only catalog reads so far: the branch starts before anything is written
            self.group = TwoPhaseGroup(self.dsn, next(iter(tables.values())).ref.schema, 2)
            self.group.join(conn)

    def _splittable(self, conn: psycopg.Connection[Any], tables: dict[tuple[str | None, str], _Table],
                    utf8: bool) -> set[tuple[str | None, str]]:
        """The tables whose COPY blocks of SPLIT_BYTES or more may go over two branches.

        None when a block must stay on one connection: other commit or error settings; truncate
        (its lock would keep the second branch out) or ON CONFLICT (staged on this connection);
        a script decoded from another encoding; a server without client two-phase commit, or
        Citus; a script that disables triggers (its ALTER TABLE locks the table). Nor a table
        with a foreign key (a branch cannot see rows the other one wrote),
        or one that a table of this script references (its checks would not see the other
        branch's rows).
        """
        from core.protocols.target import inspect

        spec, source = self.job.spec, self.source
        if (spec.commit is not CommitMode.SINGLE or spec.on_error is not ErrorPolicy.ABORT
                or spec.target.mode is not LoadMode.APPEND or source.on_conflict or not utf8):
            return set()
        if any(getattr(t.info, "disable_triggers", False) for t in tables.values()):
            return set()  # ALTER TABLE ... DISABLE TRIGGER locks the table: the other branch would wait
        if source.size <= CACHE_LIMIT:  # the source holds its chunks: the sizes are known
            big = {c.target.key for c in source.load_chunks() if isinstance(c, CopyChunk) and c.length >= SPLIT_BYTES}
        else:
            big = {t.target.key for t in source.selected if t.kind == "copy"}
        if not big:
            return set()
        # The group's commit decision is written beside the first table (TwoPhaseGroup below):
        # inspect that one, so a user who may not write it there loads on one connection.
        server = inspect(conn, next(iter(tables.values())).ref)
        if server.citus or server.two_phase_blocker(2) is not None:
            return set()
        oids: dict[tuple[str | None, str], int | None] = {}
        for key, t in tables.items():
            row = conn.execute("SELECT to_regclass(%s)::oid", [t.ref.ident().as_string(conn)]).fetchone()
            oids[key] = row[0] if row else None
        mine = [o for o in oids.values() if o is not None]
        fks = conn.execute(
            "SELECT conrelid, confrelid FROM pg_constraint WHERE contype = 'f'"
            " AND (conrelid = ANY(%s::oid[]) OR confrelid = ANY(%s::oid[]))", [mine, mine]
        ).fetchall()
        tied = {child for child, _parent in fks} | {parent for child, parent in fks if child in mine}
        return {key for key in big if oids.get(key) is not None and oids[key] not in tied}

    # -- a big COPY block over two branches -----------------------------------------------

    def takes(self, chunk: Chunk) -> TypeGuard[CopyChunk]:
        """Is this chunk a block to send over two branches (if it has a row to cut at)?"""
        return (isinstance(chunk, CopyChunk) and chunk.length >= SPLIT_BYTES
                and chunk.target.key in self.splittable)

    def send(self, conn: psycopg.Connection[Any], t: _Table, chunk: CopyChunk, stmt: sql.Composed,
             end_stream: Callable[[], None]) -> bool:
        """The block sent over both branches at once, branch 1 on a thread; False: no row to cut at.

        `stmt` is the block's COPY; `end_stream` ends the first connection's COPY under way
        (called only once the block is known to be split).
        """
        job, path = self.job, str(self.source.path)
        end = chunk.offset + chunk.length
        with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            at = mm.find(b"\n", chunk.offset + chunk.length // 2, end)
            if at < 0 or at + 1 >= end:
                return False
            end_stream()
            pieces = _Pieces(mm, chunk.offset, at + 1, end, PIECE_BYTES)
            mine, theirs = _Branch(0, conn), _Branch(1, self.other)
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
        t.loaded += mine.rows + theirs.rows
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

        other = connect(self.dsn, options=LOCK_TIMEOUT)
        self.other = other  # closed by close() whatever happens next
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

        return self.explain(error, t, locate)

    # -- the end --------------------------------------------------------------------------

    @property
    def reason(self) -> str:
        """What went over two branches, for the result's (--json) reason; "" when nothing did."""
        return "; ".join(self.splits)

    def commit(self, conn: psycopg.Connection[Any]) -> None:
        """Commit the load: every branch of the group, or the one connection `conn`."""
        if self.group is not None:
            self.group.commit()
        else:
            conn.commit()

    def rollback(self, conn: psycopg.Connection[Any]) -> None:
        if self.group is not None:
            self.group.rollback()  # every branch, prepared or not
            return
        try:
            conn.rollback()
        except psycopg.Error:
            pass

    def unhook(self) -> None:
        """Cancel no longer reaches branch 1's connection (run() unhooks before closing)."""
        for unhook in self._unhooks:
            unhook()

    def close(self) -> None:
        """Branch 1's connection and the group's lock (the control connection is ScriptLoad's)."""
        if self.other is not None:
            self.other.close()
        if self.group is not None:
            self.group.close()


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
