"""What a check says it found: under On error = abort, where the run would stop (issue 24, item 7).

A check runs with the skip policy so it can list every bad row; the run with the user's own
policy, abort, would stop at the first of them and load nothing. These texts say which.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from core.result import LoadResult


def first_bad(rows: list[tuple[str, ...]]) -> str:
    """Where a run under On error = abort stops: the first of a check's bad records, in words."""
    def order(rec: tuple[str, ...]) -> int:
        return int(rec[1]) if rec[1].isdigit() else 1 << 62

    line, row, column, value, reason = min(rows, key=order)[:5]
    where = f"line {int(line):,}" if line.isdigit() else f"row {int(row):,}" if row.isdigit() else "a bad record"
    what = f"column {column!r}, value {value[:40]!r}: " if column else ""
    reason = reason if len(reason) <= 70 else reason[:70].rsplit(" ", 1)[0].rstrip(" ,;") + "…"  # whole below
    return f"{where} ({what}{reason})"


def check_summary(result: LoadResult, rate: str, stop: str | None) -> str:
    """What a check found; under On error = abort (`stop`: its first bad record) what the run would do."""
    if stop is None:
        bad = (f"{result.rows_rejected:,} would be rejected (listed under Rejected rows)"
               if result.rows_rejected else "none would be rejected")
        return (f"Check: {result.rows_loaded:,} of {result.rows_read:,} rows would load and {bad}; "
                f"{rate} with {result.strategy}. Rolled back: the table is as it was.")
    more = result.rows_rejected - 1
    skip = f"with skip, {result.rows_loaded:,} of {result.rows_read:,} rows would load"
    others = f"{more:,} more bad row{'' if more == 1 else 's'} under Rejected rows" if more else "no other bad row"
    return (f"Check (On error = abort): the run would stop at {stop} and load nothing; {others} ({skip}). "
            "Rolled back: the table is as it was.")
