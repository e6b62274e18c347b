"""What the run panel says when a load ends: rows in words, the summary of a finished load, truncate's rows."""

from __future__ import annotations

from typing import TYPE_CHECKING

from core.spec import LoadMode

if TYPE_CHECKING:
    from core.result import LoadResult
    from core.spec import LoadSpec


def rows_text(n: int) -> str:
    """'1 row', '2 rows' ("1 rows were rejected")."""
    return f"{n:,} row{'' if n == 1 else 's'}"


def load_summary(result: LoadResult, rate: str) -> str:
    """The summary of a load that finished; a resumed one says what this run added and what the table holds."""
    n = result.rows_rejected
    rejected = f" {rows_text(n)} {'was' if n == 1 else 'were'} rejected: see {result.reject_file}." if n else ""
    if result.files:  # many files: how many, and where each is counted
        rejected += f" From {len(result.files)} files: each one's rows are counted in the log."
    if not result.resumed_from:
        return (f"Loaded {rows_text(result.rows_loaded)} in {result.seconds:.2f} s ({rate}) with {result.strategy}."
                + rejected)
    # rows_loaded counts the earlier run's committed rows too: say both. The rate is this run's rows
    # loaded in this run's seconds (result.rows_per_s), as in the counters and the History.
    this_run = max(result.rows_read - result.resumed_from, 0)
    return (f"Resumed after {result.resumed_from:,} source rows committed earlier: this run went through the "
            f"other {rows_text(this_run)} in {result.seconds:.2f} s ({rate}) with {result.strategy}; "
            f"{rows_text(result.rows_loaded)} of this file are now in the table.{rejected}")


def truncate_said(spec: LoadSpec | None, removed: int, *, resuming: bool) -> str:
    """Truncate's rows removed (`removed`), for the summary and History ('' for other modes)."""
    if spec is None or spec.target.mode is not LoadMode.TRUNCATE or resuming:
        return ""  # a resumed run's truncate happened in the run it continues
    if not removed:
        return " Mode truncate: the table was empty before."
    were = "was" if removed == 1 else "were"
    return f" Mode truncate: {rows_text(removed)} that {were} in the table {were} removed first."
