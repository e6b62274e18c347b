"""What a killed process leaves behind is cleaned up by the next load, and nothing else is touched."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

from core import janitor
from core.db import supports_two_phase
from core.load.job import LoadJob
from core.spec import LoadSpec, SourceOptions, TargetSpec


def _load(dsn: str, tmp_path: Path, table: str) -> list[str]:
    path = tmp_path / "one.csv"
    path.write_text("id\n1\n", encoding="utf-8")
    logs: list[str] = []
    LoadJob(LoadSpec(SourceOptions(str(path)), TargetSpec(table), dsn=dsn), on_log=logs.append).run()
    return logs


def _exists(conn: psycopg.Connection[Any], name: str) -> bool:
    row = conn.execute("SELECT to_regclass(%s) IS NOT NULL", [sql.Identifier(name).as_string(conn)]).fetchone()
    return bool(row and row[0])


def test_orphaned_staging_tables_are_dropped_and_owned_ones_kept(
    dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path
) -> None:
    table = table_name("jan")
    conn.execute(sql.SQL("CREATE TABLE {} (id int)").format(sql.Identifier(table)))
    orphan, owned = f"_sluice_stage_{uuid.uuid4().hex[:12]}", f"_sluice_cmp_{uuid.uuid4().hex[:10]}"
    for name in (orphan, owned):
        conn.execute(sql.SQL("CREATE UNLOGGED TABLE {} (id int)").format(sql.Identifier(name)))
    with psycopg.connect(dsn, autocommit=True) as owner:
        janitor.hold(owner, owned)  # a live compare in another process
        logs = _load(dsn, tmp_path, table)
        assert not _exists(conn, orphan) and _exists(conn, owned)
        assert any(orphan in m and "dropped" in m for m in logs)
    _load(dsn, tmp_path, table)  # its owner is gone now
    assert not _exists(conn, owned)


@pytest.fixture
def two_phase(dsn: str, conn: psycopg.Connection[Any]) -> str:
    if not supports_two_phase(conn):
        pytest.skip("this server has max_prepared_transactions = 0")
    return dsn


def _prepare_group(dsn: str, table: str, gtrid: str, *, commit_first: bool, decide: bool) -> None:
    """Two prepared branches of a parallel-copy group whose leader then vanished."""
    conns = [psycopg.connect(dsn) for _ in range(2)]
    try:
        for i, c in enumerate(conns):
            c.tpc_begin(c.xid(1, gtrid, f"{i}/2"))
            c.execute(sql.SQL("INSERT INTO {} VALUES (%s)").format(sql.Identifier(table)), [i + 10])
            c.tpc_prepare()
        if decide:
            with psycopg.connect(dsn, autocommit=True) as d:
                janitor.record_commit_decision(d, None, gtrid)
        if commit_first:
            conns[0].tpc_commit()
    finally:
        for c in conns:
            c.close()


def _gids(conn: psycopg.Connection[Any], gtrid: str) -> list[str]:
    """The prepared transactions of one group (psycopg encodes the gtrid inside the gid)."""
    return [gid for (gid,) in conn.execute("SELECT gid FROM pg_prepared_xacts").fetchall()
            if janitor._parse_gid(gid) == gtrid]


def _prepared(conn: psycopg.Connection[Any], gtrid: str) -> int:
    return len(_gids(conn, gtrid))


@pytest.fixture
def gtrid(conn: psycopg.Connection[Any]) -> Iterator[str]:
    """A group id; whatever of it a failing test leaves prepared is rolled back (it would hold locks)."""
    name = f"sluice-{uuid.uuid4().hex[:16]}"
    yield name
    for gid in _gids(conn, name):
        conn.execute(sql.SQL("ROLLBACK PREPARED {}").format(sql.Literal(gid)))


@pytest.mark.parametrize(("decided", "expected"), [(False, []), (True, [10, 11])])
def test_orphaned_two_phase_groups_finish_all_or_nothing(
    decided: bool, expected: list[int], two_phase: str, conn: psycopg.Connection[Any],
    table_name: Callable[[str], str], tmp_path: Path, gtrid: str,
) -> None:
    dsn = two_phase
    table = table_name("tpc")
    conn.execute(sql.SQL("CREATE TABLE {} (id int)").format(sql.Identifier(table)))
    # Decided: the leader died after committing one branch; not decided: after preparing both.
    _prepare_group(dsn, table, gtrid, commit_first=decided, decide=decided)
    assert _prepared(conn, gtrid) == (1 if decided else 2)
    logs = _load(dsn, tmp_path, table)
    assert _prepared(conn, gtrid) == 0
    assert any(gtrid in m and ("committed" if decided else "rolled back") in m for m in logs)
    ids = [r[0] for r in conn.execute(sql.SQL("SELECT id FROM {} WHERE id >= 10 ORDER BY id").format(
        sql.Identifier(table))).fetchall()]
    assert ids == expected


def test_a_live_leaders_group_is_left_alone(
    two_phase: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path, gtrid: str
) -> None:
    dsn = two_phase
    table = table_name("tpclive")
    conn.execute(sql.SQL("CREATE TABLE {} (id int)").format(sql.Identifier(table)))
    with psycopg.connect(dsn, autocommit=True) as leader:
        janitor.hold(leader, gtrid)
        _prepare_group(dsn, table, gtrid, commit_first=False, decide=False)
        _load(dsn, tmp_path, table)
        assert _prepared(conn, gtrid) == 2
    _load(dsn, tmp_path, table)  # the leader's session ended: now it is resolved
    assert _prepared(conn, gtrid) == 0


def test_parallel_copy_with_two_phase_leaves_no_decision_behind(
    two_phase: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path
) -> None:
    dsn = two_phase
    table = table_name("pc2pc")
    conn.execute(sql.SQL("CREATE TABLE {} (id int)").format(sql.Identifier(table)))
    path = tmp_path / "many.csv"
    path.write_text("id\n" + "".join(f"{i}\n" for i in range(5_000)), encoding="utf-8")
    spec = LoadSpec(SourceOptions(str(path)), TargetSpec(table), strategy="parallel-copy", workers=3,
                    batch_rows=500, dsn=dsn)
    assert LoadJob(spec).run().rows_loaded == 5_000
    assert conn.execute("SELECT count(*) FROM pg_prepared_xacts").fetchone() == (0,)
    left = conn.execute(sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(janitor.DECISIONS))).fetchone()
    assert left == (0,)
