"""`auto`: pick the strategy, batch size and workers from the source's shape and the target.

The rules come from what the seeds and this machine's benchmarks measured (docs/strategies.md,
docs/benchmark-history.md); each choice carries its reason in words, shown by the CLI, `--json` and
the window. Every fixed strategy stays selectable.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from core.batch_size import byte_sized, source_row_width
from core.spec import CommitMode, ErrorPolicy, LoadMode

if TYPE_CHECKING:
    import psycopg

    from core.plan import Plan
    from core.spec import LoadSpec

AUTO = "auto"
WIDE_ROW_BYTES = 4096  # above this, per-row work on the server (TOAST) dominates, not parsing
# Below this, a second stream's start-up (connection, cut-finding) costs more than it saves.
PARALLEL_MIN_BYTES = 64 << 20
PARALLEL_BATCH_ROWS = 100_000  # parsed fall-back batches only: the streams read byte ranges
# Below this, importing polars, pyarrow and pgpq (about 0.25 s) costs more than binary COPY saves
# on a server that shares this machine (1M integer pairs, 17 MB: 0.79 s binary, 0.54 s raw CSV).
BINARY_MIN_BYTES = 32 << 20


@dataclass(frozen=True)
class Choice:
    strategy: str
    batch_rows: int
    workers: int
    reason: str
    target: Any = field(default=None, compare=False)  # the TargetInfo auto read, which the job reuses

    def to_json(self) -> dict[str, Any]:
        return {"strategy": self.strategy, "batch_rows": self.batch_rows, "workers": self.workers}


def choose(spec: LoadSpec, plan: Plan, ctl: psycopg.Connection[Any], *, dry_run: bool = False) -> Choice:
    from core import mapping as mp
    from core.sources.abilities import copy_reads_as_is, copy_reads_raw

    source = plan.source
    width = source_row_width(source.path, source.size, source.format)
    batch = byte_sized(width)
    local = server_is_local(ctl)
    if source.format == "sql":
        return Choice("copy-csv", batch, 1, "an SQL script: its rows are parsed column-wise and sent with one COPY "
                      "(seed 004: COPY is the fastest way to replay INSERTs)")
    identity = mp.is_identity(plan.maps, source.columns())
    if spec.commit is CommitMode.PER_BATCH and spec.on_error is ErrorPolicy.ABORT and copy_reads_as_is(source) \
            and identity and local and source.size >= PARALLEL_MIN_BYTES and spec.target.mode is not LoadMode.UPSERT:
        workers = min(4, os.cpu_count() or 1)
        if workers >= 2:
            return Choice("parallel-copy", PARALLEL_BATCH_ROWS, workers,
                          f"per-batch commits over a large CSV file ({source.size / 1e6:,.0f} MB) mapped column for "
                          f"column onto a server on this machine: {workers} streams read their own byte ranges and "
                          "each commits its own chunks, so the server parses on "
                          f"{workers} cores and each row is written once (the 5M-row bench: 1.35-1.49x psql, where one "
                          "stream is about psql's pace)")
    if spec.commit is CommitMode.PER_BATCH or spec.on_error is ErrorPolicy.SKIP:
        why = "per-batch commits" if spec.commit is CommitMode.PER_BATCH else "the skip policy"
        return Choice("copy-csv", batch, 1, f"with {why}, batches are written one at a time, each in its own "
                      "transaction or savepoint; COPY (CSV) is the fastest strategy that does that")
    if width > WIDE_ROW_BYTES:
        rows = max(100, min(10_000, (4 << 20) // max(1, width)))
        return Choice("pipeline", rows, 1, f"wide rows (about {width:,} bytes each): the server's per-row work "
                      "dominates, and pipelined INSERTs measured fastest into a logged table (issue 14)")
    if copy_reads_as_is(source) and identity and local and source.size >= PARALLEL_MIN_BYTES:
        parallel = _parallel(spec, plan, ctl, dry_run)
        if parallel is not None:
            return parallel
    def typed() -> bool:  # asked only where it decides: it imports polars, which the raw path never needs
        from core.strategies.arrow_binary import typable

        return typable([plan.target_types.get(m.target, "text") for m in mp.included(plan.maps)])

    # PostgreSQL's text format too: the server reads it faster than CSV, so parsing all of it into
    # binary lost to its raw lines (1M mixed rows: 5.1 s against 4.1 s), but with the warm start
    # the client takes only what it keeps up with (the bench's 1M-row tables exported with
    # `\copy to`, medians of 5 interleaved whole commands against psql: temporal 1.20x against the
    # raw lines' 0.88x, mixed 1.05x against 0.99x, jsonb 0.89x against 0.93x; 2026-11-26, busy machine).
    if local and source.size >= BINARY_MIN_BYTES and typed():
        # Quarter-size batches: each is held as text, typed columns and encoded bytes across three
        # stages, and a 1 GB file must stay under 300 MB.
        size = f"{source.size / 1e6:,.0f} MB"
        return Choice("copy-binary", byte_sized(width, stages=4), 1,
                      f"every column has an exact binary form and the file is large ({size}): binary COPY "
                      "spares the server its text parsing, and the client's typing and encoding run on the "
                      "other core")
    if copy_reads_raw(source) and identity and local:
        return Choice("copy-csv", batch, 1, f"a {_kind(source.format)} file mapped column for column onto a server "
                      "on this machine: its own bytes go to COPY, so the client spends almost nothing on cores "
                      "the server needs")
    if typed():
        if not local:
            why = "the server is on another machine"
        elif source.format not in ("csv", "tsv", "pgtext"):
            why = f"a {source.format} file is parsed anyway"
        elif any(m.format for m in mp.included(plan.maps)):
            why = "some columns are read with a value format (DD.MM.YYYY...), so the file's own bytes cannot go to COPY"
        elif not identity:
            why = "the mapping is not column for column, so the file's own bytes cannot go to COPY"
        else:
            why = "the file writes NULL two ways (a marker, and empty fields), which COPY cannot read in one go"
        return Choice("copy-binary", batch, 1, f"every column has an exact binary form and {why}: "
                      "binary COPY spares the server its text parsing")
    return Choice("copy-csv", batch, 1, "COPY (CSV), batches formatted column-wise: a column type (unconstrained "
                  "numeric, arrays, enums...) has no exact binary form here")


def _parallel(spec: LoadSpec, plan: Plan, ctl: psycopg.Connection[Any], dry_run: bool) -> Choice | None:
    """Several streams of the file's own bytes, where each row is written once: a new table loaded
    under a private name and renamed, or an append committed with two-phase commit. Not into a
    staging table (every row written twice), nor into a Citus table (its staged path measured
    slower than one COPY). Measured on 2026-11-24 (docs/benchmark-history.md), 1M mixed rows, 2 streams: 1.15x psql
    in create mode on PostgreSQL 15, where copy-binary cannot help (the new table's numeric
    column has no exact binary form; 0.85x); 1.20x appended with two-phase commit on the
    embedded PostgreSQL 18, against copy-binary's 1.16x there."""
    from core import server as target

    workers = min(4, os.cpu_count() or 1)
    if workers < 2:
        return None
    mode = spec.target.mode
    info = None
    if mode is LoadMode.CREATE:
        pass  # a new table loaded under a private name, renamed into place
    elif mode is LoadMode.APPEND:
        if dry_run:
            return None  # a check prepares nothing: two streams would go through a staging table
        info = target.inspect(ctl, plan.target)
        if info.citus or info.two_phase_blocker(workers) is not None:
            return None  # a staging table, or Citus: measured slower than one COPY
    else:
        return None
    return Choice("parallel-copy", PARALLEL_BATCH_ROWS, workers,
                  f"a large CSV file ({plan.source.size / 1e6:,.0f} MB) mapped column for column onto a server on "
                  f"this machine: {workers} streams read their own byte ranges of it, so the server parses on "
                  f"{workers} cores, each row written once", target=info)


def server_is_local(ctl: psycopg.Connection[Any]) -> bool:
    """True for a Unix socket or a loopback address: client and server share this machine's cores."""
    host = ctl.info.host or ""
    return host.startswith("/") or host in ("localhost", "127.0.0.1", "::1", "")


def _kind(fmt: str) -> str:
    return "PostgreSQL text-format" if fmt == "pgtext" else "CSV"
