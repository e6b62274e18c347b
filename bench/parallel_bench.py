"""parallel-copy beside psql \\copy (issue 10): whole commands, interleaved, medians and spreads.

    python -m bench.parallel_bench --dsn "host=127.0.0.1 port=5432 dbname=test user=postgres"
    python -m bench.parallel_bench --dsn postgresql://postgres@127.0.0.1:9700/postgres --citus

On Citus the target is distributed by id; the run also kills a per-batch load (SIGKILL) and
checks that --resume leaves every row exactly once.
"""

from __future__ import annotations

import argparse
import os
import resource
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

import psycopg
from psycopg import sql

from bench.run_bench import DDL, ROOT, compile_bytecode, generate, psql_cmd

TABLE = "bench_parallel"


def reset(dsn: str, citus: bool, create: bool = False) -> None:
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(sql.Identifier(TABLE)))
        c.execute("DROP TABLE IF EXISTS _sluice_checkpoint, _sluice_chunks")
        if not create:
            c.execute(sql.SQL(DDL["mixed"]).format(sql.Identifier(TABLE)))
            if citus:
                c.execute("SELECT create_distributed_table(%s, 'id')", [TABLE])
        c.execute("CHECKPOINT")  # no dirty pages of the run before (see run_bench.reset)


def quarters(path: Path, parts: int = 4) -> list[Path]:
    """The file's data lines in `parts` files (no header), made once."""
    tag = "q" if parts == 4 else f"p{parts}_"
    out = [path.with_name(f"{path.stem}_{tag}{i}.csv") for i in range(parts)]
    if not all(p.exists() for p in out):
        lines = path.read_text().splitlines(keepends=True)
        body = lines[1:]
        step = -(-len(body) // parts)
        for i, p in enumerate(out):
            p.write_text("".join(body[i * step:(i + 1) * step]))
    return out


def sluice(dsn: str, path: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "app", "load", str(path), "--table", TABLE, "--dsn", dsn,
            "--strategy", "parallel-copy", *extra]


CPU: dict[str, list[float]] = {}  # client user+sys seconds of each case's runs


def run(cmds: list[list[str]], name: str = "") -> float:
    t = time.perf_counter()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    procs = [subprocess.Popen(c, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) for c in cmds]
    for p in procs:
        _, err = p.communicate()
        if p.returncode != 0:
            raise RuntimeError(err.decode()[-400:])
    elapsed = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    CPU.setdefault(name, []).append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return elapsed


def check(dsn: str, rows: int) -> None:
    with psycopg.connect(dsn) as c:
        got = c.execute(sql.SQL("SELECT count(*), count(DISTINCT id) FROM {}").format(sql.Identifier(TABLE))).fetchone()
    if got != (rows, rows):
        raise RuntimeError(f"expected {rows} distinct rows, found {got}")


def kill_then_resume(dsn: str, path: Path, rows: int, workers: int) -> str:
    reset(dsn, True)
    cmd = sluice(dsn, path, "--workers", str(workers), "--commit", "per-batch")
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    # Killed once the first chunk has committed (chunks are large: a fixed delay may hit none).
    with psycopg.connect(dsn, autocommit=True) as c:
        while proc.poll() is None:
            if c.execute("SELECT to_regclass('_sluice_chunks') IS NOT NULL").fetchone() == (True,):
                got = c.execute("SELECT count(*) FROM _sluice_chunks").fetchone()
                if got and got[0]:
                    break
            time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    with psycopg.connect(dsn) as c:
        before = c.execute(sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(TABLE))).fetchone()
    run([[*cmd, "--resume"]])
    check(dsn, rows)
    return f"killed after {before[0] if before else 0:,} committed rows; --resume: {rows:,} rows, each once"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dsn", required=True)
    ap.add_argument("--citus", action="store_true")
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    path = generate(1_000_000)["mixed"]
    compile_bytecode()
    rows = 1_000_000
    copy = psql_cmd(a.dsn, "-c", f"\\copy {TABLE} FROM '{path}' WITH (FORMAT csv, HEADER)")
    quarter = [psql_cmd(a.dsn, "-c", f"\\copy {TABLE} FROM '{q}' WITH (FORMAT csv)") for q in quarters(path)]
    workers = "4" if a.citus else "2"
    cases: list[tuple[str, list[list[str]], bool]] = [
        ("psql \\copy", [copy], False),
        (f"parallel-copy {workers} workers per-batch", [sluice(a.dsn, path, "--workers", workers,
                                                               "--commit", "per-batch")], False),
    ]
    if a.citus:
        cases += [("parallel-copy 4 workers single (staged, co-located)", [sluice(a.dsn, path, "--workers", "4")],
                   False), ("4 psql \\copy on quarters", quarter, False)]
    else:
        halves = [psql_cmd(a.dsn, "-c", f"\\copy {TABLE} FROM '{h}' WITH (FORMAT csv)") for h in quarters(path, 2)]
        cases += [("parallel-copy 2 workers create+single", [sluice(a.dsn, path, "--workers", "2", "--mode",
                                                                     "create")], True),
                  ("2 psql \\copy on halves (the two-stream ideal)", halves, False)]
    times: dict[str, list[float]] = {name: [] for name, _, _ in cases}
    for _ in range(a.repeat):
        for name, cmds, create in cases:
            reset(a.dsn, a.citus, create)
            times[name].append(run(cmds, name))
            check(a.dsn, rows)
    base = statistics.median(times["psql \\copy"])
    for name, ts in times.items():
        med = statistics.median(ts)
        print(f"{name:55s} median {med:6.2f} s  (min {min(ts):.2f}, max {max(ts):.2f})  {base / med:4.2f}x psql \\copy"
              f"  client cpu {statistics.median(CPU[name]):.2f} s")
    if a.citus:
        print(kill_then_resume(a.dsn, path, rows, 4))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
