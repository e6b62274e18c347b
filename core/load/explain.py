"""Turn a refused write into a row, line, column, value and the server's reason."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import psycopg

from core import mapping as mp
from core.diagnose import bad_column, first_bad_row, first_bad_row_in, server_reason
from core.errors import (
    BadRowError,
    Cancelled,
    LoadFailed,
    RowProblem,
    SluiceError,
)
from core.events import Phase
from core.load.stages import replay
from core.plan import Plan
from core.sources.abilities import FindsDataLines, SeveralFiles
from core.sources.base import Source
from core.spec import ColumnMap, CommitMode
from core.strategies.base import Strategy, WriteFailed

if TYPE_CHECKING:
    from core.load.context import RunContext


def explain(
    run: RunContext, wf: WriteFailed, plan: Plan, strategy: Strategy | None) -> SluiceError:
    ctx = strategy.ctx if strategy is not None else None
    reason = server_reason(wf.error)
    if isinstance(wf.error, psycopg.errors.LockNotAvailable) and strategy is not None and strategy.multi_connection:
        return LoadFailed(
            "two COPY streams waited on each other: the same key of a unique index is in two chunks, and each "
            f"stream holds its rows until the end ({reason}); nothing was loaded. Load with copy-csv to have the "
            "repeated row named, or with --commit per-batch"
        )
    if isinstance(wf.error, psycopg.OperationalError) and not isinstance(wf.error, psycopg.errors.QueryCanceled):
        return LoadFailed(f"the connection failed during the load: {reason}; nothing was loaded")
    if isinstance(wf.error, psycopg.errors.QueryCanceled) and run.cancel.cancelled:
        run.emit(Phase.CANCELLED, force=True)
        return Cancelled()
    source = plan.source
    row: int | None = None
    streamed = strategy is not None and strategy.stream_rows
    if wf.row is not None and not streamed:
        row = run.batch_first + wf.row  # row strategies: the row in the batch
    elif wf.row is not None and run.raw and strategy is not None and not strategy.multi_connection:
        # The file's own bytes went to one COPY, whose "line N" counts lines of the data.
        row = source.row_at_data_line(wf.row + 1) if isinstance(source, FindsDataLines) else None
    elif wf.row is not None and strategy is not None and strategy.row_per_line:
        row = run.stream_base + wf.row  # one line (or tuple) per row in these streams
    # Otherwise (a CSV stream, where quoted newlines shift COPY's count, or several
    # streams at once) the row is found by replaying the source below.
    if row is None and ctx is not None:
        if streamed and run.spec.commit is CommitMode.SINGLE:
            # One COPY spanned every batch: replay the source up to the refused row.
            row = first_bad_row_in(ctx.dsn, ctx.table, ctx.columns, replay(run, plan))
        elif run.last_frame is not None:
            idx = first_bad_row(ctx.dsn, ctx.table, ctx.columns, run.last_frame.rows())
            row = None if idx is None else run.batch_first + idx
    if row is None:
        return LoadFailed(f"{source.path}: {reason}; nothing was loaded")
    line, _raw = source.locate(row)
    column, value = None, None
    if ctx is not None:
        values = row_values(source, row, plan.maps)
        if values is not None:
            column, value = bad_column(ctx.dsn, ctx.columns, ctx.types, values, wf.error)
    # many files read as one source: the row's own file, and its row there
    path, row = source.file_of(row) if isinstance(source, SeveralFiles) else (str(source.path), row)
    return BadRowError(RowProblem(path, row, line, column, value, reason))


def row_values(source: Source, row: int, maps: list[ColumnMap]) -> list[Any] | None:
    try:
        for batch in source.batches(1, skip_rows=row):
            return list(mp.apply(batch.frame, maps).row(0))
    except SluiceError:
        return None
    return None
