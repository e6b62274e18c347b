"""The latency relay: delay each way, bytes unchanged, Unix-socket upstreams, real PostgreSQL, bounded stop."""

from __future__ import annotations

import base64
import hashlib
import logging
import os
import socket
import struct
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict

from core.lab.relay import LatencyRelay, relay_dsn, upstream_of

DEFAULT_PG_DSN = "host=127.0.0.1 port=5432 dbname=test user=postgres"


# --- helpers ----------------------------------------------------------------------------------


class _Server:
    """A threaded test server on 127.0.0.1 or a Unix socket: echoes by default, or accepts and never reads."""

    def __init__(self, unix_path: Path | None = None, *, echo: bool = True) -> None:
        if unix_path is None:
            self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            self.sock.bind(("127.0.0.1", 0))
        else:
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.sock.bind(str(unix_path))
        self.sock.listen(16)
        self.sock.settimeout(0.05)  # lets the accept loop notice close() promptly
        self.echo = echo
        self.done = threading.Event()
        self.conns: list[socket.socket] = []
        self.threads: list[threading.Thread] = []
        self._accepter = threading.Thread(target=self._accept, daemon=True)
        self._accepter.start()

    @property
    def port(self) -> int:
        return int(self.sock.getsockname()[1])

    def _accept(self) -> None:
        while not self.done.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            conn.settimeout(None)
            self.conns.append(conn)
            t = threading.Thread(target=self._handle, args=(conn,), daemon=True)
            self.threads.append(t)
            t.start()

    def _handle(self, conn: socket.socket) -> None:
        try:
            if not self.echo:
                self.done.wait()
                return
            while data := conn.recv(1 << 20):
                conn.sendall(data)
            conn.shutdown(socket.SHUT_WR)
        except OSError:
            pass
        finally:
            conn.close()

    def close(self) -> None:
        self.done.set()
        self._accepter.join(5)
        self.sock.close()
        for conn in self.conns:
            try:
                conn.shutdown(socket.SHUT_RDWR)  # wakes a handler blocked in recv/sendall
            except OSError:
                pass
        for t in self.threads:
            t.join(5)
        assert not any(t.is_alive() for t in [self._accepter, *self.threads])


@contextmanager
def _server(unix_path: Path | None = None, *, echo: bool = True) -> Iterator[_Server]:
    srv = _Server(unix_path, echo=echo)
    try:
        yield srv
    finally:
        srv.close()


def _round_trip(sock: socket.socket, msg: bytes) -> float:
    t = time.perf_counter()
    sock.sendall(msg)
    got = b""
    while len(got) < len(msg):
        chunk = sock.recv(65536)
        assert chunk, "connection closed mid round trip"
        got += chunk
    elapsed = time.perf_counter() - t
    assert got == msg
    return elapsed


def _echo_all(port: int, payload: bytes) -> tuple[bytes, float]:
    """Send payload (from a thread) while receiving the echo until EOF; returns (echoed, seconds)."""
    with socket.create_connection(("127.0.0.1", port)) as sock:
        def send() -> None:
            sock.sendall(payload)
            sock.shutdown(socket.SHUT_WR)

        t = time.perf_counter()
        sender = threading.Thread(target=send)
        sender.start()
        parts: list[bytes] = []
        while chunk := sock.recv(1 << 20):
            parts.append(chunk)
        elapsed = time.perf_counter() - t
        sender.join(10)
        assert not sender.is_alive()
    return b"".join(parts), elapsed


def _relay_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "sluice-relay"]


# --- latency ----------------------------------------------------------------------------------


@pytest.mark.timeout(60)
def test_round_trip_gains_the_rtt() -> None:
    with _server() as echo, LatencyRelay(upstream_host="127.0.0.1", upstream_port=echo.port, rtt_ms=50) as relay:
        assert relay.host == "127.0.0.1"
        with socket.create_connection((relay.host, relay.port)) as sock:
            times = [_round_trip(sock, b"ping %d" % i) for i in range(5)]
    assert all(t >= 0.050 for t in times), times
    assert min(times) < 0.050 + 0.400, times


@pytest.mark.timeout(60)
def test_zero_rtt_passes_straight_through() -> None:
    with (
        _server() as echo,
        LatencyRelay(upstream_host="127.0.0.1", upstream_port=echo.port, rtt_ms=0) as relay,
        socket.create_connection((relay.host, relay.port)) as sock,
    ):
        times = [_round_trip(sock, b"x" * 100) for _ in range(20)]
    assert min(times) < 0.010, times


@pytest.mark.timeout(60)
def test_round_trips_on_parallel_connections_overlap() -> None:
    # Latency, not a shared serial queue: 8 clients at once each see ~one RTT, not eight.
    with _server() as echo, LatencyRelay(upstream_host="127.0.0.1", upstream_port=echo.port, rtt_ms=100) as relay:
        socks = [socket.create_connection((relay.host, relay.port)) for _ in range(8)]
        try:
            t = time.perf_counter()
            for s in socks:
                s.sendall(b"hello")
            for s in socks:
                assert s.recv(100) == b"hello"
            elapsed = time.perf_counter() - t
        finally:
            for s in socks:
                s.close()
    assert 0.100 <= elapsed < 0.100 + 0.400


# --- bytes unchanged, at full bandwidth --------------------------------------------------------


@pytest.mark.timeout(60)
@pytest.mark.parametrize("rtt", [0, 20])
def test_20_mb_echo_is_byte_identical(rtt: float) -> None:
    payload = os.urandom(20 * 1024 * 1024)
    with _server() as echo, LatencyRelay(upstream_host="127.0.0.1", upstream_port=echo.port, rtt_ms=rtt) as relay:
        echoed, elapsed = _echo_all(relay.port, payload)
        assert relay.bytes_up == len(payload)
        assert relay.bytes_down == len(payload)
    assert len(echoed) == len(payload)
    assert hashlib.sha256(echoed).digest() == hashlib.sha256(payload).digest()
    # Stop-and-wait per 64 KiB chunk at 20 ms would take 320 chunks * 20 ms * 2 ways = 12.8 s.
    assert elapsed < 10.0


@pytest.mark.timeout(60)
def test_half_close_delivers_pending_bytes_then_eof() -> None:
    # The client's EOF reaches the server only after the delayed bytes ahead of it.
    with _server() as echo, LatencyRelay(upstream_host="127.0.0.1", upstream_port=echo.port, rtt_ms=40) as relay:
        echoed, elapsed = _echo_all(relay.port, b"last words")
    assert echoed == b"last words"
    assert elapsed >= 0.040


# --- Unix-socket upstream ----------------------------------------------------------------------


@pytest.mark.timeout(60)
def test_unix_socket_upstream(tmp_path: Path) -> None:
    path = tmp_path / ".s.PGSQL.5432"
    with _server(path), LatencyRelay(upstream_unix=str(path), rtt_ms=20) as relay:
        with socket.create_connection((relay.host, relay.port)) as sock:
            assert _round_trip(sock, b"over a unix socket") >= 0.020
        payload = os.urandom(2 * 1024 * 1024)
        echoed, _ = _echo_all(relay.port, payload)
        assert echoed == payload


# --- failures and shutdown ---------------------------------------------------------------------


@pytest.mark.timeout(60)
def test_unreachable_upstream_closes_the_client() -> None:
    with _server() as srv:
        port = srv.port
    # Nothing listens on `port` now.
    with (
        LatencyRelay(upstream_host="127.0.0.1", upstream_port=port, rtt_ms=20) as relay,
        socket.create_connection((relay.host, relay.port)) as sock,
    ):
        sock.settimeout(10)
        try:
            assert sock.recv(10) == b""
        except ConnectionResetError:
            pass


@pytest.mark.timeout(60)
def test_client_reset_is_quiet_and_the_relay_keeps_serving(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    with _server() as echo, LatencyRelay(upstream_host="127.0.0.1", upstream_port=echo.port, rtt_ms=20) as relay:
        for _ in range(3):
            sock = socket.create_connection((relay.host, relay.port))
            sock.sendall(os.urandom(300_000))
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            sock.close()  # RST, with bytes still queued in the relay
        with socket.create_connection((relay.host, relay.port)) as sock:
            assert _round_trip(sock, b"still here") >= 0.020
    loud = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert not loud, [r.getMessage() for r in loud]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("echo", [True, False], ids=["echo-mid-stream", "upstream-not-reading"])
def test_stop_mid_transfer_is_prompt_and_leaves_no_threads(echo: bool) -> None:
    before = threading.active_count()
    with _server(echo=echo) as srv:
        relay = LatencyRelay(upstream_host="127.0.0.1", upstream_port=srv.port, rtt_ms=100)
        relay.start()
        sock = socket.create_connection((relay.host, relay.port))
        flowing = threading.Event()
        sent = [0]

        def send() -> None:
            chunk = os.urandom(65536)
            try:
                while True:
                    sent[0] += sock.send(chunk)
                    if sent[0] >= 4 * 1024 * 1024:
                        flowing.set()
            except OSError:
                flowing.set()

        def receive() -> None:
            try:
                while sock.recv(1 << 20):
                    pass
            except OSError:
                pass

        workers = [threading.Thread(target=send), threading.Thread(target=receive)]
        for w in workers:
            w.start()
        try:
            assert flowing.wait(30)
            t = time.perf_counter()
            relay.stop()
            assert time.perf_counter() - t < 2.5
            assert not _relay_threads()
            relay.stop()  # idempotent
            for w in workers:
                w.join(10)  # the relay dropped the connection, so both halves of the client give up
            assert not any(w.is_alive() for w in workers)
        finally:
            relay.stop()
            sock.close()
    assert threading.active_count() == before


@pytest.mark.timeout(60)
def test_start_stop_cycles_leave_no_threads() -> None:
    before = threading.active_count()
    relay = LatencyRelay(upstream_host="127.0.0.1", upstream_port=9, rtt_ms=5)
    relay.stop()  # before start: a no-op
    for _ in range(3):
        relay.start()
        assert relay.port > 0
        with pytest.raises(RuntimeError):
            relay.start()
        relay.stop()
    assert threading.active_count() == before


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="upstream"):
        LatencyRelay(rtt_ms=5)
    with pytest.raises(ValueError, match="rtt_ms"):
        LatencyRelay(upstream_unix="/tmp/x", rtt_ms=-1)
    with pytest.raises(RuntimeError):
        _ = LatencyRelay(upstream_unix="/tmp/x", rtt_ms=1).port


# --- real PostgreSQL ---------------------------------------------------------------------------


@pytest.fixture
def pg_dsn() -> str:
    dsn = os.environ.get("SLUICE_TEST_DSN") or DEFAULT_PG_DSN
    try:
        with psycopg.connect(dsn, connect_timeout=5):
            pass
    except psycopg.Error as exc:
        pytest.skip(f"no PostgreSQL at {dsn!r}: {exc}")
    return dsn


@pytest.mark.timeout(60)
def test_postgres_through_the_relay(pg_dsn: str) -> None:
    before = threading.active_count()
    host, port, unix = upstream_of(pg_dsn)
    rows = 40_000
    lines = [f"{i}\t{base64.b64encode(os.urandom(96)).decode()}\n" for i in range(rows)]
    data = "".join(lines).encode()
    assert len(data) > 5_000_000
    with LatencyRelay(upstream_host=host, upstream_port=port, upstream_unix=unix, rtt_ms=20) as relay:
        with psycopg.connect(relay_dsn(pg_dsn, relay), autocommit=True) as conn:
            times = []
            for _ in range(3):
                t = time.perf_counter()
                assert conn.execute("SELECT 1").fetchone() == (1,)
                times.append(time.perf_counter() - t)
            assert min(times) >= 0.020, times
            conn.execute("CREATE TEMP TABLE t (n int, s text)")
            cur = conn.cursor()
            t = time.perf_counter()
            with cur.copy("COPY t FROM STDIN") as cp:
                cp.write(data)
            copy_s = time.perf_counter() - t
            got = conn.execute(
                "SELECT count(*), md5(string_agg(n::text || E'\\t' || s || E'\\n', '' ORDER BY n)) FROM t"
            ).fetchone()
        assert relay.bytes_up > len(data)
    assert got == (rows, hashlib.md5(data).hexdigest())
    assert copy_s < 10.0  # a pipeline, not a round trip per COPY message
    assert threading.active_count() == before


# --- DSN helpers -------------------------------------------------------------------------------


@pytest.fixture
def idle_relay() -> Iterator[LatencyRelay]:
    # The upstream is never contacted: no client connects.
    with LatencyRelay(upstream_host="127.0.0.1", upstream_port=9, rtt_ms=1) as relay:
        yield relay


def _params(dsn: str) -> dict[str, Any]:
    return conninfo_to_dict(dsn)


def test_dsn_helpers_embedded_uri(idle_relay: LatencyRelay, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PGSSLMODE", raising=False)
    uri = "postgresql://postgres:@/postgres?host=/tmp/x"  # what the embedded server's get_uri() returns
    assert upstream_of(uri) == (None, None, "/tmp/x/.s.PGSQL.5432")
    assert upstream_of("postgresql://postgres@/postgres?host=/tmp/x/&port=5433") == (None, None,
                                                                                    "/tmp/x/.s.PGSQL.5433")
    p = _params(relay_dsn(uri, idle_relay))
    assert p["host"] == "127.0.0.1" and p["port"] == str(idle_relay.port)
    assert p["dbname"] == "postgres" and p["user"] == "postgres"
    assert p["sslmode"] == "disable"


def test_dsn_helpers_key_value(idle_relay: LatencyRelay, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PGSSLMODE", raising=False)
    monkeypatch.delenv("PGHOST", raising=False)
    monkeypatch.delenv("PGPORT", raising=False)
    kv = "host=db.example port=6543 dbname='my db' user=u password=secret sslmode=require application_name=sluice"
    assert upstream_of(kv) == ("db.example", 6543, None)
    p = _params(relay_dsn(kv, idle_relay))
    assert p == {"host": "127.0.0.1", "port": str(idle_relay.port), "dbname": "my db", "user": "u",
                 "password": "secret", "sslmode": "require", "application_name": "sluice"}
    assert upstream_of("host=/var/run/postgresql port=5433 dbname=x") == (None, None,
                                                                          "/var/run/postgresql/.s.PGSQL.5433")
    assert upstream_of("dbname=x") == ("localhost", 5432, None)
    assert upstream_of("host=a,b port=7,8 dbname=x") == ("a", 7, None)
    monkeypatch.setenv("PGHOST", "/run/pg")
    assert upstream_of("dbname=x") == (None, None, "/run/pg/.s.PGSQL.5432")


def test_dsn_helpers_uri_with_hostaddr(idle_relay: LatencyRelay, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PGSSLMODE", raising=False)
    uri = "postgresql://u:pw@db.example:6000/app?hostaddr=10.0.0.1&connect_timeout=5"
    assert upstream_of(uri) == ("10.0.0.1", 6000, None)  # libpq connects to hostaddr
    assert upstream_of("postgresql://u@db.example/app") == ("db.example", 5432, None)
    p = _params(relay_dsn(uri, idle_relay))
    assert "hostaddr" not in p
    assert p == {"host": "127.0.0.1", "port": str(idle_relay.port), "dbname": "app", "user": "u",
                 "password": "pw", "connect_timeout": "5", "sslmode": "disable"}
