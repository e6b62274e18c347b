"""Checkpoints for per-batch loads: how far a load got, kept in the target database.

Each per-batch commit updates this load's row in the same transaction as its rows,
so the row count in the checkpoint and the rows in the table can never disagree:
a resumed load skips exactly the source rows that were committed.

A load is identified by its source file and its target table, so a re-run of the
same profile (or the same `load` command) finds an unfinished earlier run.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql
from psycopg.rows import dict_row

from core.db import TableRef

BOOK = "_sluice_checkpoint"
CHUNKS = "_sluice_chunks"  # per-batch loads over several streams: one row per committed chunk
HEAD_BYTES = 1 << 16  # the fingerprint hashes the file's first 64 kB


@dataclass(frozen=True)
class Checkpoint:
    load_key: str
    source: str
    target: str
    fingerprint: str
    strategy: str
    rows_done: int  # source rows consumed: loaded + rejected
    rows_loaded: int
    rows_rejected: int
    bytes_done: int
    reject_bytes: int  # length of the reject file at the last commit
    finished: bool
    started_at: datetime
    updated_at: datetime

    def describe(self) -> str:
        when = self.updated_at.astimezone().strftime("%Y-%m-%d %H:%M")
        return (
            f"an earlier run of this load ({self.strategy}, started {self.started_at.astimezone():%Y-%m-%d %H:%M}) "
            f"stopped at {when} after {self.rows_done:,} source rows "
            f"({self.rows_loaded:,} loaded, {self.rows_rejected:,} rejected)"
        )


def book_ref(target: TableRef) -> TableRef:
    """The bookkeeping table lives beside the target, in the same schema."""
    return TableRef(BOOK, target.schema)


def load_key(source_path: str | Path, target: TableRef) -> str:
    ident = f"{Path(source_path).resolve()}\n{target.schema or ''}\n{target.name}"
    return hashlib.sha256(ident.encode("utf-8")).hexdigest()[:32]


def fingerprint(path: str | Path) -> str:
    """Size, modification time and the head's hash: enough to tell a different file."""
    from core.sources.many import fingerprint as of_files
    from core.sources.many import is_many

    if is_many(str(path)):  # a folder or a glob: every file's
        return of_files(str(path))
    st = os.stat(path)
    with open(path, "rb") as f:
        head = hashlib.sha256(f.read(HEAD_BYTES)).hexdigest()[:16]
    return f"{st.st_size}:{st.st_mtime_ns}:{head}"


def ensure_book(conn: psycopg.Connection[Any], target: TableRef) -> None:
    conn.execute(
        sql.SQL(
            "CREATE TABLE IF NOT EXISTS {} ("
            " load_key text PRIMARY KEY,"
            " source text NOT NULL,"
            " target text NOT NULL,"
            " fingerprint text NOT NULL,"
            " strategy text NOT NULL,"
            " rows_done bigint NOT NULL,"
            " rows_loaded bigint NOT NULL,"
            " rows_rejected bigint NOT NULL,"
            " bytes_done bigint NOT NULL,"
            " reject_bytes bigint NOT NULL,"
            " finished boolean NOT NULL,"
            " started_at timestamptz NOT NULL DEFAULT now(),"
            " updated_at timestamptz NOT NULL DEFAULT now())"
        ).format(book_ref(target).ident())
    )


def read(conn: psycopg.Connection[Any], target: TableRef, key: str) -> Checkpoint | None:
    """The load's checkpoint, or None when there is none (or no bookkeeping table yet)."""
    book = book_ref(target)
    exists = conn.execute("SELECT to_regclass(%s) IS NOT NULL", [_qualified(conn, book)]).fetchone()
    if not exists or not exists[0]:
        return None
    with conn.cursor(row_factory=dict_row) as cur:
        row = cur.execute(sql.SQL("SELECT * FROM {} WHERE load_key = %s").format(book.ident()), [key]).fetchone()
    if row and not row["finished"]:
        # A run over several streams commits chunks in any order: what is done is their sum.
        for k, v in chunk_totals(conn, target, key).items():
            row[k] += v
    return Checkpoint(**row) if row else None


def start(
    conn: psycopg.Connection[Any], target: TableRef, key: str, source: str, fp: str, strategy: str
) -> None:
    """A fresh run: the checkpoint row starts at zero (replacing a finished or abandoned one)."""
    conn.execute(
        sql.SQL(
            "INSERT INTO {} AS b (load_key, source, target, fingerprint, strategy, rows_done, rows_loaded,"
            " rows_rejected, bytes_done, reject_bytes, finished) VALUES (%s, %s, %s, %s, %s, 0, 0, 0, 0, 0, false)"
            " ON CONFLICT (load_key) DO UPDATE SET fingerprint = EXCLUDED.fingerprint,"
            " strategy = EXCLUDED.strategy, rows_done = 0, rows_loaded = 0, rows_rejected = 0, bytes_done = 0,"
            " reject_bytes = 0, finished = false, started_at = now(), updated_at = now()"
        ).format(book_ref(target).ident()),
        [key, source, target.display(), fp, strategy],
    )


def advance(
    conn: psycopg.Connection[Any],
    target: TableRef,
    key: str,
    *,
    rows_done: int,
    rows_loaded: int,
    rows_rejected: int,
    bytes_done: int,
    reject_bytes: int,
    expect_rows_done: int,
) -> None:
    """Move the checkpoint on, inside the batch's transaction.

    The WHERE on the previous position makes a second writer (two processes resuming
    the same load) fail loudly instead of loading rows twice.
    """
    cur = conn.execute(
        sql.SQL(
            "UPDATE {} SET rows_done = %s, rows_loaded = %s, rows_rejected = %s, bytes_done = %s,"
            " reject_bytes = %s, updated_at = now() WHERE load_key = %s AND rows_done = %s AND NOT finished"
        ).format(book_ref(target).ident()),
        [rows_done, rows_loaded, rows_rejected, bytes_done, reject_bytes, key, expect_rows_done],
    )
    if cur.rowcount != 1:
        raise CheckpointMoved()


def finish(conn: psycopg.Connection[Any], target: TableRef, key: str) -> None:
    conn.execute(
        sql.SQL("UPDATE {} SET finished = true, updated_at = now() WHERE load_key = %s").format(
            book_ref(target).ident()
        ),
        [key],
    )


def forget(conn: psycopg.Connection[Any], target: TableRef, key: str) -> None:
    if read(conn, target, key) is not None:
        conn.execute(sql.SQL("DELETE FROM {} WHERE load_key = %s").format(book_ref(target).ident()), [key])
        clear_chunks(conn, target, key)


# -- chunks: per-batch loads over several streams ------------------------------------------


@dataclass(frozen=True)
class Chunk:
    """A committed chunk: source rows lo .. hi - 1 (rejected ones included)."""

    lo: int
    hi: int
    rows_loaded: int
    rows_rejected: int
    bytes_end: int
    rejects: str  # the chunk's reject-file lines (CSV), written out when the load finishes
    by_bytes: bool = False  # lo .. hi - 1 are the file's bytes (a stream read them itself), not rows


def chunks_ref(target: TableRef) -> TableRef:
    return TableRef(CHUNKS, target.schema)


def ensure_chunks(conn: psycopg.Connection[Any], target: TableRef) -> None:
    conn.execute(
        sql.SQL(
            "CREATE TABLE IF NOT EXISTS {} (load_key text NOT NULL, lo bigint NOT NULL, hi bigint NOT NULL,"
            " rows_loaded bigint NOT NULL, rows_rejected bigint NOT NULL, bytes_end bigint NOT NULL,"
            " rejects text NOT NULL DEFAULT '', committed_at timestamptz NOT NULL DEFAULT now(),"
            " by_bytes boolean NOT NULL DEFAULT false, PRIMARY KEY (load_key, lo))"
        ).format(chunks_ref(target).ident())
    )
    # A book made before byte-range chunks lacks the column (looked up first: ALTER locks the table).
    has = conn.execute("SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass(%s) AND attname = 'by_bytes'",
                       [_qualified(conn, chunks_ref(target))]).fetchone()
    if has is None:
        conn.execute(sql.SQL("ALTER TABLE {} ADD COLUMN IF NOT EXISTS by_bytes boolean NOT NULL DEFAULT false")
                     .format(chunks_ref(target).ident()))


def _has_chunks(conn: psycopg.Connection[Any], target: TableRef) -> bool:
    row = conn.execute("SELECT to_regclass(%s) IS NOT NULL", [_qualified(conn, chunks_ref(target))]).fetchone()
    return bool(row and row[0])


def add_chunk(conn: psycopg.Connection[Any], target: TableRef, key: str, chunk: Chunk) -> None:
    """Record a chunk inside its own transaction; a second writer of the same chunk fails on the key."""
    conn.execute(
        sql.SQL("INSERT INTO {} (load_key, lo, hi, rows_loaded, rows_rejected, bytes_end, rejects, by_bytes)"
                " VALUES (%s, %s, %s, %s, %s, %s, %s, %s)").format(chunks_ref(target).ident()),
        [key, chunk.lo, chunk.hi, chunk.rows_loaded, chunk.rows_rejected, chunk.bytes_end, chunk.rejects,
         chunk.by_bytes],
    )


def done_chunks(conn: psycopg.Connection[Any], target: TableRef, key: str) -> list[Chunk]:
    """The committed chunks, in source order."""
    if not _has_chunks(conn, target):
        return []
    rows = conn.execute(
        sql.SQL("SELECT lo, hi, rows_loaded, rows_rejected, bytes_end, rejects, by_bytes FROM {}"
                " WHERE load_key = %s ORDER BY lo").format(chunks_ref(target).ident()),
        [key],
    ).fetchall()
    return [Chunk(*r) for r in rows]


def chunk_committed(conn: psycopg.Connection[Any], target: TableRef, key: str, lo: int) -> Chunk | None:
    row = conn.execute(
        sql.SQL("SELECT lo, hi, rows_loaded, rows_rejected, bytes_end, rejects, by_bytes FROM {}"
                " WHERE load_key = %s AND lo = %s").format(chunks_ref(target).ident()),
        [key, lo],
    ).fetchone()
    return Chunk(*row) if row else None


def chunk_totals(conn: psycopg.Connection[Any], target: TableRef, key: str) -> dict[str, int]:
    if not _has_chunks(conn, target):
        return {}
    row = conn.execute(
        sql.SQL("SELECT coalesce(sum(CASE WHEN by_bytes THEN rows_loaded + rows_rejected ELSE hi - lo END), 0),"
                " coalesce(sum(rows_loaded), 0), coalesce(sum(rows_rejected), 0),"
                " coalesce(max(bytes_end), 0) FROM {} WHERE load_key = %s").format(chunks_ref(target).ident()),
        [key],
    ).fetchone()
    assert row is not None
    return {"rows_done": int(row[0]), "rows_loaded": int(row[1]), "rows_rejected": int(row[2]),
            "bytes_done": int(row[3])}


def relabel_as_rows(conn: psycopg.Connection[Any], target: TableRef, key: str,
                    rows: list[tuple[int, int, int]]) -> None:
    """Byte-range chunks become the row ranges they hold, (byte lo, row lo, row hi) each, so a
    run that goes on through the parser books rows only (one transaction: the caller's)."""
    ref = chunks_ref(target).ident()
    for byte_lo, lo, hi in rows:
        conn.execute(sql.SQL("UPDATE {} SET lo = %s, hi = %s, by_bytes = false WHERE load_key = %s AND lo = %s"
                             " AND by_bytes").format(ref), [-1 - lo, hi, key, byte_lo])
    # Negative first: a row lo may equal another chunk's byte lo while both exist.
    conn.execute(sql.SQL("UPDATE {} SET lo = -1 - lo WHERE load_key = %s AND lo < 0").format(ref), [key])


def clear_chunks(conn: psycopg.Connection[Any], target: TableRef, key: str) -> None:
    if _has_chunks(conn, target):
        conn.execute(sql.SQL("DELETE FROM {} WHERE load_key = %s").format(chunks_ref(target).ident()), [key])


def finish_chunks(conn: psycopg.Connection[Any], target: TableRef, key: str) -> None:
    """The last step of a chunked run (in one transaction): totals into the load's row, chunks gone."""
    totals = chunk_totals(conn, target, key)
    conn.execute(
        sql.SQL("UPDATE {} SET rows_done = %s, rows_loaded = %s, rows_rejected = %s, bytes_done = %s,"
                " finished = true, updated_at = now() WHERE load_key = %s").format(book_ref(target).ident()),
        [totals.get("rows_done", 0), totals.get("rows_loaded", 0), totals.get("rows_rejected", 0),
         totals.get("bytes_done", 0), key],
    )
    clear_chunks(conn, target, key)


class CheckpointMoved(Exception):
    """Another process advanced or finished this load's checkpoint meanwhile."""


def _qualified(conn: psycopg.Connection[Any], ref: TableRef) -> str:
    """The text form to_regclass() wants, quoted the way the server quotes identifiers."""
    return ref.ident().as_string(conn)
