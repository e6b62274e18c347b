"""Reproduce the seed articles' findings with `python -m app compare` on this machine.

    python -m bench.seeds [--dsn DSN] [--quick]

Each finding runs the real compare command (a fresh process, scratch table, interleaved
repeats, the latency relay for RTT) and the table printed at the end puts its rates and
ratios beside the seed's own numbers. Results are also saved to bench/data/seeds.json.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "bench" / "data" / "seeds"


@dataclass
class Finding:
    seed: str
    title: str
    source: Path
    strategies: list[str]
    batch_rows: list[int] = field(default_factory=lambda: [1000])
    rtt_ms: float = 0.0
    sample_rows: int | None = None
    repeat: int = 3
    budget_s: float = 30.0
    seed_says: str = ""
    results: list[dict[str, Any]] = field(default_factory=list)


def _write(path: Path, header: str, rows: Any) -> Path:
    if not path.exists():
        DATA.mkdir(parents=True, exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(header + "\n")
            for r in rows:
                f.write(r + "\n")
    return path


def datasets(quick: bool) -> dict[str, Path]:
    wide_rows = 2_000 if quick else 10_000
    # Seed 001's BlogPost: the same static ~33 kB of text in every row.
    title, body, payload = "title" * 1764, "body" * 1764, "dummy data" * 1764
    wide = _write(DATA / f"wide_{wide_rows}.csv", "id,title,body,payload",
                  (f"{i},{title},{body},{payload}" for i in range(1, wide_rows + 1)))
    # Seed 000's rows: a short text and a small JSON object.
    small = _write(DATA / "text_json_100000.csv", "id,text,properties",
                   (f'{i},Some text,"{{""key"": ""value""}}"' for i in range(1, 100_001)))
    # Seed 004's demo table: (key int, value int), one INSERT per row.
    n = 20_000 if quick else 100_000
    script = DATA / f"inserts_{n}.sql"
    if not script.exists():
        with open(script, "w", encoding="utf-8") as f:
            for i in range(1, n + 1):
                f.write(f"insert into demo (key,value) values ({i},{i * 7919 % 10007});\n")
    return {"wide": wide, "small": small, "script": script}


def findings(quick: bool) -> list[Finding]:
    d = datasets(quick)
    sizes = [50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000, 100000]
    out = [
        Finding("001", "ORM-style wide rows: commit per row vs one transaction vs COPY", d["wide"],
                ["row-autocommit", "row-transaction", "copy-csv"], batch_rows=[1000],
                seed_says="10k rows: 268 s / 25 s / 5 s (1 : 10.7 : 54)"),
        Finding("000", "connection per row vs one connection (1,000 rows)", d["small"],
                ["connection-per-row", "row-transaction", "unnest"], batch_rows=[1000], sample_rows=1000,
                seed_says="1,000 rows: 7.16 s / 0.144 s / 0.042 s (1 : 50 : 170)"),
        Finding("000", "row-transaction vs unnest across batch sizes (100k rows)", d["small"],
                ["row-transaction", "unnest"], batch_rows=sizes if not quick else [100, 1000, 10000],
                repeat=2, seed_says="unnest peaks near 42,000 rows/s at 20k rows per call; per-row 6.9k-8k rows/s"),
        Finding("004", "an INSERT script: autocommit vs one transaction vs DO block vs COPY", d["script"],
                ["script-autocommit", "script-transaction", "script-do-block", "copy-csv"],
                batch_rows=[10000], repeat=2,
                seed_says="1M statements: 21 min / 73 s / 40 s (1 : 17 : 31); COPY fastest"),
    ]
    for rtt, says in ((20, ""), (100, ""), (320, "500 rows at 320 ms: 167 s one by one vs 1.2 s batched (1 : 139)")):
        out.append(Finding("003", f"round trips at {rtt} ms RTT (500 rows)", d["small"],
                           ["row-transaction", "executemany", "pipeline", "copy-csv"], batch_rows=[500],
                           rtt_ms=rtt, sample_rows=500, repeat=1 if rtt >= 100 else 2, budget_s=40,
                           seed_says=says or "(the seed measured 320 ms only)"))
    return out


def run(f: Finding, dsn: str | None) -> None:
    cmd = [sys.executable, "-m", "app", "compare", str(f.source), "--table", "seed_" + f.seed,
           "--strategies", ",".join(f.strategies), "--batch-rows", ",".join(map(str, f.batch_rows)),
           "--repeat", str(f.repeat), "--rtt-ms", str(f.rtt_ms), "--budget-s", str(f.budget_s), "--json"]
    if f.sample_rows:
        cmd += ["--sample-rows", str(f.sample_rows)]
    if dsn:
        cmd += ["--dsn", dsn]
    print(f"$ {' '.join(cmd[1:])}", file=sys.stderr, flush=True)
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        print(done.stderr, file=sys.stderr)
        return
    f.results = json.loads(done.stdout.strip().splitlines()[-1])["results"]


def table(found: list[Finding]) -> str:
    lines = ["| seed | finding | strategy | batch | median rows/s | vs slowest | seed says |",
             "|---|---|---|---:|---:|---:|---|"]
    for f in found:
        ok = [r for r in f.results if r["median_rows_per_s"] > 0]
        slowest = min((r["median_rows_per_s"] for r in ok), default=0.0)
        for i, r in enumerate(f.results):
            rate = r["median_rows_per_s"]
            note = f" (on {r['reduced_rows']:,} rows)" if r.get("reduced_rows") else ""
            if r.get("error"):
                note = f" error: {r['error']}"
            lines.append(
                f"| {f.seed if i == 0 else ''} | {f.title if i == 0 else ''} | {r['strategy']} | {r['batch_rows']:,} "
                f"| {rate:,.0f}{note} | {rate / slowest if slowest else 0:,.1f}x | {f.seed_says if i == 0 else ''} |"
            )
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--dsn", help="default: the embedded PostgreSQL")
    ap.add_argument("--quick", action="store_true", help="smaller files, fewer batch sizes")
    ap.add_argument("--only", help="comma-separated seed numbers to run, e.g. 003,004")
    args = ap.parse_args()
    found = findings(args.quick)
    if args.only:
        found = [f for f in found if f.seed in args.only.split(",")]
    for f in found:
        run(f, args.dsn)
    (ROOT / "bench" / "data").mkdir(parents=True, exist_ok=True)
    (ROOT / "bench" / "data" / "seeds.json").write_text(
        json.dumps([{"seed": f.seed, "title": f.title, "rtt_ms": f.rtt_ms, "results": f.results} for f in found],
                   indent=1), encoding="utf-8")
    print(table(found))


if __name__ == "__main__":
    main()
