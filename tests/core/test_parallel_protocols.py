"""parallel-copy on every server: per-batch chunk commits with exact resume, all-or-nothing without
client 2PC (create-then-rename, staging kept and said so), the skip policy, refusals before the run.

Checked by content hash against a reference loaded in one plain transaction. CI's machine PostgreSQL
has max_prepared_transactions = 0 (no 2PC); the embedded one allows it. The Citus tests run when
SLUICE_TEST_CITUS_DSN names a coordinator (see ../shared/citus.md) and are skipped otherwise.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

from core import checkpoint as ck
from core.db import TableRef
from core.errors import BadRowError, ConfigError, LoadFailed
from core.load.job import LoadJob
from core.load.protocols import chunked
from core.sources.csv import byte_ranges
from core.spec import CommitMode, ErrorPolicy, LoadMode, LoadSpec, SourceOptions, TargetSpec
from tests.core.test_interruptions import (
    _csv,
    _digest,
    _make,
    _reference,
    _terminate_loader,
    _wait_for_killed_loader,
)

ROOT = Path(__file__).resolve().parents[2]


def _spec(path: Path, table: str, dsn: str, **kw: Any) -> LoadSpec:
    target = TargetSpec(table, mode=kw.pop("mode", LoadMode.APPEND))
    return LoadSpec(SourceOptions(str(path)), target, strategy="parallel-copy", dsn=dsn,
                    workers=kw.pop("workers", 2), batch_rows=kw.pop("batch_rows", 500), **kw)


@pytest.fixture
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("core.sources.csv.source.CHUNK_BYTES", 8192)  # many raw chunks
    monkeypatch.setattr("core.load.protocols.parallel_run.CHUNK_MIN", 8192)  # many byte-range chunks
    monkeypatch.setattr("core.load.protocols.parallel_run.CHUNK_MAX", 8192)
    monkeypatch.setattr("core.load.protocols.parallel_run.DISTRIBUTED_CHUNK_MAX", 8192)


@pytest.fixture
def commit_order(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The order chunks commit in (their first source row); the first chunk is held back a while."""
    order: list[int] = []
    real_add, real_send = ck.add_chunk, chunked._Stream._send
    lock = threading.Lock()

    def add_chunk(conn: Any, target: Any, key: str, chunk: ck.Chunk) -> None:
        real_add(conn, target, key, chunk)
        with lock:
            order.append(chunk.lo)

    held: list[int] = []

    def send(self: Any, conn: Any, piece: byte_ranges.Piece) -> Any:
        with lock:
            first = not held
            held.append(piece.lo)
        if first:
            time.sleep(0.3)  # the first chunk sent finishes after later ones
        return real_send(self, conn, piece)

    monkeypatch.setattr(ck, "add_chunk", add_chunk)
    monkeypatch.setattr(chunked._Stream, "_send", send)
    return order


# -- per-batch over N streams --------------------------------------------------------------------


@pytest.mark.parametrize("workers", [2, 4])
@pytest.mark.parametrize("parsed", [False, True], ids=["raw", "parsed"])
def test_per_batch_chunks_commit_out_of_order_and_load_each_row_once(
    workers: int, parsed: bool, dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str],
    tmp_path: Path, small_chunks: None, commit_order: list[int],
) -> None:
    path = _csv(tmp_path / "pb.csv", 6_000)
    table = table_name("ppb")
    _make(conn, table)
    job = LoadJob(_spec(path, table, dsn, workers=workers, commit=CommitMode.PER_BATCH))
    job.ctx.no_raw = parsed
    result = job.run()
    assert (result.rows_read, result.rows_loaded, result.rows_rejected) == (6_000, 6_000, 0)
    assert "checkpoint row" in result.reason
    assert len(commit_order) > workers and commit_order != sorted(commit_order)  # out of order
    assert _digest(conn, table) == _reference(dsn, conn, table_name, path)
    state = ck.read(conn, TableRef(table), ck.load_key(path, TableRef(table)))
    assert state is not None and state.finished and state.rows_done == 6_000


@pytest.mark.parametrize("workers", [2, 4])
def test_a_run_that_stopped_with_holes_resumes_exactly_the_missing_chunks(
    workers: int, dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path,
    small_chunks: None, monkeypatch: pytest.MonkeyPatch,
) -> None:
    path = _csv(tmp_path / "holes.csv", 8_000)
    table = table_name("holes")
    _make(conn, table)
    real_send = chunked._Stream._send
    victims: list[int] = []

    def send(self: Any, c: Any, piece: byte_ranges.Piece) -> Any:
        if piece.lo > 0 and not victims:
            victims.append(piece.lo)
            time.sleep(0.3)  # later chunks commit meanwhile, then this one dies
            raise RuntimeError("injected stream death")
        return real_send(self, c, piece)

    monkeypatch.setattr(chunked._Stream, "_send", send)
    with pytest.raises(LoadFailed, match="--resume"):
        LoadJob(_spec(path, table, dsn, workers=workers, commit=CommitMode.PER_BATCH)).run()
    key = ck.load_key(path, TableRef(table))
    done = ck.done_chunks(conn, TableRef(table), key)
    assert victims and victims[0] not in {c.lo for c in done}
    assert any(c.lo > victims[0] for c in done)  # a hole: chunks after it committed
    count, distinct, _ = _digest(conn, table)
    assert count == distinct == sum(c.rows_loaded for c in done)

    monkeypatch.setattr(chunked._Stream, "_send", real_send)
    result = LoadJob(_spec(path, table, dsn, workers=workers, commit=CommitMode.PER_BATCH), resume=True).run()
    assert result.resumed_from == count
    assert (result.rows_read, result.rows_loaded) == (8_000, 8_000)
    assert _digest(conn, table) == _reference(dsn, conn, table_name, path)


def test_a_terminated_stream_reconnects_and_no_chunk_is_lost_or_doubled(
    dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path,
    small_chunks: None, monkeypatch: pytest.MonkeyPatch,
) -> None:
    path = _csv(tmp_path / "term.csv", 8_000)
    table = table_name("term")
    _make(conn, table)
    real_send = chunked._Stream._send
    fired: list[int] = []
    once = threading.Lock()  # the streams are threads: only one of them may fire (two found none left)

    def send(self: Any, c: Any, piece: byte_ranges.Piece) -> Any:
        if piece.lo > 1_000 and once.acquire(blocking=False):
            fired.append(_terminate_loader(dsn))  # every stream's connection, mid-load
        return real_send(self, c, piece)

    monkeypatch.setattr(chunked._Stream, "_send", send)
    logs: list[str] = []
    result = LoadJob(_spec(path, table, dsn, workers=3, commit=CommitMode.PER_BATCH), on_log=logs.append).run()
    assert fired and fired[0] >= 1
    assert any("connection lost" in m for m in logs)
    assert (result.rows_read, result.rows_loaded) == (8_000, 8_000)
    assert _digest(conn, table) == _reference(dsn, conn, table_name, path)


@pytest.mark.parametrize("workers", [2, 4])
def test_sigkill_then_resume_over_n_streams(
    workers: int, dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path
) -> None:
    path = _csv(tmp_path / "big.csv", 150_000)
    table = table_name("pkill")
    _make(conn, table)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-m", "app", "load", str(path), "--table", table, "--dsn", dsn, "--strategy",
           "parallel-copy", "--workers", str(workers), "--batch-rows", "2000", "--commit", "per-batch",
           "--format", "csv"]
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    key = ck.load_key(path, TableRef(table))
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            state = ck.read(conn, TableRef(table), key)
            if state is not None and state.rows_done >= 20_000:
                break
            time.sleep(0.02)  # polling another process's progress
        assert proc.poll() is None, "the load ended before it could be killed; make the file bigger"
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(30)
    assert proc.returncode == -signal.SIGKILL
    _wait_for_killed_loader(conn)
    state = ck.read(conn, TableRef(table), key)
    assert state is not None and not state.finished
    assert _digest(conn, table)[:2] == (state.rows_done, state.rows_done)  # the chunk book == the table

    resumed = subprocess.run([*cmd, "--resume", "--json"], cwd=ROOT, env=env, capture_output=True, text=True,
                             timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    out = json.loads(resumed.stdout.strip().splitlines()[-1])
    assert out["resumed_from"] == state.rows_done
    assert out["rows_loaded"] == out["rows_read"] == 150_000
    assert _digest(conn, table) == _reference(dsn, conn, table_name, path)


def test_per_batch_upsert_over_streams_is_refused_before_anything_is_sent(
    dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path
) -> None:
    path = _csv(tmp_path / "u.csv", 10)
    table = table_name("pup")
    _make(conn, table)
    spec = _spec(path, table, dsn, mode=LoadMode.UPSERT, commit=CommitMode.PER_BATCH)
    spec.target.key = ["id"]
    with pytest.raises(ConfigError, match="copy-csv with --commit per-batch"):
        LoadJob(spec).run()
    assert ck.read(conn, TableRef(table), ck.load_key(path, TableRef(table))) is None


# -- single commit without client 2PC ------------------------------------------------------------


def _scratch(conn: psycopg.Connection[Any], prefix: str = "_sluice_stage_") -> list[str]:
    """Scratch tables left (other loads on a shared server have their own: pass a narrower prefix)."""
    like = prefix.replace("_", "\\_") + "%"
    return [r[0] for r in conn.execute("SELECT relname FROM pg_class WHERE relname LIKE %s", [like])]


def test_create_mode_loads_a_private_table_and_renames_it_into_place(
    dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path, small_chunks: None,
) -> None:
    path = _csv(tmp_path / "c.csv", 5_000)
    table = table_name("pcreate")
    seen: list[bool] = []
    job = LoadJob(_spec(path, table, dsn, mode=LoadMode.CREATE, workers=3),
                  on_progress=lambda p: seen.append(_exists(conn, table)) if p.phase.name == "LOADING" else None)
    result = job.run()
    assert "renamed into place" in result.reason
    assert seen and not any(seen)  # the target's name is taken only at the end
    assert _digest(conn, table) == _reference(dsn, conn, table_name, path, create=True)
    assert _scratch(conn, "_sluice_stage_new_") == []


def test_create_mode_failure_leaves_no_table_at_all(
    dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path,
) -> None:
    path = tmp_path / "bad.csv"
    path.write_text("id,n\n" + "".join(f"{i},{i}\n" for i in range(3_000)) + "x,1\n", encoding="utf-8")
    table = table_name("pcfail")
    spec = _spec(path, table, dsn, mode=LoadMode.CREATE)
    spec.target.ddl = f'CREATE TABLE "{table}" (id int, n int)'  # the last row's id is no integer
    with pytest.raises(BadRowError):
        LoadJob(spec).run()
    assert not _exists(conn, table)
    assert _scratch(conn, "_sluice_stage_new_") == []


def test_append_without_two_phase_keeps_a_staging_table_and_says_so_before_the_run(
    dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path,
) -> None:
    path = _csv(tmp_path / "a.csv", 3_000)
    table = table_name("papp")
    _make(conn, table)
    logs: list[str] = []
    loading: list[int] = []
    result = LoadJob(_spec(path, table, dsn), on_log=logs.append,
                     on_progress=lambda p: loading.append(len(logs)) if p.phase.name == "LOADING" else None).run()
    two_phase = conn.execute("SHOW max_prepared_transactions").fetchone() != ("0",)
    expected = "two-phase" if two_phase else "staging table kept"
    assert expected in result.reason
    said = next(i for i, m in enumerate(logs) if expected in m)
    assert loading and said < loading[0]  # said before the first row went out
    assert _digest(conn, table) == _reference(dsn, conn, table_name, path)


def test_two_phase_is_chosen_only_where_the_whole_group_can_commit() -> None:
    """A full set of prepared-transaction slots, or no right to write the commit decision,
    would fail the load at its very end: the plan takes the staging table instead, and says why."""
    from core.server import Protocol, TargetInfo, choose

    def pick(info: TargetInfo, branches: int = 2) -> tuple[Protocol, str]:
        choice = choose(multi_connection=True, chunk_commits=True, mode=LoadMode.APPEND, commit=CommitMode.SINGLE,
                        on_error=ErrorPolicy.ABORT, info=info, branches=branches)
        assert choice is not None
        return choice.protocol, choice.reason

    assert pick(TargetInfo(True, False, prepared_free=4))[0] is Protocol.TWO_PHASE
    protocol, reason = pick(TargetInfo(True, False, prepared_free=3), branches=4)
    assert protocol is Protocol.STAGED and "only 3 of the server's prepared-transaction slots" in reason
    protocol, reason = pick(TargetInfo(True, False, decision_ok=False))
    assert protocol is Protocol.STAGED and "may not write the two-phase commit's decision" in reason
    protocol, reason = pick(TargetInfo(False, False))
    assert protocol is Protocol.STAGED and "max_prepared_transactions = 0" in reason


def test_the_target_inspection_reads_free_slots_and_the_right_to_write_the_decision(
    embedded_dsn: str, tmp_path: Path,
) -> None:
    from psycopg.conninfo import make_conninfo

    from core.server import inspect

    with psycopg.connect(embedded_dsn, autocommit=True) as admin:
        slots = admin.execute("SELECT current_setting('max_prepared_transactions')::int - "
                              "(SELECT count(*) FROM pg_prepared_xacts)").fetchone()
        info = inspect(admin, TableRef("no_such_table"))
        assert slots is not None and info.prepared_free == slots[0] and info.decision_ok  # a superuser
        role = f"sluice_reader_{uuid.uuid4().hex[:8]}"
        admin.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(role)))
        try:
            admin.execute("REVOKE CREATE ON SCHEMA public FROM PUBLIC")  # PostgreSQL 15's default
            with psycopg.connect(make_conninfo(embedded_dsn, user=role)) as c:
                info = inspect(c, TableRef("no_such_table"))
                assert not info.decision_ok and info.two_phase_blocker(2) is not None
        finally:
            admin.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(role)))


@pytest.mark.parametrize("commit", list(CommitMode))
def test_skip_policy_isolates_bad_rows_per_chunk_like_one_stream(
    commit: CommitMode, dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path,
) -> None:
    path = tmp_path / "mixed.csv"
    lines = []
    for i in range(1, 4_001):
        if i % 997 == 0:
            lines.append(f"{i},bad{i},notanumber,2024-01-01")  # refused by the server
        elif i % 1_499 == 0:
            lines.append(f"{i},ragged")  # malformed record
        else:
            lines.append(f"{i},n{i},{i}.5,2024-01-01")
    path.write_text("id,name,amount,seen\n" + "\n".join(lines) + "\n", encoding="utf-8")
    ours, theirs = table_name("pskip"), table_name("sskip")
    _make(conn, ours)
    _make(conn, theirs)
    spec = _spec(path, ours, dsn, workers=3, commit=commit, on_error=ErrorPolicy.SKIP,
                 reject_file=str(tmp_path / "ours.csv"))
    result = LoadJob(spec).run()
    one = LoadSpec(SourceOptions(str(path)), TargetSpec(theirs), strategy="copy-csv", dsn=dsn, batch_rows=500,
                   on_error=ErrorPolicy.SKIP, reject_file=str(tmp_path / "theirs.csv"))
    single = LoadJob(one).run()
    assert (result.rows_read, result.rows_loaded, result.rows_rejected) == (
        single.rows_read, single.rows_loaded, single.rows_rejected) == (4_000, 4_000 - 4 - 2, 6)
    assert _digest(conn, ours) == _digest(conn, theirs)
    assert sorted((tmp_path / "ours.csv").read_text().splitlines()) == sorted(
        (tmp_path / "theirs.csv").read_text().splitlines())


def _exists(conn: psycopg.Connection[Any], table: str) -> bool:
    row = conn.execute("SELECT to_regclass(%s) IS NOT NULL", [sql.Identifier(table).as_string(conn)]).fetchone()
    return bool(row and row[0])


# -- Citus ------------------------------------------------------------------------------------------


@pytest.fixture
def citus() -> Iterator[psycopg.Connection[Any]]:
    dsn = os.environ.get("SLUICE_TEST_CITUS_DSN")
    if not dsn:
        pytest.skip("SLUICE_TEST_CITUS_DSN names no Citus coordinator")
    with psycopg.connect(dsn, autocommit=True) as c:
        yield c


def _distributed(c: psycopg.Connection[Any]) -> Iterator[str]:
    name = f"cit_{uuid.uuid4().hex[:8]}"
    _make(c, name)
    c.execute("SELECT create_distributed_table(%s, 'id')", [name])
    try:
        yield name
    finally:
        c.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(sql.Identifier(name)))


@pytest.fixture
def dist_table(citus: psycopg.Connection[Any]) -> Iterator[str]:
    yield from _distributed(citus)


@pytest.fixture
def dist_ref(citus: psycopg.Connection[Any]) -> Iterator[str]:
    yield from _distributed(citus)


def _citus_reference(c: psycopg.Connection[Any], table: str, path: Path) -> tuple[int, int, str]:
    dsn = os.environ["SLUICE_TEST_CITUS_DSN"]
    LoadJob(LoadSpec(SourceOptions(str(path)), TargetSpec(table), strategy="copy-csv", dsn=dsn)).run()
    return _digest(c, table)


@pytest.mark.parametrize("commit", list(CommitMode))
def test_citus_distributed_table_loads_every_row_once(
    commit: CommitMode, citus: psycopg.Connection[Any], dist_table: str, dist_ref: str, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch, small_chunks: None,
) -> None:
    from core import server as target

    path = _csv(tmp_path / "cit.csv", 20_000)
    colocated: list[bool] = []
    real = target.distribute_like

    def distribute_like(conn: Any, stage: Any, ref: Any, info: Any) -> None:
        real(conn, stage, ref, info)
        row = conn.execute(
            "SELECT (SELECT colocationid FROM pg_dist_partition WHERE logicalrelid = to_regclass(%s))"
            " = (SELECT colocationid FROM pg_dist_partition WHERE logicalrelid = to_regclass(%s))",
            [stage.ident().as_string(conn), ref.ident().as_string(conn)]).fetchone()
        colocated.append(bool(row and row[0]))

    monkeypatch.setattr(target, "distribute_like", distribute_like)
    dsn = os.environ["SLUICE_TEST_CITUS_DSN"]
    result = LoadJob(_spec(path, dist_table, dsn, workers=4, commit=commit)).run()
    assert (result.rows_read, result.rows_loaded) == (20_000, 20_000)
    if commit is CommitMode.SINGLE:
        assert "Citus distributed" in result.reason and colocated == [True]
    assert _digest(citus, dist_table) == _citus_reference(citus, dist_ref, path)
    assert _scratch(citus) == []


def test_citus_per_batch_resume_after_a_stream_dies(
    citus: psycopg.Connection[Any], dist_table: str, dist_ref: str, tmp_path: Path, small_chunks: None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    path = _csv(tmp_path / "citr.csv", 20_000)
    dsn = os.environ["SLUICE_TEST_CITUS_DSN"]
    real_send = chunked._Stream._send
    victims: list[int] = []

    def send(self: Any, c: Any, piece: byte_ranges.Piece) -> Any:
        if piece.lo > 0 and not victims:
            victims.append(piece.lo)
            time.sleep(0.3)
            raise RuntimeError("injected stream death")
        return real_send(self, c, piece)

    monkeypatch.setattr(chunked._Stream, "_send", send)
    with pytest.raises(LoadFailed):
        LoadJob(_spec(path, dist_table, dsn, workers=4, commit=CommitMode.PER_BATCH)).run()
    monkeypatch.setattr(chunked._Stream, "_send", real_send)
    result = LoadJob(_spec(path, dist_table, dsn, workers=4, commit=CommitMode.PER_BATCH), resume=True).run()
    assert result.resumed_from > 0 and result.rows_loaded == 20_000
    assert _digest(citus, dist_table) == _citus_reference(citus, dist_ref, path)


@pytest.mark.parametrize("clash", ["within the file", "with the table's rows"])
def test_a_refused_key_is_told_in_the_targets_names(
    clash: str, dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path,
) -> None:
    """Found by a QA pass: errors named the staging table (`_sluice_stage_..._pkey`), and a key
    already in the table failed the move from it with no word on what to do instead."""
    from core.errors import SluiceError

    table = table_name("pkey")
    conn.execute(sql.SQL("CREATE TABLE {} (id int PRIMARY KEY, s text)").format(sql.Identifier(table)))
    conn.execute(sql.SQL("INSERT INTO {} VALUES (100, 'kept')").format(sql.Identifier(table)))
    rows = "1,a\n2,b\n1,c\n" if clash == "within the file" else "1,a\n100,b\n"
    path = tmp_path / "keys.csv"
    path.write_text("id,s\n" + rows, encoding="utf-8")
    spec = LoadSpec(source=SourceOptions(path=str(path)), target=TargetSpec(table=table),
                    strategy="parallel-copy", workers=2, dsn=dsn)
    with pytest.raises(SluiceError) as err:
        LoadJob(spec).run()
    msg = str(err.value)
    assert "_sluice_" not in msg and f"{table}_pkey" in msg, msg
    staged = conn.execute("SHOW max_prepared_transactions").fetchone() == ("0",)
    if clash == "within the file":
        assert "line 4" in msg
    elif staged:
        assert "commit per batch" in msg
    assert conn.execute(sql.SQL("SELECT id, s FROM {}").format(sql.Identifier(table))).fetchall() == [(100, "kept")]


def test_every_staged_protocol_says_it_writes_twice_and_what_writes_once() -> None:
    """Issue 27, item 4: each way to a staging table carries writes_twice and its alternative;
    create-then-rename, two-phase and chunk commits write each row once."""
    from core.server import TWICE, Protocol, TargetInfo, choose

    def pick(mode: LoadMode = LoadMode.APPEND, commit: CommitMode = CommitMode.SINGLE,
             policy: ErrorPolicy = ErrorPolicy.ABORT, info: TargetInfo | None = None, dry_run: bool = False) -> Any:
        return choose(multi_connection=True, chunk_commits=True, mode=mode, commit=commit, on_error=policy,
                      info=info or TargetInfo(True, False), dry_run=dry_run)

    staged = {
        "truncate": pick(LoadMode.TRUNCATE),
        "upsert": pick(LoadMode.UPSERT),
        "skip": pick(policy=ErrorPolicy.SKIP),
        "citus distributed": pick(info=TargetInfo(False, True, distributed=True, dist_column="id")),
        "citus reference": pick(info=TargetInfo(False, True, reference=True)),
        "no 2pc": pick(info=TargetInfo(False, False)),
        "no free slot": pick(info=TargetInfo(True, False, prepared_free=0)),
        "a check": pick(dry_run=True),
    }
    for name, choice in staged.items():
        assert choice.protocol is Protocol.STAGED and choice.writes_twice, name
        assert TWICE in choice.reason and choice.once and f"Written once instead: {choice.once}" in choice.reason, name
    assert "max_prepared_transactions > 0" in staged["no 2pc"].once and "--mode create" in staged["no 2pc"].once
    assert "--commit per-batch" in staged["no 2pc"].once and "--commit per-batch" in staged["truncate"].once
    once = [pick(LoadMode.CREATE), pick(), pick(commit=CommitMode.PER_BATCH)]
    assert [c.protocol for c in once] == [Protocol.RENAME, Protocol.TWO_PHASE, Protocol.CHUNKS]
    assert not any(c.writes_twice or "twice" in c.reason for c in once)
