"""Fixtures of the core tests that several files share."""

from __future__ import annotations

import os
import shutil

import psycopg
import pytest

DUMP_DSN = os.environ.get("SLUICE_TEST_DSN", "host=127.0.0.1 port=5432 dbname=test user=postgres")


@pytest.fixture(scope="module")
def dump_server() -> str:
    """The server pg_dump dumps from (the machine's own: pg_dump 15 cannot dump the embedded 18)."""
    if shutil.which("pg_dump") is None:
        pytest.skip("no pg_dump binary")
    try:
        with psycopg.connect(DUMP_DSN, connect_timeout=3) as c:
            c.execute("SELECT 1")
    except psycopg.Error:
        pytest.skip("no server for pg_dump at " + DUMP_DSN)
    return DUMP_DSN
