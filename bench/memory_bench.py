"""Peak memory of a load of a 1 GB CSV, for every strategy (`/usr/bin/time -v`).

    python -m bench.memory_bench [--dsn DSN] [--seconds 60] [--strategies auto,copy-binary,...]

Row-by-row strategies would take hours on 12M rows: each run is stopped after
--seconds, long after its memory has reached its steady state (batches are bounded).
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

from bench.run_bench import DATA, LOCAL_DSN, ROOT, generate, reset

BIG = DATA / "mixed_1gb.csv"


def big_csv() -> Path:
    """The 1M-row mixed file's rows twelve times (about 1.09 GB)."""
    if not BIG.exists():
        src = generate(1_000_000)["mixed"]
        head, _, body = src.read_bytes().partition(b"\n")
        with open(BIG, "wb") as f:
            f.write(head + b"\n")
            for _ in range(12):
                f.write(body)
    return BIG


def peak_rss_mb(cmd: list[str], seconds: float) -> tuple[float, bool]:
    run = subprocess.run(["/usr/bin/time", "-v", "timeout", str(seconds), *cmd], capture_output=True, text=True,
                         cwd=ROOT)
    m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", run.stderr)
    if not m:
        raise RuntimeError(run.stderr[-500:])
    return int(m.group(1)) / 1024, run.returncode == 0


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dsn", default=LOCAL_DSN)
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--strategies", default="", help="comma-separated ids (default: auto and every strategy)")
    a = ap.parse_args()
    from core.strategies.catalogue import all_strategies

    path = big_csv()
    print(f"{path.name}: {path.stat().st_size / 1e9:.2f} GB; each load stopped after {a.seconds:.0f} s\n")
    print("| strategy | peak RSS (MB) | finished |")
    print("|---|---:|---|")
    ids = ["auto"] + [c.id for c in all_strategies() if not c.script_only]
    if a.strategies:
        ids = [s for s in a.strategies.split(",") if s]
    for sid in ids:
        reset(a.dsn, "bench_mem", "mixed")
        mb, done = peak_rss_mb([sys.executable, "-m", "app", "load", str(path), "--table", "bench_mem",
                                "--dsn", a.dsn, "--strategy", sid], a.seconds)
        print(f"| {sid} | {mb:,.0f} | {'yes' if done else 'stopped'} |", flush=True)
    reset(a.dsn, "bench_mem", "mixed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
