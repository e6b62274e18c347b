"""Does the lab rank as real loads rank? (issue 27, item 6)

    python -m bench.lab_vs_real [--rows N] [--repeat K] [--dsn DSN|embedded] [--shapes a,b] [--no-wide]
                                [--strategies s1,s2] [--out FILE]

For each shape of the corpus (bench/corpus.py, at `--rows`, 100,000 by default) and for wide rows
(10,000 rows of three ~11 kB texts into a logged table), the lab (core.lab.compare: interleaved
runs into a scratch copy of the table, a CHECKPOINT before each) ranks the strategies first; then
real whole `python -m app load` commands of the same strategies run interleaved, each into a fresh
table with a CHECKPOINT before it, as bench/corpus_bench.py times them. Every strategy gets the
same batch size in both (the COPY strategies' default for the shape's rows), so the two rank the
same settings. A shape passes when the lab's first place, or one of the results it marks as tied
for first, lands within 10% of the fastest real load (its median seconds at most 1.1x the best).
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import shlex
import statistics
import sys
from pathlib import Path

import psycopg
from psycopg import sql

from bench.corpus import DDL, SHAPES, generate
from bench.corpus_bench import _dsn
from bench.run_bench import DATA, compile_bytecode, timed
from core.batch_size import byte_sized, source_row_width
from core.lab.compare import CompareSpec, describe, podium, run_compare, tied
from core.spec import LoadMode, LoadSpec, SourceOptions, TargetSpec

STRATEGIES = ("copy-csv", "copy-binary", "parallel-copy", "pipeline")
WIDE = "wide_rows"
WITHIN = 0.10  # the lab's first must land within this of the fastest real load
DDL_OF = {**DDL, WIDE: "CREATE TABLE {} (id bigint, a text, b text, c text)"}


def wide_rows(folder: Path) -> Path:
    """10,000 rows of three ~11 kB texts (about 335 MB), the same bytes every time (bench/run_bench.py's recipe)."""
    import numpy as np
    import polars as pl

    path = folder / "wide_10000.csv"
    if path.exists():
        return path
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(11)
    words = np.array(["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"])

    def text(n: int) -> list[str]:
        return [" ".join(rng.choice(words, 1700)) for _ in range(n)]

    tmp = path.with_suffix(".tmp")
    pl.DataFrame({"id": np.arange(10_000), "a": text(10_000), "b": text(10_000), "c": text(10_000)}).write_csv(tmp)
    tmp.rename(path)
    return path


def reset(dsn: str, table: str, shape: str) -> None:
    """A fresh, logged table, and no dirty pages or WAL left for the next load to pay for."""
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(sql.Identifier(table)))
        c.execute(sql.SQL(DDL_OF[shape]).format(sql.Identifier(table)))  # fixed strings in this module
        c.execute("CHECKPOINT")


def lab(path: Path, table: str, dsn: str, strategies: list[str], batch: int, repeat: int) -> tuple[list[str], dict[str, float]]:
    """The lab's first place (every result tied for first), and each strategy's median rows/s there."""
    base = LoadSpec(SourceOptions(str(path)), TargetSpec(table, mode=LoadMode.APPEND), dsn=dsn)
    report = run_compare(CompareSpec(base, strategies, batch_rows=[batch], workers=[2], repeat=repeat,
                                     budget_s=600.0))
    failed = [f"{r.strategy}: {r.error}" for r in report.results if r.error]
    if failed:
        print("lab errors: " + "; ".join(failed), file=sys.stderr)
    first, _ = podium(report.results)
    firsts = [r.strategy for r in tied(report.results)] or ([first.strategy] if first else [])
    print("lab: " + ", ".join(f"{describe(r)} {r.median_rows_per_s:,.0f} rows/s" for r in report.results),
          file=sys.stderr)
    return firsts, {r.strategy: r.median_rows_per_s for r in report.results if r.runs}


def real(path: Path, table: str, dsn: str, shape: str, strategies: list[str], batch: int,
         repeat: int) -> dict[str, list[float]]:
    """Whole commands, interleaved round by round, each into a fresh table after a CHECKPOINT."""
    load = [sys.executable, "-m", "app", "load", str(path), "--table", table, "--dsn", dsn, "--batch-rows",
            str(batch), "--workers", "2"]
    times: dict[str, list[float]] = {s: [] for s in strategies}
    for _ in range(repeat):
        for s in strategies:
            reset(dsn, table, shape)
            times[s].append(timed([*load, "--strategy", s]))
    return times


def landed(picks: list[str], times: dict[str, list[float]]) -> float:
    """How the best of `picks` landed among the real loads: the fastest median seconds / its median seconds."""
    medians = {s: statistics.median(t) for s, t in times.items() if t}
    best = min(medians.values())
    return max((best / medians[s] for s in picks if s in medians), default=0.0)


def fastest_real(times: dict[str, list[float]]) -> str:
    return min((s for s in times if times[s]), key=lambda s: statistics.median(times[s]))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--dsn", default=None, help="a DSN, or 'embedded'; default: the local server if it answers")
    ap.add_argument("--shapes", default=",".join(SHAPES), help="comma-separated corpus shapes (default: all)")
    ap.add_argument("--no-wide", action="store_true", help="leave out the wide rows (10k rows of 3 x 11 kB)")
    ap.add_argument("--strategies", default=",".join(STRATEGIES))
    ap.add_argument("--out", help="append the table, with date, machine, server and command, to this Markdown file")
    a = ap.parse_args()
    compile_bytecode()  # the real loads are timed as an installed copy runs them
    dsn = _dsn(a.dsn)
    strategies = [s for s in a.strategies.split(",") if s]
    shapes = [s for s in a.shapes.split(",") if s] + ([] if a.no_wide else [WIDE])
    lines = ["| shape | rows | batch | lab's first (ties) | fastest real load | real medians, s | lab's first landed at (fastest alone) | within 10% |",
             "|---|---:|---:|---|---|---|---:|---|"]
    passed = 0
    for shape in shapes:
        path = wide_rows(DATA) if shape == WIDE else generate(shape, a.rows, DATA)
        rows = 10_000 if shape == WIDE else a.rows
        batch = byte_sized(source_row_width(path, path.stat().st_size, "csv"))
        table = f"lvr_{shape}"
        print(f"{shape} ({rows:,} rows, batches of {batch:,})…", file=sys.stderr, flush=True)
        reset(dsn, table, shape)
        firsts, rates = lab(path, table, dsn, strategies, batch, a.repeat)
        times = real(path, table, dsn, shape, strategies, batch, a.repeat)
        with psycopg.connect(dsn, autocommit=True) as c:
            c.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(sql.Identifier(table)))
        with_ties = landed(firsts, times)
        alone = landed([max(rates, key=lambda s: rates[s])], times)  # the lab's fastest median, ties ignored
        ok = with_ties >= 1 / (1 + WITHIN)
        passed += ok
        medians = ", ".join(f"{s} {statistics.median(t):.2f}" for s, t in times.items())
        lines.append(f"| {shape} | {rows:,} | {batch:,} | {' = '.join(firsts)} | {fastest_real(times)} | {medians} | "
                     f"{with_ties:.2f} ({alone:.2f}) | {'yes' if ok else '**no**'} |")
        print(lines[-1], file=sys.stderr, flush=True)
    with psycopg.connect(dsn) as c:
        version = c.execute("SHOW server_version").fetchone()
    head = [
        f"- date: {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC; machine: {platform.node()}, {os.cpu_count()} cores; "
        f"server: PostgreSQL {version[0] if version else '?'} ({'embedded' if 'host=/' in dsn else dsn})",
        f"- command: `python -m bench.lab_vs_real {shlex.join(sys.argv[1:])}`; lab: {a.repeat} interleaved runs "
        "(loading phase, CHECKPOINT before each); real: whole commands, interleaved, CHECKPOINT before each, "
        f"median of {a.repeat}; \"landed at\": fastest real median / real median of the lab's best first",
        "",
    ]
    text = "\n".join([*head, *lines, "", f"{passed} of {len(shapes)} shapes within 10%", ""])
    print(text)
    if a.out:
        with open(a.out, "a", encoding="utf-8") as f:
            f.write(text)
    return 0 if passed == len(shapes) else 1


if __name__ == "__main__":
    sys.exit(main())
