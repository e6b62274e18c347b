"""Streams that read their own byte ranges of the file (issue 10): cuts fall on record boundaries
even inside quoted newlines, a bare quote sends the load through the parser, a run that falls back
mid-way books rows, and create + single (ParallelCopy.feed_raw, which the single protocol's raw
path takes) loads exactly. A range the server did not wholly take is never booked as done."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest

from core import checkpoint as ck
from core.db import TableRef
from core.load.job import LoadJob
from core.load.protocols import chunked
from core.sources.csv import byte_ranges
from core.sources.csv.records import BareQuoteIn, EndsInQuote, count_records, record_cuts
from core.spec import CommitMode, LoadMode
from tests.core.test_interruptions import _csv, _digest, _make, _reference
from tests.core.test_parallel_protocols import _spec


@pytest.fixture
def small_ranges(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("core.load.protocols.parallel_run.CHUNK_MIN", 4096)
    monkeypatch.setattr("core.load.protocols.parallel_run.CHUNK_MAX", 4096)


@pytest.fixture
def feed_raw_wired(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the calls of the strategy's own-range feed, which the single protocol's raw path takes."""
    from core.strategies.parallel import ParallelCopy

    calls: list[int] = []
    real = ParallelCopy.feed_raw

    def feed_raw(self: Any, *args: Any, **kwargs: Any) -> None:
        calls.append(1)
        real(self, *args, **kwargs)

    monkeypatch.setattr(ParallelCopy, "feed_raw", feed_raw)
    return calls


def _quoted_newlines(path: Path, rows: int) -> Path:
    with open(path, "w", encoding="utf-8") as f:
        f.write("id,name,amount,seen\n")
        for i in range(1, rows + 1):
            f.write(f'{i},"line {i}\nnext, ""q""\n",{i % 97}.5,2024-01-{i % 28 + 1:02d}\n')
    return path


def _cuts(path: Path, start: int, every: int, taper: int = 0, first: tuple[int, ...] = ()) -> list[int]:
    fd = os.open(path, os.O_RDONLY)
    try:
        return list(record_cuts(fd, start, path.stat().st_size, b'"', every, first=first, taper=taper))
    finally:
        os.close(fd)


def test_record_cuts_fall_between_records_only(tmp_path: Path) -> None:
    path = _quoted_newlines(tmp_path / "q.csv", 2_000)
    data = path.read_bytes()
    start = data.index(b"\n") + 1
    cuts = _cuts(path, start, 1000)
    assert cuts[0] == start and cuts[-1] == len(data) and len(cuts) > 50
    assert sum(count_records(data[a:b], b'"') for a, b in zip(cuts, cuts[1:])) == 2_000
    assert all(data[c - 1:c] == b"\n" and data.count(b'"', 0, c) % 2 == 0 for c in cuts[1:])
    path.write_bytes(data + b'2001,"never closed\n')
    with pytest.raises(EndsInQuote):
        _cuts(path, start, 1000)


def test_a_look_sees_each_chunk_once_and_its_count_rides_on_the_cut(tmp_path: Path) -> None:
    """The cutter hands each chunk's bytes to `look` (the per-batch streams' refusals and counts):
    the chunks, in order, are the file's data exactly, and each cut carries what look returned."""
    path = _quoted_newlines(tmp_path / "q.csv", 2_000)
    data = path.read_bytes()
    start = data.index(b"\n") + 1
    seen: list[bytes] = []

    def look(chunk: bytes) -> int:
        seen.append(chunk)
        return count_records(chunk, b'"')

    fd = os.open(path, os.O_RDONLY)
    try:
        cuts = list(record_cuts(fd, start, len(data), b'"', 1000, delimiter=b",", look=look))
    finally:
        os.close(fd)
    assert b"".join(seen) == data[start:] and len(seen) == len(cuts) - 1 > 50
    assert [c.records for c in cuts[1:]] == [count_records(data[a:b], b'"') for a, b in zip(cuts, cuts[1:])]
    assert sum(c.records for c in cuts[1:]) == 2_000


def test_cuts_taper_towards_the_end_and_leave_no_crumb(tmp_path: Path) -> None:
    path = _quoted_newlines(tmp_path / "q.csv", 4_000)
    data = path.read_bytes()
    start = data.index(b"\n") + 1
    plain, tapered = _cuts(path, start, 10_000), _cuts(path, start, 10_000, taper=4)
    for cuts in (plain, tapered):
        assert cuts[0] == start and cuts[-1] == len(data)
        assert sum(count_records(data[a:b], b'"') for a, b in zip(cuts, cuts[1:])) == 4_000
        assert cuts[-1] - cuts[-2] >= 10_000 // 4 // 4  # the last chunk is never a crumb
    sizes = [b - a for a, b in zip(tapered, tapered[1:])]
    assert max(sizes[-4:]) < 10_000 * 0.6 < min(sizes[:4])  # big chunks first, small ones last
    assert all(s >= 10_000 // 4 - 200 for s in sizes[:-1])  # never below a quarter (less a record)


def test_the_first_chunks_are_as_small_as_asked_then_full_size(tmp_path: Path) -> None:
    """Each stream's first chunk is small (parallel_run.RAMP_BYTES), so no stream waits long
    for the reader to find its first chunk's end."""
    path = _quoted_newlines(tmp_path / "q.csv", 4_000)
    data = path.read_bytes()
    start = data.index(b"\n") + 1
    cuts = _cuts(path, start, 10_000, first=(1_000, 2_000, 2_000))
    sizes = [b - a for a, b in zip(cuts, cuts[1:])]
    record = 60  # a cut falls at the last record end within the bytes read: up to a record short
    assert 1_000 - record < sizes[0] <= 1_000
    assert all(2_000 - record < s <= 2_000 for s in sizes[1:3])
    assert all(10_000 - record < s <= 10_000 for s in sizes[3:-1])
    assert sum(count_records(data[a:b], b'"') for a, b in zip(cuts, cuts[1:])) == 4_000


@pytest.mark.parametrize("distributed", [False, True])
def test_parallel_copy_ramps_its_first_ranges_except_on_citus(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, distributed: bool,
) -> None:
    """The streams' first ranges are small (each starts as soon as it is connected), but not
    into a Citus table, where each range's commit is a distributed one."""
    from types import SimpleNamespace

    from core.load.protocols import parallel_run

    monkeypatch.setattr(parallel_run, "CHUNK_MIN", 8_000)
    monkeypatch.setattr(parallel_run, "RAMP_BYTES", 2_000)
    path = _quoted_newlines(tmp_path / "q.csv", 4_000)
    start = path.read_bytes().index(b"\n") + 1
    plan: Any = SimpleNamespace(source=SimpleNamespace(path=path, dialect=SimpleNamespace(delimiter=",", quote='"')))
    cuts = list(parallel_run.byte_cuts(plan.source, (start, path.stat().st_size), 2, SimpleNamespace(distributed=distributed)))
    sizes = [b - a for a, b in zip(cuts, cuts[1:])]
    if distributed:
        assert min(sizes[:2]) > 6_000  # full size from the first range on
    else:
        assert max(sizes[:2]) <= 2_000 < min(sizes[2:4])


@pytest.mark.parametrize("workers", [2, 4])
def test_per_batch_byte_ranges_with_quoted_newlines_load_exactly(
    workers: int, dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path,
    small_ranges: None,
) -> None:
    path = _quoted_newlines(tmp_path / "qn.csv", 3_000)
    table = table_name("qn")
    _make(conn, table)
    result = LoadJob(_spec(path, table, dsn, workers=workers, commit=CommitMode.PER_BATCH)).run()
    assert (result.rows_read, result.rows_loaded) == (3_000, 3_000)
    assert _digest(conn, table) == _reference(dsn, conn, table_name, path)


@pytest.mark.parametrize("where", ["end", "middle"])
def test_a_bare_quote_after_committed_ranges_goes_on_through_the_parser_booking_rows(
    where: str, dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path,
    small_ranges: None, monkeypatch: pytest.MonkeyPatch,
) -> None:
    path = _csv(tmp_path / "bare.csv", 6_000)
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    # Two bare quotes a line apart: COPY's reading would join the lines into one record, so
    # ranges after them must not be booked by COPY's count before the parser takes over.
    odd = ['6001,name 6001 37.8"N,1.00,2024-01-01\n', '6002,x"y,2.00,2024-01-02\n']
    at = len(lines) if where == "end" else len(lines) // 2
    path.write_text("".join(lines[:at] + odd + lines[at:]), encoding="utf-8")
    table = table_name("bare")
    _make(conn, table)
    relabelled: list[int] = []
    real = ck.relabel_as_rows

    def relabel(c: Any, target: Any, key: str, rows: list[tuple[int, int, int]]) -> None:
        relabelled.append(len(rows))
        real(c, target, key, rows)

    monkeypatch.setattr(ck, "relabel_as_rows", relabel)
    logs: list[str] = []
    result = LoadJob(_spec(path, table, dsn, workers=2, commit=CommitMode.PER_BATCH), on_log=logs.append).run()
    assert any("through the parser" in m for m in logs)
    assert relabelled and relabelled[0] > 0  # byte ranges committed before the fallback became row ranges
    assert (result.rows_read, result.rows_loaded) == (6_002, 6_002)
    assert _digest(conn, table) == _reference(dsn, conn, table_name, path)
    assert ck.done_chunks(conn, TableRef(table), ck.load_key(path, TableRef(table))) == []  # finished


@pytest.mark.parametrize("workers", [2, 4])
def test_create_single_feed_raw_loads_exactly(
    workers: int, dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path,
    small_ranges: None, feed_raw_wired: list[int],
) -> None:
    path = _quoted_newlines(tmp_path / "cr.csv", 3_000)
    table = table_name("cr")
    result = LoadJob(_spec(path, table, dsn, workers=workers, mode=LoadMode.CREATE)).run()
    assert feed_raw_wired
    assert (result.rows_read, result.rows_loaded) == (3_000, 3_000)
    assert _digest(conn, table) == _reference(dsn, conn, table_name, path, create=True)


def test_feed_raw_with_a_bare_quote_loads_through_the_parser(
    dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path,
    small_ranges: None, feed_raw_wired: list[int],
) -> None:
    path = _csv(tmp_path / "fb.csv", 3_000)
    with open(path, "a", encoding="utf-8") as f:
        f.write('3001,name 3001 37.8"N,1.00,2024-01-01\n')
    table = table_name("fb")
    logs: list[str] = []
    result = LoadJob(_spec(path, table, dsn, workers=2, mode=LoadMode.CREATE), on_log=logs.append).run()
    assert feed_raw_wired and any("through the parser" in m for m in logs)
    assert (result.rows_read, result.rows_loaded) == (3_001, 3_001)
    assert _digest(conn, table) == _reference(dsn, conn, table_name, path, create=True)


def test_chunk_pieces_skip_committed_ranges() -> None:
    pieces = list(byte_ranges.byte_pieces(iter([10, 20, 30, 40]), byte_ranges.Ranges([(20, 30)])))
    assert [(p.lo, p.hi) for p in pieces] == [(10, 20), (30, 40)] and all(p.by_bytes for p in pieces)
    # an earlier run cut elsewhere: the gaps are still whole records (its cuts were boundaries)
    pieces = list(byte_ranges.byte_pieces(iter([10, 25, 40]), byte_ranges.Ranges([(15, 30)])))
    assert [(p.lo, p.hi) for p in pieces] == [(10, 15), (30, 40)]


@pytest.mark.parametrize(("delimiter", "quote"), [(b",", b'"'), (b"\t", b'"'), (b";", b"'"), (b"|", b'"')])
def test_the_bare_quote_check_finds_a_quote_between_ordinary_bytes(delimiter: bytes, quote: bytes) -> None:
    import random

    from core.sources.csv.records import has_bare_quote

    def reference(data: bytes) -> bool:
        """A quote with an ordinary byte on both sides, byte by byte."""
        special = {delimiter[0], quote[0], ord("\n"), ord("\r")}
        return any(data[i] == quote[0] and data[i - 1] not in special and data[i + 1] not in special
                   for i in range(1, len(data) - 1))

    rng = random.Random(7)
    alphabet = b'ab,;|\t"\'\n\r'
    for _ in range(5_000):
        data = bytes(rng.choice(alphabet) for _ in range(rng.randint(0, 14)))
        assert has_bare_quote(data, delimiter, quote) == reference(data), data
        assert has_bare_quote(memoryview(data), delimiter, quote) == reference(data), data


def test_read_records_slices_end_at_newlines(tmp_path: Path) -> None:
    path = _quoted_newlines(tmp_path / "s.csv", 500)
    data = path.read_bytes()
    fd = os.open(path, os.O_RDONLY)
    try:
        parts = [bytes(p) for p in byte_ranges.read_records(fd, 0, len(data), slice_bytes=300)]
        assert b"".join(parts) == data and len(parts) > 20
        assert all(p.endswith(b"\n") for p in parts)
        # Whole records each (never cut at a newline inside quotes): counted one by one, they add up.
        assert sum(count_records(p, b'"') for p in parts) == 501  # the header, and 500 rows
        one = [bytes(p) for p in byte_ranges.read_records(fd, 0, len(data), slice_bytes=4)]
        assert b"".join(one) == data  # a slice smaller than a line grows to the next newline
    finally:
        os.close(fd)


def test_record_cuts_stop_before_the_chunk_holding_a_bare_quote(tmp_path: Path) -> None:
    path = _quoted_newlines(tmp_path / "b.csv", 500)
    data = path.read_bytes()
    bad_at = len(data)
    path.write_bytes(data + b'501,"x",37.8"N,2024-01-01\n' + data[data.index(b"\n") + 1:])
    fd = os.open(path, os.O_RDONLY)
    got: list[int] = []
    try:
        with pytest.raises(BareQuoteIn):
            got.extend(record_cuts(fd, 0, path.stat().st_size, b'"', 1000, delimiter=b","))
    finally:
        os.close(fd)
    assert got and max(got) <= bad_at  # every range handed out ends before the bare quote


def test_progress_moves_with_the_bytes_sent_before_a_large_chunk_commits(
    dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import time

    path = _csv(tmp_path / "prog.csv", 4_000)
    table = table_name("prog")
    _make(conn, table)
    monkeypatch.setattr("core.load.context.PROGRESS_EVERY_S", 0)
    real = chunked.read_records

    def slow(*a: Any, **k: Any) -> Any:
        for part in real(*a, **{**k, "slice_bytes": 4096}):
            time.sleep(0.02)  # a slow server: slices go out well before the chunk commits
            yield part

    monkeypatch.setattr(chunked, "read_records", slow)
    seen: list[tuple[int, int]] = []
    result = LoadJob(_spec(path, table, dsn, workers=2, commit=CommitMode.PER_BATCH),
                     on_progress=lambda p: seen.append((p.rows_read, p.bytes_read))).run()
    assert result.rows_loaded == 4_000
    assert any(rows == 0 and 0 < read < path.stat().st_size for rows, read in seen)
    assert max(read for _, read in seen) <= path.stat().st_size


def test_per_batch_truncate_commits_a_small_first_range_alone_then_the_rest(
    dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from psycopg import sql

    monkeypatch.setattr("core.load.protocols.parallel_run.CHUNK_MIN", 64 << 10)
    monkeypatch.setattr("core.load.protocols.parallel_run.CHUNK_MAX", 64 << 10)
    monkeypatch.setattr("core.load.protocols.parallel_run.FIRST_ALONE_BYTES", 4096)
    path = _csv(tmp_path / "tr.csv", 5_000)
    table = table_name("tr")
    _make(conn, table)
    conn.execute(sql.SQL("INSERT INTO {} (id) VALUES (-1), (-2)").format(sql.Identifier(table)))
    sizes: list[int] = []
    real = chunked._Stream._send

    def send(self: Any, c: Any, piece: byte_ranges.Piece) -> Any:
        sizes.append(piece.hi - piece.lo)
        return real(self, c, piece)

    monkeypatch.setattr(chunked._Stream, "_send", send)
    result = LoadJob(_spec(path, table, dsn, workers=2, commit=CommitMode.PER_BATCH,
                           mode=LoadMode.TRUNCATE)).run()
    assert result.rows_loaded == 5_000
    assert sizes[0] <= 4096 < max(sizes)  # the range that commits alone is the small one
    assert _digest(conn, table) == _reference(dsn, conn, table_name, path)  # the old rows are gone


def test_a_refused_value_in_a_byte_range_is_named_by_its_row_and_line(
    dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path,
    small_ranges: None,
) -> None:
    from core.errors import BadRowError

    path = _quoted_newlines(tmp_path / "badval.csv", 3_000)  # 3 lines a record: rows are not lines
    lines = path.read_text(encoding="utf-8").split("\n")
    bad_row = 2_345
    first_line = 1 + 3 * bad_row  # the header, then three lines a record (0-based index)
    assert lines[first_line + 2].startswith('",')
    lines[first_line + 2] = lines[first_line + 2].replace(",", ",abc", 1).replace(".5", "", 1)
    path.write_text("\n".join(lines), encoding="utf-8")
    table = table_name("badval")
    _make(conn, table)
    with pytest.raises(BadRowError) as got:
        LoadJob(_spec(path, table, dsn, workers=2, commit=CommitMode.PER_BATCH)).run()
    problem = got.value.problem
    assert (problem.row, problem.line, problem.column) == (bad_row, first_line + 1, "amount")
    count, distinct, _ = _digest(conn, table)
    assert count == distinct and 0 < count < 3_000  # the other ranges committed; the bad one did not


def test_a_range_part_the_server_never_got_is_not_booked(
    dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path,
    small_ranges: None, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A stream's write lost on the way (sabotaged here): the chunk's own count and the server's
    differ, the chunk is rolled back before its commit, and --resume then loads exactly."""
    import threading

    path = _quoted_newlines(tmp_path / "lost.csv", 3_000)
    table = table_name("lost")
    _make(conn, table)
    real = psycopg.Copy.write
    dropped: list[int] = []
    booked = threading.Event()  # a chunk committed: the write lost after it leaves a resume to do
    real_done = chunked.ChunkStreams.done

    def done(self: chunked.ChunkStreams, *args: Any) -> None:
        real_done(self, *args)
        booked.set()

    def write(self: psycopg.Copy, buffer: Any) -> None:
        if threading.current_thread().name.startswith("sluice-chunks") and booked.is_set() and not dropped:
            dropped.append(1)
            return
        real(self, buffer)

    monkeypatch.setattr(chunked.ChunkStreams, "done", done)
    monkeypatch.setattr(psycopg.Copy, "write", write)
    with pytest.raises(Exception, match="server took"):
        LoadJob(_spec(path, table, dsn, workers=2, commit=CommitMode.PER_BATCH)).run()
    monkeypatch.setattr(psycopg.Copy, "write", real)
    result = LoadJob(_spec(path, table, dsn, workers=2, commit=CommitMode.PER_BATCH), resume=True).run()
    assert result.resumed_from > 0 and result.rows_loaded == 3_000  # rows_loaded counts the earlier run's too
    assert _digest(conn, table) == _reference(dsn, conn, table_name, path)


@pytest.mark.parametrize("commit", [CommitMode.PER_BATCH, CommitMode.SINGLE])
def test_slices_smaller_than_a_range_count_quoted_newlines_right(
    commit: CommitMode, dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str],
    tmp_path: Path, small_ranges: None, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A stream reads its range in slices; a slice cut at a newline inside a quoted field was
    counted wrong, and the load failed with "a stream sent N rows ... but the server took M"
    (found by the 5M-row bench)."""
    monkeypatch.setattr(byte_ranges, "SLICE_BYTES", 200)  # several slices per 4 kB range
    path = _quoted_newlines(tmp_path / "sl.csv", 3_000)
    table = table_name("sl")
    mode = LoadMode.CREATE if commit is CommitMode.SINGLE else LoadMode.APPEND
    if mode is LoadMode.APPEND:
        _make(conn, table)
    result = LoadJob(_spec(path, table, dsn, workers=2, commit=commit, mode=mode)).run()
    assert (result.rows_read, result.rows_loaded) == (3_000, 3_000)
    assert _digest(conn, table) == _reference(dsn, conn, table_name, path, create=mode is LoadMode.CREATE)
