"""What value formats cost: the 1M mixed rows as written (ISO, plain numbers) and with 1, 2 and 3
columns as a spreadsheet writes them (`DD.MM.YYYY`, `MM/DD/YYYY hh:MM:SS AM/PM`, `1.234,56`).

    python -m bench.formats_bench [--rows N] [--repeat K] [--dsn DSN] [--base DIR]

Whole `python -m app load` commands into an existing table, interleaved in rounds with psql
\\copy of the plain file. `--base DIR` also times another checkout (e.g. main, extracted with
`git archive`) on the plain file: files without such columns must keep their speed.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import polars as pl

from bench.run_bench import DATA, LOCAL_DSN, ROOT, generate, psql_cmd, reset

# The spreadsheet spelling of each converted column, added one at a time.
SPELLED = (
    ("day", "DD.MM.YYYY", pl.col("day").dt.strftime("%d.%m.%Y")),
    ("ts", "MM/DD/YYYY hh:MM:SS AM/PM", pl.col("ts").str.to_datetime().dt.strftime("%m/%d/%Y %I:%M:%S %p")),
    ("price", "1.234,56", pl.col("price").cast(pl.String).str.replace(".", ",", literal=True)),
)


def spelled(mixed: Path, n: int) -> Path:
    """The mixed file with its first `n` SPELLED columns as a spreadsheet writes them (`;`-separated)."""
    out = DATA / f"{mixed.stem}_formats{n}.csv"
    if not out.exists():
        frame = pl.read_csv(mixed, try_parse_dates=True, schema_overrides={"ts": pl.String})
        frame = frame.with_columns(expr.alias(col) for col, _, expr in SPELLED[:n])
        frame.write_csv(out, separator=";")
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--dsn", default=LOCAL_DSN)
    ap.add_argument("--base", help="another checkout to time on the plain file (its root folder)")
    a = ap.parse_args()
    mixed = generate(a.rows)["mixed"]
    table = "bench_formats"
    load = [sys.executable, "-m", "app", "load"]
    cases: list[tuple[str, list[str], Path]] = [
        ("psql \\copy", psql_cmd(a.dsn, "-c", f"\\copy {table} from '{mixed}' csv header"), ROOT)]
    if a.base:
        cases.append(("base: plain", [*load, str(mixed), "--table", table, "--dsn", a.dsn], Path(a.base)))
    cases.append(("plain", [*load, str(mixed), "--table", table, "--dsn", a.dsn], ROOT))
    for n in (1, 2, 3):
        given = [f"--column-format={col}={fmt}" for col, fmt, _ in SPELLED[:n]]
        cases.append((f"{n} converted", [*load, str(spelled(mixed, n)), "--table", table, "--dsn", a.dsn, *given], ROOT))
    times: dict[str, list[float]] = {name: [] for name, _, _ in cases}
    cpu: dict[str, list[float]] = {name: [] for name, _, _ in cases}
    for _ in range(a.repeat):
        for name, cmd, cwd in cases:
            reset(a.dsn, table, "mixed")
            wall, used = timed_in(cmd, cwd)
            times[name].append(wall)
            cpu[name].append(used)
    plain, plain_cpu = statistics.median(times["plain"]), statistics.median(cpu["plain"])
    print(f"{a.rows:,} mixed rows, {a.repeat} rounds; wall seconds median (min-max), and the command's own CPU "
          "seconds (user+sys, median): a busy machine stretches the wall time, the CPU time less so")
    for name, ts in times.items():
        med, used = statistics.median(ts), statistics.median(cpu[name])
        extra = ""
        if name.endswith("converted"):
            n = int(name.split()[0])
            extra = (f"  +{(med - plain) / n:.2f} s wall, +{(used - plain_cpu) / n:.2f} CPU-s per converted column "
                     f"({(used - plain_cpu) / n / a.rows * 1e9:.0f} CPU-ns/value)")
        print(f"{name:<14} {med:6.2f} ({min(ts):.2f}-{max(ts):.2f})  cpu {used:5.2f}{extra}")
    one, three = statistics.median(cpu["1 converted"]), statistics.median(cpu["3 converted"])
    print(f"leaving the raw path with one converted column: +{one - plain_cpu:.2f} CPU-s; each further column "
          f"(1 -> 3): +{(three - one) / 2:.2f} CPU-s ({(three - one) / 2 / a.rows * 1e9:.0f} CPU-ns/value)")
    return 0


def timed_in(cmd: list[str], cwd: Path) -> tuple[float, float]:
    """(wall seconds, the child's user+sys CPU seconds) of one whole command run in `cwd`."""
    import os
    import resource
    import subprocess
    import time

    env = None if cwd == ROOT else dict(os.environ, PYTHONPATH=str(cwd))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, env=env)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:6])}... failed: {r.stderr.strip()[-400:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


if __name__ == "__main__":
    raise SystemExit(main())
