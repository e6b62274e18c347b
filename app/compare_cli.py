"""`python -m app compare`: strategies side by side on this file, into a scratch table."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable

from core.errors import ConfigError
from core.lab.compare import CompareSpec, run_compare, verdict
from core.spec import LoadSpec


def _ints(text: str, what: str) -> list[int]:
    try:
        return [int(x.replace("_", "").replace("k", "000")) for x in text.split(",") if x.strip()]
    except ValueError:
        raise ConfigError(f"{what} must be comma-separated whole numbers, not {text!r}") from None


def cmd_compare(args: argparse.Namespace, spec_from_args: Callable[[argparse.Namespace], LoadSpec]) -> int:
    """`spec_from_args`: the CLI's reading of the load options (app.cli), handed in so that this
    module needs nothing of the CLI's."""
    batch_rows, workers = _ints(args.batch_rows, "--batch-rows"), _ints(args.workers, "--workers")
    args.batch_rows, args.workers = batch_rows[0], workers[0]
    args.strategy, args.commit, args.on_error = "copy-csv", "single", "abort"
    base = spec_from_args(args)
    spec = CompareSpec(
        base=base, strategies=[s.strip() for s in args.strategies.split(",") if s.strip()], batch_rows=batch_rows,
        workers=workers, sample_rows=args.sample_rows, repeat=max(1, args.repeat), rtt_ms=args.rtt_ms,
        budget_s=args.budget_s,
    )
    tty = sys.stderr.isatty()

    def progress(msg: str, done: int, total: int) -> None:
        if tty:
            sys.stderr.write(f"\r[{done}/{total}] {msg}\x1b[K")
            sys.stderr.flush()

    report = run_compare(spec, on_progress=progress)
    if tty:
        sys.stderr.write("\n")
    sample = f"first {spec.sample_rows:,} rows" if spec.sample_rows else "whole file"
    print(f"round trip {spec.rtt_ms:g} ms (simulated)" if spec.rtt_ms else "round trip: as the connection is",
          f"· sample: {sample} · {spec.repeat} run(s) each")
    print(f"{'strategy':<20} {'batch':>8} {'workers':>7} {'median rows/s':>14} {'min':>12} {'max':>12} "
          f"{'MB/s':>7} {'ratio':>6}")
    for r in report.results:
        j = r.to_json()
        batch = f"{r.batch_rows:,}" if r.batch_sized else "—"  # row by row: no batch size
        note = f"  (on {r.reduced_rows:,} rows)" if r.reduced_rows else ""
        if r.error:
            print(f"{r.strategy:<20} {batch:>8} {r.workers:>7}  error: {r.error}")
            continue
        print(f"{r.strategy:<20} {batch:>8} {r.workers:>7} {j['median_rows_per_s']:>14,.0f} "
              f"{j['min_rows_per_s']:>12,.0f} {j['max_rows_per_s']:>12,.0f} {j['median_mb_per_s']:>7.2f} "
              f"{r.ratio_to_fastest:>6.2f}{note}")
    for r in report.results:
        if r.picked:
            print(f"{r.strategy} picked {r.picked}")
    said = verdict(report.results)
    if said:
        print(said[0].upper() + said[1:] + ("" if "tie" not in said else ": as fast as the lab can tell apart"))
    if report.note:
        print(f"note: {report.note}", file=sys.stderr)
    if args.json:
        print(json.dumps(report.to_json()))
    return 0 if any(r.runs for r in report.results) else 1
