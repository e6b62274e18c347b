"""The run context: what the parts of one load share, public, in a leaf module.

A load's parts (the commit protocols, the stages, the warm start, the explanation of a
refused row, the script load) take a RunContext and nothing else of the job: its counters,
its progress events, the row cursor (where the batch being sent began), cancel, the log, the
reject file, its timings and the result. None of them imports core.load.job; the job builds
the context, settles the plan, chooses and dispatches.

The progress interval and the per-batch reconnect back-off are settings of the context
(given to it, or read from the defaults below when it is made), not constants the parts
look up in the job's module.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from core.cancel import CancelToken
from core.events import Phase, Progress
from core.result import LoadResult

if TYPE_CHECKING:
    import polars as pl

    from core.load.rejects import RejectWriter
    from core.server import Choice, TargetInfo
    from core.spec import LoadSpec

PROGRESS_EVERY_S = 0.1  # progress events at most this often (forced ones aside)
RETRY_BACKOFF_S: tuple[float, ...] = (0.5, 1.0, 2.0, 4.0, 8.0)  # per-batch: waits before each reconnect


class RunContext:
    """One run's shared state. Counters and the cursor are written by the part that sends."""

    def __init__(
        self,
        spec: LoadSpec,
        *,
        on_progress: Callable[[Progress], None] | None = None,
        on_log: Callable[[str], None] | None = None,
        cancel: CancelToken | None = None,
        dry_run: bool = False,
        progress_every_s: float | None = None,
        retry_backoff_s: tuple[float, ...] | None = None,
    ) -> None:
        self.spec = spec
        self.dry_run = dry_run  # a check: the whole load in one transaction, rolled back at the end
        self.on_progress = on_progress or (lambda _p: None)
        self.on_log = on_log or (lambda _m: None)
        self.cancel = cancel or CancelToken()
        self.progress_every_s = PROGRESS_EVERY_S if progress_every_s is None else progress_every_s
        self.retry_backoff_s = RETRY_BACKOFF_S if retry_backoff_s is None else retry_backoff_s
        # counters
        self.rows_read = self.rows_loaded = self.rows_rejected = 0
        self.bytes_read = self.bytes_total = 0
        self.resumed_from = 0  # source rows an earlier run committed (per-batch --resume)
        self.loaded_before = 0  # rows and bytes an earlier per-batch run had committed: not this run's work
        self.bytes_before = 0
        # timings
        self.t0 = 0.0  # the run's start
        self.load_t0 = 0.0  # the first LOADING event
        self._last_emit = 0.0
        # the row cursor: where the batch being sent began, and that batch, to name a refused row
        self.batch_first = 0
        self.stream_base = 0  # source row where the current COPY statement began
        self.last_frame: pl.DataFrame | None = None
        # how the rows travel
        self.raw = False  # the file's own bytes are going to COPY unparsed
        self.no_raw = False  # COPY refused them once: parse instead
        self.rejects: RejectWriter | None = None
        # what the server allows, for a multi-connection strategy (core.server), and why
        self.protocol: Choice | None = None
        self.target_info: TargetInfo | None = None
        self.reason = ""  # why the load takes the protocol it takes (said before the run; --json `reason`)
        # one file of a per-file run over many files (core.many_files): marks it loaded, given the
        # connection whose transaction commits its rows and this context; called once
        self.file_mark: Callable[[Any, RunContext], None] | None = None

    # -- progress -------------------------------------------------------------------

    def start(self) -> None:
        self.t0 = time.monotonic()

    def emit(self, phase: Phase, *, force: bool = False, message: str = "") -> None:
        """A progress event, at most every progress_every_s unless forced."""
        now = time.monotonic()
        if phase is Phase.LOADING and not self.load_t0:
            self.load_t0 = now
        if not force and now - self._last_emit < self.progress_every_s:
            return
        self._last_emit = now
        self.on_progress(
            Progress(
                phase,
                self.rows_read,
                self.rows_loaded,
                self.rows_rejected,
                self.bytes_read,
                self.bytes_total,
                now - self.t0,
                message,
                self.loaded_before,
                self.bytes_before,
            )
        )

    def seconds(self) -> float:
        return time.monotonic() - self.t0

    def load_seconds(self) -> float:
        return time.monotonic() - (self.load_t0 or self.t0)

    def reset_counters(self) -> None:
        """A run started again from the first row (COPY refused the file's bytes: parsed instead)."""
        self.rows_read = self.rows_loaded = self.rows_rejected = self.bytes_read = 0

    def mark_file(self, conn: Any) -> None:
        """Inside the transaction that commits the load's rows: a file of a per-file run is marked
        loaded in that same commit, so a run that dies just after it never loads that file twice on
        --resume (core.many_files). Nothing for any other load."""
        mark = self.file_mark
        if mark is not None and conn is not None:
            mark(conn, self)
            self.file_mark = None

    # -- the result -------------------------------------------------------------------

    def result(self, reject_file: str | None = None, *, seconds: float | None = None, **extra: Any) -> LoadResult:
        """The result from the counters as they stand (`seconds`: the run's time, if taken
        earlier); `extra`: LoadResult's other fields."""
        return LoadResult(
            self.spec.strategy, self.rows_read, self.rows_loaded, self.rows_rejected,
            self.seconds() if seconds is None else seconds, self.bytes_read, reject_file,
            load_seconds=self.load_seconds(), **extra,
        )
