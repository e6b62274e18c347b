"""The floor of a Python client on psycopg (Sluice's driver): it sends a binary COPY stream ready on disk.

    python -m bench.floor_client FILE TABLE DSN

FILE is the server's own binary export of the rows (`COPY ... TO` a file, as L0 reads it), so
nothing is parsed, typed or encoded here: the command is Python's start, psycopg's import, a
connection and the file's bytes in 8 MB writes. Whatever a loader on Python and psycopg does on
top can only add to this; where this command trails psql \\copy, so must every such loader on
this machine (bench/corpus_bench.py times it beside psql, auto and L0).
"""

from __future__ import annotations

import sys

import psycopg
from psycopg import sql


def send(path: str, table: str, dsn: str) -> None:
    with psycopg.connect(dsn) as conn, conn.cursor() as cur:
        stmt = sql.SQL("COPY {} FROM STDIN (FORMAT binary)").format(sql.Identifier(table))
        with cur.copy(stmt) as copy, open(path, "rb") as f:
            while block := f.read(8 << 20):
                copy.write(block)


if __name__ == "__main__":
    send(*sys.argv[1:4])
