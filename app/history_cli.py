"""Headless runs in the shared history, and `python -m app history [--clear] [--limit N] [--json]`."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from core.errors import Cancelled, SluiceError, UnfinishedRun
from core.history import Entry, History, from_failure, from_result, record

if TYPE_CHECKING:
    from core.job import LoadJob, LoadResult
    from core.many_files import EachFileJob
    from core.spec import LoadSpec


def add_parser(sub: Any) -> None:
    """The `history` subcommand, on the CLI's subparsers."""
    h = sub.add_parser("history", help="the runs of the window and the command line, oldest first")
    h.add_argument("--limit", type=int, default=50, help="the newest N runs (default 50; 0: all)")
    h.add_argument("--clear", action="store_true", help="forget every run kept")
    h.add_argument("--json", action="store_true", help="one JSON object per run")


def _keep(entry: Entry) -> None:
    problem = record(entry)
    if problem:
        print(f"note: this run is not in the history: {problem}", file=sys.stderr)


def remember_result(spec: LoadSpec, result: LoadResult) -> None:
    _keep(from_result(spec, result, origin="cli"))


def remember_error(spec: LoadSpec, job: LoadJob | EachFileJob, exc: SluiceError) -> None:
    """A headless run that failed or was interrupted: what auto picked, what was read, and why."""
    from core.spec import CommitMode

    outcome = ("not started" if isinstance(exc, UnfinishedRun) else "cancelled" if isinstance(exc, Cancelled)
               else "failed")
    # All or nothing: a single-transaction run that failed left nothing; per-batch runs keep their commits.
    loaded = 0 if spec.commit is CommitMode.SINGLE else None
    chosen = job.chosen.strategy if job.chosen is not None else None
    _keep(from_failure(spec, chosen=chosen, outcome=outcome, note=str(exc), origin="cli",
                       rows_read=job.rows_read or None, rows_loaded=loaded, rows_rejected=loaded))


def _cell(v: object) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return f"{v:,.2f}" if v < 100 else f"{v:,.0f}"
    return f"{v:,}" if isinstance(v, int) else str(v)


def cmd_history(args: argparse.Namespace) -> int:
    history = History()
    if args.clear:
        print(f"cleared the history: {history.clear():,} runs forgotten ({history.path})", file=sys.stderr)
        return 0
    entries = history.entries(limit=args.limit or None)
    if args.json:
        for e in entries:
            d = {k: getattr(e, k) for k in e.__dataclass_fields__}
            print(json.dumps(d, default=str))
        return 0
    if not entries:
        print(f"no runs kept yet ({history.path})", file=sys.stderr)
        return 0
    head = ("time", "from", "kind", "mode", "strategy", "loaded", "read", "rejected", "seconds", "outcome", "table",
            "file", "note")
    lines = [head] + [(
        f"{e.at:%Y-%m-%d %H:%M:%S}", e.origin, e.kind, e.mode or "-", e.strategy or "-", _cell(e.rows_loaded),
        _cell(e.rows_read), _cell(e.rows_rejected), _cell(e.seconds), e.outcome, e.target, e.source,
        " — ".join(x for x in ("; ".join(f"{t}: {n:,} rows" for t, n in e.tables), e.note) if x),
    ) for e in entries]
    widths = [max(len(line[i]) for line in lines) for i in range(len(head) - 1)]
    for line in lines:
        print("  ".join(c.ljust(wd) for c, wd in zip(line, widths, strict=False)) + "  " + line[-1])
    return 0
