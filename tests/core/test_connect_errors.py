"""Errors that name the real cause: a refused connection or login while a strategy opens is reported
as a connection error by every strategy, and every connection opened before it is closed."""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import polars as pl
import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from core.db import TableRef
from core.errors import ConnectError
from core.load.job import LoadJob
from core.spec import LoadSpec, SourceOptions, TargetSpec
from core.strategies.base import WriteContext
from core.strategies.catalogue import all_strategies

ALL = [c.id for c in all_strategies()]


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])  # nothing listens once the socket is closed


def _refused_dsn(dsn: str) -> str:
    params = {k: v for k, v in conninfo_to_dict(dsn).items() if v is not None and k != "hostaddr"}
    params.update(host="127.0.0.1", port=str(_closed_port()), connect_timeout="5")
    return make_conninfo("", **params)


def _ctx(dsn: str) -> WriteContext:
    return WriteContext(dsn=dsn, table=TableRef("sluice_never"), columns=["a"], types=["integer"], workers=2)


def _open_and_write(cls: Any, dsn: str) -> None:
    strategy = cls(_ctx(dsn))
    try:
        strategy.open()
        strategy.write(pl.DataFrame({"a": [1]}))  # connection-per-row connects here
    finally:
        strategy.rollback()
        strategy.close()


@pytest.fixture(scope="module")
def wrong_password_dsn(embedded_dsn: str) -> Iterator[str]:
    """A role that must give a password (scram) on the embedded server, and a DSN with the wrong one."""
    role = "sluice_pw_probe"
    with psycopg.connect(embedded_dsn, autocommit=True) as c:
        row = c.execute("SHOW hba_file").fetchone()
        assert row is not None
        hba = Path(row[0])
        original = hba.read_text(encoding="utf-8")
        rules = "".join(f"{kind} all {role} {addr} scram-sha-256\n" for kind, addr in
                        (("local", ""), ("host", "127.0.0.1/32"), ("host", "::1/128")))
        hba.write_text(rules + original, encoding="utf-8")
        c.execute("SELECT pg_reload_conf()")
        c.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(role)))
        c.execute(sql.SQL("CREATE ROLE {} LOGIN PASSWORD 'right'").format(sql.Identifier(role)))
        try:
            yield make_conninfo(embedded_dsn, user=role, password="wrong")
        finally:
            hba.write_text(original, encoding="utf-8")
            c.execute("SELECT pg_reload_conf()")
            c.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(role)))


@pytest.mark.parametrize("strategy", ALL)
def test_refused_connection_is_named_by_every_strategy(strategy: str, dsn: str) -> None:
    from core.strategies.catalogue import get_strategy

    with pytest.raises(ConnectError, match=r"(?i)cannot connect.*refused"):
        _open_and_write(get_strategy(strategy), _refused_dsn(dsn))


@pytest.mark.parametrize("strategy", ALL)
def test_wrong_password_is_named_by_every_strategy(strategy: str, wrong_password_dsn: str) -> None:
    from core.strategies.catalogue import get_strategy

    with pytest.raises(ConnectError, match=r"(?i)cannot connect.*password authentication failed"):
        _open_and_write(get_strategy(strategy), wrong_password_dsn)


def _opens_its_own(c: type[Any]) -> bool:
    """A single transactional stream loads on the job's own connection; the others open theirs."""
    return bool(c.multi_connection or not c.transactional)


def _cases() -> list[Any]:
    out = []
    for c in all_strategies():
        # Connection 1 is the job's own; 2.. are the strategy's (parallel-copy opens one per worker,
        # connection-per-row one per row).
        if _opens_its_own(c):
            last = 4 if c.multi_connection else 2
            out += [pytest.param(c.id, n, id=f"{c.id}-conn{n}") for n in range(2, last + 1)]
    return out


def _five_rows(conn: psycopg.Connection[Any], table: str, strategy: str, tmp_path: Path) -> Path:
    """The table (id, name), and five rows for it as the strategy reads them (a script or a CSV)."""
    conn.execute(sql.SQL("CREATE TABLE {} (id int, name text)").format(sql.Identifier(table)))
    if strategy.startswith("script-"):
        path = tmp_path / "s.sql"
        path.write_text("".join(f"INSERT INTO x (id, name) VALUES ({i}, 'n{i}');\n" for i in range(5)), "utf-8")
    else:
        path = tmp_path / "s.csv"
        path.write_text("id,name\n" + "".join(f"{i},n{i}\n" for i in range(5)), encoding="utf-8")
    return path


@pytest.mark.parametrize("strategy", [c.id for c in all_strategies() if not _opens_its_own(c)])
def test_a_single_stream_loads_on_one_connection(
    strategy: str, dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str],
    tmp_path: Path, connections_opened: Callable[[], AbstractContextManager[list[psycopg.Connection[Any]]]],
) -> None:
    table = table_name("one")
    path = _five_rows(conn, table, strategy, tmp_path)
    with connections_opened() as opened:
        LoadJob(LoadSpec(SourceOptions(str(path)), TargetSpec(table), strategy=strategy, dsn=dsn)).run()
    assert len(opened) == 1 and opened[0].closed
    assert conn.execute(sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(table))).fetchone() == (5,)


@pytest.mark.parametrize(("strategy", "fail_at"), _cases())
def test_a_connection_failing_midway_is_named_and_nothing_stays_open(
    strategy: str, fail_at: int, dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str],
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    table = table_name("conn")
    path = _five_rows(conn, table, strategy, tmp_path)
    opened: list[psycopg.Connection[Any]] = []
    calls = [0]
    real = psycopg.connect
    refused = _refused_dsn(dsn)

    def connect(conninfo: str = "", **kwargs: Any) -> psycopg.Connection[Any]:
        calls[0] += 1
        if calls[0] == fail_at:
            return real(refused, **kwargs)
        c = real(conninfo, **kwargs)
        opened.append(c)
        return c

    monkeypatch.setattr(psycopg, "connect", connect)
    spec = LoadSpec(SourceOptions(str(path)), TargetSpec(table), strategy=strategy, workers=3, dsn=dsn)
    with pytest.raises(ConnectError, match=r"(?i)cannot connect.*refused"):
        LoadJob(spec).run()
    assert calls[0] >= fail_at
    assert [c for c in opened if not c.closed] == []
    assert conn.execute(sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(table))).fetchone() == (0,)


def test_a_unix_socket_connection_gets_a_larger_send_buffer(embedded_dsn: str) -> None:
    """The embedded server is reached over a Unix socket, whose default send buffer (about
    200 kB) makes a COPY stream's sender block and wake far more often than over TCP."""
    from core.db import UNIX_SEND_BUFFER, connect

    with connect(embedded_dsn) as conn, socket.socket(fileno=conn.fileno()) as sock:
        try:
            assert sock.family == socket.AF_UNIX
            limit = int(Path("/proc/sys/net/core/wmem_max").read_text()) if Path("/proc/sys/net/core/wmem_max").exists() \
                else UNIX_SEND_BUFFER
            assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF) >= min(UNIX_SEND_BUFFER, limit)
        finally:
            sock.detach()
        conn.execute("SELECT 1")  # the connection still works: the descriptor was not closed

