"""Compare strategies on the user's own file, into a scratch copy of the target.

Runs are interleaved (A B C A B C ...) so drift on a busy machine hits all alike,
and the real target is never touched: each run loads a scratch table built to load
as the target does (see scratch_like; from the mapping for a new table), emptied
between runs. Before every timed run the server writes out the dirty buffers and the WAL
the runs before it left (CHECKPOINT, outside the timed span), so no run pays for another's.
Results whose medians are within TIE of the fastest, or whose ranges overlap its, tie for
first: the lab does not pick one of them on noise.
"""

from __future__ import annotations

import csv
import os
import re
import statistics
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

from core import janitor
from core import mapping as mp
from core.auto import AUTO
from core.cancel import CancelToken
from core.db import TableRef, connect, resolve_dsn
from core.errors import Cancelled, ConfigError, SluiceError
from core.lab.sample import in_users_words, write_sample
from core.load.job import LoadJob
from core.plan import plan_load
from core.spec import LoadMode, LoadSpec
from core.strategies.catalogue import get_strategy


@dataclass
class CompareSpec:
    base: LoadSpec  # source, target, mapping, connection
    strategies: list[str]
    batch_rows: list[int] = field(default_factory=lambda: [10_000])
    workers: list[int] = field(default_factory=lambda: [2])
    sample_rows: int | None = None  # first N rows; None: the whole file
    repeat: int = 3
    rtt_ms: float = 0.0
    budget_s: float = 60.0


@dataclass
class CompareResult:
    strategy: str
    batch_rows: int
    workers: int
    rows: int = 0
    runs: list[float] = field(default_factory=list)  # rows/s of each run
    mb_runs: list[float] = field(default_factory=list)
    reduced_rows: int | None = None  # measured on fewer rows to fit the time budget
    error: str | None = None
    ratio_to_fastest: float = 0.0
    batch_sized: bool = True  # False: the strategy sends row by row; batch_rows only sizes the reads
    picked: str = ""  # `auto` as a contestant: what it picked ("copy-csv · 100,000"), as a load would
    tie: bool = False  # tied for first: median within TIE of the fastest, or its range overlaps the fastest's

    @property
    def key(self) -> tuple[str, int, int]:
        return (self.strategy, self.batch_rows, self.workers)

    def snapshot(self) -> CompareResult:
        """A copy that the run loop no longer mutates (handed to another thread)."""
        return replace(self, runs=list(self.runs), mb_runs=list(self.mb_runs))

    @property
    def median_rows_per_s(self) -> float:
        return statistics.median(self.runs) if self.runs else 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "strategy": self.strategy, "batch_rows": self.batch_rows, "workers": self.workers,
            "median_rows_per_s": round(self.median_rows_per_s, 1),
            "min_rows_per_s": round(min(self.runs), 1) if self.runs else 0.0,
            "max_rows_per_s": round(max(self.runs), 1) if self.runs else 0.0,
            "median_mb_per_s": round(statistics.median(self.mb_runs), 3) if self.mb_runs else 0.0,
            "runs": len(self.runs), "rows": self.rows, "ratio_to_fastest": round(self.ratio_to_fastest, 4),
            "reduced_rows": self.reduced_rows, "error": self.error, "batch_sized": self.batch_sized,
            "picked": self.picked or None, "tie": self.tie,
        }


@dataclass
class CompareReport:
    results: list[CompareResult]
    rtt_ms: float
    sample_rows: int | None
    checkpoints: bool = True  # a CHECKPOINT ran before every timed run (False: the role may not run one)
    note: str = ""  # said once about the whole comparison (why no checkpoints)

    def to_json(self) -> dict[str, Any]:
        return {"results": [r.to_json() for r in self.results], "rtt_ms": self.rtt_ms,
                "sample_rows": self.sample_rows, "verdict": verdict(self.results),
                "tied": [describe(r) for r in tied(self.results)], "checkpoints": self.checkpoints,
                "note": self.note}

    def to_csv(self, path: str | Path) -> None:
        """One line per result, each with the comparison's round trip and sample size."""
        rows = [{**r.to_json(), "rtt_ms": self.rtt_ms, "sample_rows": self.sample_rows} for r in self.results]
        with open(path, "w", newline="", encoding="utf-8") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]) if rows else ["strategy"])
            w.writeheader()
            w.writerows(rows)


def combinations(spec: CompareSpec, is_sql: bool = False) -> list[CompareResult]:
    """One result per (strategy, batch rows, workers) that can differ on the wire.

    A strategy that sends row by row runs once, not once per batch size (its batch_rows, the
    largest asked, only sizes the reads); one without a worker pool runs on one connection.
    """
    out = []
    for sid in spec.strategies:
        if sid == AUTO:  # picks its own batch size and workers, once per run, as a load would
            out.append(CompareResult(AUTO, max(spec.batch_rows), 1, batch_sized=False))
            continue
        cls = get_strategy(sid)
        if cls.script_only and not is_sql:
            raise ConfigError(f"{sid} replays INSERT scripts; the source is not one")
        for batch in spec.batch_rows if cls.batch_sized else [max(spec.batch_rows)]:
            for workers in spec.workers if cls.takes_workers else [1]:
                out.append(CompareResult(sid, batch, max(1, workers), batch_sized=cls.batch_sized))
    return out


# Medians this close to the fastest tie with it: on a busy two-core machine, interleaved runs of
# one strategy drift by about this much, so a smaller lead is not a ranking (issue 27, item 6).
TIE = 0.10


def rank(results: list[CompareResult]) -> None:
    """Set each result's ratio to the fastest median among them, and mark the ties for first: the
    fastest and every result whose median is within TIE of it or whose fastest run reaches its slowest."""
    best = max((r.median_rows_per_s for r in results if r.runs), default=0.0)
    for r in results:
        r.ratio_to_fastest = r.median_rows_per_s / best if best else 0.0
        r.tie = False
    first, _ = podium(results)
    if first is None:
        return
    close = [r for r in results if r.runs and r is not first
             and (r.ratio_to_fastest >= 1 - TIE or max(r.runs) >= min(first.runs))]
    for r in [first, *close] if close else []:
        r.tie = True


def tied(results: list[CompareResult]) -> list[CompareResult]:
    """The results tied for first, fastest median first ([] when one result wins alone)."""
    return sorted((r for r in results if r.tie and r.runs), key=lambda r: r.median_rows_per_s, reverse=True)


def podium(results: list[CompareResult]) -> tuple[CompareResult | None, CompareResult | None]:
    """The fastest result by median and the runner-up (None where there is none)."""
    done = sorted((r for r in results if r.runs), key=lambda r: r.median_rows_per_s, reverse=True)
    return (done[0] if done else None), (done[1] if len(done) > 1 else None)


def verdict(results: list[CompareResult]) -> str:
    """'copy-csv · 10,000 wins', or 'tie: copy-csv · 10,000 and copy-binary · 10,000 (...)' for every
    result tied for first; '' if none finished a run."""
    first, _ = podium(results)
    if first is None:
        return ""
    firsts = tied(results)
    if len(firsts) > 1:
        names = [describe(r) for r in firsts]
        return (f"tie: {', '.join(names[:-1])} and {names[-1]} (medians within {TIE:.0%} of the fastest, "
                "or min–max ranges that overlap)")
    return f"{describe(first)} wins"


def describe(r: CompareResult) -> str:
    """'copy-csv · 10,000', 'parallel-copy ×4 · 10,000', 'row-transaction' (no batch size)."""
    if r.strategy == AUTO:
        return f"{AUTO} → {r.picked}" if r.picked else AUTO
    workers = f" ×{r.workers}" if r.workers > 1 else ""
    return f"{r.strategy}{workers}" + (f" · {r.batch_rows:,}" if r.batch_sized else "")


def run_compare(
    spec: CompareSpec,
    *,
    on_progress: Callable[[str, int, int], None] | None = None,
    on_result: Callable[[CompareResult], None] | None = None,
    cancel: CancelToken | None = None,
) -> CompareReport:
    """on_progress(message, runs_done, runs_total) before each run; on_result(result) after each run
    (or failure) of a combination, with a snapshot of its runs so far, so a view can fill in as it goes.
    Both are called on the thread running the comparison."""
    cancel = cancel or CancelToken()
    dsn = resolve_dsn(spec.base.dsn)
    relay = None
    if spec.rtt_ms > 0:
        from core.lab.relay import LatencyRelay, relay_dsn, upstream_of

        host, port, unix = upstream_of(dsn)
        relay = LatencyRelay(upstream_host=host, upstream_port=port, upstream_unix=unix, rtt_ms=spec.rtt_ms)
        relay.start()
        dsn_for_runs = relay_dsn(dsn, relay)
    else:
        dsn_for_runs = dsn
    ref = TableRef(spec.base.target.table, spec.base.target.schema)
    scratch = TableRef(f"_sluice_cmp_{uuid.uuid4().hex[:10]}", ref.schema)
    # The relay goes first: it stops whatever fails after it, connecting included.
    with _stops(relay), tempfile.TemporaryDirectory(prefix="sluice-cmp-") as tmp, \
            connect(dsn, autocommit=True) as ctl:
        try:
            base = replace(spec.base, dsn=dsn)
            plan = plan_load(base, ctl)
            source_opts, total_rows = base.source, 0
            maps = plan.maps
            if spec.sample_rows:
                source_opts, total_rows = write_sample(base, spec.sample_rows, Path(tmp))
                maps = [replace(m) for m in maps]
            janitor.hold(ctl, scratch.name)  # each run's LoadJob sweeps orphans; this one is ours
            if plan.exists:
                scratch_like(ctl, scratch, ref)
            else:
                ctl.execute(mp.create_table_sql(scratch, maps))
            results = combinations(spec, plan.source.format == "sql")
            settle = Settle(ctl)
            total = len(results) * spec.repeat
            done = 0
            limits: dict[str, int | None] = {}
            for rep in range(spec.repeat):
                for res in results:
                    cancel.check()
                    if res.error:
                        done += 1
                        continue
                    run_spec = replace(
                        base, source=replace(source_opts), dsn=dsn_for_runs, strategy=res.strategy,
                        batch_rows=res.batch_rows, workers=res.workers, columns=maps,
                        target=replace(base.target, table=scratch.name, schema=scratch.schema, mode=LoadMode.APPEND),
                    )
                    if on_progress:
                        on_progress(f"run {rep + 1}/{spec.repeat}: {describe(res)}", done, total)
                    try:
                        _one_run(ctl, scratch, run_spec, res, limits, spec.budget_s, cancel, settle)
                    except Cancelled:
                        raise
                    except SluiceError as exc:
                        res.error = in_users_words(str(exc), base.source.path)
                    done += 1
                    if on_result:
                        on_result(res.snapshot())
            rank(results)
            if on_progress:
                on_progress("done", total, total)
            return CompareReport(results, spec.rtt_ms, spec.sample_rows, settle.allowed, settle.note)
        finally:
            ctl.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(scratch.ident()))


@contextmanager
def _stops(relay: Any) -> Iterator[None]:
    try:
        yield
    finally:
        if relay is not None:
            relay.stop()


class Settle:
    """A CHECKPOINT before each timed run, so no run pays for the dirty buffers and WAL of the runs
    before it (the checkpoint one run's WAL starts would otherwise fall in the next one's load).

    CHECKPOINT needs a superuser, or on PostgreSQL 15 and later the pg_checkpoint role. Without it
    nothing else forces the server to write its dirty buffers out, so the lab runs without, once
    said why (`note`): interleaving then spreads the cost over every strategy alike.
    """

    NOT_ALLOWED = ("this role may not run CHECKPOINT (superuser, or pg_checkpoint on PostgreSQL 15 and later), so "
                   "runs may pay for the dirty pages and WAL of the runs before them; interleaving spreads that "
                   "over every strategy alike")

    def __init__(self, ctl: Any) -> None:
        self.ctl = ctl
        self.allowed = True
        self.note = ""

    def __call__(self) -> None:
        if not self.allowed:
            return
        try:
            self.ctl.execute("CHECKPOINT")
        except psycopg.errors.InsufficientPrivilege:
            self.allowed, self.note = False, self.NOT_ALLOWED


def _one_run(
    ctl: Any, scratch: TableRef, run_spec: LoadSpec, res: CompareResult, limits: dict[str, int | None],
    budget_s: float, cancel: CancelToken, settle: Callable[[], None] = lambda: None,
) -> None:
    ctl.execute(sql.SQL("TRUNCATE {}").format(scratch.ident()))
    key = f"{res.strategy}/{res.batch_rows}/{res.workers}"
    if key not in limits:
        limits[key] = _probe_limit(ctl, scratch, run_spec, budget_s, cancel)
        ctl.execute(sql.SQL("TRUNCATE {}").format(scratch.ident()))
    limit = limits[key]
    with tempfile.TemporaryDirectory(prefix="sluice-cmp-") as folder:
        if limit is not None:
            res.reduced_rows = limit
            opts, _ = write_sample(run_spec, limit, Path(folder))
            run_spec = replace(run_spec, source=opts)
        settle()  # outside the timed span: the runs before (and the probes) leave nothing for this one
        _timed_run(run_spec, res, budget_s, cancel)


def _timed_run(run_spec: LoadSpec, res: CompareResult, budget_s: float, cancel: CancelToken) -> None:
    token = CancelToken()
    unhook = cancel.add_hook(token.cancel)
    timer = threading.Timer(3 * budget_s, token.cancel)  # a run far over budget is stopped
    timer.start()
    try:
        result = LoadJob(run_spec, cancel=token).run()
    except Cancelled:
        if cancel.cancelled:
            raise
        res.error = f"stopped after {3 * budget_s:.0f} s (over the time budget)"
        return
    finally:
        timer.cancel()
        timer.join()  # its thread is gone before the next run, not some time after
        unhook()
    res.rows = result.rows_loaded
    if result.chosen:  # auto: what it picked (several picks, if runs differed, all said)
        c, cls = result.chosen, get_strategy(str(result.chosen["strategy"]))
        pick = describe(CompareResult(cls.id, int(c["batch_rows"]), int(c["workers"]) if cls.takes_workers else 1,
                                      batch_sized=cls.batch_sized))
        res.picked = pick if res.picked in ("", pick) else " / ".join(dict.fromkeys([*res.picked.split(" / "), pick]))
    # The loading phase only: start-up, connecting and planning cost every strategy alike
    # (the benchmark times whole commands instead).
    secs = result.load_seconds or result.seconds
    res.runs.append(result.rows_loaded / secs if secs else 0.0)
    res.mb_runs.append(result.bytes / 1e6 / secs if secs else 0.0)


def _probe_limit(ctl: Any, scratch: TableRef, run_spec: LoadSpec, budget_s: float, cancel: CancelToken) -> int | None:
    """Time short runs; if the whole sample would blow the budget, return a row count that fits.

    The first probe is tiny, so a strategy at 320 ms per round trip costs seconds, not minutes,
    to size up. When a larger probe is cheap, the two give the marginal rate apart from the
    fixed cost of a run (start, connect, plan), so fast strategies are not mistaken for slow ones.
    """
    full = _row_count(run_spec)
    timings: list[tuple[int, float]] = []
    for probe in (20, 2000):
        if timings:
            # As large as the pessimistic one-probe estimate lets it be within a quarter of the
            # budget: over a slow link a run's fixed cost (connecting, planning) is seconds, and
            # only a second, larger probe tells it apart from the cost per row.
            n1, t1 = timings[0]
            probe = min(probe, full - 1, int(n1 * budget_s / 4 / max(t1, 1e-6)))
            if probe < 2 * n1:
                break  # the whole sample is about this small, or the probe would eat the budget
        with tempfile.TemporaryDirectory(prefix="sluice-probe-") as folder:
            opts, probe_rows = write_sample(run_spec, probe, Path(folder))
            t = time.monotonic()
            LoadJob(replace(run_spec, source=opts), cancel=cancel).run()
            timings.append((probe_rows, time.monotonic() - t))
        ctl.execute(sql.SQL("TRUNCATE {}").format(scratch.ident()))
        if _estimate(timings, full) <= budget_s:
            return None
    overhead, per_row = _fit(timings)
    return max(20, int((budget_s * 0.8 - overhead) / per_row)) if budget_s * 0.8 > overhead else 20


def _fit(timings: list[tuple[int, float]]) -> tuple[float, float]:
    """(fixed seconds per run, seconds per row) from one or two probes."""
    (n1, t1) = timings[0]
    if len(timings) > 1:
        (n2, t2) = timings[-1]
        if n2 > n1:
            # Equal times (the fixed cost swamps the rows, e.g. over a slow link) still bound
            # the cost per row: within noise, taken as 5% of the larger probe.
            per_row = max(t2 - t1, 0.05 * t2) / (n2 - n1)
            return max(0.0, t1 - n1 * per_row), per_row
    return 0.0, t1 / max(n1, 1)  # one probe: every second charged to its rows (pessimistic)


def _estimate(timings: list[tuple[int, float]], rows: int) -> float:
    overhead, per_row = _fit(timings)
    return overhead + rows * per_row


_COUNTS: dict[tuple[str, int, int], int] = {}


def _row_count(spec: LoadSpec) -> int:
    """Rows in the source, counted once per file version (every combination asks)."""
    from core.sources.many import fingerprint, is_many

    if is_many(spec.source.path):  # many files (core.sources.many): every file's size, time and head
        key = (os.path.abspath(spec.source.path), hash(fingerprint(spec.source.path)), 0)
    else:
        st = os.stat(spec.source.path)
        key = (os.path.abspath(spec.source.path), st.st_size, st.st_mtime_ns)
    if key not in _COUNTS:
        plan = plan_load(spec)
        _COUNTS[key] = sum(b.frame.height for b in plan.source.batches(100_000))
    return _COUNTS[key]


_OPTION = re.compile(r"^[a-z_]+$")


def scratch_like(ctl: Any, scratch: TableRef, ref: TableRef) -> None:
    """A scratch table that loads as the target does, so the lab ranks what real loads rank.

    It takes the target's persistence (logged unless the target is unlogged: WAL is much
    of a load's cost), its columns, defaults, constraints, indexes, storage and
    compression (LIKE ... INCLUDING ALL), its table and TOAST storage parameters, its
    foreign keys and its triggers.
    """
    target = ref.ident().as_string(ctl)
    row = ctl.execute(
        "SELECT c.relpersistence, c.reloptions, t.reloptions, format('%%I.%%I', n.nspname, c.relname) "
        "FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        "LEFT JOIN pg_class t ON t.oid = c.reltoastrelid WHERE c.oid = %s::regclass",
        (target,),
    ).fetchone()
    persistence, options, toast_options, qualified = row
    unlogged = sql.SQL("UNLOGGED ") if persistence == "u" else sql.SQL("")
    ctl.execute(sql.SQL("CREATE {}TABLE {} (LIKE {} INCLUDING ALL)").format(unlogged, scratch.ident(), ref.ident()))
    params = [(o, "") for o in options or []] + [(o, "toast.") for o in toast_options or []]
    for option, prefix in params:
        name, _, value = option.partition("=")
        if _OPTION.match(name):
            ctl.execute(sql.SQL("ALTER TABLE {} SET ({} = {})").format(
                scratch.ident(), sql.SQL(prefix + name), sql.Literal(value)))
    for (definition,) in ctl.execute(
        "SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = %s::regclass AND contype = 'f'",
        (target,),
    ).fetchall():
        # The definition is the server's own text for the target's foreign key.
        ctl.execute(sql.SQL("ALTER TABLE {} ADD {}").format(scratch.ident(), sql.SQL(definition)))
    scratch_name = scratch.ident().as_string(ctl)
    for (definition,) in ctl.execute(
        "SELECT pg_get_triggerdef(oid) FROM pg_trigger WHERE tgrelid = %s::regclass AND NOT tgisinternal",
        (target,),
    ).fetchall():
        # The server's CREATE TRIGGER for the target, pointed at the scratch table.
        ctl.execute(sql.SQL(definition.replace(f" ON {qualified} ", f" ON {scratch_name} ", 1)))
