"""No lost chunk: whatever kills or fools a parallel-copy worker fails the load and leaves the table
as it was, never hangs, and rows_read counts what the source produced, not what the server took."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

from core.errors import SluiceError
from core.load.job import LoadJob
from core.spec import LoadSpec, SourceOptions, TargetSpec

ROWS = 3_000


def _file(tmp_path: Path) -> Path:
    path = tmp_path / "p.csv"
    # Quoted newlines: a newline count is not a record count.
    path.write_text("id,note\n" + "".join(f'{i},"line one\nline two {i}"\n' for i in range(ROWS)), encoding="utf-8")
    return path


def _table(conn: psycopg.Connection[Any], table_name: Callable[[str], str]) -> str:
    table = table_name("par")
    conn.execute(sql.SQL("CREATE TABLE {} (id int, note text)").format(sql.Identifier(table)))
    conn.execute(sql.SQL("INSERT INTO {} VALUES (-1, 'keep')").format(sql.Identifier(table)))
    return table


def _rows(conn: psycopg.Connection[Any], table: str) -> list[tuple[Any, ...]]:
    return conn.execute(sql.SQL("SELECT id, note FROM {} ORDER BY id").format(sql.Identifier(table))).fetchall()


def _sabotage(monkeypatch: pytest.MonkeyPatch, *, from_chunk: int, every: bool, drop: bool = False) -> list[int]:
    """Make parallel-copy workers' COPY writes raise RuntimeError (or silently drop the chunk)."""
    calls = [0]
    lock = threading.Lock()
    real = psycopg.Copy.write

    def write(self: psycopg.Copy, buffer: Any) -> None:
        if threading.current_thread().name.startswith("sluice-copy"):
            with lock:
                calls[0] += 1
                n = calls[0]
            if n == from_chunk or (every and n > from_chunk):
                if drop:
                    return
                raise RuntimeError("injected worker failure")
        real(self, buffer)

    monkeypatch.setattr(psycopg.Copy, "write", write)
    return calls


def _job(path: Path, table: str, dsn: str, *, parsed: bool, **kwargs: Any) -> LoadJob:
    spec = LoadSpec(SourceOptions(str(path)), TargetSpec(table), strategy="parallel-copy", batch_rows=100,
                    workers=2, dsn=dsn)
    job = LoadJob(spec, **kwargs)
    job.ctx.no_raw = parsed  # parsed batches instead of the file's own bytes
    return job


@pytest.mark.timeout(60)
@pytest.mark.parametrize("parsed", [False, True], ids=["raw", "parsed"])
@pytest.mark.parametrize("every", [False, True], ids=["one-chunk", "every-worker"])
def test_a_worker_dying_of_a_non_database_error_fails_the_load(
    parsed: bool, every: bool, dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str],
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    path = _file(tmp_path)
    table = _table(conn, table_name)
    monkeypatch.setattr("core.sources.csv.source.CHUNK_BYTES", 4096)  # many parsed chunks
    # Raw, the streams read a few large byte ranges of this small file themselves: the first write fails.
    _sabotage(monkeypatch, from_chunk=3 if parsed else 1, every=every)
    with pytest.raises(SluiceError, match="injected worker failure"):
        _job(path, table, dsn, parsed=parsed).run()
    assert _rows(conn, table) == [(-1, "keep")]
    assert not [t for t in threading.enumerate() if t.name.startswith("sluice-copy")]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("parsed", [False, True], ids=["raw", "parsed"])
def test_a_chunk_the_server_never_got_fails_the_load(
    parsed: bool, dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    path = _file(tmp_path)
    table = _table(conn, table_name)
    monkeypatch.setattr("core.sources.csv.source.CHUNK_BYTES", 4096)
    # Raw, the streams count the records of the ranges they read: a range never sent is caught.
    _sabotage(monkeypatch, from_chunk=2 if parsed else 1, every=False, drop=True)
    with pytest.raises(SluiceError, match="rows"):
        _job(path, table, dsn, parsed=parsed).run()
    assert _rows(conn, table) == [(-1, "keep")]


@pytest.mark.parametrize("parsed", [False, True], ids=["raw", "parsed"])
def test_rows_read_counts_source_records(
    parsed: bool, dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    path = _file(tmp_path)
    table = _table(conn, table_name)
    monkeypatch.setattr("core.sources.csv.source.CHUNK_BYTES", 4096)
    seen: list[int] = []
    result = _job(path, table, dsn, parsed=parsed, on_progress=lambda p: seen.append(p.rows_read)).run()
    assert (result.rows_read, result.rows_loaded, result.rows_rejected) == (ROWS, ROWS, 0)
    assert max(seen) == ROWS  # progress counted records too, not newlines
    assert len(_rows(conn, table)) == ROWS + 1
