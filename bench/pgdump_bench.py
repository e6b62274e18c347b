"""pg_dump's data shapes loaded by Sluice and replayed by psql (issue 12).

    python -m bench.pgdump_bench [--rows 336776] [--dsn DSN] [--load-dsn DSN] [--repeat 3] [--shapes plain,...]

Makes a flights-like table (text with quotes, commas and the odd newline, dates,
timestamptz, numerics, NULLs) in the server, dumps it with the machine's `pg_dump
--data-only` in each shape, then times whole commands, interleaved, median of
`--repeat`: `python -m app load FILE` (no options) against psql on the same file into an
emptied copy of the table: `psql -f` for the plain COPY shape (the issue's bar for it),
`psql -1 -f` for the INSERT shapes. Every Sluice load is checked against the source table
(EXCEPT ALL both ways). Besides wall time, each command's own CPU (user+sys of the child
process, from getrusage) is reported: on a shared machine it moves less than wall time.
Sluice's modules are compiled to bytecode first, as an installed copy has them.

`--load-dsn` loads into another server than the one dumped (`--dsn`), e.g. the embedded
PostgreSQL 18 (`python -m app server start` prints its URI), which the machine's pg_dump 15
cannot dump: the same table is made in both (the fill is deterministic), dumped from
`--dsn`, and both contestants load into `--load-dsn`, where Sluice's table is checked.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

from bench.run_bench import compile_bytecode

DEFAULT_DSN = "host=127.0.0.1 port=5432 dbname=test user=postgres"
ROOT = Path(__file__).resolve().parent.parent
SOURCE = "bench_flights_src"
TARGET = "bench_flights"
SHAPES = {
    "plain": [],
    "inserts": ["--inserts"],
    "column-inserts": ["--column-inserts"],
    "rows-per-insert-250": ["--inserts", "--rows-per-insert=250"],
    "column-inserts-on-conflict": ["--column-inserts", "--on-conflict-do-nothing"],
}

DDL = """
CREATE TABLE {t} (
    id integer PRIMARY KEY, year smallint, flight_date date, carrier text, flight integer,
    tailnum text, origin text, dest text, dep_time timestamptz, arr_time timestamptz,
    dep_delay numeric(6,1), air_time real, distance integer, note text, cancelled boolean
)"""

FILL = """
INSERT INTO {t}
SELECT i, 2013, date '2013-01-01' + (i % 365), (ARRAY['UA','AA','B6','DL','EV','MQ','US','WN','VX','FL'])[1 + i % 10],
       1 + (i * 7) % 5000, CASE WHEN i % 53 = 0 THEN NULL ELSE 'N' || (10000 + (i * 13) % 90000) || 'Q' END,
       (ARRAY['EWR','JFK','LGA'])[1 + i % 3], (ARRAY['IAH','MIA','ATL','ORD','LAX','SFO','BOS'])[1 + i % 7],
       timestamptz '2013-01-01 05:00:00+00' + i * interval '97 seconds',
       CASE WHEN i % 41 = 0 THEN NULL ELSE timestamptz '2013-01-01 08:00:00+00' + i * interval '97 seconds' END,
       CASE WHEN i % 29 = 0 THEN NULL ELSE ((i * 37) % 400 - 30) / 10.0 END, (i % 600) / 3.0, 80 + (i * 11) % 4900,
       CASE i % 9 WHEN 0 THEN 'O''Hare, gate ' || (i % 90) WHEN 1 THEN 'delayed; "weather" \\ wind'
                  WHEN 2 THEN '' WHEN 3 THEN NULL WHEN 4 THEN E'two\\nlines, tab\\there'
                  ELSE 'ok ' || md5(i::text) END,
       i % 97 = 0
FROM generate_series(1, {n}) AS i"""


def make_table(dsn: str, rows: int) -> None:
    with psycopg.connect(dsn, autocommit=True) as c:
        for t in (SOURCE, TARGET):
            c.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(sql.Identifier(t)))
            c.execute(sql.SQL(DDL).format(t=sql.Identifier(t)))
        # No autovacuum run in the middle of a timed load, for either contestant.
        c.execute(sql.SQL("ALTER TABLE {} SET (autovacuum_enabled = false)").format(sql.Identifier(TARGET)))
        c.execute(sql.SQL(FILL).format(t=sql.Identifier(SOURCE), n=sql.Literal(rows)))
        c.execute(sql.SQL("ANALYZE {}").format(sql.Identifier(SOURCE)))


def pg_args(dsn: str) -> list[str]:
    return [f"--dbname={dsn}"]


def dump(dsn: str, shape: str, folder: Path) -> Path:
    """The source table's data in this shape, renamed to the target table."""
    path = folder / f"{shape}.sql"
    raw = subprocess.run(
        ["pg_dump", *pg_args(dsn), "--data-only", "-t", SOURCE, *SHAPES[shape]],
        check=True, capture_output=True,
    ).stdout
    path.write_bytes(raw.replace(f"public.{SOURCE}".encode(), f"public.{TARGET}".encode()))
    return path


def _empty(dsn: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute(sql.SQL("TRUNCATE {}").format(sql.Identifier(TARGET)))
        c.execute("CHECKPOINT")


def _same(dsn: str) -> bool:
    q = sql.SQL("SELECT (SELECT count(*) FROM (TABLE {a} EXCEPT ALL TABLE {b}) x) + "
                "(SELECT count(*) FROM (TABLE {b} EXCEPT ALL TABLE {a}) y)").format(
        a=sql.Identifier(SOURCE), b=sql.Identifier(TARGET))
    with psycopg.connect(dsn, autocommit=True) as c:
        row = c.execute(q).fetchone()
    return row is not None and row[0] == 0


def _timed(cmd: list[str]) -> tuple[float, float, subprocess.CompletedProcess[str]]:
    """Wall seconds and the child's user+sys CPU seconds of one command."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), done


def time_sluice(dsn: str, path: Path) -> tuple[float, float]:
    _empty(dsn)
    wall, cpu, done = _timed([sys.executable, "-m", "app", "load", str(path), "--dsn", dsn])
    if done.returncode:
        raise SystemExit(f"{path.name}: python -m app load failed:\n{done.stderr[-2000:]}")
    if not _same(dsn):
        raise SystemExit(f"{path.name}: the table Sluice loaded differs from the source")
    return wall, cpu


def time_psql(dsn: str, path: Path, one: bool) -> tuple[float, float]:
    _empty(dsn)
    wall, cpu, done = _timed(["psql", "-X", "-q", *(["-1"] if one else []), "-v", "ON_ERROR_STOP=1", "-d", dsn,
                              "-f", str(path)])
    if done.returncode:
        raise SystemExit(f"{path.name}: psql failed:\n{done.stderr[-2000:]}")
    return wall, cpu


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.pgdump_bench")
    p.add_argument("--rows", type=int, default=336_776)
    p.add_argument("--dsn", default=DEFAULT_DSN, help="the server the table is made in and dumped from")
    p.add_argument("--load-dsn", help="the server both contestants load into (default: --dsn)")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--shapes", default=",".join(SHAPES))
    p.add_argument("--folder", default="bench/data/pgdump")
    a = p.parse_args(argv)
    if shutil.which("pg_dump") is None or shutil.which("psql") is None:
        raise SystemExit("pg_dump and psql are needed")
    folder = Path(a.folder)
    folder.mkdir(parents=True, exist_ok=True)
    compile_bytecode()
    load_dsn = a.load_dsn or a.dsn
    make_table(a.dsn, a.rows)
    if load_dsn != a.dsn:
        make_table(load_dsn, a.rows)  # the source again, for the check
    with psycopg.connect(load_dsn) as c:
        server = f"PostgreSQL {c.info.server_version // 10000}.{c.info.server_version % 100}"
    results: list[dict[str, Any]] = []
    for shape in a.shapes.split(","):
        path = dump(a.dsn, shape, folder)
        one = shape != "plain"  # the bars: psql -f for plain COPY dumps, psql -1 -f for INSERTs
        runs: dict[str, list[tuple[float, float]]] = {"sluice": [], "psql": []}
        for _ in range(a.repeat):  # interleaved: A B A B ...
            runs["psql"].append(time_psql(load_dsn, path, one=one))
            runs["sluice"].append(time_sluice(load_dsn, path))
        s, q = (statistics.median(w for w, _c in runs[k]) for k in ("sluice", "psql"))
        s_cpu, q_cpu = (statistics.median(c for _w, c in runs[k]) for k in ("sluice", "psql"))
        row = {"shape": shape, "server": server, "rows": a.rows, "mb": round(os.path.getsize(path) / 1e6, 1),
               "psql": "psql -1 -f" if one else "psql -f",
               "sluice_s": round(s, 2), "psql_s": round(q, 2), "ratio": round(q / s, 2),
               "sluice_cpu_s": round(s_cpu, 2), "psql_cpu_s": round(q_cpu, 2),
               "sluice_runs": [round(w, 2) for w, _c in runs["sluice"]],
               "psql_runs": [round(w, 2) for w, _c in runs["psql"]]}
        results.append(row)
        print(json.dumps(row), flush=True)
    print("| shape | rows | MB | sluice load (s) | psql (s) | speed-up | CPU of the command: sluice / psql (s) |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for r in results:
        print(f"| {r['shape']} | {r['rows']:,} | {r['mb']} | {r['sluice_s']} | {r['psql_s']} ({r['psql']}) | "
              f"{r['ratio']}x | {r['sluice_cpu_s']} / {r['psql_cpu_s']} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
